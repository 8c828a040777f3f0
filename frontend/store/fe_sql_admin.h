/*
 * fe_sql_admin: the admin API's statements (schema/014_admin.sql,
 * 015_admin_api.sql).
 */
#ifndef FE_SQL_ADMIN_H
#define FE_SQL_ADMIN_H

#include "sb_db.h"

/* $1 key hash -> the enabled admin key's id. */
#define FE_SQL_ADMIN_AUTH "admin_auth"
/* $1 actor, $2 operation, $3 arguments (JSON object) -> status, body (JSON). */
#define FE_SQL_ADMIN_API "admin_api"

extern const sb_db_stmt_t fe_sql_admin_statements[];
extern const int fe_sql_admin_statement_count;

#endif
