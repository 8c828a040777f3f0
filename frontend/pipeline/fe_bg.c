/*
 * fe_bg: background responses, the frontend's half (fe_bg.h,
 * docs/background.md).
 */
#include "fe_bg.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_call_ids.h"
#include "fe_collect.h"
#include "fe_metrics.h"
#include "fe_reasoning.h"
#include "fe_request_db.h"
#include "fe_responses_bg.h"
#include "fe_responses_render.h"
#include "fe_sql_background.h"
#include "fe_stream.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_log.h"
#include "sb_map.h"
#include "sb_time.h"

typedef struct fe_bg_waiter {
    fe_bg_done_fn done;
    void *arg;
    struct fe_bg_waiter *next;
} fe_bg_waiter_t;

/* One finalization in flight, and who waits for it. */
typedef struct {
    fe_bg_t *bg;
    char *id;
    fe_bg_waiter_t *waiters;
    bool reloaded; /* finalized (by this frontend or another): the stored body is read back */
    bool swept;    /* started by the sweep (counted in bg->swept) */
    json_t *log;   /* the request_log row being written, for the metrics once it is */
} fe_bg_fin_t;

struct fe_bg {
    fe_server_t *srv;
    struct event *sweep;     /* the period */
    struct event *sweep_now; /* the next sweep at once, after a full batch (activating the periodic one
                                early would push its schedule back a period each time) */
    bool sweeping;           /* a sweep query is in flight */
    bool backlog;            /* the last sweep returned a full batch: sweep again once its finalizations end */
    int swept;               /* finalizations the sweep started that have not ended */
    int swept_ok;            /* ... and those of them that ended with the final body */
    sb_map_t *fins;          /* response id -> fe_bg_fin_t (owned) */
};

/* ---- finalizing ------------------------------------------------------------------------------ */

/* The final response, output items and request_log row of a background
 * response that is over: {id, status, body, output, log}, or NULL when its
 * snapshot does not restore. state is its state, error_ev its error (for a
 * response ended without a final event: cancelled, or failed by the
 * reaper), events every event it kept. */
static json_t *fe_bg_render(fe_server_t *srv, const json_t *snap, const json_t *error_ev, const json_t *events)
{
    fe_parsed_t p;
    fe_parsed_init(&p);
    fe_responses_bg_meta_t meta;
    if (fe_responses_bg_restore(snap, &p, &meta) < 0) {
        fe_parsed_free(&p);
        return NULL;
    }
    fe_collect_t c;
    fe_collect_init(&c);
    fe_sealer_t seal = {.key = srv->seal_ready ? &srv->seal_key : NULL, .account_id = meta.account_id};
    bool final = false;
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        json_t *copy = json_deep_copy(ev); /* sealing rewrites call ids in place */
        fe_call_ids_seal(&seal, p.style_state, copy);
        final = fe_collect_event(&c, copy);
        json_decref(copy);
        if (final)
            break;
    }
    if (!final) {
        json_t *end = json_is_object(error_ev) ? json_incref((json_t *)error_ev)
                                               : sb_event_error(502, SB_ERR_UPSTREAM, "incomplete_stream",
                                                                "the response ended without a final event");
        fe_collect_event(&c, end);
        json_decref(end);
    }
    fe_render_ctx_t ctx = {.parsed = &p, .start_ms = meta.start_ms, .request_id = meta.request_id, .seal = seal};
    bool cancelled = c.failed && c.error.status == 499;
    const char *status = !c.failed ? (c.status[0] ? c.status : "completed") : cancelled ? "cancelled" : "failed";
    json_t *body =
        !c.failed ? fe_responses_render(&c, &ctx) : fe_responses_object(&c, &ctx, status, cancelled ? NULL : &c.error);
    json_t *row = NULL;
    if (body) {
        int64_t now = sb_now_ms();
        json_t *log = json_pack(
            "{s:s, s:I, s:I, s:I, s:s, s:s, s:i, s:I, s:I, s:I, s:I, s:b, s:s}", "request_id", meta.request_id, "ts_ms",
            (json_int_t)meta.start_ms, "key_id", (json_int_t)meta.key_id, "account_id", (json_int_t)meta.account_id,
            "model", p.model_id, "path", "/v1/responses", "status", !c.failed ? 200 : c.error.status, "latency_ms",
            (json_int_t)(now > meta.start_ms ? now - meta.start_ms : 0), "tokens_in", (json_int_t)c.input_tokens,
            "tokens_out", (json_int_t)c.output_tokens, "reasoning_tokens", (json_int_t)c.reasoning_tokens, "stream",
            meta.stream, "frontend", srv->cfg.name ? srv->cfg.name : "");
        if (c.upstream_us >= 0)
            json_object_set_new(log, "upstream_latency_ms", json_integer(c.upstream_us / 1000));
        if (c.failed)
            json_object_set_new(log, "error", json_string(c.error.message));
        if (meta.requested_model)
            json_object_set_new(log, "requested_model", json_string(meta.requested_model));
        if (meta.trace_id[0])
            json_object_set_new(log, "trace_id", json_string(meta.trace_id));
        row = json_pack("{s:s, s:s, s:o, s:O, s:o}", "id", p.response_id, "status", status, "body", body, "output",
                        c.items, "log", log);
        if (p.conversation_id && !c.failed) /* its turn goes into its conversation with it */
            json_object_set_new(row, "conversation", json_string(p.conversation_id));
    }
    free(meta.requested_model);
    fe_collect_free(&c);
    fe_parsed_free(&p);
    return row;
}

/* The finalization is over: every waiter hears, then it goes. */
static void fe_bg_fin_end(fe_bg_fin_t *f, const json_t *body, const char *err)
{
    fe_bg_t *bg = f->bg;
    sb_map_remove(bg->fins, f->id);
    /* A backlog (a frontend gone, clients that never poll) is drained at
     * the database's pace, not a batch per period: the next sweep goes as
     * soon as this one's finalizations have ended, unless none of them
     * could be finalized (then the period: a row that cannot be rendered
     * must not spin the sweep). */
    if (f->swept) {
        bg->swept_ok += body != NULL;
        if (--bg->swept == 0 && bg->backlog && bg->swept_ok > 0) {
            bg->backlog = false;
            event_active(bg->sweep_now, 0, 0);
        }
    }
    fe_bg_waiter_t *w = f->waiters;
    while (w) {
        fe_bg_waiter_t *next = w->next;
        w->done(body, err, w->arg);
        free(w);
        w = next;
    }
    json_decref(f->log);
    free(f->id);
    free(f);
}

static void fe_bg_on_load(const PGresult *res, const char *err, void *arg);

static void fe_bg_load(fe_bg_fin_t *f)
{
    const char *params[1] = {f->id};
    sb_db_query(f->bg->srv->db, FE_SQL_BG_LOAD, 1, params, fe_bg_on_load, f);
}

static void fe_bg_on_finalized(const PGresult *res, const char *err, void *arg)
{
    fe_bg_fin_t *f = arg;
    if (err) {
        sb_error("finalizing background response %s failed: %.*s", f->id, (int)strcspn(err, "\n"), err);
        fe_bg_fin_end(f, NULL, err);
        return;
    }
    if (PQntuples(res) == 1 && PQgetvalue(res, 0, 0)[0] == 't') {
        sb_debug("background response %s finalized", f->id);
        /* This frontend wrote its request_log row: it counts it. */
        fe_metrics_request(&(fe_metrics_request_t){
            .style = "responses",
            .model = json_string_value(json_object_get(f->log, "model")),
            .status = (int)json_integer_value(json_object_get(f->log, "status")),
            .total_us = json_integer_value(json_object_get(f->log, "latency_ms")) * 1000,
            .upstream_us = -1, /* queueing and polling are not the gateway's added time */
            .ttft_us = -1,
            .tokens_in = json_integer_value(json_object_get(f->log, "tokens_in")),
            .tokens_out = json_integer_value(json_object_get(f->log, "tokens_out")),
        });
    }
    /* The answer is the body as stored, whoever stored it: read back, so
     * every reader of it (a poll, each resumed stream) gets the same bytes
     * (jsonb orders an object's keys its own way). */
    f->reloaded = true;
    fe_bg_load(f);
}

static void fe_bg_on_load(const PGresult *res, const char *err, void *arg)
{
    fe_bg_fin_t *f = arg;
    if (err) {
        fe_bg_fin_end(f, NULL, err);
        return;
    }
    if (PQntuples(res) != 1) {
        fe_bg_fin_end(f, NULL, "no such background response");
        return;
    }
    const char *state = PQgetvalue(res, 0, 1);
    bool finalized = PQgetvalue(res, 0, 3)[0] == 't';
    if (finalized || f->reloaded) {
        json_t *body = json_loads(PQgetvalue(res, 0, 4), 0, NULL);
        fe_bg_fin_end(f, body, body ? NULL : "the stored response does not parse");
        json_decref(body);
        return;
    }
    if (!strcmp(state, "queued") || !strcmp(state, "in_progress")) {
        fe_bg_fin_end(f, NULL, NULL); /* not over */
        return;
    }
    json_t *snap = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
    json_t *error = PQgetisnull(res, 0, 2) ? NULL : json_loads(PQgetvalue(res, 0, 2), 0, NULL);
    json_t *events = json_loads(PQgetvalue(res, 0, 5), 0, NULL);
    json_t *row = fe_bg_render(f->bg->srv, snap, error, events);
    json_decref(snap);
    json_decref(error);
    json_decref(events);
    if (!row) {
        sb_error("background response %s: its snapshot does not restore", f->id);
        fe_bg_fin_end(f, NULL, "the background response cannot be rendered");
        return;
    }
    char *text = json_dumps(row, JSON_COMPACT);
    json_decref(f->log);
    f->log = json_incref(json_object_get(row, "log"));
    json_decref(row);
    const char *params[1] = {text};
    sb_db_query(f->bg->srv->db, FE_SQL_BG_FINALIZE, 1, params, fe_bg_on_finalized, f);
    free(text);
}

/* fe_bg_finalize; swept: a finalization the sweep starts (counted in
 * bg->swept before its load goes out, so one that ends at once is counted
 * out too). */
static void fe_bg_fin_begin(fe_bg_t *bg, const char *response_id, fe_bg_done_fn done, void *arg, bool swept)
{
    fe_bg_fin_t *f = sb_map_get(bg->fins, response_id);
    bool start = !f;
    if (start) {
        f = sb_xcalloc(1, sizeof *f);
        f->bg = bg;
        f->id = sb_xstrdup(response_id);
        sb_map_put(bg->fins, f->id, f);
        if (swept) {
            f->swept = true;
            bg->swept++;
        }
    }
    if (done) {
        fe_bg_waiter_t *w = sb_xcalloc(1, sizeof *w);
        w->done = done;
        w->arg = arg;
        w->next = f->waiters;
        f->waiters = w;
    }
    if (start)
        fe_bg_load(f);
}

void fe_bg_finalize(fe_bg_t *bg, const char *response_id, fe_bg_done_fn done, void *arg)
{
    fe_bg_fin_begin(bg, response_id, done, arg, false);
}

/* ---- the sweep: reaper and finalizer --------------------------------------------------------- */

static void fe_bg_on_sweep(const PGresult *res, const char *err, void *arg)
{
    fe_bg_t *bg = arg;
    bg->sweeping = false;
    if (err) {
        if (strcmp(err, "shutting down"))
            sb_debug("background sweep failed: %.*s", (int)strcspn(err, "\n"), err);
        return;
    }
    bg->swept_ok = 0;
    bg->backlog = false;
    for (int i = 0; i < PQntuples(res); i++)
        if (!sb_map_get(bg->fins, PQgetvalue(res, i, 0)))
            fe_bg_fin_begin(bg, PQgetvalue(res, i, 0), NULL, NULL, true);
    bg->backlog = PQntuples(res) >= FE_BG_SWEEP_BATCH;
}

static void fe_bg_on_sweep_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_bg_t *bg = arg;
    if (bg->sweeping || bg->srv->draining || !sb_db_available(bg->srv->db))
        return;
    char stale[16], grace[16], limit[16];
    snprintf(stale, sizeof stale, "%d", FE_BG_STALE_MS);
    snprintf(grace, sizeof grace, "%d", FE_BG_GRACE_MS);
    snprintf(limit, sizeof limit, "%d", FE_BG_SWEEP_BATCH);
    const char *params[3] = {stale, grace, limit};
    bg->sweeping = true;
    sb_db_query(bg->srv->db, FE_SQL_BG_SWEEP, 3, params, fe_bg_on_sweep, bg);
}

fe_bg_t *fe_bg_new(fe_server_t *srv)
{
    fe_bg_t *bg = sb_xcalloc(1, sizeof *bg);
    bg->srv = srv;
    bg->fins = sb_map_new();
    bg->sweep = event_new(srv->base, -1, EV_PERSIST, fe_bg_on_sweep_timer, bg);
    bg->sweep_now = event_new(srv->base, -1, 0, fe_bg_on_sweep_timer, bg);
    struct timeval tv = {FE_BG_SWEEP_MS / 1000, (FE_BG_SWEEP_MS % 1000) * 1000};
    if (!bg->sweep || !bg->sweep_now || event_add(bg->sweep, &tv) < 0)
        abort(); /* out of memory, as sb_alloc handles it */
    return bg;
}

void fe_bg_destroy(fe_bg_t **pbg)
{
    if (!pbg || !*pbg)
        return;
    fe_bg_t *bg = *pbg;
    *pbg = NULL;
    if (bg->sweep)
        event_free(bg->sweep);
    if (bg->sweep_now)
        event_free(bg->sweep_now);
    /* The pool is gone by now (its callbacks ran with an error): no
     * finalization is left in flight. */
    sb_map_destroy(&bg->fins);
    free(bg);
}

/* ---- streams --------------------------------------------------------------------------------- */

/* A stream following a background response's events. It lives until its
 * request ends and nothing of it is in flight (the request's cleanup and
 * the last callback free it, whichever comes last). */
typedef struct {
    fe_request_t *r;
    long long next;     /* events rendered so far: the next one's index */
    struct event *poll; /* owned: the next look at the database; NULL once the request ended */
    bool over;          /* the final event was rendered */
    bool inflight;      /* a query or the finalization is on its way back (r is held) */
    bool ended;         /* the request ended */
} fe_bg_tail_t;

static void fe_bg_tail_fetch(fe_bg_tail_t *t);

static void fe_bg_tail_on_end(fe_request_t *r, void *arg)
{
    (void)r;
    fe_bg_tail_t *t = arg;
    event_free(t->poll);
    t->poll = NULL;
    t->ended = true;
    if (!t->inflight)
        free(t);
}

/* An answer came back: false when the tail is gone with its request. */
static bool fe_bg_tail_back(fe_bg_tail_t *t)
{
    t->inflight = false;
    bool live = fe_request_release(t->r);
    if (t->ended) {
        free(t);
        return false;
    }
    return live;
}

static void fe_bg_tail_on_poll(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_bg_tail_fetch(arg);
}

/* The final body came (or the finalization failed): the stream ends. */
static void fe_bg_tail_on_final(const json_t *body, const char *err, void *arg)
{
    fe_bg_tail_t *t = arg;
    fe_request_t *r = t->r;
    if (!fe_bg_tail_back(t))
        return;
    if (!body) {
        fe_error_t e;
        fe_error_set(&e, 500, SB_ERR_SERVER, "store_failed", NULL, "%s",
                     err ? "The response could not be finalized; retry" : "The response is not over");
        fe_stream_fail(r, &e);
        return;
    }
    if (r->result.failed)
        fe_stream_fail(r, &r->result.error);
    else
        fe_stream_complete(r, body);
}

/* Renders one event of the response (sealed and collected as a live
 * request's); true when it was the final one. */
static bool fe_bg_tail_feed(fe_bg_tail_t *t, json_t *ev)
{
    fe_request_t *r = t->r;
    fe_call_ids_seal_event(r, ev);
    if (fe_collect_event(&r->result, ev))
        return true;
    if (fe_collect_renders(ev))
        fe_stream_event(r, ev);
    return false;
}

static void fe_bg_tail_on_events(const PGresult *res, const char *err, void *arg)
{
    fe_bg_tail_t *t = arg;
    fe_request_t *r = t->r;
    if (!fe_bg_tail_back(t))
        return;
    if (err) {
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                     "Stored responses are temporarily unavailable, retry later");
        fe_stream_fail(r, &e);
        return;
    }
    if (PQntuples(res) != 1) {
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Response with id '%s' not found.",
                         r->parsed.response_id);
        return;
    }
    const char *state = PQgetvalue(res, 0, 0);
    json_t *events = json_loads(PQgetvalue(res, 0, 1), 0, NULL);
    size_t n = json_array_size(events);
    for (size_t i = 0; i < n && !t->over; i++) {
        t->next++;
        if (fe_bg_tail_feed(t, json_array_get(events, i)))
            t->over = true;
        if (r->state == FE_REQ_DONE) { /* the client left */
            json_decref(events);
            return;
        }
    }
    json_decref(events);
    bool open = !strcmp(state, "queued") || !strcmp(state, "in_progress");
    if (!t->over && !open && n < FE_BG_EVENTS_PAGE) {
        /* Over without a final event of its own (cancelled, or failed by
         * the reaper): its error ends it. */
        json_t *error = PQgetisnull(res, 0, 3) ? NULL : json_loads(PQgetvalue(res, 0, 3), 0, NULL);
        if (!json_is_object(error)) {
            json_decref(error);
            error =
                sb_event_error(502, SB_ERR_UPSTREAM, "incomplete_stream", "the response ended without a final event");
        }
        fe_collect_event(&r->result, error);
        json_decref(error);
        t->over = true;
    }
    if (t->over) {
        t->inflight = true;
        fe_request_hold(r);
        fe_bg_finalize(r->srv->bg, r->parsed.response_id, fe_bg_tail_on_final, t);
        return;
    }
    struct timeval tv = {0, n >= FE_BG_EVENTS_PAGE ? 0 : FE_BG_POLL_MS * 1000};
    evtimer_add(t->poll, &tv);
}

static void fe_bg_tail_fetch(fe_bg_tail_t *t)
{
    fe_request_t *r = t->r;
    if (r->state == FE_REQ_DONE || t->ended)
        return;
    char from[24], account[24];
    snprintf(from, sizeof from, "%lld", t->next);
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {r->parsed.response_id, from, account};
    t->inflight = true;
    fe_request_hold(r);
    sb_db_query(r->srv->db, FE_SQL_BG_EVENTS, 3, params, fe_bg_tail_on_events, t);
}

void fe_bg_stream(fe_request_t *r, int64_t created_ms, long long starting_after)
{
    fe_bg_tail_t *t = sb_xcalloc(1, sizeof *t);
    t->r = r;
    t->poll = evtimer_new(r->srv->base, fe_bg_tail_on_poll, t);
    fe_render_ctx_t ctx = {
        .parsed = &r->parsed, .start_ms = created_ms, .request_id = r->request_id, .seal = fe_reasoning_sealer(r)};
    fe_stream_begin(r, &ctx);
    fe_stream_responses_start_after(fe_stream_state(r), starting_after);
    fe_request_cleanup_add(r, fe_bg_tail_on_end, t);
    fe_request_set_state(r, FE_REQ_RUNNING);
    fe_bg_tail_fetch(t);
}

/* ---- submitting ------------------------------------------------------------------------------ */

/* A background job this frontend submitted: until the broker accepts it,
 * its request waits (held); afterwards it is only watched for a lost
 * worker. */
typedef struct {
    fe_server_t *srv;
    fe_request_t *r; /* held while waiting for ACCEPTED; NULL after */
    char response_id[SB_ID_MAX];
    json_t *queued; /* the queued Response object, the non-streamed answer */
    bool lease;     /* the request held a lease, left to the finalizer's request_log row */
    bool accepted;
} fe_bg_sub_t;

static void fe_bg_sub_free(fe_bg_sub_t *sub)
{
    json_decref(sub->queued);
    free(sub);
}

static void fe_bg_on_db_quiet(const PGresult *res, const char *err, void *arg)
{
    (void)res;
    if (err && strcmp(err, "shutting down"))
        sb_warn("background response %s: %.*s", (const char *)arg, (int)strcspn(err, "\n"), err);
    free(arg);
}

static void fe_bg_on_accepted(void *arg)
{
    fe_bg_sub_t *sub = arg;
    sub->accepted = true;
    fe_request_t *r = sub->r;
    sub->r = NULL;
    if (!r || !fe_request_release(r))
        return; /* the client left; the response runs on */
    fe_request_log_line(r, SB_LOG_DEBUG, "background response %s queued", sub->response_id);
    if (r->parsed.stream) {
        fe_bg_stream(r, r->start_ms, -1);
        return;
    }
    fe_request_reply_json(r, 200, json_incref(sub->queued));
}

/* The job's events as the broker sends them to this frontend: the worker
 * keeps them, so only a refusal (before ACCEPTED) and a lost worker
 * matter here. */
static void fe_bg_on_event(const json_t *ev, bool final, void *arg)
{
    fe_bg_sub_t *sub = arg;
    if (!final)
        return;
    if (!sub->accepted) {
        /* Refused (queue full, no workers, a circuit open...): the response
         * goes, and the client gets the error, as for any request. */
        sb_db_query(sub->srv->db, FE_SQL_BG_DROP, 1, (const char *const[]){sub->response_id}, fe_bg_on_db_quiet,
                    sb_xstrdup(sub->response_id));
        fe_request_t *r = sub->r;
        sub->r = NULL;
        if (r && fe_request_release(r)) {
            r->no_log = false;
            r->lease = sub->lease;
            fe_error_t e;
            fe_error_from_event(&e, ev);
            fe_request_fail(r, &e);
        }
        fe_bg_sub_free(sub);
        return;
    }
    const char *code = json_string_value(json_object_get(ev, "code"));
    if (sb_event_type_of(ev) == SB_EV_ERROR &&
        !(code && (!strcmp(code, "shutting_down") || !strcmp(code, "broker_unavailable") ||
                   !strcmp(code, "broker_restarted")))) {
        /* An error that ended the job: its worker died (worker_lost), or
         * refused the job before keeping anything. A worker that kept its
         * final event has ended the response already (this changes only an
         * open one). The job's end is not known here when this frontend is
         * leaving or lost its broker: the worker may still be running it. */
        char *e = json_dumps(ev, JSON_COMPACT);
        const char *params[2] = {sub->response_id, e};
        sb_db_query(sub->srv->db, FE_SQL_BG_FAIL, 2, params, fe_bg_on_db_quiet, sb_xstrdup(sub->response_id));
        free(e);
    }
    fe_bg_sub_free(sub);
}

/* What submitting needs once the response is written. */
typedef struct {
    fe_bg_sub_t *sub;
    json_t *job;
    int64_t deadline_ms;
} fe_bg_pending_t;

static void fe_bg_on_created(const PGresult *res, const char *err, void *arg)
{
    (void)res;
    fe_bg_pending_t *pd = arg;
    fe_bg_sub_t *sub = pd->sub;
    fe_request_t *r = sub->r;
    json_t *job = pd->job;
    int64_t deadline_ms = pd->deadline_ms;
    free(pd);
    if (!fe_request_release(r)) {
        json_decref(job);
        if (!err) /* written, never submitted: it goes */
            sb_db_query(sub->srv->db, FE_SQL_BG_DROP, 1, (const char *const[]){sub->response_id}, fe_bg_on_db_quiet,
                        sb_xstrdup(sub->response_id));
        fe_bg_sub_free(sub);
        return;
    }
    if (err) {
        json_decref(job);
        fe_bg_sub_free(sub);
        fe_request_log_line(r, SB_LOG_ERROR, "writing background response failed: %.*s", (int)strcspn(err, "\n"), err);
        fe_request_failf(r, 500, SB_ERR_SERVER, "store_failed", NULL,
                         "The background response could not be stored; retry the request");
        return;
    }
    char client[32] = "";
    const json_t *key_id = json_object_get(r->key, "key_id");
    if (json_is_integer(key_id))
        snprintf(client, sizeof client, "key:%lld", (long long)json_integer_value(key_id));
    /* From here the job is the worker's and the finalizer's: the lease and
     * the request_log row are left to the finalizer's row (which draws the
     * usage and frees the slot), whatever happens to this request. */
    sub->lease = r->lease;
    r->lease = false;
    r->no_log = true;
    fe_request_hold(r);
    int rc = fe_broker_submit_background(r->srv->broker, r->request_id, sub->response_id, r->parsed.model_id,
                                         client[0] ? client : NULL, deadline_ms, job, fe_bg_on_event, fe_bg_on_accepted,
                                         sub);
    json_decref(job);
    if (rc < 0) {
        fe_request_release(r);
        r->no_log = false;
        r->lease = sub->lease;
        sb_db_query(sub->srv->db, FE_SQL_BG_DROP, 1, (const char *const[]){sub->response_id}, fe_bg_on_db_quiet,
                    sb_xstrdup(sub->response_id));
        fe_bg_sub_free(sub);
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, "broker_unavailable", NULL,
                     "The gateway could not queue the request, retry later");
        e.retry_after = 1;
        fe_request_fail(r, &e);
    }
}

void fe_bg_submit(fe_request_t *r, const json_t *job, int64_t deadline_ms)
{
    fe_render_ctx_t ctx = {
        .parsed = &r->parsed, .start_ms = r->start_ms, .request_id = r->request_id, .seal = fe_reasoning_sealer(r)};
    json_t *queued = fe_responses_object(&r->result, &ctx, "queued", NULL);
    if (!queued) {
        fe_request_failf(r, 500, SB_ERR_SERVER, NULL, NULL, "could not render the response");
        return;
    }
    fe_responses_bg_meta_t meta = {.start_ms = r->start_ms,
                                   .account_id = (long long)json_integer_value(json_object_get(r->key, "account_id")),
                                   .key_id = (long long)json_integer_value(json_object_get(r->key, "key_id")),
                                   .stream = r->parsed.stream,
                                   .requested_model = r->requested_model};
    snprintf(meta.request_id, sizeof meta.request_id, "%s", r->request_id);
    snprintf(meta.trace_id, sizeof meta.trace_id, "%s", r->trace.trace_id);
    const char *prev = r->parsed.previous_response_id;
    json_t *row = json_pack("{s:s, s:I, s:I, s:s, s:o, s:O, s:o, s:O, s:s, s:o, s:I}", "id", r->parsed.response_id,
                            "account_id", (json_int_t)meta.account_id, "key_id", (json_int_t)meta.key_id, "model",
                            r->parsed.model_id, "previous_response_id", prev ? json_string(prev) : json_null(), "body",
                            queued, "context", r->context ? json_incref(r->context) : json_array(), "input",
                            json_object_get(r->parsed.canonical, "input"), "job_id", r->request_id, "snapshot",
                            fe_responses_bg_snapshot(&r->parsed, &meta), "deadline_ms", (json_int_t)deadline_ms);
    fe_bg_sub_t *sub = sb_xcalloc(1, sizeof *sub);
    sub->srv = r->srv;
    sub->r = r;
    snprintf(sub->response_id, sizeof sub->response_id, "%s", r->parsed.response_id);
    sub->queued = queued;
    fe_bg_pending_t *pd = sb_xcalloc(1, sizeof *pd);
    pd->sub = sub;
    pd->job = json_incref((json_t *)job);
    pd->deadline_ms = deadline_ms;
    char *text = json_dumps(row, JSON_COMPACT);
    json_decref(row);
    fe_request_set_state(r, FE_REQ_STORING);
    fe_request_hold(r);
    const char *params[1] = {text};
    sb_db_query(r->srv->db, FE_SQL_BG_CREATE, 1, params, fe_bg_on_created, pd);
    free(text);
}
