/*
 * sb_ctl_account: "sbctl account create|list|disable|enable".
 */
#include <errno.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"

int sb_ctl_account_create(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *name = cli->arg[0];
    const char *params[] = {sb_ctl_actor(), name, cli->zdr ? "true" : "false"};
    int rc = sb_ctl_insert_new(db, cli, "account", name, "",
                               "SELECT * FROM sb_admin_account_create($1, $2, $3::boolean)", 3, params);
    if (rc <= 0)
        return rc;
    printf("account %s created%s\n", name, cli->zdr ? " (zero data retention)" : "");
    return 0;
}

int sb_ctl_account_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_print_query(db,
                              "SELECT a.id, a.name, a.enabled::text AS enabled, "
                              "a.zero_data_retention::text AS zdr, count(k.id) AS keys, "
                              "to_char(a.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created "
                              "FROM accounts a LEFT JOIN api_keys k ON k.account_id = a.id "
                              "GROUP BY a.id ORDER BY a.name",
                              0, NULL);
}

static int sb_ctl_account_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled)
{
    const char *name = cli->arg[0];
    const char *params[] = {sb_ctl_actor(), name, enabled ? "true" : "false"};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_account_set_enabled($1, $2, $3::boolean)", 3, params);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: account '%s' does not exist\n", name);
        return -ENOENT;
    }
    printf("account %s %s\n", name, enabled ? "enabled" : "disabled");
    return 0;
}

int sb_ctl_account_disable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_account_set_enabled(db, cli, false);
}

int sb_ctl_account_enable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_account_set_enabled(db, cli, true);
}
