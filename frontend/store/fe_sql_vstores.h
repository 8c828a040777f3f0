/*
 * fe_sql_vstores: the Vector Stores API's statements (schema/006). Every
 * statement takes the owning account and scopes to it: another account's
 * vector store is not found.
 */
#ifndef FE_SQL_VSTORES_H
#define FE_SQL_VSTORES_H

#include "sb_db.h"

#define FE_SQL_VSTORE_GET "vstore_get"

extern const sb_db_stmt_t fe_sql_vstore_statements[];
extern const int fe_sql_vstore_statement_count;

#endif
