/*
 * fe_broker: job submission and event routing over ZeroMQ.
 *
 * Lost jobs are resubmitted once. A job is lost when its broker restarted
 * (the epoch in the broker's messages changed, sb_protocol.h: the new broker
 * holds none of the jobs submitted to the old one) or when the broker
 * reports its worker lost (502 worker_lost). If no event of the job has
 * reached its sink yet, nothing of the answer can have reached the client,
 * so the job is sent again, once, under the same id and deadline: the sink
 * never knows. Otherwise (or when the resubmission cannot be sent, or the
 * deadline has passed) the sink gets the error at once: 503 broker_restarted
 * for a restart, the broker's 502 worker_lost for a worker. Until its first
 * event a job keeps its encoded body for this; the body is freed then.
 */
#include "fe_broker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_evbatch.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_map.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_time.h"
#include "sb_wire.h"
#include "sb_zsock_ev.h"

typedef struct {
    fe_broker_sink sink;
    void *arg;
    char epoch[SB_EPOCH_MAX + 1]; /* the broker epoch it was last submitted to; "": none known then */
    bool heard;                   /* an event reached the sink: the client may have seen part of it */
    bool resubmitted;             /* its one resubmission is spent */
    /* What a resubmission sends; body NULL once it can no longer happen. */
    char *model;
    char *client; /* NULL: none */
    int64_t deadline_ms;
    char *body; /* msgpack of the job */
    size_t body_len;
    char *background;               /* a background job's response id (docs/background.md), or NULL */
    fe_broker_accepted_fn accepted; /* a background job's: the broker queued it; NULL once called */
} fe_job_sink_t;

struct fe_broker {
    struct event_base *base;
    char *endpoint;
    zsock_t *sock;
    sb_zsock_ev_t *watch;
    struct event *heartbeat;
    sb_map_t *jobs; /* job id -> fe_job_sink_t* (owned) */
    int64_t last_heard_ms;
    bool broker_alive;
    char epoch[SB_EPOCH_MAX + 1]; /* the broker instance heard from last; "": none yet */
    sb_map_t *stats;              /* stats id -> fe_stats_wait_t (owned): STATS asked, not answered */
};

/* A STATS asked of the broker, waiting for its answer or its timeout. */
typedef struct {
    fe_broker_t *b;
    char id[SB_ID_MAX];
    fe_broker_stats_fn fn;
    void *arg;
    struct event *timer;
} fe_stats_wait_t;

/* Ends a wait: fn(stats or NULL), then frees it (it is out of the map). */
static void fe_stats_wait_end(fe_stats_wait_t *w, const json_t *stats)
{
    event_free(w->timer);
    w->fn(stats, w->arg);
    free(w);
}

static void fe_job_sink_free(fe_job_sink_t *s)
{
    if (!s)
        return;
    free(s->model);
    free(s->client);
    free(s->body);
    free(s->background);
    free(s);
}

static void fe_job_sink_drop_body(fe_job_sink_t *s)
{
    free(s->body);
    s->body = NULL;
    s->body_len = 0;
}

static void fe_broker_on_msg(sb_wire_msg_t **pmsg, void *arg);

static int fe_broker_connect(fe_broker_t *b)
{
    b->sock = zsock_new(ZMQ_DEALER);
    if (!b->sock)
        return -ENOMEM;
    zsock_set_sndtimeo(b->sock, 0);
    zsock_set_rcvtimeo(b->sock, 0);
    zsock_set_linger(b->sock, 0);
    zsock_set_sndhwm(b->sock, 100000);
    zsock_set_rcvhwm(b->sock, 100000);
    if (zsock_connect(b->sock, "%s", b->endpoint) < 0) {
        zsock_destroy(&b->sock);
        return -EINVAL;
    }
    b->watch = sb_zsock_ev_new(b->base, b->sock, false, fe_broker_on_msg, b);
    if (!b->watch) {
        zsock_destroy(&b->sock);
        return -ENOMEM;
    }
    return 0;
}

/* Sends (or sends again) the SUBMIT for a job, stamped with the broker
 * epoch known now. */
static int fe_broker_send_submit(fe_broker_t *b, const char *job_id, fe_job_sink_t *s)
{
    if (!b->sock)
        return -ENOTCONN;
    json_t *hdr =
        json_pack("{s:s, s:s, s:I}", "job_id", job_id, "model", s->model, "deadline_ms", (json_int_t)s->deadline_ms);
    /* Who asked, for the broker's per-client circuit breakers (docs/protocol.md). */
    if (hdr && s->client)
        json_object_set_new(hdr, "client", json_string(s->client));
    /* A background job: the worker keeps its events; the broker says when
     * it is queued (docs/protocol.md). */
    if (hdr && s->background) {
        json_object_set_new(hdr, "background", json_string(s->background));
        json_object_set_new(hdr, "ack", json_true());
    }
    /* A broker with another epoch refuses it rather than run a job we may resubmit. */
    if (hdr && b->epoch[0])
        json_object_set_new(hdr, "epoch", json_string(b->epoch));
    int rc = hdr ? sb_wire_send(b->sock, NULL, SB_CMD_SUBMIT, hdr, s->body, s->body_len) : -EINVAL;
    json_decref(hdr);
    sb_zsock_ev_poke(b->watch);
    if (rc == 0)
        memcpy(s->epoch, b->epoch, sizeof s->epoch);
    return rc;
}

static void fe_broker_deliver(fe_broker_t *b, const char *job_id, const json_t *ev, bool final)
{
    fe_job_sink_t *s = final ? sb_map_remove(b->jobs, job_id) : sb_map_get(b->jobs, job_id);
    if (!s)
        return; /* cancelled or unknown: drop */
    if (!s->heard) {
        s->heard = true; /* before the sink runs: it may cancel (free) the job */
        fe_job_sink_drop_body(s);
    }
    if (s->sink)
        s->sink(ev, final, s->arg);
    if (final)
        fe_job_sink_free(s);
}

/* A job its broker no longer holds: resubmitted once if nothing of it has
 * reached the sink and its deadline is ahead, else ended with ev. Returns
 * true when it was resubmitted. */
static bool fe_broker_job_lost(fe_broker_t *b, const char *job_id, const json_t *ev, const char *why)
{
    fe_job_sink_t *s = sb_map_get(b->jobs, job_id);
    if (!s)
        return false;
    if (s->body && !s->heard && !s->resubmitted && s->deadline_ms > sb_now_ms()) {
        s->resubmitted = true;
        int rc = fe_broker_send_submit(b, job_id, s);
        fe_job_sink_drop_body(s);
        if (rc == 0) {
            sb_info("job %s: %s before any event: resubmitted", job_id, why);
            return true;
        }
        sb_warn("job %s: %s; could not resubmit it: %s", job_id, why, strerror(-rc));
    }
    fe_broker_deliver(b, job_id, ev, true);
    return false;
}

static void fe_broker_collect_id(const char *job_id, void *value, void *arg)
{
    json_array_append_new(arg, json_string(job_id));
}

/* The ids of the outstanding jobs: sinks may submit or cancel jobs, so the
 * map is not walked while they run. */
static json_t *fe_broker_job_ids(const fe_broker_t *b)
{
    json_t *ids = json_array();
    sb_map_foreach(b->jobs, fe_broker_collect_id, ids);
    return ids;
}

/* Fails every outstanding job with the given error event. */
static void fe_broker_fail_all(fe_broker_t *b, int status, const char *code, const char *message)
{
    if (sb_map_size(b->jobs) == 0)
        return;
    json_t *ev = sb_event_error(status, SB_ERR_OVERLOADED, code, message);
    json_object_set_new(ev, "retry_after", json_integer(1)); /* the broker is back within seconds, or another is */
    json_t *ids = fe_broker_job_ids(b);
    size_t i;
    json_t *id;
    json_array_foreach (ids, i, id)
        fe_broker_deliver(b, json_string_value(id), ev, true);
    json_decref(ids);
    json_decref(ev);
}

/* A message carried a broker epoch. A different one than before means the
 * broker restarted: every job submitted to the old instance is lost there. */
static void fe_broker_on_epoch(fe_broker_t *b, const char *epoch)
{
    if (!strcmp(b->epoch, epoch))
        return;
    if (!b->epoch[0]) { /* the first broker heard: jobs sent before are its */
        snprintf(b->epoch, sizeof b->epoch, "%s", epoch);
        sb_info("broker at %s: epoch %s", b->endpoint, epoch);
        return;
    }
    sb_warn("broker at %s restarted (epoch %s, was %s): %zu outstanding job(s) to resubmit or fail", b->endpoint, epoch,
            b->epoch, sb_map_size(b->jobs));
    snprintf(b->epoch, sizeof b->epoch, "%s", epoch);
    json_t *ev = sb_event_error(503, SB_ERR_OVERLOADED, "broker_restarted",
                                "the gateway's job broker restarted; retry the request");
    json_object_set_new(ev, "retry_after", json_integer(1));
    json_t *ids = fe_broker_job_ids(b);
    size_t i;
    json_t *id;
    json_array_foreach (ids, i, id) {
        fe_job_sink_t *s = sb_map_get(b->jobs, json_string_value(id));
        if (s && strcmp(s->epoch, epoch) != 0)
            (void)fe_broker_job_lost(b, json_string_value(id), ev, "broker restarted");
    }
    json_decref(ids);
    json_decref(ev);
}

static void fe_broker_on_msg(sb_wire_msg_t **pmsg, void *arg)
{
    fe_broker_t *b = arg;
    sb_wire_msg_t *msg = *pmsg;
    b->last_heard_ms = sb_mono_ms();
    if (!b->broker_alive) {
        sb_info("broker reachable at %s", b->endpoint);
        b->broker_alive = true;
    }
    const char *epoch = sb_wire_header_str(msg, "epoch");
    if (epoch && *epoch && strlen(epoch) <= SB_EPOCH_MAX)
        fe_broker_on_epoch(b, epoch);
    if (msg->cmd == SB_CMD_STATS) {
        const char *id = sb_wire_header_str(msg, "stats_id");
        fe_stats_wait_t *w = id ? sb_map_remove(b->stats, id) : NULL;
        if (w)
            fe_stats_wait_end(w, json_object_get(msg->header, "stats"));
        return;
    }
    if (msg->cmd == SB_CMD_ACCEPTED) {
        const char *id = sb_wire_header_str(msg, "job_id");
        fe_job_sink_t *s = id ? sb_map_get(b->jobs, id) : NULL;
        if (s && s->accepted) {
            fe_broker_accepted_fn accepted = s->accepted;
            s->accepted = NULL;
            accepted(s->arg);
        }
        return;
    }
    if (msg->cmd != SB_CMD_EVENT)
        return; /* heartbeats only refresh liveness (and tell the epoch) */
    const char *job_id = sb_wire_header_str(msg, "job_id");
    if (!job_id || !msg->body) {
        sb_warn("event without job id or body dropped");
        return;
    }
    const char *refused = sb_wire_header_str(msg, "refused_epoch");
    if (refused) {
        /* A SUBMIT that reached a broker other than the one it was stamped
         * for. Usually it was resubmitted already, on seeing the new epoch. */
        fe_job_sink_t *s = sb_map_get(b->jobs, job_id);
        if (!s || strcmp(s->epoch, refused) != 0)
            return;
    }
    json_t *evs = NULL;
    if (sb_evbatch_decode(zframe_data(msg->body), zframe_size(msg->body), &evs) < 0) {
        json_t *ev = sb_event_error(502, SB_ERR_SERVER, "bad_event", "the worker sent a malformed event");
        fe_broker_deliver(b, job_id, ev, true);
        json_decref(ev);
        return;
    }
    /* A batch: only its last event may be final; an earlier final one ends
     * the job there (what follows it is dropped by fe_broker_deliver). */
    size_t n = json_array_size(evs);
    for (size_t i = 0; i < n; i++) {
        json_t *ev = json_array_get(evs, i);
        bool final = (i + 1 == n && sb_wire_header_bool(msg, "final")) || sb_event_is_final(ev);
        const char *code = json_string_value(json_object_get(ev, "code"));
        if (final && sb_event_type_of(ev) == SB_EV_ERROR && code &&
            (!strcmp(code, "worker_lost") || (refused && !strcmp(code, "broker_restarted"))))
            (void)fe_broker_job_lost(b, job_id, ev, refused ? "refused by a restarted broker" : "its worker was lost");
        else
            fe_broker_deliver(b, job_id, ev, final);
        if (final)
            break;
    }
    json_decref(evs);
}

static void fe_broker_on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    fe_broker_t *b = arg;
    int64_t silent = sb_mono_ms() - b->last_heard_ms;
    if (silent > (int64_t)SB_HEARTBEAT_INTERVAL_MS * SB_HEARTBEAT_LIVENESS) {
        if (b->broker_alive)
            sb_warn("broker at %s silent for %lld ms: failing %zu jobs and reconnecting", b->endpoint,
                    (long long)silent, sb_map_size(b->jobs));
        b->broker_alive = false;
        fe_broker_fail_all(b, 503, "broker_unavailable", "the gateway's job broker is unavailable, retry later");
        /* A fresh socket drops whatever was queued for the dead broker. */
        sb_zsock_ev_destroy(&b->watch);
        zsock_destroy(&b->sock);
        if (fe_broker_connect(b) < 0)
            sb_error("cannot recreate the broker socket");
        b->last_heard_ms = sb_mono_ms();
    }
    if (b->sock) {
        if (sb_wire_send(b->sock, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0) < 0)
            sb_debug("heartbeat not sent");
        sb_zsock_ev_poke(b->watch);
    }
}

fe_broker_t *fe_broker_new(struct event_base *base, const char *endpoint)
{
    fe_broker_t *b = sb_xcalloc(1, sizeof *b);
    b->base = base;
    b->endpoint = sb_xstrdup(endpoint);
    b->jobs = sb_map_new();
    b->stats = sb_map_new();
    b->last_heard_ms = sb_mono_ms();
    if (fe_broker_connect(b) < 0) {
        fe_broker_destroy(&b);
        return NULL;
    }
    b->heartbeat = event_new(base, -1, EV_PERSIST, fe_broker_on_heartbeat, b);
    struct timeval tv = {0, SB_HEARTBEAT_INTERVAL_MS * 1000};
    event_add(b->heartbeat, &tv);
    /* Say hello at once so liveness starts from a real answer. */
    if (sb_wire_send(b->sock, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0) < 0)
        sb_debug("initial heartbeat not sent");
    return b;
}

static int fe_stats_wait_drop(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    fe_stats_wait_end(value, NULL);
    return 1;
}

void fe_broker_destroy(fe_broker_t **pb)
{
    if (!pb || !*pb)
        return;
    fe_broker_t *b = *pb;
    fe_broker_fail_all(b, 503, "shutting_down", "the gateway is shutting down");
    sb_map_remove_if(b->stats, fe_stats_wait_drop, NULL);
    sb_map_destroy(&b->stats);
    if (b->heartbeat)
        event_free(b->heartbeat);
    sb_zsock_ev_destroy(&b->watch);
    zsock_destroy(&b->sock);
    sb_map_destroy(&b->jobs);
    free(b->endpoint);
    free(b);
    *pb = NULL;
}

static int fe_broker_submit_sink(fe_broker_t *b, const char *job_id, const char *model, const char *client,
                                 int64_t deadline_ms, const json_t *job, fe_job_sink_t *s);

int fe_broker_submit(fe_broker_t *b, const char *job_id, const char *model, const char *client, int64_t deadline_ms,
                     const json_t *job, fe_broker_sink sink, void *arg)
{
    fe_job_sink_t *s = sb_xcalloc(1, sizeof *s);
    s->sink = sink;
    s->arg = arg;
    return fe_broker_submit_sink(b, job_id, model, client, deadline_ms, job, s);
}

int fe_broker_submit_background(fe_broker_t *b, const char *job_id, const char *response_id, const char *model,
                                const char *client, int64_t deadline_ms, const json_t *job, fe_broker_sink sink,
                                fe_broker_accepted_fn accepted, void *arg)
{
    fe_job_sink_t *s = sb_xcalloc(1, sizeof *s);
    s->sink = sink;
    s->accepted = accepted;
    s->arg = arg;
    s->background = sb_xstrdup(response_id);
    return fe_broker_submit_sink(b, job_id, model, client, deadline_ms, job, s);
}

/* Encodes the job into s (owned: freed on failure), sends it, and files s
 * under job_id. */
static int fe_broker_submit_sink(fe_broker_t *b, const char *job_id, const char *model, const char *client,
                                 int64_t deadline_ms, const json_t *job, fe_job_sink_t *s)
{
    if (!b->sock) {
        fe_job_sink_free(s);
        return -ENOTCONN;
    }
    if (sb_mpjson_encode(job, &s->body, &s->body_len) < 0) {
        fe_job_sink_free(s);
        return -EINVAL;
    }
    /* Kept until the job's first event (for a resubmission): msgpack's
     * buffer starts at 8 KiB, most jobs are far smaller. */
    char *fit = realloc(s->body, s->body_len);
    if (fit)
        s->body = fit;
    s->model = sb_xstrdup(model);
    s->client = client && client[0] && strlen(client) <= SB_CLIENT_ID_MAX ? sb_xstrdup(client) : NULL;
    s->deadline_ms = deadline_ms;
    int rc = fe_broker_send_submit(b, job_id, s);
    if (rc < 0) {
        fe_job_sink_free(s);
        return rc;
    }
    fe_job_sink_free(sb_map_put(b->jobs, job_id, s));
    return 0;
}

static void fe_broker_send_cancel(fe_broker_t *b, const char *job_id);

void fe_broker_cancel(fe_broker_t *b, const char *job_id)
{
    fe_job_sink_t *s = sb_map_remove(b->jobs, job_id);
    if (!s)
        return;
    fe_job_sink_free(s);
    fe_broker_send_cancel(b, job_id);
}

void fe_broker_cancel_any(fe_broker_t *b, const char *job_id)
{
    /* A sink of this frontend's for it stays: it hears the job's final
     * event (the cancel's) as any other, and frees what it holds then. */
    fe_broker_send_cancel(b, job_id);
}

static void fe_broker_send_cancel(fe_broker_t *b, const char *job_id)
{
    json_t *hdr = json_pack("{s:s}", "job_id", job_id);
    if (b->sock && sb_wire_send(b->sock, NULL, SB_CMD_CANCEL, hdr, NULL, 0) < 0)
        sb_debug("cancel for %s not sent", job_id);
    json_decref(hdr);
    sb_zsock_ev_poke(b->watch);
}

size_t fe_broker_outstanding(const fe_broker_t *b)
{
    return sb_map_size(b->jobs);
}

bool fe_broker_connected(const fe_broker_t *b)
{
    return b->broker_alive && b->epoch[0];
}

static void fe_stats_on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_stats_wait_t *w = arg;
    sb_map_remove(w->b->stats, w->id);
    fe_stats_wait_end(w, NULL);
}

void fe_broker_stats(fe_broker_t *b, int timeout_ms, fe_broker_stats_fn fn, void *arg)
{
    fe_stats_wait_t *w = sb_xcalloc(1, sizeof *w);
    w->b = b;
    w->fn = fn;
    w->arg = arg;
    sb_id_new(w->id, sizeof w->id, "st_", 8);
    w->timer = evtimer_new(b->base, fe_stats_on_timeout, w);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(w->timer, &tv);
    sb_map_put(b->stats, w->id, w);
    json_t *hdr = json_pack("{s:s}", "stats_id", w->id);
    if (sb_wire_send(b->sock, NULL, SB_CMD_STATS, hdr, NULL, 0) < 0)
        sb_debug("STATS not sent; its wait times out");
    else
        sb_zsock_ev_poke(b->watch);
    json_decref(hdr);
}
