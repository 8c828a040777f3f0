/*
 * Unit tests for fe_broker (the frontend's connection to the broker): the
 * broker epoch and what happens to jobs lost before their first event. A fake
 * broker (a ROUTER on inproc, on the same libevent loop) answers heartbeats
 * with the epoch it is told to claim and records every SUBMIT; the sink
 * records what the request would have seen.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "fe_broker.h"
#include "sb_event.h"
#include "sb_log.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_test.h"
#include "sb_time.h"
#include "sb_wire.h"
#include "sb_zsock_ev.h"

#define MAX_SUBMITS 64

static struct event_base *base;
static zsock_t *router;
static sb_zsock_ev_t *router_watch;
static zframe_t *fe_id;        /* the frontend's routing id */
static const char *claim = ""; /* the epoch the fake broker puts in its heartbeats ("": none) */

typedef struct {
    char job_id[64];
    char epoch[SB_EPOCH_MAX + 1]; /* "" when the SUBMIT named none */
} submit_t;
static submit_t submits[MAX_SUBMITS];
static int n_submits;

static void router_on_msg(sb_wire_msg_t **pm, void *arg)
{
    sb_wire_msg_t *m = *pm;
    zframe_destroy(&fe_id);
    fe_id = zframe_dup(m->routing_id);
    if (m->cmd == SB_CMD_HEARTBEAT) {
        json_t *h = claim[0] ? json_pack("{s:s}", "epoch", claim) : NULL;
        CHECK_INT(sb_wire_send(router, m->routing_id, SB_CMD_HEARTBEAT, h, NULL, 0), 0);
        json_decref(h);
        sb_zsock_ev_poke(router_watch);
    } else if (m->cmd == SB_CMD_SUBMIT && n_submits < MAX_SUBMITS) {
        submit_t *s = &submits[n_submits++];
        snprintf(s->job_id, sizeof s->job_id, "%s", sb_wire_header_str(m, "job_id") ?: "");
        snprintf(s->epoch, sizeof s->epoch, "%s", sb_wire_header_str(m, "epoch") ?: "");
        CHECK(m->body && zframe_size(m->body) > 0);
    }
}

static int submits_of(const char *job_id)
{
    int n = 0;
    for (int i = 0; i < n_submits; i++)
        n += !strcmp(submits[i].job_id, job_id);
    return n;
}

static const char *last_submit_epoch(const char *job_id)
{
    const char *e = NULL;
    for (int i = 0; i < n_submits; i++)
        if (!strcmp(submits[i].job_id, job_id))
            e = submits[i].epoch;
    return e;
}

/* What a request saw. */
typedef struct {
    int events, finals;
    int status; /* of the final error, 0 if none */
    char code[64];
    int retry_after;
} seen_t;

static void sink(const json_t *ev, bool final, void *arg)
{
    seen_t *s = arg;
    s->events++;
    if (!final)
        return;
    s->finals++;
    if (sb_event_type_of(ev) == SB_EV_ERROR) {
        s->status = (int)json_integer_value(json_object_get(ev, "status"));
        snprintf(s->code, sizeof s->code, "%s", json_string_value(json_object_get(ev, "code")) ?: "");
        s->retry_after = (int)json_integer_value(json_object_get(ev, "retry_after"));
    }
}

static void run_for(int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (sb_mono_ms() < end) {
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        zclock_sleep(2);
    }
}

/* Runs until the fake broker has n SUBMITs or 2 s pass. */
static void wait_submits(int n)
{
    int64_t end = sb_mono_ms() + 2000;
    while (n_submits < n && sb_mono_ms() < end)
        run_for(5);
}

/* The broker sends an EVENT for job_id: a final error (status, code), or a
 * non-final text delta when status is 0; refused_epoch (or NULL) as the
 * broker names a SUBMIT it refused for naming another epoch. */
static void broker_event(const char *job_id, int status, const char *code, const char *refused_epoch)
{
    json_t *ev = status ? sb_event_error(status, status == 502 ? SB_ERR_UPSTREAM : SB_ERR_OVERLOADED, code, "x")
                        : json_pack("{s:s, s:i, s:i, s:s}", "type", "text_delta", "item_index", 0, "content_index", 0,
                                    "delta", "hi");
    json_t *h = json_pack("{s:s, s:b}", "job_id", job_id, "final", status != 0);
    if (claim[0])
        json_object_set_new(h, "epoch", json_string(claim));
    if (refused_epoch)
        json_object_set_new(h, "refused_epoch", json_string(refused_epoch));
    char *buf = NULL;
    size_t len = 0;
    CHECK_INT(sb_mpjson_encode(ev, &buf, &len), 0);
    CHECK(fe_id != NULL);
    CHECK_INT(sb_wire_send(router, fe_id, SB_CMD_EVENT, h, buf, len), 0);
    sb_zsock_ev_poke(router_watch);
    free(buf);
    json_decref(h);
    json_decref(ev);
    run_for(50);
}

/* The broker "restarts": its next heartbeat claims a new epoch. */
static void broker_restart(const char *epoch)
{
    claim = epoch;
    run_for(SB_HEARTBEAT_INTERVAL_MS + 200);
}

static int submit(fe_broker_t *b, const char *id, int64_t deadline_ms, seen_t *seen)
{
    json_t *job = json_pack("{s:s, s:{s:s}}", "request_id", id, "request", "model", "m1");
    int rc = fe_broker_submit(b, id, "m1", "key:1", deadline_ms, job, sink, seen);
    json_decref(job);
    return rc;
}

int main(void)
{
    sb_log_init("test_fe_broker");
    zsys_handler_set(NULL);
    base = event_base_new();
    router = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(router, 1);
    CHECK_INT(zsock_bind(router, "inproc://test-fe-broker"), 0);
    router_watch = sb_zsock_ev_new(base, router, true, router_on_msg, NULL);
    claim = "e1";
    fe_broker_t *b = fe_broker_new(base, "inproc://test-fe-broker");
    CHECK(b != NULL);
    run_for(100); /* the hello heartbeat and its answer: epoch e1 learnt */

    /* SUBMITs name the epoch known. */
    seen_t s1 = {0}, s2 = {0}, s3 = {0};
    int64_t far = sb_now_ms() + 60000;
    CHECK_INT(submit(b, "j1", far, &s1), 0);
    CHECK_INT(submit(b, "j2", far, &s2), 0);
    CHECK_INT(submit(b, "j3", far, &s3), 0);
    wait_submits(3);
    CHECK_STR(last_submit_epoch("j1"), "e1");
    broker_event("j2", 0, NULL, NULL); /* j2 has shown the client something */
    CHECK_INT(s2.events, 1);

    /* A restart (new epoch): j1 and j3, which had no event, go again to the
     * new broker, unseen by their requests; j2 fails at once with a
     * retryable 503. */
    broker_restart("e2");
    CHECK_INT(submits_of("j1"), 2);
    CHECK_INT(submits_of("j3"), 2);
    CHECK_STR(last_submit_epoch("j1"), "e2");
    CHECK_INT(submits_of("j2"), 1);
    CHECK_INT(s1.events, 0);
    CHECK_INT(s2.finals, 1);
    CHECK_INT(s2.status, 503);
    CHECK_STR(s2.code, "broker_restarted");
    CHECK_INT(s2.retry_after, 1);
    CHECK_INT(fe_broker_outstanding(b), 2);

    /* The new broker's refusal of a SUBMIT stamped e1 (sent before we knew)
     * is about a submission already superseded: dropped. */
    broker_event("j1", 503, "broker_restarted", "e1");
    CHECK_INT(s1.events, 0);
    CHECK_INT(submits_of("j1"), 2);
    /* j1 completes normally on the new broker. */
    broker_event("j1", 0, NULL, NULL);
    CHECK_INT(s1.events, 1);

    /* Resubmitted once already: a second restart fails j3. */
    broker_restart("e3");
    CHECK_INT(submits_of("j3"), 2);
    CHECK_INT(s3.finals, 1);
    CHECK_STR(s3.code, "broker_restarted");
    CHECK_INT(s1.finals, 1); /* j1 had an event: failed too */

    /* Worker lost before any event: resubmitted once (stamped with the
     * current epoch); lost again: the 502 reaches the request. */
    seen_t s4 = {0};
    CHECK_INT(submit(b, "j4", far, &s4), 0);
    wait_submits(n_submits + 1);
    broker_event("j4", 502, "worker_lost", NULL);
    CHECK_INT(submits_of("j4"), 2);
    CHECK_STR(last_submit_epoch("j4"), "e3");
    CHECK_INT(s4.events, 0);
    broker_event("j4", 502, "worker_lost", NULL);
    CHECK_INT(submits_of("j4"), 2);
    CHECK_INT(s4.finals, 1);
    CHECK_INT(s4.status, 502);
    CHECK_STR(s4.code, "worker_lost");

    /* Worker lost after an event: not resubmitted. */
    seen_t s5 = {0};
    CHECK_INT(submit(b, "j5", far, &s5), 0);
    wait_submits(n_submits + 1);
    broker_event("j5", 0, NULL, NULL);
    broker_event("j5", 502, "worker_lost", NULL);
    CHECK_INT(submits_of("j5"), 1);
    CHECK_INT(s5.finals, 1);
    CHECK_STR(s5.code, "worker_lost");

    /* Past its deadline: not resubmitted. */
    seen_t s6 = {0};
    CHECK_INT(submit(b, "j6", sb_now_ms() + 30, &s6), 0);
    wait_submits(n_submits + 1);
    run_for(60);
    broker_event("j6", 502, "worker_lost", NULL);
    CHECK_INT(submits_of("j6"), 1);
    CHECK_STR(s6.code, "worker_lost");

    /* Other errors are delivered as they are. */
    seen_t s7 = {0};
    CHECK_INT(submit(b, "j7", far, &s7), 0);
    wait_submits(n_submits + 1);
    broker_event("j7", 503, "no_workers", NULL);
    CHECK_INT(submits_of("j7"), 1);
    CHECK_STR(s7.code, "no_workers");

    /* A cancelled job is forgotten: a restart does not resubmit it. */
    seen_t s8 = {0};
    CHECK_INT(submit(b, "j8", far, &s8), 0);
    wait_submits(n_submits + 1);
    fe_broker_cancel(b, "j8");
    broker_restart("e4");
    CHECK_INT(submits_of("j8"), 1);
    CHECK_INT(s8.events, 0);
    CHECK_INT(fe_broker_outstanding(b), 0);

    fe_broker_destroy(&b);
    zframe_destroy(&fe_id);
    sb_zsock_ev_destroy(&router_watch);
    zsock_destroy(&router);
    event_base_free(base);
    return sb_test_finish("fe_broker");
}
