/*
 * sb_ctl_key: "sbctl key create|list|disable|enable|set-group". A key's
 * secret exists only in this process, for the moment between generating it
 * and printing it; the database gets its SHA-256 (sb_key_hash) and the display
 * prefix (sb_key_display).
 */
#include <errno.h>
#include <string.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"
#include "sb_keyhash.h"

int sb_ctl_key_create(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char secret[SB_KEY_LEN + 1];
    char hash[SB_KEY_HASH_HEX];
    char display[64];
    char aid[32], gid[32];
    bool account_enabled = true;
    PGresult *res = NULL;
    int rc = sb_ctl_account_id(db, cli->account, aid, &account_enabled);
    if (rc != 0)
        goto fail;
    rc = sb_ctl_group_id(db, cli->group, gid);
    if (rc != 0)
        goto fail;

    sb_key_generate(secret);
    sb_key_hash(secret, strlen(secret), hash);
    sb_key_display(secret, display, sizeof display);
    const char *params[] = {sb_ctl_actor(), aid, gid, hash, display, cli->name ? cli->name : ""};
    rc = -EIO;
    res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_key_create($1, $2::bigint, $3::bigint, $4, $5, $6)", 6, params);
    if (!res)
        goto fail;
    /* stdout carries the secret alone, so KEY=$(sbctl key create ...) works;
     * the rest goes to stderr. */
    printf("%s\n", secret);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "sbctl: could not write the key to stdout; key id %s is unusable, disable it\n",
                PQgetvalue(res, 0, 0));
        goto fail;
    }
    fprintf(stderr, "sbctl: created key %s (%s) for account %s, group %s; the secret is not shown again\n",
            PQgetvalue(res, 0, 0), display, cli->account, cli->group);
    if (!account_enabled)
        fprintf(stderr, "sbctl: warning: account '%s' is disabled; the key will not work until it is enabled\n",
                cli->account);
    rc = 0;

fail:
    explicit_bzero(secret, sizeof secret);
    PQclear(res);
    return rc;
}

int sb_ctl_key_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char aid[32];
    if (cli->account) {
        int rc = sb_ctl_account_id(db, cli->account, aid, NULL);
        if (rc != 0)
            return rc;
    }
    /* The label comes last: it is the one column that may contain spaces. */
    static const char sql[] = "SELECT k.id, k.display_prefix AS key, a.name AS account, g.name AS \"group\", "
                              "k.enabled::text AS enabled, "
                              "to_char(k.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created, "
                              "k.name AS name "
                              "FROM api_keys k "
                              "JOIN accounts a ON a.id = k.account_id "
                              "JOIN token_groups g ON g.id = k.group_id "
                              "WHERE $1::bigint IS NULL OR k.account_id = $1::bigint "
                              "ORDER BY k.id";
    const char *params[] = {cli->account ? aid : NULL};
    return sb_ctl_print_query(db, sql, 1, params);
}

static int sb_ctl_key_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled)
{
    char id[32];
    snprintf(id, sizeof id, "%lld", cli->key_id);
    const char *params[] = {sb_ctl_actor(), id, enabled ? "true" : "false"};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_key_set_enabled($1, $2::bigint, $3::boolean)", 3, params);
    if (!res)
        return -EIO;
    int rc = 0;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: key %lld does not exist\n", cli->key_id);
        rc = -ENOENT;
    } else {
        printf("key %lld (%s) %s\n", cli->key_id, PQgetvalue(res, 0, 0), enabled ? "enabled" : "disabled");
    }
    PQclear(res);
    return rc;
}

int sb_ctl_key_disable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_key_set_enabled(db, cli, false);
}

int sb_ctl_key_enable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_key_set_enabled(db, cli, true);
}

int sb_ctl_key_set_group(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char gid[32];
    int rc = sb_ctl_group_id(db, cli->arg[1], gid);
    if (rc != 0)
        return rc;
    char id[32];
    snprintf(id, sizeof id, "%lld", cli->key_id);
    const char *params[] = {sb_ctl_actor(), id, gid};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_key_set_group($1, $2::bigint, $3::bigint)", 3, params);
    if (!res)
        return -EIO;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: key %lld does not exist\n", cli->key_id);
        rc = -ENOENT;
    } else {
        printf("key %lld (%s) now in group %s\n", cli->key_id, PQgetvalue(res, 0, 0), cli->arg[1]);
    }
    PQclear(res);
    return rc;
}
