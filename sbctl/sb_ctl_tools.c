/*
 * sb_ctl_tools: "sbctl tools log": the latest rows of tool_calls
 * (schema/004_tools.sql), one per built-in tool call a worker ran for a
 * request, newest first. The rows hold no argument or result content, so
 * neither does the listing; for sums per day there is the tool_use_daily
 * view.
 */
#include <errno.h>
#include <stdio.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"

int sb_ctl_tools_log(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* error last: it may contain spaces. */
    static const char sql[] =
        "SELECT to_char(t.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS time, t.request_id, "
        "a.name AS account, t.model, t.kind, t.server, t.name, t.outcome, t.duration_ms AS ms, t.bytes_in, "
        "t.bytes_out, t.error "
        "FROM tool_calls t LEFT JOIN accounts a ON a.id = t.account_id "
        "WHERE $1::bigint IS NULL OR t.account_id = $1::bigint "
        "ORDER BY t.created_at DESC, t.id DESC LIMIT $2::integer";
    char account[32];
    char limit[16];
    snprintf(limit, sizeof limit, "%d", cli->limit > 0 ? cli->limit : SB_CLI_LOG_LIMIT_DEFAULT);
    if (cli->account) {
        int rc = sb_ctl_account_id(db, cli->account, account, NULL);
        if (rc != 0)
            return rc;
    }
    const char *params[] = {cli->account ? account : NULL, limit};
    return sb_ctl_print_query(db, sql, 2, params);
}
