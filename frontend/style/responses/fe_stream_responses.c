/*
 * fe_stream_responses: the Responses style's stream, as the Open Responses
 * specification (openresponses-openapi.json) defines it. Every event is
 * "event: <type>" + "data: {...}" whose "type" is the same, with a
 * sequence_number rising from 0:
 *
 *   response.created, response.in_progress                     (the stream opens)
 *   per output item, at its output_index (the canonical item_index):
 *     response.output_item.added                                 (item in_progress, empty)
 *     message:   response.content_part.added, response.output_text.delta…,
 *                response.output_text.done, response.content_part.done per part
 *                (a refusal part: response.refusal.delta / response.refusal.done)
 *     function_call: response.function_call_arguments.delta…, …arguments.done
 *     reasoning: response.content_part.added (reasoning_text),
 *                response.reasoning.delta…, response.reasoning.done,
 *                response.content_part.done
 *     built-in tool items the gateway ran (docs/tools.md), between
 *     output_item.added and output_item.done:
 *       web_search_call: response.web_search_call.in_progress,
 *                        .searching (canonical item_progress), .completed
 *       mcp_list_tools:  response.mcp_list_tools.in_progress, .completed | .failed
 *       mcp_call:        response.mcp_call.in_progress, response.mcp_call_arguments.delta…,
 *                        response.mcp_call_arguments.done, response.mcp_call.completed | .failed
 *       mcp_approval_request: nothing else
 *       code_interpreter_call: response.code_interpreter_call.in_progress,
 *                        response.code_interpreter_call_code.delta…, …code.done,
 *                        .interpreting (item_progress), .completed
 *       file_search_call: response.file_search_call.in_progress, .searching, .completed
 *       image_generation_call: response.image_generation_call.in_progress, .generating,
 *                        .partial_image (item_progress with the picture)…, .completed
 *     response.output_item.done                                  (the item as the final response has it)
 *   annotations of a message's text (canonical annotation_added, or those
 *   the done item brings that were not streamed): response.output_text.annotation.added
 *   response.completed | response.incomplete                     (the full response)
 *   on failure: error, then response.failed
 *
 * Parts and arguments the upstream delivered whole (no deltas) still get one
 * delta with all their text, so a client joining deltas always ends with the
 * final text. Keep-alives are SSE comments.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_openai.h"
#include "fe_responses_render.h"
#include "fe_stream.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

/* Most output items one streamed response tracks (more are still streamed,
 * as items delivered whole). */
#define FE_SR_MAX_ITEMS 256
/* Content parts tracked per message item. */
#define FE_SR_MAX_PARTS 32
/* Parts whose streamed annotations are counted (a message's annotations
 * not streamed by then are sent at its end). */
#define FE_SR_ANN_PARTS 4

typedef struct {
    bool added, done;
    bool args_streamed;
    bool code_done; /* code_interpreter_call: code.done sent (before .interpreting) */
    bool reasoning_opened;
    unsigned parts_opened;                 /* bit c: content part c has had content_part.added */
    unsigned annotations[FE_SR_ANN_PARTS]; /* annotation.added sent for part c: indexes below this */
    char type[24];
    char id[SB_ID_MAX];
} fe_sr_item_t;

/* Items are kept in blocks of this many, each made at its first use: a
 * stream of one item holds one block, not FE_SR_MAX_ITEMS items. */
#define FE_SR_ITEM_BLOCK 8

typedef struct {
    long long seq;
    long long emit_from; /* events numbered below are rendered but not written (a resumed stream) */
    fe_sr_item_t *blocks[FE_SR_MAX_ITEMS / FE_SR_ITEM_BLOCK]; /* owned; NULL until used */
} fe_sr_state_t;

static void fe_sr_state_free(void *state)
{
    fe_sr_state_t *st = state;
    for (size_t i = 0; i < sizeof st->blocks / sizeof st->blocks[0]; i++)
        free(st->blocks[i]);
}

/* Writes one event: the "type" key first, then sequence_number, then obj's
 * fields (stolen). */
static void fe_sr_emit(fe_stream_ctx_t *sc, struct evbuffer *out, const char *type, json_t *obj)
{
    fe_sr_state_t *st = sc->state;
    if (st->seq < st->emit_from) { /* seen already by a client resuming after it */
        st->seq++;
        json_decref(obj);
        return;
    }
    json_t *ev = json_object();
    json_object_set_new(ev, "type", json_string(type));
    json_object_set_new(ev, "sequence_number", json_integer(st->seq++));
    json_object_update(ev, obj);
    json_decref(obj);
    fe_sse_json(out, type, ev, "\n\n");
    json_decref(ev);
}

static fe_sr_item_t *fe_sr_item(fe_stream_ctx_t *sc, const json_t *ev)
{
    fe_sr_state_t *st = sc->state;
    json_t *i = json_object_get(ev, "item_index");
    if (!json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) >= FE_SR_MAX_ITEMS)
        return NULL;
    size_t n = (size_t)json_integer_value(i);
    fe_sr_item_t **block = &st->blocks[n / FE_SR_ITEM_BLOCK];
    if (!*block)
        *block = sb_xcalloc(FE_SR_ITEM_BLOCK, sizeof **block);
    return &(*block)[n % FE_SR_ITEM_BLOCK];
}

static json_int_t fe_sr_index(const json_t *ev)
{
    return json_integer_value(json_object_get(ev, "item_index"));
}

static bool fe_sr_is(const char *type, const char *name)
{
    return type && !strcmp(type, name);
}

/* The item as output_item.added shows it: in progress, with nothing in it
 * (a built-in tool's item as the worker began it: an mcp_call without its
 * arguments and output, a tool list without its tools, a web search with at
 * least its action's type, which openai-python requires). */
static json_t *fe_sr_item_started(const fe_parsed_t *parsed, const json_t *item, const char *id)
{
    json_t *it = json_deep_copy(item);
    const char *type = json_string_value(json_object_get(it, "type"));
    json_object_set_new(it, "id", json_string(id));
    if (fe_sr_is(type, "web_search_call")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        if (!json_is_object(json_object_get(it, "action")))
            json_object_set_new(it, "action", json_pack("{s:s}", "type", "search"));
    } else if (fe_sr_is(type, "mcp_call")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        json_object_set_new(it, "arguments", json_string(""));
        json_object_set_new(it, "output", json_null());
        json_object_set_new(it, "error", json_null());
    } else if (fe_sr_is(type, "mcp_list_tools")) {
        json_object_set_new(it, "tools", json_array());
        json_object_del(it, "error");
    } else if (fe_sr_is(type, "code_interpreter_call")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        json_object_set_new(it, "code", json_string(""));
        json_object_set_new(it, "outputs", json_null());
    } else if (fe_sr_is(type, "file_search_call")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        json_object_set_new(it, "queries", json_array());
        json_object_set_new(it, "results", json_null());
    } else if (fe_sr_is(type, "image_generation_call")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        json_object_set_new(it, "result", json_null());
    } else if (fe_sr_is(type, "mcp_approval_request")) {
        /* complete from the start: added and done show the same item */
    } else if (type && !strcmp(type, "message")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        json_object_set_new(it, "content", json_array());
        if (!json_object_get(it, "role"))
            json_object_set_new(it, "role", json_string("assistant"));
    } else if (type && !strcmp(type, "function_call")) {
        json_object_set_new(it, "status", json_string("in_progress"));
        json_object_set_new(it, "arguments", json_string(""));
    } else if (type && !strcmp(type, "reasoning")) {
        json_object_set_new(it, "summary", json_array());
        json_object_del(it, "content");
        json_object_del(it, "encrypted_content");
    } else if (json_object_get(it, "status")) {
        json_object_set_new(it, "status", json_string("in_progress"));
    }
    fe_responses_public_item(parsed, it); /* private fields never reach a client */
    return it;
}

/* The event a built-in tool item's step shows as: {item_id, output_index}. */
static void fe_sr_tool_event(fe_stream_ctx_t *sc, fe_sr_item_t *s, json_int_t index, const char *type, const char *step,
                             struct evbuffer *out)
{
    char name[80];
    snprintf(name, sizeof name, "response.%s.%s", type, step);
    fe_sr_emit(sc, out, name, json_pack("{s:s, s:I}", "item_id", s->id, "output_index", index));
}

static void fe_sr_add_item(fe_stream_ctx_t *sc, fe_sr_item_t *s, json_int_t index, const json_t *item,
                           struct evbuffer *out)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    const char *type = json_string_value(json_object_get(item, "type"));
    if (id && strlen(id) < sizeof s->id)
        snprintf(s->id, sizeof s->id, "%s", id);
    else
        sb_id_new(s->id, sizeof s->id, "item_", 24);
    snprintf(s->type, sizeof s->type, "%s", type ? type : "");
    s->added = true;
    json_t *started = fe_sr_item_started(sc->render.parsed, item, s->id);
    fe_responses_split_name(sc->render.parsed, started);
    fe_sr_emit(sc, out, "response.output_item.added", json_pack("{s:I, s:o}", "output_index", index, "item", started));
    if (fe_sr_is(type, "web_search_call") || fe_sr_is(type, "mcp_list_tools") || fe_sr_is(type, "mcp_call") ||
        fe_sr_is(type, "code_interpreter_call") || fe_sr_is(type, "file_search_call") ||
        fe_sr_is(type, "image_generation_call"))
        fe_sr_tool_event(sc, s, index, type, "in_progress", out);
}

/* A built-in tool item's step (canonical item_progress): the events OpenAI
 * has for it. A partial image carries its picture. */
static void fe_sr_progress(fe_stream_ctx_t *sc, fe_sr_item_t *s, const json_t *ev, struct evbuffer *out)
{
    const char *st = json_string_value(json_object_get(ev, "status"));
    json_int_t index = fe_sr_index(ev);
    if ((fe_sr_is(s->type, "web_search_call") || fe_sr_is(s->type, "file_search_call")) && fe_sr_is(st, "searching"))
        fe_sr_tool_event(sc, s, index, s->type, "searching", out);
    else if (fe_sr_is(s->type, "code_interpreter_call") && fe_sr_is(st, "interpreting")) {
        json_t *code = json_object_get(ev, "code");
        if (json_is_string(code) && !s->code_done) {
            if (!s->args_streamed && json_string_length(code) > 0)
                fe_sr_emit(sc, out, "response.code_interpreter_call_code.delta",
                           json_pack("{s:s, s:I, s:O}", "item_id", s->id, "output_index", index, "delta", code));
            fe_sr_emit(sc, out, "response.code_interpreter_call_code.done",
                       json_pack("{s:s, s:I, s:O}", "item_id", s->id, "output_index", index, "code", code));
            s->code_done = true;
        }
        fe_sr_tool_event(sc, s, index, s->type, "interpreting", out);
    } else if (fe_sr_is(s->type, "image_generation_call") && fe_sr_is(st, "generating"))
        fe_sr_tool_event(sc, s, index, s->type, "generating", out);
    else if (fe_sr_is(s->type, "image_generation_call") && fe_sr_is(st, "partial_image"))
        fe_sr_emit(sc, out, "response.image_generation_call.partial_image",
                   json_pack("{s:s, s:I, s:O, s:O}", "item_id", s->id, "output_index", index, "partial_image_b64",
                             json_object_get(ev, "partial_image_b64"), "partial_image_index",
                             json_object_get(ev, "partial_image_index")));
}

static void fe_sr_part_added(fe_stream_ctx_t *sc, fe_sr_item_t *s, json_int_t index, int c, json_t *part,
                             struct evbuffer *out)
{
    if (c < FE_SR_MAX_PARTS)
        s->parts_opened |= 1u << c;
    fe_sr_emit(
        sc, out, "response.content_part.added",
        json_pack("{s:s, s:I, s:i, s:o}", "item_id", s->id, "output_index", index, "content_index", c, "part", part));
}

static bool fe_sr_part_open(const fe_sr_item_t *s, int c)
{
    return c < FE_SR_MAX_PARTS && (s->parts_opened >> c & 1);
}

static void fe_sr_text_delta(fe_stream_ctx_t *sc, fe_sr_item_t *s, const json_t *ev, struct evbuffer *out)
{
    json_int_t index = fe_sr_index(ev);
    int c = (int)json_integer_value(json_object_get(ev, "content_index"));
    if (c < 0)
        return;
    if (!fe_sr_part_open(s, c))
        fe_sr_part_added(sc, s, index, c,
                         json_pack("{s:s, s:s, s:[]}", "type", "output_text", "text", "", "annotations"), out);
    fe_sr_emit(sc, out, "response.output_text.delta",
               json_pack("{s:s, s:I, s:i, s:O, s:[]}", "item_id", s->id, "output_index", index, "content_index", c,
                         "delta", json_object_get(ev, "delta"), "logprobs"));
}

/* response.output_text.annotation.added for annotation a of part c. */
static void fe_sr_annotation(fe_stream_ctx_t *sc, fe_sr_item_t *s, json_int_t index, int c, json_int_t a,
                             json_t *annotation, struct evbuffer *out)
{
    if (c < FE_SR_ANN_PARTS && a >= (json_int_t)s->annotations[c] && a < (json_int_t)UINT_MAX)
        s->annotations[c] = (unsigned)a + 1;
    fe_sr_emit(sc, out, "response.output_text.annotation.added",
               json_pack("{s:s, s:I, s:i, s:I, s:O}", "item_id", s->id, "output_index", index, "content_index", c,
                         "annotation_index", a, "annotation", annotation ? annotation : json_null()));
}

/* A canonical annotation_added: on a message's text part, opened first if
 * no delta opened it. */
static void fe_sr_annotation_added(fe_stream_ctx_t *sc, fe_sr_item_t *s, const json_t *ev, struct evbuffer *out)
{
    json_t *ci = json_object_get(ev, "content_index");
    json_t *ai = json_object_get(ev, "annotation_index");
    if (!fe_sr_is(s->type, "message") || !json_is_integer(ci) || !json_is_integer(ai) || json_integer_value(ci) < 0 ||
        json_integer_value(ci) >= FE_SR_MAX_PARTS || json_integer_value(ai) < 0)
        return;
    int c = (int)json_integer_value(ci);
    if (!fe_sr_part_open(s, c))
        fe_sr_part_added(sc, s, fe_sr_index(ev), c,
                         json_pack("{s:s, s:s, s:[]}", "type", "output_text", "text", "", "annotations"), out);
    fe_sr_annotation(sc, s, fe_sr_index(ev), c, json_integer_value(ai), json_object_get(ev, "annotation"), out);
}

static void fe_sr_reasoning_delta(fe_stream_ctx_t *sc, fe_sr_item_t *s, const json_t *ev, struct evbuffer *out)
{
    json_int_t index = fe_sr_index(ev);
    if (!s->reasoning_opened) {
        s->reasoning_opened = true;
        fe_sr_part_added(sc, s, index, 0, json_pack("{s:s, s:s}", "type", "reasoning_text", "text", ""), out);
    }
    fe_sr_emit(sc, out, "response.reasoning.delta",
               json_pack("{s:s, s:I, s:i, s:O}", "item_id", s->id, "output_index", index, "content_index", 0, "delta",
                         json_object_get(ev, "delta")));
}

/* A message's parts, each closed: added and one whole delta first when the
 * upstream never streamed it. */
static void fe_sr_close_message(fe_stream_ctx_t *sc, fe_sr_item_t *s, json_int_t index, const json_t *item,
                                struct evbuffer *out)
{
    size_t c;
    const json_t *part;
    json_array_foreach (json_object_get(item, "content"), c, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        bool refusal = t && !strcmp(t, "refusal");
        const char *key = refusal ? "refusal" : "text";
        json_t *text = json_object_get(part, key);
        if (!json_is_string(text))
            text = json_string("");
        else
            json_incref(text);
        if (!fe_sr_part_open(s, (int)c)) {
            json_t *empty = refusal ? json_pack("{s:s, s:s}", "type", "refusal", "refusal", "")
                                    : json_pack("{s:s, s:s, s:[]}", "type", "output_text", "text", "", "annotations");
            fe_sr_part_added(sc, s, index, (int)c, empty, out);
            if (json_string_length(text) > 0)
                fe_sr_emit(sc, out, refusal ? "response.refusal.delta" : "response.output_text.delta",
                           refusal ? json_pack("{s:s, s:I, s:i, s:O}", "item_id", s->id, "output_index", index,
                                               "content_index", (int)c, "delta", text)
                                   : json_pack("{s:s, s:I, s:i, s:O, s:[]}", "item_id", s->id, "output_index", index,
                                               "content_index", (int)c, "delta", text, "logprobs"));
        }
        /* Annotations that were not streamed, in order, before the text is done. */
        json_t *anns = json_object_get(part, "annotations");
        for (size_t a = c < FE_SR_ANN_PARTS ? s->annotations[c] : json_array_size(anns);
             !refusal && a < json_array_size(anns); a++)
            fe_sr_annotation(sc, s, index, (int)c, (json_int_t)a, json_array_get(anns, a), out);
        if (refusal)
            fe_sr_emit(sc, out, "response.refusal.done",
                       json_pack("{s:s, s:I, s:i, s:O}", "item_id", s->id, "output_index", index, "content_index",
                                 (int)c, "refusal", text));
        else
            fe_sr_emit(sc, out, "response.output_text.done",
                       json_pack("{s:s, s:I, s:i, s:O, s:[]}", "item_id", s->id, "output_index", index, "content_index",
                                 (int)c, "text", text, "logprobs"));
        fe_sr_emit(sc, out, "response.content_part.done",
                   json_pack("{s:s, s:I, s:i, s:O}", "item_id", s->id, "output_index", index, "content_index", (int)c,
                             "part", part));
        json_decref(text);
    }
}

static void fe_sr_close_reasoning(fe_stream_ctx_t *sc, fe_sr_item_t *s, json_int_t index, const json_t *item,
                                  struct evbuffer *out)
{
    /* The reasoning text as one string (its parts joined). */
    size_t c, len = 0;
    const json_t *part;
    json_t *content = json_object_get(item, "content");
    json_array_foreach (content, c, part)
        len += json_string_length(json_object_get(part, "text"));
    if (len == 0 && !s->reasoning_opened)
        return; /* nothing readable (e.g. only encrypted): no content events */
    char *text = sb_xmalloc(len + 1);
    size_t pos = 0;
    json_array_foreach (content, c, part) {
        size_t n = json_string_length(json_object_get(part, "text"));
        memcpy(text + pos, json_string_value(json_object_get(part, "text")), n);
        pos += n;
    }
    text[pos] = '\0';
    if (!s->reasoning_opened) {
        s->reasoning_opened = true;
        fe_sr_part_added(sc, s, index, 0, json_pack("{s:s, s:s}", "type", "reasoning_text", "text", ""), out);
        fe_sr_emit(sc, out, "response.reasoning.delta",
                   json_pack("{s:s, s:I, s:i, s:s}", "item_id", s->id, "output_index", index, "content_index", 0,
                             "delta", text));
    }
    fe_sr_emit(
        sc, out, "response.reasoning.done",
        json_pack("{s:s, s:I, s:i, s:s}", "item_id", s->id, "output_index", index, "content_index", 0, "text", text));
    fe_sr_emit(sc, out, "response.content_part.done",
               json_pack("{s:s, s:I, s:i, s:{s:s, s:s}}", "item_id", s->id, "output_index", index, "content_index", 0,
                         "part", "type", "reasoning_text", "text", text));
    free(text);
}

/* A tool item that did not succeed: it has an error, or says failed. */
static bool fe_sr_failed(const json_t *item)
{
    json_t *error = json_object_get(item, "error");
    json_t *status = json_object_get(item, "status");
    return (error && !json_is_null(error)) || (json_is_string(status) && !strcmp(json_string_value(status), "failed"));
}

static void fe_sr_item_done(fe_stream_ctx_t *sc, fe_sr_item_t *s, const json_t *ev, struct evbuffer *out)
{
    json_int_t index = fe_sr_index(ev);
    const json_t *item = json_object_get(ev, "item");
    if (!json_is_object(item))
        return;
    if (!s->added)
        fe_sr_add_item(sc, s, index, item, out);
    s->done = true;
    const char *type = json_string_value(json_object_get(item, "type"));
    if (type && !strcmp(type, "message")) {
        fe_sr_close_message(sc, s, index, item, out);
    } else if (fe_sr_is(type, "function_call") || fe_sr_is(type, "mcp_call")) {
        bool mcp = fe_sr_is(type, "mcp_call");
        json_t *args = json_object_get(item, "arguments");
        if (!s->args_streamed && json_string_length(args) > 0)
            fe_sr_emit(sc, out, mcp ? "response.mcp_call_arguments.delta" : "response.function_call_arguments.delta",
                       json_pack("{s:s, s:I, s:O}", "item_id", s->id, "output_index", index, "delta", args));
        fe_sr_emit(sc, out, mcp ? "response.mcp_call_arguments.done" : "response.function_call_arguments.done",
                   json_pack("{s:s, s:I, s:s}", "item_id", s->id, "output_index", index, "arguments",
                             json_is_string(args) ? json_string_value(args) : ""));
        if (mcp)
            fe_sr_tool_event(sc, s, index, type, fe_sr_failed(item) ? "failed" : "completed", out);
    } else if (type && !strcmp(type, "reasoning")) {
        fe_sr_close_reasoning(sc, s, index, item, out);
    } else if (fe_sr_is(type, "mcp_list_tools")) {
        fe_sr_tool_event(sc, s, index, type, fe_sr_failed(item) ? "failed" : "completed", out);
    } else if (fe_sr_is(type, "web_search_call") || fe_sr_is(type, "file_search_call") ||
               fe_sr_is(type, "image_generation_call")) {
        /* OpenAI has no failed event for these: a failed one completes
         * too, its item saying "failed". */
        fe_sr_tool_event(sc, s, index, type, "completed", out);
    } else if (fe_sr_is(type, "code_interpreter_call")) {
        json_t *code = json_object_get(item, "code");
        if (!s->code_done) {
            if (!s->args_streamed && json_string_length(code) > 0)
                fe_sr_emit(sc, out, "response.code_interpreter_call_code.delta",
                           json_pack("{s:s, s:I, s:O}", "item_id", s->id, "output_index", index, "delta", code));
            fe_sr_emit(sc, out, "response.code_interpreter_call_code.done",
                       json_pack("{s:s, s:I, s:s}", "item_id", s->id, "output_index", index, "code",
                                 json_is_string(code) ? json_string_value(code) : ""));
        }
        fe_sr_tool_event(sc, s, index, type, "completed", out);
    }
    /* The item exactly as the final response shows it. */
    json_t *one = json_pack("[O]", item);
    json_t *pub = fe_responses_public_items(&sc->render, one);
    json_decref(one);
    json_t *shown = json_array_get(pub, 0);
    if (shown)
        fe_sr_emit(sc, out, "response.output_item.done", json_pack("{s:I, s:O}", "output_index", index, "item", shown));
    json_decref(pub);
}

void fe_stream_responses_start_after(void *state, long long n)
{
    fe_sr_state_t *st = state;
    if (st && n >= 0)
        st->emit_from = n + 1;
}

static void fe_sr_open(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    if (sc->render.parsed->background) {
        /* A background response is queued before it runs. */
        json_t *queued = fe_responses_object(sc->result, &sc->render, "queued", NULL);
        fe_sr_emit(sc, out, "response.created", json_pack("{s:O}", "response", queued));
        fe_sr_emit(sc, out, "response.queued", json_pack("{s:o}", "response", queued));
        fe_sr_emit(sc, out, "response.in_progress",
                   json_pack("{s:o}", "response", fe_responses_object(sc->result, &sc->render, "in_progress", NULL)));
        return;
    }
    json_t *resp = fe_responses_object(sc->result, &sc->render, "in_progress", NULL);
    fe_sr_emit(sc, out, "response.created", json_pack("{s:O}", "response", resp));
    fe_sr_emit(sc, out, "response.in_progress", json_pack("{s:o}", "response", resp));
}

static void fe_sr_event(fe_stream_ctx_t *sc, const json_t *ev, struct evbuffer *out)
{
    if (sb_event_choice(ev) != 0)
        return; /* Responses has one choice */
    enum sb_event_type t = sb_event_type_of(ev);
    fe_sr_item_t *s = fe_sr_item(sc, ev);
    if (!s)
        return;
    switch (t) {
    case SB_EV_ITEM_ADDED:
        if (!s->added && json_is_object(json_object_get(ev, "item")))
            fe_sr_add_item(sc, s, fe_sr_index(ev), json_object_get(ev, "item"), out);
        break;
    case SB_EV_TEXT_DELTA:
        if (s->added && !s->done)
            fe_sr_text_delta(sc, s, ev, out);
        break;
    case SB_EV_ARGS_DELTA:
        if (s->added && !s->done) {
            s->args_streamed = true;
            fe_sr_emit(sc, out,
                       fe_sr_is(s->type, "mcp_call")                ? "response.mcp_call_arguments.delta"
                       : fe_sr_is(s->type, "code_interpreter_call") ? "response.code_interpreter_call_code.delta"
                                                                    : "response.function_call_arguments.delta",
                       json_pack("{s:s, s:I, s:O}", "item_id", s->id, "output_index", fe_sr_index(ev), "delta",
                                 json_object_get(ev, "delta")));
        }
        break;
    case SB_EV_ITEM_PROGRESS:
        /* Only the steps OpenAI has an event for. */
        if (s->added && !s->done)
            fe_sr_progress(sc, s, ev, out);
        break;
    case SB_EV_ANNOTATION_ADDED:
        if (s->added && !s->done)
            fe_sr_annotation_added(sc, s, ev, out);
        break;
    case SB_EV_REASONING_DELTA:
        if (s->added && !s->done)
            fe_sr_reasoning_delta(sc, s, ev, out);
        break;
    case SB_EV_ITEM_DONE:
        if (!s->done)
            fe_sr_item_done(sc, s, ev, out);
        break;
    default:
        break; /* usage and the like show in the final response; tool_log is the frontend's record */
    }
}

static void fe_sr_close(fe_stream_ctx_t *sc, const json_t *rendered, struct evbuffer *out)
{
    const char *status = json_string_value(json_object_get(rendered, "status"));
    fe_sr_emit(sc, out, status && !strcmp(status, "incomplete") ? "response.incomplete" : "response.completed",
               json_pack("{s:O}", "response", rendered));
}

static void fe_sr_fail(fe_stream_ctx_t *sc, const fe_error_t *e, struct evbuffer *out)
{
    json_t *body = fe_openai_error_body(e, NULL);
    fe_sr_emit(sc, out, "error", json_pack("{s:O}", "error", json_object_get(body, "error")));
    json_decref(body);
    bool cancelled = e->status == 499; /* a cancelled background response (docs/background.md) */
    json_t *resp =
        fe_responses_object(sc->result, &sc->render, cancelled ? "cancelled" : "failed", cancelled ? NULL : e);
    if (resp)
        fe_sr_emit(sc, out, "response.failed", json_pack("{s:o}", "response", resp));
}

static void fe_sr_keepalive(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    (void)sc;
    fe_sse_comment(out, "keep-alive", "\n\n");
}

const fe_stream_style_t fe_stream_responses = {
    .content_type = "text/event-stream; charset=utf-8",
    .state_size = sizeof(fe_sr_state_t),
    .state_free = fe_sr_state_free,
    .open = fe_sr_open,
    .event = fe_sr_event,
    .close = fe_sr_close,
    .fail = fe_sr_fail,
    .keepalive = fe_sr_keepalive,
};
