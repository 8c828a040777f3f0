/*
 * fe_responses_store: a finished Responses answer into the database
 * (fe_responses_store.h), one parameterised statement (FE_SQL_RESPONSE_SAVE).
 */
#include "fe_responses_store.h"

#include <stdio.h>
#include <stdlib.h>

#include "fe_sql.h"

void fe_responses_store_save(fe_request_t *r, const json_t *rendered, fe_db_cb done)
{
    /* The ids as SQL parameters, read here: a store module calls nothing of
     * the request's layer (the route table reaches it through the styles). */
    char account[24], key_id[24];
    snprintf(account, sizeof account, "%lld", (long long)json_integer_value(json_object_get(r->key, "account_id")));
    snprintf(key_id, sizeof key_id, "%lld", (long long)json_integer_value(json_object_get(r->key, "key_id")));
    char *body = json_dumps(rendered, JSON_COMPACT);
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
    fe_db_query(r->srv->db, FE_SQL_RESPONSE_SAVE, 10, params, done, r);
    free(body);
    free(context);
    free(input);
    free(output);
}
