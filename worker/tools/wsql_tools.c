/* wsql_tools: the statements the data tools share (wsql_tools.h). */
#include "wsql_tools.h"

/* $1 model id -> its route as a job carries it (sb_job.h), or no row when
 * the model is unknown or disabled. */
static const char sb_wsql_tool_route[] =
    "SELECT json_build_object('provider', provider, 'base_url', base_url, 'upstream_model', upstream_model, "
    "  'credential_ref', credential_ref, 'timeout_ms', timeout_ms, 'capabilities', capabilities) FROM models "
    "WHERE id = $1 AND enabled";

/* $1 vector store id, $2 account -> the route of the store's embeddings
 * model (its queries are embedded with the model its chunks were), or no
 * row when the store is not the account's or the model is gone. */
static const char sb_wsql_store_route[] =
    "SELECT json_build_object('provider', m.provider, 'base_url', m.base_url, 'upstream_model', m.upstream_model, "
    "  'credential_ref', m.credential_ref, 'timeout_ms', m.timeout_ms, 'capabilities', m.capabilities) "
    "FROM vector_stores v JOIN models m ON m.id = v.embedding_model AND m.enabled "
    "WHERE v.id = $1 AND v.account_id = $2::bigint";

const sb_db_stmt_t sb_wsql_tool_statements[] = {
    {SB_WSQL_TOOL_ROUTE, sb_wsql_tool_route},
    {SB_WSQL_STORE_ROUTE, sb_wsql_store_route},
};
const int sb_wsql_tool_statement_count = (int)(sizeof sb_wsql_tool_statements / sizeof sb_wsql_tool_statements[0]);
