/*
 * fe_sql_containers: the Containers API's statements (schema/005). Every
 * statement takes the owning account and scopes to it: another account's
 * container is not found. A container's status is computed, never stored:
 * 'expired' once idle for expires_minutes.
 */
#ifndef FE_SQL_CONTAINERS_H
#define FE_SQL_CONTAINERS_H

#include "sb_db.h"

#define FE_SQL_CONTAINER_GET "container_get"

extern const sb_db_stmt_t fe_sql_container_statements[];
extern const int fe_sql_container_statement_count;

#endif
