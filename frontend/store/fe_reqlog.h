/*
 * fe_reqlog: the request log writer. Every request (failed ones included)
 * adds exactly one row; rows are buffered and written in batches off the
 * request path (one INSERT per batch, idempotent on request_id), retried when
 * the database is away, and flushed with a blocking write at clean shutdown.
 *
 * With a spool (fe_reqlog_spool_open) rows survive a frontend that dies
 * while the database is away: once the pool has no connection, each row is
 * appended to an append-only file as its request ends, and a batch whose
 * write fails goes there too. The spool is replayed when the database is
 * back and at start (a leftover from a dead process); the insert is ON
 * CONFLICT (request_id) DO NOTHING, so a row replayed twice lands once.
 *
 * Loss bound. Database up: rows wait in memory at most one tick (100 ms)
 * plus one batch in flight; with a spool each is also appended to a journal
 * segment as its request ends, before the reply leaves, so a process killed
 * then loses none (the next start moves the journal into the spool); a
 * machine crash may lose the unsynced journal. Without a spool a process
 * killed loses those rows. Database down: nothing on a process death (rows are written with
 * write(2) as they come); on a machine crash, the rows since the last
 * fdatasync (run once per tick while there is something new: 100 ms). The
 * spool is capped at FE_REQLOG_SPOOL_MAX bytes (256 MiB, ~500k rows); rows
 * past the cap are dropped and counted in the log. Without a spool, rows
 * wait in memory (up to 200,000) and a process death loses them all.
 *
 * A row carries its request's tool_calls rows (the built-in tool calls the
 * worker ran, fe_collect.h) along: batched, spooled and replayed with it,
 * and inserted by the same statement, only when the request's row is new
 * (fe_sql.c), so they share its loss bound and land exactly once.
 */
#ifndef FE_REQLOG_H
#define FE_REQLOG_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sb_db.h"

typedef struct fe_reqlog fe_reqlog_t;

typedef struct {
    const char *request_id;
    const char *trace_id;        /* W3C trace id (32 hex); NULL: none */
    int64_t ts_ms;               /* request start, epoch ms */
    long long key_id;            /* <= 0: unknown */
    long long account_id;        /* <= 0: unknown */
    const char *model;           /* NULL: unknown */
    const char *requested_model; /* the model asked for when a fallback answered; NULL otherwise */
    const char *path;
    int status;
    int latency_ms;
    int upstream_ms; /* < 0: none */
    long long tokens_in, tokens_out, reasoning_tokens;
    long long tokens_estimated; /* the gateway's input estimate; 0: none made */
    const char *error;          /* NULL on success; never contains secrets */
    bool stream;
    const json_t *tool_calls;  /* the request's tool_calls rows (fe_collect_t's), borrowed; NULL or [] for none */
    const char *limit_block;   /* the capacity block it was admitted from (fe_limits_block.h); NULL: none */
    long long tokens_reserved; /* its reservation in that block's token row; 0 with no block */
} fe_reqlog_row_t;

fe_reqlog_t *fe_reqlog_new(struct event_base *base, sb_db_t *db, const char *frontend_name);
/* Copies the row into the buffer. */
void fe_reqlog_add(fe_reqlog_t *l, const fe_reqlog_row_t *row);
/* The row as it is batched and spooled (what fe_sql.c's insert reads), a
 * new reference; frontend is the frontend's name. */
json_t *fe_reqlog_row_json(const fe_reqlog_row_t *row, const char *frontend);
/* Spools to <dir>/reqlog-<frontend name>.spool (dir created if absent, one
 * frontend per name: a second one is refused by an flock on the spool's
 * .lock file) and schedules what a dead process left there for replay.
 * 0, or -errno with a message in err. */
int fe_reqlog_spool_open(fe_reqlog_t *l, const char *dir, char *err, size_t errlen) __attribute__((warn_unused_result));
/* Writes everything buffered, blocking; for shutdown. What cannot be written
 * goes to the spool when there is one. Returns rows neither written nor
 * spooled. */
size_t fe_reqlog_flush_blocking(fe_reqlog_t *l);

/* What the writer holds (metrics): rows waiting in memory (the batch in
 * flight included), how long the oldest of them has waited, rows written
 * since start, the spool's size, rows dropped. */
typedef struct {
    long long waiting, written, dropped, spool_bytes;
    int64_t lag_us; /* 0: nothing waiting */
} fe_reqlog_stats_t;
void fe_reqlog_stats(const fe_reqlog_t *l, fe_reqlog_stats_t *st);
void fe_reqlog_destroy(fe_reqlog_t **l);

#endif
