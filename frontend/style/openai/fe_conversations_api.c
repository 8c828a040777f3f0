/* fe_conversations_api: the Conversations API (see fe_conversations_api.h). */
#include "fe_conversations_api.h"

#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_items.h"
#include "fe_list.h"
#include "fe_params.h"
#include "fe_request_db.h"
#include "fe_responses_render.h"
#include "fe_router.h"
#include "fe_sql_conversations.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

/* Items as a client sees them (fe_responses_public_item: no private
 * upstream fields, no tool outputs it did not ask for), in place. */
static void fe_conv_public(json_t *items)
{
    fe_parsed_t none;
    memset(&none, 0, sizeof none);
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it)
        if (json_is_object(it))
            fe_responses_public_item(&none, it);
}

static void fe_conv_not_found(fe_request_t *r)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Conversation with id '%.128s' not found.", r->path_arg);
}

static void fe_conv_query(fe_request_t *r, const char *stmt, int n, const char *const *params, fe_request_db_cb cb)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, n, params, "Conversations are temporarily unavailable, retry later", cb);
}

/* The request's JSON body into r->body: 0, or -1 with the reply sent. An
 * empty body is an empty object (the SDK sends none for some calls). */
static int fe_conv_body(fe_request_t *r)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    if (evbuffer_get_length(sb_http_req_body(r->http)) == 0) {
        r->body = json_object();
        return 0;
    }
    r->body = fe_body_json(sb_http_req_body(r->http), r->srv->cfg.max_body_bytes, r->srv->cfg.max_json_depth, &err);
    if (!r->body) {
        fe_request_fail(r, &err);
        return -1;
    }
    return 0;
}

/* body.items as canonical items with ids (at most FE_CONV_ITEMS_MAX): a new
 * array, or NULL with err. Absent or null: required says whether that is
 * an error. */
static json_t *fe_conv_items(const json_t *body, bool required, fe_error_t *err)
{
    json_t *items = json_object_get(body, "items");
    if (!items || json_is_null(items)) {
        if (required && !fe_params_require(body, "items", err))
            return NULL;
        return json_array();
    }
    if (!json_is_array(items)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", "items",
                     "Invalid type for 'items': expected an array, but got %s instead.", fe_params_got(items));
        return NULL;
    }
    if (json_array_size(items) > FE_CONV_ITEMS_MAX) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "array_above_max_length", "items",
                     "Invalid 'items': array too long. Expected an array with maximum length %d, but got an array "
                     "with length %zu instead.",
                     FE_CONV_ITEMS_MAX, json_array_size(items));
        return NULL;
    }
    json_t *out = fe_items_normalize(items, "items", err);
    if (out)
        fe_items_assign_ids(out);
    return out;
}

/* A reply of one JSON object from the statement's first column. */
static void fe_conv_on_object(fe_request_t *r, const PGresult *res)
{
    json_t *obj = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!obj) {
        fe_conv_not_found(r);
        return;
    }
    fe_request_reply_json(r, 200, obj);
}

void fe_conversations_create(fe_request_t *r)
{
    if (fe_conv_body(r) < 0)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    static const char *const allowed[] = {"items", "metadata", NULL};
    json_t *md = json_object();
    json_t *items = NULL;
    if (fe_params_only(r->body, allowed, "Unknown parameter: '%s'.", &err) < 0 ||
        fe_params_metadata(r->body, md, &err) < 0 || !(items = fe_conv_items(r->body, false, &err))) {
        json_decref(md);
        fe_request_fail(r, &err);
        return;
    }
    char id[SB_ID_MAX], account[24];
    sb_id_new_ordered(id, sizeof id, "conv_", 24);
    fe_request_account(r, account, sizeof account);
    json_t *meta = json_object_get(md, "metadata");
    char *mtext = (meta ? json_dumps(meta, JSON_COMPACT) : sb_xstrdup("{}"));
    char *itext = json_dumps(items, JSON_COMPACT);
    const char *params[4] = {id, account, mtext, itext};
    fe_conv_query(r, FE_SQL_CONV_CREATE, 4, params, fe_conv_on_object);
    free(mtext);
    free(itext);
    json_decref(items);
    json_decref(md);
}

/* The conversation r->path_arg of the caller's account, by stmt with extra
 * parameters after the id and the account. */
static void fe_conv_by_id(fe_request_t *r, const char *stmt, const char *p3, fe_request_db_cb cb)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {r->path_arg, account, p3};
    fe_conv_query(r, stmt, p3 ? 3 : 2, params, cb);
}

void fe_conversations_get(fe_request_t *r)
{
    fe_conv_by_id(r, FE_SQL_CONV_GET, NULL, fe_conv_on_object);
}

void fe_conversations_update(fe_request_t *r)
{
    if (fe_conv_body(r) < 0)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    static const char *const allowed[] = {"metadata", NULL};
    json_t *md = json_object();
    if (fe_params_only(r->body, allowed, "Unknown parameter: '%s'.", &err) < 0 ||
        !fe_params_require(r->body, "metadata", &err) || fe_params_metadata(r->body, md, &err) < 0) {
        json_decref(md);
        fe_request_fail(r, &err);
        return;
    }
    json_t *meta = json_object_get(md, "metadata");
    char *text = (meta ? json_dumps(meta, JSON_COMPACT) : sb_xstrdup("{}"));
    json_decref(md);
    fe_conv_by_id(r, FE_SQL_CONV_UPDATE, text, fe_conv_on_object);
    free(text);
}

static void fe_conv_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_conv_not_found(r);
        return;
    }
    fe_request_reply_json(
        r, 200, json_pack("{s:s, s:s, s:b}", "id", r->path_arg, "object", "conversation.deleted", "deleted", 1));
}

void fe_conversations_delete(fe_request_t *r)
{
    fe_conv_by_id(r, FE_SQL_CONV_DELETE, NULL, fe_conv_on_delete);
}

static void fe_conv_on_items(fe_request_t *r, const PGresult *res)
{
    json_t *all = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!all) {
        fe_conv_not_found(r);
        return;
    }
    fe_list_reply_all(r, all, 100, 20, "desc", fe_conv_public); /* the query was checked before the database */
}

void fe_conversations_items_list(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    fe_conv_by_id(r, FE_SQL_CONV_ITEMS, NULL, fe_conv_on_items);
}

static void fe_conv_on_appended(fe_request_t *r, const PGresult *res)
{
    json_t *items = PQntuples(res) == 1 && !PQgetisnull(res, 0, 0) ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!items) {
        fe_conv_not_found(r);
        return;
    }
    fe_conv_public(items);
    size_t n = json_array_size(items);
    json_t *first = json_object_get(json_array_get(items, 0), "id");
    json_t *last = json_object_get(json_array_get(items, n ? n - 1 : 0), "id");
    fe_request_reply_json(r, 200,
                          json_pack("{s:s, s:o, s:O?, s:O?, s:b}", "object", "list", "data", items, "first_id", first,
                                    "last_id", last, "has_more", 0));
}

void fe_conversations_items_create(fe_request_t *r)
{
    if (fe_conv_body(r) < 0)
        return;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    static const char *const allowed[] = {"items", "include", NULL};
    json_t *items = NULL;
    if (fe_params_only(r->body, allowed, "Unknown parameter: '%s'.", &err) < 0 ||
        !(items = fe_conv_items(r->body, true, &err))) {
        fe_request_fail(r, &err);
        return;
    }
    char *text = json_dumps(items, JSON_COMPACT);
    json_decref(items);
    fe_conv_by_id(r, FE_SQL_CONV_APPEND, text, fe_conv_on_appended);
    free(text);
}

/* The {item_id} of /v1/conversations/{id}/items/{item_id} into buf: 0, or -1. */
static int fe_conv_item_id(fe_request_t *r, char *buf, size_t len)
{
    return fe_router_path_arg(r->route, r->path, 1, buf, len);
}

static void fe_conv_item_not_found(fe_request_t *r)
{
    char id[FE_CONV_ITEM_ID_MAX];
    if (fe_conv_item_id(r, id, sizeof id) != 0)
        id[0] = '\0';
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Item with id '%.128s' not found.", id);
}

/* The item {item_id} of the caller's conversation {id}, by stmt. */
static void fe_conv_by_item(fe_request_t *r, const char *stmt, fe_request_db_cb cb)
{
    char id[FE_CONV_ITEM_ID_MAX];
    if (fe_conv_item_id(r, id, sizeof id) != 0) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Item not found.");
        return;
    }
    fe_conv_by_id(r, stmt, id, cb);
}

static void fe_conv_on_item(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_conv_not_found(r);
        return;
    }
    json_t *item = PQgetisnull(res, 0, 1) ? NULL : json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    if (!item) {
        fe_conv_item_not_found(r);
        return;
    }
    fe_parsed_t none;
    memset(&none, 0, sizeof none);
    fe_responses_public_item(&none, item);
    fe_request_reply_json(r, 200, item);
}

void fe_conversations_item_get(fe_request_t *r)
{
    fe_conv_by_item(r, FE_SQL_CONV_ITEM_GET, fe_conv_on_item);
}

static void fe_conv_on_item_delete(fe_request_t *r, const PGresult *res)
{
    const char *outcome = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "no_conversation";
    if (!strcmp(outcome, "no_conversation")) {
        fe_conv_not_found(r);
        return;
    }
    if (!strcmp(outcome, "no_item")) {
        fe_conv_item_not_found(r);
        return;
    }
    json_t *conv = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    if (!conv) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The conversation could not be read back");
        return;
    }
    fe_request_reply_json(r, 200, conv);
}

void fe_conversations_item_delete(fe_request_t *r)
{
    fe_conv_by_item(r, FE_SQL_CONV_ITEM_DELETE, fe_conv_on_item_delete);
}
