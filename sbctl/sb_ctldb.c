/*
 * sb_ctldb: connect, run statements, print results. sbctl is a short-lived
 * command, so everything here is blocking libpq; the long-lived components
 * have their own non-blocking db modules.
 */
#include "sb_ctldb.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

struct sb_ctldb {
    PGconn *conn; /* owned */
};

struct sb_ctldb *sb_ctldb_new(const char *conninfo)
{
    /* Later keywords win, so the user's conninfo (expanded from "dbname")
     * overrides our defaults; connect_timeout is only a default when
     * PGCONNECT_TIMEOUT does not set one. */
    const char *keys[4];
    const char *vals[4];
    int n = 0;
    keys[n] = "fallback_application_name";
    vals[n++] = "sbctl";
    if (!getenv("PGCONNECT_TIMEOUT")) {
        keys[n] = "connect_timeout";
        vals[n++] = "10";
    }
    if (conninfo && *conninfo) {
        keys[n] = "dbname";
        vals[n++] = conninfo;
    }
    keys[n] = NULL;
    vals[n] = NULL;

    struct sb_ctldb *db = NULL;
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (!conn) {
        fprintf(stderr, "sbctl: cannot connect to PostgreSQL: out of memory\n");
        goto fail;
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        /* libpq's message names host and port, never the password. */
        fprintf(stderr, "sbctl: cannot connect to PostgreSQL%s: %s",
                conninfo && *conninfo ? "" : " (SB_PG_DSN is unset; used libpq's PG* defaults)", PQerrorMessage(conn));
        goto fail;
    }
    db = sb_xcalloc(1, sizeof *db);
    db->conn = conn;
    /* Keep "relation already exists, skipping" notices of idempotent DDL quiet. */
    if (sb_ctldb_run(db, "SET client_min_messages = warning", 0, NULL) != 0)
        goto fail;
    return db;

fail:
    if (db)
        sb_ctldb_destroy(&db);
    else if (conn)
        PQfinish(conn);
    return NULL;
}

void sb_ctldb_destroy(struct sb_ctldb **db)
{
    if (!db || !*db)
        return;
    if ((*db)->conn)
        PQfinish((*db)->conn);
    free(*db);
    *db = NULL;
}

static void sb_ctldb_report(const PGresult *res, const PGconn *conn, const char *what, bool full)
{
    const char *primary = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (!primary) {
        /* Connection-level failure: libpq's message (ends with a newline). */
        fprintf(stderr, "sbctl: %s%sdatabase error: %s", what ? what : "", what ? ": " : "", PQerrorMessage(conn));
        return;
    }
    fprintf(stderr, "sbctl: %s%sdatabase error: %s (SQLSTATE %s)\n", what ? what : "", what ? ": " : "", primary,
            state ? state : "?");
    if (!full)
        return;
    const char *detail = PQresultErrorField(res, PG_DIAG_MESSAGE_DETAIL);
    const char *hint = PQresultErrorField(res, PG_DIAG_MESSAGE_HINT);
    const char *ctx = PQresultErrorField(res, PG_DIAG_CONTEXT);
    const char *pos = PQresultErrorField(res, PG_DIAG_STATEMENT_POSITION);
    if (detail)
        fprintf(stderr, "  detail: %s\n", detail);
    if (hint)
        fprintf(stderr, "  hint: %s\n", hint);
    if (ctx)
        fprintf(stderr, "  context: %s\n", ctx);
    if (pos)
        fprintf(stderr, "  at character %s of the script\n", pos);
}

static bool sb_ctldb_ok(const PGresult *res)
{
    ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    return st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK;
}

PGresult *sb_ctldb_exec(struct sb_ctldb *db, const char *sql, int nparams, const char *const *params)
{
    PGresult *res = PQexecParams(db->conn, sql, nparams, NULL, params, NULL, NULL, 0);
    if (!sb_ctldb_ok(res)) {
        sb_ctldb_report(res, db->conn, NULL, false);
        PQclear(res);
        return NULL;
    }
    return res;
}

int sb_ctldb_run(struct sb_ctldb *db, const char *sql, int nparams, const char *const *params)
{
    PGresult *res = sb_ctldb_exec(db, sql, nparams, params);
    if (!res)
        return -EIO;
    PQclear(res);
    return 0;
}

int sb_ctldb_script(struct sb_ctldb *db, const char *what, const char *sql)
{
    /* PQexec runs every statement of the string; with several statements the
     * result is the last one's, or the first error's. */
    PGresult *res = PQexec(db->conn, sql);
    if (!sb_ctldb_ok(res)) {
        sb_ctldb_report(res, db->conn, what, true);
        PQclear(res);
        return -EIO;
    }
    PQclear(res);
    return 0;
}

void sb_ctldb_rollback(struct sb_ctldb *db)
{
    if (PQtransactionStatus(db->conn) == PQTRANS_IDLE)
        return;
    PQclear(PQexec(db->conn, "ROLLBACK"));
}

/* Display width of a UTF-8 string: code points, not bytes (good enough for
 * the "…" in key prefixes; no East Asian wide characters are expected). */
static size_t sb_ctldb_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

static void sb_ctldb_cell(FILE *out, const char *s, size_t width, bool last)
{
    fputs(s, out);
    if (last) {
        fputc('\n', out);
        return;
    }
    for (size_t w = sb_ctldb_width(s); w < width + 2; w++)
        fputc(' ', out);
}

void sb_ctldb_print(const PGresult *res, FILE *out)
{
    int nf = PQnfields(res), nr = PQntuples(res);
    if (nf <= 0)
        return;
    size_t *width = sb_xcalloc((size_t)nf, sizeof *width);
    for (int f = 0; f < nf; f++) {
        width[f] = sb_ctldb_width(PQfname(res, f));
        for (int r = 0; r < nr; r++) {
            size_t w = PQgetisnull(res, r, f) ? 1 : sb_ctldb_width(PQgetvalue(res, r, f));
            if (w > width[f])
                width[f] = w;
        }
    }
    for (int f = 0; f < nf; f++)
        sb_ctldb_cell(out, PQfname(res, f), width[f], f == nf - 1);
    for (int r = 0; r < nr; r++)
        for (int f = 0; f < nf; f++)
            sb_ctldb_cell(out, PQgetisnull(res, r, f) ? "-" : PQgetvalue(res, r, f), width[f], f == nf - 1);
    free(width);
}
