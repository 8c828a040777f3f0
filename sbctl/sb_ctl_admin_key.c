/*
 * sb_ctl_admin_key: "sbctl admin-key create|list|disable|enable". Admin keys
 * (schema/014_admin.sql) open the frontends' admin API and web console and
 * nothing else. Like API keys, the secret exists only here, between making
 * it and printing it; the database keeps its SHA-256 and display prefix.
 */
#include <errno.h>
#include <string.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"
#include "sb_keyhash.h"

int sb_ctl_admin_key_create(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char secret[SB_ADMIN_KEY_LEN + 1];
    char hash[SB_KEY_HASH_HEX];
    char display[64];
    sb_admin_key_generate(secret);
    sb_key_hash(secret, strlen(secret), hash);
    sb_key_display(secret, display, sizeof display);
    const char *params[] = {sb_ctl_actor(), hash, display, cli->name ? cli->name : ""};
    int rc = -EIO;
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_admin_key_create($1, $2, $3, $4)", 4, params);
    if (!res || PQntuples(res) != 1)
        goto fail;
    /* stdout carries the secret alone (KEY=$(sbctl admin-key create)). */
    printf("%s\n", secret);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "sbctl: could not write the key to stdout; disable admin key %s\n", PQgetvalue(res, 0, 0));
        goto fail;
    }
    fprintf(stderr, "sbctl: created admin key %s (%s); the secret is not shown again\n", PQgetvalue(res, 0, 0),
            display);
    rc = 0;
fail:
    explicit_bzero(secret, sizeof secret);
    PQclear(res);
    return rc;
}

int sb_ctl_admin_key_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    (void)cli;
    return sb_ctl_print_query(db,
                              "SELECT id, display_prefix AS key, enabled::text AS enabled, "
                              "to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created, "
                              "name FROM admin_keys ORDER BY id",
                              0, NULL);
}

static int sb_ctl_admin_key_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", cli->key_id);
    const char *params[] = {sb_ctl_actor(), id, enabled ? "true" : "false"};
    PGresult *res =
        sb_ctldb_exec(db, "SELECT * FROM sb_admin_admin_key_set_enabled($1, $2::bigint, $3::boolean)", 3, params);
    if (!res)
        return -EIO;
    int rc = 0;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: admin key %lld does not exist\n", cli->key_id);
        rc = -ENOENT;
    } else {
        printf("admin key %lld (%s) %s\n", cli->key_id, PQgetvalue(res, 0, 0), enabled ? "enabled" : "disabled");
    }
    PQclear(res);
    return rc;
}

int sb_ctl_admin_key_disable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_admin_key_set_enabled(db, cli, false);
}

int sb_ctl_admin_key_enable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_admin_key_set_enabled(db, cli, true);
}
