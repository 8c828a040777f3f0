/* fe_vstore_batches_api: a vector store's file batches (see fe_vstore_batches_api.h). */
#include "fe_vstore_batches_api.h"

#include <string.h>

#include "fe_router.h"
#include "fe_sql_vstores.h"
#include "fe_vstore_files_api.h"
#include "fe_vstore_params.h"
#include "fe_vstores_api.h"
#include "sb_event.h"
#include "sb_id.h"

/* The {batch_id} of .../file_batches/{batch_id}: the route's second id. */
static bool fe_vstore_batches_arg(fe_request_t *r, char *buf, size_t len)
{
    if (fe_router_path_arg(r->route, r->path, 1, buf, len) == 0)
        return true;
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "No file batch found in vector store '%.128s'.",
                     r->path_arg);
    return false;
}

void fe_vstore_batches_create(fe_request_t *r)
{
    static const char *const keys[] = {"file_ids", "files", "attributes", "chunking_strategy", NULL};
    json_t *body = fe_vstores_body(r, keys);
    if (!body)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *files = fe_vstore_params_attach(body, FE_VSTORE_ATTACH_BATCH, &err);
    if (!files) {
        fe_request_fail(r, &err);
        return;
    }
    json_t *s = fe_vstores_scratch(r);
    json_object_set_new(s, "files", files);
    char id[SB_ID_MAX];
    sb_id_new(id, sizeof id, "vsfb_", 16);
    json_object_set_new(s, "batch_id", json_string(id));
    fe_vstores_use(r, fe_vstore_files_attach);
}

static void fe_vstore_batches_on_object(fe_request_t *r, const PGresult *res)
{
    json_t *batch = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!batch) {
        const char *id = json_string_value(json_object_get(fe_vstores_scratch(r), "batch_id"));
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL,
                         "No file batch found with id '%.128s' in vector store '%.128s'.", id ? id : "", r->path_arg);
        return;
    }
    fe_request_reply_json(r, 200, batch);
}

/* Runs stmt with (store, account, batch id) for the path's {batch_id}. */
static void fe_vstore_batches_by_id(fe_request_t *r, const char *stmt)
{
    char batch_id[136], account[24];
    if (!fe_vstore_batches_arg(r, batch_id, sizeof batch_id))
        return;
    json_object_set_new(fe_vstores_scratch(r), "batch_id", json_string(batch_id));
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {r->path_arg, account, batch_id};
    fe_vstores_query(r, stmt, 3, params, fe_vstore_batches_on_object);
}

void fe_vstore_batches_get(fe_request_t *r)
{
    fe_vstore_batches_by_id(r, FE_SQL_VSTORE_BATCH_GET);
}

/* The body (the SDK sends none) is not read: cancel takes no parameters. */
void fe_vstore_batches_cancel(fe_request_t *r)
{
    fe_vstore_batches_by_id(r, FE_SQL_VSTORE_BATCH_CANCEL);
}

void fe_vstore_batches_files(fe_request_t *r)
{
    char batch_id[136];
    if (fe_vstore_batches_arg(r, batch_id, sizeof batch_id))
        fe_vstore_files_list_in(r, batch_id);
}
