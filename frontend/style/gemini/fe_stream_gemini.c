/*
 * fe_stream_gemini: the Generate Content stream (:streamGenerateContent), as
 * Google sends it. Every chunk is a whole GenerateContentResponse
 * ({"candidates", "usageMetadata", "modelVersion", "responseId"}) holding
 * what is new since the chunk before:
 *
 *   ?alt=sse    "data: {chunk}\r\n\r\n" per chunk            text/event-stream
 *   otherwise   one JSON array: "[" chunk ",\r\n" chunk "]"   application/json
 *
 * A chunk's candidates are those it updates, each with its "index"
 * (candidateCount > 1 interleaves them), and their new parts:
 *   {"text": delta}                  one chunk per text delta
 *   {"text": delta, "thought": true} one per reasoning delta (includeThoughts);
 *                                    when the reasoning is done, a last
 *                                    thought part with its thoughtSignature
 *   {"functionCall": {...}}          a whole call when its item is done
 *                                    (Gemini never splits a call's args)
 *   {"executableCode": {...}}        a code interpreter call's code, whole,
 *                                    at its interpreting step (else at its end)
 *   {"codeExecutionResult": {...}}   its result, then its images as
 *                                    {"inlineData"} parts, when it is done
 * Text an upstream delivered whole (no deltas; refusals) goes out when its
 * item is done, so the parts joined are the non-streamed response's. The
 * signature of reasoning not shown rides on the candidate's next part, as in
 * the non-streamed response (fe_gemini_render.c). The last chunk has every
 * candidate with its finishReason and an empty text part (carrying the
 * signature of reasoning that had nothing after it), its groundingMetadata
 * (web searches and citations, as Google sends it on the last chunk; its
 * segments' partIndex counts the non-streamed response's parts), and the
 * final usageMetadata, all taken from the non-streamed response; earlier chunks
 * carry the usage known so far (zero until the upstream reports it).
 *
 * A failure after the stream started is Google's error object: "data:
 * {"error":{...}}" (what @google/genai raises as an ApiError), or the array's
 * last element. Keep-alives are an SSE comment, or whitespace between the
 * array's elements.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_code.h"
#include "fe_gemini_render.h"
#include "fe_google_error.h"
#include "fe_stream.h"
#include "sb_alloc.h"
#include "sb_event.h"

/* Items per candidate and content parts per message whose deltas a stream
 * tracks; deltas of others are not sent, their text goes out whole when
 * their item is done. */
#define FE_SG_MAX_ITEMS 64
#define FE_SG_MAX_PARTS 4

/* The text of one part that went out as deltas: its length and FNV-1a hash,
 * to find at item_done what of the final text is still to send. */
typedef struct {
    size_t len;
    uint64_t hash;
} fe_sg_sent_t;

#define FE_SG_FNV_BASIS 14695981039346656037ULL
#define FE_SG_FNV_PRIME 1099511628211ULL

typedef struct {
    bool done;
    fe_sg_sent_t text[FE_SG_MAX_PARTS]; /* a message's content parts */
    fe_sg_sent_t thought;               /* a reasoning item's thought text */
    bool code_sent;                     /* a code call's executableCode part went out */
} fe_sg_item_t;

typedef struct {
    json_t *pending; /* reasoning items whose signature rides on the next part (owned) */
    fe_sg_item_t items[FE_SG_MAX_ITEMS];
} fe_sg_cand_t;

typedef struct {
    bool sse;                                      /* alt=sse; else one JSON array */
    bool wrote;                                    /* the array has an element: the next needs a comma */
    fe_sg_cand_t *cands[FE_GEMINI_MAX_CANDIDATES]; /* created at their first event (owned) */
} fe_sg_state_t;

static uint64_t fe_sg_hash(uint64_t h, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= FE_SG_FNV_PRIME;
    }
    return h;
}

static void fe_sg_sent_add(fe_sg_sent_t *sent, const json_t *delta)
{
    sent->hash =
        fe_sg_hash(sent->len ? sent->hash : FE_SG_FNV_BASIS, json_string_value(delta), json_string_length(delta));
    sent->len += json_string_length(delta);
}

/* What of text is still to send after the deltas that went out (sent NULL:
 * none did): its tail, or an empty string when what went out is not its
 * beginning (a chunk cannot be taken back). New string. */
static json_t *fe_sg_rest(const fe_sg_sent_t *sent, const json_t *text)
{
    const char *s = json_string_value(text);
    size_t n = json_string_length(text);
    if (!sent || sent->len == 0)
        return json_stringn(s ? s : "", s ? n : 0);
    if (n < sent->len || fe_sg_hash(FE_SG_FNV_BASIS, s, sent->len) != sent->hash)
        return json_string("");
    json_t *rest = json_stringn(s + sent->len, n - sent->len);
    return rest ? rest : json_string(""); /* not cut at a character: not what went out */
}

/* Candidate k's state, NULL for a choice the request did not ask for. */
static fe_sg_cand_t *fe_sg_cand(fe_stream_ctx_t *sc, int k)
{
    fe_sg_state_t *st = sc->state;
    if (k < 0 || k >= sc->render.parsed->n || k >= FE_GEMINI_MAX_CANDIDATES)
        return NULL;
    if (!st->cands[k]) {
        st->cands[k] = sb_xcalloc(1, sizeof *st->cands[k]);
        st->cands[k]->pending = json_array();
    }
    return st->cands[k];
}

/* The event's item, NULL when it is not tracked. */
static fe_sg_item_t *fe_sg_item(fe_sg_cand_t *c, const json_t *ev)
{
    json_t *i = json_object_get(ev, "item_index");
    if (!json_is_integer(i) || json_integer_value(i) < 0 || json_integer_value(i) >= FE_SG_MAX_ITEMS)
        return NULL;
    return &c->items[json_integer_value(i)];
}

/* Writes one element of the stream (stolen): an SSE event, or the array's
 * next element. */
static void fe_sg_write(fe_stream_ctx_t *sc, struct evbuffer *out, json_t *element)
{
    fe_sg_state_t *st = sc->state;
    if (st->sse) {
        fe_sse_json(out, NULL, element, "\r\n\r\n");
    } else {
        char *text = json_dumps(element, JSON_COMPACT);
        if (!text)
            abort(); /* out of memory: chunks are plain JSON objects */
        if (st->wrote)
            evbuffer_add(out, ",\r\n", 3);
        evbuffer_add(out, text, strlen(text));
        free(text);
    }
    st->wrote = true;
    json_decref(element);
}

/* One chunk with candidate k's new parts (stolen; nothing when empty). */
static void fe_sg_send(fe_stream_ctx_t *sc, struct evbuffer *out, int k, json_t *parts)
{
    if (json_array_size(parts) == 0) {
        json_decref(parts);
        return;
    }
    json_t *candidate = json_pack("{s:{s:o, s:s}, s:i}", "content", "parts", parts, "role", "model", "index", k);
    fe_sg_write(sc, out, fe_gemini_response(&sc->render, json_pack("[o]", candidate), fe_gemini_usage(sc->result)));
}

/* A reasoning item is done: without includeThoughts it waits for the next
 * part to carry its signature; with it, the rest of its thought text and its
 * signature, as the non-streamed thought part has them. */
static void fe_sg_reasoning_done(fe_stream_ctx_t *sc, fe_sg_cand_t *c, const fe_sg_item_t *it, int k,
                                 const json_t *item, struct evbuffer *out)
{
    if (!fe_gemini_include_thoughts(sc->render.parsed)) {
        json_array_append(c->pending, (json_t *)item);
        return;
    }
    json_t *text = fe_gemini_thought_text(item);
    json_t *rest = fe_sg_rest(it ? &it->thought : NULL, text);
    json_decref(text);
    json_t *one = json_pack("[O]", item);
    json_t *sig = fe_gemini_seal(&sc->render, one);
    json_decref(one);
    if (json_string_length(rest) == 0 && !sig) {
        json_decref(rest);
        return;
    }
    json_t *part = json_pack("{s:o, s:b}", "text", rest, "thought", 1);
    if (sig)
        json_object_set_new(part, "thoughtSignature", sig);
    fe_sg_send(sc, out, k, json_pack("[o]", part));
}

static void fe_sg_item_done(fe_stream_ctx_t *sc, fe_sg_cand_t *c, const fe_sg_item_t *it, int k, const json_t *item,
                            struct evbuffer *out)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!type)
        return;
    if (!strcmp(type, "reasoning")) {
        fe_sg_reasoning_done(sc, c, it, k, item, out);
        return;
    }
    json_t *parts = json_array();
    if (!strcmp(type, "message")) {
        size_t j;
        const json_t *p;
        json_array_foreach (json_object_get(item, "content"), j, p) {
            const json_t *text = fe_gemini_part_text(p);
            if (!text)
                continue;
            json_t *rest = fe_sg_rest(it && j < FE_SG_MAX_PARTS ? &it->text[j] : NULL, text);
            /* An empty part still carries waiting signatures, as in the
             * non-streamed response. */
            if (json_string_length(rest) > 0 || json_array_size(c->pending) > 0)
                fe_gemini_emit(&sc->render, parts, json_pack("{s:o}", "text", rest), c->pending, NULL);
            else
                json_decref(rest);
        }
    } else if (!strcmp(type, "function_call")) {
        json_t *part = fe_gemini_call_part(item);
        if (part)
            fe_gemini_emit(&sc->render, parts, part, c->pending, item);
    } else if (!strcmp(type, "code_interpreter_call")) {
        fe_gemini_code_parts(&sc->render, parts, item, c->pending, !(it && it->code_sent));
    }
    fe_sg_send(sc, out, k, parts);
}

static void fe_sg_event(fe_stream_ctx_t *sc, const json_t *ev, struct evbuffer *out)
{
    enum sb_event_type t = sb_event_type_of(ev);
    if (t != SB_EV_TEXT_DELTA && t != SB_EV_REASONING_DELTA && t != SB_EV_ITEM_DONE && t != SB_EV_ITEM_PROGRESS)
        return; /* the rest shows in the last chunk (finishReason, usage) */
    int k = sb_event_choice(ev);
    fe_sg_cand_t *c = fe_sg_cand(sc, k);
    if (!c)
        return;
    fe_sg_item_t *it = fe_sg_item(c, ev);
    const json_t *delta = json_object_get(ev, "delta");
    switch (t) {
    case SB_EV_TEXT_DELTA: {
        json_t *ci = json_object_get(ev, "content_index");
        json_int_t j = json_is_integer(ci) ? json_integer_value(ci) : 0;
        if (!it || it->done || j < 0 || j >= FE_SG_MAX_PARTS || json_string_length(delta) == 0)
            break; /* an untracked part goes out whole at item_done */
        fe_sg_sent_add(&it->text[j], delta);
        json_t *parts = json_array();
        fe_gemini_emit(&sc->render, parts, json_pack("{s:O}", "text", delta), c->pending, NULL);
        fe_sg_send(sc, out, k, parts);
        break;
    }
    case SB_EV_REASONING_DELTA:
        if (!fe_gemini_include_thoughts(sc->render.parsed) || !it || it->done || json_string_length(delta) == 0)
            break;
        fe_sg_sent_add(&it->thought, delta);
        fe_sg_send(sc, out, k, json_pack("[{s:O, s:b}]", "text", delta, "thought", 1));
        break;
    case SB_EV_ITEM_PROGRESS: {
        /* A code call's interpreting step brings its whole code: the
         * executableCode part goes out before the code runs. */
        json_t *code = json_object_get(ev, "code");
        const char *status = json_string_value(json_object_get(ev, "status"));
        if (!it || it->done || it->code_sent || !json_is_string(code) || !status || strcmp(status, "interpreting") != 0)
            break;
        json_t *stub = json_pack("{s:s, s:O}", "type", "code_interpreter_call", "code", code);
        json_t *parts = json_array();
        fe_gemini_emit(&sc->render, parts, fe_gemini_code_exec_part(stub), c->pending, NULL);
        json_decref(stub);
        fe_sg_send(sc, out, k, parts);
        it->code_sent = true;
        break;
    }
    case SB_EV_ITEM_DONE:
        if (it && it->done)
            break; /* told twice */
        if (it)
            it->done = true;
        if (json_is_object(json_object_get(ev, "item")))
            fe_sg_item_done(sc, c, it, k, json_object_get(ev, "item"), out);
        break;
    default:
        break;
    }
}

static void fe_sg_open_sse(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    (void)out;
    fe_sg_state_t *st = sc->state;
    st->sse = true;
}

static void fe_sg_open_array(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    (void)sc;
    evbuffer_add(out, "[", 1);
}

/* The last chunk: every candidate's finishReason and the usage, as the
 * non-streamed response (rendered) has them. */
static void fe_sg_close(fe_stream_ctx_t *sc, const json_t *rendered, struct evbuffer *out)
{
    fe_sg_state_t *st = sc->state;
    json_t *shown = json_object_get(rendered, "candidates");
    json_t *candidates = json_array();
    for (int k = 0; k < sc->render.parsed->n && k < FE_GEMINI_MAX_CANDIDATES; k++) {
        fe_sg_cand_t *c = fe_sg_cand(sc, k);
        json_t *parts = json_array();
        fe_gemini_emit(&sc->render, parts, json_pack("{s:s}", "text", ""), c->pending, NULL);
        const json_t *cand = json_array_get(shown, (size_t)k);
        const char *finish = json_string_value(json_object_get(cand, "finishReason"));
        json_array_append_new(candidates,
                              json_pack("{s:{s:o, s:s}, s:s, s:O*, s:i}", "content", "parts", parts, "role", "model",
                                        "finishReason", finish ? finish : fe_gemini_finish_reason(sc->result, k),
                                        "groundingMetadata", json_object_get(cand, "groundingMetadata"), "index", k));
    }
    json_t *usage = json_object_get(rendered, "usageMetadata");
    fe_sg_write(sc, out,
                fe_gemini_response(&sc->render, candidates,
                                   json_is_object(usage) ? json_incref(usage) : fe_gemini_usage(sc->result)));
    if (!st->sse)
        evbuffer_add(out, "]", 1);
}

static void fe_sg_fail(fe_stream_ctx_t *sc, const fe_error_t *e, struct evbuffer *out)
{
    fe_sg_state_t *st = sc->state;
    fe_sg_write(sc, out, fe_google_error_body(e, NULL));
    if (!st->sse)
        evbuffer_add(out, "]", 1);
}

static void fe_sg_keepalive(fe_stream_ctx_t *sc, struct evbuffer *out)
{
    fe_sg_state_t *st = sc->state;
    if (st->sse)
        fe_sse_comment(out, "keep-alive", "\r\n\r\n");
    else
        evbuffer_add(out, "\r\n", 2); /* whitespace between elements: the array stays valid JSON */
}

static void fe_sg_state_free(void *state)
{
    fe_sg_state_t *st = state;
    for (size_t k = 0; k < FE_GEMINI_MAX_CANDIDATES; k++) {
        if (!st->cands[k])
            continue;
        json_decref(st->cands[k]->pending);
        free(st->cands[k]);
    }
}

const fe_stream_style_t fe_stream_gemini = {
    .content_type = "text/event-stream",
    .state_size = sizeof(fe_sg_state_t),
    .open = fe_sg_open_sse,
    .event = fe_sg_event,
    .close = fe_sg_close,
    .fail = fe_sg_fail,
    .keepalive = fe_sg_keepalive,
    .state_free = fe_sg_state_free,
};

const fe_stream_style_t fe_stream_gemini_array = {
    .content_type = "application/json; charset=UTF-8",
    .state_size = sizeof(fe_sg_state_t),
    .open = fe_sg_open_array,
    .event = fe_sg_event,
    .close = fe_sg_close,
    .fail = fe_sg_fail,
    .keepalive = fe_sg_keepalive,
    .state_free = fe_sg_state_free,
};
