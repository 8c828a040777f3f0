/* fe_sql_vstores: the Vector Stores API's statements (fe_sql_vstores.h). */
#include "fe_sql_vstores.h"

/* $1 vector store id, $2 account -> the vector store object as OpenAI shows
 * it, with its file counts by status and the bytes its chunks take. */
static const char fe_sql_vstore_get[] =
    "SELECT json_build_object('id', v.id, 'object', 'vector_store', 'name', v.name, "
    "  'created_at', extract(epoch FROM v.created_at)::bigint, "
    "  'last_active_at', extract(epoch FROM v.last_active_at)::bigint, 'metadata', v.metadata, "
    "  'expires_after', v.expires_after, 'expires_at', CASE WHEN v.expires_after IS NULL THEN NULL ELSE "
    "    extract(epoch FROM v.last_active_at)::bigint + 86400 * (v.expires_after->>'days')::bigint END, "
    "  'status', CASE WHEN f.in_progress > 0 THEN 'in_progress' ELSE 'completed' END, "
    "  'usage_bytes', f.usage_bytes, "
    "  'file_counts', json_build_object('in_progress', f.in_progress, 'completed', f.completed, "
    "    'failed', f.failed, 'cancelled', f.cancelled, 'total', f.total)) "
    "FROM vector_stores v, LATERAL (SELECT count(*) FILTER (WHERE status = 'in_progress') AS in_progress, "
    "  count(*) FILTER (WHERE status = 'completed') AS completed, count(*) FILTER (WHERE status = 'failed') AS failed, "
    "  count(*) FILTER (WHERE status = 'cancelled') AS cancelled, count(*) AS total, "
    "  COALESCE(sum(usage_bytes), 0)::bigint AS usage_bytes FROM vector_store_files WHERE vector_store_id = v.id) f "
    "WHERE v.id = $1 AND v.account_id = $2";

const sb_db_stmt_t fe_sql_vstore_statements[] = {
    {FE_SQL_VSTORE_GET, fe_sql_vstore_get},
};
const int fe_sql_vstore_statement_count = (int)(sizeof fe_sql_vstore_statements / sizeof fe_sql_vstore_statements[0]);
