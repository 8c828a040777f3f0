/*
 * fe_responses_store: a finished Responses answer into the database
 * (fe_responses_store.h): a row for the group-commit writer
 * (fe_storebatch.h, statement FE_SQL_RESPONSE_SAVE).
 */
#include "fe_responses_store.h"

#include "fe_storebatch.h"

/* The body as stored: its tools without an MCP tool's secrets (`headers`,
 * `authorization`: docs/tools.md, never stored). The render already leaves
 * them out; this keeps them off disk whatever the body was rendered with.
 * New reference (shallow copies: the body itself is not changed). */
static json_t *fe_responses_store_body(const json_t *rendered)
{
    json_t *body = json_copy((json_t *)rendered);
    json_t *tools = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (json_object_get(rendered, "tools"), i, t) {
        json_t *copy = json_is_object(t) ? json_copy(t) : json_incref(t);
        json_object_del(copy, "headers");
        json_object_del(copy, "authorization");
        json_array_append_new(tools, copy);
    }
    if (json_object_get(rendered, "tools"))
        json_object_set_new(body, "tools", tools);
    else
        json_decref(tools);
    return body;
}

/* Sets row.key to a new reference to v, or null when v is NULL. */
static void fe_responses_store_set(json_t *row, const char *key, json_t *v)
{
    json_object_set_new(row, key, v ? json_incref(v) : json_null());
}

void fe_responses_store_save(fe_request_t *r, const json_t *rendered, sb_db_cb done)
{
    /* The ids read here: a store module calls nothing of the request's
     * layer (the route table reaches it through the styles). The row
     * references the request's own values: the batch is written before the
     * request is answered, and nothing changes them meanwhile. */
    const char *prev = r->parsed.previous_response_id;
    json_t *row = json_object();
    json_object_set_new(row, "id", json_string(r->parsed.response_id));
    fe_responses_store_set(row, "account_id", json_object_get(r->key, "account_id"));
    fe_responses_store_set(row, "key_id", json_object_get(r->key, "key_id"));
    json_object_set_new(row, "model", json_string(r->parsed.model_id));
    json_object_set_new(row, "status", json_string(r->result.status[0] ? r->result.status : "completed"));
    json_object_set_new(row, "previous_response_id", prev ? json_string(prev) : json_null());
    json_object_set_new(row, "body", fe_responses_store_body(rendered));
    json_object_set_new(row, "context", r->context ? json_incref(r->context) : json_array());
    fe_responses_store_set(row, "input", json_object_get(r->parsed.canonical, "input"));
    fe_responses_store_set(row, "output", r->result.items);
    fe_storebatch_add(r->srv->responses_store, row, done, r);
}
