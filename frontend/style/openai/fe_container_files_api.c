/* fe_container_files_api: a container's files (see fe_container_files_api.h). */
#include "fe_container_files_api.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_container_path.h"
#include "fe_containers_api.h"
#include "fe_files_api.h"
#include "fe_list.h"
#include "fe_multipart.h"
#include "fe_params.h"
#include "fe_request_db.h"
#include "fe_router.h"
#include "fe_sql_containers.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_utf8.h"

/* Longest id a path segment may be (fe_router.c's limit) and its NUL. */
#define FE_CFILE_ID_MAX 129

static void fe_cfile_not_found(fe_request_t *r, const char *file_id)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "File %.128s not found on container %.128s.", file_id,
                     r->path_arg);
}

static void fe_cfile_query(fe_request_t *r, const char *stmt, int n, const char *const *params, fe_request_db_cb cb)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, n, params, "Containers are temporarily unavailable, retry later", cb);
}

/* The answer's first column is whether the container is expired; no row
 * means it is not the caller's. Replies and returns false unless the
 * container is running. */
static bool fe_cfile_usable(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_containers_not_found(r, r->path_arg);
        return false;
    }
    if (!strcmp(PQgetvalue(res, 0, 0), "t")) {
        fe_containers_expired(r);
        return false;
    }
    return true;
}

/* The {file_id} of the route's path into buf (FE_CFILE_ID_MAX bytes). */
static void fe_cfile_id(const fe_request_t *r, char *buf)
{
    if (fe_router_path_arg(r->route, r->path, 1, buf, FE_CFILE_ID_MAX) != 0)
        buf[0] = '\0'; /* the route matched, so it is there */
}

/* ---- POST /v1/containers/{id}/files ------------------------------------------- */

static void fe_cfile_on_inserted(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_containers_not_found(r, r->path_arg);
        return;
    }
    const char *outcome = PQgetvalue(res, 0, 0);
    if (!strcmp(outcome, "expired")) {
        fe_containers_expired(r);
    } else if (!strcmp(outcome, "file_missing")) { /* deleted since it was looked up */
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, "file_id", "No such File object: %.128s",
                         json_string_value(json_object_get(r->body, "file_id")));
    } else if (!strcmp(outcome, "too_many")) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "container_too_large", NULL,
                         "Container %.128s already holds %d files, the most a container may hold.", r->path_arg,
                         FE_CONTAINER_MAX_FILES);
    } else if (!strcmp(outcome, "too_large")) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "container_too_large", NULL,
                         "Container %.128s cannot take this file: its files would total more than %lld bytes.",
                         r->path_arg, FE_CONTAINER_MAX_BYTES);
    } else {
        json_t *f = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
        if (!f) {
            fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The file could not be stored.");
            return;
        }
        fe_request_reply_json(r, 200, f);
    }
}

/* Stores content (base64, or NULL to copy the /v1/files file source_id) at path. */
static void fe_cfile_insert(fe_request_t *r, const char *path, const char *b64, const char *source_id)
{
    char id[SB_ID_MAX], account[24], max_files[16], max_bytes[24];
    sb_id_new(id, sizeof id, "cfile_", 16);
    fe_request_account(r, account, sizeof account);
    snprintf(max_files, sizeof max_files, "%d", FE_CONTAINER_MAX_FILES);
    snprintf(max_bytes, sizeof max_bytes, "%lld", FE_CONTAINER_MAX_BYTES);
    const char *params[8] = {r->path_arg, account, id, path, b64, b64 ? NULL : source_id, max_files, max_bytes};
    fe_cfile_query(r, FE_SQL_CFILE_INSERT, 8, params, fe_cfile_on_inserted);
}

/* The container and the /v1/files file (filename, or NULL) a JSON create names. */
static void fe_cfile_on_source(fe_request_t *r, const PGresult *res)
{
    if (!fe_cfile_usable(r, res))
        return;
    const char *file_id = json_string_value(json_object_get(r->body, "file_id"));
    if (PQgetisnull(res, 0, 1)) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, "file_id", "No such File object: %.128s", file_id);
        return;
    }
    char path[FE_CONTAINER_PATH_MAX];
    if (fe_container_path(PQgetvalue(res, 0, 1), path, sizeof path) != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "file_id",
                         "File %.128s has a filename that is not usable as a container path.", file_id);
        return;
    }
    fe_cfile_insert(r, path, NULL, file_id);
}

/* JSON {"file_id": "file-..."}: a copy of one of the caller's /v1/files files. */
static void fe_cfile_create_json(fe_request_t *r)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    r->body = fe_body_json(sb_http_req_body(r->http), r->srv->cfg.max_body_bytes, r->srv->cfg.max_json_depth, &err);
    if (!r->body) {
        fe_request_fail(r, &err);
        return;
    }
    static const char *const allowed[] = {"file_id", NULL};
    if (fe_params_only(r->body, allowed, "Unknown parameter: '%s'.", &err) < 0) {
        fe_request_fail(r, &err);
        return;
    }
    const json_t *fid = json_object_get(r->body, "file_id");
    if (!fid || json_is_null(fid)) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "file",
                         "Missing required parameter: 'file' (a multipart upload) or 'file_id' (a JSON body).");
        return;
    }
    if (!json_is_string(fid) || json_string_length(fid) == 0 || json_string_length(fid) > 128) {
        fe_params_invalid(&err, "file_id", "Invalid value for 'file_id': expected a file id (a non-empty string).");
        fe_request_fail(r, &err);
        return;
    }
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {r->path_arg, account, json_string_value(fid)};
    fe_cfile_query(r, FE_SQL_CFILE_SOURCE, 3, params, fe_cfile_on_source);
}

/* multipart/form-data with a "file" part (or, as a form would send it, a
 * "file_id" field). */
static void fe_cfile_create_multipart(fe_request_t *r, const char *boundary)
{
    struct evbuffer *in = sb_http_req_body(r->http);
    size_t len = evbuffer_get_length(in);
    const unsigned char *body = evbuffer_pullup(in, -1);
    fe_multipart_t mp = {0};
    char perr[160];
    if (fe_multipart_parse(body, len, boundary, 16, &mp, perr, sizeof perr) != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_multipart", NULL,
                         "Could not parse the multipart form: %s", perr);
        return;
    }
    const fe_multipart_part_t *file = fe_multipart_get(&mp, "file");
    const fe_multipart_part_t *fid = fe_multipart_get(&mp, "file_id");
    char path[FE_CONTAINER_PATH_MAX];
    if (!file && fid && !fid->filename) {
        /* A form field: the JSON path's checks and lookup, on a body made of it. */
        char *id = sb_xstrndup((const char *)fid->data, fid->len);
        bool text = strlen(id) == fid->len && sb_utf8_fix(id) == 0 && fid->len > 0 && fid->len <= 128;
        if (!text) {
            fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "file_id",
                             "Invalid value for 'file_id': expected a file id (a non-empty string).");
        } else {
            r->body = json_pack("{s:s}", "file_id", id);
            char account[24];
            fe_request_account(r, account, sizeof account);
            const char *params[3] = {r->path_arg, account, id};
            fe_cfile_query(r, FE_SQL_CFILE_SOURCE, 3, params, fe_cfile_on_source);
        }
        free(id);
    } else if (!file || !file->filename || !*file->filename) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "file",
                         "Missing required parameter: 'file' (a form field with a filename).");
    } else if (file->len > r->srv->cfg.max_file_bytes) {
        fe_request_failf(r, 413, SB_ERR_TOO_LARGE, "file_too_large", "file",
                         "File is too large: %zu bytes exceeds the limit of %zu bytes.", file->len,
                         r->srv->cfg.max_file_bytes);
    } else if (fe_container_path(file->filename, path, sizeof path) != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "file",
                         "Invalid filename: a container file's name must be 1 to %d bytes and not '.' or '..'.",
                         FE_CONTAINER_FILENAME_MAX);
    } else {
        char *b64 = sb_base64_encode(file->data, file->len, NULL);
        fe_cfile_insert(r, path, b64, NULL);
        free(b64);
    }
    fe_multipart_clear(&mp);
}

void fe_container_files_create(fe_request_t *r)
{
    const char *ct = sb_http_req_header(r->http, "Content-Type");
    char boundary[FE_MULTIPART_BOUNDARY_MAX + 1];
    if (ct && fe_multipart_boundary(ct, boundary, sizeof boundary) == 0) {
        fe_cfile_create_multipart(r, boundary);
        return;
    }
    /* The route takes a file-sized body; a JSON one gets the usual limit. */
    size_t len = evbuffer_get_length(sb_http_req_body(r->http));
    if (len > r->srv->cfg.max_body_bytes) {
        fe_request_failf(r, 413, SB_ERR_TOO_LARGE, "request_too_large", NULL,
                         "Request body of %zu bytes exceeds the limit of %zu bytes.", len, r->srv->cfg.max_body_bytes);
        return;
    }
    fe_cfile_create_json(r);
}

/* ---- GET /v1/containers/{id}/files ------------------------------------------------ */

static void fe_cfile_on_list(fe_request_t *r, const PGresult *res)
{
    if (!fe_cfile_usable(r, res))
        return;
    json_t *data = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    fe_list_reply(r, data, r->list_limit);
}

void fe_container_files_list(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    r->list_limit = q.limit;
    sb_utf8_fix(q.after); /* a cursor that is not text is no file's id */
    char account[24], limit[16];
    fe_request_account(r, account, sizeof account);
    snprintf(limit, sizeof limit, "%d", q.limit + 1);
    const char *params[5] = {r->path_arg, account, limit, q.order, q.after[0] ? q.after : NULL};
    fe_cfile_query(r, FE_SQL_CFILE_LIST, 5, params, fe_cfile_on_list);
}

/* ---- GET/DELETE .../files/{file_id}, GET .../files/{file_id}/content --------------- */

static void fe_cfile_by_id(fe_request_t *r, const char *stmt, fe_request_db_cb cb)
{
    char account[24], file_id[FE_CFILE_ID_MAX];
    fe_request_account(r, account, sizeof account);
    fe_cfile_id(r, file_id);
    const char *params[3] = {r->path_arg, account, file_id};
    fe_cfile_query(r, stmt, 3, params, cb);
}

static void fe_cfile_on_get(fe_request_t *r, const PGresult *res)
{
    if (!fe_cfile_usable(r, res))
        return;
    char file_id[FE_CFILE_ID_MAX];
    fe_cfile_id(r, file_id);
    json_t *f = PQgetisnull(res, 0, 1) ? NULL : json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    if (!f) {
        fe_cfile_not_found(r, file_id);
        return;
    }
    fe_request_reply_json(r, 200, f);
}

void fe_container_files_get(fe_request_t *r)
{
    fe_cfile_by_id(r, FE_SQL_CFILE_GET, fe_cfile_on_get);
}

static void fe_cfile_on_content(fe_request_t *r, const PGresult *res)
{
    if (!fe_cfile_usable(r, res))
        return;
    char file_id[FE_CFILE_ID_MAX];
    fe_cfile_id(r, file_id);
    if (PQgetisnull(res, 0, 1)) {
        fe_cfile_not_found(r, file_id);
        return;
    }
    const char *b64 = PQgetvalue(res, 0, 2);
    size_t len = 0;
    unsigned char *data = sb_base64_decode(b64, strlen(b64), &len);
    if (!data) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The stored file could not be read.");
        return;
    }
    /* The type its name says, as the Files API guesses it for an upload
     * that declared none. */
    fe_request_reply_raw(r, 200, fe_files_mime_type(NULL, PQgetvalue(res, 0, 1)), data, len);
    free(data);
}

void fe_container_files_content(fe_request_t *r)
{
    fe_cfile_by_id(r, FE_SQL_CFILE_CONTENT, fe_cfile_on_content);
}

static void fe_cfile_on_delete(fe_request_t *r, const PGresult *res)
{
    if (!fe_cfile_usable(r, res))
        return;
    char file_id[FE_CFILE_ID_MAX];
    fe_cfile_id(r, file_id);
    if (PQgetisnull(res, 0, 1)) {
        fe_cfile_not_found(r, file_id);
        return;
    }
    fe_request_reply_json(
        r, 200, json_pack("{s:s, s:s, s:b}", "id", file_id, "object", "container.file.deleted", "deleted", 1));
}

void fe_container_files_delete(fe_request_t *r)
{
    fe_cfile_by_id(r, FE_SQL_CFILE_DELETE, fe_cfile_on_delete);
}
