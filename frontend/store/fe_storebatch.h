/*
 * fe_storebatch: batched statements. Group commit for stored answers, and
 * (with a result row per batch row: fe_storebatch_add_row) one key's limit
 * admissions and releases (fe_limits_batch.h).
 *
 * A stored response must be committed before its client sees it, and one
 * commit per request made PostgreSQL flush its WAL and run a statement for
 * every request. A batch writer collects the rows of the answers finishing
 * meanwhile and writes them with one statement (one transaction, one WAL
 * flush): rows queue while FE_STOREBATCH_INFLIGHT batches are in flight and
 * go out together when one commits, so at low load a row goes out at once
 * (the turn of the event loop it was queued in) and under load the batches
 * grow. Every row's callback runs once its batch has committed (err NULL)
 * or failed; a failed batch of several rows is retried a row at a time, so
 * one bad row fails only its own request. Durability is unchanged: nobody
 * is answered before the commit that holds their row.
 */
#ifndef FE_STOREBATCH_H
#define FE_STOREBATCH_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>

#include "sb_db.h"

/* Batches in flight per writer (each holds one pool connection). */
#define FE_STOREBATCH_INFLIGHT 2
/* Rows per batch at most. */
#define FE_STOREBATCH_MAX_ROWS 128

typedef struct fe_storebatch fe_storebatch_t;

/* A writer for stmt, a prepared statement whose $1 is a JSON array of row
 * objects. */
fe_storebatch_t *fe_storebatch_new(struct event_base *base, sb_db_t *db, const char *stmt);

/* Fails the rows still queued ("shutting down") and frees the writer. Rows
 * in flight are answered by the pool's teardown, which calls back into the
 * writer: destroy the pool (sb_db_destroy) first. */
void fe_storebatch_free(fe_storebatch_t **b);

/* Queues row (a JSON object; the reference is stolen) for the next batch;
 * done(NULL, err, arg) runs once it is committed or has failed. */
void fe_storebatch_add(fe_storebatch_t *b, json_t *row, sb_db_cb done, void *arg);

/* For a statement that returns one row per batch row, whose first column is
 * the row's position in the batch (1-based: WITH ORDINALITY): found(res,
 * row, NULL, arg) with the index of its result row, or found(NULL, -1, err,
 * arg) when the batch failed or returned nothing for it. */
typedef void (*fe_storebatch_row_fn)(const PGresult *res, int row, const char *err, void *arg);
void fe_storebatch_add_row(fe_storebatch_t *b, json_t *row, fe_storebatch_row_fn found, void *arg);

/* True when the writer holds nothing: no row queued, no batch in flight
 * (it may be freed). */
bool fe_storebatch_idle(const fe_storebatch_t *b);

#endif
