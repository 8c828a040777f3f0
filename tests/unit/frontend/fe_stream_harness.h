/*
 * fe_stream_harness: drives a style's stream renderer (fe_style.h) as
 * pipeline/fe_stream.c does, with no request, server or socket: canonical
 * events are folded into the result (fe_collect) and handed to the renderer,
 * the stream opens at the first one, and a completed job ends with the
 * style's render and the renderer's close. What the renderer writes is
 * collected for the test_stream_<style>.c tests to compare byte for byte.
 */
#ifndef FE_STREAM_HARNESS_H
#define FE_STREAM_HARNESS_H

#include <event2/buffer.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fe_style.h"
#include "sb_test.h"

/* A fixed request start (Unix ms): every "created" is 1700000000. */
#define FE_SH_START_MS 1700000000123LL

typedef struct {
    const fe_style_t *style;
    const fe_stream_style_t *stream;
    fe_parsed_t parsed;
    fe_collect_t result;
    fe_stream_ctx_t sc;
    struct evbuffer *out;
    bool opened;
} fe_sh_t;

/* A stream of style (its own renderer, or stream when not NULL). The parsed
 * request is fe_parsed_init's with model "m" and response_id; the test may
 * change it before the first event. No sealing key unless key is given. */
static inline void fe_sh_init(fe_sh_t *h, const fe_style_t *style, const fe_stream_style_t *stream,
                              const char *response_id, const sb_seal_key_t *key)
{
    memset(h, 0, sizeof *h);
    h->style = style;
    h->stream = stream ? stream : style->stream;
    fe_parsed_init(&h->parsed);
    h->parsed.model_id = strdup("m");
    h->parsed.stream = true;
    snprintf(h->parsed.response_id, sizeof h->parsed.response_id, "%s", response_id);
    fe_collect_init(&h->result);
    h->sc.render.parsed = &h->parsed;
    h->sc.render.start_ms = FE_SH_START_MS;
    h->sc.render.request_id = "req_test";
    h->sc.render.seal.key = key;
    h->sc.render.seal.account_id = 7;
    h->sc.result = &h->result;
    h->sc.state = calloc(1, h->stream->state_size ? h->stream->state_size : 1);
    h->out = evbuffer_new();
}

static inline void fe_sh_free(fe_sh_t *h)
{
    if (h->stream->state_free)
        h->stream->state_free(h->sc.state);
    free(h->sc.state);
    evbuffer_free(h->out);
    fe_parsed_free(&h->parsed);
    fe_collect_free(&h->result);
}

/* What the renderer wrote since the last call (caller frees). */
static inline char *fe_sh_take(fe_sh_t *h)
{
    size_t n = evbuffer_get_length(h->out);
    char *s = malloc(n + 1);
    evbuffer_remove(h->out, s, n);
    s[n] = '\0';
    return s;
}

static inline void fe_sh_open(fe_sh_t *h)
{
    if (h->opened)
        return;
    h->opened = true;
    if (h->stream->open)
        h->stream->open(&h->sc, h->out);
}

/* One event from the worker (stolen), as fe_generate_on_event hands it on:
 * folded first; a non-final one goes to the renderer. Returns true when it
 * was the final event. */
static inline bool fe_sh_event(fe_sh_t *h, json_t *ev)
{
    bool final = fe_collect_event(&h->result, ev);
    if (!final) {
        fe_sh_open(h);
        h->stream->event(&h->sc, ev, h->out);
    }
    json_decref(ev);
    return final;
}

/* The event given as JSON text (a test's own, so it must parse). */
static inline bool fe_sh_feed(fe_sh_t *h, const char *text)
{
    json_error_t jerr;
    json_t *ev = json_loads(text, 0, &jerr);
    if (!ev) {
        fprintf(stderr, "bad test event: %s: %s\n", jerr.text, text);
        abort();
    }
    return fe_sh_event(h, ev);
}

/* The job completed: the style's render, then the renderer's close (as
 * fe_stream_complete). Returns the rendered body (caller decrefs). */
static inline json_t *fe_sh_complete(fe_sh_t *h)
{
    json_t *rendered = h->style->render(&h->result, &h->sc.render);
    fe_sh_open(h);
    h->stream->close(&h->sc, rendered, h->out);
    return rendered;
}

/* The job failed after the stream started (as fe_stream_fail). */
static inline void fe_sh_fail(fe_sh_t *h, const fe_error_t *e)
{
    h->stream->fail(&h->sc, e, h->out);
}

/* The next server-sent event of *p: its "event:" name (or "" when it has
 * none) into name and its data parsed (new reference, NULL when there is
 * none or it is not JSON); *p moves past it. NULL data and an empty name at
 * the end. Events end with a blank line (end: "\n\n" or "\r\n\r\n"). */
static inline json_t *fe_sh_next_sse(const char **p, const char *end, char *name, size_t len)
{
    name[0] = '\0';
    const char *e = strstr(*p, end);
    if (!e)
        return NULL;
    const char *ev = strstr(*p, "event: ");
    if (ev && ev < e) {
        const char *nl = strchr(ev, '\n');
        snprintf(name, len, "%.*s", (int)(nl - ev - 7), ev + 7);
    }
    const char *data = strstr(*p, "data: ");
    json_t *out = data && data < e ? json_loadb(data + 6, (size_t)(e - data - 6), 0, NULL) : NULL;
    *p = e + strlen(end);
    return out;
}

/* Compares text with expect; on a difference prints both. */
#define FE_SH_CHECK_BYTES(text, expect)                                                                                \
    do {                                                                                                               \
        const char *fe_sh_t_ = (text), *fe_sh_e_ = (expect);                                                           \
        CHECK(strcmp(fe_sh_t_, fe_sh_e_) == 0);                                                                        \
        if (strcmp(fe_sh_t_, fe_sh_e_) != 0)                                                                           \
            fprintf(stderr, "  got:\n%s\n  expected:\n%s\n", fe_sh_t_, fe_sh_e_);                                      \
    } while (0)

#endif
