/*
 * sb_ctl_group: "sbctl group create|list|allow|deny". A token group's
 * group_models rows are the models its keys may call; '*' allows every model.
 */
#include <errno.h>
#include <string.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"

int sb_ctl_group_create(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *name = cli->arg[0];
    const char *params[] = {sb_ctl_actor(), name};
    int rc = sb_ctl_insert_new(db, cli, "group", name, "", "SELECT * FROM sb_admin_group_create($1, $2)", 2, params);
    if (rc <= 0)
        return rc;
    printf("group %s created (allows no model yet: sbctl group allow %s MODEL)\n", name, name);
    return 0;
}

int sb_ctl_group_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    static const char sql[] = "SELECT g.id, g.name, string_agg(m.model_id, ',' ORDER BY m.model_id) AS models, "
                              "(SELECT count(*) FROM api_keys k WHERE k.group_id = g.id) AS keys, "
                              "to_char(g.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created "
                              "FROM token_groups g LEFT JOIN group_models m ON m.group_id = g.id "
                              "GROUP BY g.id ORDER BY g.name";
    return sb_ctl_print_query(db, sql, 0, NULL);
}

int sb_ctl_group_allow(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *group = cli->arg[0], *model = cli->arg[1];
    char gid[32];
    int rc = sb_ctl_group_id(db, group, gid);
    if (rc != 0)
        return rc;
    if (strcmp(model, "*") != 0) {
        /* Allowing a model before adding it is legitimate; a typo is more
         * likely, so say so without failing. */
        const char *mp[] = {model};
        PGresult *res = sb_ctldb_exec(db, "SELECT 1 FROM models WHERE id = $1", 1, mp);
        if (!res)
            return -EIO;
        if (PQntuples(res) == 0)
            fprintf(stderr, "sbctl: warning: model '%s' does not exist (yet); allowing it anyway\n", model);
        PQclear(res);
    }
    const char *params[] = {sb_ctl_actor(), gid, model};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_group_allow($1, $2::bigint, $3)", 3, params);
    if (!res)
        return -EIO;
    int inserted = PQntuples(res);
    PQclear(res);
    printf("group %s %s %s\n", group, inserted ? "now allows" : "already allows", model);
    return 0;
}

int sb_ctl_group_deny(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *group = cli->arg[0], *model = cli->arg[1];
    char gid[32];
    int rc = sb_ctl_group_id(db, group, gid);
    if (rc != 0)
        return rc;
    const char *params[] = {sb_ctl_actor(), gid, model};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_group_deny($1, $2::bigint, $3)", 3, params);
    if (!res)
        return -EIO;
    int deleted = PQntuples(res);
    PQclear(res);
    if (!deleted) {
        fprintf(stderr, "sbctl: group '%s' does not list model '%s'%s\n", group, model,
                strcmp(model, "*") ? " (a '*' entry, if any, still allows it)" : "");
        return -ENOENT;
    }
    printf("group %s no longer allows %s\n", group, model);
    return 0;
}
