/*
 * fe_responses_store: a finished Responses answer into the database
 * (fe_responses_store.h), one parameterised statement (FE_SQL_RESPONSE_SAVE).
 */
#include "fe_responses_store.h"

#include <stdio.h>
#include <stdlib.h>

#include "fe_sql.h"

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

void fe_responses_store_save(fe_request_t *r, const json_t *rendered, sb_db_cb done)
{
    /* The ids as SQL parameters, read here: a store module calls nothing of
     * the request's layer (the route table reaches it through the styles). */
    char account[24], key_id[24];
    snprintf(account, sizeof account, "%lld", (long long)json_integer_value(json_object_get(r->key, "account_id")));
    snprintf(key_id, sizeof key_id, "%lld", (long long)json_integer_value(json_object_get(r->key, "key_id")));
    json_t *stored = fe_responses_store_body(rendered);
    char *body = json_dumps(stored, JSON_COMPACT);
    json_decref(stored);
    char *context = r->context ? json_dumps(r->context, JSON_COMPACT) : NULL;
    char *input = json_dumps(json_object_get(r->parsed.canonical, "input"), JSON_COMPACT);
    char *output = json_dumps(r->result.items, JSON_COMPACT);
    const char *params[10] = {r->parsed.response_id,
                              account,
                              key_id,
                              r->parsed.model_id,
                              r->result.status[0] ? r->result.status : "completed",
                              r->parsed.previous_response_id,
                              body,
                              context ? context : "[]",
                              input,
                              output};
    sb_db_query(r->srv->db, FE_SQL_RESPONSE_SAVE, 10, params, done, r);
    free(body);
    free(context);
    free(input);
    free(output);
}
