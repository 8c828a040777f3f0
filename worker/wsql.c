/* wsql: the worker's statement sets, concatenated (wsql.h). */
#include "wsql.h"

#include "wbg.h"
#include "wsql_containers.h"
#include "wsql_tools.h"
#include "wsql_vstores.h"

/* Built once, at the first call (start-up, before any connection is made),
 * and never freed: it lives as long as the process. */
const sb_db_stmt_t *sb_wsql_all(int *count)
{
    static sb_db_stmt_t all[SB_WSQL_MAX_STATEMENTS];
    static int n;
    if (n == 0) {
        const sb_db_stmt_set_t sets[] = {
            {sb_wsql_container_statements, sb_wsql_container_statement_count},
            {sb_wsql_vstore_statements, sb_wsql_vstore_statement_count},
            {sb_wsql_tool_statements, sb_wsql_tool_statement_count},
            {sb_wsql_bg_statements, sb_wsql_bg_statement_count},
        };
        n = sb_db_stmt_join(all, SB_WSQL_MAX_STATEMENTS, sets, sizeof sets / sizeof sets[0]);
    }
    *count = n;
    return all;
}
