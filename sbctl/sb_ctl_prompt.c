/*
 * sb_ctl_prompt: "sbctl prompt create|version|set-current|list|show". A prompt
 * template is what the Responses style's "prompt": {id, version, variables}
 * names. It has numbered versions (prompt_versions, 1, 2, ... never deleted
 * here); prompts.current_version is the one a request gets when it names no
 * version. A version's body is {"instructions"?, "input"?}, checked by
 * sb_cli_check_prompt_body before anything is written.
 *
 * create and version print only the new id or version number on stdout, so
 * ID=$(sbctl prompt create ...) works; anything else they say goes to stderr.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_ctl.h"
#include "sb_ctl_lookup.h"
#include "sb_id.h"

/* Reads a whole file ("-" = stdin) of at most max bytes into a NUL-terminated
 * buffer owned by the caller. Returns 0, or -EIO / -EFBIG after printing why. */
static int sb_ctl_read_file(const char *path, size_t max, char **out, size_t *outlen)
{
    bool is_stdin = !strcmp(path, "-");
    FILE *f = is_stdin ? stdin : fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "sbctl: --body-file %s: %s\n", path, strerror(errno));
        return -EIO;
    }
    int rc = -EIO;
    size_t cap = 4096, len = 0;
    char *buf = sb_xmalloc(cap);
    for (;;) {
        if (len == cap - 1) {
            if (len > max)
                break; /* too big; said below */
            cap *= 2;
            buf = sb_xrealloc(buf, cap);
        }
        size_t n = fread(buf + len, 1, cap - 1 - len, f);
        len += n;
        if (n == 0)
            break;
    }
    if (ferror(f)) {
        fprintf(stderr, "sbctl: --body-file %s: read error\n", path);
        goto fail;
    }
    if (len > max) {
        fprintf(stderr, "sbctl: --body-file %s: larger than %zu bytes\n", path, max);
        rc = -EFBIG;
        goto fail;
    }
    buf[len] = '\0';
    *out = buf;
    *outlen = len;
    buf = NULL;
    rc = 0;

fail:
    free(buf);
    if (!is_stdin)
        fclose(f);
    return rc;
}

/*
 * The new version's body as JSON text, from whichever of --instructions,
 * --body, --body-file was given (sb_cli_parse made sure it is exactly one).
 * *out is owned by the caller (free). Returns 0, or a negative code after
 * printing why.
 */
static int sb_ctl_prompt_body(const struct sb_cli *cli, char **out)
{
    if (cli->body) {
        *out = sb_xstrdup(cli->body); /* checked when parsed */
        return 0;
    }
    if (cli->instructions) {
        json_t *o = json_object();
        /* json_string fails only on invalid UTF-8, which sb_cli_parse rejected. */
        json_t *s = json_string(cli->instructions);
        if (!o || !s || json_object_set_new(o, "instructions", s) != 0) {
            json_decref(o);
            fprintf(stderr, "sbctl: --instructions: cannot encode the text as JSON\n");
            return -EINVAL;
        }
        char *text = json_dumps(o, JSON_COMPACT);
        json_decref(o);
        if (!text) {
            fprintf(stderr, "sbctl: --instructions: cannot encode the text as JSON\n");
            return -EINVAL;
        }
        *out = sb_xstrdup(text);
        free(text);
        return 0;
    }
    char *text = NULL;
    size_t len = 0;
    int rc = sb_ctl_read_file(cli->body_file, SB_CLI_BODY_MAX, &text, &len);
    if (rc != 0)
        return rc;
    char why[256];
    if (sb_cli_check_prompt_body(text, len, why, sizeof why) != 0) {
        fprintf(stderr, "sbctl: --body-file %s: %s\n", cli->body_file, why);
        free(text);
        return -EINVAL;
    }
    *out = text;
    return 0;
}

int sb_ctl_prompt_create(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char *body = NULL;
    PGresult *res = NULL;
    char aid[32];
    char id[SB_ID_MAX];
    int rc = sb_ctl_prompt_body(cli, &body);
    if (rc != 0)
        goto fail;
    rc = sb_ctl_account_id(db, cli->account, aid, NULL);
    if (rc != 0)
        goto fail;

    /* One statement, so a prompt never exists without its version 1. The
     * foreign key of prompt_versions is checked at the end of the statement,
     * when the CTE's prompts row is there. */
    sb_id_new(id, sizeof id, "pmpt_", 16);
    const char *params[] = {sb_ctl_actor(), aid, id, cli->name, body};
    rc = -EIO;
    res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_prompt_create($1, $2::bigint, $3, $4, $5::jsonb)", 5, params);
    if (!res)
        goto fail;
    if (PQntuples(res) == 1) {
        printf("%s\n", id);
        rc = 0;
        goto fail;
    }

    /* The account already has a prompt of that name. */
    PQclear(res);
    const char *eparams[] = {aid, cli->name};
    res = sb_ctldb_exec(db, "SELECT id FROM prompts WHERE account_id = $1::bigint AND name = $2", 2, eparams);
    if (!res)
        goto fail;
    if (PQntuples(res) != 1) {
        /* Nothing in sbctl deletes prompts; someone did it by hand meanwhile. */
        fprintf(stderr, "sbctl: prompt '%s' of account %s changed while being created; try again\n", cli->name,
                cli->account);
        rc = -EAGAIN;
        goto fail;
    }
    const char *existing = PQgetvalue(res, 0, 0);
    if (cli->if_not_exists) {
        printf("%s\n", existing);
        fprintf(stderr,
                "sbctl: prompt '%s' of account %s already exists; left unchanged (to change it: "
                "sbctl prompt version %s ...)\n",
                cli->name, cli->account, existing);
        rc = 0;
    } else {
        fprintf(stderr,
                "sbctl: prompt '%s' of account %s already exists (%s; to change it: sbctl prompt version %s ...)\n",
                cli->name, cli->account, existing, existing);
        rc = -EEXIST;
    }

fail:
    PQclear(res);
    free(body);
    return rc;
}

int sb_ctl_prompt_version(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *id = cli->arg[0];
    char *body = NULL;
    PGresult *res = NULL;
    int rc = sb_ctl_prompt_body(cli, &body);
    if (rc != 0)
        goto fail;

    /* The new number is max + 1, read under the prompt's row lock
     * (sb_admin_prompt_version, schema/015), so two concurrent runs never
     * take the same one. */
    rc = -EIO;
    const char *params[] = {sb_ctl_actor(), id, body, cli->no_set_current ? "false" : "true"};
    res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_prompt_version($1, $2, $3::jsonb, $4::boolean)", 4, params);
    if (!res)
        goto fail;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: prompt '%s' does not exist\n", id);
        rc = -ENOENT;
        goto fail;
    }
    printf("%s\n", PQgetvalue(res, 0, 0));
    if (cli->no_set_current)
        fprintf(stderr, "sbctl: prompt %s: added version %s; current version unchanged\n", id, PQgetvalue(res, 0, 0));
    rc = 0;

fail:
    PQclear(res);
    free(body);
    return rc;
}

int sb_ctl_prompt_set_current(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *id = cli->arg[0];
    char version[16];
    snprintf(version, sizeof version, "%d", cli->version);
    const char *uparams[] = {sb_ctl_actor(), id, version};
    PGresult *res = sb_ctldb_exec(db, "SELECT * FROM sb_admin_prompt_set_current($1, $2, $3::int)", 3, uparams);
    const char *params[] = {id};
    if (!res)
        return -EIO;
    int found = PQntuples(res);
    PQclear(res);
    if (found) {
        printf("prompt %s now uses version %s\n", id, version);
        return 0;
    }
    /* Say which of the two is missing. */
    res = sb_ctldb_exec(db,
                        "SELECT (SELECT max(version) FROM prompt_versions v WHERE v.prompt_id = p.id) "
                        "FROM prompts p WHERE p.id = $1",
                        1, params);
    if (!res)
        return -EIO;
    if (PQntuples(res) == 0)
        fprintf(stderr, "sbctl: prompt '%s' does not exist\n", id);
    else
        fprintf(stderr, "sbctl: prompt %s has no version %s (the latest is %s)\n", id, version,
                PQgetisnull(res, 0, 0) ? "none" : PQgetvalue(res, 0, 0));
    PQclear(res);
    return -ENOENT;
}

int sb_ctl_prompt_list(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char aid[32];
    if (cli->account) {
        int rc = sb_ctl_account_id(db, cli->account, aid, NULL);
        if (rc != 0)
            return rc;
    }
    /* The name comes last: it is the one column that may contain spaces. */
    static const char sql[] = "SELECT p.id, a.name AS account, p.current_version AS current, "
                              "count(v.version) AS versions, "
                              "to_char(p.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"') AS created, "
                              "p.name AS name "
                              "FROM prompts p "
                              "JOIN accounts a ON a.id = p.account_id "
                              "LEFT JOIN prompt_versions v ON v.prompt_id = p.id "
                              "WHERE $1::bigint IS NULL OR p.account_id = $1::bigint "
                              "GROUP BY p.id, a.name "
                              "ORDER BY a.name, p.name";
    const char *params[] = {cli->account ? aid : NULL};
    return sb_ctl_print_query(db, sql, 1, params);
}

int sb_ctl_prompt_show(struct sb_ctldb *db, const struct sb_cli *cli)
{
    const char *id = cli->arg[0];
    char version[16];
    snprintf(version, sizeof version, "%d", cli->version);
    const char *params[] = {id, cli->version > 0 ? version : NULL};
    PGresult *res = sb_ctldb_exec(db,
                                  "SELECT jsonb_pretty(v.body), COALESCE($2::int, p.current_version) "
                                  "FROM prompts p LEFT JOIN prompt_versions v "
                                  "ON v.prompt_id = p.id AND v.version = COALESCE($2::int, p.current_version) "
                                  "WHERE p.id = $1",
                                  2, params);
    if (!res)
        return -EIO;
    int rc = 0;
    if (PQntuples(res) == 0) {
        fprintf(stderr, "sbctl: prompt '%s' does not exist\n", id);
        rc = -ENOENT;
    } else if (PQgetisnull(res, 0, 0)) {
        fprintf(stderr, "sbctl: prompt %s has no version %s\n", id, PQgetvalue(res, 0, 1));
        rc = -ENOENT;
    } else {
        printf("%s\n", PQgetvalue(res, 0, 0));
    }
    PQclear(res);
    return rc;
}
