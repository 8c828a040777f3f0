/* fe_files_api: the Files API (see fe_files_api.h). */
#include "fe_files_api.h"

#include <event2/buffer.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fe_list.h"
#include "fe_multipart.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_event.h"
#include "sb_id.h"

static const char *const fe_files_purposes[] = {"user_data", "assistants", "vision", NULL};

static const struct {
    const char *ext, *mime;
} fe_files_exts[] = {
    {".pdf", "application/pdf"},   {".txt", "text/plain"},  {".md", "text/markdown"},    {".csv", "text/csv"},
    {".json", "application/json"}, {".html", "text/html"},  {".xml", "application/xml"}, {".png", "image/png"},
    {".jpg", "image/jpeg"},        {".jpeg", "image/jpeg"}, {".gif", "image/gif"},       {".webp", "image/webp"},
};

const char *fe_files_mime_type(const char *declared, const char *filename)
{
    if (declared && *declared && strcasecmp(declared, "application/octet-stream") != 0 && strlen(declared) < 128)
        return declared;
    size_t fl = filename ? strlen(filename) : 0;
    for (size_t i = 0; i < sizeof fe_files_exts / sizeof fe_files_exts[0]; i++) {
        size_t el = strlen(fe_files_exts[i].ext);
        if (fl > el && strcasecmp(filename + fl - el, fe_files_exts[i].ext) == 0)
            return fe_files_exts[i].mime;
    }
    return "application/octet-stream";
}

static void fe_files_not_found(fe_request_t *r, const char *id)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "file_not_found", NULL, "No such File object: %.128s", id);
}

/* Every query of these endpoints; a database error is "Files are ... unavailable". */
static void fe_files_query(fe_request_t *r, const char *stmt, int n, const char *const *params, fe_request_db_cb cb)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, n, params, "Files are temporarily unavailable, retry later", cb);
}

/* ---- POST /v1/files ---------------------------------------------------------- */

static void fe_files_on_inserted(fe_request_t *r, const PGresult *res)
{
    json_t *file = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!file) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The file could not be stored.");
        return;
    }
    fe_request_reply_json(r, 200, file);
}

void fe_files_upload(fe_request_t *r)
{
    const char *ct = sb_http_req_header(r->http, "Content-Type");
    char boundary[FE_MULTIPART_BOUNDARY_MAX + 1];
    if (!ct || fe_multipart_boundary(ct, boundary, sizeof boundary) != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_content_type", NULL,
                         "The request must be multipart/form-data with a boundary, carrying 'file' and 'purpose'.");
        return;
    }
    struct evbuffer *in = sb_http_req_body(r->http);
    size_t len = evbuffer_get_length(in);
    if (len > r->srv->cfg.max_file_bytes + 65536) {
        fe_request_failf(r, 413, SB_ERR_TOO_LARGE, "file_too_large", "file",
                         "File is too large: the upload of %zu bytes exceeds the limit of %zu bytes.", len,
                         r->srv->cfg.max_file_bytes);
        return;
    }
    const unsigned char *body = evbuffer_pullup(in, -1);
    fe_multipart_t mp = {0};
    char perr[160];
    if (fe_multipart_parse(body, len, boundary, 16, &mp, perr, sizeof perr) != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_multipart", NULL,
                         "Could not parse the multipart form: %s", perr);
        return;
    }
    const fe_multipart_part_t *purpose = fe_multipart_get(&mp, "purpose");
    const fe_multipart_part_t *file = fe_multipart_get(&mp, "file");
    char purpose_text[32] = "";
    if (purpose && purpose->len < sizeof purpose_text) {
        memcpy(purpose_text, purpose->data, purpose->len);
        purpose_text[purpose->len] = '\0';
    }
    bool purpose_ok = false;
    for (size_t i = 0; fe_files_purposes[i]; i++)
        purpose_ok |= !strcmp(purpose_text, fe_files_purposes[i]);
    if (!file || !file->filename || !*file->filename) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "file",
                         "Missing required parameter: 'file' (a form field with a filename).");
    } else if (!purpose) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "purpose",
                         "Missing required parameter: 'purpose'.");
    } else if (!purpose_ok) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "purpose",
                         "Invalid value for 'purpose': expected one of 'user_data', 'assistants', 'vision'.");
    } else if (file->len > r->srv->cfg.max_file_bytes) {
        fe_request_failf(r, 413, SB_ERR_TOO_LARGE, "file_too_large", "file",
                         "File is too large: %zu bytes exceeds the limit of %zu bytes.", file->len,
                         r->srv->cfg.max_file_bytes);
    } else if (strlen(file->filename) > 255) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "file",
                         "The filename is longer than 255 characters.");
    } else {
        char id[SB_ID_MAX], account[24];
        sb_id_new(id, sizeof id, "file-", 24);
        fe_request_account(r, account, sizeof account);
        char *b64 = sb_base64_encode(file->data, file->len, NULL);
        const char *params[6] = {
            id, account, file->filename, purpose_text, fe_files_mime_type(file->content_type, file->filename), b64};
        fe_files_query(r, FE_SQL_FILE_INSERT, 6, params, fe_files_on_inserted);
        free(b64);
    }
    fe_multipart_clear(&mp);
}

/* ---- GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content ------------------- */

static void fe_files_on_get(fe_request_t *r, const PGresult *res)
{
    json_t *file = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!file) {
        fe_files_not_found(r, r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200, file);
}

static void fe_files_by_id(fe_request_t *r, const char *stmt, fe_request_db_cb cb)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_files_query(r, stmt, 2, params, cb);
}

void fe_files_get(fe_request_t *r)
{
    fe_files_by_id(r, FE_SQL_FILE_GET, fe_files_on_get);
}

static void fe_files_on_content(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_files_not_found(r, r->path_arg);
        return;
    }
    const char *b64 = PQgetvalue(res, 0, 2);
    size_t len = 0;
    unsigned char *data = sb_base64_decode(b64, strlen(b64), &len);
    if (!data) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The stored file could not be read.");
        return;
    }
    fe_request_reply_raw(r, 200, PQgetvalue(res, 0, 0), data, len);
    free(data);
}

void fe_files_content(fe_request_t *r)
{
    fe_files_by_id(r, FE_SQL_FILE_CONTENT, fe_files_on_content);
}

static void fe_files_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_files_not_found(r, r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200, json_pack("{s:s, s:s, s:b}", "id", r->path_arg, "object", "file", "deleted", 1));
}

void fe_files_delete(fe_request_t *r)
{
    fe_files_by_id(r, FE_SQL_FILE_DELETE, fe_files_on_delete);
}

/* ---- GET /v1/files -------------------------------------------------------------- */

static void fe_files_on_list(fe_request_t *r, const PGresult *res)
{
    json_t *data = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    fe_list_reply(r, data, r->list_limit);
}

void fe_files_list(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 10000, 10000, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    r->list_limit = q.limit;
    char purpose[64];
    bool has_purpose = fe_request_query_get(r, "purpose", purpose, sizeof purpose) == 0;
    char account[24], limit[16];
    fe_request_account(r, account, sizeof account);
    snprintf(limit, sizeof limit, "%d", q.limit + 1);
    const char *params[5] = {account, limit, q.order, q.after[0] ? q.after : NULL, has_purpose ? purpose : NULL};
    fe_files_query(r, FE_SQL_FILE_LIST, 5, params, fe_files_on_list);
}
