/*
 * sb_ctl: command dispatch and the lookups the command files share.
 */
#include "sb_ctl.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_migrate.h"

static int sb_ctl_migrate(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char *dir = cli->dir ? sb_xstrdup(cli->dir) : sb_migrate_default_dir();
    if (!dir) {
        fprintf(stderr, "sbctl: cannot find the schema directory; pass --dir DIR or set SB_SCHEMA_DIR\n");
        return -ENOENT;
    }
    int rc = sb_migrate_run(db, dir);
    free(dir);
    return rc;
}

int sb_ctl_run(struct sb_ctldb *db, const struct sb_cli *cli)
{
    switch (cli->cmd) {
    case SB_CLI_HELP:
        sb_cli_usage(stdout, cli->help_group, cli->help_verb);
        return 0;
    case SB_CLI_MIGRATE:
        return sb_ctl_migrate(db, cli);
    case SB_CLI_ACCOUNT_CREATE:
        return sb_ctl_account_create(db, cli);
    case SB_CLI_ACCOUNT_LIST:
        return sb_ctl_account_list(db, cli);
    case SB_CLI_ACCOUNT_DISABLE:
        return sb_ctl_account_set_enabled(db, cli, false);
    case SB_CLI_ACCOUNT_ENABLE:
        return sb_ctl_account_set_enabled(db, cli, true);
    case SB_CLI_GROUP_CREATE:
        return sb_ctl_group_create(db, cli);
    case SB_CLI_GROUP_LIST:
        return sb_ctl_group_list(db, cli);
    case SB_CLI_GROUP_ALLOW:
        return sb_ctl_group_allow(db, cli);
    case SB_CLI_GROUP_DENY:
        return sb_ctl_group_deny(db, cli);
    case SB_CLI_KEY_CREATE:
        return sb_ctl_key_create(db, cli);
    case SB_CLI_KEY_LIST:
        return sb_ctl_key_list(db, cli);
    case SB_CLI_KEY_DISABLE:
        return sb_ctl_key_set_enabled(db, cli, false);
    case SB_CLI_KEY_ENABLE:
        return sb_ctl_key_set_enabled(db, cli, true);
    case SB_CLI_KEY_SET_GROUP:
        return sb_ctl_key_set_group(db, cli);
    case SB_CLI_MODEL_ADD:
        return sb_ctl_model_add(db, cli);
    case SB_CLI_MODEL_LIST:
        return sb_ctl_model_list(db, cli);
    case SB_CLI_MODEL_DISABLE:
        return sb_ctl_model_set_enabled(db, cli, false);
    case SB_CLI_MODEL_ENABLE:
        return sb_ctl_model_set_enabled(db, cli, true);
    case SB_CLI_MODEL_SET:
        return sb_ctl_model_set(db, cli);
    case SB_CLI_MODEL_FALLBACK:
        return sb_ctl_model_fallback(db, cli);
    case SB_CLI_PROMPT_CREATE:
        return sb_ctl_prompt_create(db, cli);
    case SB_CLI_PROMPT_VERSION:
        return sb_ctl_prompt_version(db, cli);
    case SB_CLI_PROMPT_SET_CURRENT:
        return sb_ctl_prompt_set_current(db, cli);
    case SB_CLI_PROMPT_LIST:
        return sb_ctl_prompt_list(db, cli);
    case SB_CLI_PROMPT_SHOW:
        return sb_ctl_prompt_show(db, cli);
    case SB_CLI_LIMITS_SET:
        return sb_ctl_limits_set(db, cli);
    case SB_CLI_LIMITS_SHOW:
        return sb_ctl_limits_show(db, cli);
    case SB_CLI_LIMITS_RESET_USAGE:
        return sb_ctl_limits_reset_usage(db, cli);
    }
    fprintf(stderr, "sbctl: internal error: unhandled command %d\n", (int)cli->cmd);
    return -EINVAL;
}

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
