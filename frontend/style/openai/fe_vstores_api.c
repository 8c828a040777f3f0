/* fe_vstores_api: the Vector Stores API's stores and what its endpoints share (see fe_vstores_api.h). */
#include "fe_vstores_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_list.h"
#include "fe_params.h"
#include "fe_sql_vstores.h"
#include "fe_vstore_jobs.h"
#include "fe_vstore_params.h"
#include "sb_event.h"
#include "sb_id.h"

/* ---- shared by the Vector Stores API's endpoints ----------------------------------- */

void fe_vstores_query(fe_request_t *r, const char *stmt, int n, const char *const *params, fe_request_db_cb cb)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, n, params, "Vector stores are temporarily unavailable, retry later", cb);
}

void fe_vstores_not_found(fe_request_t *r, const char *id)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "No vector store found with id '%.128s'.", id);
}

json_t *fe_vstores_body(fe_request_t *r, const char *const *allowed)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    r->body = fe_body_json(sb_http_req_body(r->http), r->srv->cfg.max_body_bytes, r->srv->cfg.max_json_depth, &err);
    if (!r->body || fe_params_only(r->body, allowed, "Unknown parameter: '%s'.", &err) < 0) {
        fe_request_fail(r, &err);
        return NULL;
    }
    return r->body;
}

long long fe_vstores_account_id(const fe_request_t *r)
{
    return (long long)json_integer_value(json_object_get(r->key, "account_id"));
}

void fe_vstores_client(const fe_request_t *r, char *buf, size_t len)
{
    const json_t *key_id = json_object_get(r->key, "key_id");
    if (json_is_integer(key_id))
        snprintf(buf, len, "key:%lld", (long long)json_integer_value(key_id));
    else if (len)
        buf[0] = '\0';
}

json_t *fe_vstores_scratch(fe_request_t *r)
{
    if (!r->parsed.style_state)
        r->parsed.style_state = json_object();
    return r->parsed.style_state;
}

static void fe_vstores_on_model(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    const char *id = json_string_value(json_object_get(fe_vstores_scratch(r), "embedding_model"));
    if (err) {
        fe_request_failf(r, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                         "The model registry is temporarily unavailable, retry later");
        return;
    }
    if (json_is_true(json_object_get(rec, "missing")) || !json_is_true(json_object_get(rec, "enabled"))) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "embedding_model_unavailable", NULL,
                         "File search is not available: the embedding model '%.128s' of this vector store does not "
                         "exist or is not enabled on this gateway.",
                         id ? id : "");
        return;
    }
    json_decref(r->model);
    r->model = json_incref(rec);
    r->prep_done(r);
}

void fe_vstores_with_model(fe_request_t *r, const char *model_id, fe_request_then_fn then)
{
    json_object_set_new(fe_vstores_scratch(r), "embedding_model", json_string(model_id));
    r->prep_done = then;
    fe_request_set_state(r, FE_REQ_MODEL);
    fe_request_hold(r);
    fe_auth_lookup_model(r->srv->auth, model_id, fe_vstores_on_model, r);
}

static void fe_vstores_on_use(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_vstores_not_found(r, r->path_arg);
        return;
    }
    if (!strcmp(PQgetvalue(res, 0, 1), "t")) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "vector_store_expired", NULL,
                         "Vector store '%.128s' has expired.", r->path_arg);
        return;
    }
    fe_vstores_with_model(r, PQgetvalue(res, 0, 0), r->prep_done);
}

void fe_vstores_use(fe_request_t *r, fe_request_then_fn then)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    r->prep_done = then;
    fe_vstores_query(r, FE_SQL_VSTORE_USE, 2, params, fe_vstores_on_use);
}

/* ---- POST /v1/vector_stores --------------------------------------------------------- */

static void fe_vstores_on_created(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The vector store could not be created.");
        return;
    }
    if (!PQgetisnull(res, 0, 0)) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, "file_ids", "No file found with id '%.128s'.",
                         PQgetvalue(res, 0, 0));
        return;
    }
    json_t *store = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    if (!store) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The vector store could not be created.");
        return;
    }
    const json_t *files = json_object_get(fe_vstores_scratch(r), "files");
    if (r->model && json_array_size(files) > 0) {
        char client[32];
        fe_vstores_client(r, client, sizeof client);
        fe_vstore_jobs_ingest(r->srv, r->model, fe_vstores_account_id(r), client[0] ? client : NULL,
                              json_string_value(json_object_get(store, "id")), files);
    }
    fe_request_reply_json(r, 200, store);
}

/* The store's row and its files (in progress) in one statement. */
static void fe_vstores_insert(fe_request_t *r)
{
    json_t *s = fe_vstores_scratch(r);
    char id[SB_ID_MAX], account[24];
    sb_id_new(id, sizeof id, "vs_", 16);
    fe_request_account(r, account, sizeof account);
    const json_t *md = json_object_get(s, "metadata");
    const json_t *exp = json_object_get(s, "expires_after");
    char *md_text = md ? json_dumps(md, JSON_COMPACT) : NULL;
    char *exp_text = json_is_object(exp) ? json_dumps(exp, JSON_COMPACT) : NULL;
    char *files_text = json_dumps(json_object_get(s, "files"), JSON_COMPACT);
    const char *params[7] = {id,        account,  json_string_value(json_object_get(s, "name")),
                             md_text,   exp_text, json_string_value(json_object_get(s, "embedding_model")),
                             files_text};
    fe_vstores_query(r, FE_SQL_VSTORE_CREATE, 7, params, fe_vstores_on_created);
    free(md_text);
    free(exp_text);
    free(files_text);
}

/* A string field of at most max characters (absent and null allowed). */
static int fe_vstores_string(const json_t *body, const char *key, size_t max, fe_error_t *err)
{
    const json_t *v = fe_params_typed(body, key, FE_P_STRING | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_string(v) && json_string_length(v) > max) {
        fe_params_invalid(err, key, "Invalid '%s': string too long. Expected a string with maximum length %zu.", key,
                          max);
        return -1;
    }
    return 0;
}

void fe_vstores_create(fe_request_t *r)
{
    static const char *const keys[] = {"name",        "file_ids", "expires_after", "chunking_strategy", "metadata",
                                       "description", NULL};
    json_t *body = fe_vstores_body(r, keys);
    if (!body)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *s = fe_vstores_scratch(r);
    json_t *files = NULL;
    if (fe_vstores_string(body, "name", 256, &err) < 0 || fe_vstores_string(body, "description", 512, &err) < 0 ||
        fe_vstore_params_expires_after(json_object_get(body, "expires_after"), "expires_after", true, &err) < 0 ||
        fe_params_metadata(body, s, &err) < 0 ||
        !(files = fe_vstore_params_attach(body, FE_VSTORE_ATTACH_STORE, &err))) {
        fe_request_fail(r, &err);
        return;
    }
    json_object_set_new(s, "files", files);
    json_t *name = json_object_get(body, "name");
    if (json_is_string(name))
        json_object_set(s, "name", name);
    json_t *exp = json_object_get(body, "expires_after");
    if (json_is_object(exp))
        json_object_set(s, "expires_after", exp);
    /* The model is the deployment's; it must work before files go to it. */
    json_object_set_new(s, "embedding_model", json_string(r->srv->cfg.embedding_model));
    if (json_array_size(files) > 0)
        fe_vstores_with_model(r, r->srv->cfg.embedding_model, fe_vstores_insert);
    else
        fe_vstores_insert(r);
}

/* ---- GET /v1/vector_stores ---------------------------------------------------------- */

static void fe_vstores_on_list(fe_request_t *r, const PGresult *res)
{
    json_t *data = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    fe_list_reply(r, data, r->list_limit);
}

void fe_vstores_list(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    r->list_limit = q.limit;
    char account[24], limit[16];
    fe_request_account(r, account, sizeof account);
    snprintf(limit, sizeof limit, "%d", q.limit + 1);
    const char *params[4] = {account, limit, q.order, q.after[0] ? q.after : NULL};
    fe_vstores_query(r, FE_SQL_VSTORE_LIST, 4, params, fe_vstores_on_list);
}

/* ---- GET/POST/DELETE /v1/vector_stores/{id} -------------------------------------------- */

static void fe_vstores_on_object(fe_request_t *r, const PGresult *res)
{
    json_t *store = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!store) {
        fe_vstores_not_found(r, r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200, store);
}

void fe_vstores_get(fe_request_t *r)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_vstores_query(r, FE_SQL_VSTORE_GET, 2, params, fe_vstores_on_object);
}

void fe_vstores_update(fe_request_t *r)
{
    static const char *const keys[] = {"name", "expires_after", "metadata", NULL};
    json_t *body = fe_vstores_body(r, keys);
    if (!body)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *patch = json_object();
    if (fe_vstores_string(body, "name", 256, &err) < 0 ||
        fe_vstore_params_expires_after(json_object_get(body, "expires_after"), "expires_after", true, &err) < 0 ||
        fe_params_metadata(body, patch, &err) < 0) {
        json_decref(patch);
        fe_request_fail(r, &err);
        return;
    }
    /* A key given (null included) is a change; metadata was copied when an object. */
    for (const char *const *k = keys; *k; k++)
        if (json_object_get(body, *k) && !json_object_get(patch, *k))
            json_object_set(patch, *k, json_object_get(body, *k));
    char account[24];
    fe_request_account(r, account, sizeof account);
    char *patch_text = json_dumps(patch, JSON_COMPACT);
    json_decref(patch);
    const char *params[3] = {r->path_arg, account, patch_text};
    fe_vstores_query(r, FE_SQL_VSTORE_UPDATE, 3, params, fe_vstores_on_object);
    free(patch_text);
}

static void fe_vstores_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_vstores_not_found(r, r->path_arg);
        return;
    }
    fe_request_reply_json(
        r, 200, json_pack("{s:s, s:s, s:b}", "id", r->path_arg, "object", "vector_store.deleted", "deleted", 1));
}

void fe_vstores_delete(fe_request_t *r)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_vstores_query(r, FE_SQL_VSTORE_DELETE, 2, params, fe_vstores_on_delete);
}
