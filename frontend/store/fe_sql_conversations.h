/*
 * fe_sql_conversations: the Conversations API's statements
 * (schema/012_conversations.sql). Every statement takes the owning account
 * and scopes to it: another account's conversation is not found.
 */
#ifndef FE_SQL_CONVERSATIONS_H
#define FE_SQL_CONVERSATIONS_H

#include "sb_db.h"

/* $1 id, $2 account, $3 metadata (JSON object), $4 items (JSON array) -> the conversation object. */
#define FE_SQL_CONV_CREATE "conv_create"
/* $1 id, $2 account -> the conversation object. */
#define FE_SQL_CONV_GET "conv_get"
/* $1 id, $2 account, $3 metadata -> the updated object. */
#define FE_SQL_CONV_UPDATE "conv_update"
/* $1 id, $2 account -> the id when deleted (its items go with it). */
#define FE_SQL_CONV_DELETE "conv_delete"
/* $1 id, $2 account -> every item in order (JSON array); no row when not the account's. */
#define FE_SQL_CONV_ITEMS "conv_items"
/* $1 id, $2 account, $3 items (JSON array) -> the items appended, NULL when not the account's. */
#define FE_SQL_CONV_APPEND "conv_append"
/* $1 id, $2 account, $3 item id -> conversation found (bool), the item or NULL. */
#define FE_SQL_CONV_ITEM_GET "conv_item_get"
/* $1 id, $2 account, $3 item id -> outcome, the conversation object (sb_conversation_item_delete). */
#define FE_SQL_CONV_ITEM_DELETE "conv_item_delete"

extern const sb_db_stmt_t fe_sql_conversation_statements[];
extern const int fe_sql_conversation_statement_count;

#endif
