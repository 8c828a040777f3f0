/*
 * sb_ctl_model: "sbctl model add|list|disable|enable|set". A model row is its
 * upstream route: provider kind, base URL, upstream model name and the NAME of
 * the worker's environment variable holding the upstream secret.
 *
 * "add" inserts the required columns and then applies the optional ones with
 * the same UPDATE as "set", in one transaction, so the column defaults live
 * only in schema/001_init.sql.
 *
 * A model's fallbacks (schema/003_limits.sql) are the models the frontend
 * tries, in order, when this one's upstream fails before the client has seen
 * a byte: "model fallback ID A B" or --fallbacks A,B on add/set. The list is
 * passed to PostgreSQL as one comma-joined text (model ids have no commas).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sb_buf.h"
#include "sb_ctl.h"
#include "sb_ctl_lookup.h"

/*
 * Checks model and its new fallback list (comma-joined ids, "" = none): the
 * model must exist (said first, alone), and each fallback must exist, not be
 * the model itself, and appear once. A disabled fallback is allowed (the
 * frontend skips it until it is enabled), with a warning. Returns 0, -EINVAL
 * or -ENOENT (every problem printed), or -EIO.
 */
static int sb_ctl_model_check_fallbacks(struct sb_ctldb *db, const char *model, const char *list)
{
    static const char sql[] = "SELECT * FROM sb_admin_model_fallback_check($2, $1)";
    const char *params[] = {list, model};
    PGresult *res = sb_ctldb_exec(db, "SELECT 1 FROM models WHERE id = $1", 1, &params[1]);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: model '%s' does not exist\n", model);
        return -ENOENT;
    }
    res = sb_ctldb_exec(db, sql, 2, params);
    if (!res)
        return -EIO;
    int rc = 0;
    for (int i = 0; i < PQntuples(res); i++) {
        const char *id = PQgetvalue(res, i, 0);
        if (!strcmp(PQgetvalue(res, i, 1), "t")) {
            fprintf(stderr, "sbctl: model '%s' cannot be its own fallback\n", model);
            rc = -EINVAL;
        } else if (!strcmp(PQgetvalue(res, i, 2), "t")) {
            fprintf(stderr, "sbctl: fallback '%s' is listed more than once\n", id);
            rc = -EINVAL;
        } else if (strcmp(PQgetvalue(res, i, 3), "t") != 0) {
            fprintf(stderr, "sbctl: fallback model '%s' does not exist (see 'sbctl model list')\n", id);
            if (rc == 0)
                rc = -ENOENT;
        } else if (strcmp(PQgetvalue(res, i, 4), "t") != 0) {
            fprintf(stderr, "sbctl: warning: fallback model '%s' is disabled; it is skipped until enabled\n", id);
        }
    }
    PQclear(res);
    return rc;
}

/* Applies the options given on the command line to model cli->arg[0]; an
 * option not given is NULL and leaves its column alone. Returns 0, -ENOENT
 * when the model (or a --fallbacks model) does not exist, -EINVAL for a
 * --fallbacks list naming the model itself or a model twice, or -EIO. */
static int sb_ctl_model_update(struct sb_ctldb *db, const struct sb_cli *cli)
{
    static const char sql[] = "SELECT * FROM sb_admin_model_update($11, $1, $2, $3, $4, $5, $6::jsonb, $7::int, "
                              "$8::int, $9::int, $10)";
    char ctx[16], maxout[16], timeout[16];
    snprintf(ctx, sizeof ctx, "%d", cli->context_length);
    snprintf(maxout, sizeof maxout, "%d", cli->max_output_tokens);
    snprintf(timeout, sizeof timeout, "%d", cli->timeout_ms);
    const char *params[] = {
        cli->arg[0],
        cli->provider,
        cli->base_url,
        cli->upstream_model,
        cli->credential_ref,
        cli->capabilities,
        cli->context_length > 0 ? ctx : NULL,
        cli->max_output_tokens > 0 ? maxout : NULL,
        cli->timeout_ms > 0 ? timeout : NULL,
        cli->fallbacks,
        sb_ctl_actor(),
    };
    if (cli->fallbacks) {
        int rc = sb_ctl_model_check_fallbacks(db, cli->arg[0], cli->fallbacks);
        if (rc != 0)
            return rc;
    }
    PGresult *res = sb_ctldb_exec(db, sql, 11, params);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: model '%s' does not exist\n", cli->arg[0]);
        return -ENOENT;
    }
    return 0;
}

int sb_ctl_model_add(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *id = cli->arg[0];
    PGresult *res = NULL;
    int rc = -EIO;
    if (sb_ctldb_run(db, "BEGIN", 0, NULL) != 0)
        goto fail;
    const char *params[] = {sb_ctl_actor(), id, cli->provider, cli->base_url, cli->upstream_model};
    rc = sb_ctl_insert_new(db, cli, "model", id, " (use 'sbctl model set' to change it)",
                           "SELECT * FROM sb_admin_model_add($1, $2, $3, $4, $5)", 5, params);
    if (rc <= 0)
        goto fail; /* also ends the transaction; an existing model is left unchanged */
    rc = sb_ctl_model_update(db, cli);
    if (rc != 0)
        goto fail;
    rc = -EIO;
    /* A reasoning model may think for minutes before it answers: without an
     * explicit --timeout-ms it gets 600 s (schema/014_admin.sql), not the
     * column's default of 60 s. */
    const char *rparams[] = {sb_ctl_actor(), id};
    if (cli->timeout_ms <= 0 &&
        sb_ctldb_run(db, "SELECT * FROM sb_admin_model_reasoning_timeout($1, $2)", 2, rparams) != 0)
        goto fail;
    if (sb_ctldb_run(db, "COMMIT", 0, NULL) != 0)
        goto fail;
    PQclear(res);
    printf("model %s added (%s, %s)\n", id, cli->provider, cli->base_url);
    return 0;

fail:
    sb_ctldb_rollback(db);
    PQclear(res);
    return rc;
}

int sb_ctl_model_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    /* capabilities last: JSON may contain spaces. */
    static const char sql[] = "SELECT id, provider, upstream_model AS upstream, base_url, "
                              "credential_ref AS credential, context_length AS context, "
                              "max_output_tokens AS max_output, timeout_ms, enabled::text AS enabled, "
                              "NULLIF(array_to_string(fallbacks, ','), '') AS fallbacks, "
                              "capabilities::text AS capabilities "
                              "FROM models ORDER BY id";
    return sb_ctl_print_query(db, sql, 0, NULL);
}

static int sb_ctl_model_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled)
{
    const char *params[] = {sb_ctl_actor(), cli->arg[0], enabled ? "true" : "false"};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_model_set_enabled($1, $2, $3::boolean)", 3, params);
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    PQclear(res);
    if (!found) {
        fprintf(stderr, "sbctl: model '%s' does not exist\n", cli->arg[0]);
        return -ENOENT;
    }
    printf("model %s %s\n", cli->arg[0], enabled ? "enabled" : "disabled");
    return 0;
}

int sb_ctl_model_disable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_model_set_enabled(db, cli, false);
}

int sb_ctl_model_enable(struct sb_ctldb *db, const struct sb_cli *cli)
{
    return sb_ctl_model_set_enabled(db, cli, true);
}

int sb_ctl_model_set(struct sb_ctldb *db, const struct sb_cli *cli)
{
    int rc = sb_ctl_model_update(db, cli);
    if (rc == 0)
        printf("model %s updated\n", cli->arg[0]);
    return rc;
}

int sb_ctl_model_fallback(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *model = cli->arg[0];
    sb_buf_t list = {0};
    for (int i = 1; i < cli->nargs; i++) {
        if (i > 1)
            sb_buf_add(&list, ",", 1);
        sb_buf_add(&list, cli->arg[i], strlen(cli->arg[i]));
    }
    const char *params[] = {model, list.p ? list.p : ""};
    int rc = sb_ctl_model_check_fallbacks(db, model, params[1]);
    if (rc != 0)
        goto fail;
    const char *uparams[] = {sb_ctl_actor(), model, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, params[1]};
    rc = sb_ctldb_run(db,
                      "SELECT * FROM sb_admin_model_update($1, $2, $3, $4, $5, $6, $7::jsonb, $8::int, $9::int, "
                      "$10::int, $11)",
                      11, uparams);
    if (rc != 0)
        goto fail;
    if (cli->nargs > 1)
        printf("model %s falls back to %s (in this order)\n", model, params[1]);
    else
        printf("model %s has no fallbacks\n", model);

fail:
    sb_buf_free(&list);
    return rc;
}
