/*
 * worker: the broker session (READY, heartbeats, liveness, reconnects,
 * drain) and the safe-point reap of finished jobs. A job's own life is
 * wjob.c's, an upstream call's is wcall.c's; their shared types are in
 * worker_internal.h.
 *
 * Broker restarts (sb_protocol.h): the broker's messages carry its epoch.
 * A new epoch means the jobs running here belong to a broker that is gone:
 * they are abandoned. READY is sent once per session and then only for a
 * RECONNECT that answers a message sent since the latest READY (the seq in
 * our headers, echoed back), so the RECONNECTs answering a burst of messages
 * buffered while the broker was down make one READY, not one each.
 *
 * A job that ends (wjob.c) is moved onto the reap list and the reap event is
 * activated; sb_worker_on_reap() frees it after the callback that ended it
 * has returned, and is where a draining worker reaches STOPPED.
 */
#include "worker.h"

#include <czmq.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sb_alloc.h"
#include "sb_db.h"
#include "sb_endpoints.h"
#include "sb_log.h"
#include "sb_ssrf.h"
#include "sb_time.h"
#include "wbg.h"
#include "worker_internal.h"
#include "wsql.h"

#define SB_WORKER_DEFAULT_CREDITS 64
#define SB_WORKER_DEFAULT_CONNECT_TIMEOUT_MS 5000
#define SB_WORKER_DEFAULT_DRAIN_MS 30000
#define SB_WORKER_DEFAULT_STREAM_IDLE_MS 60000
/* How long queued events may take to leave at destroy. */
#define SB_WORKER_CLOSE_LINGER_MS 1000
#define SB_WORKER_DEFAULT_RETRY_MAX 2
#define SB_WORKER_DEFAULT_RETRY_BASE_MS 250
#define SB_WORKER_DEFAULT_RETRY_CAP_MS 4000
#define SB_WORKER_DEFAULT_RETRY_BUDGET 0.2
#define SB_WORKER_DEFAULT_TOOL_TIMEOUT_MS 30000
#define SB_WORKER_DEFAULT_TOOL_MAX_ITERATIONS 16
#define SB_WORKER_DEFAULT_TOOL_OUTPUT_MAX 65536

/*
 * Jobs, as the session sees them: all at once, or a link's.
 */

static int sb_worker_abandon_one(const char *key, void *value, void *arg)
{
    sb_wjob_t *j = value;
    if (arg && j->link != arg)
        return 0;
    sb_wjob_end(j, false, NULL);
    return 1;
}

static int sb_worker_fail_one(const char *key, void *value, void *arg)
{
    sb_wjob_t *j = value;
    j->interrupted = true;
    sb_wjob_end(j, true, sb_event_error(503, SB_ERR_OVERLOADED, NULL, "worker is shutting down"));
    return 1;
}

/* Drops the running jobs of one link (NULL: every job) without events: its
 * broker has forgotten us (or is gone), so nothing could be delivered. */
static void sb_worker_abandon_all(sb_worker_t *w, sb_wlink_t *l)
{
    size_t n = l ? (size_t)l->njobs : sb_map_size(w->jobs);
    if (n > 0)
        sb_warn("abandoning %zu in-flight job(s)%s%s", n, l ? " of broker " : "", l ? l->endpoint : "");
    sb_map_remove_if(w->jobs, sb_worker_abandon_one, l);
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
static void sb_worker_on_reconnect(sb_wlink_t *l, const sb_wire_msg_t *msg, const char *epoch)
{
    sb_worker_t *w = l->w;
    long long seq = sb_wire_header_int(msg, "seq", -1);
    if (seq >= 0 && seq < l->ready_seq) {
        sb_debug("RECONNECT for a message sent before READY %lld: already answered", l->ready_seq);
        return;
    }
    sb_warn("broker%s%s at %s asked us to reconnect", epoch ? " " : "", epoch ? epoch : "", l->endpoint);
    sb_worker_abandon_all(w, l);
    if (epoch)
        snprintf(l->epoch, sizeof l->epoch, "%s", epoch);
    if (w->state == SB_WORKER_ACTIVE) /* a draining worker wants no new jobs */
        sb_wlink_send_ready(l);
}

static void sb_worker_on_msg(sb_wlink_t *l, const sb_wire_msg_t *msg)
{
    sb_worker_t *w = l->w;
    const char *epoch = sb_wire_header_str(msg, "epoch");
    if (epoch && (!*epoch || strlen(epoch) > SB_EPOCH_MAX))
        epoch = NULL;
    if (msg->cmd == SB_CMD_RECONNECT) {
        sb_worker_on_reconnect(l, msg, epoch);
        return;
    }
    if (epoch && strcmp(epoch, l->epoch) != 0) {
        /* A broker that knows us (it sends more than RECONNECT) but is not
         * the one our jobs came from: those are lost with their broker. */
        if (l->epoch[0]) {
            sb_warn("broker at %s restarted (epoch %s, was %s)", l->endpoint, epoch, l->epoch);
            sb_worker_abandon_all(w, l);
        }
        snprintf(l->epoch, sizeof l->epoch, "%s", epoch);
    }
    switch (msg->cmd) {
    case SB_CMD_JOB:
        l->got++;
        sb_wjob_receive(w, l, msg);
        break;
    case SB_CMD_CANCEL:
        sb_wjob_cancel(w, l, msg);
        break;
    case SB_CMD_HEARTBEAT:
        break;
    default:
        sb_warn("dropped a message with unexpected command 0x%02x", msg->cmd);
        break;
    }
}

/* The link's connection closed: the broker, if it is still there, sees our
 * next connection as a new peer and cannot deliver what we send for the
 * jobs it gave this one. They are dropped now (the broker fails them as its
 * worker's, or has gone with them), and READY waits in the pipe for the
 * connection to come back. */
static void sb_worker_on_conn(sb_wlink_t *l, bool up)
{
    sb_worker_t *w = l->w;
    if (up) {
        sb_debug("broker at %s: connected", l->endpoint);
        return;
    }
    sb_warn("broker at %s: connection closed", l->endpoint);
    sb_worker_abandon_all(w, l);
    l->epoch[0] = '\0';
    if (w->state == SB_WORKER_ACTIVE)
        sb_wlink_send_ready(l);
}

/* Tells each broker its window: how many JOBs (since our READY to it) it may
 * have sent us in all, so that brokers sharing our credits never give us
 * more than we have free, give or take the JOBs crossing on the wire. Only
 * with several brokers (and to a broker told one before, until its next
 * READY): one alone has our whole count. */
static void sb_worker_on_credit(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_worker_t *w = arg;
    long long free_now = (long long)w->credits - (long long)sb_map_size(w->jobs);
    if (free_now < 0)
        free_now = 0;
    for (size_t i = 0; i < w->nlinks; i++) {
        sb_wlink_t *l = w->links[i];
        long long window = free_now + l->got;
        /* One broker alone has our whole count and needs no window, unless
         * it was told one (brokers left since): it keeps being told. */
        if (!l->sock || window == l->window_sent || (w->nlinks < 2 && l->window_sent < 0))
            continue;
        json_t *hdr = json_pack("{s:I, s:I}", "window", (json_int_t)window, "seq", (json_int_t)l->ready_seq);
        if (sb_wlink_send(l, SB_CMD_CREDIT, hdr, NULL, 0) == 0)
            l->window_sent = window;
        json_decref(hdr);
    }
}

/* Every heartbeat interval, each link: beat, and if its broker has been
 * silent for the liveness period, start over with a fresh socket (zmq would
 * reconnect the old one, but a restarted broker would not know our routing
 * id). */
static void sb_worker_beat(sb_worker_t *w, sb_wlink_t *l)
{
    int64_t silent = sb_mono_ms() - l->last_heard_ms;
    if (silent >= (int64_t)w->heartbeat_ms * w->liveness) {
        sb_warn("broker silent for %lld ms: reconnecting to %s", (long long)silent, l->endpoint);
        sb_worker_abandon_all(w, l);
        if (sb_wlink_reopen(l) < 0) {
            sb_error("cannot reopen the socket to %s; retrying in %d ms", l->endpoint, w->heartbeat_ms);
            return;
        }
        if (w->state == SB_WORKER_ACTIVE)
            sb_wlink_send_ready(l);
        return;
    }
    if (!l->sock && sb_wlink_reopen(l) < 0)
        return;
    json_t *hdr = json_pack("{s:I}", "seq", (json_int_t)l->ready_seq);
    if (l->window_sent >= 0) /* the window again: it heals whatever a lost CREDIT broke */
        json_object_set_new(hdr, "window", json_integer(l->window_sent));
    int rc = sb_wlink_send(l, SB_CMD_HEARTBEAT, hdr, NULL, 0);
    json_decref(hdr);
    if (rc < 0 && rc != -EAGAIN)
        sb_warn("could not send HEARTBEAT to %s: %s", l->endpoint, strerror(-rc));
}

/* Closes links that left the set and have no job left. */
static void sb_worker_close_left(sb_worker_t *w)
{
    for (size_t i = 0; i < w->nlinks;) {
        sb_wlink_t *l = w->links[i];
        if (!l->leaving || l->njobs > 0) {
            i++;
            continue;
        }
        sb_info("broker at %s: left the set, no job left: closing it", l->endpoint);
        w->links[i] = w->links[--w->nlinks];
        sb_wlink_destroy(&l, 0);
    }
}

static void sb_worker_on_heartbeat(evutil_socket_t fd, short what, void *arg)
{
    sb_worker_t *w = arg;
    for (size_t i = 0; i < w->nlinks; i++)
        sb_worker_beat(w, w->links[i]);
    sb_worker_close_left(w);
}

/* A broker joined the set (a name resolved to one more address): it gets a
 * session and READY. One that left it (a broker being stopped leaves DNS
 * first) is served until it has no job of ours, then closed. */
static void sb_worker_on_endpoint(const char *ep, bool listed, void *arg)
{
    sb_worker_t *w = arg;
    for (size_t i = 0; i < w->nlinks; i++) {
        sb_wlink_t *l = w->links[i];
        if (strcmp(l->endpoint, ep) != 0)
            continue;
        sb_info("broker at %s: %s", ep, listed ? "listed again" : "no longer listed: closed once its jobs are done");
        l->leaving = !listed;
        sb_worker_close_left(w);
        return;
    }
    sb_wlink_t *l =
        listed && w->nlinks < SB_WORKER_LINKS_MAX ? sb_wlink_new(w, ep, sb_worker_on_msg, sb_worker_on_conn) : NULL;
    if (!l)
        return;
    sb_info("worker %s: serving the broker at %s, %d credits", w->name, ep, w->credits);
    w->links[w->nlinks++] = l;
    if (w->state == SB_WORKER_ACTIVE)
        sb_wlink_send_ready(l);
    sb_worker_credit_changed(w);
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

/* The worker's stamp in worker_heartbeats: the frontends' reaper fails a
 * background response whose worker has stopped stamping (wbg.h). */
static void sb_worker_on_db_beat(const PGresult *res, const char *err, void *arg)
{
    (void)res;
    sb_worker_t *w = arg;
    if (err && strcmp(err, "shutting down"))
        sb_debug("worker %s: heartbeat row not written: %.*s", w->name, (int)strcspn(err, "\n"), err);
}

static void sb_worker_on_db_beat_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_worker_t *w = arg;
    const char *params[1] = {w->name};
    sb_db_query(w->db, SB_WSQL_BG_HEARTBEAT, 1, params, sb_worker_on_db_beat, w);
}

sb_worker_t *sb_worker_new(const sb_worker_config_t *cfg, struct event_base *base)
{
    sb_worker_t *w = sb_xcalloc(1, sizeof *w);
    w->base = base;
    w->state = SB_WORKER_ACTIVE;
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
    w->tool_timeout_ms = cfg->tool_timeout_ms > 0 ? cfg->tool_timeout_ms : SB_WORKER_DEFAULT_TOOL_TIMEOUT_MS;
    w->tool_max_iterations =
        cfg->tool_max_iterations > 0 ? cfg->tool_max_iterations : SB_WORKER_DEFAULT_TOOL_MAX_ITERATIONS;
    w->tool_output_max =
        cfg->tool_output_max_bytes > 0 ? (size_t)cfg->tool_output_max_bytes : SB_WORKER_DEFAULT_TOOL_OUTPUT_MAX;
    w->guard = sb_ssrf_new();
    sb_ssrf_allow_http(w->guard, cfg->tool_allow_http);
    if (cfg->tool_allow_cidrs && sb_ssrf_allow_list(w->guard, cfg->tool_allow_cidrs) < 0) {
        sb_error("worker: --tool-allow-cidr: not a list of CIDRs");
        goto fail;
    }
    if (cfg->pg_dsn && *cfg->pg_dsn) {
        char err[256];
        int nstmts = 0;
        const sb_db_stmt_t *stmts = sb_wsql_all(&nstmts);
        w->db = sb_db_new(base, cfg->pg_dsn, cfg->db_conns > 0 ? cfg->db_conns : 2, stmts, nstmts, err, sizeof err);
        if (!w->db) {
            sb_error("worker: --database: %s", err);
            goto fail;
        }
    }
    w->sandbox_uid_base = cfg->sandbox_uid_base > 0 ? cfg->sandbox_uid_base : 0;
    w->sandbox_uid_count = cfg->sandbox_uid_count > 0 ? cfg->sandbox_uid_count : 0;
    w->on_stopped = cfg->on_stopped;
    w->arg = cfg->arg;
    w->jobs = sb_map_new();
    w->upstream = sb_upstream_new(base);
    w->heartbeat = event_new(base, -1, EV_PERSIST, sb_worker_on_heartbeat, w);
    w->drain_timer = evtimer_new(base, sb_worker_on_drain_timeout, w);
    w->reap = event_new(base, -1, 0, sb_worker_on_reap, w);
    w->credit = event_new(base, -1, 0, sb_worker_on_credit, w);
    if (!w->upstream || !w->heartbeat || !w->drain_timer || !w->reap || !w->credit)
        goto fail;
    char err[256];
    w->endpoints = sb_endpoints_new(base, cfg->endpoint ? cfg->endpoint : SB_BROKER_WORKER_ENDPOINT_DEFAULT,
                                    sb_worker_on_endpoint, w, err, sizeof err);
    if (!w->endpoints) {
        sb_error("worker: --broker: %s", err);
        goto fail;
    }
    struct timeval tv = {.tv_sec = w->heartbeat_ms / 1000, .tv_usec = (w->heartbeat_ms % 1000) * 1000};
    if (event_add(w->heartbeat, &tv) < 0)
        goto fail;
    if (w->db) {
        w->db_beat = event_new(base, -1, EV_PERSIST, sb_worker_on_db_beat_timer, w);
        struct timeval beat = {.tv_sec = SB_WBG_HEARTBEAT_MS / 1000, .tv_usec = (SB_WBG_HEARTBEAT_MS % 1000) * 1000};
        if (!w->db_beat || event_add(w->db_beat, &beat) < 0)
            goto fail;
        sb_worker_on_db_beat_timer(-1, 0, w);
    }
    size_t n = 0;
    const char *const *eps = sb_endpoints_list(w->endpoints, &n);
    for (size_t i = 0; i < n; i++) /* a session and READY per broker known now; names resolve later */
        sb_worker_on_endpoint(eps[i], true, w);
    if (n > 0 && w->nlinks == 0)
        goto fail;
    sb_info("worker %s: %zu broker(s) known, %d credits, up to %d upstream retries per call", w->name, w->nlinks,
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
        sb_worker_abandon_all(w, NULL);
    while (w->reap_list) {
        sb_wjob_t *j = w->reap_list;
        w->reap_list = j->next_reap;
        sb_wjob_free(j);
    }
    sb_endpoints_destroy(&w->endpoints);
    for (size_t i = 0; i < w->nlinks; i++)
        sb_wlink_destroy(&w->links[i], SB_WORKER_CLOSE_LINGER_MS);
    if (w->credit)
        event_free(w->credit);
    sb_upstream_destroy(&w->upstream);
    if (w->db_beat)
        event_free(w->db_beat);
    sb_db_destroy(&w->db);
    if (w->heartbeat)
        event_free(w->heartbeat);
    if (w->drain_timer)
        event_free(w->drain_timer);
    if (w->reap)
        event_free(w->reap);
    sb_map_destroy(&w->jobs);
    sb_retry_budget_destroy(&w->budget);
    sb_ssrf_destroy(&w->guard);
    json_decref(w->models);
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

bool sb_worker_broker_connected(const sb_worker_t *w)
{
    for (size_t i = 0; i < w->nlinks; i++)
        if (sb_wlink_connected(w->links[i]))
            return true;
    return false;
}

const char *sb_worker_not_ready(const sb_worker_t *w)
{
    if (sb_worker_state(w) != SB_WORKER_ACTIVE)
        return "draining";
    if (!sb_worker_broker_connected(w))
        return "broker not answering";
    if (w->db && !sb_db_available(w->db))
        return "PostgreSQL unreachable";
    return NULL;
}
