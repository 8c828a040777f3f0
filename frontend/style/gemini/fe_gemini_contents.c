/*
 * fe_style_gemini: the Generate Content style (Google Gemini's wire format):
 * POST /v1beta/models/{model}:generateContent, :streamGenerateContent
 * (rendered by fe_stream_gemini.c: server-sent events with ?alt=sse, else
 * one streamed JSON array), GET /v1beta/models and
 * GET /v1beta/models/{model}. x-goog-api-key or ?key= auth, Google's error
 * body ({"error":{"code","message","status"}}).
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
 *   function tools; toolConfig.functionCallingConfig -> tool_choice.
 * Field names are accepted in proto3 JSON's two spellings (lowerCamelCase and
 * snake_case); an unknown field is a 400 in Google's words, as the real API
 * answers, so a request that works here also works against Google.
 *
 * Result -> GenerateContentResponse: one candidate per choice; reasoning ->
 * {text, thought:true, thoughtSignature} when includeThoughts, else only its
 * signature, carried on the next part; message text and refusals -> {text}
 * (a refusal is the model's answer, not a safety block: finishReason stays
 * STOP); function_call -> {functionCall:{name, args, id}}. Nothing is stored:
 * the Generate Content API keeps no state between requests.
 *
 * POST /v1beta/models/{model}:countTokens takes {contents} or
 * {generateContentRequest}, parsed as above, and answers {"totalTokens": N}
 * as the model's upstream counts it.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_json.h"
#include "fe_generate.h"
#include "fe_reasoning.h"
#include "fe_request.h"
#include "fe_router.h"
#include "fe_sql.h"
#include "fe_structured.h"
#include "fe_style_gemini.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

/* Google's limit: at most 5 stop sequences (candidateCount: the header). */
#define FE_GEMINI_MAX_STOP 5

/* The object a thoughtSignature seals when it stands for several items (the
 * reasoning before a part, plus the part's own function_call). */
#define FE_GEMINI_CARRY "gemini_carry"

/* "x-goog-api-key: KEY", or the query parameter key=KEY. The query value
 * lives in a per-thread buffer: the caller hashes it at once. */
static const char *fe_gemini_key(fe_http_req_t *http, size_t *len)
{
    const char *k = fe_http_req_header(http, "x-goog-api-key");
    if (k && *k) {
        *len = strlen(k);
        return k;
    }
    static _Thread_local char buf[256];
    if (fe_http_query_get(fe_http_req_query(http), "key", buf, sizeof buf) < 0 || !buf[0])
        return NULL;
    *len = strlen(buf);
    return buf;
}

static json_t *fe_gemini_error_body(const fe_request_t *r, const fe_error_t *e)
{
    (void)r;
    return fe_error_google_body(e);
}

/* ---- contents -> canonical items ---------------------------------------- */

typedef struct {
    fe_request_t *r;
    fe_error_t *err;
    json_t *items; /* canonical input being built (borrowed) */
    json_t *calls; /* function calls so far: [{"call_id","name","turn","answered"}] (owned) */
} fe_gemini_ctx_t;

static const char *const fe_gemini_part_fields[] = {
    "text",           "inlineData",          "fileData", "functionCall",     "functionResponse",
    "executableCode", "codeExecutionResult", "thought",  "thoughtSignature", "videoMetadata",
    "partMetadata",   "mediaResolution",     NULL};

/* The part's data member (Google's oneof "data"): its name, or NULL with
 * err when it has none or more than one. A part carrying only a
 * thoughtSignature has none and is allowed (*data = NULL, returns 0). */
static int fe_gemini_part_data(const json_t *p, const char *at, const char **data, fe_error_t *err)
{
    static const char *const members[] = {
        "text",           "inlineData",          "fileData", "functionCall", "functionResponse",
        "executableCode", "codeExecutionResult", NULL};
    *data = NULL;
    for (size_t i = 0; members[i]; i++) {
        if (!fe_gemini_get(p, members[i]))
            continue;
        if (*data)
            return fe_gemini_fail(err,
                                  "Invalid JSON payload received. Oneof field 'data' is already set at '%s'. "
                                  "Cannot set '%s'.",
                                  at, members[i]);
        *data = members[i];
    }
    if (!*data && !fe_gemini_get(p, "thoughtSignature"))
        return fe_gemini_fail(err,
                              "Invalid value at '%s': required oneof field 'data' must have one initialized "
                              "field.",
                              at);
    return 0;
}

/* "image/PNG; x=y" -> "image/png" into buf. */
static void fe_gemini_mime(const char *mime, char *buf, size_t len)
{
    size_t o = 0;
    for (const char *m = mime; *m && *m != ';' && *m != ' ' && o + 1 < len; m++)
        buf[o++] = (char)tolower((unsigned char)*m);
    buf[o] = '\0';
}

/* Value of one base64 character, standard or URL-safe; -1 if not one. */
static int fe_gemini_b64_value(char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' || c == '-' ? 62 : c == '/' || c == '_' ? 63 : -1;
}

/* proto3 JSON bytes are base64, standard or URL-safe, padded or not; the
 * canonical parts take standard padded base64. A new string, or NULL when
 * b64 is empty or not base64. Google's decoder is strict: the bits left over
 * after the last whole byte must be zero (RFC 4648 §3.5), so "str" (two
 * bytes and a non-zero remainder) is refused, as Google refuses it, rather
 * than passed on to an upstream that may read it differently. */
static char *fe_gemini_base64(const char *b64)
{
    size_t n = strlen(b64), pad = 0;
    while (n > 0 && b64[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n == 0 || n % 4 == 1 || (pad && (n + pad) % 4 != 0))
        return NULL;
    int last = fe_gemini_b64_value(b64[n - 1]);
    if (last < 0 || (n % 4 == 2 && (last & 0xf)) || (n % 4 == 3 && (last & 0x3)))
        return NULL;
    char *out = sb_xmalloc(n + 4);
    for (size_t i = 0; i < n; i++) {
        char c = b64[i];
        if (c == '-')
            c = '+';
        else if (c == '_')
            c = '/';
        if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/')) {
            free(out);
            return NULL;
        }
        out[i] = c;
    }
    while (n % 4)
        out[n++] = '=';
    out[n] = '\0';
    return out;
}

/* inlineData {mimeType, data} -> input_image / input_file / input_audio. */
static json_t *fe_gemini_inline(fe_gemini_ctx_t *c, const json_t *blob, const char *at)
{
    static const char *const fields[] = {"mimeType", "data", "displayName", NULL};
    const char *mime_raw = NULL, *data = NULL;
    if (fe_gemini_known(blob, fields, at, c->err) < 0 ||
        fe_gemini_string(blob, "mimeType", at, &mime_raw, c->err) < 0 ||
        fe_gemini_string(blob, "data", at, &data, c->err) < 0)
        return NULL;
    if (!mime_raw || !data) {
        fe_gemini_fail(c->err, "Invalid value at '%s': inline data needs a mimeType and base64 data.", at);
        return NULL;
    }
    char mime[96];
    fe_gemini_mime(mime_raw, mime, sizeof mime);
    char *b64 = fe_gemini_base64(data);
    if (!b64) {
        /* Google quotes the value; at most 60 bytes of it, cut on a UTF-8
         * boundary so the message stays valid JSON text. */
        int shown = 0;
        while (data[shown] && shown < 60)
            shown++;
        while (shown > 0 && data[shown] && ((unsigned char)data[shown] & 0xC0) == 0x80)
            shown--;
        fe_gemini_fail(c->err, "Invalid value at '%s.data' (TYPE_BYTES), Base64 decoding failed for \"%.*s\"", at,
                       shown, data);
        return NULL;
    }
    json_t *out = NULL;
    const char *format = !strcmp(mime, "audio/wav") || !strcmp(mime, "audio/x-wav")  ? "wav"
                         : !strcmp(mime, "audio/mp3") || !strcmp(mime, "audio/mpeg") ? "mp3"
                                                                                     : NULL;
    if (format) {
        out = json_pack("{s:s, s:{s:s, s:s}}", "type", "input_audio", "input_audio", "data", b64, "format", format);
    } else if (!strncmp(mime, "image/", 6) && mime[6]) {
        char *url = sb_xasprintf("data:%s;base64,%s", mime, b64);
        out = json_pack("{s:s, s:s}", "type", "input_image", "image_url", url);
        free(url);
    } else if (!strcmp(mime, "application/pdf") || (!strncmp(mime, "text/", 5) && mime[5])) {
        char *url = sb_xasprintf("data:%s;base64,%s", mime, b64);
        out = json_pack("{s:s, s:s, s:s}", "type", "input_file", "filename",
                        !strcmp(mime, "application/pdf") ? "file.pdf" : "file.txt", "file_data", url);
        free(url);
    } else {
        fe_gemini_unsupported(c->err,
                              "inline data of type '%.64s' at '%s' is not supported on this gateway (supported: "
                              "image/*, application/pdf, text/*, audio/wav, audio/mp3, audio/mpeg).",
                              mime, at);
    }
    free(b64);
    return out;
}

/* fileData {fileUri, mimeType}: only images on the web; the gateway has no
 * Google Files API behind it. */
static json_t *fe_gemini_file_data(fe_gemini_ctx_t *c, const json_t *fd, const char *at)
{
    static const char *const fields[] = {"mimeType", "fileUri", "displayName", NULL};
    const char *mime_raw = NULL, *uri = NULL;
    if (fe_gemini_known(fd, fields, at, c->err) < 0 || fe_gemini_string(fd, "mimeType", at, &mime_raw, c->err) < 0 ||
        fe_gemini_string(fd, "fileUri", at, &uri, c->err) < 0)
        return NULL;
    char mime[96] = "";
    if (mime_raw)
        fe_gemini_mime(mime_raw, mime, sizeof mime);
    if (!uri || strncmp(mime, "image/", 6) != 0 ||
        !((!strncmp(uri, "https://", 8) && uri[8]) || (!strncmp(uri, "http://", 7) && uri[7]))) {
        fe_gemini_unsupported(c->err,
                              "file data at '%s' is not supported on this gateway: only images at an http(s) "
                              "URL (mimeType image/*) can be referenced; send other files as inlineData.",
                              at);
        return NULL;
    }
    return json_pack("{s:s, s:s}", "type", "input_image", "image_url", uri);
}

/* Opens a thoughtSignature: the canonical items it stands for (a new array
 * of reasoning and function_call items), or NULL with err. */
static json_t *fe_gemini_open_signature(fe_gemini_ctx_t *c, const char *token, const char *at)
{
    char sat[FE_GEMINI_AT + 24];
    fe_gemini_path(sat, sizeof sat, "%s.thought_signature", at);
    json_t *opened = fe_reasoning_open_token(c->r, token, sat, c->err);
    if (!opened) {
        if (!strcmp(c->err->code, "invalid_encrypted_content"))
            fe_gemini_fail(c->err,
                           "Invalid value at '%s': the thought signature could not be verified (it was "
                           "altered, or issued to another account or by another gateway).",
                           sat);
        return NULL;
    }
    const char *type = json_string_value(json_object_get(opened, "type"));
    json_t *list;
    if (type && !strcmp(type, FE_GEMINI_CARRY)) {
        list = json_incref(json_object_get(opened, "items"));
        json_decref(opened);
    } else {
        list = json_pack("[o]", opened);
    }
    size_t i;
    json_t *it;
    bool ok = json_is_array(list) && json_array_size(list) > 0;
    json_array_foreach (list, i, it) {
        const char *t = json_string_value(json_object_get(it, "type"));
        ok = ok && t && (!strcmp(t, "reasoning") || !strcmp(t, "function_call"));
    }
    if (!ok) {
        json_decref(list);
        fe_gemini_fail(c->err, "Invalid value at '%s': the thought signature could not be verified.", sat);
        return NULL;
    }
    return list;
}

static void fe_gemini_flush(fe_gemini_ctx_t *c, json_t **cur, const char *role)
{
    if (*cur && json_array_size(*cur) > 0)
        json_array_append_new(c->items, json_pack("{s:s, s:s, s:O}", "type", "message", "role", role, "content", *cur));
    json_decref(*cur);
    *cur = NULL;
}

static void fe_gemini_add_call(fe_gemini_ctx_t *c, const json_t *call_id, const json_t *name, size_t turn)
{
    json_array_append_new(c->calls, json_pack("{s:O, s:O, s:I, s:b}", "call_id", call_id, "name", name, "turn",
                                              (json_int_t)turn, "answered", 0));
}

/* Appends the items a signature stood for; every one must be a reasoning
 * item except, for a functionCall part, the last (its function_call). */
static int fe_gemini_push_carried(fe_gemini_ctx_t *c, json_t *carried, bool call_last, const char *at)
{
    size_t n = json_array_size(carried);
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(carried, i);
        bool is_call = !strcmp(json_string_value(json_object_get(it, "type")), "function_call");
        if (is_call != (call_last && i == n - 1))
            return fe_gemini_fail(c->err,
                                  "Invalid value at '%s.thought_signature': the signature belongs to "
                                  "another part.",
                                  at);
        if (!is_call)
            json_array_append(c->items, it);
    }
    return 0;
}

/* A functionCall part of a model turn (with the items its signature stood
 * for, if any) -> a function_call item. */
static int fe_gemini_function_call(fe_gemini_ctx_t *c, const json_t *fc, json_t *carried, const char *at, size_t turn)
{
    static const char *const fields[] = {"id", "name", "args", NULL};
    char fat[FE_GEMINI_AT];
    fe_gemini_at(fat, sizeof fat, at, "functionCall");
    const char *name = NULL, *id = NULL;
    if (fe_gemini_known(fc, fields, fat, c->err) < 0 || fe_gemini_string(fc, "name", fat, &name, c->err) < 0 ||
        fe_gemini_string(fc, "id", fat, &id, c->err) < 0)
        return -1;
    json_t *args = fe_gemini_get(fc, "args");
    if (!name || !*name)
        return fe_gemini_fail(c->err, "Invalid value at '%s.name': a function call needs a name.", fat);
    if (args && !json_is_object(args)) {
        char aat[FE_GEMINI_AT + 8];
        fe_gemini_path(aat, sizeof aat, "%s.args", fat);
        return fe_gemini_bad_value(c->err, aat, "google.protobuf.Struct", args);
    }
    json_t *item;
    if (carried) {
        if (fe_gemini_push_carried(c, carried, true, at) < 0)
            return -1;
        item = json_array_get(carried, json_array_size(carried) - 1);
        const char *call_id = json_string_value(json_object_get(item, "call_id"));
        if (!json_is_string(json_object_get(item, "name")) ||
            strcmp(json_string_value(json_object_get(item, "name")), name) != 0 || !call_id ||
            (id && strcmp(id, call_id) != 0))
            return fe_gemini_fail(c->err,
                                  "Invalid value at '%s.thought_signature': the signature belongs to "
                                  "another function call.",
                                  at);
        json_incref(item);
    } else {
        char gen[SB_ID_MAX];
        if (!id || !*id) {
            sb_id_new(gen, sizeof gen, "call_", 12);
            id = gen;
        }
        char *arguments = args ? json_dumps(args, JSON_COMPACT) : NULL;
        item = json_pack("{s:s, s:s, s:s, s:s}", "type", "function_call", "call_id", id, "name", name, "arguments",
                         arguments ? arguments : "{}");
        free(arguments);
    }
    fe_gemini_add_call(c, json_object_get(item, "call_id"), json_object_get(item, "name"), turn);
    json_array_append_new(c->items, item);
    return 0;
}

/* The call a functionResponse without an id answers: among the unanswered
 * calls of that name, those of the latest model turn that has one, the
 * first of them (parallel calls are answered in order). NULL if none. */
static json_t *fe_gemini_match_call(fe_gemini_ctx_t *c, const char *name)
{
    json_t *best = NULL;
    json_int_t best_turn = -1;
    size_t i;
    json_t *call;
    json_array_foreach (c->calls, i, call) {
        if (json_is_true(json_object_get(call, "answered")) ||
            strcmp(json_string_value(json_object_get(call, "name")), name) != 0)
            continue;
        json_int_t turn = json_integer_value(json_object_get(call, "turn"));
        if (turn > best_turn) {
            best = call;
            best_turn = turn;
        }
    }
    return best;
}

/* The tool's result as the text the upstream gets. Google documents
 * response {"output": ...} (and its examples use {"result": ...}) for a
 * function's output: a sole string there is the output itself; anything
 * else travels as compact JSON. */
static char *fe_gemini_output_text(const json_t *response)
{
    if (json_object_size(response) == 1) {
        json_t *v = json_object_get(response, "output");
        if (!v)
            v = json_object_get(response, "result");
        if (json_is_string(v))
            return sb_xstrdup(json_string_value(v));
    }
    char *s = json_dumps(response, JSON_COMPACT | JSON_ENCODE_ANY);
    return s ? s : sb_xstrdup("{}");
}

/* A functionResponse part of a user turn -> a function_call_output item. */
static json_t *fe_gemini_function_response(fe_gemini_ctx_t *c, const json_t *fr, const char *at)
{
    static const char *const fields[] = {"id", "name", "response", "parts", "willContinue", "scheduling", NULL};
    char fat[FE_GEMINI_AT];
    fe_gemini_at(fat, sizeof fat, at, "functionResponse");
    const char *name = NULL, *id = NULL;
    if (fe_gemini_known(fr, fields, fat, c->err) < 0 || fe_gemini_string(fr, "name", fat, &name, c->err) < 0 ||
        fe_gemini_string(fr, "id", fat, &id, c->err) < 0)
        return NULL;
    if (!name || !*name) {
        fe_gemini_fail(c->err, "Invalid value at '%s.name': a function response needs the function's name.", fat);
        return NULL;
    }
    json_t *parts = fe_gemini_get(fr, "parts");
    if (json_array_size(parts) > 0) {
        fe_gemini_unsupported(c->err,
                              "multimodal function responses ('%s.parts') are not supported on this "
                              "gateway; return the result in 'response'.",
                              fat);
        return NULL;
    }
    json_t *response = fe_gemini_get(fr, "response");
    if (response && !json_is_object(response)) {
        char rat[FE_GEMINI_AT + 12];
        fe_gemini_path(rat, sizeof rat, "%s.response", fat);
        fe_gemini_bad_value(c->err, rat, "google.protobuf.Struct", response);
        return NULL;
    }
    json_t *call = NULL;
    if (id && *id) {
        size_t i;
        json_t *k;
        json_array_foreach (c->calls, i, k)
            if (!strcmp(json_string_value(json_object_get(k, "call_id")), id))
                call = k;
    } else {
        call = fe_gemini_match_call(c, name);
        if (!call) {
            fe_gemini_fail(c->err,
                           "Invalid value at '%s': no earlier functionCall named '%.64s' is waiting for a "
                           "response.",
                           fat, name);
            return NULL;
        }
        id = json_string_value(json_object_get(call, "call_id"));
    }
    if (call)
        json_object_set_new(call, "answered", json_true());
    json_t *empty = response ? NULL : json_object();
    char *output = fe_gemini_output_text(response ? response : empty);
    json_decref(empty);
    json_t *out = json_pack("{s:s, s:s, s:s}", "type", "function_call_output", "call_id", id, "output", output);
    free(output);
    return out;
}

static int fe_gemini_user_turn(fe_gemini_ctx_t *c, const json_t *parts, const char *cat, const char *role)
{
    json_t *content = json_array(), *outputs = json_array();
    size_t j;
    json_t *p;
    json_array_foreach (parts, j, p) {
        char at[FE_GEMINI_AT], sub[FE_GEMINI_AT];
        fe_gemini_path(at, sizeof at, "%s.parts[%zu]", cat, j);
        const char *data = NULL;
        if (fe_gemini_known(p, fe_gemini_part_fields, at, c->err) < 0 || fe_gemini_part_data(p, at, &data, c->err) < 0)
            goto fail;
        if (fe_gemini_get(p, "thoughtSignature") || json_is_true(fe_gemini_get(p, "thought"))) {
            fe_gemini_fail(c->err,
                           "Invalid value at '%s': thoughts and thought signatures belong to parts of a "
                           "model turn.",
                           at);
            goto fail;
        }
        json_t *np = NULL;
        if (!strcmp(data, "text")) {
            const char *text = NULL;
            if (fe_gemini_string(p, "text", at, &text, c->err) < 0)
                goto fail;
            np = json_pack("{s:s, s:s}", "type", "input_text", "text", text);
        } else if (!strcmp(data, "inlineData")) {
            fe_gemini_at(sub, sizeof sub, at, "inlineData");
            np = fe_gemini_inline(c, fe_gemini_get(p, "inlineData"), sub);
        } else if (!strcmp(data, "fileData")) {
            fe_gemini_at(sub, sizeof sub, at, "fileData");
            np = fe_gemini_file_data(c, fe_gemini_get(p, "fileData"), sub);
        } else if (!strcmp(data, "functionResponse")) {
            json_t *out = fe_gemini_function_response(c, fe_gemini_get(p, "functionResponse"), at);
            if (!out)
                goto fail;
            json_array_append_new(outputs, out);
            continue;
        } else if (!strcmp(data, "functionCall")) {
            fe_gemini_fail(c->err, "Invalid value at '%s': functionCall parts belong to model turns.", at);
        } else {
            fe_gemini_unsupported(c->err, "'%s' parts (code execution) at '%s' are not supported on this gateway.",
                                  data, at);
        }
        if (!np)
            goto fail;
        json_array_append_new(content, np);
    }
    /* Results first: an upstream wants them right after the calls they answer. */
    json_array_extend(c->items, outputs);
    json_decref(outputs);
    fe_gemini_flush(c, &content, role);
    return 0;
fail:
    json_decref(content);
    json_decref(outputs);
    return -1;
}

static int fe_gemini_model_turn(fe_gemini_ctx_t *c, const json_t *parts, const char *cat, size_t turn)
{
    json_t *cur = NULL;
    size_t j;
    json_t *p;
    json_array_foreach (parts, j, p) {
        char at[FE_GEMINI_AT];
        fe_gemini_path(at, sizeof at, "%s.parts[%zu]", cat, j);
        const char *data = NULL, *sig = NULL;
        bool thought = false;
        if (fe_gemini_known(p, fe_gemini_part_fields, at, c->err) < 0 ||
            fe_gemini_part_data(p, at, &data, c->err) < 0 ||
            fe_gemini_string(p, "thoughtSignature", at, &sig, c->err) < 0 ||
            fe_gemini_bool(p, "thought", at, &thought, c->err) < 0)
            goto fail;
        json_t *carried = NULL;
        /* Google's documented stand-ins for a signature a client does not
         * have (Gemini CLI fills them in for calls it kept no signature
         * for); Gemini accepts them, so they stand for nothing here. */
        if (sig &&
            (!strcmp(sig, "skip_thought_signature_validator") || !strcmp(sig, "context_engineering_is_the_way_to_go")))
            sig = NULL;
        if (sig) {
            if (!(carried = fe_gemini_open_signature(c, sig, at)))
                goto fail;
            fe_gemini_flush(c, &cur, "assistant");
        }
        int rc = 0;
        if (data && !strcmp(data, "functionCall")) {
            fe_gemini_flush(c, &cur, "assistant");
            rc = fe_gemini_function_call(c, fe_gemini_get(p, "functionCall"), carried, at, turn);
        } else if (!data || !strcmp(data, "text")) {
            const char *text = NULL;
            rc = fe_gemini_string(p, "text", at, &text, c->err) < 0 ? -1 : 0;
            if (rc == 0 && carried)
                rc = fe_gemini_push_carried(c, carried, false, at);
            /* A thought without a signature cannot be verified and is not
             * passed upstream; an empty text only carried a signature. */
            if (rc == 0 && !thought && text && *text) {
                if (!cur)
                    cur = json_array();
                json_array_append_new(cur, json_pack("{s:s, s:s}", "type", "output_text", "text", text));
            }
        } else if (!strcmp(data, "functionResponse")) {
            rc = fe_gemini_fail(c->err, "Invalid value at '%s': functionResponse parts belong to user turns.", at);
        } else {
            rc = fe_gemini_unsupported(c->err, "'%s' parts in a model turn ('%s') are not supported on this gateway.",
                                       data, at);
        }
        json_decref(carried);
        if (rc < 0)
            goto fail;
    }
    fe_gemini_flush(c, &cur, "assistant");
    return 0;
fail:
    json_decref(cur);
    return -1;
}

static int fe_gemini_contents(fe_gemini_ctx_t *c, const json_t *body)
{
    static const char *const fields[] = {"role", "parts", NULL};
    json_t *contents = fe_gemini_get(body, "contents");
    if (!contents || (json_is_array(contents) && json_array_size(contents) == 0))
        return fe_gemini_fail(c->err, "* GenerateContentRequest.contents: contents is not specified");
    if (!json_is_array(contents))
        return fe_gemini_fail(c->err, "Invalid value at 'contents': expected a list of Content.");
    size_t i;
    json_t *content;
    json_array_foreach (contents, i, content) {
        char at[FE_GEMINI_AT];
        fe_gemini_path(at, sizeof at, "contents[%zu]", i);
        const char *role = NULL;
        if (fe_gemini_known(content, fields, at, c->err) < 0 ||
            fe_gemini_string(content, "role", at, &role, c->err) < 0)
            return -1;
        json_t *parts = fe_gemini_array(content, "parts", at, c->err);
        if (c->err->status)
            return -1;
        if (json_array_size(parts) == 0)
            return fe_gemini_fail(c->err, "* GenerateContentRequest.%s.parts: contents.parts must not be empty.", at);
        /* "function" is the role older clients gave function responses. */
        if (!role || !*role || !strcmp(role, "user") || !strcmp(role, "function")) {
            if (fe_gemini_user_turn(c, parts, at, "user") < 0)
                return -1;
        } else if (!strcmp(role, "model")) {
            if (fe_gemini_model_turn(c, parts, at, i) < 0)
                return -1;
        } else {
            return fe_gemini_fail(c->err, "Please use a valid role: user, model. (got '%.32s' at '%s.role')", role, at);
        }
    }
    return 0;
}

/* systemInstruction (a Content of text parts) -> instructions. */
static int fe_gemini_system(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const fields[] = {"role", "parts", NULL};
    json_t *si = fe_gemini_get(body, "systemInstruction");
    if (!si)
        return 0;
    if (fe_gemini_known(si, fields, "system_instruction", c->err) < 0)
        return -1;
    json_t *parts = fe_gemini_array(si, "parts", "system_instruction", c->err);
    if (c->err->status)
        return -1;
    size_t total = 0, i;
    json_t *p;
    json_array_foreach (parts, i, p) {
        char at[FE_GEMINI_AT];
        fe_gemini_path(at, sizeof at, "system_instruction.parts[%zu]", i);
        const char *text = NULL;
        if (fe_gemini_known(p, fe_gemini_part_fields, at, c->err) < 0 ||
            fe_gemini_string(p, "text", at, &text, c->err) < 0)
            return -1;
        if (!text)
            return fe_gemini_unsupported(c->err, "system instructions take text parts only ('%s').", at);
        total += strlen(text) + 1;
    }
    if (total == 0)
        return 0;
    char *buf = sb_xmalloc(total + 1);
    size_t off = 0;
    json_array_foreach (parts, i, p) {
        const char *text = json_string_value(fe_gemini_get(p, "text"));
        size_t n = strlen(text);
        if (off > 0)
            buf[off++] = '\n';
        memcpy(buf + off, text, n);
        off += n;
    }
    buf[off] = '\0';
    json_object_set_new(canonical, "instructions", json_string(buf));
    free(buf);
    return 0;
}

/* ---- tools and toolConfig ------------------------------------------------ */

static int fe_gemini_tools(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const tool_fields[] = {"functionDeclarations",
                                              "googleSearch",
                                              "googleSearchRetrieval",
                                              "codeExecution",
                                              "urlContext",
                                              "computerUse",
                                              "fileSearch",
                                              "googleMaps",
                                              "mcpServers",
                                              "retrieval",
                                              "enterpriseWebSearch",
                                              NULL};
    static const char *const fn_fields[] = {"name",     "description",        "parameters", "parametersJsonSchema",
                                            "response", "responseJsonSchema", "behavior",   NULL};
    json_t *tools = fe_gemini_array(body, "tools", "", c->err);
    if (c->err->status)
        return -1;
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char at[FE_GEMINI_AT];
        fe_gemini_path(at, sizeof at, "tools[%zu]", i);
        if (fe_gemini_known(t, tool_fields, at, c->err) < 0)
            goto fail;
        for (const char *const *f = tool_fields + 1; *f; f++) {
            if (fe_gemini_get(t, *f)) {
                fe_gemini_unsupported(c->err,
                                      "the '%s' tool ('%s') is not supported on this gateway; only "
                                      "functionDeclarations are.",
                                      *f, at);
                goto fail;
            }
        }
        json_t *decls = fe_gemini_array(t, "functionDeclarations", at, c->err);
        if (c->err->status)
            goto fail;
        size_t j;
        json_t *d;
        json_array_foreach (decls, j, d) {
            char dat[FE_GEMINI_AT];
            fe_gemini_path(dat, sizeof dat, "%s.function_declarations[%zu]", at, j);
            const char *name = NULL, *desc = NULL;
            if (fe_gemini_known(d, fn_fields, dat, c->err) < 0 || fe_gemini_string(d, "name", dat, &name, c->err) < 0 ||
                fe_gemini_string(d, "description", dat, &desc, c->err) < 0)
                goto fail;
            json_t *params = fe_gemini_get(d, "parameters");
            json_t *pjs = fe_gemini_get(d, "parametersJsonSchema");
            json_t *schema = NULL;
            if (params && pjs) {
                fe_gemini_fail(c->err,
                               "Invalid value at '%s': set either parameters or parametersJsonSchema, not "
                               "both.",
                               dat);
                goto fail;
            }
            if (params) {
                char pat[FE_GEMINI_AT + 16];
                fe_gemini_path(pat, sizeof pat, "%s.parameters", dat);
                if (!(schema = fe_gemini_schema(params, pat, 0, c->err)))
                    goto fail;
            } else if (pjs) {
                if (!json_is_object(pjs)) {
                    char pat[FE_GEMINI_AT + 24];
                    fe_gemini_path(pat, sizeof pat, "%s.parameters_json_schema", dat);
                    fe_gemini_bad_value(c->err, pat, "google.protobuf.Value (a JSON Schema object)", pjs);
                    goto fail;
                }
                schema = json_incref(pjs);
            }
            json_t *fn = json_pack("{s:s?, s:s?, s:o?}", "name", name, "description", desc, "parameters", schema);
            json_t *nt = fe_structured_function(fn, FE_STRICT_OFF, dat, c->err); /* non-strict, as Google's are */
            json_decref(fn);
            if (!nt)
                goto fail;
            json_array_append_new(out, nt);
        }
    }
    if (json_array_size(out) > 0)
        json_object_set(canonical, "tools", out);
    json_decref(out);
    return 0;
fail:
    json_decref(out);
    return -1;
}

static bool fe_gemini_has_tool(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t)
        if (!strcmp(json_string_value(json_object_get(t, "name")), name))
            return true;
    return false;
}

/* functionCallingConfig {mode, allowedFunctionNames} -> tool_choice. ANY
 * with a list of names keeps only those tools (the model must call one of
 * them), or names the single one. */
static int fe_gemini_tool_config(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const fields[] = {"functionCallingConfig", "retrievalConfig", "includeServerSideToolInvocations",
                                         NULL};
    static const char *const fcc_fields[] = {"mode", "allowedFunctionNames", "streamFunctionCallArguments", NULL};
    json_t *tc = fe_gemini_get(body, "toolConfig");
    if (!tc)
        return 0;
    if (fe_gemini_known(tc, fields, "tool_config", c->err) < 0)
        return -1;
    json_t *fcc = fe_gemini_get(tc, "functionCallingConfig");
    if (!fcc)
        return 0;
    const char *at = "tool_config.function_calling_config";
    const char *mode = NULL;
    if (fe_gemini_known(fcc, fcc_fields, at, c->err) < 0 || fe_gemini_string(fcc, "mode", at, &mode, c->err) < 0)
        return -1;
    json_t *allowed = fe_gemini_array(fcc, "allowedFunctionNames", at, c->err);
    if (c->err->status)
        return -1;
    json_t *tools = json_object_get(canonical, "tools");
    size_t i;
    json_t *n;
    json_array_foreach (allowed, i, n) {
        if (!json_is_string(n) || !fe_gemini_has_tool(tools, json_string_value(n)))
            return fe_gemini_fail(c->err,
                                  "Invalid value at '%s.allowed_function_names[%zu]': function '%.64s' is not "
                                  "declared in tools.",
                                  at, i, json_is_string(n) ? json_string_value(n) : "?");
    }
    if (!mode || fe_gemini_ieq(mode, "MODE_UNSPECIFIED") || fe_gemini_ieq(mode, "AUTO") ||
        fe_gemini_ieq(mode, "VALIDATED")) {
        if (tools)
            json_object_set_new(canonical, "tool_choice", json_string("auto"));
    } else if (fe_gemini_ieq(mode, "NONE")) {
        if (tools)
            json_object_set_new(canonical, "tool_choice", json_string("none"));
    } else if (fe_gemini_ieq(mode, "ANY")) {
        if (!tools)
            return fe_gemini_fail(c->err, "Invalid value at '%s.mode': ANY needs function declarations in tools.", at);
        if (json_array_size(allowed) == 1) {
            json_object_set_new(canonical, "tool_choice",
                                json_pack("{s:s, s:O}", "type", "function", "name", json_array_get(allowed, 0)));
            return 0;
        }
        if (json_array_size(allowed) > 1) {
            json_t *kept = json_array();
            json_t *t;
            json_array_foreach (tools, i, t) {
                size_t k;
                json_t *a;
                json_array_foreach (allowed, k, a)
                    if (json_equal(a, json_object_get(t, "name"))) {
                        json_array_append(kept, t);
                        break;
                    }
            }
            json_object_set_new(canonical, "tools", kept);
        }
        json_object_set_new(canonical, "tool_choice", json_string("required"));
    } else {
        return fe_gemini_bad_value(c->err, "tool_config.function_calling_config.mode",
                                   "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode",
                                   fe_gemini_get(fcc, "mode"));
    }
    return 0;
}

/* ---- generationConfig ---------------------------------------------------- */

static int fe_gemini_thinking(fe_gemini_ctx_t *c, const json_t *gc, json_t *canonical)
{
    static const char *const fields[] = {"includeThoughts", "thinkingBudget", "thinkingLevel", NULL};
    const char *at = "generation_config.thinking_config";
    json_t *tc = fe_gemini_get(gc, "thinkingConfig");
    if (!tc)
        return 0;
    bool include = false;
    long long budget = 0;
    const char *level = NULL;
    int has_budget = 0;
    if (fe_gemini_known(tc, fields, at, c->err) < 0 ||
        fe_gemini_bool(tc, "includeThoughts", at, &include, c->err) < 0 ||
        (has_budget = fe_gemini_int(tc, "thinkingBudget", at, -1, 1LL << 31, &budget, c->err)) < 0 ||
        fe_gemini_string(tc, "thinkingLevel", at, &level, c->err) < 0)
        return -1;
    if (level && fe_gemini_ieq(level, "THINKING_LEVEL_UNSPECIFIED"))
        level = NULL;
    if (has_budget && level)
        return fe_gemini_fail(c->err, "Invalid value at '%s': set either thinking_budget or thinking_level, not both.",
                              at);
    const char *effort = NULL;
    if (has_budget) {
        /* 0 turns thinking off, -1 is Google's dynamic budget. */
        effort = budget == 0      ? "none"
                 : budget < 0     ? "medium"
                 : budget < 4096  ? "low"
                 : budget < 16384 ? "medium"
                                  : "high";
    } else if (level) {
        static const char *const levels[] = {"minimal", "low", "medium", "high", NULL};
        for (size_t i = 0; levels[i] && !effort; i++)
            if (fe_gemini_ieq(level, levels[i]))
                effort = levels[i];
        if (!effort)
            return fe_gemini_bad_value(c->err, "generation_config.thinking_config.thinking_level",
                                       "type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig."
                                       "ThinkingLevel",
                                       fe_gemini_get(tc, "thinkingLevel"));
    } else if (include) {
        effort = "medium"; /* asking for thoughts without a budget: Google's default, dynamic thinking */
    }
    if (effort)
        json_object_set_new(canonical, "reasoning", json_pack("{s:s}", "effort", effort));
    json_object_set_new(c->r->parsed.style_state, "include_thoughts", json_boolean(include));
    return 0;
}

static int fe_gemini_response_format(fe_gemini_ctx_t *c, const json_t *gc, json_t *canonical)
{
    const char *at = "generation_config";
    const char *mime = NULL;
    if (fe_gemini_string(gc, "responseMimeType", at, &mime, c->err) < 0)
        return -1;
    json_t *schema = fe_gemini_get(gc, "responseSchema");
    json_t *js = fe_gemini_get(gc, "responseJsonSchema");
    bool json_mime = mime && fe_gemini_ieq(mime, "application/json");
    if (mime && !json_mime && !fe_gemini_ieq(mime, "text/plain")) {
        if (fe_gemini_ieq(mime, "text/x.enum"))
            return fe_gemini_unsupported(c->err, "response_mime_type 'text/x.enum' is not supported on this "
                                                 "gateway; use application/json with an enum schema.");
        return fe_gemini_fail(c->err,
                              "Invalid value at 'generation_config.response_mime_type': '%.64s'. Supported "
                              "values are 'text/plain' and 'application/json'.",
                              mime);
    }
    if ((schema || js) && !json_mime)
        return fe_gemini_fail(c->err, "Invalid value at 'generation_config': response_mime_type must be "
                                      "'application/json' when a response schema is set.");
    if (schema && js)
        return fe_gemini_fail(c->err, "Invalid value at 'generation_config': set either response_schema or "
                                      "response_json_schema, not both.");
    if (!json_mime)
        return 0;
    json_t *converted = NULL;
    if (schema) {
        if (!(converted = fe_gemini_schema(schema, "generation_config.response_schema", 0, c->err)))
            return -1;
    } else if (js) {
        if (!json_is_object(js))
            return fe_gemini_bad_value(c->err, "generation_config.response_json_schema",
                                       "google.protobuf.Value (a JSON Schema object)", js);
        converted = json_incref(js);
    }
    json_t *fmt = converted ? json_pack("{s:s, s:s, s:o, s:b}", "type", "json_schema", "name", "response", "schema",
                                        converted, "strict", 0)
                            : json_pack("{s:s}", "type", "json_object");
    json_t *f = fe_structured_format(fmt, "generation_config.response_schema", c->err);
    json_decref(fmt);
    if (!f)
        return -1;
    json_object_set_new(canonical, "text", json_pack("{s:o}", "format", f));
    return 0;
}

static int fe_gemini_generation(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const fields[] = {"stopSequences",
                                         "responseMimeType",
                                         "responseSchema",
                                         "responseJsonSchema",
                                         "responseModalities",
                                         "candidateCount",
                                         "maxOutputTokens",
                                         "temperature",
                                         "topP",
                                         "topK",
                                         "seed",
                                         "presencePenalty",
                                         "frequencyPenalty",
                                         "responseLogprobs",
                                         "logprobs",
                                         "enableEnhancedCivicAnswers",
                                         "speechConfig",
                                         "thinkingConfig",
                                         "imageConfig",
                                         "mediaResolution",
                                         NULL};
    const char *at = "generation_config";
    json_t *gc = fe_gemini_get(body, "generationConfig");
    if (!gc)
        return 0;
    if (fe_gemini_known(gc, fields, at, c->err) < 0)
        return -1;
    static const struct {
        const char *field, *canonical;
        double lo, hi;
    } numbers[] = {
        {"temperature", "temperature", 0, 2},
        {"topP", "top_p", 0, 1},
        {"presencePenalty", "presence_penalty", -2, 2},
        {"frequencyPenalty", "frequency_penalty", -2, 2},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        double d;
        int rc = fe_gemini_number(gc, numbers[i].field, at, numbers[i].lo, numbers[i].hi, &d, c->err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            json_object_set_new(canonical, numbers[i].canonical, json_real(d));
    }
    static const struct {
        const char *field, *canonical;
        long long lo, hi;
    } ints[] = {
        {"maxOutputTokens", "max_output_tokens", 1, 1000000000},
        {"topK", "top_k", 1, 1000000},
        {"seed", "seed", -2147483648LL, 2147483647LL},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        long long v;
        int rc = fe_gemini_int(gc, ints[i].field, at, ints[i].lo, ints[i].hi, &v, c->err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            json_object_set_new(canonical, ints[i].canonical, json_integer(v));
    }
    long long n = 1;
    if (fe_gemini_int(gc, "candidateCount", at, 1, FE_GEMINI_MAX_CANDIDATES, &n, c->err) < 0)
        return -1;
    c->r->parsed.n = (int)n;
    json_t *stop = fe_gemini_array(gc, "stopSequences", at, c->err);
    if (c->err->status)
        return -1;
    if (stop) {
        size_t i;
        json_t *s;
        bool ok = json_array_size(stop) <= FE_GEMINI_MAX_STOP;
        json_array_foreach (stop, i, s)
            ok = ok && json_is_string(s);
        if (!ok)
            return fe_gemini_fail(c->err,
                                  "Invalid value at 'generation_config.stop_sequences': expected at most %d "
                                  "strings.",
                                  FE_GEMINI_MAX_STOP);
        if (json_array_size(stop) > 0)
            json_object_set(canonical, "stop", stop);
    }
    json_t *modalities = fe_gemini_array(gc, "responseModalities", at, c->err);
    if (c->err->status)
        return -1;
    size_t i;
    json_t *m;
    json_array_foreach (modalities, i, m) {
        if (!fe_gemini_ieq(json_string_value(m), "TEXT"))
            return fe_gemini_unsupported(c->err, "response_modalities: only TEXT output is supported on this "
                                                 "gateway.");
    }
    bool flag = false;
    if (fe_gemini_bool(gc, "responseLogprobs", at, &flag, c->err) < 0)
        return -1;
    if (flag || fe_gemini_get(gc, "logprobs"))
        return fe_gemini_unsupported(c->err, "log probabilities (response_logprobs, logprobs) are not available on "
                                             "this gateway.");
    if (fe_gemini_get(gc, "speechConfig") || fe_gemini_get(gc, "imageConfig"))
        return fe_gemini_unsupported(c->err, "speech and image output (speech_config, image_config) are not "
                                             "supported on this gateway.");
    /* enableEnhancedCivicAnswers and mediaResolution are hints an upstream
     * may ignore; they are accepted and not forwarded. */
    return fe_gemini_response_format(c, gc, canonical) < 0 || fe_gemini_thinking(c, gc, canonical) < 0 ? -1 : 0;
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

/* A GenerateContentRequest -> r->parsed.canonical (and r->parsed.n, style_state). */
static int fe_gemini_parse_request(fe_request_t *r, const json_t *body, fe_error_t *err)
{
    if (!json_is_object(body))
        return fe_gemini_fail(err, "Invalid JSON payload received. Expected an object.");
    if (fe_gemini_foreign(body, err) < 0 || fe_gemini_known(body, fe_gemini_request_fields, "", err) < 0)
        return -1;
    json_object_set_new(r->parsed.style_state, "include_thoughts", json_false());
    json_t *canonical = json_object();
    r->parsed.canonical = canonical;
    json_t *items = json_array();
    json_object_set_new(canonical, "input", items);
    fe_gemini_ctx_t c = {.r = r, .err = err, .items = items, .calls = json_array()};
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
static int fe_gemini_parse_count(fe_request_t *r, const json_t *body, fe_error_t *err)
{
    static const char *const fields[] = {"contents", "generateContentRequest", NULL};
    if (!json_is_object(body))
        return fe_gemini_fail(err, "Invalid JSON payload received. Expected an object.");
    if (fe_gemini_foreign(body, err) < 0 || fe_gemini_known(body, fields, "", err) < 0)
        return -1;
    const json_t *gcr = fe_gemini_get(body, "generateContentRequest");
    if (!gcr)
        return fe_gemini_parse_request(r, body, err);
    if (fe_gemini_get(body, "contents"))
        return fe_gemini_fail(err, "* CountTokensRequest: contents and generate_content_request cannot both be "
                                   "set.");
    if (!json_is_object(gcr))
        return fe_gemini_bad_value(err, "generate_content_request", "TYPE_MESSAGE", gcr);
    return fe_gemini_parse_request(r, gcr, err);
}

/* The body of :generateContent, :streamGenerateContent, or (r->count_tokens)
 * of :countTokens. */
static int fe_gemini_parse(fe_request_t *r, json_t *body, fe_error_t *err)
{
    const char *colon = strrchr(r->path, ':');
    if (colon && !strcmp(colon, ":streamGenerateContent")) {
        /* Google streams server-sent events for alt=sse and one JSON array
         * otherwise: two renderers, differing from the headers on. */
        char alt[8];
        r->parsed.stream = true;
        if (fe_request_query_get(r, "alt", alt, sizeof alt) < 0 || strcmp(alt, "sse") != 0)
            r->parsed.stream_style = &fe_stream_gemini_array;
    }
    r->parsed.model_id = sb_xstrdup(r->path_arg ? r->path_arg : "");
    r->parsed.store = false;
    if (r->count_tokens)
        return fe_gemini_parse_count(r, body, err);
    if (fe_gemini_parse_request(r, body, err) < 0)
        return -1;
    sb_id_new(r->response_id, sizeof r->response_id, "", 12);
    return 0;
}

/* ---- render --------------------------------------------------------------- */

bool fe_gemini_include_thoughts(const fe_request_t *r)
{
    return json_is_true(json_object_get(r->parsed.style_state, "include_thoughts"));
}

json_t *fe_gemini_seal(fe_request_t *r, json_t *items)
{
    json_t *what = json_array_size(items) == 1 ? json_incref(json_array_get(items, 0))
                                               : json_pack("{s:s, s:O}", "type", FE_GEMINI_CARRY, "items", items);
    char *token = fe_reasoning_seal_item(r, what);
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

void fe_gemini_emit(fe_request_t *r, json_t *parts, json_t *part, json_t *pending, const json_t *own)
{
    json_t *sealed = json_array();
    json_array_extend(sealed, pending);
    if (own && (json_array_size(pending) > 0 || json_object_get(own, "thought_signature")))
        json_array_append(sealed, (json_t *)own);
    json_t *sig = json_array_size(sealed) > 0 ? fe_gemini_seal(r, sealed) : NULL;
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

const char *fe_gemini_finish_reason(const fe_request_t *r, int k)
{
    const char *status = fe_collect_choice_status(&r->result, k);
    const char *why = fe_collect_choice_reason(&r->result, k);
    return strcmp(status, "incomplete") != 0 ? "STOP" : !strcmp(why, "content_filter") ? "SAFETY" : "MAX_TOKENS";
}

json_t *fe_gemini_usage(const fe_request_t *r)
{
    const fe_collect_t *res = &r->result;
    int64_t thoughts = res->reasoning_tokens;
    int64_t cand = res->output_tokens - thoughts > 0 ? res->output_tokens - thoughts : 0;
    json_t *usage =
        json_pack("{s:I, s:I, s:I}", "promptTokenCount", (json_int_t)res->input_tokens, "candidatesTokenCount",
                  (json_int_t)cand, "totalTokenCount", (json_int_t)(res->input_tokens + res->output_tokens));
    if (thoughts > 0)
        json_object_set_new(usage, "thoughtsTokenCount", json_integer(thoughts));
    return usage;
}

json_t *fe_gemini_response(const fe_request_t *r, json_t *candidates, json_t *usage)
{
    return json_pack("{s:o, s:o, s:s, s:s}", "candidates", candidates, "usageMetadata", usage, "modelVersion",
                     r->parsed.model_id, "responseId", r->response_id);
}

static json_t *fe_gemini_candidate(fe_request_t *r, int k, bool include_thoughts)
{
    json_t *parts = json_array(), *pending = json_array();
    size_t i;
    json_t *it;
    json_array_foreach (fe_collect_choice_items(&r->result, k), i, it) {
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
            json_t *sig = fe_gemini_seal(r, one);
            json_decref(one);
            if (sig)
                json_object_set_new(part, "thoughtSignature", sig);
            json_array_append_new(parts, part);
        } else if (!strcmp(type, "message")) {
            size_t j;
            json_t *p;
            json_array_foreach (json_object_get(it, "content"), j, p) {
                const json_t *text = fe_gemini_part_text(p);
                if (text)
                    fe_gemini_emit(r, parts, json_pack("{s:O}", "text", text), pending, NULL);
            }
        } else if (!strcmp(type, "function_call")) {
            json_t *part = fe_gemini_call_part(it);
            if (part)
                fe_gemini_emit(r, parts, part, pending, it);
        }
    }
    if (json_array_size(pending) > 0) /* reasoning with nothing after it */
        fe_gemini_emit(r, parts, json_pack("{s:s}", "text", ""), pending, NULL);
    json_decref(pending);
    json_t *content = json_object();
    if (json_array_size(parts) > 0)
        json_object_set(content, "parts", parts);
    json_object_set_new(content, "role", json_string("model"));
    json_decref(parts);
    return json_pack("{s:o, s:s, s:i}", "content", content, "finishReason", fe_gemini_finish_reason(r, k), "index", k);
}

static json_t *fe_gemini_render(fe_request_t *r)
{
    bool include_thoughts = fe_gemini_include_thoughts(r);
    json_t *candidates = json_array();
    for (int k = 0; k < r->parsed.n; k++)
        json_array_append_new(candidates, fe_gemini_candidate(r, k, include_thoughts));
    return fe_gemini_response(r, candidates, fe_gemini_usage(r));
}

/* CountTokensResponse. The upstream's per-modality breakdown is not carried
 * by the usage event, so promptTokensDetails is left out. */
static json_t *fe_gemini_render_count(fe_request_t *r)
{
    return json_pack("{s:I}", "totalTokens", (json_int_t)r->result.input_tokens);
}

/* POST /v1beta/models/{model}:countTokens: the generation pipeline (auth,
 * model, permission, capabilities) with a count-only job. */
void fe_gemini_count_tokens(fe_request_t *r)
{
    r->count_tokens = true;
    fe_generate_start(r);
}

const fe_style_t fe_style_gemini = {
    .name = "gemini",
    .key = fe_gemini_key,
    .error_body = fe_gemini_error_body,
    .parse = fe_gemini_parse,
    .render = fe_gemini_render,
    .render_count = fe_gemini_render_count,
    .stream = &fe_stream_gemini,
};
