/*
 * fe_stream_messages: the Messages style's stream, as Anthropic's API sends
 * it and @anthropic-ai/sdk's MessageStream accumulates it. Every event is
 * "event: <type>" + "data: {...}" whose "type" is the same:
 *
 *   message_start        the message with no content, stop_reason null and
 *                        the usage known so far
 *   per content block, index counting from 0 over the message:
 *     content_block_start  {"type":"text","text":""}
 *                          | {"type":"tool_use","id","name","input":{}}
 *                          | {"type":"thinking","thinking":"","signature":""}
 *                          | {"type":"redacted_thinking","data"}
 *                          | {"type":"server_tool_use","id","name":"web_search","input":{}}
 *                          | {"type":"mcp_tool_use","id","name","server_name","input":{}}
 *                          | a whole web_search_tool_result or mcp_tool_result
 *     content_block_delta  text_delta | citations_delta | input_json_delta |
 *                          thinking_delta, and a thinking block's
 *                          signature_delta last
 *     content_block_stop
 *   message_delta        stop_reason, stop_sequence and the whole usage
 *   message_stop
 * A failure after message_start is one "error" event (Anthropic's error
 * body), then the end. Keep-alives are "ping" events.
 *
 * The blocks are the final message's (fe_messages_render.h), so the SDK's
 * joined message is the non-streamed one: each text or refusal part of a
 * message item is a text block, a function_call a tool_use block whose id is
 * its call_id and whose input is its arguments text, a reasoning item a
 * thinking block signed with the sealed item (or redacted_thinking; none
 * when sealing is not configured). Text never streamed (a whole item, a
 * reasoning summary) goes out as one delta at the item's end.
 *
 * Built-in tools the gateway ran (docs/tools.md): a web search is its
 * server_tool_use block (input {}, then the query as one input_json_delta)
 * as soon as its query is known, then its web_search_tool_result block in
 * one start at the item's end; an MCP call is its mcp_tool_use block, whose
 * arguments stream as a tool_use's do, then its mcp_tool_result block; a
 * code interpreter call is its server_tool_use block (name
 * "code_execution"), whose code streams as input_json_delta pieces of
 * {"code": ...} and which ends when the code is whole (item_progress
 * interpreting, else the item's end), then its code_execution_tool_result
 * block in one start at the item's end. A
 * text part's url_citation annotations are citations_delta events on its
 * block: as annotation_added brings them once their text went out, and the
 * rest at the item's end. Other items (mcp_list_tools, progress) show
 * nothing.
 *
 * Anthropic's blocks never overlap, and the SDK appends a block at each
 * start and reports deltas against the last one, so blocks start strictly in
 * item order and one at a time: only the earliest unfinished item streams.
 * Deltas of a later item (an OpenAI Chat upstream keeps every tool call open
 * until the choice ends) are held until the items before it are done.
 *
 * Usage: the worker reports it with the final events, so message_start
 * usually says input_tokens 0; message_delta carries input_tokens,
 * output_tokens and the cache counters, which the SDK takes over the
 * snapshot's (they are whole-message totals).
 */
#include <stdlib.h>
#include <string.h>

#include "fe_anthropic_error.h"
#include "fe_messages_code.h"
#include "fe_messages_render.h"
#include "fe_stream.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_log.h"

/* Item indices and message parts a stream tracks (fe_collect keeps items up
 * to the same index; parts past the limit go out whole at the item's end). */
#define FE_SM_MAX_INDEX 4096
#define FE_SM_MAX_PARTS 64
/* Annotations of one message held until their text is out (more go out at
 * the item's end only). */
#define FE_SM_MAX_NOTES 256

enum fe_sm_kind {
    FE_SM_UNKNOWN = 0, /* nothing of the item seen yet */
    FE_SM_MESSAGE,     /* text blocks, one per part */
    FE_SM_CALL,        /* a tool_use block */
    FE_SM_REASONING,   /* a thinking or redacted_thinking block */
    FE_SM_SEARCH,      /* a web_search_call: server_tool_use + web_search_tool_result */
    FE_SM_MCP,         /* an mcp_call: mcp_tool_use (arguments streamed) + mcp_tool_result */
    FE_SM_CODE,        /* a code_interpreter_call: server_tool_use (code streamed) + code_execution_tool_result */
    FE_SM_OTHER,       /* an item type that makes no block */
};

/* Text the deltas of one part (or of a call's arguments, of reasoning)
 * brought, and how much of it went out. */
typedef struct {
    char *p;
    size_t len, cap;
    size_t sent;
} fe_sm_text_t;

typedef struct {
    enum fe_sm_kind kind;
    bool done;
    json_t *item;        /* item_added's partial item, then item_done's; owned */
    fe_sm_text_t *texts; /* by content_index for a message; [0] otherwise */
    size_t n_texts;
    json_t *notes;   /* a message's annotation_added events not yet sent as citations (owned) */
    bool code_open;  /* a code call's input: its opening {"code":" went out */
    bool code_known; /* a code call's code is whole (item_progress interpreting brought it) */
} fe_sm_item_t;

typedef struct {
    fe_sm_item_t *items; /* by item_index, of choice 0 */
    size_t n_items;
    size_t front;    /* the earliest unfinished item: the only one whose blocks stream */
    int part;        /* the front item's last part with a block (a call's or reasoning's is 0); -1: none */
    size_t cited;    /* citations sent on that part's block */
    int blocks;      /* content blocks started */
    bool block_open; /* the last one has had no stop yet */
} fe_sm_state_t;

static void fe_sm_item_clear(fe_sm_item_t *it)
{
    json_decref(it->item);
    it->item = NULL;
    json_decref(it->notes);
    it->notes = NULL;
    for (size_t i = 0; i < it->n_texts; i++)
        free(it->texts[i].p);
    free(it->texts);
    it->texts = NULL;
    it->n_texts = 0;
}

static void fe_sm_state_free(void *state)
{
    fe_sm_state_t *st = state;
    for (size_t i = 0; i < st->n_items; i++)
        fe_sm_item_clear(&st->items[i]);
    free(st->items);
}

/* Writes one event: "type" first, then obj's fields (obj stolen). */
static void fe_sm_emit(struct evbuffer *out, const char *type, json_t *obj)
{
    json_t *ev = json_pack("{s:s}", "type", type);
    if (obj)
        json_object_update(ev, obj);
    json_decref(obj);
    fe_sse_json(out, type, ev, "\n\n");
    json_decref(ev);
}

static void fe_sm_block_stop(fe_sm_state_t *st, struct evbuffer *out)
{
    if (!st->block_open)
        return;
    st->block_open = false;
    fe_sm_emit(out, "content_block_stop", json_pack("{s:i}", "index", st->blocks - 1));
}

/* Ends the open block and starts the next with block (stolen). */
static void fe_sm_block_start(fe_sm_state_t *st, json_t *block, struct evbuffer *out)
{
    fe_sm_block_stop(st, out);
    fe_sm_emit(out, "content_block_start", json_pack("{s:i, s:o}", "index", st->blocks, "content_block", block));
    st->blocks++;
    st->block_open = true;
}

/* A delta {"type": delta_type, key: text[0..n)} for the open block. */
static void fe_sm_block_delta(fe_sm_state_t *st, const char *delta_type, const char *key, const char *text, size_t n,
                              struct evbuffer *out)
{
    json_t *delta = json_pack("{s:s, s:s%}", "type", delta_type, key, text, n);
    if (!st->block_open || !delta) { /* no block, or bytes that are not UTF-8 */
        json_decref(delta);
        return;
    }
    fe_sm_emit(out, "content_block_delta", json_pack("{s:i, s:o}", "index", st->blocks - 1, "delta", delta));
}

/* Sends what of t has not gone out yet. */
static void fe_sm_send(fe_sm_state_t *st, fe_sm_text_t *t, const char *delta_type, const char *key,
                       struct evbuffer *out)
{
    if (t->sent >= t->len)
        return;
    fe_sm_block_delta(st, delta_type, key, t->p + t->sent, t->len - t->sent, out);
    t->sent = t->len;
}

/* At the end of a block: what of its final text (a JSON string, or NULL for
 * "") has not gone out yet. The final text extends what the deltas brought
 * in every upstream; when it does not, what was sent cannot be taken back. */
static void fe_sm_send_final(fe_sm_state_t *st, fe_sm_text_t *t, const json_t *final, const char *delta_type,
                             const char *key, struct evbuffer *out)
{
    const char *f = json_is_string(final) ? json_string_value(final) : "";
    size_t n = json_is_string(final) ? json_string_length(final) : 0;
    if (t->sent > n || (t->sent > 0 && memcmp(f, t->p, t->sent) != 0)) {
        sb_warn("messages stream: block %d's deltas disagree with its final text; the streamed message differs",
                st->blocks - 1);
        return;
    }
    if (n > t->sent)
        fe_sm_block_delta(st, delta_type, key, f + t->sent, n - t->sent, out);
    t->sent = n;
}

static enum fe_sm_kind fe_sm_kind_of(const json_t *item)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type)
        return FE_SM_OTHER;
    if (!strcmp(type, "message"))
        return FE_SM_MESSAGE;
    if (!strcmp(type, "function_call"))
        return FE_SM_CALL;
    if (!strcmp(type, "reasoning"))
        return FE_SM_REASONING;
    if (!strcmp(type, "web_search_call"))
        return FE_SM_SEARCH;
    if (!strcmp(type, "mcp_call"))
        return FE_SM_MCP;
    if (!strcmp(type, "code_interpreter_call"))
        return FE_SM_CODE;
    return FE_SM_OTHER;
}

/* The item an event is about, created on first use; NULL for a hostile
 * index or an item already finished. */
static fe_sm_item_t *fe_sm_item(fe_sm_state_t *st, const json_t *ev)
{
    json_t *i = json_object_get(ev, "item_index");
    if (!json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) > FE_SM_MAX_INDEX)
        return NULL;
    size_t k = (size_t)json_integer_value(i);
    if (k < st->front)
        return NULL;
    if (k >= st->n_items) {
        st->items = sb_xrealloc(st->items, (k + 1) * sizeof *st->items);
        memset(st->items + st->n_items, 0, (k + 1 - st->n_items) * sizeof *st->items);
        st->n_items = k + 1;
    }
    return &st->items[k];
}

/* Adds a delta (a JSON string) to the item's text c. */
static void fe_sm_add_text(fe_sm_item_t *it, json_int_t c, const json_t *delta)
{
    if (c < 0 || c >= FE_SM_MAX_PARTS || !json_is_string(delta))
        return;
    if ((size_t)c >= it->n_texts) {
        it->texts = sb_xrealloc(it->texts, ((size_t)c + 1) * sizeof *it->texts);
        memset(it->texts + it->n_texts, 0, ((size_t)c + 1 - it->n_texts) * sizeof *it->texts);
        it->n_texts = (size_t)c + 1;
    }
    fe_sm_text_t *t = &it->texts[c];
    size_t n = json_string_length(delta);
    if (t->len + n > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n)
            cap *= 2;
        t->p = sb_xrealloc(t->p, cap);
        t->cap = cap;
    }
    memcpy(t->p + t->len, json_string_value(delta), n);
    t->len += n;
}

/* The item's text c, or an empty one. */
static fe_sm_text_t *fe_sm_text(fe_sm_item_t *it, size_t c, fe_sm_text_t *none)
{
    if (c < it->n_texts)
        return &it->texts[c];
    memset(none, 0, sizeof *none);
    return none;
}

static bool fe_sm_has_text(const fe_sm_item_t *it, size_t c)
{
    return c < it->n_texts && it->texts[c].len > 0;
}

/* Sends citation (stolen) on the open block. */
static void fe_sm_cite(fe_sm_state_t *st, json_t *citation, struct evbuffer *out)
{
    if (!st->block_open) {
        json_decref(citation);
        return;
    }
    fe_sm_emit(out, "content_block_delta",
               json_pack("{s:i, s:{s:s, s:o}}", "index", st->blocks - 1, "delta", "type", "citations_delta", "citation",
                         citation));
    st->cited++;
}

/* The annotations that came for the front message's current part, once the
 * text they span has gone out; those of other parts wait for the item's
 * end (fe_sm_finish_message sends what the final part has). */
static void fe_sm_cite_pending(fe_sm_state_t *st, fe_sm_item_t *it, struct evbuffer *out)
{
    if (st->part < 0 || (size_t)st->part >= it->n_texts)
        return;
    fe_sm_text_t *t = &it->texts[st->part];
    json_int_t have = 0; /* code points of the part's text so far */
    for (size_t i = 0; i < t->sent; i++)
        have += ((unsigned char)t->p[i] & 0xC0) != 0x80;
    for (size_t i = 0; i < json_array_size(it->notes);) {
        json_t *ev = json_array_get(it->notes, i);
        json_t *a = json_object_get(ev, "annotation");
        if (json_integer_value(json_object_get(ev, "content_index")) != st->part ||
            json_integer_value(json_object_get(a, "end_index")) > have) {
            i++;
            continue;
        }
        json_t *text = json_stringn(t->p, t->sent);
        json_t *c = text ? fe_messages_citation(a, text) : NULL;
        json_decref(text);
        if (c)
            fe_sm_cite(st, c, out);
        json_array_remove(it->notes, i);
    }
}

/* A call's first block once its id and name are known (new reference), or
 * NULL: a tool_use block, or an mcp_tool_use block. */
static json_t *fe_sm_call_block(const fe_sm_item_t *it)
{
    json_t *name = json_object_get(it->item, "name");
    if (it->kind == FE_SM_MCP)
        return json_is_string(name) && json_is_string(json_object_get(it->item, "id")) &&
                       json_is_string(json_object_get(it->item, "server_label"))
                   ? fe_messages_mcp_use(it->item, false)
                   : NULL;
    json_t *call_id = json_object_get(it->item, "call_id");
    if (!json_is_string(call_id) || !json_is_string(name))
        return NULL;
    return json_pack("{s:s, s:O, s:O, s:{}}", "type", "tool_use", "id", call_id, "name", name, "input");
}

/* A web search's server_tool_use block, whole: input {} and the query as one
 * input_json_delta. */
static void fe_sm_search_use(fe_sm_state_t *st, const json_t *item, struct evbuffer *out)
{
    json_t *use = fe_messages_search_use(item, true);
    char *input = json_dumps(json_object_get(use, "input"), JSON_COMPACT);
    json_object_set_new(use, "input", json_object());
    fe_sm_block_start(st, use, out);
    if (input)
        fe_sm_block_delta(st, "input_json_delta", "partial_json", input, strlen(input), out);
    free(input);
    fe_sm_block_stop(st, out);
    st->part = 0;
}

/* Code of a code call (n bytes) as the next piece of its input's JSON, the
 * first piece opening it: {"code":" + the code escaped ... "}. */
static void fe_sm_code_piece(fe_sm_state_t *st, fe_sm_item_t *it, const char *code, size_t n, struct evbuffer *out)
{
    size_t len = 0;
    char *esc = fe_messages_code_json(code, n, &len);
    if (!esc) {
        sb_warn("messages stream: a code call's code is not UTF-8; the streamed input differs");
        return;
    }
    char *piece = it->code_open ? esc : sb_xasprintf("{\"code\":\"%s", esc);
    fe_sm_block_delta(st, "input_json_delta", "partial_json", piece, strlen(piece), out);
    if (piece != esc)
        free(piece);
    free(esc);
    it->code_open = true;
}

/* A code call's server_tool_use block once its code is whole: the code its
 * deltas did not bring, the input closed, the block stopped (part 1: its
 * result block is next). */
static void fe_sm_code_close(fe_sm_state_t *st, fe_sm_item_t *it, struct evbuffer *out)
{
    fe_sm_text_t none;
    fe_sm_text_t *t = fe_sm_text(it, 0, &none);
    json_t *code = json_object_get(it->item, "code");
    const char *f = json_is_string(code) ? json_string_value(code) : "";
    size_t n = json_is_string(code) ? json_string_length(code) : 0;
    if (t->sent > n || (t->sent > 0 && memcmp(f, t->p, t->sent) != 0))
        sb_warn("messages stream: block %d's code deltas disagree with its code; the streamed message differs",
                st->blocks - 1);
    else if (n > t->sent || !it->code_open)
        fe_sm_code_piece(st, it, f + t->sent, n - t->sent, out);
    t->sent = t->len;
    fe_sm_block_delta(st, "input_json_delta", "partial_json", "\"}", 2, out);
    fe_sm_block_stop(st, out);
    st->part = 1;
}

/* The front item, still in progress: starts the blocks it is known to have
 * and sends the text it brought. A message's next part starts once it has
 * text (which ends the part before); a call's block once its id and name
 * are known; a thinking block with its first text (a redacted one only
 * shows at the end). */
static void fe_sm_stream(fe_stream_ctx_t *sc, fe_sm_state_t *st, fe_sm_item_t *it, struct evbuffer *out)
{
    switch (it->kind) {
    case FE_SM_MESSAGE:
        for (;;) {
            if (st->part >= 0) {
                fe_sm_send(st, &it->texts[st->part], "text_delta", "text", out);
                fe_sm_cite_pending(st, it, out);
            }
            if (!fe_sm_has_text(it, (size_t)(st->part + 1)))
                break;
            fe_sm_block_start(st, json_pack("{s:s, s:s}", "type", "text", "text", ""), out);
            st->part++;
            st->cited = 0;
        }
        break;
    case FE_SM_CALL:
    case FE_SM_MCP: {
        json_t *block = st->part < 0 ? fe_sm_call_block(it) : NULL;
        if (block) {
            fe_sm_block_start(st, block, out);
            st->part = 0;
        }
        if (st->part == 0 && it->n_texts > 0)
            fe_sm_send(st, &it->texts[0], "input_json_delta", "partial_json", out);
        break;
    }
    case FE_SM_SEARCH:
        /* The query is known once the model asked for the search: its block
         * need not wait for the results. */
        if (st->part < 0 && fe_messages_shows_search(it->item) &&
            json_is_string(json_object_get(json_object_get(it->item, "action"), "query")))
            fe_sm_search_use(st, it->item, out);
        break;
    case FE_SM_CODE:
        /* The code streams into the server_tool_use block as the model
         * writes it; the block ends when the code is whole, before it runs. */
        if (st->part < 0 && json_is_string(json_object_get(it->item, "id"))) {
            fe_sm_block_start(st, fe_messages_code_use_block(it->item, false), out);
            st->part = 0;
        }
        if (st->part == 0 && it->n_texts > 0 && it->texts[0].sent < it->texts[0].len) {
            fe_sm_code_piece(st, it, it->texts[0].p + it->texts[0].sent, it->texts[0].len - it->texts[0].sent, out);
            it->texts[0].sent = it->texts[0].len;
        }
        if (st->part == 0 && it->code_known)
            fe_sm_code_close(st, it, out);
        break;
    case FE_SM_REASONING:
        if (!sc->render.seal.key)
            break; /* no thinking blocks without a key to sign them */
        if (st->part < 0 && fe_sm_has_text(it, 0)) {
            fe_sm_block_start(st, json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", "", "signature", ""),
                              out);
            st->part = 0;
        }
        if (st->part == 0 && !fe_messages_thinking_omitted(sc->render.parsed))
            fe_sm_send(st, &it->texts[0], "thinking_delta", "thinking", out);
        break;
    default:
        break;
    }
}

/* A finished message: every part that makes a text block, each closed with
 * the text its deltas did not bring. */
static void fe_sm_finish_message(fe_sm_state_t *st, fe_sm_item_t *it, struct evbuffer *out)
{
    json_t *content = json_object_get(it->item, "content");
    size_t j;
    json_t *p;
    fe_sm_text_t none;
    json_array_foreach (content, j, p) {
        bool refusal;
        const json_t *text = fe_messages_part_text(p, &refusal);
        if ((int)j < st->part) { /* its block is over */
            fe_sm_text_t *t = fe_sm_text(it, j, &none);
            if (!text || t->sent != json_string_length(text) ||
                (t->sent > 0 && memcmp(t->p, json_string_value(text), t->sent) != 0))
                sb_warn("messages stream: part %zu of a message changed after its block ended", j);
            continue;
        }
        if ((int)j > st->part) {
            if (!text)
                continue;
            fe_sm_block_start(st, json_pack("{s:s, s:s}", "type", "text", "text", ""), out);
            st->part = (int)j;
            st->cited = 0;
        }
        fe_sm_send_final(st, fe_sm_text(it, j, &none), text, "text_delta", "text", out);
        /* The citations annotation_added did not bring, as the final
         * message's block has them. */
        json_t *cites = text ? fe_messages_citations(p, text) : json_array();
        if (st->cited > json_array_size(cites))
            sb_warn("messages stream: part %zu streamed %zu citations but has %zu", j, st->cited,
                    json_array_size(cites));
        for (size_t k = st->cited; k < json_array_size(cites); k++)
            fe_sm_cite(st, json_incref(json_array_get(cites, k)), out);
        json_decref(cites);
    }
    if (st->part >= (int)json_array_size(content))
        sb_warn("messages stream: a message streamed %d parts but has %zu", st->part + 1, json_array_size(content));
}

/* A finished call: its tool_use block, with the arguments its deltas did not
 * bring (all of them when none came, so long as they make the input). */
static void fe_sm_finish_call(fe_sm_state_t *st, fe_sm_item_t *it, struct evbuffer *out)
{
    fe_sm_text_t none;
    fe_sm_text_t *t = fe_sm_text(it, 0, &none);
    json_t *args = json_object_get(it->item, "arguments");
    if (st->part < 0) {
        json_t *block = fe_sm_call_block(it);
        if (!block && it->kind == FE_SM_MCP)
            block = fe_messages_mcp_use(it->item, false);
        else if (!block)
            block = json_pack("{s:s, s:O?, s:O?, s:{}}", "type", "tool_use", "id", json_object_get(it->item, "call_id"),
                              "name", json_object_get(it->item, "name"), "input");
        fe_sm_block_start(st, block, out);
        st->part = 0;
    }
    if (t->sent > 0) {
        fe_sm_send_final(st, t, args, "input_json_delta", "partial_json", out);
        return;
    }
    /* Arguments that are no JSON object make the input {}, which the block
     * already says: nothing to send then. */
    json_t *input = fe_messages_tool_input(it->item);
    if (input)
        fe_sm_send_final(st, t, args, "input_json_delta", "partial_json", out);
    if (input && json_string_length(args) == 0) /* as Anthropic does for a call without input */
        fe_sm_block_delta(st, "input_json_delta", "partial_json", "", 0, out);
    json_decref(input);
}

/* A finished reasoning item: its thinking block (the text its deltas did not
 * bring, then the signature) or its redacted_thinking block. */
static void fe_sm_finish_reasoning(fe_stream_ctx_t *sc, fe_sm_state_t *st, fe_sm_item_t *it, struct evbuffer *out)
{
    json_t *block = fe_messages_thinking_block(&sc->render, it->item);
    const char *type = json_string_value(json_object_get(block, "type"));
    if (!type) {
        if (st->part >= 0)
            sb_warn("messages stream: a thinking block could not be signed; the final message has none");
    } else if (!strcmp(type, "redacted_thinking")) {
        if (st->part >= 0)
            sb_warn("messages stream: a thinking block turned out redacted");
        else
            fe_sm_block_start(st, json_incref(block), out);
    } else {
        if (st->part < 0)
            fe_sm_block_start(st, json_pack("{s:s, s:s, s:s}", "type", "thinking", "thinking", "", "signature", ""),
                              out);
        fe_sm_text_t none;
        fe_sm_send_final(st, fe_sm_text(it, 0, &none), json_object_get(block, "thinking"), "thinking_delta", "thinking",
                         out);
        json_t *sig = json_object_get(block, "signature");
        fe_sm_block_delta(st, "signature_delta", "signature", json_string_value(sig), json_string_length(sig), out);
    }
    json_decref(block);
}

/* Moves the stream on: the front item streams what it can; once done, its
 * blocks are finished and the next item becomes the front. With final (the
 * job completed) an item that never finished is passed over, as the final
 * message leaves it out. */
static void fe_sm_pump(fe_stream_ctx_t *sc, fe_sm_state_t *st, struct evbuffer *out, bool final)
{
    while (st->front < st->n_items) {
        fe_sm_item_t *it = &st->items[st->front];
        if (!it->done && !final) {
            fe_sm_stream(sc, st, it, out);
            return;
        }
        if (it->done) {
            if (it->kind == FE_SM_MESSAGE)
                fe_sm_finish_message(st, it, out);
            else if (it->kind == FE_SM_CALL)
                fe_sm_finish_call(st, it, out);
            else if (it->kind == FE_SM_REASONING)
                fe_sm_finish_reasoning(sc, st, it, out);
            else if (it->kind == FE_SM_MCP) {
                fe_sm_finish_call(st, it, out);
                fe_sm_block_start(st, fe_messages_mcp_result(it->item), out);
            } else if (it->kind == FE_SM_CODE) {
                if (st->part < 0) {
                    fe_sm_block_start(st, fe_messages_code_use_block(it->item, false), out);
                    st->part = 0;
                }
                if (st->part == 0)
                    fe_sm_code_close(st, it, out);
                fe_sm_block_start(st, fe_messages_code_result_block(it->item), out);
            } else if (it->kind == FE_SM_SEARCH && fe_messages_shows_search(it->item)) {
                if (st->part < 0)
                    fe_sm_search_use(st, it->item, out);
                fe_sm_block_start(st, fe_messages_search_result(&sc->render, it->item), out);
            }
        } else if (st->part >= 0) {
            sb_warn("messages stream: an item that never completed had a block");
        }
        fe_sm_block_stop(st, out);
        fe_sm_item_clear(it);
        st->front++;
        st->part = -1;
        st->cited = 0;
    }
}

static void fe_sm_open(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    fe_sm_state_t *st = sc->state;
    st->part = -1;
    fe_sm_emit(out, "message_start",
               json_pack("{s:o}", "message", fe_messages_message(sc->result, &sc->render, json_array(), NULL)));
}

static void fe_sm_event(fe_stream_ctx_t *sc, const json_t *ev, struct evbuffer *out)
{
    if (sb_event_choice(ev) != 0)
        return; /* Messages has one choice */
    fe_sm_state_t *st = sc->state;
    enum sb_event_type t = sb_event_type_of(ev);
    if (t != SB_EV_ITEM_ADDED && t != SB_EV_TEXT_DELTA && t != SB_EV_ARGS_DELTA && t != SB_EV_REASONING_DELTA &&
        t != SB_EV_ITEM_DONE && t != SB_EV_ANNOTATION_ADDED && t != SB_EV_ITEM_PROGRESS)
        return; /* usage and the outcome show in message_delta; tool logs show nothing */
    fe_sm_item_t *it = fe_sm_item(st, ev);
    if (!it || it->done)
        return;
    json_t *item = json_object_get(ev, "item");
    json_t *delta = json_object_get(ev, "delta");
    switch (t) {
    case SB_EV_ITEM_ADDED:
        if (json_is_object(item) && !it->item) {
            it->item = json_incref(item);
            it->kind = fe_sm_kind_of(item);
        }
        break;
    case SB_EV_TEXT_DELTA:
        if (it->kind == FE_SM_UNKNOWN)
            it->kind = FE_SM_MESSAGE;
        if (it->kind == FE_SM_MESSAGE)
            fe_sm_add_text(it, json_integer_value(json_object_get(ev, "content_index")), delta);
        break;
    case SB_EV_ARGS_DELTA:
        if (it->kind == FE_SM_UNKNOWN)
            it->kind = FE_SM_CALL;
        if (it->kind == FE_SM_CALL || it->kind == FE_SM_MCP || it->kind == FE_SM_CODE)
            fe_sm_add_text(it, 0, delta);
        break;
    case SB_EV_ITEM_PROGRESS:
        /* Only a code call's interpreting step shows: it brings the whole
         * code, which ends the server_tool_use block before the code runs. */
        if (it->kind != FE_SM_CODE || !json_is_string(json_object_get(ev, "code")) || !it->item)
            return;
        json_object_set(it->item, "code", json_object_get(ev, "code"));
        it->code_known = true;
        break;
    case SB_EV_ANNOTATION_ADDED:
        if (it->kind == FE_SM_UNKNOWN)
            it->kind = FE_SM_MESSAGE;
        if (it->kind == FE_SM_MESSAGE && json_is_object(json_object_get(ev, "annotation")) &&
            json_array_size(it->notes) < FE_SM_MAX_NOTES) {
            if (!it->notes)
                it->notes = json_array();
            json_array_append(it->notes, (json_t *)ev);
        }
        break;
    case SB_EV_REASONING_DELTA:
        if (it->kind == FE_SM_UNKNOWN)
            it->kind = FE_SM_REASONING;
        if (it->kind == FE_SM_REASONING)
            fe_sm_add_text(it, 0, delta);
        break;
    default: /* item_done */
        if (!json_is_object(item))
            return; /* fe_collect ignores it too */
        json_decref(it->item);
        it->item = json_incref(item);
        it->kind = fe_sm_kind_of(item);
        it->done = true;
        break;
    }
    fe_sm_pump(sc, st, out, false);
}

static void fe_sm_close(fe_stream_ctx_t *sc, const json_t *rendered, struct evbuffer *out)
{
    fe_sm_state_t *st = sc->state;
    fe_sm_pump(sc, st, out, true);
    fe_sm_block_stop(st, out);
    size_t blocks = json_array_size(json_object_get(rendered, "content"));
    if ((size_t)st->blocks != blocks)
        sb_warn("messages stream %s: %d content blocks streamed, the message has %zu", sc->render.parsed->response_id,
                st->blocks, blocks);
    json_t *delta = json_pack("{s:O?, s:O?}", "stop_reason", json_object_get(rendered, "stop_reason"), "stop_sequence",
                              json_object_get(rendered, "stop_sequence"));
    if (json_object_get(rendered, "container")) /* the container the code ran in, as the message has it */
        json_object_set(delta, "container", json_object_get(rendered, "container"));
    fe_sm_emit(out, "message_delta",
               json_pack("{s:o, s:O?}", "delta", delta, "usage", json_object_get(rendered, "usage")));
    fe_sm_emit(out, "message_stop", NULL);
}

static void fe_sm_fail(fe_stream_ctx_t *sc, const fe_error_t *e, struct evbuffer *out)
{
    json_t *body = fe_anthropic_error_body(e, sc->render.request_id);
    fe_sse_json(out, "error", body, "\n\n");
    json_decref(body);
}

/* Anthropic's ping, byte for byte. */
static void fe_sm_keepalive(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    (void)sc;
    static const char ping[] = "event: ping\ndata: {\"type\": \"ping\"}\n\n";
    evbuffer_add(out, ping, sizeof ping - 1);
}

const fe_stream_style_t fe_stream_messages = {
    .content_type = "text/event-stream; charset=utf-8",
    .state_size = sizeof(fe_sm_state_t),
    .open = fe_sm_open,
    .event = fe_sm_event,
    .close = fe_sm_close,
    .fail = fe_sm_fail,
    .keepalive = fe_sm_keepalive,
    .state_free = fe_sm_state_free,
};
