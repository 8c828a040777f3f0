/*
 * broker: the loop and the policy. Reads both ROUTER sockets, validates every
 * message (a malformed one is logged and dropped, never fatal), keeps the job
 * table, dispatches queued jobs to workers, forwards events, and turns
 * deadlines, cancellations and lost peers into canonical error events.
 * It consults each model's circuit breakers (broker_breaker.c: the model-wide
 * one and the job's client's) before it queues or dispatches a job and
 * reports each dispatched job's end to both.
 *
 * Everything runs on one thread. Workers found dead mid-iteration are only
 * marked (sb_broker_registry_mark_lost) and reaped at the end of the
 * iteration, so handlers never see a freed worker.
 *
 * Restarts: every message sent carries this instance's epoch (random at
 * start), SUBMITs naming another epoch are refused, and a READY from a worker
 * already registered updates it in place rather than counting as a loss and
 * a join: a restart costs each worker one registration, not a storm of them.
 * For its first liveness period the broker queues jobs for models no worker
 * has announced yet instead of refusing them: after a restart the workers are
 * registering again at that moment.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "broker_breaker.h"
#include "broker_internal.h"
#include "broker_metrics.h"
#include "sb_alloc.h"
#include "sb_broker.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_time.h"

/* Messages read per socket per iteration, so neither side starves the other
 * nor the timers. */
#define SB_BROKER_RECV_BUDGET 512
/* How often queued and in-flight deadlines are checked. */
#define SB_BROKER_SWEEP_MS 50
/* How often queue depths are logged (only when something changed). */
#define SB_BROKER_STATS_MS 10000
/* Send queue toward each frontend, in messages: a frontend that falls this
 * far behind loses the job (it is cancelled) rather than stalling the loop. */
#define SB_BROKER_FRONTEND_SNDHWM 100000
/* Toward workers there is no limit (0): what is queued for a worker is
 * bounded by its credits, and a full pipe would otherwise read as a lost
 * worker. */
#define SB_BROKER_WORKER_SNDHWM 0

struct sb_broker {
    char *frontend_endpoint; /* as bound */
    char *worker_endpoint;
    size_t queue_max;
    int heartbeat_ms;
    int liveness;
    int grace_ms;
    int breaker_failures; /* 0: no circuit breaking */
    int breaker_cooldown_ms;
    char epoch[SB_EPOCH_HEX_LEN + 1]; /* this instance's id, in every header sent */
    int64_t warm_mono;                /* sb_mono_ms until which unserved models' jobs wait (startup grace) */
    bool warm;                        /* the startup grace is over */
    sb_broker_counts_t counts;

    zsock_t *frontends; /* ROUTER, frontends connect here */
    zsock_t *workers;   /* ROUTER, workers connect here */

    sb_map_t *jobs; /* job_id -> sb_broker_job_t, every job the broker holds (owning) */
    sb_broker_queues_t *queues;
    sb_broker_registry_t *registry;
    sb_breakers_t *breakers; /* per-model circuit breakers (holds none when disabled) */

    bool need_dispatch;     /* a job was queued or a credit freed since the last dispatch */
    bool stats_dirty;       /* queues or workers changed since the last stats line */
    int64_t next_heartbeat; /* sb_mono_ms */
    int64_t next_sweep;
    int64_t next_stats;
    volatile sig_atomic_t stop;
};

/*
 * Sending.
 */

/* A new header holding this broker's epoch, for the caller to add to. */
static json_t *sb_broker_header(const sb_broker_t *b)
{
    return json_pack("{s:s}", "epoch", b->epoch);
}

/* Stamps the epoch onto a header about to be sent (received headers are
 * forwarded, so the stamp replaces whatever the peer put there). */
static void sb_broker_stamp(const sb_broker_t *b, json_t *header)
{
    json_object_set_new(header, "epoch", json_string(b->epoch));
}

/* Sends an error EVENT for job_id to a frontend: header {job_id, final:true},
 * body the msgpack of sb_event_error(...), plus "retry_after" (seconds, for
 * the frontend's Retry-After) when retry_after_s > 0. Failures are logged,
 * not returned: there is nobody left to tell. */
static void sb_broker_send_error_retry(sb_broker_t *b, zframe_t *frontend, const char *job_id, int status,
                                       const char *kind, const char *code, const char *message, int retry_after_s)
{
    sb_broker_metrics_error(code);
    json_t *hdr = json_pack("{s:s, s:b, s:s}", "job_id", job_id, "final", 1, "epoch", b->epoch);
    json_t *ev = sb_event_error(status, kind, code, message);
    if (ev && retry_after_s > 0)
        json_object_set_new(ev, "retry_after", json_integer(retry_after_s));
    char *buf = NULL;
    size_t len = 0;
    int rc = -EINVAL;
    if (hdr && ev && sb_mpjson_encode(ev, &buf, &len) == 0)
        rc = sb_wire_send(b->frontends, frontend, SB_CMD_EVENT, hdr, buf, len);
    if (rc < 0)
        sb_warn("job %s: could not send its %d %s error to the frontend: %s", job_id, status, code, strerror(-rc));
    else
        sb_debug("job %s: sent %d %s", job_id, status, code);
    free(buf);
    json_decref(ev);
    json_decref(hdr);
}

static void sb_broker_send_error(sb_broker_t *b, zframe_t *frontend, const char *job_id, int status, const char *kind,
                                 const char *code, const char *message)
{
    sb_broker_send_error_retry(b, frontend, job_id, status, kind, code, message, 0);
}

/* Sends CANCEL {job_id} to the job's worker. A failed send means the worker
 * is gone: it is marked lost (and reaped at the end of the iteration). */
static void sb_broker_send_cancel(sb_broker_t *b, sb_broker_job_t *job)
{
    sb_broker_worker_t *w = job->worker;
    if (!w || w->state != SB_BWORKER_LIVE)
        return;
    json_t *hdr = json_pack("{s:s, s:s}", "job_id", job->id, "epoch", b->epoch);
    int rc = hdr ? sb_wire_send(b->workers, w->routing_id, SB_CMD_CANCEL, hdr, NULL, 0) : -EINVAL;
    json_decref(hdr);
    if (rc < 0) {
        sb_warn("worker %s: could not send CANCEL for job %s (%s): treating it as lost", w->name, job->id,
                strerror(-rc));
        sb_broker_registry_mark_lost(b->registry, w);
    }
}

/*
 * Circuit breaking (the state machine is broker_breaker.c).
 */

static void sb_broker_job_finish(sb_broker_t *b, sb_broker_job_t *job);

/* Answers a job 503 circuit_open: its model's circuit (model-wide, or its
 * client's) is open, or half-open with the probe out or already chosen. */
static void sb_broker_send_circuit_open(sb_broker_t *b, sb_breaker_t *br, zframe_t *frontend, const char *job_id)
{
    int retry_s = sb_breaker_retry_after_s(br, sb_mono_ms());
    int failures = sb_breaker_failures(br);
    char *m = sb_breaker_client(br)
                  ? sb_xasprintf("model '%s' is temporarily unavailable to this client: its upstream failed %d "
                                 "time%s in a row on this client's requests; retry in %d s",
                                 sb_breaker_model(br), failures, failures == 1 ? "" : "s", retry_s)
                  : sb_xasprintf("model '%s' is temporarily unavailable: its upstream failed %d time%s in a row; "
                                 "retry in %d s",
                                 sb_breaker_model(br), failures, failures == 1 ? "" : "s", retry_s);
    sb_broker_send_error_retry(b, frontend, job_id, 503, SB_ERR_OVERLOADED, "circuit_open", m, retry_s);
    free(m);
}

/* Whether job is one a breaker stands for: every job of its model for a
 * model-wide breaker, the client's jobs of its model for a per-client one. */
static bool sb_broker_breaker_covers(const sb_breaker_t *br, const sb_broker_job_t *job)
{
    const char *client = sb_breaker_client(br);
    return !client || (job->client && !strcmp(job->client, client));
}

/* Answers every job queued that the breaker stands for 503 circuit_open: its
 * circuit just opened, or its probe just went out. */
static void sb_broker_refuse_queued(sb_broker_t *b, sb_breaker_t *br)
{
    sb_broker_queue_t *q = sb_broker_queues_get(b->queues, sb_breaker_model(br));
    if (!q || !q->head)
        return;
    size_t n = 0;
    for (sb_broker_job_t *job = q->head, *next; job; job = next) {
        next = job->next;
        if (!sb_broker_breaker_covers(br, job))
            continue;
        sb_broker_send_circuit_open(b, br, job->frontend, job->id);
        sb_broker_job_finish(b, job);
        n++;
    }
    if (n)
        sb_info("model %s%s%s: answered %zu queued job(s) 503 circuit_open", q->model,
                sb_breaker_client(br) ? ", client " : "", sb_breaker_client(br) ? sb_breaker_client(br) : "", n);
}

/* How many jobs of client wait in model's queue (a half-open client circuit
 * lets only one wait to probe). */
static size_t sb_broker_client_queued(sb_broker_t *b, const char *model, const char *client)
{
    const sb_broker_queue_t *q = sb_broker_queues_get(b->queues, model);
    size_t n = 0;
    for (const sb_broker_job_t *job = q ? q->head : NULL; job; job = job->next)
        n += job->client && !strcmp(job->client, client);
    return n;
}

/* Reports how a dispatched job ended to its model's breaker and its client's,
 * once (later calls do nothing). If that opened a circuit, the queued jobs it
 * stands for are refused at once. */
static void sb_broker_job_report(sb_broker_t *b, sb_broker_job_t *job, enum sb_breaker_outcome outcome)
{
    uint64_t ticket = job->breaker_ticket, cticket = job->client_ticket;
    job->breaker_ticket = job->client_ticket = 0;
    /* A ticket outstanding keeps its breaker from being pruned or dropped. */
    sb_breaker_t *br = ticket ? sb_breakers_find(b->breakers, job->model) : NULL;
    if (br && sb_breaker_on_outcome_from(br, ticket, outcome, job->client, sb_mono_ms())) {
        b->stats_dirty = true;
        sb_broker_refuse_queued(b, br);
    }
    sb_breaker_t *cbr = cticket ? sb_breakers_find_client(b->breakers, job->model, job->client) : NULL;
    if (cbr && sb_breaker_on_outcome(cbr, cticket, outcome, sb_mono_ms())) {
        b->stats_dirty = true;
        sb_broker_refuse_queued(b, cbr);
    }
}

/* The outcome a final EVENT header reports: "upstream": "ok" or "failed";
 * absent (the job never reached the upstream) or anything else: none. */
static enum sb_breaker_outcome sb_broker_event_outcome(const sb_wire_msg_t *msg)
{
    const char *up = sb_wire_header_str(msg, "upstream");
    if (!up)
        return SB_BREAKER_NO_OUTCOME;
    if (!strcmp(up, "ok"))
        return SB_BREAKER_OK;
    if (!strcmp(up, "failed"))
        return SB_BREAKER_FAILED;
    sb_debug("ignoring an unknown upstream outcome '%s'", up);
    return SB_BREAKER_NO_OUTCOME;
}

/*
 * Job bookkeeping.
 */

/* Unlinks a job from wherever it is, drops it from the job table and frees
 * it. A credit it held goes back to its worker; a dispatched job not yet
 * reported to its breaker ends there without an outcome. */
static void sb_broker_job_finish(sb_broker_t *b, sb_broker_job_t *job)
{
    sb_broker_job_report(b, job, SB_BREAKER_NO_OUTCOME);
    if (job->state == SB_BJOB_QUEUED) {
        sb_broker_queue_remove(b->queues, job);
        b->stats_dirty = true;
    } else if (job->worker) {
        sb_broker_worker_detach(job->worker, job);
        b->need_dispatch = true;
    }
    sb_broker_job_set_state(job, SB_BJOB_DONE);
    sb_map_remove(b->jobs, job->id);
    sb_broker_job_destroy(&job);
}

/* Stops caring about an in-flight job: tells its worker to cancel it and
 * drops its later events. The credit returns with the worker's final event.
 * Its outcome will not count; if it was its model's probe, the next job
 * probes instead. */
static void sb_broker_job_abandon(sb_broker_t *b, sb_broker_job_t *job)
{
    if (job->state != SB_BJOB_DISPATCHED)
        return;
    sb_broker_job_set_state(job, SB_BJOB_ABANDONED);
    sb_breaker_t *br = job->breaker_ticket ? sb_breakers_find(b->breakers, job->model) : NULL;
    if (br)
        sb_breaker_on_abandon(br, job->breaker_ticket);
    sb_breaker_t *cbr = job->client_ticket ? sb_breakers_find_client(b->breakers, job->model, job->client) : NULL;
    if (cbr)
        sb_breaker_on_abandon(cbr, job->client_ticket);
    sb_broker_send_cancel(b, job);
}

/* Hands the job at the head of q to w. On success the job is DISPATCHED and
 * its header and body are released; if the send fails the job stays at the
 * head of its queue and the worker is marked lost. */
static int sb_broker_dispatch_one(sb_broker_t *b, sb_broker_queue_t *q, sb_broker_worker_t *w)
{
    sb_broker_job_t *job = q->head;
    sb_broker_stamp(b, job->header);
    int rc = sb_wire_send(b->workers, w->routing_id, SB_CMD_JOB, job->header, zframe_data(job->body),
                          zframe_size(job->body));
    if (rc < 0) {
        sb_warn("worker %s: could not send job %s (%s): treating it as lost; the job stays queued", w->name, job->id,
                strerror(-rc));
        sb_broker_registry_mark_lost(b->registry, w);
        return rc;
    }
    sb_broker_queue_remove(b->queues, job);
    sb_broker_metrics_dispatched(job->model, sb_mono_us() - job->queued_us);
    sb_broker_worker_attach(w, job);
    sb_broker_job_set_state(job, SB_BJOB_DISPATCHED);
    json_decref(job->header);
    job->header = NULL;
    zframe_destroy(&job->body);
    b->stats_dirty = true;
    sb_debug("job %s: dispatched to worker %s (%d/%d credits in use)", job->id, w->name, w->in_flight, w->credits);
    sb_breaker_t *br = sb_breakers_get(b->breakers, job->model);
    if (br) {
        job->breaker_ticket = sb_breaker_on_dispatch(br, sb_mono_ms());
        if (sb_breaker_is_probe(br, job->breaker_ticket)) {
            sb_info("job %s: probing model %s's upstream", job->id, job->model);
            /* Only one job probes; in HALF_OPEN only one may wait anyway. */
            sb_broker_refuse_queued(b, br);
        }
    }
    sb_breaker_t *cbr = sb_breakers_get_client(b->breakers, job->model, job->client);
    if (cbr) {
        job->client_ticket = sb_breaker_on_dispatch(cbr, sb_mono_ms());
        if (sb_breaker_is_probe(cbr, job->client_ticket)) {
            sb_info("job %s: probing model %s's upstream for client %s", job->id, job->model, job->client);
            sb_broker_refuse_queued(b, cbr);
        }
    }
    return 0;
}

/* Answers the jobs at the head of q whose client's circuit holds them back
 * (open, or its probe out) 503 circuit_open, so that they do not block the
 * other clients' jobs behind them. None should be there (they are refused
 * when the circuit opens or probes, and at SUBMIT meanwhile); this is the
 * safety net. */
static void sb_broker_refuse_held_heads(sb_broker_t *b, sb_broker_queue_t *q)
{
    while (q->head) {
        sb_broker_job_t *job = q->head;
        sb_breaker_t *cbr = sb_breakers_find_client(b->breakers, job->model, job->client);
        if (!cbr || sb_breaker_allow_dispatch(cbr, sb_mono_ms()))
            return;
        sb_broker_send_circuit_open(b, cbr, job->frontend, job->id);
        sb_broker_job_finish(b, job);
    }
}

/* Whether the job at the head of q may be dispatched as far as its model's
 * model-wide circuit is concerned. Nothing should be waiting in an OPEN or
 * PROBING model's queue (its jobs were refused when it opened or its probe
 * went out, and SUBMITs are refused meanwhile): this keeps a job that did
 * from going out anyway. */
static bool sb_broker_circuit_allows_dispatch(sb_broker_t *b, const sb_broker_queue_t *q)
{
    sb_breaker_t *br = sb_breakers_find(b->breakers, q->model);
    return !br || sb_breaker_allow_dispatch(br, sb_mono_ms());
}

/* Gives queued jobs to workers with free credit, one job per model per round
 * in round-robin order, until no queued job has a worker available. Each
 * round either uses a credit or loses a worker, so this ends. */
static void sb_broker_dispatch(sb_broker_t *b)
{
    b->need_dispatch = false;
    bool progress = true;
    while (progress) {
        progress = false;
        size_t n = sb_broker_queues_count(b->queues);
        sb_broker_queue_t *q = sb_broker_queues_first(b->queues);
        for (size_t i = 0; i < n && q; i++) {
            sb_broker_queue_t *next = q->next;
            sb_broker_refuse_held_heads(b, q);
            sb_broker_worker_t *w = q->head && sb_broker_circuit_allows_dispatch(b, q)
                                        ? sb_broker_registry_best(b->registry, q->model)
                                        : NULL;
            if (w) {
                progress = true;
                if (sb_broker_dispatch_one(b, q, w) == 0)
                    sb_broker_queues_rotate(b->queues, q);
            }
            q = next;
        }
    }
}

/*
 * Frontend messages.
 */

static bool sb_broker_str_ok(const json_t *v, size_t max)
{
    return json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) <= max &&
           !memchr(json_string_value(v), '\0', json_string_length(v));
}

static void sb_broker_on_submit(sb_broker_t *b, sb_wire_msg_t *msg)
{
    const json_t *jid = json_object_get(msg->header, "job_id");
    const json_t *jmodel = json_object_get(msg->header, "model");
    const json_t *jdeadline = json_object_get(msg->header, "deadline_ms");
    const json_t *jclient = json_object_get(msg->header, "client");
    if (!sb_broker_str_ok(jid, SB_JOB_ID_MAX)) {
        sb_warn("dropped a malformed SUBMIT (no usable job_id)");
        return;
    }
    const char *job_id = json_string_value(jid);
    const json_t *jepoch = json_object_get(msg->header, "epoch");
    if (jepoch && sb_broker_str_ok(jepoch, SB_EPOCH_MAX) && strcmp(json_string_value(jepoch), b->epoch) != 0) {
        /* Sent to a broker instance that is gone: its frontend has counted
         * (or will count, on seeing this epoch) the job as lost and resubmits
         * or fails it; running it too would run it twice. */
        sb_info("job %s: refused: submitted to broker epoch %s, this is %s", job_id, json_string_value(jepoch),
                b->epoch);
        b->counts.refused_stale++;
        json_t *hdr = json_pack("{s:s, s:b, s:s, s:s}", "job_id", job_id, "final", 1, "epoch", b->epoch,
                                "refused_epoch", json_string_value(jepoch));
        json_t *ev = sb_event_error(503, SB_ERR_OVERLOADED, "broker_restarted",
                                    "the gateway's job broker restarted; retry the request");
        json_object_set_new(ev, "retry_after", json_integer(1));
        char *buf = NULL;
        size_t len = 0;
        if (hdr && ev && sb_mpjson_encode(ev, &buf, &len) == 0 &&
            sb_wire_send(b->frontends, msg->routing_id, SB_CMD_EVENT, hdr, buf, len) < 0)
            sb_debug("job %s: could not send its broker_restarted refusal", job_id);
        free(buf);
        json_decref(ev);
        json_decref(hdr);
        return;
    }
    /* With a job_id to answer to, say what was wrong rather than leave the
     * frontend waiting for its own deadline. */
    if (!sb_broker_str_ok(jmodel, SB_MODEL_ID_MAX) || !json_is_integer(jdeadline) || !msg->body ||
        zframe_size(msg->body) == 0) {
        sb_warn("job %s: malformed SUBMIT (needs model, integer deadline_ms and a body)", job_id);
        sb_broker_send_error(b, msg->routing_id, job_id, 400, SB_ERR_INVALID_REQUEST, "bad_job",
                             "malformed job: needs model, integer deadline_ms and a body");
        return;
    }
    if (jepoch && !sb_broker_str_ok(jepoch, SB_EPOCH_MAX)) {
        sb_warn("job %s: malformed SUBMIT (epoch must be a string of 1 to %d bytes)", job_id, SB_EPOCH_MAX);
        sb_broker_send_error(b, msg->routing_id, job_id, 400, SB_ERR_INVALID_REQUEST, "bad_job",
                             "malformed job: epoch must be a non-empty string");
        return;
    }
    if (jclient && !sb_broker_str_ok(jclient, SB_CLIENT_ID_MAX)) {
        sb_warn("job %s: malformed SUBMIT (client must be a string of 1 to %d bytes)", job_id, SB_CLIENT_ID_MAX);
        char *m = sb_xasprintf("malformed job: client must be a string of 1 to %d bytes", SB_CLIENT_ID_MAX);
        sb_broker_send_error(b, msg->routing_id, job_id, 400, SB_ERR_INVALID_REQUEST, "bad_job", m);
        free(m);
        return;
    }
    const char *model = json_string_value(jmodel);
    const char *client = jclient ? json_string_value(jclient) : NULL;
    int64_t deadline_ms = (int64_t)json_integer_value(jdeadline);
    if (sb_map_get(b->jobs, job_id)) {
        /* The job already held is left alone. */
        sb_warn("job %s: SUBMIT reuses the id of a job still held", job_id);
        sb_broker_send_error(b, msg->routing_id, job_id, 409, SB_ERR_INVALID_REQUEST, "duplicate_job",
                             "duplicate job id");
        return;
    }
    /* Just started: workers are (re)registering; the job waits for them
     * (or for the end of the grace, sb_broker_fail_unserved). */
    if (!sb_broker_registry_serves(b->registry, model) && b->warm) {
        char *m = sb_xasprintf("no worker is serving model '%s'", model);
        sb_broker_send_error(b, msg->routing_id, job_id, 503, SB_ERR_OVERLOADED, "no_workers", m);
        free(m);
        return;
    }
    sb_breaker_t *br = sb_breakers_find(b->breakers, model);
    if (br) {
        const sb_broker_queue_t *q0 = sb_broker_queues_get(b->queues, model);
        if (!sb_breaker_allow_submit(br, sb_mono_ms(), q0 ? q0->len : 0)) {
            sb_broker_send_circuit_open(b, br, msg->routing_id, job_id);
            return;
        }
    }
    sb_breaker_t *cbr = sb_breakers_find_client(b->breakers, model, client);
    if (cbr) {
        int64_t now = sb_mono_ms();
        size_t waiting =
            sb_breaker_tick(cbr, now) == SB_BREAKER_HALF_OPEN ? sb_broker_client_queued(b, model, client) : 0;
        if (!sb_breaker_allow_submit(cbr, now, waiting)) {
            sb_broker_send_circuit_open(b, cbr, msg->routing_id, job_id);
            return;
        }
    }
    if (deadline_ms <= sb_now_ms()) {
        sb_broker_send_error(b, msg->routing_id, job_id, 504, SB_ERR_TIMEOUT, "deadline_exceeded",
                             "timeout: the request exceeded its deadline");
        return;
    }
    sb_broker_queue_t *q = sb_broker_queues_get_or_add(b->queues, model);
    if (q->len >= b->queue_max) {
        char *m = sb_xasprintf("model '%s' is busy: queue full, retry later", model);
        sb_broker_send_error(b, msg->routing_id, job_id, 429, SB_ERR_OVERLOADED, "queue_full", m);
        free(m);
        return;
    }
    json_t *hdr = json_incref(msg->header);
    const json_t *jbg = json_object_get(msg->header, "background");
    bool ack = json_is_true(json_object_get(msg->header, "ack"));
    sb_broker_job_t *job = sb_broker_job_new(job_id, model, deadline_ms, msg->routing_id, &hdr, &msg->body);
    job->client = client ? sb_xstrdup(client) : NULL;
    job->background = sb_broker_str_ok(jbg, SB_RESPONSE_ID_MAX);
    if (sb_broker_queue_push(b->queues, q, job) < 0) { /* checked above; cannot happen */
        sb_broker_job_destroy(&job);
        return;
    }
    sb_map_put(b->jobs, job->id, job);
    job->queued_us = sb_mono_us();
    sb_broker_metrics_queued(model);
    b->need_dispatch = true;
    b->stats_dirty = true;
    if (ack) {
        /* The submitter waits for this before it answers (a background
         * response is answered queued only once it is). */
        json_t *ah = json_pack("{s:s, s:s}", "job_id", job->id, "epoch", b->epoch);
        if (sb_wire_send(b->frontends, msg->routing_id, SB_CMD_ACCEPTED, ah, NULL, 0) < 0)
            sb_debug("job %s: could not send ACCEPTED", job->id);
        json_decref(ah);
    }
}

static void sb_broker_on_frontend_cancel(sb_broker_t *b, const sb_wire_msg_t *msg)
{
    const json_t *jid = json_object_get(msg->header, "job_id");
    if (!sb_broker_str_ok(jid, SB_JOB_ID_MAX)) {
        sb_warn("dropped a malformed CANCEL (no usable job_id)");
        return;
    }
    const char *job_id = json_string_value(jid);
    sb_broker_job_t *job = sb_map_get(b->jobs, job_id);
    if (!job) {
        sb_debug("job %s: CANCEL for a job no longer held", job_id);
        return;
    }
    if (!job->background && !zframe_eq(job->frontend, msg->routing_id)) {
        /* A background job may be cancelled through any frontend: the one
         * that took it may be gone, and the frontend checked the owner. */
        sb_warn("job %s: dropped a CANCEL from a frontend that did not submit it", job_id);
        return;
    }
    switch (job->state) {
    case SB_BJOB_QUEUED:
        sb_broker_job_finish(b, job);
        break;
    case SB_BJOB_DISPATCHED:
        sb_broker_job_abandon(b, job);
        break;
    default:
        break;
    }
}

static void sb_broker_on_frontend(sb_broker_t *b, sb_wire_msg_t *msg)
{
    switch (msg->cmd) {
    case SB_CMD_SUBMIT:
        sb_broker_on_submit(b, msg);
        break;
    case SB_CMD_CANCEL:
        sb_broker_on_frontend_cancel(b, msg);
        break;
    case SB_CMD_HEARTBEAT: {
        json_t *hdr = sb_broker_header(b);
        if (sb_wire_send(b->frontends, msg->routing_id, SB_CMD_HEARTBEAT, hdr, NULL, 0) < 0)
            sb_debug("could not answer a frontend heartbeat");
        json_decref(hdr);
        break;
    }
    case SB_CMD_STATS: { /* the admin API's live view: queues, credits, circuits */
        const json_t *id = json_object_get(msg->header, "stats_id");
        if (!sb_broker_str_ok(id, SB_JOB_ID_MAX))
            break;
        json_t *hdr = sb_broker_header(b);
        json_object_set(hdr, "stats_id", (json_t *)id);
        json_object_set_new(hdr, "stats", sb_broker_metrics_live(b->queues, b->registry, b->breakers));
        if (sb_wire_send(b->frontends, msg->routing_id, SB_CMD_STATS, hdr, NULL, 0) < 0)
            sb_debug("could not answer a frontend's STATS");
        json_decref(hdr);
        break;
    }
    default:
        sb_warn("dropped a frontend message with unexpected command 0x%02x", (unsigned)msg->cmd);
        break;
    }
}

/*
 * Worker messages.
 */

/* Answers a READY with a HEARTBEAT at once: the worker learns the epoch, and
 * a worker that sent READY on a fresh socket just before this broker came up
 * hears from it now rather than at the next beat, which might come after its
 * own liveness check gave up on the socket (a needless lose/join). */
static void sb_broker_ack_ready(sb_broker_t *b, sb_broker_worker_t *w)
{
    json_t *hdr = sb_broker_header(b);
    if (sb_wire_send(b->workers, w->routing_id, SB_CMD_HEARTBEAT, hdr, NULL, 0) < 0) {
        sb_warn("worker %s: could not answer its READY: treating it as lost", w->name);
        sb_broker_registry_mark_lost(b->registry, w);
    }
    json_decref(hdr);
}

/* Ends every job a worker holds: those still wanted with 502 worker_lost
 * (the frontend resubmits one that has had no event yet, docs/protocol.md). */
static void sb_broker_fail_worker_jobs(sb_broker_t *b, sb_broker_worker_t *w)
{
    while (w->jobs) {
        sb_broker_job_t *job = w->jobs;
        if (job->state == SB_BJOB_DISPATCHED)
            sb_broker_send_error(b, job->frontend, job->id, 502, SB_ERR_UPSTREAM, "worker_lost",
                                 "the worker handling this request stopped responding");
        sb_broker_job_finish(b, job);
    }
}

static void sb_broker_on_ready(sb_broker_t *b, sb_wire_msg_t *msg, sb_broker_worker_t *known)
{
    sb_broker_worker_t *w = NULL;
    const char *why = NULL;
    if (sb_broker_worker_from_ready(msg, &w, &why) < 0) {
        sb_warn("dropped a malformed READY: %s", why);
        return;
    }
    if (known) {
        /* The same connection registering again (a worker sends READY only
         * after dropping its jobs: it was told to reconnect, or saw a new
         * epoch). It is not lost: it stays, with what it announces now;
         * only the jobs it held are gone. Counting it as lost and joined
         * again would let a burst of READYs become a storm of both. */
        sb_broker_worker_swap_info(known, w);
        sb_broker_worker_destroy(&w);
        b->counts.reregistered++;
        if (known->in_flight)
            sb_warn("worker %s: registered again: its %d in-flight job(s) are lost", known->name, known->in_flight);
        else
            sb_debug("worker %s: registered again", known->name);
        sb_broker_fail_worker_jobs(b, known);
        sb_broker_ack_ready(b, known);
        b->need_dispatch = true;
        b->stats_dirty = true;
        return;
    }
    b->counts.joined++;
    w->expires_mono = sb_mono_ms() + (int64_t)b->heartbeat_ms * b->liveness;
    char models[512];
    sb_info("worker joined: name=%s models=%s credits=%d", w->name,
            sb_broker_worker_models_str(w, models, sizeof models), w->credits);
    sb_broker_registry_add(b->registry, w);
    sb_broker_ack_ready(b, w);
    b->need_dispatch = true;
    b->stats_dirty = true;
}

/* A job's final EVENT arrived: its upstream outcome goes to its model's
 * breaker (unless the job was abandoned: the broker no longer cares how it
 * went, and a cancel may itself fail the upstream call), then it is done. */
static void sb_broker_job_end(sb_broker_t *b, sb_broker_job_t *job, const sb_wire_msg_t *msg)
{
    sb_broker_job_report(b, job,
                         job->state == SB_BJOB_DISPATCHED ? sb_broker_event_outcome(msg) : SB_BREAKER_NO_OUTCOME);
    sb_broker_job_finish(b, job);
}

static void sb_broker_on_event(sb_broker_t *b, sb_broker_worker_t *w, const sb_wire_msg_t *msg)
{
    const json_t *jid = json_object_get(msg->header, "job_id");
    const json_t *jfinal = json_object_get(msg->header, "final");
    if (!sb_broker_str_ok(jid, SB_JOB_ID_MAX) || !json_is_boolean(jfinal)) {
        sb_warn("worker %s: dropped a malformed EVENT (needs job_id and boolean final)", w->name);
        return;
    }
    const char *job_id = json_string_value(jid);
    bool final = json_is_true(jfinal);
    sb_broker_job_t *job = sb_map_get(b->jobs, job_id);
    if (!job || job->worker != w) {
        sb_warn("worker %s: dropped an EVENT for job %s, which it does not hold", w->name, job_id);
        return;
    }
    if (!msg->body || zframe_size(msg->body) == 0) {
        /* Still honour a final flag: otherwise the credit would leak. */
        sb_warn("worker %s: job %s: EVENT without a body%s", w->name, job_id, final ? " (final)" : "");
        if (!final)
            return;
        if (job->state == SB_BJOB_DISPATCHED)
            sb_broker_send_error(b, job->frontend, job->id, 502, SB_ERR_UPSTREAM, "bad_worker_event",
                                 "the worker handling this request sent a malformed event");
        sb_broker_job_end(b, job, msg);
        return;
    }
    if (job->state == SB_BJOB_DISPATCHED) {
        sb_broker_stamp(b, msg->header);
        int rc = sb_wire_send(b->frontends, job->frontend, SB_CMD_EVENT, msg->header, zframe_data(msg->body),
                              zframe_size(msg->body));
        if (rc < 0 && !final && job->background) {
            /* Its events are kept by its worker (docs/background.md): it
             * runs on without the frontend that submitted it. */
            sb_debug("job %s: background job's frontend unreachable (%s): running on", job_id, strerror(-rc));
        } else if (rc < 0 && !final) {
            sb_warn("job %s: frontend unreachable (%s): cancelling it", job_id, strerror(-rc));
            sb_broker_job_abandon(b, job);
        } else if (rc < 0) {
            sb_warn("job %s: frontend unreachable for the final event (%s)", job_id, strerror(-rc));
        }
    }
    if (final && job->state == SB_BJOB_DISPATCHED)
        sb_broker_metrics_finished(job->model);
    if (final)
        sb_broker_job_end(b, job, msg);
    else if (job->state == SB_BJOB_DISPATCHED)
        /* Events before the final one come only from an upstream that is
         * answering (a stream): the route works. A probe that streams for
         * minutes closes its circuit at its first event, not its last. */
        sb_broker_job_report(b, job, SB_BREAKER_OK);
}

static void sb_broker_on_worker(sb_broker_t *b, sb_wire_msg_t *msg)
{
    sb_broker_worker_t *w = sb_broker_registry_find(b->registry, msg->routing_id);
    if (w) /* any message is a sign of life, even one we then drop */
        w->expires_mono = sb_mono_ms() + (int64_t)b->heartbeat_ms * b->liveness;
    if (msg->cmd == SB_CMD_READY) {
        sb_broker_on_ready(b, msg, w);
        return;
    }
    if (!w) {
        if (msg->cmd == SB_CMD_HEARTBEAT || msg->cmd == SB_CMD_EVENT) {
            sb_debug("message 0x%02x from an unknown worker: asking it to reconnect", (unsigned)msg->cmd);
            /* seq echoed: the worker ignores answers to what it sent before its latest READY. */
            json_t *hdr = sb_broker_header(b);
            const json_t *seq = json_object_get(msg->header, "seq");
            if (json_is_integer(seq))
                json_object_set_new(hdr, "seq", json_integer(json_integer_value(seq)));
            if (sb_wire_send(b->workers, msg->routing_id, SB_CMD_RECONNECT, hdr, NULL, 0) < 0)
                sb_debug("could not send RECONNECT");
            json_decref(hdr);
        } else {
            sb_warn("dropped a message with command 0x%02x from an unknown worker", (unsigned)msg->cmd);
        }
        return;
    }
    switch (msg->cmd) {
    case SB_CMD_HEARTBEAT: /* a worker of several brokers says its window here too */
    case SB_CMD_CREDIT:
        if (sb_broker_worker_on_window(w, msg->header)) {
            b->need_dispatch = true;
            b->stats_dirty = true;
        }
        break;
    case SB_CMD_EVENT:
        sb_broker_on_event(b, w, msg);
        break;
    default:
        sb_warn("worker %s: dropped a message with unexpected command 0x%02x", w->name, (unsigned)msg->cmd);
        break;
    }
}

/*
 * Timers.
 */

static void sb_broker_heartbeat(sb_broker_t *b)
{
    json_t *hdr = sb_broker_header(b);
    sb_broker_worker_t *w = sb_broker_registry_first_live(b->registry);
    while (w) {
        sb_broker_worker_t *next = w->next; /* marking lost relinks w */
        if (sb_wire_send(b->workers, w->routing_id, SB_CMD_HEARTBEAT, hdr, NULL, 0) < 0) {
            sb_warn("worker %s: could not send HEARTBEAT: treating it as lost", w->name);
            sb_broker_registry_mark_lost(b->registry, w);
        }
        w = next;
    }
    json_decref(hdr);
}

static void sb_broker_check_liveness(sb_broker_t *b, int64_t now_mono)
{
    sb_broker_worker_t *w = sb_broker_registry_first_live(b->registry);
    while (w) {
        sb_broker_worker_t *next = w->next;
        if (now_mono >= w->expires_mono) {
            sb_warn("worker %s: silent for %d ms", w->name, b->heartbeat_ms * b->liveness);
            sb_broker_registry_mark_lost(b->registry, w);
        }
        w = next;
    }
}

/* Fails queued jobs past their deadline (504) and gives up on in-flight jobs
 * past deadline + grace (504 to the frontend, CANCEL to the worker). */
static void sb_broker_sweep_deadlines(sb_broker_t *b)
{
    int64_t now = sb_now_ms();
    for (sb_broker_queue_t *q = sb_broker_queues_first(b->queues); q; q = q->next) {
        sb_broker_job_t *job = q->head;
        while (job) {
            sb_broker_job_t *next = job->next;
            if (job->deadline_ms <= now) {
                sb_info("job %s: deadline passed while queued for model %s", job->id, job->model);
                sb_broker_send_error(b, job->frontend, job->id, 504, SB_ERR_TIMEOUT, "deadline_exceeded",
                                     "timeout: the request exceeded its deadline");
                sb_broker_job_finish(b, job);
            }
            job = next;
        }
    }
    for (sb_broker_worker_t *w = sb_broker_registry_first_live(b->registry); w;) {
        sb_broker_worker_t *wnext = w->next; /* a failed CANCEL relinks w */
        for (sb_broker_job_t *job = w->jobs; job; job = job->next) {
            /* now - grace, not deadline + grace: deadline_ms is the peer's and may be huge. */
            if (job->state != SB_BJOB_DISPATCHED || now - b->grace_ms <= job->deadline_ms)
                continue;
            sb_info("job %s: deadline passed on worker %s: cancelling it", job->id, w->name);
            sb_broker_send_error(b, job->frontend, job->id, 504, SB_ERR_TIMEOUT, "deadline_exceeded",
                                 "timeout: the request exceeded its deadline");
            sb_broker_job_abandon(b, job);
        }
        w = wnext;
    }
    sb_broker_queues_prune(b->queues);
    sb_breakers_tick(b->breakers, sb_mono_ms());
    sb_breakers_prune(b->breakers);
}

/* circuits: the models whose circuit is not closed, as sb_breakers_describe
 * wrote them ("" when none). */
static void sb_broker_log_stats(sb_broker_t *b, const char *circuits)
{
    char line[1024];
    size_t off = 0;
    line[0] = '\0';
    for (sb_broker_queue_t *q = sb_broker_queues_first(b->queues); q && off < sizeof line; q = q->next) {
        int n = snprintf(line + off, sizeof line - off, " %s=%zu", q->model, q->len);
        if (n < 0)
            break;
        off += (size_t)n;
    }
    if (off >= sizeof line)
        memcpy(line + sizeof line - 5, " ...", 5);
    sb_info("queues: %zu queued, %zu held, %zu worker(s);%s%s%s", sb_broker_queues_total(b->queues),
            sb_map_size(b->jobs), sb_broker_registry_count(b->registry), line[0] ? line : " all empty",
            circuits[0] ? "; circuits not closed:" : "", circuits);
}

/* Fails queued jobs whose model no live worker serves (503): they would
 * otherwise wait out their deadline for a worker that may never come. Not
 * during the startup grace, when workers are still registering. */
static void sb_broker_fail_unserved(sb_broker_t *b)
{
    if (!b->warm)
        return;
    for (sb_broker_queue_t *q = sb_broker_queues_first(b->queues); q; q = q->next) {
        if (!q->head || sb_broker_registry_serves(b->registry, q->model))
            continue;
        char *m = sb_xasprintf("no worker is serving model '%s'", q->model);
        while (q->head) {
            sb_broker_job_t *job = q->head;
            sb_broker_send_error(b, job->frontend, job->id, 503, SB_ERR_OVERLOADED, "no_workers", m);
            sb_broker_job_finish(b, job);
        }
        free(m);
    }
}

/* Fails the jobs of workers lost this iteration (502 to frontends still
 * waiting), frees the workers, then the queued jobs nobody serves now. */
static void sb_broker_reap(sb_broker_t *b)
{
    bool any = false;
    sb_broker_worker_t *w;
    while ((w = sb_broker_registry_pop_lost(b->registry))) {
        char models[512];
        sb_info("worker lost: name=%s models=%s credits=%d in_flight=%d", w->name,
                sb_broker_worker_models_str(w, models, sizeof models), w->credits, w->in_flight);
        b->counts.lost++;
        sb_broker_fail_worker_jobs(b, w);
        sb_broker_worker_destroy(&w);
        any = true;
    }
    if (!any)
        return;
    b->stats_dirty = true;
    sb_broker_fail_unserved(b);
}

static void sb_broker_run_timers(sb_broker_t *b)
{
    int64_t now = sb_mono_ms();
    if (now >= b->next_heartbeat) {
        sb_broker_heartbeat(b);
        b->next_heartbeat = now + b->heartbeat_ms;
    }
    sb_broker_check_liveness(b, now);
    if (!b->warm && now >= b->warm_mono) {
        b->warm = true;
        sb_broker_fail_unserved(b);
    }
    if (now >= b->next_sweep) {
        sb_broker_sweep_deadlines(b);
        sb_broker_metrics_publish(b->queues, b->registry, b->breakers, now);
        b->next_sweep = now + SB_BROKER_SWEEP_MS;
    }
    if (now >= b->next_stats) {
        /* A circuit that is not closed is worth a line every time. */
        char circuits[512];
        if (sb_breakers_describe(b->breakers, now, circuits, sizeof circuits) > 0 || b->stats_dirty)
            sb_broker_log_stats(b, circuits);
        b->stats_dirty = false;
        b->next_stats = now + SB_BROKER_STATS_MS;
    }
}

/*
 * Loop.
 */

static void sb_broker_drain(sb_broker_t *b, zsock_t *sock, void (*handle)(sb_broker_t *, sb_wire_msg_t *))
{
    for (int i = 0; i < SB_BROKER_RECV_BUDGET; i++) {
        sb_wire_msg_t *msg = NULL;
        int rc = sb_wire_recv(sock, true, &msg);
        if (rc == -EAGAIN)
            return;
        if (rc < 0) {
            sb_warn("dropped a malformed message on the %s socket", sock == b->frontends ? "frontend" : "worker");
            continue;
        }
        handle(b, msg);
        sb_wire_msg_destroy(&msg);
    }
}

/* Blocks up to wait ms until either socket may have a message. ZMQ_FD is
 * edge-triggered and the sends since the last drain may have taken its
 * signal, so the sockets' ZMQ_EVENTS are checked first and the fds waited on
 * only when neither holds input. (zpoller did the same checks twice around
 * its poll, and a drain after it checked again before every message.) */
static void sb_broker_wait(sb_broker_t *b, int wait)
{
    if (wait <= 0 || (zsock_events(b->frontends) & ZMQ_POLLIN) || (zsock_events(b->workers) & ZMQ_POLLIN))
        return;
    struct pollfd fds[2] = {{.fd = zsock_fd(b->frontends), .events = POLLIN},
                            {.fd = zsock_fd(b->workers), .events = POLLIN}};
    /* EINTR (any signal) just ends the wait: the caller checks b->stop. */
    (void)poll(fds, 2, wait);
}

int sb_broker_run_once(sb_broker_t *b, int timeout_ms)
{
    if (b->stop || zsys_interrupted)
        return -EINTR;
    int64_t now = sb_mono_ms();
    int64_t due = b->next_heartbeat < b->next_sweep ? b->next_heartbeat : b->next_sweep;
    int64_t wait = b->need_dispatch ? 0 : due - now;
    if (timeout_ms >= 0 && wait > timeout_ms)
        wait = timeout_ms;
    if (wait < 0)
        wait = 0;
    sb_broker_wait(b, (int)wait);
    if (b->stop || zsys_interrupted)
        return -EINTR;
    /* Drain both sockets, whichever woke us. */
    sb_broker_drain(b, b->frontends, sb_broker_on_frontend);
    sb_broker_drain(b, b->workers, sb_broker_on_worker);
    sb_broker_run_timers(b);
    if (b->need_dispatch)
        sb_broker_dispatch(b);
    sb_broker_reap(b);
    return 0;
}

int sb_broker_run(sb_broker_t *b)
{
    sb_info("broker running: epoch %s, frontends on %s, workers on %s, queue max %zu per model", b->epoch,
            b->frontend_endpoint, b->worker_endpoint, b->queue_max);
    if (b->breaker_failures > 0)
        sb_info("circuit breaker: a client's circuit for a model opens after %d failed upstream outcomes of its "
                "jobs in a row, a model's for everyone after %d in a row from more than one client (none counting "
                "for more than %d), for %d ms",
                b->breaker_failures, b->breaker_failures, (b->breaker_failures + 1) / 2, b->breaker_cooldown_ms);
    else
        sb_info("circuit breaker: disabled");
    while (sb_broker_run_once(b, SB_BROKER_SWEEP_MS) == 0)
        ;
    sb_info("broker stopping: %zu job(s) held, %zu worker(s)", sb_map_size(b->jobs),
            sb_broker_registry_count(b->registry));
    return 0;
}

void sb_broker_stop(sb_broker_t *b)
{
    b->stop = 1;
}

/*
 * Lifecycle.
 */

void sb_broker_config_init(sb_broker_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->queue_max = SB_BROKER_QUEUE_MAX_DEFAULT;
    cfg->heartbeat_interval_ms = SB_HEARTBEAT_INTERVAL_MS;
    cfg->heartbeat_liveness = SB_HEARTBEAT_LIVENESS;
    cfg->deadline_grace_ms = -1;
    cfg->breaker_failures = SB_BROKER_BREAKER_FAILURES_DEFAULT;
    cfg->breaker_cooldown_ms = SB_BROKER_BREAKER_COOLDOWN_MS_DEFAULT;
    cfg->startup_grace_ms = -1;
}

/* A ROUTER that reports unroutable peers (ROUTER_MANDATORY) and never blocks
 * the loop on a send (SNDTIMEO 0: a full pipe fails with EAGAIN). */
static zsock_t *sb_broker_bind(const char *endpoint, int sndhwm, char **bound)
{
    zsock_t *s = zsock_new(ZMQ_ROUTER);
    if (!s)
        goto fail;
    zsock_set_router_mandatory(s, 1);
    zsock_set_sndtimeo(s, 0);
    zsock_set_sndhwm(s, sndhwm);
    zsock_set_maxmsgsize(s, (int)SB_MAX_FRAME_BYTES); /* per frame; over tcp/ipc only */
    zsock_set_linger(s, 0);
    if (zsock_bind(s, "%s", endpoint) < 0) {
        sb_error("cannot bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
        goto fail;
    }
    char *last = zsock_last_endpoint(s);
    *bound = sb_xstrdup(last ? last : endpoint);
    free(last);
    return s;
fail:
    zsock_destroy(&s);
    return NULL;
}

sb_broker_t *sb_broker_new(const sb_broker_config_t *cfg)
{
    sb_broker_t *b = sb_xcalloc(1, sizeof *b);
    const char *fe = cfg->frontend_endpoint ? cfg->frontend_endpoint : SB_BROKER_FRONTEND_ENDPOINT_DEFAULT;
    const char *we = cfg->worker_endpoint ? cfg->worker_endpoint : SB_BROKER_WORKER_ENDPOINT_DEFAULT;
    b->queue_max = cfg->queue_max ? cfg->queue_max : SB_BROKER_QUEUE_MAX_DEFAULT;
    b->heartbeat_ms = cfg->heartbeat_interval_ms > 0 ? cfg->heartbeat_interval_ms : SB_HEARTBEAT_INTERVAL_MS;
    b->liveness = cfg->heartbeat_liveness > 0 ? cfg->heartbeat_liveness : SB_HEARTBEAT_LIVENESS;
    b->grace_ms = cfg->deadline_grace_ms >= 0 ? cfg->deadline_grace_ms : SB_BROKER_DEADLINE_GRACE_MS;
    b->breaker_failures = cfg->breaker_failures >= 0 ? cfg->breaker_failures : SB_BROKER_BREAKER_FAILURES_DEFAULT;
    b->breaker_cooldown_ms =
        cfg->breaker_cooldown_ms > 0 ? cfg->breaker_cooldown_ms : SB_BROKER_BREAKER_COOLDOWN_MS_DEFAULT;
    b->frontends = sb_broker_bind(fe, SB_BROKER_FRONTEND_SNDHWM, &b->frontend_endpoint);
    if (!b->frontends)
        goto fail;
    b->workers = sb_broker_bind(we, SB_BROKER_WORKER_SNDHWM, &b->worker_endpoint);
    if (!b->workers)
        goto fail;
    b->jobs = sb_map_new();
    b->queues = sb_broker_queues_new(b->queue_max);
    b->registry = sb_broker_registry_new();
    b->breakers = sb_breakers_new(b->breaker_failures, b->breaker_cooldown_ms);
    unsigned char rnd[SB_EPOCH_HEX_LEN / 2];
    sb_random_bytes(rnd, sizeof rnd);
    for (size_t i = 0; i < sizeof rnd; i++)
        snprintf(b->epoch + 2 * i, 3, "%02x", rnd[i]);
    int64_t now = sb_mono_ms();
    int grace = cfg->startup_grace_ms >= 0 ? cfg->startup_grace_ms : b->heartbeat_ms * b->liveness;
    b->warm_mono = now + grace;
    b->warm = grace == 0;
    b->next_heartbeat = now + b->heartbeat_ms;
    b->next_sweep = now + SB_BROKER_SWEEP_MS;
    b->next_stats = now + SB_BROKER_STATS_MS;
    return b;
fail:
    sb_broker_destroy(&b);
    return NULL;
}

const char *sb_broker_frontend_endpoint(const sb_broker_t *b)
{
    return b->frontend_endpoint;
}

const char *sb_broker_worker_endpoint(const sb_broker_t *b)
{
    return b->worker_endpoint;
}

const char *sb_broker_epoch(const sb_broker_t *b)
{
    return b->epoch;
}

void sb_broker_counts(const sb_broker_t *b, sb_broker_counts_t *out)
{
    *out = b->counts;
}

static void sb_broker_free_job(const char *key, void *value, void *arg)
{
    sb_broker_job_t *job = value;
    sb_broker_job_destroy(&job);
}

void sb_broker_destroy(sb_broker_t **pb)
{
    if (!pb || !*pb)
        return;
    sb_broker_t *b = *pb;
    if (b->jobs) {
        sb_map_foreach(b->jobs, sb_broker_free_job, NULL);
        sb_map_destroy(&b->jobs);
    }
    sb_broker_queues_destroy(&b->queues);
    sb_broker_registry_destroy(&b->registry);
    sb_breakers_destroy(&b->breakers);
    zsock_destroy(&b->frontends);
    zsock_destroy(&b->workers);
    free(b->frontend_endpoint);
    free(b->worker_endpoint);
    free(b);
    *pb = NULL;
}
