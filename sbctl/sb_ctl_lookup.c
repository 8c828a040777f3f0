/*
 * sb_ctl_lookup: what the command files (sb_ctl_<area>.c) share: name-to-id
 * lookups, a query printed as a table, and the insert of a new named row.
 * It calls no command, so the commands sit above it and the command table
 * (sb_cli.c) above them.
 */
#include "sb_ctl_lookup.h"

#include <pwd.h>
#include <stdlib.h>
#include <unistd.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Runs a one-parameter "SELECT id[, enabled] ... WHERE name = $1" lookup. */
static int sb_ctl_lookup(struct sb_ctldb *db, const char *sql, const char *what, const char *name, char id[32],
                         bool *enabled)
{
    int rc = -EIO;
    const char *params[] = {name};
    PGresult *res = sb_ctldb_exec(db, sql, 1, params);
    if (!res)
        goto fail;
    if (PQntuples(res) != 1) {
        fprintf(stderr, "sbctl: %s '%s' does not exist\n", what, name);
        rc = -ENOENT;
        goto fail;
    }
    snprintf(id, 32, "%s", PQgetvalue(res, 0, 0));
    if (enabled)
        *enabled = PQnfields(res) > 1 && !strcmp(PQgetvalue(res, 0, 1), "t");
    rc = 0;

fail:
    PQclear(res);
    return rc;
}

int sb_ctl_account_id(struct sb_ctldb *db, const char *name, char id[32], bool *enabled)
{
    return sb_ctl_lookup(db, "SELECT id, enabled FROM accounts WHERE name = $1", "account", name, id, enabled);
}

int sb_ctl_group_id(struct sb_ctldb *db, const char *name, char id[32])
{
    return sb_ctl_lookup(db, "SELECT id FROM token_groups WHERE name = $1", "group", name, id, NULL);
}

int sb_ctl_print_query(struct sb_ctldb *db, const char *sql, int nparams, const char *const *params)
{
    PGresult *res = sb_ctldb_exec(db, sql, nparams, params);
    if (!res)
        return -EIO;
    sb_ctldb_print(res, stdout);
    PQclear(res);
    return 0;
}

int sb_ctl_insert_new(struct sb_ctldb *db, const struct sb_cli *cli, const char *what, const char *name,
                      const char *hint, const char *sql, int nparams, const char *const *params)
{
    PGresult *res = sb_ctldb_exec(db, sql, nparams, params);
    if (!res)
        return -EIO;
    int inserted = PQntuples(res);
    PQclear(res);
    if (inserted > 0)
        return 1;
    if (cli->if_not_exists) {
        printf("%s %s already exists%s\n", what, name, hint);
        return 0;
    }
    fprintf(stderr, "sbctl: %s '%s' already exists%s\n", what, name, hint);
    return -EEXIST;
}

const char *sb_ctl_actor(void)
{
    static char actor[96];
    if (!actor[0]) {
        struct passwd *pw = getpwuid(geteuid());
        const char *user = pw && pw->pw_name ? pw->pw_name : getenv("USER");
        snprintf(actor, sizeof actor, "sbctl:%.80s", user && user[0] ? user : "unknown");
    }
    return actor;
}
