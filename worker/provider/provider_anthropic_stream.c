/*
 * provider_anthropic_stream: the "anthropic" adapter's stream hooks
 * (request.stream). Anthropic's Server-Sent Events (message_start,
 * content_block_start/delta/stop, message_delta, message_stop, ping, error)
 * drive the same translator as a complete response
 * (provider_anthropic_parse.c), so both paths emit the same events. Every
 * Anthropic event's data carries its own "type", so the event: lines are not
 * needed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* SB_PROVIDER_MAX_BODY only: the parser's limit on a response */
#include "provider_anthropic.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"

enum sb_anth_stream_state {
    SB_ANTH_STREAM_OPEN,    /* events still coming */
    SB_ANTH_STREAM_STOPPED, /* message_stop seen: items and usage sent, completed waits for finish */
    SB_ANTH_STREAM_FAILED,  /* a final error sent (an error event, a malformed one) */
};

typedef struct sb_anth_stream {
    const json_t *job; /* borrowed */
    enum sb_anth_stream_state state;
    sb_anth_out_t o;
    sb_buf_t line; /* the current line, not yet ended */
    sb_buf_t data; /* the current event's data lines */
    bool have_data;
} sb_anth_stream_t;

void *sb_anth_stream_new(const json_t *job)
{
    sb_anth_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    sb_anth_out_init(&s->o, NULL);
    return s;
}

void sb_anth_stream_destroy(void *state)
{
    sb_anth_stream_t *s = state;
    if (!s)
        return;
    sb_anth_out_clear(&s->o);
    sb_buf_free(&s->line);
    sb_buf_free(&s->data);
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
        sb_anth_stream_fail(s, sb_anth_error_event(sb_anth_status_of_type(etype), ev, -1));
    }
    /* ping, and event types newer than this adapter: nothing to do. */
    json_decref(ev);
}

/* One complete line (without its line end). */
static int sb_anth_stream_line(sb_anth_stream_t *s, const char *line, size_t len)
{
    if (len == 0) { /* a blank line dispatches the event */
        if (s->have_data)
            sb_anth_stream_event(s, s->data.p, s->data.len);
        s->data.len = 0;
        s->have_data = false;
        return 0;
    }
    if (len >= 5 && !memcmp(line, "data:", 5)) {
        const char *v = line + 5;
        size_t n = len - 5;
        if (n > 0 && *v == ' ') {
            v++;
            n--;
        }
        if (s->data.len + n + 1 > SB_PROVIDER_MAX_BODY)
            return -E2BIG;
        if (s->have_data)
            sb_buf_add(&s->data, "\n", 1);
        sb_buf_add(&s->data, v, n);
        s->have_data = true;
    }
    /* event:, id:, retry: and ":" comments carry nothing needed here. */
    return 0;
}

int sb_anth_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_anth_stream_t *s = state;
    s->o.events = events;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n')
            continue;
        const char *line = data + start;
        size_t n = i - start;
        if (s->line.len > 0) { /* the line began in an earlier chunk */
            sb_buf_add(&s->line, line, n);
            line = s->line.p;
            n = s->line.len;
        }
        if (n > 0 && line[n - 1] == '\r')
            n--;
        int rc = sb_anth_stream_line(s, line, n);
        s->line.len = 0;
        if (rc < 0)
            return rc;
        start = i + 1;
    }
    if (start < len) {
        if (s->line.len + (len - start) > SB_PROVIDER_MAX_BODY)
            return -E2BIG;
        sb_buf_add(&s->line, data + start, len - start);
    }
    return 0;
}

void sb_anth_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_anth_stream_t *s = state;
    s->o.events = events;
    /* An unterminated last line or event still counts. */
    if (s->line.len > 0) {
        size_t n = s->line.len;
        if (s->line.p[n - 1] == '\r')
            n--;
        if (sb_anth_stream_line(s, s->line.p, n) < 0) {
            sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response too large"));
            return;
        }
        s->line.len = 0;
    }
    (void)sb_anth_stream_line(s, "", 0);
    switch (s->state) {
    case SB_ANTH_STREAM_FAILED:
        break; /* its final event is out */
    case SB_ANTH_STREAM_OPEN:
        sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream ended before message_stop"));
        break;
    case SB_ANTH_STREAM_STOPPED:
        sb_anth_emit(&s->o, sb_anth_completed(&s->o, s->job, resp->upstream_ms));
        break;
    }
}
