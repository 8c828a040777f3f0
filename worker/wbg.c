/*
 * wbg: a background job's events into PostgreSQL (wbg.h).
 */
#include "wbg.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_log.h"

const sb_db_stmt_t sb_wsql_bg_statements[] = {
    {SB_WSQL_BG_APPEND, "SELECT sb_background_append($1, $2, $3::jsonb, $4::integer, $5, $6::jsonb)"},
    {SB_WSQL_BG_HEARTBEAT, "INSERT INTO worker_heartbeats (name, seen_at) VALUES ($1, now()) "
                           "ON CONFLICT (name) DO UPDATE SET seen_at = now()"},
};
const int sb_wsql_bg_statement_count = (int)(sizeof sb_wsql_bg_statements / sizeof sb_wsql_bg_statements[0]);

struct sb_wbg {
    struct event_base *base;
    sb_db_t *db;
    char *response_id;
    char *job_id;
    char *worker;
    json_t *pending;     /* events not yet sent (owned array) */
    long long appended;  /* events the database holds */
    json_t *inflight;    /* the batch in flight (owned), or NULL */
    bool inflight_final; /* it holds the final event */
    bool started;        /* the start (no events) was appended */
    bool released;       /* the job let go: free once idle */
    bool done;           /* the final event is written, or the writer gave up */
    int attempts;        /* of the batch in flight */
    struct event *retry; /* owned timer */
};

const char *sb_wbg_final_state(const json_t *ev)
{
    if (sb_event_type_of(ev) == SB_EV_ERROR) {
        const char *kind = json_string_value(json_object_get(ev, "kind"));
        return kind && !strcmp(kind, "cancelled") ? "cancelled" : "failed";
    }
    const char *status = json_string_value(json_object_get(ev, "status"));
    return status && !strcmp(status, "incomplete") ? "incomplete" : "completed";
}

static void sb_wbg_free(sb_wbg_t *b)
{
    json_decref(b->pending);
    json_decref(b->inflight);
    if (b->retry)
        event_free(b->retry);
    free(b->response_id);
    free(b->job_id);
    free(b->worker);
    free(b);
}

static void sb_wbg_send(sb_wbg_t *b);

/* Frees a released writer that holds nothing more to write. */
static bool sb_wbg_maybe_free(sb_wbg_t *b)
{
    if (b->released && !b->inflight && (b->done || json_array_size(b->pending) == 0)) {
        sb_wbg_free(b);
        return true;
    }
    return false;
}

static void sb_wbg_on_retry(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_wbg_send(arg);
}

static void sb_wbg_on_done(const PGresult *res, const char *err, void *arg)
{
    sb_wbg_t *b = arg;
    if (err) {
        bool shutting = !strcmp(err, "shutting down");
        if (!shutting && ++b->attempts < SB_WBG_ATTEMPTS) {
            sb_warn("job %s: appending its background events failed (%.*s); trying again", b->job_id,
                    (int)strcspn(err, "\n"), err);
            struct timeval tv = {0, SB_WBG_RETRY_MS * 1000};
            evtimer_add(b->retry, &tv);
            return; /* the batch stays in flight */
        }
        sb_error("job %s: gave up appending the background events of %s: %.*s", b->job_id, b->response_id,
                 (int)strcspn(err, "\n"), err);
        b->done = true;
        json_decref(b->inflight);
        b->inflight = NULL;
        json_array_clear(b->pending);
        sb_wbg_maybe_free(b);
        return;
    }
    const char *state = res && PQntuples(res) > 0 && !PQgetisnull(res, 0, 0) ? PQgetvalue(res, 0, 0) : NULL;
    b->appended += (long long)json_array_size(b->inflight);
    b->started = true;
    b->attempts = 0;
    if (b->inflight_final)
        b->done = true;
    json_decref(b->inflight);
    b->inflight = NULL;
    if (!state || (strcmp(state, "queued") && strcmp(state, "in_progress") && !b->done)) {
        /* Gone (deleted) or already over (cancelled): nothing more is kept. */
        sb_debug("job %s: background response %s is %s; its events are no longer kept", b->job_id, b->response_id,
                 state ? state : "gone");
        b->done = true;
        json_array_clear(b->pending);
    }
    if (sb_wbg_maybe_free(b))
        return;
    if (!b->done && json_array_size(b->pending) > 0)
        sb_wbg_send(b);
}

/* Sends the pending events (or the start) as one append. */
static void sb_wbg_send(sb_wbg_t *b)
{
    if (!b->inflight) {
        b->inflight = b->pending;
        b->pending = json_array();
        size_t n = json_array_size(b->inflight);
        b->inflight_final = n > 0 && sb_event_is_final(json_array_get(b->inflight, n - 1));
    }
    char *events = json_dumps(b->inflight, JSON_COMPACT);
    char from[24];
    snprintf(from, sizeof from, "%lld", b->appended);
    const json_t *last = json_array_get(b->inflight, json_array_size(b->inflight) - 1);
    char *error = b->inflight_final && sb_event_type_of(last) == SB_EV_ERROR ? json_dumps(last, JSON_COMPACT) : NULL;
    const char *params[6] = {
        b->response_id, b->worker, events, from, b->inflight_final ? sb_wbg_final_state(last) : NULL, error};
    sb_db_query(b->db, SB_WSQL_BG_APPEND, 6, params, sb_wbg_on_done, b);
    free(events);
    free(error);
}

sb_wbg_t *sb_wbg_new(struct event_base *base, sb_db_t *db, const char *response_id, const char *job_id,
                     const char *worker_name)
{
    sb_wbg_t *b = sb_xcalloc(1, sizeof *b);
    b->base = base;
    b->db = db;
    b->response_id = sb_xstrdup(response_id);
    b->job_id = sb_xstrdup(job_id);
    b->worker = sb_xstrdup(worker_name ? worker_name : "");
    b->pending = json_array();
    b->retry = evtimer_new(base, sb_wbg_on_retry, b);
    sb_wbg_send(b); /* the start: in_progress, and this worker's name */
    return b;
}

void sb_wbg_append(sb_wbg_t *b, const json_t *events, size_t from, size_t to)
{
    if (!b || b->done)
        return;
    for (size_t i = from; i < to; i++)
        json_array_append_new(b->pending, json_deep_copy(json_array_get(events, i)));
    if (!b->inflight)
        sb_wbg_send(b);
}

void sb_wbg_release(sb_wbg_t **pb)
{
    if (!pb || !*pb)
        return;
    sb_wbg_t *b = *pb;
    *pb = NULL;
    b->released = true;
    sb_wbg_maybe_free(b);
}
