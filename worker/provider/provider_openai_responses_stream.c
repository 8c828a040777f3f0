/*
 * provider_openai_responses_stream: the openai-responses adapter's stream
 * side (provider_openai_responses.h).
 *
 * Streaming: Responses server-sent events. Each "data:" payload is a JSON
 * event whose "type" says what it is:
 *   response.output_item.added  -> item_added
 *   response.output_text.delta  -> text_delta
 *   response.function_call_arguments.delta -> args_delta
 *   response.reasoning_text.delta -> reasoning_delta
 *   response.output_item.done   -> item_done (encrypted_content moved as above)
 *   response.completed / .incomplete -> usage now, completed at the end
 *   response.failed, error      -> the error event, at the end
 * Everything else (created, in_progress, content_part.*, *.done texts,
 * summary deltas, built-in tool progress) is implied by the events above.
 * Reasoning summary text arrives with the reasoning item's item_done: the
 * canonical events have no summary delta. The final event is held until
 * stream_finish, which knows upstream_us. A 2xx body that is plain JSON (an
 * upstream that ignored "stream") is translated as a whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* SB_PROVIDER_MAX_BODY only: the parser's limit on a response */
#include "provider_openai_responses.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_sse.h"

/* One output item seen in the stream. */
typedef struct sb_oresp_slot {
    json_int_t output_index; /* the upstream's */
    char *id;                /* the item's id (the upstream's or generated) */
    bool done;
} sb_oresp_slot_t;

typedef struct sb_oresp_stream {
    const json_t *job;
    enum { SB_OSTREAM_START, SB_OSTREAM_SSE, SB_OSTREAM_JSON } mode;
    /* SSE: lines and events (common/sb_sse.h; a long line, a generated
     * image arriving in many chunks, is scanned once). */
    sb_sse_reader_t sse;
    sb_buf_t body;          /* JSON, or only whitespace so far: the whole body */
    sb_oresp_slot_t *slots; /* item_index -> slot */
    size_t n_slots;
    json_t *final; /* the held final event, once the stream said it is over */
} sb_oresp_stream_t;

void *sb_oresp_stream_new(const json_t *job)
{
    sb_oresp_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    /* The limit of a whole body, on a line or an event's data: an absurd
     * one is -E2BIG, which the worker reports. */
    sb_sse_init(&s->sse, SB_PROVIDER_MAX_BODY, 0);
    return s;
}

void sb_oresp_stream_destroy(void *state)
{
    sb_oresp_stream_t *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_slots; i++)
        free(s->slots[i].id);
    free(s->slots);
    sb_sse_free(&s->sse);
    sb_buf_free(&s->body);
    json_decref(s->final);
    free(s);
}

/* The item_index of an upstream output_index, or -1 if not added yet. */
static int sb_oresp_slot_find(const sb_oresp_stream_t *s, const json_t *ev)
{
    const json_t *oi = json_object_get(ev, "output_index");
    if (!json_is_integer(oi))
        return s->n_slots > 0 ? (int)s->n_slots - 1 : -1; /* the current item */
    for (size_t i = s->n_slots; i > 0; i--)
        if (s->slots[i - 1].output_index == json_integer_value(oi))
            return (int)i - 1;
    return -1;
}

/* Adds a slot for a translated item (borrowed) and emits its item_added,
 * with the item as it is, or its partial form (a done item never added).
 * Returns its item_index. */
static int sb_oresp_slot_add(sb_oresp_stream_t *s, const json_t *ev, const json_t *it, json_t *events, bool partial)
{
    s->slots = sb_xrealloc(s->slots, (s->n_slots + 1) * sizeof *s->slots);
    sb_oresp_slot_t *slot = &s->slots[s->n_slots];
    const json_t *oi = json_object_get(ev, "output_index");
    slot->output_index = json_is_integer(oi) ? json_integer_value(oi) : (json_int_t)s->n_slots;
    slot->id = sb_xstrdup(json_string_value(json_object_get(it, "id")));
    slot->done = false;
    int index = (int)s->n_slots++;
    json_array_append_new(events, sb_event_item_added(index, partial ? sb_oresp_partial(it) : json_deep_copy(it)));
    return index;
}

/* One SSE event's JSON payload. Returns 0, or -EBADMSG for a malformed one. */
static int sb_oresp_stream_event(sb_oresp_stream_t *s, const char *data, size_t len, json_t *events)
{
    if (s->final)
        return 0; /* over: nothing after the end counts */
    if (len == 6 && !memcmp(data, "[DONE]", 6))
        return 0;
    json_t *ev = json_loadb(data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (!json_is_object(ev) || !type) {
        json_decref(ev);
        return -EBADMSG;
    }
    int rc = 0;
    if (!strcmp(type, "response.output_item.added")) {
        json_t *it = sb_oresp_item(json_object_get(ev, "item"), NULL, false);
        if (it)
            sb_oresp_slot_add(s, ev, it, events, false);
        else
            rc = -EBADMSG;
        json_decref(it);
    } else if (!strcmp(type, "response.output_text.delta") || !strcmp(type, "response.function_call_arguments.delta") ||
               !strcmp(type, "response.reasoning_text.delta")) {
        int index = sb_oresp_slot_find(s, ev);
        const json_t *delta = json_object_get(ev, "delta");
        if (index >= 0 && json_is_string(delta) && json_string_length(delta) > 0) {
            const char *d = json_string_value(delta);
            size_t n = json_string_length(delta);
            if (type[9] == 'o') /* response.output_text.delta */
                json_array_append_new(
                    events,
                    sb_event_text_delta(index, (int)json_integer_value(json_object_get(ev, "content_index")), d, n));
            else if (type[9] == 'f')
                json_array_append_new(events, sb_event_args_delta(index, d, n));
            else
                json_array_append_new(events, sb_event_reasoning_delta(index, d, n));
        }
    } else if (!strcmp(type, "response.output_item.done")) {
        int index = sb_oresp_slot_find(s, ev);
        if (index >= 0 && s->slots[index].done)
            index = -1;
        json_t *it = sb_oresp_item(json_object_get(ev, "item"), index >= 0 ? s->slots[index].id : NULL, true);
        if (!it) {
            rc = -EBADMSG;
        } else {
            if (index < 0) /* never added: add it now */
                index = sb_oresp_slot_add(s, ev, it, events, true);
            s->slots[index].done = true;
            json_array_append_new(events, sb_event_item_done(index, it));
        }
    } else if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
               !strcmp(type, "response.failed")) {
        const json_t *response = json_object_get(ev, "response");
        s->final = sb_oresp_outcome(s->job, response, type + 9, 0); /* "completed", ... */
        if (sb_event_type_of(s->final) == SB_EV_COMPLETED) {
            json_t *usage = sb_oresp_usage(json_object_get(response, "usage"));
            if (usage)
                json_array_append_new(events, usage);
        }
    } else if (!strcmp(type, "error")) {
        /* OpenAI puts code and message at the top; Open Responses nests them. */
        const json_t *error = json_object_get(ev, "error");
        s->final = sb_oresp_failed(s->job, json_is_object(error) ? error : ev);
    }
    json_decref(ev);
    return rc;
}

/* The state an SSE event is read with (sb_sse_event_fn's arg). */
typedef struct sb_oresp_feed {
    sb_oresp_stream_t *s;
    json_t *events;
} sb_oresp_feed_t;

/* One SSE event (sb_sse_event_fn): its data is the JSON event ("event:"
 * repeats the type that is in the data). An event with an empty data field
 * is malformed, as before. */
static int sb_oresp_sse_event(void *arg, const char *event, const char *data, size_t len)
{
    (void)event;
    sb_oresp_feed_t *f = arg;
    return sb_oresp_stream_event(f->s, data, len, f->events);
}

int sb_oresp_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_oresp_stream_t *s = state;
    sb_oresp_feed_t f = {s, events};
    if (s->mode == SB_OSTREAM_START) {
        size_t i = 0;
        while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
            i++;
        if (i < len)
            s->mode = data[i] == '{' ? SB_OSTREAM_JSON : SB_OSTREAM_SSE;
        if (s->mode == SB_OSTREAM_SSE && s->body.len > 0) {
            /* The whitespace held while undecided is the stream's start. */
            int rc = sb_sse_feed(&s->sse, s->body.p, s->body.len, sb_oresp_sse_event, &f);
            s->body.len = 0;
            if (rc < 0)
                return rc;
        }
    }
    if (s->mode != SB_OSTREAM_SSE) { /* JSON (or only whitespace so far): translated at the end */
        if (len > SB_PROVIDER_MAX_BODY - s->body.len)
            return -E2BIG;
        sb_buf_add(&s->body, data, len);
        return 0;
    }
    int rc = sb_sse_feed(&s->sse, data, len, sb_oresp_sse_event, &f);
    return rc < 0 ? rc : 0;
}

void sb_oresp_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_oresp_stream_t *s = state;
    if (s->mode != SB_OSTREAM_SSE) {
        sb_provider_response_t r = *resp;
        r.body = s->body.p ? s->body.p : "";
        r.body_len = s->body.len;
        sb_oresp_parse_response(s->job, &r, events);
        return;
    }
    /* A last line without its line end, a last event without its blank
     * line, still count. */
    sb_oresp_feed_t f = {s, events};
    if (sb_sse_finish(&s->sse, sb_oresp_sse_event, &f) < 0) {
        json_array_append_new(events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream was malformed"));
        return;
    }
    if (!s->final) {
        json_array_append_new(events, sb_event_error(502, SB_ERR_UPSTREAM, NULL,
                                                     "upstream stream ended before the response was complete"));
        return;
    }
    if (sb_event_type_of(s->final) == SB_EV_COMPLETED)
        json_object_set_new(s->final, "upstream_us", json_integer(resp->upstream_us));
    json_array_append_new(events, s->final);
    s->final = NULL;
}
