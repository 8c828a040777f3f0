/* fe_broker: job submission and event routing over ZeroMQ. */
#include "fe_broker.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_event.h"
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
};

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

static void fe_broker_deliver(fe_broker_t *b, const char *job_id, const json_t *ev, bool final)
{
    fe_job_sink_t *s = final ? sb_map_remove(b->jobs, job_id) : sb_map_get(b->jobs, job_id);
    if (!s)
        return; /* cancelled or unknown: drop */
    s->sink(ev, final, s->arg);
    if (final)
        free(s);
}

static int fe_broker_fail_one(const char *job_id, void *value, void *arg)
{
    fe_job_sink_t *s = value;
    s->sink(arg, true, s->arg);
    free(s);
    return 1;
}

/* Fails every outstanding job with the given error event. */
static void fe_broker_fail_all(fe_broker_t *b, int status, const char *code, const char *message)
{
    if (sb_map_size(b->jobs) == 0)
        return;
    json_t *ev = sb_event_error(status, SB_ERR_OVERLOADED, code, message);
    sb_map_remove_if(b->jobs, fe_broker_fail_one, ev);
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
    if (msg->cmd != SB_CMD_EVENT)
        return; /* heartbeats only refresh liveness */
    const char *job_id = sb_wire_header_str(msg, "job_id");
    if (!job_id || !msg->body) {
        sb_warn("event without job id or body dropped");
        return;
    }
    json_t *ev = NULL;
    if (sb_mpjson_decode(zframe_data(msg->body), zframe_size(msg->body), &ev) < 0 || !json_is_object(ev)) {
        json_decref(ev);
        ev = sb_event_error(502, SB_ERR_SERVER, "bad_event", "the worker sent a malformed event");
        fe_broker_deliver(b, job_id, ev, true);
        json_decref(ev);
        return;
    }
    bool final = sb_wire_header_bool(msg, "final") || sb_event_is_final(ev);
    fe_broker_deliver(b, job_id, ev, final);
    json_decref(ev);
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

void fe_broker_destroy(fe_broker_t **pb)
{
    if (!pb || !*pb)
        return;
    fe_broker_t *b = *pb;
    fe_broker_fail_all(b, 503, "shutting_down", "the gateway is shutting down");
    if (b->heartbeat)
        event_free(b->heartbeat);
    sb_zsock_ev_destroy(&b->watch);
    zsock_destroy(&b->sock);
    sb_map_destroy(&b->jobs);
    free(b->endpoint);
    free(b);
    *pb = NULL;
}

int fe_broker_submit(fe_broker_t *b, const char *job_id, const char *model, const char *client, int64_t deadline_ms,
                     const json_t *job, fe_broker_sink sink, void *arg)
{
    if (!b->sock)
        return -ENOTCONN;
    char *body;
    size_t len;
    if (sb_mpjson_encode(job, &body, &len) < 0)
        return -EINVAL;
    json_t *hdr = json_pack("{s:s, s:s, s:I}", "job_id", job_id, "model", model, "deadline_ms",
                            (json_int_t)deadline_ms);
    /* Who asked, for the broker's per-client circuit breakers (docs/protocol.md). */
    if (hdr && client && client[0] && strlen(client) <= SB_CLIENT_ID_MAX)
        json_object_set_new(hdr, "client", json_string(client));
    int rc = hdr ? sb_wire_send(b->sock, NULL, SB_CMD_SUBMIT, hdr, body, len) : -EINVAL;
    json_decref(hdr);
    free(body);
    sb_zsock_ev_poke(b->watch);
    if (rc < 0)
        return rc;
    fe_job_sink_t *s = sb_xcalloc(1, sizeof *s);
    s->sink = sink;
    s->arg = arg;
    free(sb_map_put(b->jobs, job_id, s));
    return 0;
}

void fe_broker_cancel(fe_broker_t *b, const char *job_id)
{
    fe_job_sink_t *s = sb_map_remove(b->jobs, job_id);
    if (!s)
        return;
    free(s);
    json_t *hdr = json_pack("{s:s}", "job_id", job_id);
    if (b->sock && sb_wire_send(b->sock, NULL, SB_CMD_CANCEL, hdr, NULL, 0) < 0)
        sb_debug("cancel for %s not sent", job_id);
    json_decref(hdr);
    sb_zsock_ev_poke(b->watch);
}

size_t fe_broker_outstanding(const fe_broker_t *b) { return sb_map_size(b->jobs); }
