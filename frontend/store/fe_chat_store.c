/*
 * fe_chat_store: a finished chat completion into the database
 * (fe_chat_store.h), one parameterised statement (FE_SQL_CHAT_SAVE).
 */
#include "fe_chat_store.h"

#include <stdio.h>
#include <stdlib.h>

#include "fe_sql.h"

void fe_chat_store_save(fe_request_t *r, const json_t *rendered, sb_db_cb done)
{
    /* The ids as SQL parameters, read here: a store module calls nothing of
     * the request's layer (the route table reaches it through the styles). */
    char account[24], key_id[24];
    snprintf(account, sizeof account, "%lld", (long long)json_integer_value(json_object_get(r->key, "account_id")));
    snprintf(key_id, sizeof key_id, "%lld", (long long)json_integer_value(json_object_get(r->key, "key_id")));
    char *body = json_dumps(rendered, JSON_COMPACT);
    char *messages = json_dumps(json_object_get(r->body, "messages"), JSON_COMPACT);
    json_t *md = json_object_get(r->parsed.canonical, "metadata");
    char *metadata = md ? json_dumps(md, JSON_COMPACT) : NULL;
    const char *params[7] = {r->parsed.response_id, account, key_id, r->parsed.model_id, body, messages, metadata};
    sb_db_query(r->srv->db, FE_SQL_CHAT_SAVE, 7, params, done, r);
    free(body);
    free(messages);
    free(metadata);
}
