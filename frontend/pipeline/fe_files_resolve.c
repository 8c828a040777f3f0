/*
 * fe_files_resolve: the generation step that resolves `file_id` parts
 * (input_file, input_image) of the job's input into the file's content, a
 * data URL, for the worker: the file must be the caller's (its account's),
 * else the request is a 404. Files are stored by the Files API
 * (fe_files_api.c).
 */
#include "fe_files_resolve.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fe_items.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_map.h"

static bool fe_files_collect_id(json_t *part, void *arg)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    const char *id = json_string_value(json_object_get(part, "file_id"));
    if (id && type && (!strcmp(type, "input_file") || !strcmp(type, "input_image")))
        json_array_append_new(arg, json_string(id));
    return true;
}

struct fe_files_fill {
    sb_map_t *rows; /* file id -> row index + 1 */
    const PGresult *res;
    const char *missing; /* first id not found */
};

static bool fe_files_fill_part(json_t *part, void *arg)
{
    struct fe_files_fill *f = arg;
    const char *type = json_string_value(json_object_get(part, "type"));
    const char *id = json_string_value(json_object_get(part, "file_id"));
    if (!id || !type || (strcmp(type, "input_file") != 0 && strcmp(type, "input_image") != 0))
        return true;
    uintptr_t row = (uintptr_t)sb_map_get(f->rows, id);
    if (!row) {
        f->missing = id;
        return false;
    }
    int i = (int)row - 1;
    const char *filename = PQgetvalue(f->res, i, 1), *mime = PQgetvalue(f->res, i, 2), *b64 = PQgetvalue(f->res, i, 3);
    char *url = sb_xasprintf("data:%s;base64,%s", mime, b64);
    json_object_set_new(part, !strcmp(type, "input_file") ? "file_data" : "image_url", json_string(url));
    if (!strcmp(type, "input_file"))
        json_object_set_new(part, "filename", json_string(filename));
    free(url);
    json_object_del(part, "file_id");
    return true;
}

static void fe_files_on_resolved(fe_request_t *r, const PGresult *res)
{
    struct fe_files_fill f = {.rows = sb_map_new(), .res = res};
    for (int i = 0; i < PQntuples(res); i++)
        sb_map_put(f.rows, PQgetvalue(res, i, 0), (void *)(uintptr_t)(i + 1));
    fe_items_foreach_part(r->job_input, fe_files_fill_part, &f);
    sb_map_destroy(&f.rows);
    if (f.missing) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "file_not_found", "input", "No such File object: %.128s", f.missing);
        return;
    }
    r->prep_done(r);
}

void fe_files_resolve(fe_request_t *r, fe_request_then_fn done)
{
    json_t *ids = json_array();
    fe_items_foreach_part(r->job_input, fe_files_collect_id, ids);
    if (json_array_size(ids) == 0) {
        json_decref(ids);
        done(r);
        return;
    }
    char account[24];
    fe_request_account(r, account, sizeof account);
    char *text = json_dumps(ids, JSON_COMPACT);
    json_decref(ids);
    const char *params[2] = {account, text};
    r->prep_done = done;
    fe_request_db_query(r, FE_SQL_FILES_RESOLVE, 2, params, "Files are temporarily unavailable, retry later",
                        fe_files_on_resolved);
    free(text);
}
