/*
 * sb_ctl_search: "sbctl search-backend add|list|remove|set-default|disable|
 * enable". A search backend (schema/004_tools.sql) is where gateway-run web
 * search sends its queries: a kind (searxng, brave, tavily), the operator's
 * base URL and the NAME of the workers' environment variable holding its API
 * key. Web search uses the default backend while it is enabled; there is at
 * most one default (a partial unique index), so every change of the default
 * runs in one transaction holding a lock that serialises such changes. The
 * changes are the sb_admin_search_backend_* rules (schema/015), which the
 * admin API calls too.
 *
 * The table's trigger announces each change on 'sb_config', so running
 * frontends pick it up at once (they cache the default with each model).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"

/* Blocks other writers (and another sbctl changing the default) until the
 * transaction ends; readers go on. */
#define SB_CTL_SEARCH_LOCK "LOCK TABLE search_backends IN SHARE ROW EXCLUSIVE MODE"

/* Inside a transaction: makes name the default. Returns 0, -ENOENT (said),
 * or -EIO; *enabled says whether it is enabled. */
static int sb_ctl_search_make_default(struct sb_ctldb *db, const char *name, bool *enabled)
{
    const char *params[] = {sb_ctl_actor(), name};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_search_backend_set_default($1, $2)", 2, params);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    *enabled = found && !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: search backend '%s' does not exist\n", name);
        return -ENOENT;
    }
    return 0;
}

static void sb_ctl_search_warn_disabled(const char *name)
{
    fprintf(stderr,
            "sbctl: warning: search backend '%s' is disabled: web search stays off until "
            "'sbctl search-backend enable %s'\n",
            name, name);
}

/* Whether some backend is the enabled default; false on a database error. */
static bool sb_ctl_search_has_default(struct sb_ctldb *db)
{
    PGresult *res = sb_ctldb_exec(db, "SELECT 1 FROM search_backends WHERE is_default AND enabled", 0, NULL);
    bool yes = res && PQntuples(res) > 0;
    PQclear(res);
    return yes;
}

int sb_ctl_search_backend_add(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *name = cli->arg[0];
    bool enabled = true;
    int rc = -EIO;
    if (sb_ctldb_run(db, "BEGIN", 0, NULL) != 0 || sb_ctldb_run(db, SB_CTL_SEARCH_LOCK, 0, NULL) != 0)
        goto fail;
    const char *params[] = {sb_ctl_actor(), name, cli->kind, cli->base_url, cli->credential_ref};
    rc = sb_ctl_insert_new(db, cli, "search backend", name, "",
                           "SELECT * FROM sb_admin_search_backend_add($1, $2, $3, $4, $5)", 5, params);
    if (rc <= 0)
        goto fail; /* also ends the transaction; an existing backend is left unchanged */
    if (cli->make_default && (rc = sb_ctl_search_make_default(db, name, &enabled)) != 0)
        goto fail;
    rc = -EIO;
    if (sb_ctldb_run(db, "COMMIT", 0, NULL) != 0)
        goto fail;
    printf("search backend %s added (%s, %s)%s\n", name, cli->kind, cli->base_url,
           cli->make_default ? ", the default" : "");
    if (!cli->make_default && !sb_ctl_search_has_default(db))
        fprintf(stderr,
                "sbctl: note: there is no default search backend, so gateway web search is off: "
                "'sbctl search-backend set-default %s'\n",
                name);
    return 0;

fail:
    sb_ctldb_rollback(db);
    return rc;
}

int sb_ctl_search_backend_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    (void)cli;
    return sb_ctl_print_query(db,
                              "SELECT id, name, kind, base_url, credential_ref AS credential, "
                              "is_default::text AS \"default\", enabled::text AS enabled, "
                              "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created "
                              "FROM search_backends ORDER BY name",
                              0, NULL);
}

int sb_ctl_search_backend_remove(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *name = cli->arg[0];
    const char *params[] = {sb_ctl_actor(), name};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_search_backend_remove($1, $2)", 2, params);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    bool was_default = found && !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: search backend '%s' does not exist\n", name);
        return -ENOENT;
    }
    printf("search backend %s removed%s\n", name,
           was_default ? " (it was the default: gateway web search is off until another is set-default)" : "");
    return 0;
}

int sb_ctl_search_backend_set_default(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *name = cli->arg[0];
    bool enabled = true;
    int rc = -EIO;
    if (sb_ctldb_run(db, "BEGIN", 0, NULL) != 0 || sb_ctldb_run(db, SB_CTL_SEARCH_LOCK, 0, NULL) != 0)
        goto fail;
    if ((rc = sb_ctl_search_make_default(db, name, &enabled)) != 0)
        goto fail;
    rc = -EIO;
    if (sb_ctldb_run(db, "COMMIT", 0, NULL) != 0)
        goto fail;
    printf("search backend %s is the default\n", name);
    if (!enabled)
        sb_ctl_search_warn_disabled(name);
    return 0;

fail:
    sb_ctldb_rollback(db);
    return rc;
}

static int sb_ctl_search_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled)
{
    const char *name = cli->arg[0];
    const char *params[] = {sb_ctl_actor(), name, enabled ? "true" : "false"};
    PGresult *res =
        sb_ctldb_exec(db, "SELECT * FROM sb_admin_search_backend_set_enabled($1, $2, $3::boolean)", 3, params);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    bool is_default = found && !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: search backend '%s' does not exist\n", name);
        return -ENOENT;
    }
    printf("search backend %s %s\n", name, enabled ? "enabled" : "disabled");
    if (!enabled && is_default)
        sb_ctl_search_warn_disabled(name);
    return 0;
}

int sb_ctl_search_backend_disable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_search_set_enabled(db, cli, false);
}

int sb_ctl_search_backend_enable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_search_set_enabled(db, cli, true);
}
