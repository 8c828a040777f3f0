/*
 * wtool_embed_wire: the embeddings APIs' wire formats (wtool_embed.h): the
 * request for a batch of texts, and the answer read back into unit
 * vectors. Pure functions of JSON: unit-tested (test_embed.c) and the
 * answer reader fuzzed (tests/fuzz/fuzz_embed.c), since an upstream's
 * answer is bytes from the network.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_event.h"
#include "sb_job.h"
#include "wtool_embed.h"

static void why_set(char *why, size_t why_len, const char *msg)
{
    if (why && why_len)
        snprintf(why, why_len, "%s", msg);
}

enum sb_embed_api sb_embed_api_of(const json_t *route)
{
    const char *kind = json_string_value(json_object_get(route, "provider"));
    if (!kind)
        return SB_EMBED_API_NONE;
    if (!strcmp(kind, "openai-chat") || !strcmp(kind, "openai-responses") || !strcmp(kind, "openai-compatible"))
        return SB_EMBED_API_OPENAI;
    if (!strcmp(kind, "gemini"))
        return SB_EMBED_API_GEMINI;
    return SB_EMBED_API_NONE;
}

/* Gemini's resource name of a model: "models/<id>" for a bare id, the name
 * itself when it has a collection; NULL when it holds characters that
 * could reshape the URL. */
static char *gemini_model_name(const char *model)
{
    for (const char *p = model; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-/", *p))
            return NULL;
    if (!*model || strstr(model, "..") || model[0] == '/')
        return NULL;
    return sb_xasprintf("%s%s", strchr(model, '/') ? "" : "models/", model);
}

/* route.capabilities.embedding_dimensions: > 0, or 0 when unset. */
static json_int_t dims_of(const json_t *route)
{
    const json_t *d = json_object_get(json_object_get(route, "capabilities"), "embedding_dimensions");
    return json_is_integer(d) && json_integer_value(d) > 0 && json_integer_value(d) <= SB_EMBED_MAX_DIMS
               ? json_integer_value(d)
               : 0;
}

int sb_embed_build(const json_t *route, const sb_embed_input_t *inputs, size_t n, bool query,
                   sb_provider_request_t *req, json_t **err)
{
    *err = NULL;
    json_t *body = NULL;
    char *name = NULL;
    /* sb_provider_url and the credential read a job: this one is just the route. */
    json_t *job = json_pack("{s:O}", "route", route);
    enum sb_embed_api api = sb_embed_api_of(route);
    const char *model = json_string_value(json_object_get(route, "upstream_model"));
    if (api == SB_EMBED_API_NONE) {
        const char *kind = json_string_value(json_object_get(route, "provider"));
        char *msg = sb_xasprintf("the embeddings model's provider (%s) has no embeddings API", kind ? kind : "none");
        *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, msg);
        free(msg);
        goto fail;
    }
    if (!model || !*model) {
        *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "the embeddings route has no upstream_model");
        goto fail;
    }
    if (api == SB_EMBED_API_GEMINI) {
        name = gemini_model_name(model);
        if (!name) {
            *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL,
                                  "the embeddings route's upstream_model is not a valid Gemini model name");
            goto fail;
        }
        char *path = sb_xasprintf("/%s:batchEmbedContents", name);
        req->url = sb_provider_url(job, path);
        free(path);
    } else {
        req->url = sb_provider_url(job, "/embeddings");
    }
    if (!req->url) {
        *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "the embeddings route has no base_url");
        goto fail;
    }
    const char *credential;
    if (sb_provider_credential(job, &credential, err) < 0)
        goto fail;
    json_int_t dims = dims_of(route);
    json_t *texts = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_stringn(inputs[i].p, inputs[i].len);
        if (!s) {
            json_decref(texts);
            *err = sb_event_error(500, SB_ERR_SERVER, NULL, "a text to embed is not valid UTF-8");
            goto fail;
        }
        if (api == SB_EMBED_API_GEMINI) {
            json_t *r = json_pack("{s:s, s:{s:[{s:o}]}, s:s}", "model", name, "content", "parts", "text", s, "taskType",
                                  query ? "RETRIEVAL_QUERY" : "RETRIEVAL_DOCUMENT");
            if (dims)
                json_object_set_new(r, "outputDimensionality", json_integer(dims));
            json_array_append_new(texts, r);
        } else {
            json_array_append_new(texts, s);
        }
    }
    if (api == SB_EMBED_API_GEMINI) {
        body = json_pack("{s:o}", "requests", texts);
    } else {
        body = json_pack("{s:s, s:o, s:s}", "model", model, "input", texts, "encoding_format", "float");
        if (dims)
            json_object_set_new(body, "dimensions", json_integer(dims));
    }
    if (sb_provider_request_set_json(req, body, false, err) < 0)
        goto fail;
    if (credential) {
        if (api == SB_EMBED_API_GEMINI)
            sb_provider_request_add_header(req, "x-goog-api-key: %s", credential);
        else
            sb_provider_request_add_header(req, "Authorization: Bearer %s", credential);
    }
    json_decref(body);
    json_decref(job);
    free(name);
    return 0;
fail:
    json_decref(body);
    json_decref(job);
    free(name);
    return -EINVAL;
}

/* One vector (a JSON array of numbers, or OpenAI's base64 of little-endian
 * float32) into out[0..dim), where *dim is 0 (take its size) or the size
 * it must have. */
static int read_vector(const json_t *v, size_t *dim, float **out, size_t n, size_t i, char *why, size_t why_len)
{
    size_t len;
    unsigned char *raw = NULL;
    if (json_is_string(v)) {
        raw = sb_base64_decode(json_string_value(v), json_string_length(v), &len);
        if (!raw || len % 4 != 0) {
            free(raw);
            why_set(why, why_len, "an embedding is not base64 of float32 values");
            return -EINVAL;
        }
        len /= 4;
    } else if (json_is_array(v)) {
        len = json_array_size(v);
    } else {
        why_set(why, why_len, "an embedding is not an array of numbers");
        return -EINVAL;
    }
    if (len == 0 || len > SB_EMBED_MAX_DIMS || (*dim && len != *dim)) {
        free(raw);
        why_set(why, why_len,
                len == 0 || len > SB_EMBED_MAX_DIMS ? "an embedding has no usable size"
                                                    : "the embeddings differ in size");
        return -EINVAL;
    }
    *dim = len;
    if (!*out)
        *out = sb_xcalloc(n * len, sizeof **out);
    float *dst = *out + i * len;
    double norm = 0;
    for (size_t k = 0; k < len; k++) {
        double x;
        if (raw) {
            uint32_t u = (uint32_t)raw[4 * k] | (uint32_t)raw[4 * k + 1] << 8 | (uint32_t)raw[4 * k + 2] << 16 |
                         (uint32_t)raw[4 * k + 3] << 24;
            float f;
            memcpy(&f, &u, sizeof f);
            x = f;
        } else {
            const json_t *e = json_array_get(v, k);
            if (!json_is_number(e)) {
                why_set(why, why_len, "an embedding holds something other than numbers");
                return -EINVAL;
            }
            x = json_number_value(e);
        }
        if (!isfinite(x) || fabs(x) > 1e30) {
            free(raw);
            why_set(why, why_len, "an embedding holds a value out of range");
            return -EINVAL;
        }
        dst[k] = (float)x;
        norm += x * x;
    }
    free(raw);
    /* Unit length, so a dot product is the cosine; a zero vector stays zero (similar to nothing). */
    if (norm > 0) {
        double scale = 1.0 / sqrt(norm);
        for (size_t k = 0; k < len; k++)
            dst[k] = (float)(dst[k] * scale);
    }
    return 0;
}

int sb_embed_parse(enum sb_embed_api api, const char *body, size_t len, size_t n, size_t *dim, float **vecs,
                   int64_t *tokens, char *why, size_t why_len)
{
    *vecs = NULL;
    *tokens = 0;
    size_t want = *dim;
    json_t *root = json_loadb(body, len, JSON_REJECT_DUPLICATES, NULL);
    int rc = -EINVAL;
    char *seen = NULL;
    if (!json_is_object(root)) {
        why_set(why, why_len, "the answer is not a JSON object");
        goto out;
    }
    const json_t *list = json_object_get(root, api == SB_EMBED_API_GEMINI ? "embeddings" : "data");
    if (!json_is_array(list) || json_array_size(list) != n) {
        why_set(why, why_len, "the answer does not have one embedding for each input");
        goto out;
    }
    seen = sb_xcalloc(n ? n : 1, 1);
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(list, i);
        size_t at = i;
        const json_t *v;
        if (api == SB_EMBED_API_GEMINI) {
            v = json_object_get(e, "values");
        } else {
            /* OpenAI says which input each one is for; the order is not promised. */
            const json_t *index = json_object_get(e, "index");
            if (!json_is_integer(index) || json_integer_value(index) < 0 || (size_t)json_integer_value(index) >= n ||
                seen[json_integer_value(index)]) {
                why_set(why, why_len, "an embedding's index is missing, out of range or repeated");
                goto out;
            }
            at = (size_t)json_integer_value(index);
            v = json_object_get(e, "embedding");
        }
        seen[at] = 1;
        if (read_vector(v, dim, vecs, n, at, why, why_len) < 0)
            goto out;
    }
    const json_t *usage = json_object_get(root, "usage");
    const json_t *pt = json_object_get(usage, "prompt_tokens");
    if (!pt)
        pt = json_object_get(usage, "total_tokens");
    if (json_is_integer(pt) && json_integer_value(pt) > 0)
        *tokens = json_integer_value(pt);
    rc = n > 0 ? 0 : -EINVAL;
    if (n == 0)
        why_set(why, why_len, "no input");
out:
    if (rc < 0) {
        free(*vecs);
        *vecs = NULL;
        *dim = want;
    }
    free(seen);
    json_decref(root);
    return rc;
}
