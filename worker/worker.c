/*
 * worker: the broker session (READY, heartbeats, liveness, reconnects) and
 * the life of each job, from JOB to its one final EVENT.
 *
 * A job's path: sb_worker_on_job() validates it, builds the upstream request
 * with its provider adapter and starts its call(s) (state UPSTREAM). Body
 * bytes go through each call's sb_provider_parser; when a transfer ends,
 * sb_wcall_on_done() turns the outcome into events and sb_wcall_on_final()
 * passes them on; sb_wjob_end() sends the job's final event (state DONE). A
 * DONE job is freed by the reap event, after the callback that ended it has
 * returned: the upstream and zmq callbacks that end jobs are never left
 * holding a freed job.
 *
 * A job has one upstream call, except a fan-out: n > 1 choices from an
 * upstream that cannot do n (route.capabilities.n false) is n concurrent
 * calls without n, whose events are tagged with their choice and merged (one
 * usage, a choice_done each, one completed). The first call to fail fails the
 * job and cancels the rest.
 *
 * Strict structured output (strict.h): a call's events are held until its
 * final event and checked; valid output is passed on, invalid output retries
 * the call once (the same request, a fresh timeout cut to the job's deadline)
 * and then fails the job with 502 invalid_structured_output. Jobs without
 * strict schemas pass events on as they come, as before.
 *
 * A count job (request.op "count_tokens") is one call, never strict: to the
 * adapter's counting endpoint, or, for an adapter without one, a one-token
 * generation (sb_provider_count_job) whose usage is the count.
 *
 * Upstream retries (retry.h): an attempt that ends with a transient failure
 * (no connection, a broken transfer, HTTP 408/429/500/502/503/504/529) is
 * retried after a jittered backoff, honouring Retry-After as a floor, when
 * all of these hold: no event of the job has left for the broker (a streamed
 * job sends as it goes; a non-streamed one holds every event until its final
 * one, so the client has seen nothing), the call has retries left
 * (--retry-max), the retry would start at least SB_WORKER_RETRY_MIN_LEFT_MS
 * before the job's deadline (without one: the delay is within the route's
 * timeout), and the route's retry budget has a token (retry_budget.h; every
 * call that starts deposits, every retry withdraws). Each call of a fan-out
 * retries on its own; a cancel ends the job, pending retry included. The
 * strict-output retry above is separate and spends no budget. Every attempt
 * gets a fresh timeout: the route's, cut to what is left of the deadline.
 *
 * The final EVENT's header carries "upstream": "failed" when a call's last
 * attempt found the route failed (retry.h), else "ok" when the upstream
 * answered, and nothing when the job never reached it or was interrupted
 * (cancel, shutdown).
 *
 * Broker restarts (sb_protocol.h): the broker's messages carry its epoch.
 * A new epoch means the jobs running here belong to a broker that is gone:
 * they are abandoned. READY is sent once per session and then only for a
 * RECONNECT that answers a message sent since the latest READY (the seq in
 * our headers, echoed back), so the RECONNECTs answering a burst of messages
 * buffered while the broker was down make one READY, not one each.
 */
#include "worker.h"

#include <czmq.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "provider.h"
#include "retry.h"
#include "retry_budget.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_log.h"
#include "sb_map.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_time.h"
#include "sb_wire.h"
#include "sb_zsock_ev.h"
#include "strict.h"
#include "upstream.h"

#define SB_WORKER_DEFAULT_CREDITS 64
#define SB_WORKER_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define SB_WORKER_DEFAULT_DRAIN_MS 30000
#define SB_WORKER_DEFAULT_ROUTE_TIMEOUT_MS 60000
#define SB_WORKER_DEFAULT_STREAM_IDLE_MS 60000
/* Messages queued per direction before a send would fail (zmq's 1000 is
 * small once streams send one event per token). */
#define SB_WORKER_HWM 100000
/* How long queued events may take to leave at destroy. */
#define SB_WORKER_CLOSE_LINGER_MS 1000
/* Most upstream calls one fanned-out job may make (OpenAI's own limit on n). */
#define SB_WORKER_MAX_FANOUT 128
/* Upstream attempts per call when strict output does not validate. */
#define SB_WORKER_STRICT_ATTEMPTS 2
#define SB_WORKER_DEFAULT_RETRY_MAX 2
#define SB_WORKER_DEFAULT_RETRY_BASE_MS 250
#define SB_WORKER_DEFAULT_RETRY_CAP_MS 4000
#define SB_WORKER_DEFAULT_RETRY_BUDGET 0.2
/* A retry must start at least this long before the job's deadline: one with
 * less left could only turn the upstream's error into a timeout. */
#define SB_WORKER_RETRY_MIN_LEFT_MS 100

/* A job's life. Jobs in the `jobs` table are NEW or UPSTREAM. */
enum sb_wjob_state {
    SB_WJOB_NEW,      /* received; being validated, its request built */
    SB_WJOB_UPSTREAM, /* its upstream call(s) are running (a strict retry included) */
    SB_WJOB_DONE,     /* final event sent (or job abandoned); waits for the reap */
};

static const char *const sb_wjob_state_names[] = {"new", "upstream", "done"};

struct sb_wjob;

/*
 * One upstream call of a job: the job's only one, or one choice of a fan-out.
 * A call is running while it has an xfer (an attempt) or its retry timer is
 * pending; it is over once its final event has been passed on or has ended
 * the job.
 */
typedef struct sb_wcall {
    struct sb_wjob *j;
    int choice;                /* the choice it produces in a fan-out, else -1 (events go on untagged) */
    int attempt;               /* 1, then 2 on the strict-output retry */
    int retries;               /* upstream retries after transient failures so far (retry.h) */
    enum sb_retry_route route; /* what its latest attempt said about the route */
    sb_provider_parser_t *parser;
    sb_upstream_xfer_t *xfer;  /* borrowed from upstream while running */
    struct event *retry_timer; /* pending while it waits to retry */
    /* The attempt's events not yet passed on. For the plain case (one call,
     * nothing strict) the job's own `events`, so nothing is moved. */
    json_t *events;
    /* A streamed strict call's events as passed on, kept for the check at
     * its end (a stream cannot be held back); NULL otherwise. */
    json_t *seen;
    struct event *idle;  /* streaming: fires when the upstream is quiet for stream_idle_ms */
    int64_t timeout_ms;  /* this attempt's total upstream timeout */
    int64_t upstream_ms; /* summed over attempts */
    int feed_error;      /* why the parser refused the body, or 0 */
} sb_wcall_t;

typedef struct sb_wjob {
    sb_worker_t *w;
    enum sb_wjob_state state;
    char job_id[SB_JOB_ID_MAX + 1];
    json_t *job; /* the decoded job body; NULL if it would not decode */
    const sb_provider_t *provider;
    json_t *own_job;           /* what the calls send when it is not job: a fan-out's job without
                                  request.n, or a count's one-token generation; else NULL */
    const json_t *call_job;    /* what the calls send: job or own_job */
    sb_strict_t *strict;       /* the strict schemas; NULL: nothing to check */
    bool stream;               /* request.stream: events go on as they come, strict output is checked at the end */
    bool sent;                 /* an event has left for the broker: no retry can be invisible any more */
    bool interrupted;          /* ended by a cancel or shutdown: the header says nothing of the upstream */
    char *route_key;           /* its retry budget's route (retry_budget.h) */
    sb_provider_request_t req; /* built once; kept while a call may still (re)start */
    long long deadline_ms;     /* absolute epoch ms, 0 = none */
    sb_wcall_t *calls;
    int n_calls;
    int calls_open; /* calls not over yet */
    json_t *events; /* events passed on and not yet sent */
    /* A fan-out's merge of its calls' usage and completed events. */
    bool have_usage;
    int64_t usage_in, usage_out, usage_reasoning;
    const char *incomplete_reason; /* the first incomplete choice's (static string), or NULL */
    bool incomplete;
    int64_t upstream_ms; /* the slowest call's */
    struct sb_wjob *next_reap;
} sb_wjob_t;

struct sb_worker {
    struct event_base *base;
    enum sb_worker_state state;
    char *endpoint;
    char *name;
    json_t *models; /* array of strings, for READY */
    int credits;
    int heartbeat_ms;
    int liveness;
    int64_t connect_timeout_ms;
    int64_t drain_ms;
    int64_t stream_idle_ms;
    int retry_max;
    int64_t retry_base_ms;
    int64_t retry_cap_ms;
    sb_retry_budget_t *budget;
    void (*on_stopped)(void *arg);
    void *arg;

    zsock_t *sock;
    sb_zsock_ev_t *watch;
    int64_t last_heard_ms;        /* monotonic; any message from the broker counts */
    char epoch[SB_EPOCH_MAX + 1]; /* the broker instance we serve; "": not heard from one yet */
    long long ready_seq;          /* READYs sent; in our headers so RECONNECTs can be matched to them */
    struct event *heartbeat;
    struct event *drain_timer;
    struct event *reap; /* frees DONE jobs and checks for STOPPED, at a safe point */
    sb_upstream_t *upstream;
    sb_map_t *jobs;       /* job_id -> sb_wjob_t, NEW and UPSTREAM jobs */
    sb_wjob_t *reap_list; /* DONE jobs */
};

/*
 * Broker socket.
 */

static void sb_worker_on_msg(sb_wire_msg_t **msg, void *arg);

static int sb_worker_send(sb_worker_t *w, int cmd, const json_t *header, const void *body, size_t len)
{
    if (!w->sock)
        return -ENOTCONN;
    int rc = sb_wire_send(w->sock, NULL, cmd, header, body, len);
    sb_zsock_ev_poke(w->watch);
    return rc;
}

static void sb_worker_send_ready(sb_worker_t *w)
{
    w->ready_seq++;
    json_t *hdr = json_pack("{s:O, s:i, s:s, s:I}", "models", w->models, "credits", w->credits, "name", w->name, "seq",
                            (json_int_t)w->ready_seq);
    int rc = sb_worker_send(w, SB_CMD_READY, hdr, NULL, 0);
    if (rc < 0)
        sb_warn("could not send READY: %s", strerror(-rc));
    json_decref(hdr);
}

static int sb_worker_open_socket(sb_worker_t *w)
{
    w->sock = zsock_new(ZMQ_DEALER);
    if (!w->sock)
        goto fail;
    /* Never block the loop on a send: a full pipe fails with EAGAIN. */
    zsock_set_sndtimeo(w->sock, 0);
    zsock_set_sndhwm(w->sock, SB_WORKER_HWM);
    zsock_set_rcvhwm(w->sock, SB_WORKER_HWM);
    zsock_set_linger(w->sock, 0);
    if (zsock_connect(w->sock, "%s", w->endpoint) < 0) {
        sb_error("cannot connect to broker endpoint %s", w->endpoint);
        goto fail;
    }
    w->watch = sb_zsock_ev_new(w->base, w->sock, false, sb_worker_on_msg, w);
    if (!w->watch)
        goto fail;
    w->last_heard_ms = sb_mono_ms();
    return 0;
fail:
    zsock_destroy(&w->sock);
    return -EIO;
}

static void sb_worker_close_socket(sb_worker_t *w, int linger_ms)
{
    sb_zsock_ev_destroy(&w->watch);
    if (w->sock)
        zsock_set_linger(w->sock, linger_ms);
    zsock_destroy(&w->sock);
}

/*
 * Jobs.
 */

static void sb_wjob_set_state(sb_wjob_t *j, enum sb_wjob_state state)
{
    sb_debug("job %s: %s -> %s", j->job_id, sb_wjob_state_names[j->state], sb_wjob_state_names[state]);
    j->state = state;
}

static void sb_wjob_free(sb_wjob_t *j)
{
    for (int i = 0; i < j->n_calls; i++) {
        sb_wcall_t *c = &j->calls[i];
        sb_upstream_cancel(j->w->upstream, &c->xfer);
        sb_provider_parser_destroy(&c->parser);
        json_decref(c->events);
        json_decref(c->seen);
        if (c->idle)
            event_free(c->idle);
        if (c->retry_timer)
            event_free(c->retry_timer);
    }
    free(j->calls);
    free(j->route_key);
    sb_strict_destroy(&j->strict);
    sb_provider_request_clear(&j->req);
    json_decref(j->events);
    json_decref(j->own_job);
    json_decref(j->job);
    free(j);
}

/* Sends one EVENT. upstream ("ok"/"failed", or NULL to leave it out) goes
 * into a final event's header. */
static void sb_worker_send_event(sb_worker_t *w, const char *job_id, const json_t *ev, const char *upstream)
{
    json_t *hdr =
        json_pack("{s:s, s:b, s:I}", "job_id", job_id, "final", sb_event_is_final(ev), "seq", (json_int_t)w->ready_seq);
    if (upstream && sb_event_is_final(ev))
        json_object_set_new(hdr, "upstream", json_string(upstream));
    char *buf = NULL;
    size_t len = 0;
    int rc = sb_mpjson_encode(ev, &buf, &len);
    if (rc == 0)
        rc = sb_worker_send(w, SB_CMD_EVENT, hdr, buf, len);
    if (rc < 0)
        sb_error("job %s: could not send a %s event: %s", job_id, sb_event_type_name(sb_event_type_of(ev)),
                 strerror(-rc));
    free(buf);
    json_decref(hdr);
}

/* A streamed job: sends the pending events up to (not including) the first
 * final one. A non-streamed job's client sees nothing before the end, so its
 * events wait for the final one: until then every call may still be retried
 * (a fan-out's finished choices do not stop the others' retries). */
static void sb_wjob_flush_partial(sb_wjob_t *j)
{
    if (!j->stream)
        return;
    size_t n = 0;
    while (n < json_array_size(j->events) && !sb_event_is_final(json_array_get(j->events, n))) {
        sb_worker_send_event(j->w, j->job_id, json_array_get(j->events, n++), NULL);
        j->sent = true;
    }
    for (; n > 0; n--)
        json_array_remove(j->events, 0);
}

/* What the final header says about the upstream: "failed" when any call's
 * last attempt found the route failed, "ok" when one reached an answering
 * upstream, NULL when none reached it or the job was interrupted. */
static const char *sb_wjob_upstream(const sb_wjob_t *j)
{
    if (j->interrupted)
        return NULL;
    bool ok = false;
    for (int i = 0; i < j->n_calls; i++) {
        if (j->calls[i].route == SB_RETRY_ROUTE_FAILED)
            return "failed";
        ok |= j->calls[i].route == SB_RETRY_ROUTE_OK;
    }
    return ok ? "ok" : NULL;
}

/* Moves a job to DONE and onto the reap list. With send, first makes the
 * pending events end in exactly one final event (final, if given, is appended
 * and stolen; anything after a first final is dropped; a missing final
 * becomes a 502) and sends them. Without send the job is abandoned silently.
 * The caller has taken the job out of the `jobs` table. */
static void sb_wjob_end(sb_wjob_t *j, bool send, json_t *final)
{
    sb_worker_t *w = j->w;
    for (int i = 0; i < j->n_calls; i++) {
        sb_upstream_cancel(w->upstream, &j->calls[i].xfer);
        if (j->calls[i].idle)
            event_del(j->calls[i].idle);
        if (j->calls[i].retry_timer)
            event_del(j->calls[i].retry_timer);
    }
    if (send) {
        if (final)
            json_array_append_new(j->events, final);
        size_t n = json_array_size(j->events), i = 0;
        while (i < n && !sb_event_is_final(json_array_get(j->events, i)))
            i++;
        if (i == n) {
            sb_error("job %s: provider produced no final event", j->job_id);
            json_array_append_new(
                j->events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response could not be translated"));
        } else {
            while (json_array_size(j->events) > i + 1)
                json_array_remove(j->events, i + 1);
        }
        const json_t *last = json_array_get(j->events, json_array_size(j->events) - 1);
        const char *upstream = sb_wjob_upstream(j);
        if (sb_event_type_of(last) == SB_EV_ERROR)
            sb_info("job %s: error %lld %s%s%s", j->job_id,
                    (long long)json_integer_value(json_object_get(last, "status")),
                    json_string_value(json_object_get(last, "kind")), upstream ? ", upstream " : "",
                    upstream ? upstream : "");
        else
            sb_info("job %s: %s in %lld ms", j->job_id, json_string_value(json_object_get(last, "status")),
                    (long long)json_integer_value(json_object_get(last, "upstream_ms")));
        for (size_t k = 0; k < json_array_size(j->events); k++)
            sb_worker_send_event(w, j->job_id, json_array_get(j->events, k), upstream);
        json_array_clear(j->events);
        j->sent = true;
    } else {
        json_decref(final);
        sb_info("job %s: abandoned", j->job_id);
    }
    sb_wjob_set_state(j, SB_WJOB_DONE);
    j->next_reap = w->reap_list;
    w->reap_list = j;
    event_active(w->reap, EV_TIMEOUT, 0);
}

/* Ends a job that is in the table. */
static void sb_wjob_finish(sb_wjob_t *j, json_t *final)
{
    sb_map_remove(j->w->jobs, j->job_id);
    sb_wjob_end(j, true, final);
}

static json_t *sb_wjob_error(int status, const char *kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static json_t *sb_wjob_error(int status, const char *kind, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *msg = NULL;
    if (vasprintf(&msg, fmt, ap) < 0)
        abort(); /* out of memory */
    va_end(ap);
    json_t *ev = sb_event_error(status, kind, NULL, msg);
    free(msg);
    return ev;
}

/* The upstream timeout: the route's, cut to what is left before the job's
 * deadline (absolute epoch ms, 0 = none). <= 0 means already too late. */
static int64_t sb_wjob_timeout(const json_t *job, long long deadline_ms)
{
    const json_t *t = json_object_get(sb_job_route(job), "timeout_ms");
    int64_t timeout =
        json_is_integer(t) && json_integer_value(t) > 0 ? json_integer_value(t) : SB_WORKER_DEFAULT_ROUTE_TIMEOUT_MS;
    if (deadline_ms > 0) {
        int64_t left = deadline_ms - sb_now_ms();
        if (left < timeout)
            timeout = left;
    }
    return timeout;
}

/*
 * Calls.
 */

static int sb_wcall_on_data(long status, const char *data, size_t len, void *arg);
static void sb_wcall_on_done(const sb_upstream_result_t *res, void *arg);
static void sb_wcall_on_final(sb_wcall_t *c);

/* (Re)arms a streaming call's idle timer. */
static void sb_wcall_arm_idle(sb_wcall_t *c)
{
    if (!c->idle)
        return;
    int64_t ms = c->j->w->stream_idle_ms;
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    event_add(c->idle, &tv);
}

/* A streaming upstream said nothing for stream_idle_ms: it is stuck. The
 * call ends with a timeout, which ends the job (and, in a fan-out, the other
 * calls); the client gets the style's error event. */
static void sb_wcall_on_idle(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_wcall_t *c = arg;
    if (!c->xfer)
        return;
    sb_upstream_cancel(c->j->w->upstream, &c->xfer);
    c->route = SB_RETRY_ROUTE_FAILED;
    sb_warn("job %s: upstream stream idle for %lld ms; ending it", c->j->job_id, (long long)c->j->w->stream_idle_ms);
    json_array_append_new(c->events,
                          sb_wjob_error(504, SB_ERR_TIMEOUT, "timeout: the upstream stream sent nothing for %lld ms",
                                        (long long)c->j->w->stream_idle_ms));
    sb_wcall_on_final(c);
}

/* Starts (or restarts, for a retry) a call's transfer with a fresh parser
 * and a timeout cut to the job's deadline. Returns 0, or a negative code with
 * *err set to the job's final error event. */
static int sb_wcall_start(sb_wcall_t *c, json_t **err)
{
    sb_wjob_t *j = c->j;
    c->timeout_ms = sb_wjob_timeout(j->job, j->deadline_ms);
    if (c->timeout_ms <= 0) {
        bool first = c->attempt == 1 && c->retries == 0;
        *err = sb_event_error(504, SB_ERR_TIMEOUT, NULL,
                              first ? "timeout: the job's deadline passed before it reached the upstream"
                                    : "timeout: the job's deadline passed before the retry could start");
        return -ETIMEDOUT;
    }
    sb_provider_parser_destroy(&c->parser);
    c->parser = sb_provider_parser_new(j->provider, j->call_job);
    c->feed_error = 0;
    sb_upstream_cbs_t cbs = {.on_data = sb_wcall_on_data, .on_done = sb_wcall_on_done};
    if (sb_upstream_start(j->w->upstream, &j->req, c->timeout_ms, j->w->connect_timeout_ms, &cbs, c, &c->xfer) < 0) {
        *err = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream request could not be started");
        return -EIO;
    }
    if (j->stream && j->w->stream_idle_ms > 0 && !c->idle)
        c->idle = evtimer_new(j->w->base, sb_wcall_on_idle, c);
    sb_wcall_arm_idle(c);
    return 0;
}

/* Moves a call's events, up to its first final one, to the job and sends
 * them. In a fan-out they are tagged with the call's choice and usage is
 * summed into the job instead (sent once, at the end); anything the upstream
 * sent for other choices (it was not asked for any) is dropped. */
static void sb_wcall_pass(sb_wcall_t *c)
{
    sb_wjob_t *j = c->j;
    if (c->events != j->events) {
        size_t n = 0;
        json_t *ev;
        while (n < json_array_size(c->events) && !sb_event_is_final(ev = json_array_get(c->events, n))) {
            n++;
            if (c->seen)
                json_array_append(c->seen, ev);
            if (c->choice >= 0) {
                enum sb_event_type t = sb_event_type_of(ev);
                if (t == SB_EV_USAGE) {
                    j->have_usage = true;
                    j->usage_in += json_integer_value(json_object_get(ev, "input_tokens"));
                    j->usage_out += json_integer_value(json_object_get(ev, "output_tokens"));
                    j->usage_reasoning += json_integer_value(json_object_get(ev, "reasoning_tokens"));
                    continue;
                }
                if (t == SB_EV_CHOICE_DONE || sb_event_choice(ev) > 0)
                    continue;
                sb_event_set_choice(ev, c->choice);
            }
            json_array_append(j->events, ev);
        }
        if (n == json_array_size(c->events))
            json_array_clear(c->events);
        else
            for (; n > 0; n--)
                json_array_remove(c->events, 0);
    }
    sb_wjob_flush_partial(j);
}

/* Takes the first final event out of a call's events, dropping anything
 * after it; a missing one becomes a 502. Returns it (new reference). */
static json_t *sb_wcall_take_final(sb_wcall_t *c)
{
    size_t n = json_array_size(c->events), i = 0;
    while (i < n && !sb_event_is_final(json_array_get(c->events, i)))
        i++;
    if (i == n) {
        sb_error("job %s: provider produced no final event", c->j->job_id);
        return sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response could not be translated");
    }
    json_t *final = json_incref(json_array_get(c->events, i));
    while (json_array_size(c->events) > i)
        json_array_remove(c->events, i);
    return final;
}

/* A strict call's attempt ended with `final` (completed): checks its output.
 * Returns 0 when valid. When not: 1 after restarting the call for its next
 * attempt, or -1 with *err set to the job's final error (no attempt left, or
 * the retry could not start). */
static int sb_wcall_check(sb_wcall_t *c, const json_t *final, json_t **err)
{
    sb_wjob_t *j = c->j;
    char what[160], why[512];
    if (sb_strict_check(j->strict, c->seen ? c->seen : c->events, final, what, sizeof what, why, sizeof why) == 0)
        return 0;
    char choice[32] = "";
    if (c->choice >= 0)
        snprintf(choice, sizeof choice, " (choice %d)", c->choice);
    json_array_clear(c->events); /* invalid output goes nowhere (streamed: no further) */
    /* A stream has shown this attempt already: no retry can take it back. */
    if (c->attempt < SB_WORKER_STRICT_ATTEMPTS && !j->stream) {
        /* `what` names a schema, never the output. */
        sb_warn("job %s: model output%s did not match %s on attempt %d; retrying", j->job_id, choice, what, c->attempt);
        c->attempt++;
        return sb_wcall_start(c, err) == 0 ? 1 : -1;
    }
    sb_warn("job %s: model output%s did not match %s after %d attempts", j->job_id, choice, what, c->attempt);
    char *msg = sb_xasprintf("The model's output did not match %s after %d attempts: %s", what, c->attempt, why);
    *err = sb_event_error(502, SB_ERR_UPSTREAM, "invalid_structured_output", msg);
    free(msg);
    return -1;
}

/*
 * A call's attempt is over and its final event is in c->events: validate
 * (strict), retry, or pass the events on; then end the job when this was its
 * last call (or its final is an error, which ends a fan-out at once).
 */
static void sb_wcall_on_final(sb_wcall_t *c)
{
    sb_wjob_t *j = c->j;
    if (c->idle)
        event_del(c->idle);
    json_t *final = sb_wcall_take_final(c);
    if (c->seen && sb_event_type_of(final) == SB_EV_COMPLETED)
        sb_wcall_pass(c); /* the rest of the stream, so the check sees all of it */
    if (sb_event_type_of(final) == SB_EV_COMPLETED) {
        c->upstream_ms += json_integer_value(json_object_get(final, "upstream_ms"));
        json_t *err = NULL;
        int rc = j->strict ? sb_wcall_check(c, final, &err) : 0;
        if (rc > 0) { /* retrying */
            json_decref(final);
            return;
        }
        if (rc < 0) {
            json_decref(final);
            final = err;
        }
    }
    j->calls_open--;
    if (sb_event_type_of(final) == SB_EV_ERROR) {
        if (c->events != j->events)
            json_array_clear(c->events); /* held (unsent) output of a failed call goes nowhere */
        sb_wjob_finish(j, final);        /* cancels the other calls of a fan-out */
        return;
    }
    sb_wcall_pass(c);
    if (c->choice < 0) {
        json_object_set_new(final, "upstream_ms", json_integer(c->upstream_ms));
        sb_wjob_finish(j, final);
        return;
    }
    /* One choice of a fan-out. */
    const char *status = json_string_value(json_object_get(final, "status"));
    const char *reason = NULL;
    if (status && !strcmp(status, "incomplete")) {
        const char *r = json_string_value(json_object_get(final, "incomplete_reason"));
        reason = r && !strcmp(r, "max_output_tokens") ? "max_output_tokens"
                 : r && !strcmp(r, "content_filter")  ? "content_filter"
                                                      : NULL;
        if (!j->incomplete) {
            j->incomplete = true;
            j->incomplete_reason = reason;
        }
    } else {
        status = "completed";
    }
    json_array_append_new(j->events, sb_event_choice_done(c->choice, status, reason));
    json_decref(final);
    if (c->upstream_ms > j->upstream_ms)
        j->upstream_ms = c->upstream_ms;
    sb_wjob_flush_partial(j);
    if (j->calls_open > 0)
        return;
    if (j->have_usage)
        json_array_append_new(j->events, sb_event_usage(j->usage_in, j->usage_out, j->usage_reasoning));
    sb_wjob_finish(j, sb_event_completed(j->incomplete ? "incomplete" : "completed", j->incomplete_reason,
                                         json_string_value(json_object_get(j->job, "model")), j->upstream_ms));
}

/* Upstream body bytes: buffered (or, streaming, translated) by the parser;
 * what it produces goes on at once unless the job's output is held. */
static int sb_wcall_on_data(long status, const char *data, size_t len, void *arg)
{
    sb_wcall_t *c = arg;
    int rc = sb_provider_parser_feed(c->parser, status, data, len, c->events);
    if (rc < 0) {
        c->feed_error = rc;
        return rc;
    }
    sb_wcall_arm_idle(c);
    if (!c->j->strict || c->j->stream)
        sb_wcall_pass(c);
    return 0;
}

/* A call's retry timer: its next attempt. */
static void sb_wcall_on_retry(evutil_socket_t fd, short what, void *arg)
{
    sb_wcall_t *c = arg;
    json_t *err = NULL;
    if (sb_wcall_start(c, &err) < 0)
        sb_wjob_finish(c->j, err);
}

/* The first final event among a call's events (borrowed), or NULL. */
static const json_t *sb_wcall_peek_final(const sb_wcall_t *c)
{
    for (size_t i = 0; i < json_array_size(c->events); i++)
        if (sb_event_is_final(json_array_get(c->events, i)))
            return json_array_get(c->events, i);
    return NULL;
}

/*
 * An attempt is over and its events (the final one included) are in
 * c->events: records what it says about the route and, when its failure is
 * transient and the rules (top of file) allow, drops its events and arms
 * the retry timer. Returns true when a retry is pending.
 */
static bool sb_wcall_retry(sb_wcall_t *c, const sb_upstream_result_t *res)
{
    sb_wjob_t *j = c->j;
    sb_worker_t *w = j->w;
    const json_t *final = sb_wcall_peek_final(c);
    sb_retry_verdict_t v = sb_retry_classify(res->outcome, res->status, final);
    c->route = v.route;
    if (!v.transient || w->retry_max <= 0)
        return false;
    char why[160];
    if (res->outcome == SB_UPSTREAM_OK)
        snprintf(why, sizeof why, "upstream %ld", res->status);
    else if (res->outcome == SB_UPSTREAM_CONNECT_FAILED)
        snprintf(why, sizeof why, "upstream connection failed (%s)", res->detail);
    else
        snprintf(why, sizeof why, "upstream transfer failed (%s)", res->detail);
    char choice[32] = "";
    if (c->choice >= 0)
        snprintf(choice, sizeof choice, " (choice %d)", c->choice);
    if (c->retries >= w->retry_max) {
        sb_info("job %s%s: %s; no retry left after %d", j->job_id, choice, why, c->retries);
        return false;
    }
    if (j->sent) {
        sb_info("job %s%s: %s; not retried: the client has seen part of the answer", j->job_id, choice, why);
        return false;
    }
    const json_t *ra = json_object_get(final, "retry_after");
    long retry_after = json_is_integer(ra) ? (long)json_integer_value(ra) : res->retry_after;
    int64_t delay = sb_retry_backoff_ms(c->retries + 1, w->retry_base_ms, w->retry_cap_ms, retry_after);
    if (j->deadline_ms > 0 ? sb_now_ms() + delay + SB_WORKER_RETRY_MIN_LEFT_MS > j->deadline_ms
                           : delay > sb_wjob_timeout(j->job, 0)) {
        sb_info("job %s%s: %s; not retried: a retry after %lld ms would pass the deadline", j->job_id, choice, why,
                (long long)delay);
        return false;
    }
    if (!c->retry_timer && !(c->retry_timer = evtimer_new(w->base, sb_wcall_on_retry, c)))
        return false;
    if (!sb_retry_budget_withdraw(w->budget, j->route_key)) {
        if (sb_retry_budget_warn_due(w->budget, j->route_key, sb_mono_ms())) {
            const char *provider = sb_job_route_str(j->job, "provider");
            const char *url = sb_job_route_str(j->job, "base_url");
            const char *model = sb_job_route_str(j->job, "upstream_model");
            sb_warn("retry budget of route %s %s %s exhausted: not retrying (job %s%s: %s)", provider ? provider : "",
                    url ? url : "", model ? model : "", j->job_id, choice, why);
        }
        return false;
    }
    c->retries++;
    sb_info("job %s%s: retry %d of %d after %lld ms: %s", j->job_id, choice, c->retries, w->retry_max, (long long)delay,
            why);
    /* Nothing of this attempt has left (j->sent is false): it goes nowhere. */
    json_array_clear(c->events);
    if (c->seen)
        json_array_clear(c->seen);
    if (c->idle)
        event_del(c->idle);
    struct timeval tv = {.tv_sec = delay / 1000, .tv_usec = (delay % 1000) * 1000};
    if (evtimer_add(c->retry_timer, &tv) < 0)
        sb_wcall_on_retry(-1, 0, c); /* only on a libevent failure: retry at once rather than lose the call */
    return true;
}

static void sb_wcall_on_done(const sb_upstream_result_t *res, void *arg)
{
    sb_wcall_t *c = arg;
    c->xfer = NULL; /* upstream frees it when we return */
    json_t *final = NULL;
    switch (res->outcome) {
    case SB_UPSTREAM_OK: {
        sb_provider_response_t resp = {
            .status = res->status, .retry_after = res->retry_after, .upstream_ms = res->elapsed_ms};
        sb_provider_parser_finish(c->parser, &resp, c->events);
        break;
    }
    case SB_UPSTREAM_TIMEOUT:
        final = sb_wjob_error(504, SB_ERR_TIMEOUT, "timeout: upstream did not answer within %lld ms",
                              (long long)c->timeout_ms);
        break;
    case SB_UPSTREAM_CONNECT_FAILED:
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream connection failed");
        break;
    case SB_UPSTREAM_ABORTED:
        final = c->feed_error == -E2BIG
                    ? sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response too large")
                    : sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response could not be parsed");
        break;
    case SB_UPSTREAM_FAILED:
        final = sb_wjob_error(502, SB_ERR_UPSTREAM, "upstream request failed: %s", res->detail);
        break;
    }
    if (final)
        json_array_append_new(c->events, final);
    if (sb_wcall_retry(c, res))
        return;
    sb_wcall_on_final(c);
}

/*
 * Job start.
 */

/* How many upstream calls the job needs: request.n when it asks for several
 * choices of an upstream that cannot do n, else 1. Returns 0 with *err set
 * when n is out of range for a fan-out. */
static int sb_wjob_fanout(const sb_provider_t *provider, const json_t *job, json_t **err)
{
    const json_t *n = json_object_get(sb_job_request(job), "n");
    const json_t *caps = json_object_get(sb_job_route(job), "capabilities");
    bool native = provider->supports_n && !json_is_false(json_object_get(caps, "n"));
    if (!json_is_integer(n) || json_integer_value(n) <= 1 || native)
        return 1; /* a bad n is the adapter's to refuse */
    if (json_integer_value(n) > SB_WORKER_MAX_FANOUT) {
        *err = sb_wjob_error(400, SB_ERR_INVALID_REQUEST, "request.n must be at most %d for this model",
                             SB_WORKER_MAX_FANOUT);
        return 0;
    }
    return (int)json_integer_value(n);
}

/* Takes a NEW job from its body to running calls, or to DONE with an error
 * event. */
static void sb_wjob_start(sb_wjob_t *j, const zframe_t *body, long long deadline_ms)
{
    sb_worker_t *w = j->w;
    json_t *err = NULL;
    if (w->state != SB_WORKER_ACTIVE) {
        err = sb_event_error(503, SB_ERR_OVERLOADED, NULL, "worker is shutting down");
        goto fail;
    }
    if (sb_map_size(w->jobs) > (size_t)w->credits) { /* this job is already counted */
        err = sb_event_error(503, SB_ERR_OVERLOADED, NULL, "worker is at capacity");
        goto fail;
    }
    if (!body || sb_mpjson_decode(zframe_data((zframe_t *)body), zframe_size((zframe_t *)body), &j->job) < 0 ||
        !json_is_object(j->job)) {
        err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "job body is not a valid msgpack job");
        goto fail;
    }
    const char *kind = sb_job_route_str(j->job, "provider");
    if (!kind) {
        err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "job route has no provider");
        goto fail;
    }
    j->provider = sb_provider_lookup(kind);
    if (!j->provider) {
        err = sb_wjob_error(501, SB_ERR_SERVER, "provider kind '%s' is not supported", kind);
        goto fail;
    }
    const json_t *op = json_object_get(sb_job_request(j->job), "op");
    if (op && !sb_job_is_count(j->job) && !(json_is_string(op) && !strcmp(json_string_value(op), "generate"))) {
        err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "job request.op is not supported");
        goto fail;
    }
    /* A count generates nothing to check, and asks for one count. */
    bool count = sb_job_is_count(j->job);
    bool count_endpoint = count && j->provider->build_count_request && j->provider->parse_count_response;
    /* The frontend checks schemas too, but a worker trusts no job. */
    if (!count && sb_strict_new(sb_job_request(j->job), &j->strict, &err) < 0)
        goto fail;
    j->stream = !count && json_is_true(json_object_get(sb_job_request(j->job), "stream"));
    int n_calls = count ? 1 : sb_wjob_fanout(j->provider, j->job, &err);
    if (n_calls == 0)
        goto fail;
    j->call_job = j->job;
    if (n_calls > 1) { /* a shallow copy: only request.n differs */
        json_t *request = json_copy((json_t *)sb_job_request(j->job));
        json_object_del(request, "n");
        j->own_job = json_copy(j->job);
        json_object_set_new(j->own_job, "request", request);
        j->call_job = j->own_job;
    } else if (count && !count_endpoint) {
        /* No counting endpoint (OpenAI Chat, vLLM, llama.cpp, Ollama): the
         * count is the prompt_tokens of a generation cut to one output
         * token, exact as the upstream counts it, and it costs that token. */
        j->own_job = sb_provider_count_job(j->job);
        j->call_job = j->own_job;
    }
    int built = count_endpoint ? j->provider->build_count_request(j->call_job, &j->req, &err)
                               : j->provider->build_request(j->call_job, &j->req, &err);
    if (built < 0) {
        if (!err)
            err = sb_event_error(500, SB_ERR_SERVER, NULL, "could not build the upstream request");
        goto fail;
    }
    j->deadline_ms = deadline_ms;
    j->route_key = sb_retry_budget_key(j->job);
    j->calls = sb_xcalloc((size_t)n_calls, sizeof *j->calls);
    j->n_calls = n_calls;
    for (int i = 0; i < n_calls; i++) {
        sb_wcall_t *c = &j->calls[i];
        c->j = j;
        c->choice = n_calls > 1 ? i : -1;
        c->attempt = 1;
        c->events = (n_calls == 1 && !j->strict) ? json_incref(j->events) : json_array();
        if (j->strict && j->stream)
            c->seen = json_array();
    }
    for (int i = 0; i < n_calls; i++) {
        if (sb_wcall_start(&j->calls[i], &err) < 0)
            goto fail; /* ending the job cancels the calls already started */
        j->calls_open++;
        sb_retry_budget_deposit(w->budget, j->route_key); /* a call the client asked for */
    }
    if (!j->strict && w->retry_max <= 0) /* no retry will need it; curl has its own copy */
        sb_provider_request_clear(&j->req);
    sb_debug("job %s: %s %s, %d call(s), timeout %lld ms%s%s", j->job_id, kind,
             json_string_value(json_object_get(j->job, "model")), n_calls, (long long)j->calls[0].timeout_ms,
             j->strict ? ", strict output" : "", count ? ", token count" : "");
    sb_wjob_set_state(j, SB_WJOB_UPSTREAM);
    return;
fail:
    sb_wjob_finish(j, err);
}

static void sb_worker_on_job(sb_worker_t *w, const sb_wire_msg_t *msg)
{
    const char *job_id = sb_wire_header_str(msg, "job_id");
    if (!job_id || !*job_id || strlen(job_id) > SB_JOB_ID_MAX) {
        sb_warn("dropped a JOB without a usable job_id");
        return;
    }
    if (sb_map_get(w->jobs, job_id)) {
        sb_warn("job %s: dropped a duplicate JOB", job_id);
        return;
    }
    sb_wjob_t *j = sb_xcalloc(1, sizeof *j);
    j->w = w;
    j->state = SB_WJOB_NEW;
    snprintf(j->job_id, sizeof j->job_id, "%s", job_id);
    j->events = json_array();
    sb_map_put(w->jobs, j->job_id, j);
    sb_wjob_start(j, msg->body, sb_wire_header_int(msg, "deadline_ms", 0));
}

static void sb_worker_on_cancel(sb_worker_t *w, const sb_wire_msg_t *msg)
{
    const char *job_id = sb_wire_header_str(msg, "job_id");
    sb_wjob_t *j = job_id ? sb_map_get(w->jobs, job_id) : NULL;
    if (!j)
        return;            /* already over: its final event is on its way */
    j->interrupted = true; /* a pending retry dies with it */
    sb_wjob_finish(j, sb_event_error(499, "cancelled", NULL, "job cancelled"));
}

static int sb_worker_abandon_one(const char *key, void *value, void *arg)
{
    sb_wjob_end(value, false, NULL);
    return 1;
}

static int sb_worker_fail_one(const char *key, void *value, void *arg)
{
    sb_wjob_t *j = value;
    j->interrupted = true;
    sb_wjob_end(j, true, sb_event_error(503, SB_ERR_OVERLOADED, NULL, "worker is shutting down"));
    return 1;
}

/* Drops every running job without events: the broker has forgotten us (or is
 * gone), so nothing could be delivered. */
static void sb_worker_abandon_all(sb_worker_t *w)
{
    if (sb_map_size(w->jobs) > 0)
        sb_warn("abandoning %zu in-flight job(s)", sb_map_size(w->jobs));
    sb_map_remove_if(w->jobs, sb_worker_abandon_one, NULL);
}

/*
 * Session.
 */

static void sb_worker_set_state(sb_worker_t *w, enum sb_worker_state state)
{
    static const char *const names[] = {"active", "draining", "stopped"};
    sb_info("worker %s: %s -> %s", w->name, names[w->state], names[state]);
    w->state = state;
}

/* RECONNECT: the broker does not know us. One that echoes a seq older than
 * our latest READY answers a message sent before it (buffered while the
 * broker restarted): that READY already answers it. Otherwise our jobs are
 * unknown to the broker: they are dropped and READY is sent, once. */
static void sb_worker_on_reconnect(sb_worker_t *w, const sb_wire_msg_t *msg, const char *epoch)
{
    long long seq = sb_wire_header_int(msg, "seq", -1);
    if (seq >= 0 && seq < w->ready_seq) {
        sb_debug("RECONNECT for a message sent before READY %lld: already answered", w->ready_seq);
        return;
    }
    sb_warn("broker%s%s asked us to reconnect", epoch ? " " : "", epoch ? epoch : "");
    sb_worker_abandon_all(w);
    if (epoch)
        snprintf(w->epoch, sizeof w->epoch, "%s", epoch);
    if (w->state == SB_WORKER_ACTIVE) /* a draining worker wants no new jobs */
        sb_worker_send_ready(w);
}

static void sb_worker_on_msg(sb_wire_msg_t **pmsg, void *arg)
{
    sb_worker_t *w = arg;
    const sb_wire_msg_t *msg = *pmsg;
    w->last_heard_ms = sb_mono_ms();
    const char *epoch = sb_wire_header_str(msg, "epoch");
    if (epoch && (!*epoch || strlen(epoch) > SB_EPOCH_MAX))
        epoch = NULL;
    if (msg->cmd == SB_CMD_RECONNECT) {
        sb_worker_on_reconnect(w, msg, epoch);
        return;
    }
    if (epoch && strcmp(epoch, w->epoch) != 0) {
        /* A broker that knows us (it sends more than RECONNECT) but is not
         * the one our jobs came from: those are lost with their broker. */
        if (w->epoch[0]) {
            sb_warn("broker restarted (epoch %s, was %s)", epoch, w->epoch);
            sb_worker_abandon_all(w);
        }
        snprintf(w->epoch, sizeof w->epoch, "%s", epoch);
    }
    switch (msg->cmd) {
    case SB_CMD_JOB:
        sb_worker_on_job(w, msg);
        break;
    case SB_CMD_CANCEL:
        sb_worker_on_cancel(w, msg);
        break;
    case SB_CMD_HEARTBEAT:
        break;
    default:
        sb_warn("dropped a message with unexpected command 0x%02x", msg->cmd);
        break;
    }
}

/* Every heartbeat interval: beat, and if the broker has been silent for the
 * liveness period, start over with a fresh socket (zmq would reconnect the
 * old one, but a restarted broker would not know our routing id). */
static void sb_worker_on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    sb_worker_t *w = arg;
    int64_t silent = sb_mono_ms() - w->last_heard_ms;
    if (silent >= (int64_t)w->heartbeat_ms * w->liveness) {
        sb_warn("broker silent for %lld ms: reconnecting to %s", (long long)silent, w->endpoint);
        sb_worker_abandon_all(w);
        sb_worker_close_socket(w, 0);
        w->epoch[0] = '\0'; /* whichever broker answers the fresh socket holds none of our jobs */
        if (sb_worker_open_socket(w) < 0) {
            sb_error("cannot reopen the broker socket; retrying in %d ms", w->heartbeat_ms);
            return;
        }
        if (w->state == SB_WORKER_ACTIVE)
            sb_worker_send_ready(w);
        return;
    }
    if (!w->sock && sb_worker_open_socket(w) < 0)
        return;
    json_t *hdr = json_pack("{s:I}", "seq", (json_int_t)w->ready_seq);
    int rc = sb_worker_send(w, SB_CMD_HEARTBEAT, hdr, NULL, 0);
    json_decref(hdr);
    if (rc < 0 && rc != -EAGAIN)
        sb_warn("could not send HEARTBEAT: %s", strerror(-rc));
}

static void sb_worker_on_reap(evutil_socket_t fd, short what, void *arg)
{
    sb_worker_t *w = arg;
    while (w->reap_list) {
        sb_wjob_t *j = w->reap_list;
        w->reap_list = j->next_reap;
        sb_wjob_free(j);
    }
    if (w->state == SB_WORKER_DRAINING && sb_map_size(w->jobs) == 0) {
        event_del(w->drain_timer);
        sb_worker_set_state(w, SB_WORKER_STOPPED);
        if (w->on_stopped)
            w->on_stopped(w->arg);
    }
}

static void sb_worker_on_drain_timeout(evutil_socket_t fd, short what, void *arg)
{
    sb_worker_t *w = arg;
    sb_warn("drain period over with %zu job(s) running: failing them", sb_map_size(w->jobs));
    sb_map_remove_if(w->jobs, sb_worker_fail_one, NULL);
    event_active(w->reap, EV_TIMEOUT, 0);
}

/* "a,b , c" -> ["a","b","c"]; nothing -> ["*"]. */
static json_t *sb_worker_parse_models(const char *models)
{
    json_t *arr = json_array();
    const char *p = models ? models : "";
    while (*p) {
        const char *end = strchr(p, ',');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *s = p;
        size_t m = n;
        while (m > 0 && (*s == ' ' || *s == '\t')) {
            s++;
            m--;
        }
        while (m > 0 && (s[m - 1] == ' ' || s[m - 1] == '\t'))
            m--;
        if (m > 0 && m <= SB_MODEL_ID_MAX)
            json_array_append_new(arr, json_stringn(s, m));
        p += n;
        if (*p == ',')
            p++;
    }
    if (json_array_size(arr) == 0)
        json_array_append_new(arr, json_string("*"));
    return arr;
}

sb_worker_t *sb_worker_new(const sb_worker_config_t *cfg, struct event_base *base)
{
    sb_worker_t *w = sb_xcalloc(1, sizeof *w);
    w->base = base;
    w->state = SB_WORKER_ACTIVE;
    w->endpoint = sb_xstrdup(cfg->endpoint ? cfg->endpoint : SB_BROKER_WORKER_ENDPOINT_DEFAULT);
    if (cfg->name && *cfg->name) {
        w->name = sb_xstrdup(cfg->name);
    } else {
        char host[256] = "worker";
        if (gethostname(host, sizeof host) < 0)
            snprintf(host, sizeof host, "worker");
        host[sizeof host - 1] = '\0';
        w->name = sb_xasprintf("%s-%d", host, (int)getpid());
    }
    w->models = sb_worker_parse_models(cfg->models);
    w->credits = cfg->credits > 0 ? cfg->credits : SB_WORKER_DEFAULT_CREDITS;
    w->heartbeat_ms = cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : SB_HEARTBEAT_INTERVAL_MS;
    w->liveness = cfg->liveness > 0 ? cfg->liveness : SB_HEARTBEAT_LIVENESS;
    w->connect_timeout_ms =
        cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : SB_WORKER_DEFAULT_CONNECT_TIMEOUT_MS;
    w->drain_ms = cfg->drain_ms > 0 ? cfg->drain_ms : SB_WORKER_DEFAULT_DRAIN_MS;
    w->stream_idle_ms = cfg->stream_idle_ms > 0 ? cfg->stream_idle_ms : SB_WORKER_DEFAULT_STREAM_IDLE_MS;
    w->retry_max = cfg->retry_max > 0 ? cfg->retry_max : cfg->retry_max == 0 ? SB_WORKER_DEFAULT_RETRY_MAX : 0;
    w->retry_base_ms = cfg->retry_base_ms > 0 ? cfg->retry_base_ms : SB_WORKER_DEFAULT_RETRY_BASE_MS;
    w->retry_cap_ms = cfg->retry_cap_ms > 0 ? cfg->retry_cap_ms : SB_WORKER_DEFAULT_RETRY_CAP_MS;
    w->budget = sb_retry_budget_new(cfg->retry_budget > 0    ? cfg->retry_budget
                                    : cfg->retry_budget == 0 ? SB_WORKER_DEFAULT_RETRY_BUDGET
                                                             : 0);
    w->on_stopped = cfg->on_stopped;
    w->arg = cfg->arg;
    w->jobs = sb_map_new();
    w->upstream = sb_upstream_new(base);
    w->heartbeat = event_new(base, -1, EV_PERSIST, sb_worker_on_heartbeat, w);
    w->drain_timer = evtimer_new(base, sb_worker_on_drain_timeout, w);
    w->reap = event_new(base, -1, 0, sb_worker_on_reap, w);
    if (!w->upstream || !w->heartbeat || !w->drain_timer || !w->reap)
        goto fail;
    if (sb_worker_open_socket(w) < 0)
        goto fail;
    struct timeval tv = {.tv_sec = w->heartbeat_ms / 1000, .tv_usec = (w->heartbeat_ms % 1000) * 1000};
    if (event_add(w->heartbeat, &tv) < 0)
        goto fail;
    sb_worker_send_ready(w);
    sb_info("worker %s: connecting to %s, %d credits, up to %d upstream retries per call", w->name, w->endpoint,
            w->credits, w->retry_max);
    return w;
fail:
    sb_worker_destroy(&w);
    return NULL;
}

void sb_worker_destroy(sb_worker_t **pw)
{
    if (!pw || !*pw)
        return;
    sb_worker_t *w = *pw;
    if (w->jobs)
        sb_worker_abandon_all(w);
    while (w->reap_list) {
        sb_wjob_t *j = w->reap_list;
        w->reap_list = j->next_reap;
        sb_wjob_free(j);
    }
    sb_worker_close_socket(w, SB_WORKER_CLOSE_LINGER_MS);
    sb_upstream_destroy(&w->upstream);
    if (w->heartbeat)
        event_free(w->heartbeat);
    if (w->drain_timer)
        event_free(w->drain_timer);
    if (w->reap)
        event_free(w->reap);
    sb_map_destroy(&w->jobs);
    sb_retry_budget_destroy(&w->budget);
    json_decref(w->models);
    free(w->endpoint);
    free(w->name);
    free(w);
    *pw = NULL;
}

void sb_worker_stop(sb_worker_t *w)
{
    if (w->state == SB_WORKER_STOPPED)
        return;
    if (w->state == SB_WORKER_DRAINING) {
        sb_worker_on_drain_timeout(-1, 0, w);
        return;
    }
    sb_worker_set_state(w, SB_WORKER_DRAINING);
    struct timeval tv = {.tv_sec = w->drain_ms / 1000, .tv_usec = (w->drain_ms % 1000) * 1000};
    event_add(w->drain_timer, &tv);
    event_active(w->reap, EV_TIMEOUT, 0); /* reaches STOPPED at once when idle */
}

enum sb_worker_state sb_worker_state(const sb_worker_t *w)
{
    return w->state;
}

size_t sb_worker_inflight(const sb_worker_t *w)
{
    return sb_map_size(w->jobs);
}
