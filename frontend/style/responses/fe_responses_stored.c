/*
 * fe_stored: endpoints over stored responses: GET and DELETE
 * /v1/responses/{id}, GET /v1/responses/{id}/input_items (scoped to the
 * caller's account: another account's id is a 404, exactly like a missing
 * one). The model list is fe_models.c.
 */
#include "fe_responses_stored.h"

#include <stdlib.h>
#include <string.h>

#include "fe_bg.h"
#include "fe_list.h"
#include "fe_request_db.h"
#include "fe_responses_bg.h"
#include "fe_sql.h"
#include "fe_sql_background.h"
#include "sb_event.h"

static void fe_stored_not_found(fe_request_t *r)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Response with id '%s' not found.", r->path_arg);
}

/* A background response's final body, once finalized (fe_bg_finalize). */
static void fe_stored_on_final(const json_t *body, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
        return;
    if (!body) {
        fe_request_failf(r, 500, SB_ERR_SERVER, "store_failed", NULL,
                         "The response is over but could not be finalized (%s); retry", err ? "storage" : "state");
        return;
    }
    fe_request_reply_json(r, 200, json_incref((json_t *)body));
}

/* GET ?stream=true: a background response's events again, after
 * starting_after, then live to its end (docs/background.md). */
static void fe_stored_stream(fe_request_t *r, const PGresult *res)
{
    if (PQgetisnull(res, 0, 1)) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_request", "stream",
                         "Response '%s' was not created with background=true, so it cannot be streamed again.",
                         r->path_arg);
        return;
    }
    char buf[32];
    long long after = -1;
    if (fe_request_query_get(r, "starting_after", buf, sizeof buf) == 0) {
        char *end = NULL;
        after = strtoll(buf, &end, 10);
        if (!buf[0] || *end || after < 0) {
            fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_value", "starting_after",
                             "Invalid 'starting_after': expected a non-negative integer, got '%s'.", buf);
            return;
        }
    }
    json_t *snap = json_loads(PQgetvalue(res, 0, 2), 0, NULL);
    fe_responses_bg_meta_t meta;
    json_decref(r->parsed.style_state);
    r->parsed.style_state = json_object();
    int rc = snap ? fe_responses_bg_restore(snap, &r->parsed, &meta) : -1;
    json_decref(snap);
    if (rc < 0) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "The stored response cannot be streamed");
        return;
    }
    free(meta.requested_model);
    r->parsed.stream = true;
    fe_bg_stream(r, meta.start_ms, after);
}

static void fe_stored_on_get(fe_request_t *r, const PGresult *res)
{
    json_t *body = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!body) {
        fe_stored_not_found(r);
        return;
    }
    char stream[8];
    if (fe_request_query_get(r, "stream", stream, sizeof stream) == 0 && !strcmp(stream, "true")) {
        json_decref(body);
        fe_stored_stream(r, res);
        return;
    }
    bool background = !PQgetisnull(res, 0, 1);
    bool finished = background && PQgetvalue(res, 0, 3)[0] == 't';
    bool finalized = background && PQgetvalue(res, 0, 4)[0] == 't';
    if (!background || finalized) {
        fe_request_reply_json(r, 200, body);
        return;
    }
    if (finished) { /* over, and no frontend has written its end yet: this one does */
        json_decref(body);
        fe_request_hold(r);
        fe_bg_finalize(r->srv->bg, r->path_arg, fe_stored_on_final, r);
        return;
    }
    json_object_set_new(body, "status", json_string(PQgetvalue(res, 0, 1)));
    fe_request_reply_json(r, 200, body);
}

/* POST /v1/responses/{id}/cancel. */
static void fe_stored_on_cancel(fe_request_t *r, const PGresult *res)
{
    const char *outcome = PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "not_found";
    const char *state = PQntuples(res) == 1 ? PQgetvalue(res, 0, 1) : "";
    if (!strcmp(outcome, "not_found")) {
        fe_stored_not_found(r);
        return;
    }
    if (!strcmp(outcome, "not_background")) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_request", NULL,
                         "Only responses created with background=true can be cancelled.");
        return;
    }
    if (!strcmp(outcome, "finished") && strcmp(state, "cancelled") != 0) {
        fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, "invalid_request", NULL,
                         "Cannot cancel a response with status '%s'.", state);
        return;
    }
    if (!strcmp(outcome, "cancelled")) /* the upstream call is closed; the worker's later events are dropped */
        fe_broker_cancel_any(r->srv->broker, PQgetvalue(res, 0, 2));
    fe_request_hold(r);
    fe_bg_finalize(r->srv->bg, r->path_arg, fe_stored_on_final, r);
}

void fe_responses_cancel(fe_request_t *r)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, FE_SQL_BG_CANCEL, 2, params, "Stored responses are temporarily unavailable, retry later",
                        fe_stored_on_cancel);
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
    fe_stored_query(r, FE_SQL_BG_GET, fe_stored_on_get);
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
    fe_list_reply_all(r, all, 100, 20, "desc", NULL); /* the query was checked before the database */
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
