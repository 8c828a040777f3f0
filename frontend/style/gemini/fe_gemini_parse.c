/*
 * fe_gemini_parse: the Generate Content style (Google Gemini's wire format),
 * its entry: POST /v1beta/models/{model}:generateContent and
 * :streamGenerateContent (rendered by fe_stream_gemini.c: server-sent events
 * with ?alt=sse, else one streamed JSON array). x-goog-api-key or ?key=
 * auth, Google's error body ({"error":{"code","message","status"}}). The
 * style's files: this one (the request's top level, the style's vtable),
 * fe_gemini_contents.c (contents, systemInstruction), fe_gemini_config.c
 * (tools, toolConfig, generationConfig), fe_gemini_render.c (the response),
 * fe_gemini_json.c (proto3 JSON fields, Schema); GET /v1beta/models and
 * GET /v1beta/models/{model} are fe_gemini_models.c.
 *
 * Request -> canonical request:
 *   contents[] (role "user" | "model"; absent = user)
 *     text                       -> input_text / output_text
 *     inlineData image/...       -> input_image (data URL)
 *     inlineData application/pdf, text/... -> input_file "file.pdf" / "file.txt"
 *     inlineData audio/wav|mp3|mpeg       -> input_audio {data, format}
 *     fileData image/... http(s) -> input_image URL (Files API URIs: 400)
 *     functionCall (model)       -> function_call (call_id: id, else generated)
 *     functionResponse (user)    -> function_call_output (call_id: id, else the
 *                                   most recent unanswered call of that name)
 *     thoughtSignature           -> the canonical items the gateway sealed into
 *                                   it (reasoning, or a function_call with its
 *                                   upstream's private thought_signature)
 *   systemInstruction -> instructions; generationConfig -> sampling, stop, n,
 *   text.format, reasoning.effort; tools.functionDeclarations -> non-strict
 *   function tools; tools.googleSearch (googleSearchRetrieval) -> the
 *   web_search tool the gateway runs; toolConfig.functionCallingConfig ->
 *   tool_choice.
 * Field names are accepted in proto3 JSON's two spellings (lowerCamelCase and
 * snake_case); an unknown field is a 400 in Google's words, as the real API
 * answers, so a request that works here also works against Google.
 *
 * Result -> GenerateContentResponse: one candidate per choice; reasoning ->
 * {text, thought:true, thoughtSignature} when includeThoughts, else only its
 * signature, carried on the next part; message text and refusals -> {text}
 * (a refusal is the model's answer, not a safety block: finishReason stays
 * STOP); function_call -> {functionCall:{name, args, id}}; web searches and
 * url_citation annotations -> groundingMetadata. Nothing is stored:
 * the Generate Content API keeps no state between requests.
 *
 * POST /v1beta/models/{model}:countTokens takes {contents} or
 * {generateContentRequest}, parsed as above, and answers {"totalTokens": N}
 * as the model's upstream counts it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_json.h"
#include "fe_gemini_parse.h"
#include "fe_gemini_render.h"
#include "fe_google_error.h"
#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

/* "x-goog-api-key: KEY", or the query parameter key=KEY. The query value
 * lives in a per-thread buffer: the caller hashes it at once. */
static const char *fe_gemini_key(sb_http_req_t *http, size_t *len)
{
    const char *k = sb_http_req_header(http, "x-goog-api-key");
    if (k && *k) {
        *len = strlen(k);
        return k;
    }
    static _Thread_local char buf[256];
    if (sb_http_query_get(sb_http_req_query(http), "key", buf, sizeof buf) < 0 || !buf[0])
        return NULL;
    *len = strlen(buf);
    return buf;
}

/* ---- parse ---------------------------------------------------------------- */

static const char *const fe_gemini_request_fields[] = {
    "model",         "contents", "tools", "toolConfig", "safetySettings", "systemInstruction", "generationConfig",
    "cachedContent", "labels",   NULL};

/* Other styles' bodies: Google's unknown-field error, with the reason. */
static int fe_gemini_foreign(const json_t *body, fe_error_t *err)
{
    static const struct {
        const char *field, *why;
    } foreign[] = {
        {"messages", "'messages' belongs to Chat Completions and Messages; Generate Content takes 'contents'."},
        {"input", "'input' belongs to the Responses API; Generate Content takes 'contents'."},
        {"instructions", "'instructions' belongs to the Responses API; use 'systemInstruction'."},
        {"system", "'system' belongs to the Messages API; use 'systemInstruction'."},
        {"max_tokens", "'max_tokens' belongs to other APIs; use 'generationConfig.maxOutputTokens'."},
        {"prompt", "'prompt' belongs to other APIs; Generate Content takes 'contents'."},
    };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        if (json_object_get(body, foreign[i].field))
            return fe_gemini_fail(err, "Invalid JSON payload received. Unknown name \"%s\": Cannot find field. (%s)",
                                  foreign[i].field, foreign[i].why);
    return 0;
}

/* A GenerateContentRequest -> out->canonical (and out->n, style_state). */
static int fe_gemini_parse_request(const fe_style_in_t *in, fe_parsed_t *out, const json_t *body, fe_error_t *err)
{
    if (!json_is_object(body))
        return fe_gemini_fail(err, "Invalid JSON payload received. Expected an object.");
    if (fe_gemini_foreign(body, err) < 0 || fe_gemini_known(body, fe_gemini_request_fields, "", err) < 0)
        return -1;
    json_object_set_new(out->style_state, "include_thoughts", json_false());
    json_t *canonical = json_object();
    out->canonical = canonical;
    json_t *items = json_array();
    json_object_set_new(canonical, "input", items);
    fe_gemini_ctx_t c = {.seal = &in->seal, .out = out, .err = err, .items = items, .calls = json_array()};
    int rc = -1;
    const char *cached = NULL;
    json_t *safety = fe_gemini_array(body, "safetySettings", "", err);
    if (err->status || fe_gemini_string(body, "cachedContent", "", &cached, err) < 0)
        goto done;
    /* safetySettings go to a Gemini upstream as given (canonical
     * safety_settings); other upstream kinds have no thresholds to set and
     * apply their own policies. labels (billing tags), store and serviceTier
     * are accepted and change nothing in the answer. See
     * docs/compatibility.md. */
    if (json_array_size(safety) > 0)
        json_object_set(canonical, "safety_settings", safety);
    if (cached && *cached) {
        /* The cached contents are part of the prompt and this gateway keeps
         * no caches: ignoring the name would answer without them. */
        fe_gemini_unsupported(err, "cached_content: context caching is not available on this gateway; send the "
                                   "full contents.");
        goto done;
    }
    if (fe_gemini_contents(&c, body) < 0 || fe_gemini_system(&c, body, canonical) < 0 ||
        fe_gemini_tools(&c, body, canonical) < 0 || fe_gemini_tool_config(&c, body, canonical) < 0 ||
        fe_gemini_generation(&c, body, canonical) < 0)
        goto done;
    rc = 0;
done:
    json_decref(c.calls);
    return rc;
}

/* CountTokensRequest: {"contents": [...]} or {"generateContentRequest":
 * {...}} (its "model" is accepted; the path's model is the one counted). */
static int fe_gemini_parse_count(const fe_style_in_t *in, fe_parsed_t *out, const json_t *body, fe_error_t *err)
{
    static const char *const fields[] = {"contents", "generateContentRequest", NULL};
    if (!json_is_object(body))
        return fe_gemini_fail(err, "Invalid JSON payload received. Expected an object.");
    if (fe_gemini_foreign(body, err) < 0 || fe_gemini_known(body, fields, "", err) < 0)
        return -1;
    const json_t *gcr = fe_gemini_get(body, "generateContentRequest");
    if (!gcr)
        return fe_gemini_parse_request(in, out, body, err);
    if (fe_gemini_get(body, "contents"))
        return fe_gemini_fail(err, "* CountTokensRequest: contents and generate_content_request cannot both be "
                                   "set.");
    if (!json_is_object(gcr))
        return fe_gemini_bad_value(err, "generate_content_request", "TYPE_MESSAGE", gcr);
    return fe_gemini_parse_request(in, out, gcr, err);
}

/* The body of :generateContent, :streamGenerateContent, or (in->count_tokens)
 * of :countTokens. */
static int fe_gemini_parse(const fe_style_in_t *in, json_t *body, fe_parsed_t *out, fe_error_t *err)
{
    const char *colon = in->path ? strrchr(in->path, ':') : NULL;
    if (colon && !strcmp(colon, ":streamGenerateContent")) {
        /* Google streams server-sent events for alt=sse and one JSON array
         * otherwise: two renderers, differing from the headers on. */
        char alt[8];
        out->stream = true;
        if (fe_style_in_query(in, "alt", alt, sizeof alt) < 0 || strcmp(alt, "sse") != 0)
            out->stream_style = &fe_stream_gemini_array;
    }
    out->model_id = sb_xstrdup(in->path_arg ? in->path_arg : "");
    out->store = false;
    if (in->count_tokens)
        return fe_gemini_parse_count(in, out, body, err);
    if (fe_gemini_parse_request(in, out, body, err) < 0)
        return -1;
    sb_id_new(out->response_id, sizeof out->response_id, "", 12);
    return 0;
}

const fe_style_t fe_style_gemini = {
    .name = "gemini",
    .key_hint = "the 'x-goog-api-key' header",
    .max_tokens_param = "generationConfig.maxOutputTokens",
    .input_param = "contents",
    .format_param = "text.format",
    .effort_param = "reasoning.effort",
    .parts_param = "input",
    .key = fe_gemini_key,
    .error_body = fe_google_error_body,
    .parse = fe_gemini_parse,
    .render = fe_gemini_render,
    .render_count = fe_gemini_render_count,
    .stream = &fe_stream_gemini,
};
