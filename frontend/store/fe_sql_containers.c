/* fe_sql_containers: the Containers API's statements (fe_sql_containers.h). */
#include "fe_sql_containers.h"

/* $1 container id, $2 account -> the container object as OpenAI shows it. */
static const char fe_sql_container_get[] =
    "SELECT json_build_object('id', id, 'object', 'container', 'name', name, "
    "  'status', CASE WHEN last_active_at + make_interval(mins => expires_minutes) < now() THEN 'expired' "
    "    ELSE 'running' END, "
    "  'created_at', extract(epoch FROM created_at)::bigint, "
    "  'last_active_at', extract(epoch FROM last_active_at)::bigint, "
    "  'expires_after', json_build_object('anchor', 'last_active_at', 'minutes', expires_minutes), "
    "  'memory_limit', memory_limit, 'network_policy', COALESCE(network_policy, '{\"type\":\"disabled\"}')) "
    "FROM containers WHERE id = $1 AND account_id = $2";

const sb_db_stmt_t fe_sql_container_statements[] = {
    {FE_SQL_CONTAINER_GET, fe_sql_container_get},
};
const int fe_sql_container_statement_count =
    (int)(sizeof fe_sql_container_statements / sizeof fe_sql_container_statements[0]);
