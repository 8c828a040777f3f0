/*
 * fe_chat_stored: stored chat completions (store defaults to true in this
 * style): GET /v1/chat/completions (list, ?model&limit&order&after),
 * GET/POST/DELETE /v1/chat/completions/{id} (POST updates metadata), and
 * GET /v1/chat/completions/{id}/messages. Scoped to the caller's account:
 * another account's id is a 404, exactly like a missing one.
 */
#include "fe_chat_stored.h"

#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_list.h"
#include "fe_params.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_event.h"

static void fe_chat_stored_not_found(fe_request_t *r)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Chat completion with id '%.128s' not found.", r->path_arg);
}

/* Every query of these endpoints (the request is QUERY while it runs). */
static void fe_chat_stored_query(fe_request_t *r, const char *stmt, int n, const char *const *params,
                                 fe_request_db_cb cb)
{
    fe_request_set_state(r, FE_REQ_QUERY);
    fe_request_db_query(r, stmt, n, params, "Stored chat completions are temporarily unavailable, retry later", cb);
}

static void fe_chat_stored_by_id(fe_request_t *r, const char *stmt, fe_request_db_cb cb)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[2] = {r->path_arg, account};
    fe_chat_stored_query(r, stmt, 2, params, cb);
}

static void fe_chat_stored_on_body(fe_request_t *r, const PGresult *res)
{
    json_t *body = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!body) {
        fe_chat_stored_not_found(r);
        return;
    }
    fe_request_reply_json(r, 200, body);
}

void fe_chat_stored_get(fe_request_t *r)
{
    fe_chat_stored_by_id(r, FE_SQL_CHAT_GET, fe_chat_stored_on_body);
}

static void fe_chat_stored_on_delete(fe_request_t *r, const PGresult *res)
{
    if (PQntuples(res) != 1) {
        fe_chat_stored_not_found(r);
        return;
    }
    fe_request_reply_json(
        r, 200, json_pack("{s:s, s:s, s:b}", "id", r->path_arg, "object", "chat.completion.deleted", "deleted", 1));
}

void fe_chat_stored_delete(fe_request_t *r)
{
    fe_chat_stored_by_id(r, FE_SQL_CHAT_DELETE, fe_chat_stored_on_delete);
}

/* The stored request messages, each given an id as OpenAI lists them. */
static void fe_chat_stored_on_messages(fe_request_t *r, const PGresult *res)
{
    json_t *messages = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    if (!json_is_array(messages)) {
        json_decref(messages);
        fe_chat_stored_not_found(r);
        return;
    }
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        char id[160];
        snprintf(id, sizeof id, "%s-%zu", r->path_arg, i);
        if (json_is_object(m) && !json_object_get(m, "id"))
            json_object_set_new(m, "id", json_string(id));
    }
    fe_list_reply_all(r, messages, 100, 20, "asc", NULL);
}

void fe_chat_stored_messages(fe_request_t *r)
{
    fe_chat_stored_by_id(r, FE_SQL_CHAT_MESSAGES, fe_chat_stored_on_messages);
}

/* POST /v1/chat/completions/{id} {"metadata": {...}}: the only field that
 * can change. */
void fe_chat_stored_update(fe_request_t *r)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    r->body = fe_body_json(sb_http_req_body(r->http), r->srv->cfg.max_body_bytes, r->srv->cfg.max_json_depth, &err);
    if (!r->body) {
        fe_request_fail(r, &err);
        return;
    }
    static const char *const allowed[] = {"metadata", NULL};
    json_t *md = json_object();
    if (fe_params_only(r->body, allowed, "Unrecognized request argument supplied: %s", &err) < 0 ||
        !fe_params_require(r->body, "metadata", &err) || fe_params_metadata(r->body, md, &err) < 0) {
        json_decref(md);
        fe_request_fail(r, &err);
        return;
    }
    json_t *value = json_object_get(md, "metadata");
    char *text = json_dumps(value ? value : json_object_get(r->body, "metadata"), JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(md);
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {r->path_arg, account, json_is_null(json_object_get(r->body, "metadata")) ? "{}" : text};
    fe_chat_stored_query(r, FE_SQL_CHAT_UPDATE, 3, params, fe_chat_stored_on_body);
    free(text);
}

static void fe_chat_stored_on_list(fe_request_t *r, const PGresult *res)
{
    json_t *data = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    fe_list_reply(r, data, r->list_limit);
}

void fe_chat_stored_list(fe_request_t *r)
{
    fe_list_query_t q;
    fe_error_t e;
    if (fe_list_parse(r, 100, 20, "asc", &q, &e) < 0) {
        fe_request_fail(r, &e);
        return;
    }
    r->list_limit = q.limit;
    char model[160], account[24], limit[16];
    bool has_model = fe_request_query_get(r, "model", model, sizeof model) == 0;
    fe_request_account(r, account, sizeof account);
    snprintf(limit, sizeof limit, "%d", q.limit + 1);
    const char *params[5] = {account, limit, q.order, q.after[0] ? q.after : NULL, has_model ? model : NULL};
    fe_chat_stored_query(r, FE_SQL_CHAT_LIST, 5, params, fe_chat_stored_on_list);
}
