/*
 * fe_broker: job submission and event routing over ZeroMQ, to one broker or
 * several (docs/protocol.md, "Several brokers").
 *
 * Several brokers run active-active: each job goes to one of them (the
 * usable one holding the fewest of our jobs; ties in turn), every worker
 * serves all of them. The set comes from sb_endpoints (a list, or a name
 * resolving to every broker), and follows it as it changes. A broker that
 * goes down (its connection closed, or silent for the liveness period)
 * loses the jobs we sent it: each is resubmitted to another broker, or
 * failed, by the rule below.
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

#include "fe_broker_link.h"
#include "fe_broker_stats.h"
#include "sb_alloc.h"
#include "sb_endpoints.h"
#include "sb_evbatch.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_map.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_time.h"
#include "sb_wire.h"

typedef struct {
    fe_broker_sink sink;
    void *arg;
    fe_blink_t *link;             /* the broker it was last submitted to */
    char epoch[SB_EPOCH_MAX + 1]; /* that broker's epoch then */
    bool heard;                   /* an event reached the sink: the client may have seen part of it */
    int64_t parked_until;         /* > 0: waiting for a usable broker until then (monotonic ms) */
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
    sb_endpoints_t *endpoints;
    fe_blink_t *links[SB_ENDPOINTS_MAX];
    size_t nlinks;
    size_t turn; /* where the next tie-break starts */
    struct event *heartbeat;
    sb_map_t *jobs;  /* job id -> fe_job_sink_t* (owned) */
    sb_map_t *stats; /* stats id -> fe_stats_wait_t (owned): STATS asked, not all answered */
    size_t nparked;  /* jobs waiting for a usable broker */
};

/* A STATS asked of every usable broker, waiting for their answers or the timeout. */
typedef struct {
    fe_broker_t *b;
    char id[SB_ID_MAX];
    fe_broker_stats_fn fn;
    void *arg;
    struct event *timer;
    size_t asked;
    json_t *answers; /* [{endpoint, epoch, stats}] */
} fe_stats_wait_t;

/* Ends a wait: fn(the merged stats, or NULL when no broker answered), then
 * frees it (it is out of the map). */
static void fe_stats_wait_end(fe_stats_wait_t *w)
{
    event_free(w->timer);
    json_t *merged = json_array_size(w->answers) ? fe_broker_stats_merge(w->answers) : NULL;
    w->fn(merged, w->arg);
    json_decref(merged);
    json_decref(w->answers);
    free(w);
}

static void fe_job_sink_free(fe_job_sink_t *s)
{
    if (!s)
        return;
    if (s->link)
        s->link->njobs--;
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

/* The usable broker holding the fewest of our jobs, ties taken in turn,
 * skipping those in tried (a bit per index); NULL when none is left. */
static fe_blink_t *fe_broker_pick(fe_broker_t *b, uint64_t tried, size_t *index)
{
    fe_blink_t *best = NULL;
    for (size_t k = 0; k < b->nlinks; k++) {
        size_t i = (b->turn + k) % b->nlinks;
        fe_blink_t *l = b->links[i];
        if ((tried >> i & 1) || !fe_blink_usable(l))
            continue;
        if (!best || l->njobs < best->njobs) {
            best = l;
            *index = i;
        }
    }
    return best;
}

/* Sends (or sends again) the SUBMIT for a job to a broker, stamped with its
 * epoch: the preferred one, or the next when a send fails. */
static int fe_broker_send_submit_avoiding(fe_broker_t *b, const char *job_id, fe_job_sink_t *s, const fe_blink_t *avoid)
{
    json_t *hdr =
        json_pack("{s:s, s:s, s:I}", "job_id", job_id, "model", s->model, "deadline_ms", (json_int_t)s->deadline_ms);
    if (!hdr)
        return -ENOMEM;
    /* Who asked, for the broker's per-client circuit breakers (docs/protocol.md). */
    if (s->client)
        json_object_set_new(hdr, "client", json_string(s->client));
    /* A background job: the worker keeps its events; the broker says when
     * it is queued (docs/protocol.md). */
    if (s->background) {
        json_object_set_new(hdr, "background", json_string(s->background));
        json_object_set_new(hdr, "ack", json_true());
    }
    b->turn++;
    uint64_t tried = 0;
    for (size_t i = 0; avoid && i < b->nlinks; i++)
        if (b->links[i] == avoid)
            tried |= (uint64_t)1 << i;
    size_t i = 0;
    int rc = -ENOTCONN;
    for (fe_blink_t *l; (l = fe_broker_pick(b, tried, &i)) != NULL; tried |= (uint64_t)1 << i) {
        /* A broker with another epoch refuses it rather than run a job we may resubmit. */
        json_object_set_new(hdr, "epoch", json_string(l->epoch));
        rc = fe_blink_send(l, SB_CMD_SUBMIT, hdr, s->body, s->body_len);
        if (rc == 0) {
            if (s->link)
                s->link->njobs--;
            s->link = l;
            l->njobs++;
            memcpy(s->epoch, l->epoch, sizeof s->epoch);
            break;
        }
        sb_debug("job %s: not sent to the broker at %s: %s", job_id, l->endpoint, strerror(-rc));
    }
    json_decref(hdr);
    return rc;
}

static int fe_broker_send_submit(fe_broker_t *b, const char *job_id, fe_job_sink_t *s)
{
    return fe_broker_send_submit_avoiding(b, job_id, s, NULL);
}

/* No broker is usable now (they are restarting, or the set is still being
 * resolved): the job waits for one, at most the liveness period and never
 * past its deadline, as it would have waited in a broker's pipe. */
static void fe_broker_park(fe_broker_t *b, fe_job_sink_t *s)
{
    if (s->link)
        s->link->njobs--;
    s->link = NULL;
    s->epoch[0] = '\0';
    if (!s->parked_until)
        b->nparked++;
    s->parked_until = sb_mono_ms() + (int64_t)SB_HEARTBEAT_INTERVAL_MS * SB_HEARTBEAT_LIVENESS;
}

static void fe_broker_unpark(fe_broker_t *b, fe_job_sink_t *s)
{
    if (s->parked_until) {
        s->parked_until = 0;
        b->nparked--;
    }
}

static void fe_broker_deliver(fe_broker_t *b, const char *job_id, const json_t *ev, bool final)
{
    fe_job_sink_t *s = final ? sb_map_remove(b->jobs, job_id) : sb_map_get(b->jobs, job_id);
    if (!s)
        return; /* cancelled or unknown: drop */
    if (final)
        fe_broker_unpark(b, s);
    if (!s->heard) {
        s->heard = true; /* before the sink runs: it may cancel (free) the job */
        fe_job_sink_drop_body(s);
    }
    if (s->sink)
        s->sink(ev, final, s->arg);
    if (final)
        fe_job_sink_free(s);
}

/* A job its broker no longer holds: resubmitted once (to whichever broker
 * is best now) if nothing of it has reached the sink and its deadline is
 * ahead, else ended with ev. Returns true when it was resubmitted. */
static bool fe_broker_job_lost_avoiding(fe_broker_t *b, const char *job_id, const json_t *ev, const char *why,
                                        const fe_blink_t *avoid)
{
    fe_job_sink_t *s = sb_map_get(b->jobs, job_id);
    if (!s)
        return false;
    if (s->body && !s->heard && !s->resubmitted && s->deadline_ms > sb_now_ms()) {
        s->resubmitted = true;
        int rc = fe_broker_send_submit_avoiding(b, job_id, s, avoid);
        if (rc == 0) {
            fe_job_sink_drop_body(s);
            sb_info("job %s: %s before any event: resubmitted to %s", job_id, why, s->link->endpoint);
            return true;
        }
        if (rc == -ENOTCONN && b->nlinks > 0 && !avoid) {
            sb_info("job %s: %s before any event: waiting for a broker to resubmit it to", job_id, why);
            fe_broker_park(b, s);
            return true;
        }
        fe_job_sink_drop_body(s);
        sb_warn("job %s: %s; could not resubmit it: %s", job_id, why, strerror(-rc));
    }
    fe_broker_deliver(b, job_id, ev, true);
    return false;
}

static bool fe_broker_job_lost(fe_broker_t *b, const char *job_id, const json_t *ev, const char *why)
{
    return fe_broker_job_lost_avoiding(b, job_id, ev, why, NULL);
}

typedef struct {
    json_t *ids;
    const fe_blink_t *link; /* NULL: every job */
    const char *epoch;      /* non-NULL: only jobs stamped otherwise */
} fe_broker_select_t;

static void fe_broker_collect_id(const char *job_id, void *value, void *arg)
{
    fe_broker_select_t *sel = arg;
    const fe_job_sink_t *s = value;
    if (sel->link && s->link != sel->link)
        return;
    if (sel->epoch && !strcmp(s->epoch, sel->epoch))
        return;
    json_array_append_new(sel->ids, json_string(job_id));
}

/* The ids of the outstanding jobs (on one link, stamped with another epoch
 * than the one given): sinks may submit or cancel jobs, so the map is not
 * walked while they run. */
static json_t *fe_broker_job_ids(const fe_broker_t *b, const fe_blink_t *link, const char *epoch)
{
    fe_broker_select_t sel = {json_array(), link, epoch};
    sb_map_foreach(b->jobs, fe_broker_collect_id, &sel);
    return sel.ids;
}

/* Every job on link (NULL: every job) stamped with another epoch than the
 * one given (NULL: any) is lost: resubmitted, or ended with a 503. */
static void fe_broker_lose(fe_broker_t *b, const fe_blink_t *link, const char *epoch, const char *code,
                           const char *message, const char *why)
{
    json_t *ids = fe_broker_job_ids(b, link, epoch);
    if (json_array_size(ids) == 0) {
        json_decref(ids);
        return;
    }
    json_t *ev = sb_event_error(503, SB_ERR_OVERLOADED, code, message);
    json_object_set_new(ev, "retry_after", json_integer(1)); /* the broker is back within seconds, or another is */
    size_t i;
    json_t *id;
    json_array_foreach (ids, i, id) {
        if (why)
            (void)fe_broker_job_lost(b, json_string_value(id), ev, why);
        else
            fe_broker_deliver(b, json_string_value(id), ev, true);
    }
    json_decref(ids);
    json_decref(ev);
}

/* The broker behind a link restarted: every job submitted to the old
 * instance is lost there. */
static void fe_broker_on_epoch(fe_blink_t *l, const char *old, void *arg)
{
    fe_broker_t *b = arg;
    sb_warn("broker at %s restarted (epoch %s, was %s): %zu outstanding job(s) to resubmit or fail", l->endpoint,
            l->epoch, old, l->njobs);
    fe_broker_lose(b, l, l->epoch, "broker_restarted", "the gateway's job broker restarted; retry the request",
                   "broker restarted");
}

static void fe_broker_on_down(fe_blink_t *l, const char *why, void *arg)
{
    fe_broker_t *b = arg;
    sb_warn("broker at %s is down (%s): %zu outstanding job(s) to resubmit or fail", l->endpoint, why, l->njobs);
    fe_broker_lose(b, l, NULL, "broker_unavailable", "the gateway's job broker is unavailable, retry later",
                   "its broker went down");
}

static void fe_broker_on_stats(fe_broker_t *b, fe_blink_t *l, const sb_wire_msg_t *msg)
{
    const char *id = sb_wire_header_str(msg, "stats_id");
    fe_stats_wait_t *w = id ? sb_map_get(b->stats, id) : NULL;
    const json_t *stats = json_object_get(msg->header, "stats");
    if (!w || !json_is_object(stats))
        return;
    json_array_append_new(w->answers,
                          json_pack("{s:s, s:s, s:O}", "endpoint", l->endpoint, "epoch", l->epoch, "stats", stats));
    if (json_array_size(w->answers) >= w->asked) {
        sb_map_remove(b->stats, id);
        fe_stats_wait_end(w);
    }
}

typedef struct {
    fe_broker_t *b;
    json_t *ids;
    bool expired; /* collect the parked jobs whose wait is over, rather than all */
} fe_broker_parked_t;

static void fe_broker_collect_parked(const char *job_id, void *value, void *arg)
{
    fe_broker_parked_t *p = arg;
    const fe_job_sink_t *s = value;
    int64_t now = sb_mono_ms();
    if (s->parked_until && (!p->expired || now >= s->parked_until || s->deadline_ms <= sb_now_ms()))
        json_array_append_new(p->ids, json_string(job_id));
}

/* Sends the parked jobs to a broker that is usable again, or (expired) fails
 * those that waited long enough with a 503. */
static void fe_broker_flush_parked(fe_broker_t *b, bool expired)
{
    fe_broker_parked_t p = {b, json_array(), expired};
    sb_map_foreach(b->jobs, fe_broker_collect_parked, &p);
    json_t *ev = sb_event_error(503, SB_ERR_OVERLOADED, "broker_unavailable",
                                "the gateway's job broker is unavailable, retry later");
    json_object_set_new(ev, "retry_after", json_integer(1));
    size_t i;
    json_t *id;
    json_array_foreach (p.ids, i, id) {
        const char *job_id = json_string_value(id);
        fe_job_sink_t *s = sb_map_get(b->jobs, job_id);
        if (!s || !s->parked_until)
            continue; /* a sink's doing meanwhile */
        if (!expired && s->deadline_ms > sb_now_ms() && fe_broker_send_submit(b, job_id, s) == 0) {
            fe_broker_unpark(b, s);
            if (s->resubmitted)
                fe_job_sink_drop_body(s);
            sb_debug("job %s: sent to %s after waiting for a broker", job_id, s->link->endpoint);
            continue;
        }
        if (expired)
            fe_broker_deliver(b, job_id, ev, true);
    }
    json_decref(ev);
    json_decref(p.ids);
}

static void fe_broker_on_msg(fe_blink_t *l, const sb_wire_msg_t *msg, void *arg)
{
    fe_broker_t *b = arg;
    if (b->nparked && fe_blink_usable(l))
        fe_broker_flush_parked(b, false);
    if (msg->cmd == SB_CMD_STATS) {
        fe_broker_on_stats(b, l, msg);
        return;
    }
    if (msg->cmd == SB_CMD_ACCEPTED) {
        const char *id = sb_wire_header_str(msg, "job_id");
        fe_job_sink_t *s = id ? sb_map_get(b->jobs, id) : NULL;
        if (s && s->link == l && s->accepted) {
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
    fe_job_sink_t *s = sb_map_get(b->jobs, job_id);
    if (!s || s->link != l)
        return; /* cancelled, or resubmitted to another broker since */
    const char *refused = sb_wire_header_str(msg, "refused_epoch");
    /* A SUBMIT that reached a broker other than the one it was stamped
     * for. Usually it was resubmitted already, on seeing the new epoch. */
    if (refused && strcmp(s->epoch, refused) != 0)
        return;
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
        else if (final && sb_event_type_of(ev) == SB_EV_ERROR && code && !strcmp(code, "no_workers") && b->nlinks > 1)
            /* That broker has no worker for the model (its workers are
             * still joining it, or left it): another may. */
            (void)fe_broker_job_lost_avoiding(b, job_id, ev, "its broker has no worker for the model", l);
        else
            fe_broker_deliver(b, job_id, ev, final);
        if (final)
            break;
    }
    json_decref(evs);
}

static const fe_blink_ops_t fe_broker_link_ops = {
    .on_msg = fe_broker_on_msg,
    .on_down = fe_broker_on_down,
    .on_epoch = fe_broker_on_epoch,
};

static void fe_broker_close_left(fe_broker_t *b);

static void fe_broker_on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_broker_t *b = arg;
    for (size_t i = 0; i < b->nlinks; i++)
        fe_blink_beat(b->links[i], b->base);
    if (b->nparked)
        fe_broker_flush_parked(b, true);
    fe_broker_close_left(b);
}

/* Closes links that left the set and have no job left. */
static void fe_broker_close_left(fe_broker_t *b)
{
    for (size_t i = 0; i < b->nlinks;) {
        fe_blink_t *l = b->links[i];
        if (!l->leaving || l->njobs > 0) {
            i++;
            continue;
        }
        sb_info("broker at %s: left the set, no job left: closing it", l->endpoint);
        b->links[i] = b->links[--b->nlinks];
        fe_blink_destroy(&l);
    }
}

/* A broker joined the set (a name resolved to one more address): a link is
 * opened. One that left it gets no new job (a broker being stopped leaves
 * DNS first) and is closed once its jobs are done; if it dies meanwhile,
 * they are lost as any broker's. */
static void fe_broker_on_endpoint(const char *ep, bool listed, void *arg)
{
    fe_broker_t *b = arg;
    for (size_t i = 0; i < b->nlinks; i++) {
        fe_blink_t *l = b->links[i];
        if (strcmp(l->endpoint, ep) != 0)
            continue;
        sb_info("broker at %s: %s", ep,
                listed ? "listed again" : "no longer listed: no new jobs, closed once its jobs are done");
        l->leaving = !listed;
        fe_broker_close_left(b);
        return;
    }
    fe_blink_t *l = listed && b->nlinks < SB_ENDPOINTS_MAX ? fe_blink_new(b->base, ep, &fe_broker_link_ops, b) : NULL;
    if (l) {
        sb_info("broker at %s: joining the set", ep);
        b->links[b->nlinks++] = l;
    }
}

fe_broker_t *fe_broker_new(struct event_base *base, const char *endpoints)
{
    fe_broker_t *b = sb_xcalloc(1, sizeof *b);
    b->base = base;
    b->jobs = sb_map_new();
    b->stats = sb_map_new();
    char err[256];
    b->endpoints = sb_endpoints_new(base, endpoints ? endpoints : SB_BROKER_FRONTEND_ENDPOINT_DEFAULT,
                                    fe_broker_on_endpoint, b, err, sizeof err);
    if (!b->endpoints) {
        sb_error("--broker: %s", err);
        fe_broker_destroy(&b);
        return NULL;
    }
    size_t n = 0;
    const char *const *eps = sb_endpoints_list(b->endpoints, &n);
    for (size_t i = 0; i < n; i++)
        fe_broker_on_endpoint(eps[i], true, b);
    b->heartbeat = event_new(base, -1, EV_PERSIST, fe_broker_on_heartbeat, b);
    struct timeval tv = {0, SB_HEARTBEAT_INTERVAL_MS * 1000};
    event_add(b->heartbeat, &tv);
    return b;
}

static int fe_stats_wait_drop(const char *key, void *value, void *arg)
{
    (void)key;
    (void)arg;
    fe_stats_wait_end(value);
    return 1;
}

void fe_broker_destroy(fe_broker_t **pb)
{
    if (!pb || !*pb)
        return;
    fe_broker_t *b = *pb;
    fe_broker_lose(b, NULL, NULL, "shutting_down", "the gateway is shutting down", NULL);
    sb_map_remove_if(b->stats, fe_stats_wait_drop, NULL);
    sb_map_destroy(&b->stats);
    if (b->heartbeat)
        event_free(b->heartbeat);
    sb_endpoints_destroy(&b->endpoints);
    for (size_t i = 0; i < b->nlinks; i++)
        fe_blink_destroy(&b->links[i]);
    sb_map_destroy(&b->jobs);
    free(b);
    *pb = NULL;
}

static int fe_broker_submit_sink(fe_broker_t *b, const char *job_id, const char *model, const char *client,
                                 int64_t deadline_ms, const json_t *job, fe_job_sink_t *s);

/* Whether a new job may wait for a broker rather than be refused: only
 * while some broker was heard from within the liveness period (one is
 * restarting, or reconnecting), not when all are long gone. */
static bool fe_broker_may_wait(const fe_broker_t *b)
{
    int64_t now = sb_mono_ms();
    for (size_t i = 0; i < b->nlinks; i++)
        if (now - b->links[i]->last_heard_ms <= (int64_t)SB_HEARTBEAT_INTERVAL_MS * SB_HEARTBEAT_LIVENESS)
            return true;
    return false;
}

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
    if (rc == -ENOTCONN && b->nlinks > 0 && fe_broker_may_wait(b)) {
        fe_broker_park(b, s); /* every broker is restarting or not yet known: wait a little for one */
    } else if (rc < 0) {
        fe_job_sink_free(s);
        return rc;
    }
    fe_job_sink_free(sb_map_put(b->jobs, job_id, s));
    return 0;
}

static void fe_broker_send_cancel(fe_blink_t *l, const char *job_id)
{
    json_t *hdr = json_pack("{s:s}", "job_id", job_id);
    if (fe_blink_send(l, SB_CMD_CANCEL, hdr, NULL, 0) < 0)
        sb_debug("cancel for %s not sent to %s", job_id, l->endpoint);
    json_decref(hdr);
}

void fe_broker_cancel(fe_broker_t *b, const char *job_id)
{
    fe_job_sink_t *s = sb_map_remove(b->jobs, job_id);
    if (!s)
        return;
    fe_broker_unpark(b, s);
    if (s->link)
        fe_broker_send_cancel(s->link, job_id);
    fe_job_sink_free(s);
}

void fe_broker_cancel_any(fe_broker_t *b, const char *job_id)
{
    /* Which broker holds it is not known here (another frontend submitted
     * it): every broker is told; those that do not hold it ignore it. A
     * sink of this frontend's for it stays: it hears the job's final event
     * (the cancel's) as any other, and frees what it holds then. */
    for (size_t i = 0; i < b->nlinks; i++)
        fe_broker_send_cancel(b->links[i], job_id);
}

size_t fe_broker_outstanding(const fe_broker_t *b)
{
    return sb_map_size(b->jobs);
}

bool fe_broker_connected(const fe_broker_t *b)
{
    for (size_t i = 0; i < b->nlinks; i++)
        if (fe_blink_usable(b->links[i]))
            return true;
    return false;
}

size_t fe_broker_count(const fe_broker_t *b, size_t *usable)
{
    size_t n = 0;
    for (size_t i = 0; i < b->nlinks; i++)
        n += fe_blink_usable(b->links[i]);
    if (usable)
        *usable = n;
    return b->nlinks;
}

static void fe_stats_on_timeout(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_stats_wait_t *w = arg;
    sb_map_remove(w->b->stats, w->id);
    fe_stats_wait_end(w);
}

void fe_broker_stats(fe_broker_t *b, int timeout_ms, fe_broker_stats_fn fn, void *arg)
{
    fe_stats_wait_t *w = sb_xcalloc(1, sizeof *w);
    w->b = b;
    w->fn = fn;
    w->arg = arg;
    w->answers = json_array();
    sb_id_new(w->id, sizeof w->id, "st_", 8);
    w->timer = evtimer_new(b->base, fe_stats_on_timeout, w);
    struct timeval tv = {timeout_ms / 1000, (timeout_ms % 1000) * 1000};
    evtimer_add(w->timer, &tv);
    sb_map_put(b->stats, w->id, w);
    json_t *hdr = json_pack("{s:s}", "stats_id", w->id);
    for (size_t i = 0; i < b->nlinks; i++) {
        if (fe_blink_usable(b->links[i]) && fe_blink_send(b->links[i], SB_CMD_STATS, hdr, NULL, 0) == 0)
            w->asked++;
    }
    json_decref(hdr);
    if (w->asked == 0) { /* nobody to ask: the answer is "none", on the next turn of the loop */
        struct timeval now = {0, 0};
        evtimer_add(w->timer, &now);
    }
}
