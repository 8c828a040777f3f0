/* fe_sql_conversations: the Conversations API's statements (fe_sql_conversations.h). */
#include "fe_sql_conversations.h"

static const char fe_sql_conv_create[] = "SELECT sb_conversation_create($1, $2::bigint, $3::jsonb, $4::jsonb)";

static const char fe_sql_conv_get[] =
    "SELECT sb_conversation_json(c) FROM conversations c WHERE c.id = $1 AND c.account_id = $2";

static const char fe_sql_conv_update[] =
    "UPDATE conversations c SET metadata = $3::jsonb WHERE c.id = $1 AND c.account_id = $2 "
    "RETURNING sb_conversation_json(c)";

static const char fe_sql_conv_delete[] = "DELETE FROM conversations WHERE id = $1 AND account_id = $2 RETURNING id";

static const char fe_sql_conv_items[] =
    "SELECT COALESCE((SELECT jsonb_agg(i.item ORDER BY i.seq) FROM conversation_items i "
    "  WHERE i.conversation_id = c.id), '[]'::jsonb) FROM conversations c WHERE c.id = $1 AND c.account_id = $2";

static const char fe_sql_conv_append[] = "SELECT sb_conversation_append($1, $2::bigint, $3::jsonb)";

static const char fe_sql_conv_item_get[] =
    "SELECT true, (SELECT i.item FROM conversation_items i WHERE i.conversation_id = c.id AND i.item_id = $3 "
    "  ORDER BY i.seq LIMIT 1) FROM conversations c WHERE c.id = $1 AND c.account_id = $2";

static const char fe_sql_conv_item_delete[] =
    "SELECT outcome, conversation FROM sb_conversation_item_delete($1, $2::bigint, $3)";

const sb_db_stmt_t fe_sql_conversation_statements[] = {
    {FE_SQL_CONV_CREATE, fe_sql_conv_create},     {FE_SQL_CONV_GET, fe_sql_conv_get},
    {FE_SQL_CONV_UPDATE, fe_sql_conv_update},     {FE_SQL_CONV_DELETE, fe_sql_conv_delete},
    {FE_SQL_CONV_ITEMS, fe_sql_conv_items},       {FE_SQL_CONV_APPEND, fe_sql_conv_append},
    {FE_SQL_CONV_ITEM_GET, fe_sql_conv_item_get}, {FE_SQL_CONV_ITEM_DELETE, fe_sql_conv_item_delete},
};
const int fe_sql_conversation_statement_count =
    (int)(sizeof fe_sql_conversation_statements / sizeof fe_sql_conversation_statements[0]);
