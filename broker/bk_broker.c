/*
 * bk_broker: the loop and its handlers. Single-threaded (zpoller); every
 * message is validated before use and a malformed one is dropped with a
 * warning. Broker-made answers to a frontend are canonical error events
 * (sb_event.h): 503 no_workers, 429 queue_full, 504 deadline_exceeded,
 * 502 worker_lost.
 */
#include "bk_broker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bk_state.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_log.h"
#include "sb_mpjson.h"
#include "sb_time.h"
#include "sb_wire.h"

#define BK_TICK_MS 50

struct bk_broker {
    bk_config_t cfg;
    zsock_t *frontends;
    zsock_t *workers_sock;
    zpoller_t *poller;
    sb_map_t *workers; /* hex routing id -> bk_worker_t* (owned) */
    sb_map_t *jobs;    /* job id -> bk_job_t* (owned) */
    sb_map_t *queues;  /* model -> bk_queue_t* (owned) */
    int64_t last_tick_ms, last_heartbeat_ms, last_report_ms;
    bool changed;
};

void bk_config_defaults(bk_config_t *cfg)
{
    cfg->frontend_endpoint = SB_BROKER_FRONTEND_ENDPOINT_DEFAULT;
    cfg->worker_endpoint = SB_BROKER_WORKER_ENDPOINT_DEFAULT;
    cfg->queue_max = 256;
    cfg->heartbeat_ms = SB_HEARTBEAT_INTERVAL_MS;
    cfg->liveness = SB_HEARTBEAT_LIVENESS;
    cfg->deadline_grace_ms = 250;
}

static zsock_t *bk_router(const char *endpoint)
{
    zsock_t *s = zsock_new(ZMQ_ROUTER);
    if (!s)
        return NULL;
    zsock_set_router_mandatory(s, 1);
    zsock_set_sndhwm(s, 100000);
    zsock_set_rcvhwm(s, 100000);
    zsock_set_sndtimeo(s, 0);
    zsock_set_rcvtimeo(s, 0);
    zsock_set_linger(s, 500);
    if (zsock_bind(s, "%s", endpoint) < 0) {
        sb_error("cannot bind %s: %s", endpoint, zmq_strerror(zmq_errno()));
        zsock_destroy(&s);
    }
    return s;
}

bk_broker_t *bk_broker_new(const bk_config_t *cfg)
{
    bk_broker_t *b = sb_xcalloc(1, sizeof *b);
    b->cfg = *cfg;
    b->frontends = bk_router(cfg->frontend_endpoint);
    b->workers_sock = bk_router(cfg->worker_endpoint);
    if (!b->frontends || !b->workers_sock) {
        bk_broker_destroy(&b);
        return NULL;
    }
    b->poller = zpoller_new(b->frontends, b->workers_sock, NULL);
    b->workers = sb_map_new();
    b->jobs = sb_map_new();
    b->queues = sb_map_new();
    b->last_tick_ms = b->last_heartbeat_ms = b->last_report_ms = sb_mono_ms();
    sb_info("frontends on %s, workers on %s, queue max %d per model", cfg->frontend_endpoint, cfg->worker_endpoint,
            cfg->queue_max);
    return b;
}

static int bk_free_job(const char *k, void *v, void *arg)
{
    bk_job_free(v);
    return 1;
}
static int bk_free_worker(const char *k, void *v, void *arg)
{
    bk_worker_free(v);
    return 1;
}
static int bk_free_queue(const char *k, void *v, void *arg)
{
    free(v);
    return 1;
}

void bk_broker_destroy(bk_broker_t **pb)
{
    if (!pb || !*pb)
        return;
    bk_broker_t *b = *pb;
    if (b->jobs) {
        sb_map_remove_if(b->jobs, bk_free_job, NULL);
        sb_map_destroy(&b->jobs);
    }
    if (b->workers) {
        sb_map_remove_if(b->workers, bk_free_worker, NULL);
        sb_map_destroy(&b->workers);
    }
    if (b->queues) {
        sb_map_remove_if(b->queues, bk_free_queue, NULL);
        sb_map_destroy(&b->queues);
    }
    zpoller_destroy(&b->poller);
    zsock_destroy(&b->frontends);
    zsock_destroy(&b->workers_sock);
    free(b);
    *pb = NULL;
}

static bk_queue_t *bk_queue_for(bk_broker_t *b, const char *model)
{
    bk_queue_t *q = sb_map_get(b->queues, model);
    if (!q) {
        q = sb_xcalloc(1, sizeof *q);
        sb_map_put(b->queues, model, q);
    }
    return q;
}

/* Sends a canonical error event as the job's final event to its frontend. */
static void bk_send_error(bk_broker_t *b, zframe_t *frontend, const char *job_id, int status, const char *kind,
                          const char *code, const char *message)
{
    json_t *ev = sb_event_error(status, kind, code, message);
    char *body = NULL;
    size_t len = 0;
    json_t *hdr = json_pack("{s:s, s:b}", "job_id", job_id, "final", 1);
    if (ev && hdr && sb_mpjson_encode(ev, &body, &len) == 0) {
        int rc = sb_wire_send(b->frontends, frontend, SB_CMD_EVENT, hdr, body, len);
        if (rc < 0)
            sb_debug("error event for %s not delivered (%s)", job_id, strerror(-rc));
    }
    free(body);
    json_decref(hdr);
    json_decref(ev);
}

static void bk_send_cancel(bk_broker_t *b, bk_worker_t *w, const char *job_id)
{
    json_t *hdr = json_pack("{s:s}", "job_id", job_id);
    if (sb_wire_send(b->workers_sock, w->rid, SB_CMD_CANCEL, hdr, NULL, 0) < 0)
        sb_debug("cancel for %s not delivered to worker %s", job_id, w->name);
    json_decref(hdr);
}

/* Removes a job everywhere and frees it. */
static void bk_drop_job(bk_broker_t *b, bk_job_t *j)
{
    if (j->state == BK_JOB_QUEUED)
        bk_queue_remove(bk_queue_for(b, j->model), j);
    sb_map_remove(b->jobs, j->id);
    bk_job_free(j);
}

static bool bk_model_has_worker(bk_broker_t *b, const char *model);

typedef struct {
    const char *model;
    bk_worker_t *best;
    int best_free;
} bk_pick_t;

static void bk_pick_cb(const char *k, void *v, void *arg)
{
    bk_worker_t *w = v;
    bk_pick_t *p = arg;
    int free_credits = w->credits - w->inflight;
    if (free_credits > p->best_free && bk_worker_serves(w, p->model)) {
        p->best = w;
        p->best_free = free_credits;
    }
}

static void bk_worker_lost(bk_broker_t *b, bk_worker_t *w, const char *why);

/* Sends queued jobs of one model to workers with free credit. */
static void bk_dispatch_model(bk_broker_t *b, const char *model)
{
    bk_queue_t *q = sb_map_get(b->queues, model);
    while (q && q->len > 0) {
        bk_pick_t pick = {model, NULL, 0};
        sb_map_foreach(b->workers, bk_pick_cb, &pick);
        if (!pick.best)
            return;
        bk_job_t *j = bk_queue_pop(q);
        zframe_t *body = j->body;
        int rc = sb_wire_send(b->workers_sock, pick.best->rid, SB_CMD_JOB, j->header, zframe_data(body),
                              zframe_size(body));
        if (rc < 0) {
            bk_queue_push_front(q, j);
            bk_worker_lost(b, pick.best, rc == -EHOSTUNREACH ? "unroutable" : "send failed");
            continue;
        }
        zframe_destroy(&j->body);
        j->worker = pick.best;
        pick.best->inflight++;
        bk_job_set_state(j, BK_JOB_RUNNING);
        b->changed = true;
    }
}

static void bk_dispatch_cb(const char *model, void *v, void *arg)
{
    bk_queue_t *q = v;
    if (q->len > 0) {
        /* Collect first: dispatch can remove workers but never queues. */
        json_array_append_new(arg, json_string(model));
    }
}

static void bk_dispatch_all(bk_broker_t *b)
{
    json_t *models = json_array();
    sb_map_foreach(b->queues, bk_dispatch_cb, models);
    size_t i;
    json_t *m;
    json_array_foreach(models, i, m) bk_dispatch_model(b, json_string_value(m));
    json_decref(models);
}

typedef struct {
    bk_broker_t *b;
    bk_worker_t *w;
} bk_lost_t;

static int bk_lost_job_cb(const char *k, void *v, void *arg)
{
    bk_job_t *j = v;
    bk_lost_t *l = arg;
    if (j->worker != l->w || j->state == BK_JOB_QUEUED)
        return 0;
    if (j->state == BK_JOB_RUNNING)
        bk_send_error(l->b, j->frontend, j->id, 502, SB_ERR_UPSTREAM, "worker_lost",
                      "the worker handling this request stopped responding");
    bk_job_free(j);
    return 1;
}

/* A worker is gone: its running jobs fail at once (never hang). */
static void bk_worker_lost(bk_broker_t *b, bk_worker_t *w, const char *why)
{
    sb_warn("worker %s lost (%s): failing %d jobs", w->name, why, w->inflight);
    bk_lost_t l = {b, w};
    sb_map_remove_if(b->jobs, bk_lost_job_cb, &l);
    sb_map_remove(b->workers, w->key);
    bk_worker_free(w);
    b->changed = true;
}

typedef struct {
    const char *model;
    bool found;
} bk_has_t;

static void bk_has_cb(const char *k, void *v, void *arg)
{
    bk_has_t *h = arg;
    if (bk_worker_serves(v, h->model))
        h->found = true;
}

static bool bk_model_has_worker(bk_broker_t *b, const char *model)
{
    bk_has_t h = {model, false};
    sb_map_foreach(b->workers, bk_has_cb, &h);
    return h.found;
}

static void bk_on_submit(bk_broker_t *b, sb_wire_msg_t *msg)
{
    const char *id = sb_wire_header_str(msg, "job_id");
    const char *model = sb_wire_header_str(msg, "model");
    long long deadline = sb_wire_header_int(msg, "deadline_ms", -1);
    if (!id || !model || !*id || !*model || strlen(id) > SB_JOB_ID_MAX || strlen(model) > SB_MODEL_ID_MAX ||
        deadline <= 0 || !msg->body) {
        sb_warn("malformed SUBMIT dropped");
        if (id && strlen(id) <= SB_JOB_ID_MAX)
            bk_send_error(b, msg->routing_id, id, 400, SB_ERR_INVALID_REQUEST, "bad_job", "malformed job");
        return;
    }
    if (sb_map_get(b->jobs, id)) {
        bk_send_error(b, msg->routing_id, id, 409, SB_ERR_INVALID_REQUEST, "duplicate_job", "duplicate job id");
        return;
    }
    if (!bk_model_has_worker(b, model)) {
        char text[256];
        snprintf(text, sizeof text, "no worker is serving model '%s', retry later", model);
        bk_send_error(b, msg->routing_id, id, 503, SB_ERR_OVERLOADED, "no_workers", text);
        return;
    }
    bk_queue_t *q = bk_queue_for(b, model);
    if ((int)q->len >= b->cfg.queue_max) {
        char text[256];
        snprintf(text, sizeof text, "model '%s' is busy: its queue is full, retry later", model);
        bk_send_error(b, msg->routing_id, id, 429, SB_ERR_OVERLOADED, "queue_full", text);
        return;
    }
    bk_job_t *j = sb_xcalloc(1, sizeof *j);
    snprintf(j->id, sizeof j->id, "%s", id);
    snprintf(j->model, sizeof j->model, "%s", model);
    j->frontend = msg->routing_id;
    msg->routing_id = NULL;
    j->header = json_incref(msg->header);
    j->body = msg->body;
    msg->body = NULL;
    j->deadline_ms = deadline;
    bk_job_set_state(j, BK_JOB_QUEUED);
    sb_map_put(b->jobs, j->id, j);
    bk_queue_push(q, j);
    b->changed = true;
    bk_dispatch_model(b, model);
}

static void bk_on_cancel(bk_broker_t *b, sb_wire_msg_t *msg)
{
    const char *id = sb_wire_header_str(msg, "job_id");
    bk_job_t *j = id ? sb_map_get(b->jobs, id) : NULL;
    if (!j || !zframe_eq(j->frontend, msg->routing_id))
        return; /* finished already, or not this frontend's */
    if (j->state == BK_JOB_QUEUED) {
        bk_drop_job(b, j);
    } else if (j->state == BK_JOB_RUNNING) {
        bk_send_cancel(b, j->worker, j->id);
        bk_job_set_state(j, BK_JOB_ABANDONED);
    }
}

static void bk_on_frontend(bk_broker_t *b, sb_wire_msg_t *msg)
{
    switch (msg->cmd) {
    case SB_CMD_SUBMIT:
        bk_on_submit(b, msg);
        break;
    case SB_CMD_CANCEL:
        bk_on_cancel(b, msg);
        break;
    case SB_CMD_HEARTBEAT:
        if (sb_wire_send(b->frontends, msg->routing_id, SB_CMD_HEARTBEAT, NULL, NULL, 0) < 0)
            sb_debug("heartbeat reply not delivered");
        break;
    default:
        sb_warn("unexpected command 0x%02x from a frontend dropped", msg->cmd);
    }
}

static void bk_on_ready(bk_broker_t *b, sb_wire_msg_t *msg, bk_worker_t *w, const char *key)
{
    json_t *models = json_object_get(msg->header, "models");
    long long credits = sb_wire_header_int(msg, "credits", -1);
    const char *name = sb_wire_header_str(msg, "name");
    if (!json_is_array(models) || credits < 1 || credits > 100000) {
        sb_warn("malformed READY dropped");
        return;
    }
    if (w && w->inflight > 0) {
        /* A worker only re-announces after dropping its jobs (reconnect). */
        bk_worker_lost(b, w, "re-announced");
        w = NULL;
    }
    if (!w) {
        w = sb_xcalloc(1, sizeof *w);
        snprintf(w->key, sizeof w->key, "%s", key);
        w->rid = zframe_dup(msg->routing_id);
        sb_map_put(b->workers, w->key, w);
    }
    json_decref(w->models);
    w->models = json_incref(models);
    w->credits = (int)credits;
    free(w->name);
    w->name = sb_xstrdup(name ? name : key);
    w->last_seen_ms = sb_mono_ms();
    char *list = json_dumps(models, JSON_COMPACT);
    sb_info("worker %s ready: models %s, credits %d", w->name, list ? list : "?", w->credits);
    free(list);
    b->changed = true;
    bk_dispatch_all(b);
}

static void bk_on_worker_event(bk_broker_t *b, sb_wire_msg_t *msg, bk_worker_t *w)
{
    const char *id = sb_wire_header_str(msg, "job_id");
    bk_job_t *j = id ? sb_map_get(b->jobs, id) : NULL;
    if (!j || j->worker != w || !msg->body)
        return; /* late event for a job already ended */
    bool final = sb_wire_header_bool(msg, "final");
    if (j->state == BK_JOB_RUNNING) {
        int rc = sb_wire_send(b->frontends, j->frontend, SB_CMD_EVENT, msg->header, zframe_data(msg->body),
                              zframe_size(msg->body));
        if (rc < 0 && !final) {
            /* The frontend is gone: stop the upstream work. */
            sb_debug("frontend of %s unreachable (%s): cancelling", j->id, strerror(-rc));
            bk_send_cancel(b, w, j->id);
            bk_job_set_state(j, BK_JOB_ABANDONED);
        }
    }
    if (final) {
        w->inflight--;
        bk_drop_job(b, j);
        b->changed = true;
        bk_dispatch_all(b);
    }
}

static void bk_on_worker(bk_broker_t *b, sb_wire_msg_t *msg)
{
    char key[sizeof ((bk_worker_t *)0)->key];
    bk_worker_key(msg->routing_id, key, sizeof key);
    bk_worker_t *w = sb_map_get(b->workers, key);
    if (w)
        w->last_seen_ms = sb_mono_ms();
    if (msg->cmd == SB_CMD_READY) {
        bk_on_ready(b, msg, w, key);
        return;
    }
    if (!w) {
        /* Unknown (e.g. the broker restarted): ask it to announce itself. */
        if (sb_wire_send(b->workers_sock, msg->routing_id, SB_CMD_RECONNECT, NULL, NULL, 0) < 0)
            sb_debug("RECONNECT not delivered");
        return;
    }
    switch (msg->cmd) {
    case SB_CMD_EVENT:
        bk_on_worker_event(b, msg, w);
        break;
    case SB_CMD_HEARTBEAT:
        break;
    default:
        sb_warn("unexpected command 0x%02x from worker %s dropped", msg->cmd, w->name);
    }
}

static void bk_drain(bk_broker_t *b, zsock_t *sock, bool frontends)
{
    for (int i = 0; i < 10000; i++) {
        sb_wire_msg_t *msg = NULL;
        int rc = sb_wire_recv(sock, true, &msg);
        if (rc == -EAGAIN)
            return;
        if (rc < 0) {
            sb_warn("malformed message from a %s dropped", frontends ? "frontend" : "worker");
            continue;
        }
        if (frontends)
            bk_on_frontend(b, msg);
        else
            bk_on_worker(b, msg);
        sb_wire_msg_destroy(&msg);
    }
}

typedef struct {
    bk_broker_t *b;
    int64_t now_ms;
} bk_sweep_t;

static int bk_deadline_cb(const char *k, void *v, void *arg)
{
    bk_job_t *j = v;
    bk_sweep_t *s = arg;
    if (j->state == BK_JOB_QUEUED && j->deadline_ms < s->now_ms) {
        bk_queue_remove(bk_queue_for(s->b, j->model), j);
        bk_send_error(s->b, j->frontend, j->id, 504, SB_ERR_TIMEOUT, "deadline_exceeded",
                      "timeout: the request waited in the queue past its deadline");
        bk_job_free(j);
        return 1;
    }
    if (j->state == BK_JOB_RUNNING && j->deadline_ms + s->b->cfg.deadline_grace_ms < s->now_ms) {
        bk_send_cancel(s->b, j->worker, j->id);
        bk_send_error(s->b, j->frontend, j->id, 504, SB_ERR_TIMEOUT, "deadline_exceeded",
                      "timeout: the request exceeded its deadline");
        bk_job_set_state(j, BK_JOB_ABANDONED);
    }
    return 0;
}

static void bk_heartbeat_cb(const char *k, void *v, void *arg)
{
    bk_worker_t *w = v;
    bk_broker_t *b = arg;
    if (sb_wire_send(b->workers_sock, w->rid, SB_CMD_HEARTBEAT, NULL, NULL, 0) < 0)
        sb_debug("heartbeat to %s not delivered", w->name);
}

typedef struct {
    bk_broker_t *b;
    int64_t cutoff;
    json_t *dead;
} bk_dead_t;

static void bk_find_dead_cb(const char *k, void *v, void *arg)
{
    bk_worker_t *w = v;
    bk_dead_t *d = arg;
    if (w->last_seen_ms < d->cutoff)
        json_array_append_new(d->dead, json_string(k));
}

static void bk_report_cb(const char *model, void *v, void *arg)
{
    bk_queue_t *q = v;
    if (q->len > 0)
        sb_info("queue %s: %zu waiting", model, q->len);
}

static void bk_tick(bk_broker_t *b)
{
    int64_t mono = sb_mono_ms();
    bk_sweep_t s = {b, sb_now_ms()};
    sb_map_remove_if(b->jobs, bk_deadline_cb, &s);
    if (mono - b->last_heartbeat_ms >= b->cfg.heartbeat_ms) {
        b->last_heartbeat_ms = mono;
        sb_map_foreach(b->workers, bk_heartbeat_cb, b);
        bk_dead_t d = {b, mono - (int64_t)b->cfg.heartbeat_ms * b->cfg.liveness, json_array()};
        sb_map_foreach(b->workers, bk_find_dead_cb, &d);
        size_t i;
        json_t *k;
        json_array_foreach(d.dead, i, k)
        {
            bk_worker_t *w = sb_map_get(b->workers, json_string_value(k));
            if (w)
                bk_worker_lost(b, w, "heartbeat timeout");
        }
        json_decref(d.dead);
    }
    if (b->changed && mono - b->last_report_ms >= 10000) {
        b->last_report_ms = mono;
        b->changed = false;
        sb_info("%zu workers, %zu jobs", sb_map_size(b->workers), sb_map_size(b->jobs));
        sb_map_foreach(b->queues, bk_report_cb, NULL);
    }
}

int bk_broker_step(bk_broker_t *b, int timeout_ms)
{
    int64_t until_tick = BK_TICK_MS - (sb_mono_ms() - b->last_tick_ms);
    if (until_tick < 0)
        until_tick = 0;
    zsock_t *which = zpoller_wait(b->poller, (int)(timeout_ms < until_tick ? timeout_ms : until_tick));
    if (!which && zpoller_terminated(b->poller))
        return -1;
    bk_drain(b, b->workers_sock, false);
    bk_drain(b, b->frontends, true);
    if (sb_mono_ms() - b->last_tick_ms >= BK_TICK_MS) {
        b->last_tick_ms = sb_mono_ms();
        bk_tick(b);
    }
    return 0;
}

void bk_broker_run(bk_broker_t *b)
{
    while (!zsys_interrupted && bk_broker_step(b, BK_TICK_MS) == 0)
        ;
    sb_info("stopping: %zu jobs outstanding", sb_map_size(b->jobs));
}

size_t bk_broker_queued(bk_broker_t *b, const char *model)
{
    bk_queue_t *q = sb_map_get(b->queues, model);
    return q ? q->len : 0;
}

size_t bk_broker_workers(bk_broker_t *b) { return sb_map_size(b->workers); }
