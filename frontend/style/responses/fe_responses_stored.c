/*
 * fe_stored: endpoints over stored responses: GET and DELETE
 * /v1/responses/{id}, GET /v1/responses/{id}/input_items (scoped to the
 * caller's account: another account's id is a 404, exactly like a missing
 * one). The model list is fe_models.c.
 */
#include "fe_responses_stored.h"

#include <stdlib.h>
#include <string.h>

#include "fe_list.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_event.h"

static void fe_stored_not_found(fe_request_t *r)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Response with id '%s' not found.", r->path_arg);
}

static void fe_stored_on_get(fe_request_t *r, const PGresult *res)
{
    json_t *body = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!body) {
        fe_stored_not_found(r);
        return;
    }
    fe_request_reply_json(r, 200, body);
}

static void fe_stored_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_stored_not_found(r);
        return;
    }
    fe_request_reply_json(r, 200,
                          json_pack("{s:s, s:s, s:b}", "id", r->path_arg, "object", "response.deleted", "deleted", 1));
}

/* The stored response r->path_arg of the caller's account, by stmt. */
static void fe_stored_query(fe_request_t *r, const char *stmt, fe_request_db_cb cb)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, 2, params, "Stored responses are temporarily unavailable, retry later", cb);
}

void fe_responses_get(fe_request_t *r)
{
    fe_stored_query(r, FE_SQL_RESPONSE_GET, fe_stored_on_get);
}

void fe_responses_delete(fe_request_t *r)
{
    fe_stored_query(r, FE_SQL_RESPONSE_DELETE, fe_stored_on_delete);
}

static void fe_stored_on_input_items(fe_request_t *r, const PGresult *res)
{
    json_t *all = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!all) {
        fe_stored_not_found(r);
        return;
    }
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) { /* checked before the query; cannot fail here */
        json_decref(all);
        fe_request_fail(r, &e);
        return;
    }
    json_t *page = fe_list_page(all, &q);
    json_decref(all);
    fe_list_reply(r, page, q.limit);
}

/* GET /v1/responses/{id}/input_items?limit&order&after&before: the items
 * the request itself sent (not the context it inherited), newest first by
 * default, as OpenAI's list endpoints page them. */
void fe_responses_input_items(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "desc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    fe_stored_query(r, FE_SQL_RESPONSE_INPUT_ITEMS, fe_stored_on_input_items);
}
