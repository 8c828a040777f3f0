/*
 * wsql_containers: the code interpreter's statements (schema/005): a
 * container's files read into a sandbox, the files its code wrote written
 * back, a container made on first use (container "auto"). Each takes the
 * job's account.
 */
#ifndef WSQL_CONTAINERS_H
#define WSQL_CONTAINERS_H

#include "sb_db.h"

#define SB_WSQL_CONTAINER_FILES "container_files"
#define SB_WSQL_CONTAINER_CREATE "container_create"
#define SB_WSQL_CONTAINER_FILE_PUT "container_file_put"

extern const sb_db_stmt_t sb_wsql_container_statements[];
extern const int sb_wsql_container_statement_count;

#endif
