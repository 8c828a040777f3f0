/* wsql_containers: the code interpreter's statements (wsql_containers.h). */
#include "wsql_containers.h"

/* $1 container id, $2 account -> one row per file: path, content (binary
 * result), or no row when the container is another account's, gone or
 * expired. Reading marks the container active. */
static const char sb_wsql_container_files[] =
    "WITH c AS (UPDATE containers SET last_active_at = now() WHERE id = $1 AND account_id = $2::bigint "
    "  AND last_active_at + make_interval(mins => expires_minutes) >= now() RETURNING id) "
    "SELECT f.path, f.content FROM container_files f JOIN c ON c.id = f.container_id ORDER BY f.path";

const sb_db_stmt_t sb_wsql_container_statements[] = {
    {SB_WSQL_CONTAINER_FILES, sb_wsql_container_files},
};
const int sb_wsql_container_statement_count =
    (int)(sizeof sb_wsql_container_statements / sizeof sb_wsql_container_statements[0]);
