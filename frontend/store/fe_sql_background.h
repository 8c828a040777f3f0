/*
 * fe_sql_background: background responses' statements (schema/010 and
 * 011, docs/background.md). Those a client's request runs take its account
 * and scope to it; the finalizer's (load, finalize, sweep) are the
 * gateway's own, by response id.
 */
#ifndef FE_SQL_BACKGROUND_H
#define FE_SQL_BACKGROUND_H

#include "sb_db.h"

/* $1 JSON {id, account_id, key_id, model, previous_response_id, body,
 * context, input, job_id, snapshot, deadline_ms} -> (nothing). */
#define FE_SQL_BG_CREATE "bg_create"
/* $1 id: a refused background response goes (while still queued). */
#define FE_SQL_BG_DROP "bg_drop"
/* $1 id, $2 account -> body, state (NULL: not a background one), snapshot,
 * finished, finalized. */
#define FE_SQL_BG_GET "bg_get"
/* $1 id, $2 first event index, $3 account -> state, the events from $2 on
 * (a JSON array, at most FE_BG_EVENTS_PAGE), finalized, error. */
#define FE_SQL_BG_EVENTS "bg_events"
#define FE_BG_EVENTS_PAGE 500
/* $1 id, $2 account -> outcome, state, job id (sb_background_cancel). */
#define FE_SQL_BG_CANCEL "bg_cancel"
/* $1 id, $2 the error event -> true when it was open and is now failed. */
#define FE_SQL_BG_FAIL "bg_fail"
/* $1 stale ms, $2 grace ms, $3 limit -> response_id rows to finalize. */
#define FE_SQL_BG_SWEEP "bg_sweep"
/* $1 id -> snapshot, state, error, finalized, body, every event (JSON array). */
#define FE_SQL_BG_LOAD "bg_load"
/* $1 JSON {id, status, body, output, log} -> true when this call finalized it. */
#define FE_SQL_BG_FINALIZE "bg_finalize"

extern const sb_db_stmt_t fe_sql_background_statements[];
extern const int fe_sql_background_statement_count;

#endif
