/*
 * provider: the upstream adapter interface. One adapter per provider kind
 * (openai-chat, openai-responses, anthropic, gemini; provider_<kind>*.c),
 * each exporting one const sb_provider_t; sb_provider_lookup() is the
 * registry. The helpers adapters call back are in provider_util.h.
 *
 * An adapter translates in two directions, both pure functions of JSON:
 *   build_request:  canonical job (sb_job.h)  -> upstream HTTP request
 *   parse_response: upstream HTTP response     -> canonical events (sb_event.h)
 * It never does I/O; the worker owns the HTTP transfer and the broker socket.
 *
 * The worker never calls parse_response directly: it drives a per-job
 * sb_provider_parser_t, feeding body bytes as they arrive and flushing the
 * events the parser has appended after every feed. A non-streaming adapter
 * only buffers in feed and translates in finish. A streaming adapter (SSE)
 * sets the stream_* hooks and then emits events chunk by chunk from feed,
 * with no change to the worker.
 *
 * Token counting (a request.op "count_tokens" job, sb_job.h): an adapter
 * whose upstream has a counting endpoint sets build_count_request and
 * parse_count_response; the parser then sends the body to the latter. One
 * without (openai-chat) leaves them NULL: the worker sends
 * sb_provider_count_job(job) through build_request, and the parser keeps
 * only that generation's usage and final event.
 */
#ifndef SB_PROVIDER_H
#define SB_PROVIDER_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider_util.h"

typedef struct sb_provider {
    const char *kind; /* route.provider, e.g. "openai-chat" */
    /* The upstream returns several choices for request.n (OpenAI Chat,
     * Gemini candidateCount); otherwise the worker fans out n calls, as it
     * also does when route.capabilities.n is false. */
    bool supports_n;

    /* Fills *req (zeroed by the caller) from job. Returns 0, or a negative
     * code with *err set to a final error event (new reference) when the job
     * cannot be expressed for this upstream or the route is incomplete. On
     * failure *req may hold partial members; the caller clears it. */
    int (*build_request)(const json_t *job, sb_provider_request_t *req, json_t **err);

    /* Appends the events for one complete response to `events` (a JSON
     * array), always ending with exactly one final event: completed for a
     * good 2xx body, error otherwise (status mapping, malformed body). */
    void (*parse_response)(const json_t *job, const sb_provider_response_t *resp, json_t *events);

    /* Optional streaming hooks, NULL for non-streaming adapters. When set and
     * the job asks for a stream, a 2xx body goes to stream_feed chunk by chunk
     * (each call may append events) and stream_finish appends the rest,
     * ending with the final event; non-2xx bodies still go to
     * parse_response. stream_feed returns 0 or a negative code to abort. */
    void *(*stream_new)(const json_t *job);
    int (*stream_feed)(void *state, const char *data, size_t len, json_t *events);
    void (*stream_finish)(void *state, const sb_provider_response_t *resp, json_t *events);
    void (*stream_destroy)(void *state);

    /* Optional token counting, pure functions like the two above; both set
     * or both NULL. build_count_request: a count job -> the upstream's
     * count request (conventions as build_request). parse_count_response:
     * appends a usage event (input_tokens = the count, output_tokens 0) and
     * completed for a good 2xx body, else exactly one error event. */
    int (*build_count_request)(const json_t *job, sb_provider_request_t *req, json_t **err);
    void (*parse_count_response)(const json_t *job, const sb_provider_response_t *resp, json_t *events);
} sb_provider_t;

/* The registry: the adapter for route.provider, or NULL if none. */
const sb_provider_t *sb_provider_lookup(const char *kind);

/* The adapters (one per provider_<kind>.c). */
extern const sb_provider_t sb_provider_openai_chat;
extern const sb_provider_t sb_provider_openai_responses;
extern const sb_provider_t sb_provider_anthropic;
extern const sb_provider_t sb_provider_gemini;

/*
 * Per-job parse state. feed may be called any number of times, then finish
 * exactly once. Responses over SB_PROVIDER_MAX_BODY are refused (feed returns
 * -E2BIG; the worker reports it).
 */
#define SB_PROVIDER_MAX_BODY (64u * 1024u * 1024u)

typedef struct sb_provider_parser sb_provider_parser_t;

/* provider and job are borrowed and must outlive the parser. */
sb_provider_parser_t *sb_provider_parser_new(const sb_provider_t *provider, const json_t *job);
void sb_provider_parser_destroy(sb_provider_parser_t **p);
int sb_provider_parser_feed(sb_provider_parser_t *p, long status, const char *data, size_t len, json_t *events)
    __attribute__((warn_unused_result));
/* resp->body is ignored (the parser has its own buffer). */
void sb_provider_parser_finish(sb_provider_parser_t *p, const sb_provider_response_t *resp, json_t *events);

/* The job a count runs as on an upstream without a counting endpoint: job
 * with request.max_output_tokens 1, no stream and no n, so the upstream
 * reports the prompt's tokens for the price of one output token. request.op
 * stays, so the parser knows to keep only usage. New reference. */
json_t *sb_provider_count_job(const json_t *job);

#endif
