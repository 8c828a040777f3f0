/*
 * sb_db: the only owner of PGconns (the frontend's pool, the worker's tool data).
 * One pool per process. A small pool of non-blocking
 * connections driven by the libevent loop; statements are prepared at
 * connect and run by name with parameters (no SQL is ever built from input).
 * A separate connection LISTENs for cache invalidations.
 */
#ifndef SB_DB_H
#define SB_DB_H

#include <event2/event.h>
#include <libpq-fe.h>
#include <stdbool.h>

typedef struct sb_db sb_db_t;

typedef struct {
    const char *name;
    const char *sql;
} sb_db_stmt_t;

/* One set of statements (a module's array and its length). */
typedef struct {
    const sb_db_stmt_t *stmts;
    int count;
} sb_db_stmt_set_t;

/* The sets joined, in order, into out (room for max; later statements past
 * max are left out). Returns how many out holds. */
int sb_db_stmt_join(sb_db_stmt_t *out, int max, const sb_db_stmt_set_t *sets, size_t nsets);

/* res is borrowed (cleared after the call); NULL with err set when the query
 * failed or its connection broke. */
typedef void (*sb_db_cb)(const PGresult *res, const char *err, void *arg);

/* Called with the NOTIFY payload; payload NULL means the listen connection
 * was re-established and notifications may have been missed. */
typedef void (*sb_db_notify_cb)(const char *payload, void *arg);

/* Connects nconns connections (blocking once, at start-up, so a bad DSN fails
 * fast) and prepares stmts (borrowed; must outlive the pool). Returns NULL on
 * failure with a message in err. */
sb_db_t *sb_db_new(struct event_base *base, const char *dsn, int nconns, const sb_db_stmt_t *stmts, int nstmts,
                   char *err, size_t errlen);
void sb_db_destroy(sb_db_t **db);

/* Queues a prepared statement. params are copied. cb runs from the loop,
 * never from inside this call. */
void sb_db_query(sb_db_t *db, const char *stmt, int nparams, const char *const *params, sb_db_cb cb, void *arg);

/* LISTEN on channel (a constant identifier) over a dedicated connection. */
int sb_db_listen(sb_db_t *db, const char *channel, sb_db_notify_cb cb, void *arg) __attribute__((warn_unused_result));

/* Runs a prepared statement synchronously on a fresh blocking connection
 * (used at shutdown to flush what is left). Returns 0 or -EIO. */
int sb_db_exec_blocking(sb_db_t *db, const char *sql, int nparams, const char *const *params)
    __attribute__((warn_unused_result));

/* Whether a query queued now can run: at least one pool connection is
 * connected (preparing, idle or busy). Costs no round trip: it reads the
 * connections' states, which a lost server moves to DOWN as soon as its
 * socket closes (and the reconnect loop moves back once it answers). A
 * request that will be stored asks this before it spends an upstream call. */
bool sb_db_available(const sb_db_t *db);

/* The pool's connections by state, and the queries queued for one. */
typedef struct {
    int total, busy, idle, down; /* down: not connected, or connecting/preparing */
    int queued;
} sb_db_usage_t;
void sb_db_usage(const sb_db_t *db, sb_db_usage_t *u);

/* Queries waiting or running; used by shutdown to drain. */
int sb_db_pending(const sb_db_t *db);

#endif
