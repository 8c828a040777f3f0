/*
 * fe_stream: a generation answered as a stream (stream:true, or Generate
 * Content's :streamGenerateContent). Style-neutral: it opens the chunked
 * reply at the job's first event, hands every canonical event to the style's
 * stream renderer and writes what that renders at once (one write per worker
 * event: nothing is batched), sends the style's keep-alive while the job is
 * quiet, and ends the reply after the final event — with store on, only once
 * the stored response is written, so a client that has seen the end can fetch
 * and chain it.
 *
 * Before the reply has started, a failed job is answered like a non-streamed
 * one (HTTP status and the style's error body); after it, with the style's
 * error event, then the end of the stream: never silently.
 *
 * Events are folded into r->result as for a non-streamed request (fe_collect),
 * so renderers can read the items completed so far, and the final rendering
 * and the stored object are the non-streamed ones.
 */
#ifndef FE_STREAM_H
#define FE_STREAM_H

#include <event2/buffer.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "fe_error.h"

struct fe_request;

/* How one style renders a stream. Every hook appends its text to out. */
typedef struct fe_stream_style {
    const char *content_type;
    size_t state_size; /* the style's per-stream state, zeroed; fe_stream_state() */
    /* The first bytes of the stream (may append nothing). */
    void (*open)(struct fe_request *r, struct evbuffer *out);
    /* One non-final canonical event (already folded into r->result). */
    void (*event)(struct fe_request *r, const json_t *ev, struct evbuffer *out);
    /* The job completed; rendered is the non-streamed body (style->render). */
    void (*close)(struct fe_request *r, const json_t *rendered, struct evbuffer *out);
    /* The job failed after the stream had started. */
    void (*fail)(struct fe_request *r, const fe_error_t *e, struct evbuffer *out);
    /* Something that keeps proxies from cutting a quiet stream. */
    void (*keepalive)(struct fe_request *r, struct evbuffer *out);
    /* Frees what the state points to (optional). */
    void (*state_free)(void *state);
} fe_stream_style_t;

/* The styles' renderers (fe_stream_<style>.c). */
extern const fe_stream_style_t fe_stream_responses;
extern const fe_stream_style_t fe_stream_chat;
extern const fe_stream_style_t fe_stream_messages;
extern const fe_stream_style_t fe_stream_gemini;       /* ?alt=sse */
extern const fe_stream_style_t fe_stream_gemini_array; /* Google's default: one streamed JSON array */

typedef struct fe_stream fe_stream_t;

/* Prepares r (r->parsed.stream true) for streaming: state and keep-alive timer. */
void fe_stream_begin(struct fe_request *r);
/* A non-final event from the worker. */
void fe_stream_event(struct fe_request *r, const json_t *ev);
/* The job failed: an error reply, or the style's error event and the end. */
void fe_stream_fail(struct fe_request *r, const fe_error_t *e);
/* The job completed (and is stored): the style's closing events, the end. */
void fe_stream_complete(struct fe_request *r, const json_t *rendered);
/* Whether the reply has started (an error can no longer change its status). */
bool fe_stream_started(const struct fe_request *r);
/* The style's state (state_size bytes), NULL before fe_stream_begin. */
void *fe_stream_state(const struct fe_request *r);
void fe_stream_free(fe_stream_t **s);

/* Server-sent events: "event: NAME\n" (when name is not NULL), then
 * "data: " + compact JSON + end ("\n\n", or Google's "\r\n\r\n"). */
void fe_sse_json(struct evbuffer *out, const char *name, const json_t *data, const char *end);
/* "data: TEXT\n\n" */
void fe_sse_data(struct evbuffer *out, const char *text);
/* An SSE comment, ": TEXT" + end: every SSE client ignores it. */
void fe_sse_comment(struct evbuffer *out, const char *text, const char *end);

#endif
