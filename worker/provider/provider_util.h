/*
 * provider_util: the helpers every adapter calls back while it translates
 * (provider_<kind>.c): the upstream request an adapter fills, typed copies
 * from the canonical request, the canonical error events (a malformed job,
 * an unsupported parameter, an upstream HTTP status), the route's credential
 * and URL, data URLs, and the scrubbing of upstream error text.
 *
 * It names no adapter: provider.h (the vtable, the registry and the per-job
 * parser) is the layer above, and includes this header so that an adapter
 * needs only provider.h.
 */
#ifndef SB_PROVIDER_UTIL_H
#define SB_PROVIDER_UTIL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* An upstream HTTP request, always a POST of a JSON body. Everything owned. */
typedef struct sb_provider_request {
    char *url;
    char **headers; /* "Name: value"; may carry a credential: never log them */
    size_t n_headers;
    char *body; /* NUL-terminated JSON */
    size_t body_len;
} sb_provider_request_t;

/* Frees the members and zeroes the struct; safe on a zeroed struct. */
void sb_provider_request_clear(sb_provider_request_t *req);
/* Sets req's body to body (borrowed) as compact JSON, with Content-Type and
 * an Accept for a JSON reply or, when stream, an event stream. 0, or -1 with
 * *err set (500) when the body cannot be encoded. */
int sb_provider_request_set_json(sb_provider_request_t *req, const json_t *body, bool stream, json_t **err)
    __attribute__((warn_unused_result));
void sb_provider_request_add_header(sb_provider_request_t *req, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* W3C Trace Context: a traceparent naming a new span of the job's trace
 * (job.trace, from the frontend) and the client's tracestate; nothing when
 * the job has no valid one. */
void sb_provider_request_add_trace(sb_provider_request_t *req, const json_t *job);

/* A complete upstream response, as the worker saw it. All borrowed. */
typedef struct sb_provider_response {
    long status;      /* HTTP status */
    const char *body; /* not NUL-terminated */
    size_t body_len;
    long retry_after;    /* Retry-After in seconds, -1 when absent */
    int64_t upstream_us; /* request start to last byte */
} sb_provider_response_t;

/* Appends a count job's answer: a usage event with input_tokens = count
 * (output 0), then completed with the job's public model. */
void sb_provider_count_result(const json_t *job, int64_t count, int64_t upstream_us, json_t *events);

/* A 400 invalid_request error event (a malformed job), message formatted.
 * New reference. */
json_t *sb_provider_invalid(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A 400 error event with code "unsupported_parameter" for a valid job this
 * upstream cannot express; the message reads "unsupported parameter: <what>".
 * New reference. */
json_t *sb_provider_unsupported(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What sb_provider_copy accepts. STOP: a string or an array of strings,
 * copied as is; STOP_LIST: the same, a string becoming a one-element array. */
enum sb_provider_want {
    SB_PROVIDER_NUMBER,
    SB_PROVIDER_INTEGER,
    SB_PROVIDER_STRING,
    SB_PROVIDER_BOOL,
    SB_PROVIDER_STOP,
    SB_PROVIDER_STOP_LIST,
};

/* Copies request[from] to dst[to] when present and not null, after a JSON
 * type check (400 "request.<from> has the wrong type" otherwise). */
int sb_provider_copy(json_t *dst, const json_t *request, const char *from, const char *to, enum sb_provider_want want,
                     json_t **err) __attribute__((warn_unused_result));

/* request.n for an upstream that returns several choices itself: copied to
 * dst[to] when present (400 when below 1), unless route.capabilities.n is
 * false (the worker then fans out, and some servers reject even n=1). */
int sb_provider_copy_n(json_t *dst, const json_t *job, const char *to, json_t **err)
    __attribute__((warn_unused_result));

/* Whether a file is text a model should read as text: a text/... or JSON MIME
 * type, or an unknown/octet-stream one with a .txt, .md, .csv or .json name. */
bool sb_provider_is_text_file(const char *mime, const char *filename);

/* The canonical error event for an upstream HTTP error status. message is the
 * upstream's own message (kept, scrubbed by sb_provider_scrub, for statuses
 * passed through) or NULL for a generic text; quota is true when the upstream
 * said insufficient_quota; retry_after >= 0 adds "retry_after". A 401 or 403
 * is the route's credential failing, the operator's problem: it becomes a 502
 * upstream_error "upstream authentication failed", and the upstream's message
 * (scrubbed) goes to the worker's log with the route. Returns a new
 * reference. */
json_t *sb_provider_error_for_status(long status, const char *message, bool quota, long retry_after);

/* The canonical error event for an upstream error, as
 * sb_provider_error_for_status, except for one error every upstream has its
 * own way of saying: the input does not fit the model's context window. That
 * becomes status 400, kind invalid_request, code "context_length_exceeded",
 * message "context length exceeded: <the upstream's message>". root is the
 * upstream's error body ({"error":{...}}) or the error object itself, may be
 * NULL; message is what the adapter would pass on (NULL: nothing). Recognised:
 * error.code "context_length_exceeded" (OpenAI Chat and Responses), type
 * "exceed_context_size_error" (llama.cpp), and for a 400: a message that
 * mentions "context length" (vLLM and other compatible servers: "maximum
 * context length"), an invalid_request_error whose message starts "prompt is
 * too long" (Anthropic), an INVALID_ARGUMENT whose message says "exceeds the
 * maximum number of tokens" (Gemini). Returns a new reference. */
json_t *sb_provider_upstream_error(long status, const json_t *root, const char *message, bool quota, long retry_after);

/*
 * Scrubbing (sb_scrub.h). The worker keeps one table of credentials: the
 * values of its environment variables named like credentials, and every
 * route credential sb_provider_credential has handed out.
 */

/* The parser (provider.c) sets the job being translated around each adapter
 * call, so that sb_provider_scrub(NULL, ...) and the 401/403 log line know
 * its credential and route. Returns the previous one, to restore after. */
const json_t *sb_provider_set_current_job(const json_t *job);

/* text with every known credential, the job's own (job NULL: the job being
 * translated, if any) and anything shaped like a provider key replaced by
 * "[redacted]". New string (free()); NULL when text is NULL. */
char *sb_provider_scrub(const json_t *job, const char *text);
/* Scrubs every string field of the error events in events[from..]: what the
 * parser does to everything an adapter appends, so that no upstream text in
 * an error reaches a reply, a log or a row with a credential in it. */
void sb_provider_scrub_events(const json_t *job, json_t *events, size_t from);

/* Looks up route.credential_ref in the environment. Returns 0 with *value
 * NULL (no credential configured on the route) or borrowed from environ;
 * a negative code with *err set (502) when the variable is missing or unusable. */
int sb_provider_credential(const json_t *job, const char **value, json_t **err) __attribute__((warn_unused_result));

/* base_url without trailing '/' + path; NULL if route.base_url is absent. */
char *sb_provider_url(const json_t *job, const char *path);

/* The upstream message in a JSON error body: {"error":{"message"}},
 * {"error":"..."} or {"message"}; NULL if none. Borrowed from `body`. */
const char *sb_provider_error_message(const json_t *body);

/* Splits a base64 data URL "data:<mime>[;param..];base64,<payload>": the
 * MIME type lower-cased into mime (mimesz bytes; "" when longer), *payload
 * borrowed from url. Returns 0, or -EINVAL when url is not a base64 data URL. */
int sb_provider_data_url(const char *url, char *mime, size_t mimesz, const char **payload);

#endif
