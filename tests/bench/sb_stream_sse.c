/*
 * sb_stream_sse: the byte-level half of the streaming benchmark: splitting a
 * text/event-stream body into events, deciding which events are content
 * deltas in each API style, and the timing maths (TTFT, gaps, percentiles).
 * Bytes come from a server under test, so nothing here asserts on them.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_load.h"
#include "sb_sse.h"
#include "sb_stream.h"

#define SSE_MAX_LINE_DEFAULT (4u * 1024 * 1024)

/* ---- styles ----------------------------------------------------------------------------- */

static const char *const style_names[] = {
    [SB_STREAM_CHAT] = "chat",
    [SB_STREAM_RESPONSES] = "responses",
    [SB_STREAM_MESSAGES] = "messages",
    [SB_STREAM_GEMINI] = "gemini",
};

int sb_stream_style_parse(const char *name, enum sb_stream_style *out)
{
    for (size_t i = 0; i < sizeof style_names / sizeof *style_names; i++) {
        if (!strcmp(name, style_names[i])) {
            *out = (enum sb_stream_style)i;
            return 0;
        }
    }
    return -EINVAL;
}

const char *sb_stream_style_name(enum sb_stream_style style)
{
    return (unsigned)style < sizeof style_names / sizeof *style_names ? style_names[style] : "?";
}

static bool nonempty_string(const json_t *v)
{
    return json_is_string(v) && json_string_length(v) > 0;
}

static enum sb_stream_event_kind classify_chat(const json_t *root)
{
    if (json_object_get(root, "error"))
        return SB_STREAM_EV_ERROR;
    const json_t *choices = json_object_get(root, "choices");
    size_t i;
    const json_t *choice;
    json_array_foreach (choices, i, choice) {
        if (nonempty_string(json_object_get(json_object_get(choice, "delta"), "content")))
            return SB_STREAM_EV_DELTA;
    }
    return SB_STREAM_EV_OTHER;
}

static enum sb_stream_event_kind classify_responses(const json_t *root, const char *type)
{
    if (!strcmp(type, "response.output_text.delta"))
        return nonempty_string(json_object_get(root, "delta")) ? SB_STREAM_EV_DELTA : SB_STREAM_EV_OTHER;
    if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete"))
        return SB_STREAM_EV_END;
    if (!strcmp(type, "response.failed") || !strcmp(type, "error"))
        return SB_STREAM_EV_ERROR;
    return SB_STREAM_EV_OTHER;
}

static enum sb_stream_event_kind classify_messages(const json_t *root, const char *type)
{
    if (!strcmp(type, "content_block_delta")) {
        const json_t *delta = json_object_get(root, "delta");
        const json_t *dtype = json_object_get(delta, "type");
        if (json_is_string(dtype) && !strcmp(json_string_value(dtype), "text_delta") &&
            nonempty_string(json_object_get(delta, "text")))
            return SB_STREAM_EV_DELTA;
        return SB_STREAM_EV_OTHER;
    }
    if (!strcmp(type, "message_stop"))
        return SB_STREAM_EV_END;
    if (!strcmp(type, "error"))
        return SB_STREAM_EV_ERROR;
    return SB_STREAM_EV_OTHER;
}

static enum sb_stream_event_kind classify_gemini(const json_t *root)
{
    if (json_object_get(root, "error"))
        return SB_STREAM_EV_ERROR;
    const json_t *cand = json_array_get(json_object_get(root, "candidates"), 0);
    const json_t *parts = json_object_get(json_object_get(cand, "content"), "parts");
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        if (json_is_true(json_object_get(part, "thought")))
            continue;
        if (nonempty_string(json_object_get(part, "text")))
            return SB_STREAM_EV_DELTA;
    }
    return SB_STREAM_EV_OTHER;
}

enum sb_stream_event_kind sb_stream_classify(enum sb_stream_style style, const char *type, const char *data, size_t len)
{
    if (style == SB_STREAM_CHAT && len == 6 && !memcmp(data, "[DONE]", 6))
        return SB_STREAM_EV_END;
    json_t *root = json_loadb(data, len, JSON_DECODE_ANY, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return SB_STREAM_EV_ERROR;
    }
    /* The JSON type member names Responses and Messages events; the event
     * field only stands in when it is missing. */
    const json_t *jt = json_object_get(root, "type");
    const char *t = json_is_string(jt) ? json_string_value(jt) : (type ? type : "");
    enum sb_stream_event_kind k = SB_STREAM_EV_ERROR;
    switch (style) {
    case SB_STREAM_CHAT:
        k = classify_chat(root);
        break;
    case SB_STREAM_RESPONSES:
        k = classify_responses(root, t);
        break;
    case SB_STREAM_MESSAGES:
        k = classify_messages(root, t);
        break;
    case SB_STREAM_GEMINI:
        k = classify_gemini(root);
        break;
    }
    json_decref(root);
    return k;
}

/* ---- SSE splitting ------------------------------------------------------------------------ */

void sb_stream_sse_init(struct sb_stream_sse *s)
{
    sb_sse_init(&s->reader, SSE_MAX_LINE_DEFAULT, 0);
    s->max_line = SSE_MAX_LINE_DEFAULT;
}

void sb_stream_sse_reset(struct sb_stream_sse *s)
{
    sb_sse_reset(&s->reader);
}

void sb_stream_sse_free(struct sb_stream_sse *s)
{
    sb_sse_free(&s->reader);
    sb_stream_sse_init(s);
}

/* The caller's callback, as sb_sse calls it. */
struct sb_stream_sse_call {
    sb_stream_sse_fn fn;
    void *arg;
};

static int sb_stream_sse_event(void *arg, const char *event, const char *data, size_t len)
{
    const struct sb_stream_sse_call *c = arg;
    return c->fn(c->arg, event, data, len);
}

int sb_stream_sse_feed(struct sb_stream_sse *s, const char *buf, size_t len, sb_stream_sse_fn fn, void *arg)
{
    if (s->max_line == 0)
        s->max_line = SSE_MAX_LINE_DEFAULT;
    s->reader.max = s->max_line; /* a test may lower it after init */
    struct sb_stream_sse_call c = {fn, arg};
    int rc = sb_sse_feed(&s->reader, buf, len, sb_stream_sse_event, &c);
    return rc == -E2BIG ? -EMSGSIZE : rc; /* the reader's over-long line or event */
}

/* ---- timing maths ---------------------------------------------------------------------------- */

void sb_stream_samples_push(struct sb_stream_samples *s, uint64_t us)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 256;
        s->v = sb_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = us;
}

void sb_stream_samples_append(struct sb_stream_samples *dst, const struct sb_stream_samples *src)
{
    for (size_t i = 0; i < src->n; i++)
        sb_stream_samples_push(dst, src->v[i]);
}

void sb_stream_samples_free(struct sb_stream_samples *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

void sb_stream_summarise(struct sb_stream_samples *s, struct sb_stream_summary *out)
{
    memset(out, 0, sizeof *out);
    if (s->n == 0)
        return;
    qsort(s->v, s->n, sizeof *s->v, cmp_u64);
    double sum = 0;
    for (size_t i = 0; i < s->n; i++)
        sum += (double)s->v[i];
    out->n = s->n;
    out->mean = sum / (double)s->n;
    out->min = s->v[0];
    out->max = s->v[s->n - 1];
    out->p50 = sb_load_percentile(s->v, s->n, 50);
    out->p90 = sb_load_percentile(s->v, s->n, 90);
    out->p99 = sb_load_percentile(s->v, s->n, 99);
}

void sb_stream_timing_start(struct sb_stream_timing *t, int64_t now_us)
{
    t->start_us = now_us;
    t->first_us = 0;
    t->last_us = 0;
    t->deltas = 0;
    t->gaps.n = 0;
}

void sb_stream_timing_delta(struct sb_stream_timing *t, int64_t now_us)
{
    if (t->deltas == 0) {
        t->first_us = now_us;
    } else {
        int64_t gap = now_us - t->last_us;
        sb_stream_samples_push(&t->gaps, gap > 0 ? (uint64_t)gap : 0);
    }
    t->last_us = now_us;
    t->deltas++;
}

uint64_t sb_stream_timing_ttft(const struct sb_stream_timing *t)
{
    if (t->deltas == 0 || t->first_us < t->start_us)
        return 0;
    return (uint64_t)(t->first_us - t->start_us);
}

void sb_stream_timing_free(struct sb_stream_timing *t)
{
    sb_stream_samples_free(&t->gaps);
}
