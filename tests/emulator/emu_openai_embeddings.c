/*
 * emu_openai_embeddings: OpenAI's POST /v1/embeddings, validated as the real
 * API validates it and answered with the deterministic vectors of
 * emu_embed.c:
 *
 *   {"object":"list","data":[{"object":"embedding","index":i,"embedding":[...]}],
 *    "model":<requested>,"usage":{"prompt_tokens":N,"total_tokens":N}}
 *
 * with encoding_format "base64" the embedding is the base64 of the
 * little-endian float32 array, as the real API sends it. Tokens are the
 * emulator's: words of a string input, ids of a token array.
 *
 * What is refused, each in OpenAI's words: a body that is not a JSON object,
 * an unknown parameter, a missing or empty model, a model that is not an
 * embedding model (its name has no "embed": 404 model_not_found), input
 * missing, empty ("" or [] or [""] or an empty token array: "'$.input' is
 * invalid"), of mixed kinds or with negative token ids, more than 2048
 * inputs, an input over 8192 tokens, more than 300,000 tokens in all;
 * encoding_format other than float/base64; dimensions on
 * text-embedding-ada-002, below 1 or above the model's size.
 *
 * Directives ([[emu:status=500]], ...) work in the first string input that
 * carries one (and are cut from the text embedded), and route faults
 * (PUT /_emu/faults/{model}) apply, so a test can make an ingestion fail.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_embed.h"
#include "emu_internal.h"
#include "emu_openai_check.h"
#include "sb_alloc.h"

#define MAX_INPUTS 2048
#define MAX_INPUT_TOKENS 8192
#define MAX_REQUEST_TOKENS 300000
#define MSG_MAX 512

static const char *const known_params[] = {"model", "input", "encoding_format", "dimensions", "user", NULL};
static const char *const formats[] = {"float", "base64", NULL};

enum input_kind { IN_STRINGS, IN_TOKENS, IN_TOKEN_LISTS };

static bool input_invalid(struct sb_emu_call *call)
{
    return sb_emu_openai_invalid(call, NULL, NULL,
                                 "'$.input' is invalid. Please check the API reference: "
                                 "https://platform.openai.com/docs/api-reference.");
}

/* A token array: non-empty, every element a non-negative integer. */
static bool token_list_ok(const json_t *a)
{
    if (!json_is_array(a) || json_array_size(a) == 0)
        return false;
    size_t i;
    json_t *t;
    json_array_foreach (a, i, t) {
        if (!json_is_integer(t) || json_integer_value(t) < 0)
            return false;
    }
    return true;
}

/* The kind of input, or false after the 400. A bare string is read as one string input. */
static bool check_input(struct sb_emu_call *call, const json_t *input, enum input_kind *kind)
{
    if (!input || json_is_null(input))
        return sb_emu_openai_missing(call, "input");
    if (json_is_string(input)) {
        *kind = IN_STRINGS;
        return json_string_length(input) > 0 ? true : input_invalid(call);
    }
    if (!json_is_array(input) || json_array_size(input) == 0)
        return input_invalid(call);
    if (json_array_size(input) > MAX_INPUTS)
        return sb_emu_openai_invalid(call, "input", "array_above_max_length",
                                     "Invalid 'input': array too long. Expected an array with maximum length %d, "
                                     "but got an array with length %zu instead.",
                                     MAX_INPUTS, json_array_size(input));
    json_t *first = json_array_get(input, 0);
    *kind = json_is_string(first) ? IN_STRINGS : json_is_integer(first) ? IN_TOKENS : IN_TOKEN_LISTS;
    if (*kind == IN_TOKENS)
        return token_list_ok(input) ? true : input_invalid(call);
    size_t i;
    json_t *v;
    json_array_foreach (input, i, v) {
        bool ok = *kind == IN_STRINGS ? json_is_string(v) && json_string_length(v) > 0 : token_list_ok(v);
        if (!ok)
            return input_invalid(call);
    }
    return true;
}

static bool check_request(struct sb_emu_call *call, enum input_kind *kind, size_t *dims)
{
    const json_t *body = call->json;
    if (!sb_emu_openai_check_body(call))
        return false;
    const char *extra = sb_emu_extra_key(body, known_params);
    if (extra)
        return sb_emu_openai_invalid(call, NULL, NULL, "Unrecognized request argument supplied: %.64s", extra);
    json_t *model = json_object_get(body, "model");
    if (!model || json_is_null(model))
        return sb_emu_openai_invalid(call, NULL, NULL, "you must provide a model parameter");
    if (!sb_emu_openai_check_type(call, model, "model", SB_EMU_W_STRING))
        return false;
    const char *m = json_string_value(model);
    if (!*m)
        return sb_emu_openai_invalid(call, NULL, NULL, "you must provide a model parameter");
    if (!strstr(m, "embed")) {
        char msg[MSG_MAX];
        snprintf(msg, sizeof msg, "The model `%.128s` does not exist or you do not have access to it.", m);
        sb_emu_openai_error(&call->reply, 404, msg, "invalid_request_error", NULL, "model_not_found");
        return false;
    }
    if (!check_input(call, json_object_get(body, "input"), kind))
        return false;
    if (!sb_emu_openai_check_enum(call, json_object_get(body, "encoding_format"), "encoding_format", formats,
                                  "'float' and 'base64'"))
        return false;
    json_t *user = json_object_get(body, "user");
    if (user && !json_is_null(user) && !sb_emu_openai_check_type(call, user, "user", SB_EMU_W_STRING))
        return false;
    json_t *d = json_object_get(body, "dimensions");
    *dims = sb_emu_embed_default_dims(m);
    if (d && !json_is_null(d)) {
        if (!strcmp(m, "text-embedding-ada-002"))
            return sb_emu_openai_invalid(call, NULL, NULL, "This model does not support specifying dimensions.");
        if (!sb_emu_openai_check_range(call, "dimensions", SB_EMU_W_INT, 1, (double)sb_emu_embed_max_dims(m)))
            return false;
        *dims = (size_t)json_integer_value(d);
    }
    return true;
}

/* Token counts per input, and the limits on them; false after the 400. */
static bool count_tokens(struct sb_emu_call *call, const json_t *input, enum input_kind kind, long long *total)
{
    size_t n = json_is_string(input) || kind == IN_TOKENS ? 1 : json_array_size(input);
    *total = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_is_string(input) || kind == IN_TOKENS ? input : json_array_get(input, i);
        long long t =
            json_is_string(v) ? (long long)sb_emu_count_words(json_string_value(v)) : (long long)json_array_size(v);
        if (t > MAX_INPUT_TOKENS) {
            sb_emu_openai_invalid(call, NULL, NULL,
                                  "This model's maximum context length is %d tokens, however you requested %lld "
                                  "tokens (%lld in your prompt; 0 for the completion). Please reduce your prompt; "
                                  "or completion length.",
                                  MAX_INPUT_TOKENS, t, t);
            return false;
        }
        *total += t;
    }
    if (*total > MAX_REQUEST_TOKENS) {
        char msg[MSG_MAX];
        snprintf(msg, sizeof msg, "Requested %lld tokens, max %d tokens per request", *total, MAX_REQUEST_TOKENS);
        sb_emu_openai_error(&call->reply, 400, msg, "max_tokens_per_request", NULL, "max_tokens_per_request");
        return false;
    }
    return true;
}

/* The directives of the first string input that has any: its text without them in *clean (owned), at *which. */
static int read_directives(const json_t *input, enum input_kind kind, struct sb_emu_directives *d, char **clean,
                           size_t *which, char *err, size_t errlen)
{
    *clean = NULL;
    *which = SIZE_MAX;
    if (kind != IN_STRINGS)
        return sb_emu_directives_parse("", d, clean, err, errlen);
    size_t n = json_is_string(input) ? 1 : json_array_size(input);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_is_string(input) ? input : json_array_get(input, i));
        if (s && strstr(s, "[[emu:")) {
            *which = i;
            return sb_emu_directives_parse(s, d, clean, err, errlen);
        }
    }
    return sb_emu_directives_parse("", d, clean, err, errlen);
}

static void leak_error(struct sb_emu_call *call, int status, const char *message, bool stream)
{
    (void)stream;
    sb_emu_openai_leak_error(call, status, message);
}

static const struct sb_emu_fault_errors embed_errors = {
    .status = sb_emu_openai_status_error, .leak = leak_error, .auth = sb_emu_openai_auth_error};

/* One data[] entry: the vector as floats, or as base64 of little-endian float32. */
static json_t *entry_json(size_t index, const float *v, size_t dims, bool base64)
{
    json_t *emb;
    if (base64) {
        unsigned char *bytes = sb_xmalloc(dims * 4 + 1);
        for (size_t i = 0; i < dims; i++) {
            uint32_t u;
            memcpy(&u, &v[i], 4);
            for (int k = 0; k < 4; k++)
                bytes[4 * i + (size_t)k] = (unsigned char)(u >> (8 * k));
        }
        char *b64 = sb_emu_base64_encode(bytes, dims * 4);
        emb = json_string(b64);
        free(b64);
        free(bytes);
    } else {
        emb = sb_emu_embed_json(v, dims);
    }
    return json_pack("{s:s, s:I, s:o}", "object", "embedding", "index", (json_int_t)index, "embedding", emb);
}

static void reply(struct sb_emu_call *call, json_t *out)
{
    struct sb_emu_reply *rep = &call->reply;
    free(rep->body);
    rep->status = 200;
    rep->content_type = "application/json";
    rep->body = json_dumps(out, SB_EMU_EMBED_DUMP_FLAGS);
    if (!rep->body)
        rep->body = sb_xstrdup("{}");
    rep->body_len = strlen(rep->body);
}

void sb_emu_openai_embeddings_handle(struct sb_emu_call *call)
{
    call->protocol = "openai-embeddings";
    sb_emu_call_set_model_from_body(call);
    if (sb_emu_openai_check_auth(call))
        return;
    enum input_kind kind = IN_STRINGS;
    size_t dims = 0;
    if (!check_request(call, &kind, &dims))
        return;
    const json_t *body = call->json;
    const json_t *input = json_object_get(body, "input");
    long long total = 0;
    if (!count_tokens(call, input, kind, &total))
        return;

    struct sb_emu_directives d;
    char *clean = NULL, err[MSG_MAX];
    size_t which;
    if (read_directives(input, kind, &d, &clean, &which, err, sizeof err) < 0) {
        sb_emu_openai_invalid(call, "input", NULL, "%s", err);
        free(clean);
        return;
    }
    if (sb_emu_fault_stage(call, &d, false, total, &embed_errors)) {
        free(clean);
        return;
    }
    if (d.malformed) {
        sb_emu_reply_malformed(&call->reply, "{\"object\":\"list\",\"data\":[ this is not JSON");
        free(clean);
        return;
    }

    const char *fmt = json_string_value(json_object_get(body, "encoding_format"));
    bool base64 = fmt && !strcmp(fmt, "base64");
    float *v = sb_xmalloc(dims * sizeof *v);
    json_t *data = json_array();
    size_t n = json_is_string(input) || kind == IN_TOKENS ? 1 : json_array_size(input);
    for (size_t i = 0; i < n; i++) {
        const json_t *item = json_is_string(input) || kind == IN_TOKENS ? input : json_array_get(input, i);
        if (json_is_string(item)) {
            sb_emu_embed_text(i == which ? clean : json_string_value(item), dims, v);
        } else {
            size_t nt = json_array_size(item);
            long long *ids = sb_xmalloc((nt + 1) * sizeof *ids);
            for (size_t k = 0; k < nt; k++)
                ids[k] = (long long)json_integer_value(json_array_get(item, k));
            sb_emu_embed_tokens(ids, nt, dims, v);
            free(ids);
        }
        json_array_append_new(data, entry_json(i, v, dims, base64));
    }
    json_t *out = json_pack("{s:s, s:o, s:s, s:{s:I, s:I}}", "object", "list", "data", data, "model",
                            json_string_value(json_object_get(body, "model")), "usage", "prompt_tokens",
                            (json_int_t)total, "total_tokens", (json_int_t)total);
    reply(call, out);
    json_decref(out);
    free(v);
    free(clean);
}
