/*
 * test_worker: the worker's broker session (worker.c): READY, RECONNECT
 * bursts and epochs, a silent broker, drain and forced stop, against the fake
 * broker and upstream of sb_worker_test.h.
 */
#include "sb_worker_test.h"

static long long ready_seq(void)
{
    return sb_wire_header_int(&(sb_wire_msg_t){.header = last_ready}, "seq", -1);
}

static void test_ready(void)
{
    int one = 1;
    CHECK(run_until(has_readies, &one, 2000));
    CHECK_INT(json_integer_value(json_object_get(last_ready, "credits")), 4);
    CHECK_STR(json_string_value(json_object_get(last_ready, "name")), "test-worker");
    json_t *models = json_object_get(last_ready, "models");
    CHECK_INT(json_array_size(models), 2);
    CHECK_STR(json_string_value(json_array_get(models, 0)), "m1");
    CHECK_STR(json_string_value(json_array_get(models, 1)), "m2");
}

/* A restarted broker answers each message buffered while it was down with
 * RECONNECT: the worker registers once (the RECONNECTs echoing a seq older
 * than its latest READY are ignored), and its heartbeats carry that seq. */
static void test_reconnect_burst(void)
{
    long long seq = ready_seq();
    CHECK(seq >= 1);
    int before = readies;
    for (int i = 0; i < 10; i++)
        broker_send(SB_CMD_RECONNECT, json_pack("{s:s, s:I}", "epoch", "e1", "seq", (json_int_t)seq), NULL);
    int want = before + 1;
    CHECK(run_until(has_readies, &want, 2000));
    run_for(300);
    CHECK_INT(readies, before + 1);
    CHECK_INT(ready_seq(), seq + 1);
    CHECK_INT(last_hb_seq, seq + 1);
    /* One answering a message sent since that READY is real: READY again. */
    broker_send(SB_CMD_RECONNECT, json_pack("{s:s, s:I}", "epoch", "e1", "seq", (json_int_t)seq + 1), NULL);
    want = before + 2;
    CHECK(run_until(has_readies, &want, 2000));
    run_for(100);
    CHECK_INT(readies, before + 2);
    CHECK_INT(ready_seq(), seq + 2);
    /* One without a seq (nothing to match) is taken as real. */
    broker_send(SB_CMD_RECONNECT, NULL, NULL);
    want = before + 3;
    CHECK(run_until(has_readies, &want, 2000));
}

/* A message from a broker with another epoch than the one our jobs came
 * from: those jobs are gone with their broker, so they are abandoned (no
 * events) rather than run to the end for nobody. */
static void test_epoch_change(sb_worker_t *w)
{
    broker_send(SB_CMD_HEARTBEAT, json_pack("{s:s}", "epoch", "e1"), NULL);
    send_job("job_old_epoch", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    int want = srv_n + 1;
    CHECK(run_until(has_requests, &want, 3000));
    CHECK_INT(sb_worker_inflight(w), 1);
    int before = readies;
    broker_send(SB_CMD_HEARTBEAT, json_pack("{s:s}", "epoch", "e2"), NULL);
    run_for(600); /* the upstream would have answered by now */
    CHECK_INT(sb_worker_inflight(w), 0);
    CHECK_INT(count_events("job_old_epoch"), 0);
    CHECK_INT(readies, before); /* that broker knows us: no READY needed */
    /* Jobs of the new broker run. */
    send_job("job_new_epoch", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_new_epoch", 3000));
    CHECK(final_type("job_new_epoch") == SB_EV_COMPLETED);
}

static void test_reconnect(void)
{
    int want = readies + 1;
    broker_send(SB_CMD_RECONNECT, NULL, NULL);
    CHECK(run_until(has_readies, &want, 2000));

    /* A broker that goes silent: the worker drops its socket and comes back
     * with READY on a new connection (a new routing id). */
    zframe_t *old = zframe_dup(worker_id);
    want = readies + 1;
    broker_silent = true;
    CHECK(run_until(has_readies, &want, 3000));
    broker_silent = false;
    CHECK(!zframe_eq(old, worker_id));
    zframe_destroy(&old);
    /* And it works on the new connection. */
    send_job("job_after", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_after", 3000));
    CHECK(final_type("job_after") == SB_EV_COMPLETED);
}

static void test_drain(sb_worker_t *w)
{
    send_job("job_drain", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    int want = srv_n + 1;
    CHECK(run_until(has_requests, &want, 3000));
    sb_worker_stop(w);
    CHECK(sb_worker_state(w) == SB_WORKER_DRAINING);
    send_job("job_refused", make_job("openai-chat", "fast", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_refused", 3000));
    check_final_error("job_refused", 503, "overloaded", "worker is shutting down");
    CHECK_STR(final_upstream("job_refused"), "");
    CHECK(!stopped);
    CHECK(run_until(flag_set, &stopped, 3000));
    CHECK(run_until(has_final, "job_drain", 3000));
    CHECK(final_type("job_drain") == SB_EV_COMPLETED);
    CHECK(sb_worker_state(w) == SB_WORKER_STOPPED);
}

/* A second stop while draining fails what is left with 503. */
static void test_forced_stop(sb_worker_t *w)
{
    send_job("job_forced", make_job("openai-chat", "hang", srv_port, NULL), 0);
    int want = srv_n + 1;
    CHECK(run_until(has_requests, &want, 3000));
    stopped = false;
    sb_worker_stop(w);
    run_for(20);
    CHECK(!stopped);
    sb_worker_stop(w);
    CHECK(run_until(flag_set, &stopped, 3000));
    CHECK(run_until(has_final, "job_forced", 3000));
    check_final_error("job_forced", 503, "overloaded", "worker is shutting down");
    CHECK_STR(final_upstream("job_forced"), "");
    CHECK(run_until(rec_closed, &srv_recs[want - 1], 3000));
}

/* A second fake broker, for a worker serving two: what it received. */
static zsock_t *b2;
static sb_zsock_ev_t *b2_watch;
static zframe_t *b2_worker;
static int b2_readies, b2_finals;
static long long b2_window = -1, b2_hb_window = -1;

static void b2_on_msg(sb_wire_msg_t **pmsg, void *arg)
{
    sb_wire_msg_t *m = *pmsg;
    if (m->cmd == SB_CMD_READY) {
        b2_readies++;
        zframe_destroy(&b2_worker);
        b2_worker = zframe_dup(m->routing_id);
    } else if (m->cmd == SB_CMD_CREDIT) {
        b2_window = sb_wire_header_int(m, "window", -1);
    } else if (m->cmd == SB_CMD_HEARTBEAT) {
        b2_hb_window = sb_wire_header_int(m, "window", -1);
        CHECK_INT(sb_wire_send(b2, m->routing_id, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
        sb_zsock_ev_poke(b2_watch);
    } else if (m->cmd == SB_CMD_EVENT && sb_wire_header_bool(m, "final")) {
        b2_finals++;
    }
}

static bool b2_window_is(void *want)
{
    return b2_window == *(long long *)want;
}

static bool b2_has_finals(void *want)
{
    return b2_finals >= *(int *)want;
}

/* A worker serving two brokers (docs/protocol.md, "Several brokers"): READY
 * to each, and each told its window, free credits plus the JOBs it sent,
 * as jobs start and end; heartbeats repeat it. A job resubmitted through the
 * other broker replaces the first copy, whose events could reach nobody. */
static void test_several_brokers(void)
{
    b2 = zsock_new(ZMQ_ROUTER);
    zsock_set_router_mandatory(b2, 1);
    CHECK(zsock_bind(b2, "inproc://test-worker-broker2") == 0);
    b2_watch = sb_zsock_ev_new(base, b2, true, b2_on_msg, NULL);
    sb_worker_config_t cfg = sb_wt_cfg;
    cfg.endpoint = "inproc://test-worker-broker, inproc://test-worker-broker2";
    int want = readies + 1;
    sb_worker_t *w = sb_worker_new(&cfg, base);
    CHECK(w != NULL);
    CHECK(run_until(has_readies, &want, 2000));
    long long window = 4; /* 4 credits, none used, nothing sent */
    CHECK(run_until(b2_window_is, &window, 2000));
    CHECK_INT(b2_readies, 1);
    /* A job from the first broker: the second's window shrinks by one. */
    send_job("job_b1", make_job("openai-chat", "slow300", srv_port, NULL), 0);
    window = 3;
    CHECK(run_until(b2_window_is, &window, 2000));
    run_for(120);
    CHECK_INT(b2_hb_window, 3);
    CHECK_INT(last_window, 4); /* the first broker's: 3 free + the 1 it sent */
    /* The same job resubmitted through the second broker: the first copy
     * goes, the new one runs and answers there. */
    json_t *hdr = json_pack("{s:s, s:s, s:I}", "job_id", "job_b1", "model", "public-model", "deadline_ms", 0);
    char *buf = NULL;
    size_t len = 0;
    json_t *job = make_job("openai-chat", "fast", srv_port, NULL);
    CHECK_INT(sb_mpjson_encode(job, &buf, &len), 0);
    json_decref(job);
    CHECK_INT(sb_wire_send(b2, b2_worker, SB_CMD_JOB, hdr, buf, len), 0);
    sb_zsock_ev_poke(b2_watch);
    json_decref(hdr);
    free(buf);
    int one = 1;
    CHECK(run_until(b2_has_finals, &one, 3000));
    run_for(400); /* the first copy would have answered by now */
    CHECK_INT(count_events("job_b1"), 0);
    CHECK_INT(sb_worker_inflight(w), 0);
    window = 5; /* all 4 free again, plus the 1 it sent */
    CHECK(run_until(b2_window_is, &window, 2000));
    sb_worker_destroy(&w);
    zframe_destroy(&b2_worker);
    sb_zsock_ev_destroy(&b2_watch);
    zsock_destroy(&b2);
}

int main(void)
{
    sb_worker_t *w = sb_wt_start();
    test_ready();
    test_reconnect_burst();
    test_epoch_change(w);
    test_reconnect();
    test_drain(w);
    sb_worker_destroy(&w);
    CHECK(w == NULL);

    /* A second worker for the forced stop. */
    int want = readies + 1;
    w = sb_worker_new(&sb_wt_cfg, base);
    CHECK(run_until(has_readies, &want, 2000));
    test_forced_stop(w);
    sb_worker_destroy(&w);

    test_several_brokers();

    /* A bad endpoint fails cleanly. */
    sb_worker_config_t bad = {.endpoint = "nonsense://x"};
    CHECK(sb_worker_new(&bad, base) == NULL);
    return sb_wt_finish(&w, "worker");
}
