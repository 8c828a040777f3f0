/*
 * fe_sql_containers: the Containers API's statements (schema/005). Every
 * statement takes the owning account and scopes to it: another account's
 * container is not found. A container's status is computed, never stored:
 * 'expired' once idle for expires_minutes. Using a running container (any
 * operation on it or its files, as OpenAI's) moves its last_active_at; an
 * expired one is never moved, so it stays expired.
 */
#ifndef FE_SQL_CONTAINERS_H
#define FE_SQL_CONTAINERS_H

#include "sb_db.h"

/* $1 id, $2 account -> the container object (a pure read). */
#define FE_SQL_CONTAINER_GET "container_get"
/* $1 id, $2 account -> the container object, marked active when running. */
#define FE_SQL_CONTAINER_RETRIEVE "container_retrieve"
/* $1 id, $2 account, $3 name, $4 memory limit, $5 minutes, $6 network
 * policy (JSON) or NULL, $7 JSON array of {file_id, id, path}: the /v1/files
 * files copied in -> the container object. */
#define FE_SQL_CONTAINER_CREATE "container_create"
/* $1 account, $2 JSON array of /v1/files ids -> id, filename, bytes of
 * those that are the account's. */
#define FE_SQL_CONTAINER_FILES_META "container_files_meta"
/* $1 account, $2 limit + 1, $3 'asc'|'desc', $4 after id or NULL, $5 name
 * or NULL -> a JSON array of container objects. */
#define FE_SQL_CONTAINER_LIST "container_list"
/* $1 id, $2 account -> the id when deleted (its files go with it). */
#define FE_SQL_CONTAINER_DELETE "container_delete"

/* The container file statements answer one row when the container is the
 * account's (none otherwise), whose first column is whether it is expired;
 * only when it is not do they read, write or delete, and mark it active. */

/* $1 container, $2 account, $3 /v1/files id -> expired, filename, bytes
 * (NULL when the file is not the account's). Marks nothing. */
#define FE_SQL_CFILE_SOURCE "cfile_source"
/* $1 container, $2 account, $3 new id, $4 path, $5 content (base64) or
 * NULL, $6 the /v1/files id to copy when $5 is NULL, $7 most files, $8 most
 * bytes -> outcome ('ok', 'expired', 'file_missing', 'too_many',
 * 'too_large'), the container file object when ok. A file at the same path
 * is replaced (a new id, as OpenAI's). */
#define FE_SQL_CFILE_INSERT "cfile_insert"
/* $1 container, $2 account, $3 limit + 1, $4 'asc'|'desc', $5 after id or
 * NULL -> expired, a JSON array of container file objects. */
#define FE_SQL_CFILE_LIST "cfile_list"
/* $1 container, $2 account, $3 file id -> expired, the object or NULL. */
#define FE_SQL_CFILE_GET "cfile_get"
/* $1 container, $2 account, $3 file id -> expired, path, content (base64,
 * one line), both NULL when there is no such file. */
#define FE_SQL_CFILE_CONTENT "cfile_content"
/* $1 container, $2 account, $3 file id -> expired, the id when deleted. */
#define FE_SQL_CFILE_DELETE "cfile_delete"

extern const sb_db_stmt_t fe_sql_container_statements[];
extern const int fe_sql_container_statement_count;

#endif
