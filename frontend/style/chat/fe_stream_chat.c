/*
 * fe_stream_chat: the Chat Completions stream, as OpenAI sends it: one
 * "data: {chat.completion.chunk}" per step, then "data: [DONE]".
 *
 *   per choice (n > 1: choices interleave, each chunk names its index):
 *     {"role":"assistant","content":""}           first, before anything else of the choice
 *     {"reasoning_content": "..."}                 reasoning (as vLLM and DeepSeek stream it)
 *     {"content": "..."}                           text deltas
 *     {"refusal": "..."}                           a refusal
 *     {"tool_calls":[{"index","id","type","function":{"name","arguments":""}}]}   a call starts
 *     {"tool_calls":[{"index","function":{"arguments":"..."}}]}                   its arguments
 *     {} with finish_reason                        the choice is over
 *   stream_options.include_usage: every chunk has "usage": null and a last
 *   chunk with "choices": [] carries the usage.
 * A failure after the first chunk is "data: {"error":{...}}" (what the
 * OpenAI SDKs raise as an API error), with no [DONE]. Keep-alives are SSE
 * comments.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_openai.h"
#include "fe_stream.h"
#include "sb_alloc.h"
#include "sb_event.h"

/* Choices (Chat Completions allows n <= 16 here) and items per choice a
 * stream tracks. */
#define FE_SC_MAX_CHOICES 16
#define FE_SC_MAX_ITEMS 64

typedef struct {
    bool streamed;  /* some delta of it went out */
    int tool_index; /* function_call: its index in tool_calls; -1 otherwise */
} fe_sc_item_t;

typedef struct {
    bool started;  /* the role chunk went out */
    bool finished; /* the finish_reason chunk went out */
    int tool_calls;
    fe_sc_item_t items[FE_SC_MAX_ITEMS];
} fe_sc_choice_t;

typedef struct {
    bool include_usage;
    fe_sc_choice_t *choices[FE_SC_MAX_CHOICES]; /* owned; each made at its first event (most streams: one) */
} fe_sc_state_t;

static void fe_sc_state_free(void *state)
{
    fe_sc_state_t *st = state;
    for (int k = 0; k < FE_SC_MAX_CHOICES; k++)
        free(st->choices[k]);
}

/* One chunk with one choice (delta stolen; finish NULL = null), or with no
 * choice when delta is NULL; usage stolen when not NULL. */
static void fe_sc_chunk(fe_stream_ctx_t *sc, struct evbuffer *out, int choice, json_t *delta, const char *finish,
                        json_t *usage)
{
    fe_sc_state_t *st = sc->state;
    json_t *choices = json_array();
    if (delta)
        json_array_append_new(choices, json_pack("{s:i, s:o, s:n, s:s?}", "index", choice, "delta", delta, "logprobs",
                                                 "finish_reason", finish));
    json_t *chunk =
        json_pack("{s:s, s:s, s:I, s:s, s:s, s:n, s:o}", "id", sc->render.parsed->response_id, "object",
                  "chat.completion.chunk", "created", (json_int_t)(sc->render.start_ms / 1000), "model",
                  sc->render.parsed->model_id, "service_tier", "default", "system_fingerprint", "choices", choices);
    if (usage)
        json_object_set_new(chunk, "usage", usage);
    else if (st->include_usage)
        json_object_set_new(chunk, "usage", json_null());
    fe_sse_json(out, NULL, chunk, "\n\n");
    json_decref(chunk);
}

static fe_sc_choice_t *fe_sc_choice(fe_stream_ctx_t *sc, int k, struct evbuffer *out)
{
    fe_sc_state_t *st = sc->state;
    if (k < 0 || k >= FE_SC_MAX_CHOICES || k >= sc->render.parsed->n)
        return NULL;
    if (!st->choices[k])
        st->choices[k] = sb_xcalloc(1, sizeof *st->choices[k]);
    fe_sc_choice_t *c = st->choices[k];
    if (!c->started) {
        c->started = true;
        for (int i = 0; i < FE_SC_MAX_ITEMS; i++)
            c->items[i].tool_index = -1;
        fe_sc_chunk(sc, out, k, json_pack("{s:s, s:s, s:n}", "role", "assistant", "content", "", "refusal"), NULL,
                    NULL);
    }
    return c;
}

static fe_sc_item_t *fe_sc_item(fe_sc_choice_t *c, const json_t *ev)
{
    json_t *i = json_object_get(ev, "item_index");
    if (!json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) >= FE_SC_MAX_ITEMS)
        return NULL;
    return &c->items[json_integer_value(i)];
}

static json_t *fe_sc_tool_delta(int index, json_t *fields)
{
    json_object_set_new(fields, "index", json_integer(index));
    return json_pack("{s:[o]}", "tool_calls", fields);
}

/* A function call starts: its tool_calls entry with id and name. */
static void fe_sc_tool_start(fe_stream_ctx_t *sc, fe_sc_choice_t *c, fe_sc_item_t *it, int k, const json_t *item,
                             struct evbuffer *out)
{
    it->tool_index = c->tool_calls++;
    json_t *call_id = json_object_get(item, "call_id");
    json_t *name = json_object_get(item, "name");
    fe_sc_chunk(sc, out, k,
                fe_sc_tool_delta(it->tool_index,
                                 json_pack("{s:s, s:s, s:{s:s, s:s}}", "id",
                                           json_is_string(call_id) ? json_string_value(call_id) : "", "type",
                                           "function", "function", "name",
                                           json_is_string(name) ? json_string_value(name) : "", "arguments", "")),
                NULL, NULL);
}

/* An item is complete: whatever of it was never streamed goes out whole. */
static void fe_sc_item_done(fe_stream_ctx_t *sc, fe_sc_choice_t *c, fe_sc_item_t *it, int k, const json_t *item,
                            struct evbuffer *out)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type)
        return;
    if (!strcmp(type, "function_call")) {
        if (it->tool_index < 0)
            fe_sc_tool_start(sc, c, it, k, item, out);
        json_t *args = json_object_get(item, "arguments");
        if (!it->streamed && json_string_length(args) > 0)
            fe_sc_chunk(sc, out, k,
                        fe_sc_tool_delta(it->tool_index, json_pack("{s:{s:O}}", "function", "arguments", args)), NULL,
                        NULL);
        return;
    }
    size_t j;
    const json_t *p;
    if (!strcmp(type, "message")) {
        json_array_foreach (json_object_get(item, "content"), j, p) {
            const char *pt = json_string_value(json_object_get(p, "type"));
            bool refusal = pt && !strcmp(pt, "refusal");
            json_t *text = json_object_get(p, refusal ? "refusal" : "text");
            /* Refusals are never streamed as deltas; text only when it was not. */
            if (json_string_length(text) > 0 && (refusal || !it->streamed))
                fe_sc_chunk(sc, out, k, json_pack("{s:O}", refusal ? "refusal" : "content", text), NULL, NULL);
        }
    } else if (!strcmp(type, "reasoning") && !it->streamed) {
        json_array_foreach (json_object_get(item, "content"), j, p) {
            json_t *text = json_object_get(p, "text");
            if (json_string_length(text) > 0)
                fe_sc_chunk(sc, out, k, json_pack("{s:O}", "reasoning_content", text), NULL, NULL);
        }
    }
}

static const char *fe_sc_finish_reason(const fe_sc_choice_t *c, const char *status, const char *reason)
{
    if (c->tool_calls > 0)
        return "tool_calls";
    if (status && !strcmp(status, "incomplete"))
        return reason && !strcmp(reason, "content_filter") ? "content_filter" : "length";
    return "stop";
}

static void fe_sc_open(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    (void)out;
    fe_sc_state_t *st = sc->state;
    st->include_usage = json_is_true(json_object_get(sc->render.parsed->style_state, "include_usage"));
}

static void fe_sc_event(fe_stream_ctx_t *sc, const json_t *ev, struct evbuffer *out)
{
    enum sb_event_type t = sb_event_type_of(ev);
    int k = sb_event_choice(ev);
    if (t == SB_EV_USAGE)
        return; /* the last chunk carries it */
    fe_sc_choice_t *c = fe_sc_choice(sc, k, out);
    if (!c || c->finished)
        return;
    if (t == SB_EV_CHOICE_DONE) {
        c->finished = true;
        fe_sc_chunk(sc, out, k, json_object(),
                    fe_sc_finish_reason(c, json_string_value(json_object_get(ev, "status")),
                                        json_string_value(json_object_get(ev, "incomplete_reason"))),
                    NULL);
        return;
    }
    fe_sc_item_t *it = fe_sc_item(c, ev);
    if (!it)
        return;
    const json_t *item = json_object_get(ev, "item");
    const char *itype = json_string_value(json_object_get(item, "type"));
    switch (t) {
    case SB_EV_ITEM_ADDED:
        if (itype && !strcmp(itype, "function_call") && it->tool_index < 0)
            fe_sc_tool_start(sc, c, it, k, item, out);
        break;
    case SB_EV_TEXT_DELTA:
        it->streamed = true;
        fe_sc_chunk(sc, out, k, json_pack("{s:O}", "content", json_object_get(ev, "delta")), NULL, NULL);
        break;
    case SB_EV_REASONING_DELTA:
        it->streamed = true;
        fe_sc_chunk(sc, out, k, json_pack("{s:O}", "reasoning_content", json_object_get(ev, "delta")), NULL, NULL);
        break;
    case SB_EV_ARGS_DELTA:
        if (it->tool_index < 0)
            break; /* arguments of a call that never started: sent whole at its end */
        it->streamed = true;
        fe_sc_chunk(sc, out, k,
                    fe_sc_tool_delta(it->tool_index,
                                     json_pack("{s:{s:O}}", "function", "arguments", json_object_get(ev, "delta"))),
                    NULL, NULL);
        break;
    case SB_EV_ITEM_DONE:
        if (json_is_object(item))
            fe_sc_item_done(sc, c, it, k, item, out);
        break;
    default:
        break;
    }
}

static void fe_sc_close(fe_stream_ctx_t *sc, const json_t *rendered, struct evbuffer *out)
{
    fe_sc_state_t *st = sc->state;
    json_t *choices = json_object_get(rendered, "choices");
    for (int k = 0; k < sc->render.parsed->n && k < FE_SC_MAX_CHOICES; k++) {
        fe_sc_choice_t *c = fe_sc_choice(sc, k, out);
        if (c->finished)
            continue;
        c->finished = true;
        const char *finish = json_string_value(json_object_get(json_array_get(choices, (size_t)k), "finish_reason"));
        fe_sc_chunk(sc, out, k, json_object(), finish ? finish : "stop", NULL);
    }
    if (st->include_usage)
        fe_sc_chunk(sc, out, 0, NULL, NULL, json_deep_copy(json_object_get(rendered, "usage")));
    fe_sse_data(out, "[DONE]");
}

static void fe_sc_fail(fe_stream_ctx_t *sc, const fe_error_t *e, struct evbuffer *out)
{
    (void)sc;
    json_t *body = fe_openai_error_body(e, NULL);
    fe_sse_json(out, NULL, body, "\n\n");
    json_decref(body);
}

static void fe_sc_keepalive(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    (void)sc;
    fe_sse_comment(out, "keep-alive", "\n\n");
}

const fe_stream_style_t fe_stream_chat = {
    .content_type = "text/event-stream; charset=utf-8",
    .state_size = sizeof(fe_sc_state_t),
    .state_free = fe_sc_state_free,
    .open = fe_sc_open,
    .event = fe_sc_event,
    .close = fe_sc_close,
    .fail = fe_sc_fail,
    .keepalive = fe_sc_keepalive,
};
