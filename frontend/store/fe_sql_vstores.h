/*
 * fe_sql_vstores: the Vector Stores API's statements (schema/006). Every
 * statement a client's request runs takes the owning account and scopes to
 * it: another account's vector store (and so its files, batches and chunks)
 * is not found. The one exception is FE_SQL_VSTORE_INGEST_FAILED, which the
 * frontend runs for an ingestion job it submitted itself.
 */
#ifndef FE_SQL_VSTORES_H
#define FE_SQL_VSTORES_H

#include "sb_db.h"

#define FE_SQL_VSTORE_GET "vstore_get"
#define FE_SQL_VSTORE_CREATE "vstore_create"
#define FE_SQL_VSTORE_LIST "vstore_list"
#define FE_SQL_VSTORE_UPDATE "vstore_update"
#define FE_SQL_VSTORE_DELETE "vstore_delete"
#define FE_SQL_VSTORE_USE "vstore_use"
#define FE_SQL_VSTORE_FILES_ADD "vstore_files_add"
#define FE_SQL_VSTORE_FILE_GET "vstore_file_get"
#define FE_SQL_VSTORE_FILE_UPDATE "vstore_file_update"
#define FE_SQL_VSTORE_FILE_DELETE "vstore_file_delete"
#define FE_SQL_VSTORE_FILE_LIST "vstore_file_list"
#define FE_SQL_VSTORE_FILE_CONTENT "vstore_file_content"
#define FE_SQL_VSTORE_BATCH_GET "vstore_batch_get"
#define FE_SQL_VSTORE_BATCH_CANCEL "vstore_batch_cancel"
#define FE_SQL_VSTORE_INGEST_FAILED "vstore_ingest_failed"

extern const sb_db_stmt_t fe_sql_vstore_statements[];
extern const int fe_sql_vstore_statement_count;

#endif
