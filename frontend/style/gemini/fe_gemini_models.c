/*
 * fe_gemini_models: Google's model endpoints, GET /v1beta/models (paged with
 * pageSize/pageToken) and GET /v1beta/models/{model}, listing only the
 * models the caller's token group may call (a model it may not call is a
 * 404, as if it did not exist). Errors in Google's body (fe_style_gemini).
 */
#include "fe_gemini_models.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_request.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_event.h"

/* ListModels page size: Google's default and maximum. */
#define FE_GEMINI_PAGE_DEFAULT 50
#define FE_GEMINI_PAGE_MAX 1000

static json_t *fe_gemini_model_json(const json_t *rec)
{
    const char *id = json_string_value(json_object_get(rec, "id"));
    char *name = sb_xasprintf("models/%s", id);
    json_t *m = json_pack("{s:s, s:s, s:s, s:s, s:s, s:O?, s:O?, s:[s, s]}", "name", name, "baseModelId", id, "version",
                          "001", "displayName", id, "description", "A model served through the Switchboard gateway.",
                          "inputTokenLimit", json_object_get(rec, "context_length"), "outputTokenLimit",
                          json_object_get(rec, "max_output_tokens"), "supportedGenerationMethods", "generateContent",
                          "countTokens");
    free(name);
    return m;
}

static bool fe_gemini_model_usable(const fe_request_t *r, const json_t *rec)
{
    const char *id = json_string_value(json_object_get(rec, "id"));
    return id && !json_is_true(json_object_get(rec, "missing")) && json_is_true(json_object_get(rec, "enabled")) &&
           fe_auth_key_allows(r->key, id);
}

/* One model record for the list arrived: it takes its slot (by id); the
 * last one sends the page. */
static void fe_gemini_on_list_model(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    if (err) {
        fe_request_failf(r, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                         "The model registry is temporarily unavailable, retry later");
        return;
    }
    json_t *st = r->parsed.style_state;
    json_t *ids = json_object_get(st, "ids"), *slots = json_object_get(st, "models");
    size_t i;
    json_t *id;
    json_array_foreach (ids, i, id) {
        if (fe_gemini_model_usable(r, rec) && json_equal(id, json_object_get(rec, "id")))
            json_array_set_new(slots, i, fe_gemini_model_json(rec));
    }
    json_int_t waiting = json_integer_value(json_object_get(st, "waiting")) - 1;
    json_object_set_new(st, "waiting", json_integer(waiting));
    if (waiting > 0)
        return;
    json_t *models = json_array();
    json_t *m;
    json_array_foreach (slots, i, m)
        if (json_is_object(m))
            json_array_append(models, m);
    json_t *body = json_pack("{s:o}", "models", models);
    json_t *next = json_object_get(st, "next");
    if (json_is_string(next))
        json_object_set(body, "nextPageToken", next);
    fe_request_reply_json(r, 200, body);
}

static int fe_gemini_cmp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The enabled models, filtered by the key's token group, sorted by id, one
 * page of them (pageSize, pageToken = the last id of the previous page);
 * then each one's record (cached by fe_auth) for its limits. */
static void fe_gemini_on_list(fe_request_t *r, const PGresult *res)
{
    json_t *all = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    size_t n = 0, i;
    json_t *m;
    const char **ids = sb_xmalloc((json_array_size(all) + 1) * sizeof *ids);
    json_array_foreach (all, i, m) {
        const char *id = json_string_value(json_object_get(m, "id"));
        if (id && fe_auth_key_allows(r->key, id))
            ids[n++] = id;
    }
    qsort(ids, n, sizeof *ids, fe_gemini_cmp);
    const char *token = json_string_value(json_object_get(r->parsed.style_state, "page_token"));
    size_t start = 0;
    while (token && start < n && strcmp(ids[start], token) <= 0)
        start++;
    size_t size = (size_t)json_integer_value(json_object_get(r->parsed.style_state, "page_size"));
    size_t end = n - start > size ? start + size : n;
    json_t *page = json_array(), *slots = json_array();
    for (i = start; i < end; i++) {
        json_array_append_new(page, json_string(ids[i]));
        json_array_append_new(slots, json_null());
    }
    if (end < n && end > start)
        json_object_set_new(r->parsed.style_state, "next", json_string(ids[end - 1]));
    free(ids);
    json_decref(all);
    json_object_set_new(r->parsed.style_state, "ids", page);
    json_object_set_new(r->parsed.style_state, "models", slots);
    json_object_set_new(r->parsed.style_state, "waiting", json_integer((json_int_t)json_array_size(page) + 1));
    /* One hold per lookup, plus one across the loop: a lookup answered from
     * the cache calls back at once, and the last callback replies. */
    json_t *id;
    json_array_foreach (page, i, id) {
        fe_request_hold(r);
        fe_auth_lookup_model(r->srv->auth, json_string_value(id), fe_gemini_on_list_model, r);
    }
    fe_request_hold(r);
    fe_gemini_on_list_model(NULL, NULL, r); /* the loop's own share */
}

/* GET /v1beta/models?pageSize&pageToken */
void fe_gemini_models_list(fe_request_t *r)
{
    char buf[256];
    long long size = FE_GEMINI_PAGE_DEFAULT;
    if (fe_request_query_get(r, "pageSize", buf, sizeof buf) == 0) {
        char *end = NULL;
        size = strtoll(buf, &end, 10);
        if (!*buf || *end || size < 0) {
            fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_argument", NULL,
                             "Invalid value for 'pageSize': expected a non-negative integer.");
            return;
        }
        if (size == 0)
            size = FE_GEMINI_PAGE_DEFAULT;
        if (size > FE_GEMINI_PAGE_MAX)
            size = FE_GEMINI_PAGE_MAX;
    }
    r->parsed.style_state = json_pack("{s:I}", "page_size", (json_int_t)size);
    if (fe_request_query_get(r, "pageToken", buf, sizeof buf) == 0 && *buf)
        json_object_set_new(r->parsed.style_state, "page_token", json_string(buf));
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, FE_SQL_MODEL_LIST, 0, NULL, "The model registry is temporarily unavailable, retry later",
                        fe_gemini_on_list);
}

static void fe_gemini_on_model(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    if (err) {
        fe_request_failf(r, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                         "The model registry is temporarily unavailable, retry later");
        return;
    }
    /* A model the key's group cannot use is as absent as in the list. */
    if (!fe_gemini_model_usable(r, rec)) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "model_not_found", NULL,
                         "models/%s is not found for API version v1beta, or is not available to this API key. Call "
                         "ListModels to see the list of available models.",
                         r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200, fe_gemini_model_json(rec));
}

/* GET /v1beta/models/{model} */
void fe_gemini_model_get(fe_request_t *r)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_hold(r);
    fe_auth_lookup_model(r->srv->auth, r->path_arg, fe_gemini_on_model, r);
}
