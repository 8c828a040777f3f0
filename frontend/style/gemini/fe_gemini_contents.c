/*
 * fe_gemini_contents: a GenerateContentRequest's conversation as canonical
 * items: contents[] (user and model turns, their text, inline and file data,
 * function calls and responses, code execution parts through
 * fe_gemini_code.c, thought signatures opened back into the items the
 * gateway sealed) and systemInstruction -> instructions. The style's
 * translation table is in fe_gemini_parse.c.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_code.h"
#include "fe_gemini_json.h"
#include "fe_gemini_parse.h"
#include "fe_gemini_render.h"
#include "fe_reasoning.h"
#include "sb_alloc.h"
#include "sb_id.h"

/* ---- contents -> canonical items ---------------------------------------- */

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
    json_t *opened = fe_reasoning_open(c->seal, token, sat, c->err);
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
        /* A code interpreter call is sealed alone (fe_gemini_code.c). */
        ok = ok && t &&
             (!strcmp(t, "reasoning") || !strcmp(t, "function_call") ||
              (!strcmp(t, "code_interpreter_call") && json_array_size(list) == 1));
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
        bool is_code = !strcmp(json_string_value(json_object_get(it, "type")), "code_interpreter_call");
        if (is_code || is_call != (call_last && i == n - 1))
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

/* Whether carried (a signature's items) is a code interpreter call the
 * gateway sealed alone. */
static bool fe_gemini_carries_code(const json_t *carried)
{
    const char *t = json_string_value(json_object_get(json_array_get(carried, 0), "type"));
    return json_array_size(carried) == 1 && t && !strcmp(t, "code_interpreter_call");
}

/* Whether a model turn's part (data: its member) is a code execution part:
 * executableCode, codeExecutionResult, or inlineData right after a result
 * (the images the code showed). */
static bool fe_gemini_is_code_part(const fe_gemini_ctx_t *c, const char *data)
{
    return data && (!strcmp(data, "executableCode") || !strcmp(data, "codeExecutionResult") ||
                    (!strcmp(data, "inlineData") && c->code && !c->code_waiting));
}

/* One such part -> the turn's code_interpreter_call (fe_gemini_code.c). 0,
 * or -1 with err. */
static int fe_gemini_code_part(fe_gemini_ctx_t *c, const json_t *p, const char *data, json_t *carried, const char *at)
{
    if (!strcmp(data, "executableCode")) {
        if (carried && fe_gemini_push_carried(c, carried, false, at) < 0)
            return -1;
        return fe_gemini_code_exec(c, fe_gemini_get(p, "executableCode"), at);
    }
    if (!strcmp(data, "codeExecutionResult")) {
        bool sealed = carried && fe_gemini_carries_code(carried);
        if (carried && !sealed && fe_gemini_push_carried(c, carried, false, at) < 0)
            return -1;
        return fe_gemini_code_result(c, fe_gemini_get(p, "codeExecutionResult"),
                                     sealed ? json_incref(json_array_get(carried, 0)) : NULL, at);
    }
    char sub[FE_GEMINI_AT];
    fe_gemini_at(sub, sizeof sub, at, "inlineData");
    json_t *np = fe_gemini_inline(c, fe_gemini_get(p, "inlineData"), sub);
    if (!np)
        return -1;
    bool image = fe_gemini_code_image(c, np);
    json_decref(np);
    if (!image)
        return fe_gemini_unsupported(c->err, "inline data of a code result at '%s' must be an image.", sub);
    return carried ? fe_gemini_push_carried(c, carried, false, at) : 0;
}

static int fe_gemini_model_turn(fe_gemini_ctx_t *c, const json_t *parts, const char *cat, size_t turn)
{
    json_t *cur = NULL;
    fe_gemini_code_end(c);
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
        bool code = fe_gemini_is_code_part(c, data);
        if (!code)
            fe_gemini_code_end(c);
        if (code) {
            fe_gemini_flush(c, &cur, "assistant"); /* the text before the code comes first */
            rc = fe_gemini_code_part(c, p, data, carried, at);
        } else if (data && !strcmp(data, "functionCall")) {
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

int fe_gemini_contents(fe_gemini_ctx_t *c, const json_t *body)
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
int fe_gemini_system(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
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
