/*
 * provider_anthropic_stream: the "anthropic" adapter's stream hooks
 * (request.stream). Anthropic's Server-Sent Events (message_start,
 * content_block_start/delta/stop, message_delta, message_stop, ping, error)
 * drive the same translator as a complete response
 * (provider_anthropic_parse.c), so both paths emit the same events. Every
 * Anthropic event's data carries its own "type", so the event: lines are not
 * needed.
 */
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* SB_PROVIDER_MAX_BODY only: the parser's limit on a response */
#include "provider_anthropic.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_errkind.h"
#include "sb_event.h"
#include "sb_sse.h"

enum sb_anth_stream_state {
    SB_ANTH_STREAM_OPEN,    /* events still coming */
    SB_ANTH_STREAM_STOPPED, /* message_stop seen: items and usage sent, completed waits for finish */
    SB_ANTH_STREAM_FAILED,  /* a final error sent (an error event, a malformed one) */
};

typedef struct sb_anth_stream {
    const json_t *job; /* borrowed */
    enum sb_anth_stream_state state;
    sb_anth_out_t o;
    sb_sse_reader_t sse; /* LF-only lines, as Anthropic ends them; limit SB_PROVIDER_MAX_BODY */
} sb_anth_stream_t;

void *sb_anth_stream_new(const json_t *job)
{
    sb_anth_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    sb_anth_out_init(&s->o, NULL);
    sb_sse_init(&s->sse, SB_PROVIDER_MAX_BODY, SB_SSE_LF_ONLY);
    return s;
}

void sb_anth_stream_destroy(void *state)
{
    sb_anth_stream_t *s = state;
    if (!s)
        return;
    sb_anth_out_clear(&s->o);
    sb_sse_free(&s->sse);
    free(s);
}

static void sb_anth_stream_fail(sb_anth_stream_t *s, json_t *final)
{
    sb_anth_emit(&s->o, final);
    s->state = SB_ANTH_STREAM_FAILED;
}

/* One SSE event's data. */
static void sb_anth_stream_event(sb_anth_stream_t *s, const char *data, size_t len)
{
    if (s->state != SB_ANTH_STREAM_OPEN)
        return; /* nothing comes after message_stop or an error */
    json_t *ev = json_loadb(data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    sb_anth_out_t *o = &s->o;
    if (!type) {
        sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream sent a malformed stream event"));
    } else if (!strcmp(type, "message_start")) {
        sb_anth_take_usage(o, json_object_get(json_object_get(ev, "message"), "usage"));
    } else if (!strcmp(type, "content_block_start")) {
        if (sb_anth_block_start(o, json_integer_value(json_object_get(ev, "index")),
                                json_object_get(ev, "content_block")) < 0)
            sb_anth_stream_fail(
                s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed content block"));
    } else if (!strcmp(type, "content_block_delta")) {
        sb_anth_block_delta(o, json_integer_value(json_object_get(ev, "index")), json_object_get(ev, "delta"));
    } else if (!strcmp(type, "content_block_stop")) {
        if (json_integer_value(json_object_get(ev, "index")) == o->block_index)
            sb_anth_block_stop(o);
    } else if (!strcmp(type, "message_delta")) {
        sb_anth_take_stop_reason(o, json_object_get(json_object_get(ev, "delta"), "stop_reason"));
        sb_anth_take_usage(o, json_object_get(ev, "usage"));
    } else if (!strcmp(type, "message_stop")) {
        sb_anth_end_items(o);
        s->state = SB_ANTH_STREAM_STOPPED;
    } else if (!strcmp(type, "error")) {
        const char *etype = json_string_value(json_object_get(json_object_get(ev, "error"), "type"));
        sb_anth_stream_fail(s, sb_anth_error_event(sb_errkind_anthropic_status(etype), ev, -1));
    }
    /* ping, and event types newer than this adapter: nothing to do. */
    json_decref(ev);
}

/* sb_sse's callback: one event's data (its event: name is not needed). */
static int sb_anth_stream_on_sse(void *arg, const char *event, const char *data, size_t len)
{
    (void)event;
    sb_anth_stream_event(arg, data, len);
    return 0;
}

int sb_anth_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_anth_stream_t *s = state;
    s->o.events = events;
    int rc = sb_sse_feed(&s->sse, data, len, sb_anth_stream_on_sse, s);
    return rc < 0 ? rc : 0;
}

void sb_anth_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_anth_stream_t *s = state;
    s->o.events = events;
    /* An unterminated last line or event still counts. */
    if (sb_sse_finish(&s->sse, sb_anth_stream_on_sse, s) < 0) {
        sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response too large"));
        return;
    }
    switch (s->state) {
    case SB_ANTH_STREAM_FAILED:
        break; /* its final event is out */
    case SB_ANTH_STREAM_OPEN:
        sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream ended before message_stop"));
        break;
    case SB_ANTH_STREAM_STOPPED:
        sb_anth_emit(&s->o, sb_anth_completed(&s->o, s->job, resp->upstream_us));
        break;
    }
}
