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
#include "fe_style.h" /* fe_stream_style_t: how a style renders its stream, and the renderers */

struct fe_request;

typedef struct fe_stream fe_stream_t;

/* Prepares r (r->parsed.stream true) for streaming: state and keep-alive
 * timer. ctx (copied) is what the renderer's hooks see besides the result. */
void fe_stream_begin(struct fe_request *r, const fe_render_ctx_t *ctx);
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
