/*
 * sb_ctldb: sbctl's one PostgreSQL connection. Every statement that carries a
 * value goes through sb_ctldb_exec (PQexecParams); sb_ctldb_script exists only
 * for migration files, which are trusted multi-statement SQL from the repo.
 *
 * Error reports print the server's primary message and SQLSTATE, never the
 * DETAIL line: a unique violation's detail would echo the offending value
 * (for api_keys, a key hash).
 */
#ifndef SB_CTLDB_H
#define SB_CTLDB_H

#include <libpq-fe.h>
#include <stdbool.h>
#include <stdio.h>

#define SB_CTLDB_MUSTCHECK __attribute__((warn_unused_result))

struct sb_ctldb;

/*
 * Connects with conninfo (a libpq keyword string or URI; NULL or "" = libpq's
 * PG* environment variables). Returns NULL after printing why to stderr. The
 * connection string itself is never printed: it may hold a password.
 */
struct sb_ctldb *sb_ctldb_new(const char *conninfo);

/* Closes the connection; NULL-safe; sets *db to NULL. */
void sb_ctldb_destroy(struct sb_ctldb **db);

/*
 * Runs one parameterised statement (text parameters, NULL = SQL NULL). Returns
 * the result, owned by the caller (PQclear), when the statement succeeded, or
 * NULL after printing the error to stderr.
 */
PGresult *sb_ctldb_exec(struct sb_ctldb *db, const char *sql, int nparams,
                        const char *const *params) SB_CTLDB_MUSTCHECK;

/* Like sb_ctldb_exec, for a statement whose result is not needed: 0 or -EIO. */
int sb_ctldb_run(struct sb_ctldb *db, const char *sql, int nparams, const char *const *params) SB_CTLDB_MUSTCHECK;

/*
 * Runs a trusted multi-statement script (a migration file) with PQexec. On
 * error prints the full message (with detail, hint and position) prefixed by
 * what, and returns -EIO.
 */
int sb_ctldb_script(struct sb_ctldb *db, const char *what, const char *sql) SB_CTLDB_MUSTCHECK;

/* Rolls back the open transaction, if any; errors are ignored (we are already failing). */
void sb_ctldb_rollback(struct sb_ctldb *db);

/*
 * Prints a result as an aligned table: a header of the column names, then one
 * line per row, columns separated by two spaces, NULL shown as "-". Widths
 * count UTF-8 characters, not bytes.
 */
void sb_ctldb_print(const PGresult *res, FILE *out);

#endif
