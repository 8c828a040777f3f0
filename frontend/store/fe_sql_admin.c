/*
 * fe_sql_admin: see fe_sql_admin.h.
 */
#include "fe_sql_admin.h"

const sb_db_stmt_t fe_sql_admin_statements[] = {
    {FE_SQL_ADMIN_AUTH, "SELECT id FROM admin_keys WHERE key_hash = $1 AND enabled"},
    {FE_SQL_ADMIN_API, "SELECT status, body FROM sb_admin_api($1, $2, $3::jsonb)"},
};
const int fe_sql_admin_statement_count = (int)(sizeof fe_sql_admin_statements / sizeof fe_sql_admin_statements[0]);
