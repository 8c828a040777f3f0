/*
 * fe_sql: the SQL statements the frontend runs (with fe_sql_containers and
 * fe_sql_vstores, one file per API that has many), prepared on each pooled
 * connection at connect. All values travel as parameters.
 */
#ifndef FE_SQL_H
#define FE_SQL_H

#include "sb_db.h"

#define FE_SQL_KEY_LOOKUP "key_lookup"
#define FE_SQL_LIMIT_ADMIT "limit_admit"
#define FE_SQL_LIMIT_RELEASE "limit_release"
#define FE_SQL_LIMIT_BLOCK "limit_block"
#define FE_SQL_MODEL_LOOKUP "model_lookup"
#define FE_SQL_MODEL_LIST "model_list"
#define FE_SQL_REQLOG_INSERT "reqlog_insert"
#define FE_SQL_RESPONSE_CONTEXT "response_context"
#define FE_SQL_RESPONSE_SAVE "response_save"
#define FE_SQL_RESPONSE_GET "response_get"
#define FE_SQL_RESPONSE_DELETE "response_delete"
#define FE_SQL_RESPONSE_INPUT_ITEMS "response_input_items"
#define FE_SQL_PROMPT_GET "prompt_get"
#define FE_SQL_FILE_INSERT "file_insert"
#define FE_SQL_FILE_GET "file_get"
#define FE_SQL_FILE_CONTENT "file_content"
#define FE_SQL_FILE_DELETE "file_delete"
#define FE_SQL_FILE_LIST "file_list"
#define FE_SQL_FILES_RESOLVE "files_resolve"
#define FE_SQL_CHAT_SAVE "chat_save"
#define FE_SQL_CHAT_GET "chat_get"
#define FE_SQL_CHAT_MESSAGES "chat_messages"
#define FE_SQL_CHAT_DELETE "chat_delete"
#define FE_SQL_CHAT_UPDATE "chat_update"
#define FE_SQL_CHAT_LIST "chat_list"

/* Most statements the frontend prepares (every set together). */
#define FE_SQL_MAX_STATEMENTS 128

/* Every statement the frontend prepares at connect: this file's, then the
 * Containers API's (fe_sql_containers.h) and the Vector Stores API's
 * (fe_sql_vstores.h). Static storage; *count is set. */
const sb_db_stmt_t *fe_sql_all(int *count);

/* The request-log insert as plain SQL, for the blocking shutdown flush. */
extern const char fe_sql_reqlog_insert_sql[];

#endif
