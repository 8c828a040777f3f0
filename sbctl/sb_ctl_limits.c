/*
 * sb_ctl_limits: "sbctl limits set|show|reset-usage" (schema/003_limits.sql).
 * A key and its token group each may have requests per minute, tokens per
 * minute and concurrent requests limits (NULL = none); an account may have a
 * token quota, drawn down by account_usage.tokens_used as request_log rows
 * land. Limits are plain column updates, so the tables' NOTIFY triggers tell
 * running frontends; usage is read and written only here and in the
 * frontends' sb_limit_admit / request_log trigger, both under row locks.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sb_ctl.h"
#include "sb_ctl_lookup.h"

/* The parameter pair of one limit option: given or not, and its value. */
static void sb_ctl_limit_param(const struct sb_cli *cli, unsigned bit, long long v, char num[24], const char **given,
                               const char **value)
{
    *given = (cli->given & bit) ? "true" : "false";
    *value = NULL;
    if ((cli->given & bit) && v != SB_CLI_LIMIT_NONE) {
        snprintf(num, 24, "%lld", v);
        *value = num;
    }
}

/* A limit column of a RETURNING row, for the confirmation line. */
static const char *sb_ctl_limit_text(const PGresult *res, int col)
{
    return PQgetisnull(res, 0, col) ? "none" : PQgetvalue(res, 0, col);
}

/* --key or --group: the rate and concurrency limits. */
static int sb_ctl_limits_set_rates(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* For each limit, whether it was given and its new value (NULL = none):
     * a flag rather than a sentinel string (schema/014_admin.sql). */
    static const char sql[] = "SELECT * FROM sb_admin_limits_set($1, $2::bigint, $3, $4::boolean, $5::integer, "
                              "$6::boolean, $7::bigint, $8::boolean, $9::integer)";
    bool is_key = (cli->given & SB_OPT_KEY) != 0;
    char id[24], rpm[24], tpm[24], conc[24];
    const char *params[9];
    snprintf(id, sizeof id, "%lld", cli->key_id);
    params[0] = sb_ctl_actor();
    params[1] = is_key ? id : NULL;
    params[2] = is_key ? NULL : cli->group;
    sb_ctl_limit_param(cli, SB_OPT_RPM, cli->rpm, rpm, &params[3], &params[4]);
    sb_ctl_limit_param(cli, SB_OPT_TPM, cli->tpm, tpm, &params[5], &params[6]);
    sb_ctl_limit_param(cli, SB_OPT_CONCURRENCY, cli->concurrency, conc, &params[7], &params[8]);

    PGresult *res = sb_ctldb_exec(db, sql, 9, params);
    if (!res)
        return -EIO;
    int rc = 0;
    if (PQntuples(res) == 0) {
        if (is_key)
            fprintf(stderr, "sbctl: key %lld does not exist\n", cli->key_id);
        else
            fprintf(stderr, "sbctl: group '%s' does not exist\n", cli->group);
        rc = -ENOENT;
    } else {
        if (is_key)
            printf("key %lld (%s)", cli->key_id, PQgetvalue(res, 0, 0));
        else
            printf("group %s", cli->group);
        printf(" limits: rpm %s, tpm %s, concurrency %s\n", sb_ctl_limit_text(res, 1), sb_ctl_limit_text(res, 2),
               sb_ctl_limit_text(res, 3));
    }
    PQclear(res);
    return rc;
}

/* --account: the token quota. */
static int sb_ctl_limits_set_quota(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* The outer SELECT sees quota_remaining as before the update, so the
     * remainder is computed from the new quota here. */
    static const char sql[] = "SELECT * FROM sb_admin_quota_set($1, $2, $3::bigint)";
    char quota[24];
    const char *given, *params[3];
    sb_ctl_limit_param(cli, SB_OPT_QUOTA_TOKENS, cli->quota_tokens, quota, &given, &params[2]);
    params[0] = sb_ctl_actor();
    params[1] = cli->account;
    PGresult *res = sb_ctldb_exec(db, sql, 3, params);
    if (!res)
        return -EIO;
    int rc = 0;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: account '%s' does not exist\n", cli->account);
        rc = -ENOENT;
    } else if (PQgetisnull(res, 0, 0)) {
        printf("account %s quota: none (%s tokens used)\n", cli->account, PQgetvalue(res, 0, 1));
    } else {
        printf("account %s quota: %s tokens (%s used, %s remaining)\n", cli->account, PQgetvalue(res, 0, 0),
               PQgetvalue(res, 0, 1), PQgetvalue(res, 0, 2));
    }
    PQclear(res);
    return rc;
}

int sb_ctl_limits_set(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* sb_cli_parse made sure of one scope and only the limits it has. */
    if (cli->given & SB_OPT_ACCOUNT)
        return sb_ctl_limits_set_quota(db, cli);
    return sb_ctl_limits_set_rates(db, cli);
}

int sb_ctl_limits_show(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* $1: an account id, or NULL for everything limited. Accounts, then
     * groups, then keys; a key's name is its id and display prefix. USED,
     * IN_FLIGHT and REMAINING are the quota's (tokens), for accounts only. */
    static const char sql[] =
        "SELECT scope, name, account, rpm, tpm, concurrency, quota, used, in_flight, remaining FROM ("
        "SELECT 1 AS o, 'account' AS scope, q.account AS name, q.account AS account, NULL::integer AS rpm, "
        "NULL::bigint AS tpm, NULL::integer AS concurrency, q.quota_tokens AS quota, q.tokens_used AS used, "
        "q.tokens_in_flight AS in_flight, q.tokens_remaining AS remaining, q.account AS sort_name, 0::bigint AS "
        "sort_id "
        "FROM quota_remaining q "
        "WHERE CASE WHEN $1::bigint IS NULL THEN q.quota_tokens IS NOT NULL ELSE q.account_id = $1::bigint END "
        "UNION ALL "
        "SELECT 2, 'group', g.name, NULL, g.rpm_limit, g.tpm_limit, g.concurrency_limit, NULL, NULL, NULL, NULL, "
        "g.name, 0 "
        "FROM token_groups g "
        "WHERE (g.rpm_limit IS NOT NULL OR g.tpm_limit IS NOT NULL OR g.concurrency_limit IS NOT NULL) "
        "AND ($1::bigint IS NULL OR EXISTS (SELECT 1 FROM api_keys k "
        "WHERE k.group_id = g.id AND k.account_id = $1::bigint)) "
        "UNION ALL "
        "SELECT 3, 'key', k.id || ':' || k.display_prefix, a.name, k.rpm_limit, k.tpm_limit, k.concurrency_limit, "
        "NULL, NULL, NULL, NULL, '', k.id "
        "FROM api_keys k JOIN accounts a ON a.id = k.account_id "
        "WHERE (k.rpm_limit IS NOT NULL OR k.tpm_limit IS NOT NULL OR k.concurrency_limit IS NOT NULL) "
        "AND ($1::bigint IS NULL OR k.account_id = $1::bigint)"
        ") t ORDER BY o, sort_name, sort_id";
    char aid[32];
    if (cli->account) {
        int rc = sb_ctl_account_id(db, cli->account, aid, NULL);
        if (rc != 0)
            return rc;
    }
    const char *params[] = {cli->account ? aid : NULL};
    return sb_ctl_print_query(db, sql, 1, params);
}

int sb_ctl_limits_reset_usage(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* The usage row's lock orders the reset against the request_log
     * trigger's draws (sb_admin_usage_reset, schema/015). */
    const char *params[] = {sb_ctl_actor(), cli->account};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_usage_reset($1, $2)", 2, params);
    if (!res)
        return -EIO;
    int rc = 0;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: account '%s' does not exist\n", cli->account);
        rc = -ENOENT;
    } else {
        printf("account %s usage reset to 0 tokens (was %s)\n", cli->account, PQgetvalue(res, 0, 0));
    }
    PQclear(res);
    return rc;
}
