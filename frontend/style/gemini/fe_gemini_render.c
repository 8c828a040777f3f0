/*
 * fe_gemini_render: a result as Google's GenerateContentResponse (one
 * candidate per choice), and the pieces the stream renderer
 * (fe_stream_gemini.c) builds its chunks from, so that a streamed answer is
 * the non-streamed one cut in pieces. Reasoning -> {text, thought:true,
 * thoughtSignature} when includeThoughts, else only its signature, carried
 * on the next part; message text and refusals -> {text}; function_call ->
 * {functionCall:{name, args, id}}; code_interpreter_call ->
 * {executableCode}, {codeExecutionResult} and its images' {inlineData}
 * (fe_gemini_code.c); web_search_call items and url_citation annotations ->
 * the candidate's groundingMetadata. Also the countTokens reply.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_code.h"
#include "fe_gemini_render.h"
#include "fe_reasoning.h"
#include "sb_alloc.h"
#include "sb_utf8.h"

bool fe_gemini_include_thoughts(const fe_parsed_t *parsed)
{
    return json_is_true(json_object_get(parsed->style_state, "include_thoughts"));
}

json_t *fe_gemini_seal(const fe_render_ctx_t *ctx, json_t *items)
{
    json_t *what = json_array_size(items) == 1 ? json_incref(json_array_get(items, 0))
                                               : json_pack("{s:s, s:O}", "type", FE_GEMINI_CARRY, "items", items);
    char *token = fe_reasoning_seal(&ctx->seal, what);
    json_decref(what);
    if (!token)
        return NULL;
    json_t *s = json_string(token);
    free(token);
    return s;
}

json_t *fe_gemini_thought_text(const json_t *it)
{
    const json_t *from = json_array_size(json_object_get(it, "summary")) > 0 ? json_object_get(it, "summary")
                                                                             : json_object_get(it, "content");
    size_t total = 0, i;
    json_t *p;
    json_array_foreach (from, i, p)
        total += json_string_length(json_object_get(p, "text"));
    char *buf = sb_xmalloc(total + 1);
    size_t off = 0;
    json_array_foreach (from, i, p) {
        size_t n = json_string_length(json_object_get(p, "text"));
        if (n)
            memcpy(buf + off, json_string_value(json_object_get(p, "text")), n);
        off += n;
    }
    json_t *s = json_stringn(buf, off);
    free(buf);
    return s ? s : json_string("");
}

void fe_gemini_emit(const fe_render_ctx_t *ctx, json_t *parts, json_t *part, json_t *pending, const json_t *own)
{
    json_t *sealed = json_array();
    json_array_extend(sealed, pending);
    if (own && (json_array_size(pending) > 0 || json_object_get(own, "thought_signature")))
        json_array_append(sealed, (json_t *)own);
    json_t *sig = json_array_size(sealed) > 0 ? fe_gemini_seal(ctx, sealed) : NULL;
    if (sig)
        json_object_set_new(part, "thoughtSignature", sig);
    json_decref(sealed);
    json_array_clear(pending);
    json_array_append_new(parts, part);
}

const json_t *fe_gemini_part_text(const json_t *part)
{
    const char *pt = json_string_value(json_object_get(part, "type"));
    json_t *text = json_object_get(part, pt && !strcmp(pt, "refusal") ? "refusal" : "text");
    return json_is_string(text) ? text : NULL;
}

json_t *fe_gemini_call_part(const json_t *it)
{
    /* Upstream arguments are a JSON object; anything else (never seen in
     * practice) cannot be a Struct and becomes {}. */
    const char *text = json_string_value(json_object_get(it, "arguments"));
    json_t *args = text ? json_loads(text, 0, NULL) : NULL;
    if (!json_is_object(args)) {
        json_decref(args);
        args = json_object();
    }
    return json_pack("{s:{s:O?, s:o, s:O?}}", "functionCall", "name", json_object_get(it, "name"), "args", args, "id",
                     json_object_get(it, "call_id"));
}

void fe_gemini_code_parts(const fe_render_ctx_t *ctx, json_t *parts, const json_t *item, json_t *pending, bool exec)
{
    if (exec)
        fe_gemini_emit(ctx, parts, fe_gemini_code_exec_part(item), pending, NULL);
    json_t *one = json_pack("[o]", fe_gemini_code_sealable(item));
    json_t *sig = fe_gemini_seal(ctx, one);
    json_decref(one);
    fe_gemini_code_result_parts(parts, item, sig);
}

const char *fe_gemini_finish_reason(const fe_collect_t *res, int k)
{
    const char *status = fe_collect_choice_status(res, k);
    const char *why = fe_collect_choice_reason(res, k);
    return strcmp(status, "incomplete") != 0 ? "STOP" : !strcmp(why, "content_filter") ? "SAFETY" : "MAX_TOKENS";
}

json_t *fe_gemini_usage(const fe_collect_t *res)
{
    int64_t thoughts = res->reasoning_tokens;
    int64_t cand = res->output_tokens - thoughts > 0 ? res->output_tokens - thoughts : 0;
    json_t *usage =
        json_pack("{s:I, s:I, s:I}", "promptTokenCount", (json_int_t)res->input_tokens, "candidatesTokenCount",
                  (json_int_t)cand, "totalTokenCount", (json_int_t)(res->input_tokens + res->output_tokens));
    if (thoughts > 0)
        json_object_set_new(usage, "thoughtsTokenCount", json_integer(thoughts));
    return usage;
}

json_t *fe_gemini_response(const fe_render_ctx_t *ctx, json_t *candidates, json_t *usage)
{
    return json_pack("{s:o, s:o, s:s, s:s}", "candidates", candidates, "usageMetadata", usage, "modelVersion",
                     ctx->parsed->model_id, "responseId", ctx->parsed->response_id);
}

/* ---- groundingMetadata ----------------------------------------------------- */

/* The host of url, Google's title for a web chunk it has no title for. */
static json_t *fe_gemini_host(const char *url)
{
    const char *h = strstr(url, "://");
    h = h ? h + 3 : url;
    size_t n = strcspn(h, "/?#:");
    json_t *s = json_stringn(h, n);
    return s ? s : json_string(url);
}

/* The index of url's chunk in chunks, added (with title, or the host) when
 * it is not there yet; by_url maps URLs to indexes. */
static json_int_t fe_gemini_chunk(json_t *chunks, json_t *by_url, const char *url, const json_t *title)
{
    json_t *at = json_object_get(by_url, url);
    if (at)
        return json_integer_value(at);
    json_int_t i = (json_int_t)json_array_size(chunks);
    json_array_append_new(chunks,
                          json_pack("{s:{s:s, s:o}}", "web", "uri", url, "title",
                                    json_is_string(title) ? json_incref((json_t *)title) : fe_gemini_host(url)));
    json_object_set_new(by_url, url, json_integer(i));
    return i;
}

static bool fe_gemini_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

/* A text part's url_citation annotations as groundingSupports (one per
 * span; the chunks of the same span together). part_index: the part's
 * index in the candidate's parts. */
static void fe_gemini_supports(json_t *supports, json_t *chunks, json_t *by_url, const json_t *part, size_t part_index)
{
    const json_t *text = fe_gemini_part_text(part);
    const char *s = json_string_value(text);
    size_t n = json_string_length(text);
    size_t first = json_array_size(supports);
    size_t i;
    json_t *a;
    json_array_foreach (json_object_get(part, "annotations"), i, a) {
        const char *url = json_string_value(json_object_get(a, "url"));
        json_t *start = json_object_get(a, "start_index"), *end = json_object_get(a, "end_index");
        if (!s || !url || !fe_gemini_is(json_object_get(a, "type"), "url_citation") || !json_is_integer(start) ||
            !json_is_integer(end) || json_integer_value(start) < 0)
            continue;
        long from = sb_utf8_offset(s, n, json_integer_value(start));
        long to = sb_utf8_offset(s, n, json_integer_value(end));
        if (from < 0 || to <= from)
            continue;
        json_int_t chunk = fe_gemini_chunk(chunks, by_url, url, json_object_get(a, "title"));
        json_t *same = NULL;
        for (size_t k = first; k < json_array_size(supports) && !same; k++) {
            json_t *seg = json_object_get(json_array_get(supports, k), "segment");
            if (json_integer_value(json_object_get(seg, "startIndex")) == from &&
                json_integer_value(json_object_get(seg, "endIndex")) == to)
                same = json_array_get(supports, k);
        }
        if (same) {
            json_array_append_new(json_object_get(same, "groundingChunkIndices"), json_integer(chunk));
            continue;
        }
        /* proto3 JSON leaves zero values out, as Google's answers do. */
        json_t *seg = json_object();
        if (part_index > 0)
            json_object_set_new(seg, "partIndex", json_integer((json_int_t)part_index));
        if (from > 0)
            json_object_set_new(seg, "startIndex", json_integer(from));
        json_object_set_new(seg, "endIndex", json_integer(to));
        json_object_set_new(seg, "text", json_stringn(s + from, (size_t)(to - from)));
        json_array_append_new(supports, json_pack("{s:o, s:[I]}", "segment", seg, "groundingChunkIndices", chunk));
    }
}

/* groundingMetadata for a candidate: its web searches' queries and sources
 * and its text's citations (cited: [{"part": index in parts, "src": the
 * canonical part}]). New reference, or NULL when there is none. */
static json_t *fe_gemini_grounding(const json_t *items, const json_t *cited)
{
    json_t *queries = json_array(), *chunks = json_array(), *supports = json_array(), *by_url = json_object();
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        json_t *action = json_object_get(it, "action");
        if (!fe_gemini_is(json_object_get(it, "type"), "web_search_call") ||
            !fe_gemini_is(json_object_get(action, "type"), "search"))
            continue;
        json_t *q = json_object_get(action, "query");
        if (json_string_length(q) > 0)
            json_array_append(queries, q);
        size_t j;
        json_t *src;
        json_array_foreach (json_object_get(action, "sources"), j, src) {
            const char *url = json_string_value(json_object_get(src, "url"));
            if (url)
                fe_gemini_chunk(chunks, by_url, url, json_object_get(src, "title"));
        }
    }
    json_t *c;
    json_array_foreach (cited, i, c)
        fe_gemini_supports(supports, chunks, by_url, json_object_get(c, "src"),
                           (size_t)json_integer_value(json_object_get(c, "part")));
    json_decref(by_url);
    json_t *gm = json_object();
    if (json_array_size(chunks) > 0)
        json_object_set(gm, "groundingChunks", chunks);
    if (json_array_size(supports) > 0)
        json_object_set(gm, "groundingSupports", supports);
    if (json_array_size(queries) > 0)
        json_object_set(gm, "webSearchQueries", queries);
    json_decref(queries);
    json_decref(chunks);
    json_decref(supports);
    if (json_object_size(gm) == 0) {
        json_decref(gm);
        return NULL;
    }
    return gm;
}

static json_t *fe_gemini_candidate(const fe_collect_t *res, const fe_render_ctx_t *ctx, int k, bool include_thoughts)
{
    json_t *parts = json_array(), *pending = json_array(), *cited = json_array();
    size_t i;
    json_t *it;
    json_array_foreach (fe_collect_choice_items(res, k), i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "reasoning")) {
            if (!include_thoughts) {
                json_array_append(pending, it); /* its signature rides on the next part */
                continue;
            }
            json_t *part = json_pack("{s:o, s:b}", "text", fe_gemini_thought_text(it), "thought", 1);
            json_t *one = json_pack("[O]", it);
            json_t *sig = fe_gemini_seal(ctx, one);
            json_decref(one);
            if (sig)
                json_object_set_new(part, "thoughtSignature", sig);
            json_array_append_new(parts, part);
        } else if (!strcmp(type, "message")) {
            size_t j;
            json_t *p;
            json_array_foreach (json_object_get(it, "content"), j, p) {
                const json_t *text = fe_gemini_part_text(p);
                if (!text)
                    continue;
                if (json_array_size(json_object_get(p, "annotations")) > 0)
                    json_array_append_new(
                        cited, json_pack("{s:I, s:O}", "part", (json_int_t)json_array_size(parts), "src", p));
                fe_gemini_emit(ctx, parts, json_pack("{s:O}", "text", text), pending, NULL);
            }
        } else if (!strcmp(type, "function_call")) {
            json_t *part = fe_gemini_call_part(it);
            if (part)
                fe_gemini_emit(ctx, parts, part, pending, it);
        } else if (!strcmp(type, "code_interpreter_call")) {
            fe_gemini_code_parts(ctx, parts, it, pending, true);
        }
    }
    if (json_array_size(pending) > 0) /* reasoning with nothing after it */
        fe_gemini_emit(ctx, parts, json_pack("{s:s}", "text", ""), pending, NULL);
    json_decref(pending);
    json_t *content = json_object();
    if (json_array_size(parts) > 0)
        json_object_set(content, "parts", parts);
    json_object_set_new(content, "role", json_string("model"));
    json_decref(parts);
    /* Search runs silently in Google's answers: no part shows a web search,
     * its queries, sources and citations are the candidate's
     * groundingMetadata. */
    json_t *grounding = fe_gemini_grounding(fe_collect_choice_items(res, k), cited);
    json_decref(cited);
    return json_pack("{s:o, s:s, s:o*, s:i}", "content", content, "finishReason", fe_gemini_finish_reason(res, k),
                     "groundingMetadata", grounding, "index", k);
}

json_t *fe_gemini_render(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    bool include_thoughts = fe_gemini_include_thoughts(ctx->parsed);
    json_t *candidates = json_array();
    for (int k = 0; k < ctx->parsed->n; k++)
        json_array_append_new(candidates, fe_gemini_candidate(res, ctx, k, include_thoughts));
    return fe_gemini_response(ctx, candidates, fe_gemini_usage(res));
}

/* CountTokensResponse. The upstream's per-modality breakdown is not carried
 * by the usage event, so promptTokensDetails is left out. */
json_t *fe_gemini_render_count(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    (void)ctx;
    return json_pack("{s:I}", "totalTokens", (json_int_t)res->input_tokens);
}
