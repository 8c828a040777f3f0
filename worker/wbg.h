/*
 * wbg: a background job's events into PostgreSQL (issue 18,
 * docs/background.md, schema/010_background.sql).
 *
 * A job whose JOB header names a background response ("background": the
 * response id) has a writer. Every batch of events the job sends to the
 * broker is also appended to background_events, in order, one statement in
 * flight per job (sb_background_append), so any frontend can render the job
 * whatever became of the frontend that submitted it. The first append, at
 * the job's start, carries no events: it moves the response to in_progress
 * and names the worker. The final event sets the final state: completed or
 * incomplete; failed for an error; cancelled for a cancel.
 *
 * A statement that fails (the database restarting) is tried again after a
 * pause, the same batch from the same index (the append is idempotent on
 * the event index), up to SB_WBG_ATTEMPTS times; then the job's writer
 * gives up and logs it, and the frontends' reaper fails the response when
 * its worker's heartbeat says nothing runs it any more.
 *
 * Ownership: the job holds its writer until it ends (sb_wbg_release); the
 * writer then frees itself once what it holds is written. It borrows the
 * worker's database pool and event base, which outlive it (shutdown drains
 * the pool: a statement cut by it is given up).
 */
#ifndef SB_WBG_H
#define SB_WBG_H

#include <event2/event.h>
#include <jansson.h>

#include "sb_db.h"

#define SB_WBG_ATTEMPTS 20
#define SB_WBG_RETRY_MS 250
/* How often a worker stamps worker_heartbeats (while it has a database). */
#define SB_WBG_HEARTBEAT_MS 2000

typedef struct sb_wbg sb_wbg_t;

/* A writer for the background response `response_id` of job_id, run by the
 * worker `worker_name`; it appends the job's start (state in_progress) at
 * once. */
sb_wbg_t *sb_wbg_new(struct event_base *base, sb_db_t *db, const char *response_id, const char *job_id,
                     const char *worker_name);

/* Appends events[from, to) (copied) after those appended so far. */
void sb_wbg_append(sb_wbg_t *b, const json_t *events, size_t from, size_t to);

/* The job is over: the writer finishes what it holds, then frees itself.
 * Sets *b to NULL; NULL-safe. */
void sb_wbg_release(sb_wbg_t **b);

/* The final state a final event means (static string): "completed",
 * "incomplete", "cancelled" or "failed". */
const char *sb_wbg_final_state(const json_t *final_event);

/* The worker's statements (joined in wsql.c). */
#define SB_WSQL_BG_APPEND "bg_append"
#define SB_WSQL_BG_HEARTBEAT "bg_heartbeat"
extern const sb_db_stmt_t sb_wsql_bg_statements[];
extern const int sb_wsql_bg_statement_count;

#endif
