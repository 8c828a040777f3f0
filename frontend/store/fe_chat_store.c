/*
 * fe_chat_store: a finished chat completion into the database
 * (fe_chat_store.h): a row for the group-commit writer (fe_storebatch.h,
 * statement FE_SQL_CHAT_SAVE).
 */
#include "fe_chat_store.h"

#include "fe_storebatch.h"

/* Sets row.key to a new reference to v, or null when v is NULL. */
static void fe_chat_store_set(json_t *row, const char *key, json_t *v)
{
    json_object_set_new(row, key, v ? json_incref(v) : json_null());
}

void fe_chat_store_save(fe_request_t *r, const json_t *rendered, sb_db_cb done)
{
    /* The ids read here: a store module calls nothing of the request's
     * layer (the route table reaches it through the styles). The row
     * references the request's own values: the batch is written before the
     * request is answered, and nothing changes them meanwhile. */
    json_t *row = json_object();
    json_object_set_new(row, "id", json_string(r->parsed.response_id));
    fe_chat_store_set(row, "account_id", json_object_get(r->key, "account_id"));
    fe_chat_store_set(row, "key_id", json_object_get(r->key, "key_id"));
    json_object_set_new(row, "model", json_string(r->parsed.model_id));
    fe_chat_store_set(row, "body", (json_t *)rendered);
    fe_chat_store_set(row, "messages", json_object_get(r->body, "messages"));
    fe_chat_store_set(row, "metadata", json_object_get(r->parsed.canonical, "metadata"));
    fe_storebatch_add(r->srv->chat_store, row, done, r);
}
