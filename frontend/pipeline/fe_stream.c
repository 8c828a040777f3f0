/*
 * fe_stream: the style-neutral half of a streamed reply (see fe_stream.h).
 */
#include "fe_stream.h"

#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "fe_request.h"
#include "sb_alloc.h"
#include "sb_sse.h"
#include "sb_time.h"

struct fe_stream {
    const fe_stream_style_t *style;
    struct evbuffer *out;    /* what the renderer writes; sent and emptied after each step */
    struct event *keepalive; /* fires after keepalive_ms without a write */
    struct timeval keepalive_tv;
    fe_stream_ctx_t ctx; /* what the renderer's hooks get: its state (style->state_size bytes), the result */
};

void fe_stream_free(fe_stream_t **sp)
{
    fe_stream_t *s = *sp;
    if (!s)
        return;
    *sp = NULL;
    if (s->keepalive)
        event_free(s->keepalive);
    if (s->ctx.state && s->style->state_free)
        s->style->state_free(s->ctx.state);
    free(s->ctx.state);
    if (s->out)
        evbuffer_free(s->out);
    free(s);
}

void *fe_stream_state(const fe_request_t *r)
{
    return r->stream_out ? r->stream_out->ctx.state : NULL;
}

bool fe_stream_started(const fe_request_t *r)
{
    return r->stream_started;
}

/* Sends what the renderer wrote and re-arms the keep-alive. */
static void fe_stream_flush(fe_request_t *r)
{
    fe_stream_t *s = r->stream_out;
    fe_request_stream_write(r, s->out);
    if (s->keepalive)
        event_add(s->keepalive, &s->keepalive_tv);
}

/* Starts the reply (status, headers, the style's opening events). False when
 * the client is gone. */
static bool fe_stream_open(fe_request_t *r)
{
    fe_stream_t *s = r->stream_out;
    if (r->stream_started)
        return true;
    if (!fe_request_stream_start(r, s->style->content_type))
        return false;
    if (s->style->open)
        s->style->open(&s->ctx, s->out);
    return true;
}

static void fe_stream_on_keepalive(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_request_t *r = arg;
    fe_stream_t *s = r->stream_out;
    if (!s || r->state == FE_REQ_DONE)
        return;
    if (!r->stream_started)
        return; /* armed only once the stream is open (fe_stream_begin) */
    s->style->keepalive(&s->ctx, s->out);
    fe_stream_flush(r);
}

/* The request ended (its cleanup): the stream's state and timer go with it. */
static void fe_stream_on_end(fe_request_t *r, void *arg)
{
    (void)arg;
    fe_stream_free(&r->stream_out);
}

void fe_stream_begin(fe_request_t *r, const fe_render_ctx_t *ctx)
{
    const fe_stream_style_t *style = r->parsed.stream_style ? r->parsed.stream_style : r->style->stream;
    fe_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->style = style;
    s->out = evbuffer_new();
    if (!s->out)
        abort(); /* out of memory, as sb_alloc handles it */
    s->ctx.render = *ctx;
    s->ctx.result = &r->result;
    s->ctx.state = sb_xcalloc(1, style->state_size ? style->state_size : 1);
    int ms = r->srv->cfg.stream_keepalive_ms;
    if (ms > 0 && style->keepalive) {
        s->keepalive = evtimer_new(r->srv->base, fe_stream_on_keepalive, r);
        s->keepalive_tv.tv_sec = ms / 1000;
        s->keepalive_tv.tv_usec = (ms % 1000) * 1000;
        /* Not armed yet: until the first event nothing is sent, so an error
         * (after the worker's retries) is still an HTTP status and the
         * request may still fail over to another model (fe_fallback.h).
         * Upstreams send their first event as soon as they accept a request. */
    }
    r->stream_out = s;
    fe_request_cleanup_add(r, fe_stream_on_end, NULL);
}

void fe_stream_event(fe_request_t *r, const json_t *ev)
{
    fe_stream_t *s = r->stream_out;
    if (!s || !fe_stream_open(r))
        return;
    if (!r->first_token_us) {
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (type && (!strcmp(type, "text_delta") || !strcmp(type, "args_delta") || !strcmp(type, "reasoning_delta")))
            r->first_token_us = sb_mono_us();
    }
    s->style->event(&s->ctx, ev, s->out);
    fe_stream_flush(r);
}

void fe_stream_fail(fe_request_t *r, const fe_error_t *e)
{
    fe_stream_t *s = r->stream_out;
    if (!s || !r->stream_started) {
        fe_request_fail(r, e); /* nothing sent yet: an ordinary error reply */
        return;
    }
    free(r->error_text);
    r->error_text = sb_xstrdup(e->message);
    s->style->fail(&s->ctx, e, s->out);
    fe_request_stream_write(r, s->out);
    fe_request_stream_end(r, e->status);
}

void fe_stream_complete(fe_request_t *r, const json_t *rendered)
{
    fe_stream_t *s = r->stream_out;
    if (!s || !fe_stream_open(r)) {
        fe_request_stream_end(r, 499);
        return;
    }
    s->style->close(&s->ctx, rendered, s->out);
    fe_request_stream_write(r, s->out);
    fe_request_stream_end(r, 200);
}

/* The line end of an event whose blank line is `end` ("\n\n", or Google's "\r\n\r\n"). */
static const char *fe_sse_eol(const char *end)
{
    return !strcmp(end, "\r\n\r\n") ? "\r\n" : "\n";
}

void fe_sse_json(struct evbuffer *out, const char *name, const json_t *data, const char *end)
{
    if (sb_sse_ev_json(out, name, data, JSON_COMPACT, fe_sse_eol(end)) < 0)
        abort(); /* out of memory: events are plain JSON objects */
}

void fe_sse_data(struct evbuffer *out, const char *text)
{
    sb_sse_ev_event(out, NULL, text, strlen(text), "\n");
}

void fe_sse_comment(struct evbuffer *out, const char *text, const char *end)
{
    sb_sse_ev_comment(out, text, fe_sse_eol(end));
}
