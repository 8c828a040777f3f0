/* fe_vstore_files_api: a vector store's files (see fe_vstore_files_api.h). */
#include "fe_vstore_files_api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_list.h"
#include "fe_params.h"
#include "fe_router.h"
#include "fe_sql_vstores.h"
#include "fe_vstore_jobs.h"
#include "fe_vstore_params.h"
#include "fe_vstores_api.h"
#include "sb_event.h"

/* The {file_id} of .../files/{file_id}: the route's second id. */
static bool fe_vstore_files_arg(fe_request_t *r, char *buf, size_t len)
{
    if (fe_router_path_arg(r->route, r->path, 1, buf, len) == 0)
        return true;
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "No file found in vector store '%.128s'.", r->path_arg);
    return false;
}

static void fe_vstore_files_not_found(fe_request_t *r, const char *file_id)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "No file found with id '%.128s' in vector store '%.128s'.",
                     file_id, r->path_arg);
}

/* ---- attaching (POST .../files, and a batch's files) --------------------------------- */

static void fe_vstore_files_on_attached(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1 || !strcmp(PQgetvalue(res, 0, 0), "0")) {
        fe_vstores_not_found(r, r->path_arg);
        return;
    }
    const json_t *s = fe_vstores_scratch(r);
    bool batch = json_is_string(json_object_get(s, "batch_id"));
    if (!PQgetisnull(res, 0, 1)) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, batch ? "file_ids" : "file_id",
                         "No file found with id '%.128s'.", PQgetvalue(res, 0, 1));
        return;
    }
    json_t *files = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
    json_t *reply = batch ? json_loads(PQgetvalue(res, 0, 3), 0, NULL) : json_incref(json_array_get(files, 0));
    json_decref(files);
    if (!reply) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The files could not be attached.");
        return;
    }
    char client[32];
    fe_vstores_client(r, client, sizeof client);
    fe_vstore_jobs_ingest(r->srv, r->model, fe_vstores_account_id(r), client[0] ? client : NULL, r->path_arg,
                          json_object_get(s, "files"));
    fe_request_reply_json(r, 200, reply);
}

void fe_vstore_files_attach(fe_request_t *r)
{
    const json_t *s = fe_vstores_scratch(r);
    char account[24];
    fe_request_account(r, account, sizeof account);
    char *files_text = json_dumps(json_object_get(s, "files"), JSON_COMPACT);
    const char *params[4] = {r->path_arg, account, json_string_value(json_object_get(s, "batch_id")), files_text};
    fe_vstores_query(r, FE_SQL_VSTORE_FILES_ADD, 4, params, fe_vstore_files_on_attached);
    free(files_text);
}

void fe_vstore_files_create(fe_request_t *r)
{
    static const char *const keys[] = {"file_id", "attributes", "chunking_strategy", NULL};
    json_t *body = fe_vstores_body(r, keys);
    if (!body)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *files = fe_vstore_params_attach(body, FE_VSTORE_ATTACH_ONE, &err);
    if (!files) {
        fe_request_fail(r, &err);
        return;
    }
    json_object_set_new(fe_vstores_scratch(r), "files", files);
    fe_vstores_use(r, fe_vstore_files_attach);
}

/* ---- GET .../files (and a batch's files) ------------------------------------------- */

static void fe_vstore_files_on_list(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0)) {
        const char *batch = json_string_value(json_object_get(fe_vstores_scratch(r), "batch_id"));
        if (batch)
            fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL,
                             "No file batch found with id '%.128s' in vector store '%.128s'.", batch, r->path_arg);
        else
            fe_vstores_not_found(r, r->path_arg);
        return;
    }
    fe_list_reply(r, json_loads(PQgetvalue(res, 0, 0), 0, NULL), r->list_limit);
}

void fe_vstore_files_list_in(fe_request_t *r, const char *batch_id)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    r->list_limit = q.limit;
    char filter[32];
    bool has_filter = fe_request_query_get(r, "filter", filter, sizeof filter) == 0;
    if (has_filter && strcmp(filter, "in_progress") != 0 && strcmp(filter, "completed") != 0 &&
        strcmp(filter, "failed") != 0 && strcmp(filter, "cancelled") != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "filter",
                         "Invalid value for 'filter': expected one of 'in_progress', 'completed', 'failed', "
                         "'cancelled'.");
        return;
    }
    if (batch_id)
        json_object_set_new(fe_vstores_scratch(r), "batch_id", json_string(batch_id));
    char account[24], limit[16];
    fe_request_account(r, account, sizeof account);
    snprintf(limit, sizeof limit, "%d", q.limit + 1);
    const char *params[7] = {
        r->path_arg, account, limit, q.order, q.after[0] ? q.after : NULL, has_filter ? filter : NULL, batch_id};
    fe_vstores_query(r, FE_SQL_VSTORE_FILE_LIST, 7, params, fe_vstore_files_on_list);
}

void fe_vstore_files_list(fe_request_t *r)
{
    fe_vstore_files_list_in(r, NULL);
}

/* ---- GET/POST/DELETE .../files/{file_id} ------------------------------------------- */

/* Runs stmt with (store, account, file id[, extra]) for the {file_id} of
 * the path; the file id is kept in the scratch for the answer. */
static void fe_vstore_files_by_id(fe_request_t *r, const char *stmt, const char *extra, fe_request_db_cb cb)
{
    char file_id[136], account[24];
    if (!fe_vstore_files_arg(r, file_id, sizeof file_id))
        return;
    json_object_set_new(fe_vstores_scratch(r), "file_id", json_string(file_id));
    fe_request_account(r, account, sizeof account);
    const char *params[4] = {r->path_arg, account, file_id, extra};
    fe_vstores_query(r, stmt, extra ? 4 : 3, params, cb);
}

static const char *fe_vstore_files_id(fe_request_t *r)
{
    const char *id = json_string_value(json_object_get(fe_vstores_scratch(r), "file_id"));
    return id ? id : "";
}

static void fe_vstore_files_on_object(fe_request_t *r, const PGresult *res)
{
    json_t *file = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!file) {
        fe_vstore_files_not_found(r, fe_vstore_files_id(r));
        return;
    }
    fe_request_reply_json(r, 200, file);
}

void fe_vstore_files_get(fe_request_t *r)
{
    fe_vstore_files_by_id(r, FE_SQL_VSTORE_FILE_GET, NULL, fe_vstore_files_on_object);
}

void fe_vstore_files_update(fe_request_t *r)
{
    static const char *const keys[] = {"attributes", NULL};
    json_t *body = fe_vstores_body(r, keys);
    if (!body)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    const json_t *attrs = json_object_get(body, "attributes");
    if (!attrs) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "attributes",
                         "Missing required parameter: 'attributes'.");
        return;
    }
    if (fe_vstore_params_attributes(attrs, "attributes", &err) < 0) {
        fe_request_fail(r, &err);
        return;
    }
    char *text = json_dumps(attrs, JSON_COMPACT | JSON_ENCODE_ANY);
    fe_vstore_files_by_id(r, FE_SQL_VSTORE_FILE_UPDATE, text, fe_vstore_files_on_object);
    free(text);
}

static void fe_vstore_files_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_vstore_files_not_found(r, fe_vstore_files_id(r));
        return;
    }
    fe_request_reply_json(
        r, 200,
        json_pack("{s:s, s:s, s:b}", "id", fe_vstore_files_id(r), "object", "vector_store.file.deleted", "deleted", 1));
}

void fe_vstore_files_delete(fe_request_t *r)
{
    fe_vstore_files_by_id(r, FE_SQL_VSTORE_FILE_DELETE, NULL, fe_vstore_files_on_delete);
}

/* The file's parsed content as OpenAI pages it: one text part per chunk,
 * in order, all on one page. */
static void fe_vstore_files_on_content(fe_request_t *r, const PGresult *res)
{
    json_t *texts = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!json_is_array(texts)) {
        json_decref(texts);
        fe_vstore_files_not_found(r, fe_vstore_files_id(r));
        return;
    }
    json_t *data = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (texts, i, t)
        json_array_append_new(data, json_pack("{s:s, s:O}", "type", "text", "text", t));
    json_decref(texts);
    fe_request_reply_json(r, 200,
                          json_pack("{s:s, s:o, s:b, s:n}", "object", "vector_store.file_content.page", "data", data,
                                    "has_more", 0, "next_page"));
}

void fe_vstore_files_content(fe_request_t *r)
{
    fe_vstore_files_by_id(r, FE_SQL_VSTORE_FILE_CONTENT, NULL, fe_vstore_files_on_content);
}
