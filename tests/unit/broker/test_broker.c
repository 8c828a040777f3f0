/*
 * Unit tests for the broker: real ZeroMQ sockets over inproc, the broker
 * driven in-process with sb_broker_run_once (no threads), and fake frontends
 * and workers as DEALERs speaking sb_wire. Each case gets a fresh broker on
 * fresh endpoints.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "sb_broker.h"
#include "sb_event.h"
#include "sb_log.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_test.h"
#include "sb_time.h"
#include "sb_wire.h"

static sb_broker_t *B;
static char FE[128], WK[128];
static bool use_tcp;         /* loopback tcp with ephemeral ports instead of inproc */
static int startup_grace_ms; /* for the next setup; most tests want none (a fresh broker answers at once) */

/* A fresh broker on fresh endpoints. breaker_failures < 0 and
 * breaker_cooldown_ms <= 0 keep the defaults. */
static void setup_cfg(size_t queue_max, int breaker_failures, int breaker_cooldown_ms)
{
    static int n;
    n++;
    if (use_tcp) {
        snprintf(FE, sizeof FE, "tcp://127.0.0.1:*");
        snprintf(WK, sizeof WK, "tcp://127.0.0.1:*");
    } else {
        snprintf(FE, sizeof FE, "inproc://broker-test-fe-%d", n);
        snprintf(WK, sizeof WK, "inproc://broker-test-wk-%d", n);
    }
    sb_broker_config_t cfg;
    sb_broker_config_init(&cfg);
    cfg.frontend_endpoint = FE;
    cfg.worker_endpoint = WK;
    if (queue_max)
        cfg.queue_max = queue_max;
    if (breaker_failures >= 0)
        cfg.breaker_failures = breaker_failures;
    if (breaker_cooldown_ms > 0)
        cfg.breaker_cooldown_ms = breaker_cooldown_ms;
    cfg.startup_grace_ms = startup_grace_ms;
    B = sb_broker_new(&cfg);
    CHECK(B != NULL);
    if (B) {
        snprintf(FE, sizeof FE, "%s", sb_broker_frontend_endpoint(B));
        snprintf(WK, sizeof WK, "%s", sb_broker_worker_endpoint(B));
    }
}

static void setup(size_t queue_max)
{
    setup_cfg(queue_max, -1, 0);
}

static void teardown(void)
{
    sb_broker_destroy(&B);
}

static zsock_t *peer(const char *endpoint)
{
    zsock_t *s = zsock_new(ZMQ_DEALER);
    CHECK(s != NULL);
    zsock_set_linger(s, 0);
    CHECK_INT(zsock_connect(s, "%s", endpoint), 0);
    return s;
}

static void step(int ms)
{
    int rc = sb_broker_run_once(B, ms);
    CHECK_INT(rc, 0);
}

static void pump(int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (sb_mono_ms() < end)
        step(5);
}

/* The next message on s (skipping HEARTBEATs unless want_heartbeat), running
 * the broker meanwhile; NULL if none within ms. */
static sb_wire_msg_t *expect_msg(zsock_t *s, int ms, bool want_heartbeat)
{
    int64_t end = sb_mono_ms() + ms;
    for (;;) {
        sb_wire_msg_t *m = NULL;
        int rc = sb_wire_recv(s, false, &m);
        if (rc == 0 && (want_heartbeat || m->cmd != SB_CMD_HEARTBEAT))
            return m;
        sb_wire_msg_destroy(&m);
        if (rc == 0)
            continue;
        if (sb_mono_ms() >= end)
            return NULL;
        step(5);
    }
}

static sb_wire_msg_t *expect(zsock_t *s, int ms)
{
    return expect_msg(s, ms, false);
}

/* Expects nothing but heartbeats on s for ms. */
static void expect_none(zsock_t *s, int ms)
{
    sb_wire_msg_t *m = expect(s, ms);
    CHECK(m == NULL);
    if (m)
        fprintf(stderr, "  unexpected command 0x%02x job %s\n", (unsigned)m->cmd,
                m->header ? sb_wire_header_str(m, "job_id") : "-");
    sb_wire_msg_destroy(&m);
}

static void send_ready(zsock_t *w, const char *name, int credits, ...)
{
    json_t *models = json_array();
    va_list ap;
    va_start(ap, credits);
    for (const char *m; (m = va_arg(ap, const char *));)
        json_array_append_new(models, json_string(m));
    va_end(ap);
    json_t *hdr = json_pack("{s:o, s:i, s:s}", "models", models, "credits", credits, "name", name);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, hdr, NULL, 0), 0);
    json_decref(hdr);
}

static void submit(zsock_t *fe, const char *id, const char *model, int64_t deadline_ms, const void *body, size_t len)
{
    json_t *hdr = json_pack("{s:s, s:s, s:I}", "job_id", id, "model", model, "deadline_ms", (json_int_t)deadline_ms);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, hdr, body, len), 0);
    json_decref(hdr);
}

static void submit_simple(zsock_t *fe, const char *id, const char *model)
{
    submit(fe, id, model, sb_now_ms() + 10000, "\x81\xa1x\x01", 4);
}

static void send_event(zsock_t *w, const char *id, bool final, const void *body, size_t len)
{
    json_t *hdr = json_pack("{s:s, s:b}", "job_id", id, "final", final);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_EVENT, hdr, body, len), 0);
    json_decref(hdr);
}

static void send_cancel(zsock_t *s, const char *id)
{
    json_t *hdr = json_pack("{s:s}", "job_id", id);
    CHECK_INT(sb_wire_send(s, NULL, SB_CMD_CANCEL, hdr, NULL, 0), 0);
    json_decref(hdr);
}

/* Checks that *pm is the given command for job id, then destroys it. */
static void check_cmd(sb_wire_msg_t **pm, int cmd, const char *id)
{
    sb_wire_msg_t *m = *pm;
    CHECK(m != NULL);
    if (m) {
        CHECK_INT(m->cmd, cmd);
        CHECK_STR(sb_wire_header_str(m, "job_id"), id);
    }
    sb_wire_msg_destroy(pm);
}

/* Checks that *pm is a final error EVENT for job id, then destroys it. */
static void check_error(sb_wire_msg_t **pm, const char *id, int status, const char *kind, const char *code,
                        const char *message)
{
    sb_wire_msg_t *m = *pm;
    CHECK(m != NULL);
    if (!m)
        return;
    CHECK_INT(m->cmd, SB_CMD_EVENT);
    CHECK_STR(sb_wire_header_str(m, "job_id"), id);
    CHECK(sb_wire_header_bool(m, "final"));
    json_t *ev = NULL;
    CHECK(m->body != NULL);
    if (m->body)
        CHECK_INT(sb_mpjson_decode(zframe_data(m->body), zframe_size(m->body), &ev), 0);
    CHECK_STR(json_string_value(json_object_get(ev, "type")), "error");
    CHECK_INT(json_integer_value(json_object_get(ev, "status")), status);
    CHECK_STR(json_string_value(json_object_get(ev, "kind")), kind);
    CHECK_STR(json_string_value(json_object_get(ev, "code")), code);
    CHECK_STR(json_string_value(json_object_get(ev, "message")), message);
    json_decref(ev);
    sb_wire_msg_destroy(pm);
}

static void send_raw(zsock_t *s, int nframes, ...)
{
    zmsg_t *z = zmsg_new();
    va_list ap;
    va_start(ap, nframes);
    for (int i = 0; i < nframes; i++) {
        const char *data = va_arg(ap, const char *);
        size_t len = va_arg(ap, size_t);
        zmsg_addmem(z, data, len);
    }
    va_end(ap);
    CHECK_INT(zmsg_send(&z, s), 0);
}

/* The next message on s within a second is cmd for job id (check_cmd). */
static void expect_cmd(zsock_t *s, int cmd, const char *id)
{
    sb_wire_msg_t *m = expect(s, 1000);
    check_cmd(&m, cmd, id);
}

/* The next message on s within a second is job id's final error event (check_error). */
static void expect_error(zsock_t *s, const char *id, int status, const char *kind, const char *code,
                         const char *message)
{
    sb_wire_msg_t *m = expect(s, 1000);
    check_error(&m, id, status, kind, code, message);
}

/* A worker peer on the broker just set up, READY as "w1" for model "m1" with
 * credits, and registered (the broker has run 20 ms): most tests' worker. */
static zsock_t *ready_worker(int credits)
{
    zsock_t *w = peer(WK);
    send_ready(w, "w1", credits, "m1", NULL);
    pump(20);
    return w;
}

/* Closes a test's frontend and worker peers, then its broker. */
static void teardown_peers(zsock_t **fe, zsock_t **w)
{
    zsock_destroy(fe);
    zsock_destroy(w);
    teardown();
}

/* Dispatch, JOB header and body passed through, events forwarded untouched. */
static void test_dispatch_and_forward(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(2);
    /* 0xc1 is never valid msgpack: the broker must not be decoding bodies. */
    static const unsigned char body[] = {0xc1, 0x00, 0xff, 'j', 'o', 'b', 0x00};
    int64_t deadline = sb_now_ms() + 5000;
    submit(fe, "j1", "m1", deadline, body, sizeof body);
    sb_wire_msg_t *m = expect(w, 1000);
    CHECK(m != NULL);
    if (m) {
        CHECK_INT(m->cmd, SB_CMD_JOB);
        CHECK_STR(sb_wire_header_str(m, "job_id"), "j1");
        CHECK_STR(sb_wire_header_str(m, "model"), "m1");
        CHECK_INT(sb_wire_header_int(m, "deadline_ms", 0), deadline);
        CHECK(m->body && zframe_size(m->body) == sizeof body && !memcmp(zframe_data(m->body), body, sizeof body));
    }
    sb_wire_msg_destroy(&m);

    static const unsigned char ev1[] = {0xc1, 'd', 'e', 'l', 't', 'a'};
    send_event(w, "j1", false, ev1, sizeof ev1);
    m = expect(fe, 1000);
    CHECK(m && m->cmd == SB_CMD_EVENT);
    if (m) {
        CHECK_STR(sb_wire_header_str(m, "job_id"), "j1");
        CHECK(!sb_wire_header_bool(m, "final"));
        CHECK(m->body && zframe_size(m->body) == sizeof ev1 && !memcmp(zframe_data(m->body), ev1, sizeof ev1));
    }
    sb_wire_msg_destroy(&m);
    send_event(w, "j1", true, "\xc0", 1);
    m = expect(fe, 1000);
    CHECK(m && m->cmd == SB_CMD_EVENT && sb_wire_header_bool(m, "final"));
    CHECK(m && m->body && zframe_size(m->body) == 1 && zframe_data(m->body)[0] == 0xc0);
    sb_wire_msg_destroy(&m);

    teardown_peers(&fe, &w);
}

/* A worker never holds more jobs than its credits; the busiest worker is avoided. */
static void test_credits(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(2);
    submit(fe, "j1", "m1", INT64_MAX, "\xc0", 1); /* a far deadline must not overflow */
    submit_simple(fe, "j2", "m1");
    submit_simple(fe, "j3", "m1");
    expect_cmd(w, SB_CMD_JOB, "j1");
    expect_cmd(w, SB_CMD_JOB, "j2");
    expect_none(w, 200); /* includes a few deadline sweeps */
    send_event(w, "j1", true, "\xc0", 1);
    expect_cmd(w, SB_CMD_JOB, "j3");
    expect_cmd(fe, SB_CMD_EVENT, "j1");

    /* A second worker with more free credit ("*" serves m1 too) gets the next jobs. */
    zsock_t *w2 = peer(WK);
    send_ready(w2, "w2", 3, "*", NULL);
    pump(20);
    submit_simple(fe, "j4", "m1");
    expect_cmd(w2, SB_CMD_JOB, "j4");
    submit_simple(fe, "j5", "m1");
    expect_cmd(w2, SB_CMD_JOB, "j5");
    expect_none(w, 50);

    zsock_destroy(&fe);
    zsock_destroy(&w);
    zsock_destroy(&w2);
    teardown();
}

/* Queue full -> 429; no worker for the model -> 503. */
static void test_queue_full_and_no_worker(void)
{
    setup(2);
    zsock_t *fe = peer(FE), *w = peer(WK);
    submit_simple(fe, "j0", "m1");
    expect_error(fe, "j0", 503, "overloaded", "no_workers", "no worker is serving model 'm1'");

    send_ready(w, "w1", 1, "m1", NULL);
    pump(20);
    submit_simple(fe, "j1", "m1");
    expect_cmd(w, SB_CMD_JOB, "j1");
    submit_simple(fe, "j2", "m1");
    submit_simple(fe, "j3", "m1");
    submit_simple(fe, "j4", "m1");
    expect_error(fe, "j4", 429, "overloaded", "queue_full", "model 'm1' is busy: queue full, retry later");
    submit_simple(fe, "j5", "other");
    expect_error(fe, "j5", 503, "overloaded", "no_workers", "no worker is serving model 'other'");
    expect_none(w, 50);

    /* The queue drains in order as credit frees. */
    send_event(w, "j1", true, "\xc0", 1);
    expect_cmd(w, SB_CMD_JOB, "j2");

    teardown_peers(&fe, &w);
}

/* A silent worker is lost: 502 for its jobs, 503 for jobs nobody can serve now. */
static void test_worker_lost(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    int64_t t0 = sb_mono_ms();
    submit_simple(fe, "j1", "m1");
    submit_simple(fe, "j2", "m1");
    expect_cmd(w, SB_CMD_JOB, "j1");
    sb_wire_msg_t *m = expect(fe, 3500);
    int64_t took = sb_mono_ms() - t0;
    check_error(&m, "j1", 502, "upstream_error", "worker_lost", "the worker handling this request stopped responding");
    CHECK(took >= 2000 && took <= 3000);
    m = expect(fe, 500);
    check_error(&m, "j2", 503, "overloaded", "no_workers", "no worker is serving model 'm1'");

    /* The broker forgot it: it is told to reconnect. */
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    m = expect(w, 1000);
    CHECK(m && m->cmd == SB_CMD_RECONNECT);
    sb_wire_msg_destroy(&m);

    teardown_peers(&fe, &w);
}

/* Queued past the deadline -> 504; in flight past deadline + grace -> 504 and CANCEL. */
static void test_deadlines(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    submit_simple(fe, "jA", "m1");
    expect_cmd(w, SB_CMD_JOB, "jA");
    submit(fe, "jB", "m1", sb_now_ms() + 150, "\xc0", 1);
    expect_error(fe, "jB", 504, "timeout", "deadline_exceeded", "timeout: the request exceeded its deadline");

    /* An already-passed deadline is refused at once. */
    submit(fe, "jX", "m1", sb_now_ms() - 1, "\xc0", 1);
    expect_error(fe, "jX", 504, "timeout", "deadline_exceeded", "timeout: the request exceeded its deadline");

    send_event(w, "jA", true, "\xc0", 1);
    expect_cmd(fe, SB_CMD_EVENT, "jA");
    submit(fe, "jC", "m1", sb_now_ms() + 100, "\xc0", 1);
    sb_wire_msg_t *m = expect(w, 1000); /* jB expired: jC is next */
    check_cmd(&m, SB_CMD_JOB, "jC");
    int64_t t0 = sb_mono_ms();
    expect_error(fe, "jC", 504, "timeout", "deadline_exceeded", "timeout: the request exceeded its deadline");
    CHECK(sb_mono_ms() - t0 >= 100 + SB_BROKER_DEADLINE_GRACE_MS - 60);
    expect_cmd(w, SB_CMD_CANCEL, "jC");

    /* Late events are dropped; the final one returns the credit. */
    send_event(w, "jC", false, "\xc0", 1);
    expect_none(fe, 100);
    submit_simple(fe, "jD", "m1");
    expect_none(w, 100);
    send_event(w, "jC", true, "\xc0", 1);
    expect_cmd(w, SB_CMD_JOB, "jD");
    expect_none(fe, 50);

    teardown_peers(&fe, &w);
}

/* CANCEL: a queued job vanishes silently; an in-flight one is cancelled on the worker. */
static void test_cancel(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    submit_simple(fe, "j1", "m1");
    expect_cmd(w, SB_CMD_JOB, "j1");
    submit_simple(fe, "j2", "m1");
    pump(20);
    send_cancel(fe, "j2");
    send_cancel(fe, "j1");
    expect_cmd(w, SB_CMD_CANCEL, "j1");
    send_event(w, "j1", false, "\xc0", 1);
    send_event(w, "j1", true, "\xc0", 1);
    expect_none(fe, 100);
    expect_none(w, 50); /* j2 was dropped, not dispatched */
    submit_simple(fe, "j3", "m1");
    expect_cmd(w, SB_CMD_JOB, "j3");
    /* Cancelling an unknown job is harmless. */
    send_cancel(fe, "nope");
    expect_none(fe, 50);

    teardown_peers(&fe, &w);
}

/* Unknown workers are told to RECONNECT; frontends get heartbeats answered. */
static void test_heartbeats_and_reconnect(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *stranger = peer(WK);
    CHECK_INT(sb_wire_send(stranger, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    sb_wire_msg_t *m = expect(stranger, 1000);
    CHECK(m && m->cmd == SB_CMD_RECONNECT);
    sb_wire_msg_destroy(&m);
    send_event(stranger, "jz", true, "\xc0", 1);
    m = expect(stranger, 1000);
    CHECK(m && m->cmd == SB_CMD_RECONNECT);
    sb_wire_msg_destroy(&m);
    expect_none(fe, 20);

    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    m = expect_msg(fe, 1000, true);
    CHECK(m && m->cmd == SB_CMD_HEARTBEAT);
    sb_wire_msg_destroy(&m);

    /* Registered workers get heartbeats every interval. */
    send_ready(stranger, "w1", 1, "m1", NULL);
    m = expect_msg(stranger, SB_HEARTBEAT_INTERVAL_MS * 2, true);
    CHECK(m && m->cmd == SB_CMD_HEARTBEAT);
    sb_wire_msg_destroy(&m);

    zsock_destroy(&fe);
    zsock_destroy(&stranger);
    teardown();
}

/* A frontend that vanished: its job is cancelled on the worker. */
static void test_frontend_gone(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    submit_simple(fe, "j1", "m1");
    sb_wire_msg_t *m = expect(w, 1000);
    check_cmd(&m, SB_CMD_JOB, "j1");
    zsock_destroy(&fe);
    for (int i = 0; i < 50 && !m; i++) {
        send_event(w, "j1", false, "\xc0", 1);
        m = expect(w, 20);
    }
    check_cmd(&m, SB_CMD_CANCEL, "j1");
    send_event(w, "j1", true, "\xc0", 1);
    pump(20);

    zsock_destroy(&w);
    teardown();
}

/* A background job (docs/background.md): ACCEPTED when asked, the header
 * passed to the worker, and it runs on when its frontend vanishes (its
 * events are kept by the worker); any frontend may cancel it, while an
 * ordinary job's CANCEL from another frontend is still dropped. */
static void test_background(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *other = peer(FE), *w = ready_worker(2);
    json_t *hdr = json_pack("{s:s, s:s, s:I, s:s, s:b}", "job_id", "bg1", "model", "m1", "deadline_ms",
                            (json_int_t)(sb_now_ms() + 10000), "background", "resp_1", "ack", 1);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, hdr, "\x81\xa1x\x01", 4), 0);
    json_decref(hdr);
    expect_cmd(fe, SB_CMD_ACCEPTED, "bg1");
    sb_wire_msg_t *m = expect(w, 1000);
    CHECK(m && m->cmd == SB_CMD_JOB);
    CHECK_STR(m ? sb_wire_header_str(m, "background") : NULL, "resp_1");
    sb_wire_msg_destroy(&m);
    /* Without "ack", no ACCEPTED. */
    submit_simple(fe, "j2", "m1");
    expect_cmd(w, SB_CMD_JOB, "j2");
    expect_none(fe, 50);

    zsock_destroy(&fe);
    for (int i = 0; i < 10; i++) {
        send_event(w, "bg1", false, "\xc0", 1);
        send_event(w, "j2", false, "\xc0", 1);
        pump(20);
    }
    /* j2 (ordinary) is cancelled; bg1 runs on. */
    expect_cmd(w, SB_CMD_CANCEL, "j2");
    send_event(w, "j2", true, "\xc0", 1);
    expect_none(w, 50);
    /* Another frontend's CANCEL ends the background job. */
    send_cancel(other, "bg1");
    expect_cmd(w, SB_CMD_CANCEL, "bg1");
    send_event(w, "bg1", true, "\xc0", 1);
    pump(20);
    /* An ordinary job is not cancelled by a frontend that did not submit it. */
    submit_simple(other, "j3", "m1");
    expect_cmd(w, SB_CMD_JOB, "j3");
    zsock_t *third = peer(FE);
    send_cancel(third, "j3");
    expect_none(w, 100);
    send_event(w, "j3", true, "\xc0", 1);
    expect_cmd(other, SB_CMD_EVENT, "j3");

    zsock_destroy(&third);
    zsock_destroy(&other);
    zsock_destroy(&w);
    teardown();
}

/* A JOB that cannot be sent loses the worker and stays queued for another. */
static void test_worker_send_failure(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w1 = peer(WK), *w2 = peer(WK);
    send_ready(w1, "w1", 5, "m1", NULL);
    send_ready(w2, "w2", 1, "m1", NULL);
    pump(20);
    zsock_destroy(&w1);
    pump(50); /* let the ROUTER see the pipe go */
    submit_simple(fe, "j1", "m1");
    expect_cmd(w2, SB_CMD_JOB, "j1");
    expect_none(fe, 50);

    zsock_destroy(&fe);
    zsock_destroy(&w2);
    teardown();
}

/* Malformed frames and headers are dropped; the broker keeps working. */
static void test_malformed(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = peer(WK);
    /* Frames: a 2-byte command, an empty frame, a header that is not msgpack,
     * a header that is an array, too many frames, unknown commands. */
    send_raw(fe, 1, "xx", (size_t)2);
    send_raw(fe, 1, "", (size_t)0);
    send_raw(fe, 2, "\x01", (size_t)1, "\xc1", (size_t)1);
    send_raw(fe, 2, "\x01", (size_t)1, "\x91\x01", (size_t)2);
    send_raw(fe, 2, "\x01", (size_t)1, "", (size_t)0);
    send_raw(fe, 4, "\x01", (size_t)1, "\x80", (size_t)1, "a", (size_t)1, "b", (size_t)1);
    send_raw(fe, 2, "\x7f", (size_t)1, "\x80", (size_t)1);
    send_raw(fe, 1, "\x01", (size_t)1); /* SUBMIT without a header */
    send_raw(fe, 1, "\x02", (size_t)1); /* CANCEL without a header */
    /* SUBMIT headers with missing or mistyped fields, or no body. */
    json_t *h = json_pack("{s:i, s:s, s:i}", "job_id", 7, "model", "m1", "deadline_ms", 1);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, "b", 1), 0);
    json_decref(h);
    h = json_pack("{s:s, s:s, s:s}", "job_id", "j", "model", "m1", "deadline_ms", "soon");
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, "b", 1), 0);
    json_decref(h);
    h = json_pack("{s:s, s:s, s:I}", "job_id", "j", "model", "m1", "deadline_ms", (json_int_t)sb_now_ms() + 9999);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, NULL, 0), 0);
    json_decref(h);
    char longid[SB_JOB_ID_MAX + 2];
    memset(longid, 'x', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    submit_simple(fe, longid, "m1");
    submit_simple(fe, "", "m1");
    submit_simple(fe, "j", "");
    /* Worker side: bad READYs, bad EVENTs. */
    send_raw(w, 1, "\x10", (size_t)1);
    h = json_pack("{s:s, s:i, s:s}", "models", "m1", "credits", 1, "name", "bad");
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, h, NULL, 0), 0);
    json_decref(h);
    h = json_pack("{s:[s], s:s, s:s}", "models", "m1", "credits", "1", "name", "bad");
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, h, NULL, 0), 0);
    json_decref(h);
    h = json_pack("{s:[s], s:i, s:s}", "models", "m1", "credits", 0, "name", "bad");
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, h, NULL, 0), 0);
    json_decref(h);
    h = json_pack("{s:[i], s:i, s:s}", "models", 3, "credits", 1, "name", "bad");
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, h, NULL, 0), 0);
    json_decref(h);
    h = json_pack("{s:[s], s:i}", "models", "m1", "credits", 1);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, h, NULL, 0), 0);
    json_decref(h);
    send_raw(w, 3, "\x03", (size_t)1, "\xc1\xc1", (size_t)2, "x", (size_t)1);
    /* SUBMITs with a usable job_id are answered 400; the rest produce nothing,
     * and no worker was registered. */
    static const char *const bad_job = "malformed job: needs model, integer deadline_ms and a body";
    expect_error(fe, "j", 400, "invalid_request", "bad_job", bad_job);
    expect_error(fe, "j", 400, "invalid_request", "bad_job", bad_job);
    expect_error(fe, "j", 400, "invalid_request", "bad_job", bad_job);
    expect_none(fe, 50);
    expect_none(w, 20);

    /* Now a real worker, then bad EVENTs from it. */
    send_ready(w, "w1", 1, "m1", NULL);
    pump(20);
    submit_simple(fe, "j1", "m1");
    expect_cmd(w, SB_CMD_JOB, "j1");
    h = json_pack("{s:b}", "final", 1);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_EVENT, h, "\xc0", 1), 0);
    json_decref(h);
    h = json_pack("{s:s, s:s}", "job_id", "j1", "final", "yes");
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_EVENT, h, "\xc0", 1), 0);
    json_decref(h);
    send_event(w, "someone-else", true, "\xc0", 1);
    send_event(w, "j1", false, NULL, 0);                  /* no body, not final: dropped */
    send_raw(w, 2, "\x01", (size_t)1, "\x80", (size_t)1); /* SUBMIT on the worker socket */
    expect_none(fe, 50);
    /* A final EVENT without a body still ends the job (or the credit would leak). */
    send_event(w, "j1", true, NULL, 0);
    expect_error(fe, "j1", 502, "upstream_error", "bad_worker_event",
                 "the worker handling this request sent a malformed event");
    submit_simple(fe, "j2", "m1");
    expect_cmd(w, SB_CMD_JOB, "j2");
    /* A duplicate job id is refused (409); the original is unaffected. */
    submit_simple(fe, "j2", "m1");
    expect_error(fe, "j2", 409, "invalid_request", "duplicate_job", "duplicate job id");
    expect_none(w, 50);
    send_event(w, "j2", true, "\xc0", 1);
    expect_cmd(fe, SB_CMD_EVENT, "j2");

    teardown_peers(&fe, &w);
}

/* A worker that sends READY again has dropped its jobs (it does so only then):
 * what it held is lost, but the worker itself stays registered, in place. */
static void test_ready_again(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    submit_simple(fe, "j1", "m1");
    expect_cmd(w, SB_CMD_JOB, "j1");
    send_ready(w, "w1", 2, "m1", NULL);
    expect_error(fe, "j1", 502, "upstream_error", "worker_lost", "the worker handling this request stopped responding");
    sb_broker_counts_t c;
    sb_broker_counts(B, &c);
    CHECK_INT(c.joined, 1);
    CHECK_INT(c.lost, 0);
    CHECK_INT(c.reregistered, 1);
    submit_simple(fe, "j2", "m1");
    submit_simple(fe, "j3", "m1");
    expect_cmd(w, SB_CMD_JOB, "j2");
    expect_cmd(w, SB_CMD_JOB, "j3");
    /* A late event for the lost job is dropped. */
    send_event(w, "j1", true, "\xc0", 1);
    expect_none(fe, 50);

    teardown_peers(&fe, &w);
}

/* sb_broker_stop ends the loop; a bad endpoint fails sb_broker_new. */
static void test_lifecycle(void)
{
    setup(0);
    sb_broker_stop(B);
    CHECK_INT(sb_broker_run_once(B, 10), -EINTR);
    CHECK_INT(sb_broker_run(B), 0);
    CHECK_STR(sb_broker_frontend_endpoint(B), FE);
    teardown();
    sb_broker_destroy(&B); /* NULL-safe */

    sb_broker_config_t cfg;
    sb_broker_config_init(&cfg);
    cfg.frontend_endpoint = "bogus://nowhere";
    cfg.worker_endpoint = "inproc://broker-test-lifecycle";
    CHECK(sb_broker_new(&cfg) == NULL);

    /* A tcp wildcard port is resolved. */
    cfg.frontend_endpoint = "tcp://127.0.0.1:*";
    cfg.worker_endpoint = "tcp://127.0.0.1:*";
    sb_broker_t *b = sb_broker_new(&cfg);
    CHECK(b != NULL);
    if (b) {
        CHECK(strncmp(sb_broker_frontend_endpoint(b), "tcp://127.0.0.1:", 16) == 0);
        CHECK(strcmp(sb_broker_frontend_endpoint(b) + 16, "*") != 0);
    }
    sb_broker_destroy(&b);
}

/*
 * Circuit breaker (broker_breaker.c, driven through the broker).
 */

/* A final EVENT for id with "upstream": upstream in its header (NULL: no
 * such field, as when the job never reached the upstream). */
static void send_final(zsock_t *w, const char *id, const char *upstream)
{
    json_t *hdr = json_pack("{s:s, s:b}", "job_id", id, "final", 1);
    if (upstream)
        json_object_set_new(hdr, "upstream", json_string(upstream));
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_EVENT, hdr, "\xc0", 1), 0);
    json_decref(hdr);
}

/* Submits id for model and expects it on worker w as a JOB. */
static void submit_expect_job(zsock_t *fe, zsock_t *w, const char *id, const char *model)
{
    submit_simple(fe, id, model);
    expect_cmd(w, SB_CMD_JOB, id);
}

/* Sends id's final event with the given outcome and expects it forwarded to fe. */
static void finish_job(zsock_t *fe, zsock_t *w, const char *id, const char *upstream)
{
    send_final(w, id, upstream);
    expect_cmd(fe, SB_CMD_EVENT, id);
}

/* Checks that *pm is the 503 circuit_open error for job id of model, whose
 * upstream failed `failures` times in a row, then destroys it. Returns its
 * retry_after (seconds), or -1. */
static int check_circuit_open(sb_wire_msg_t **pm, const char *id, const char *model, int failures)
{
    sb_wire_msg_t *m = *pm;
    CHECK(m != NULL);
    if (!m)
        return -1;
    json_t *ev = NULL;
    CHECK(m->body != NULL);
    if (m->body)
        CHECK_INT(sb_mpjson_decode(zframe_data(m->body), zframe_size(m->body), &ev), 0);
    const json_t *ra = json_object_get(ev, "retry_after");
    CHECK(json_is_integer(ra));
    int retry = json_is_integer(ra) ? (int)json_integer_value(ra) : -1;
    CHECK(retry >= 1);
    char msg[256];
    snprintf(msg, sizeof msg,
             "model '%s' is temporarily unavailable: its upstream failed %d time%s in a row; "
             "retry in %d s",
             model, failures, failures == 1 ? "" : "s", retry);
    json_decref(ev);
    check_error(pm, id, 503, "overloaded", "circuit_open", msg);
    return retry;
}

/* K failed outcomes in a row open the circuit: what is queued for the model is
 * refused at once, new SUBMITs too, and nothing more reaches the worker; jobs
 * already running finish normally; other models are unaffected. */
static void test_breaker_opens(void)
{
    setup_cfg(0, 3, 2500);
    zsock_t *fe = peer(FE), *w = peer(WK);
    send_ready(w, "w1", 3, "m1", "m2", NULL);
    pump(20);
    submit_expect_job(fe, w, "j1", "m1");
    submit_expect_job(fe, w, "j2", "m1");
    submit_expect_job(fe, w, "j3", "m1");
    submit_simple(fe, "q1", "m1");
    submit_simple(fe, "q2", "m1");
    submit_simple(fe, "q3", "m1");
    submit_simple(fe, "q4", "m1");
    expect_none(w, 50); /* no credit left: queued */

    /* Each failure frees a credit for the next queued job... */
    finish_job(fe, w, "j1", "failed");
    expect_cmd(w, SB_CMD_JOB, "q1");
    finish_job(fe, w, "j2", "failed");
    expect_cmd(w, SB_CMD_JOB, "q2");
    /* ...until the third in a row opens the circuit: q3 and q4 are refused at once. */
    int64_t t0 = sb_mono_ms();
    finish_job(fe, w, "j3", "failed");
    sb_wire_msg_t *m = expect(fe, 1000);
    CHECK_INT(check_circuit_open(&m, "q3", "m1", 3), 3); /* 2.5 s, rounded up */
    m = expect(fe, 1000);
    check_circuit_open(&m, "q4", "m1", 3);
    CHECK(sb_mono_ms() - t0 < 500);

    /* The (K+1)th SUBMIT: refused, never dispatched. */
    submit_simple(fe, "j4", "m1");
    m = expect(fe, 1000);
    int retry = check_circuit_open(&m, "j4", "m1", 3);
    CHECK(retry >= 2 && retry <= 3);
    expect_none(w, 100);

    /* Jobs running when it opened finish normally; their outcomes are
     * ignored (an ok does not close it, a failure does not extend it). */
    send_event(w, "q1", false, "\xc0", 1);
    expect_cmd(fe, SB_CMD_EVENT, "q1");
    finish_job(fe, w, "q1", "ok");
    finish_job(fe, w, "q2", "failed");
    submit_simple(fe, "j5", "m1");
    m = expect(fe, 1000);
    CHECK_INT(check_circuit_open(&m, "j5", "m1", 3), retry);

    /* Another model on the same worker is unaffected. */
    submit_expect_job(fe, w, "k1", "m2");
    finish_job(fe, w, "k1", "ok");
    expect_none(fe, 50);

    teardown_peers(&fe, &w);
}

/* After the cooldown one job probes while concurrent SUBMITs are refused; the
 * probe's ok closes the circuit, its failure re-opens it for twice as long;
 * a probe that ends without an outcome (cancelled, worker lost) lets the next
 * job probe. */
static void test_breaker_probe(void)
{
    setup_cfg(0, 2, 400);
    zsock_t *fe = peer(FE), *w = ready_worker(5);
    submit_expect_job(fe, w, "j1", "m1");
    submit_expect_job(fe, w, "j2", "m1");
    finish_job(fe, w, "j1", "failed");
    finish_job(fe, w, "j2", "failed");
    submit_simple(fe, "r1", "m1");
    sb_wire_msg_t *m = expect(fe, 1000);
    CHECK_INT(check_circuit_open(&m, "r1", "m1", 2), 1);
    pump(450);

    /* Half-open: p1 probes; p2 and p3, submitted with it, are refused. */
    submit_simple(fe, "p1", "m1");
    submit_simple(fe, "p2", "m1");
    submit_simple(fe, "p3", "m1");
    expect_cmd(w, SB_CMD_JOB, "p1");
    m = expect(fe, 1000);
    CHECK_INT(check_circuit_open(&m, "p2", "m1", 2), 1);
    m = expect(fe, 1000);
    CHECK_INT(check_circuit_open(&m, "p3", "m1", 2), 1);
    expect_none(w, 100); /* exactly one probe */
    submit_simple(fe, "p4", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "p4", "m1", 2);

    /* The probe reached the upstream: closed, jobs flow again. */
    finish_job(fe, w, "p1", "ok");
    submit_expect_job(fe, w, "c1", "m1");
    submit_expect_job(fe, w, "c2", "m1");
    finish_job(fe, w, "c1", "failed"); /* the count starts over: one failure is not two */
    submit_expect_job(fe, w, "c3", "m1");
    finish_job(fe, w, "c2", "failed"); /* two in a row: open again */
    submit_simple(fe, "r2", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "r2", "m1", 2);
    finish_job(fe, w, "c3", "ok"); /* dispatched before it opened: ignored */
    submit_simple(fe, "r3", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "r3", "m1", 2);
    pump(450);

    /* A failed probe re-opens it, now for 800 ms. */
    submit_expect_job(fe, w, "p5", "m1");
    finish_job(fe, w, "p5", "failed");
    int64_t reopened = sb_mono_ms();
    submit_simple(fe, "r4", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "r4", "m1", 3);
    pump(500 - (int)(sb_mono_ms() - reopened));
    submit_simple(fe, "r5", "m1"); /* past the first cooldown, not the doubled one */
    m = expect(fe, 1000);
    check_circuit_open(&m, "r5", "m1", 3);
    expect_none(w, 20);
    pump(850 - (int)(sb_mono_ms() - reopened));

    /* A probe cancelled by its frontend ends without an outcome: the next
     * job probes, and the cancelled one's late result does not count. */
    submit_expect_job(fe, w, "p6", "m1");
    send_cancel(fe, "p6");
    expect_cmd(w, SB_CMD_CANCEL, "p6");
    submit_expect_job(fe, w, "p7", "m1");
    send_final(w, "p6", "failed");
    expect_none(fe, 50); /* abandoned: its final event is dropped */
    submit_simple(fe, "r6", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "r6", "m1", 3); /* p7 is still the probe */
    expect_none(w, 20);

    /* The probe's worker is lost (it re-registers): no outcome either. */
    send_ready(w, "w1", 5, "m1", NULL);
    expect_error(fe, "p7", 502, "upstream_error", "worker_lost", "the worker handling this request stopped responding");
    submit_expect_job(fe, w, "p8", "m1");
    submit_simple(fe, "r7", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "r7", "m1", 3);
    finish_job(fe, w, "p8", "ok");
    submit_expect_job(fe, w, "c4", "m1");

    teardown_peers(&fe, &w);
}

/* Only failures in a row count: an ok resets the count; outcomes without the
 * field (or with an unknown value), cancelled jobs and lost workers neither
 * count nor reset. */
static void test_breaker_counting(void)
{
    setup_cfg(0, 3, 5000);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    static const char *const outcomes[] = {"failed", "failed", "ok", "failed", "failed", NULL,
                                           NULL,     NULL,     NULL, "weird",  NULL};
    char id[16];
    for (size_t i = 0; i < sizeof outcomes / sizeof outcomes[0]; i++) {
        snprintf(id, sizeof id, "a%zu", i);
        submit_expect_job(fe, w, id, "m1");
        finish_job(fe, w, id, outcomes[i]);
    }
    /* A job its frontend cancelled: whatever its late final event says, it
     * does not count (the broker stopped caring about it). */
    submit_expect_job(fe, w, "x1", "m1");
    send_cancel(fe, "x1");
    expect_cmd(w, SB_CMD_CANCEL, "x1");
    send_final(w, "x1", "failed");
    expect_none(fe, 50);
    /* A worker lost mid-job is not the route's fault. */
    submit_expect_job(fe, w, "l1", "m1");
    send_ready(w, "w1", 1, "m1", NULL);
    expect_error(fe, "l1", 502, "upstream_error", "worker_lost", "the worker handling this request stopped responding");
    /* Still closed, with two failures in a row: the third opens it. */
    submit_expect_job(fe, w, "b1", "m1");
    finish_job(fe, w, "b1", "failed");
    submit_simple(fe, "b2", "m1");
    sb_wire_msg_t *m = expect(fe, 1000);
    check_circuit_open(&m, "b2", "m1", 3);
    expect_none(w, 50);

    teardown_peers(&fe, &w);
}

/* SUBMIT with a "client" in the header, as the frontend sends it. */
static void submit_as(zsock_t *fe, const char *id, const char *model, const char *client)
{
    json_t *hdr = json_pack("{s:s, s:s, s:I, s:s}", "job_id", id, "model", model, "deadline_ms",
                            (json_int_t)(sb_now_ms() + 10000), "client", client);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, hdr, "\x81\xa1x\x01", 4), 0);
    json_decref(hdr);
}

static void submit_as_expect_job(zsock_t *fe, zsock_t *w, const char *id, const char *model, const char *client)
{
    submit_as(fe, id, model, client);
    expect_cmd(w, SB_CMD_JOB, id);
}

/* Checks that *pm is the 503 circuit_open of a client's own circuit. */
static void check_client_circuit_open(sb_wire_msg_t **pm, const char *id, const char *model, int failures)
{
    sb_wire_msg_t *m = *pm;
    CHECK(m != NULL);
    if (!m)
        return;
    json_t *ev = NULL;
    if (m->body)
        CHECK_INT(sb_mpjson_decode(zframe_data(m->body), zframe_size(m->body), &ev), 0);
    int retry = (int)json_integer_value(json_object_get(ev, "retry_after"));
    CHECK(retry >= 1);
    char msg[256];
    snprintf(msg, sizeof msg,
             "model '%s' is temporarily unavailable to this client: its upstream failed %d time%s in a row on "
             "this client's requests; retry in %d s",
             model, failures, failures == 1 ? "" : "s", retry);
    json_decref(ev);
    check_error(pm, id, 503, "overloaded", "circuit_open", msg);
}

/* Fairness: one client's failures open a circuit for that client only (its
 * queued jobs are refused, other clients' jobs flow); failures from several
 * clients in a row open the model for everyone, a new client included; a
 * client's half-open circuit probes with that client's job only. */
static void test_breaker_fair(void)
{
    setup_cfg(0, 3, 400);
    zsock_t *fe = peer(FE), *w = ready_worker(2);
    submit_as_expect_job(fe, w, "a1", "m1", "key:A");
    submit_as_expect_job(fe, w, "a2", "m1", "key:A");
    submit_as(fe, "b1", "m1", "key:B");
    submit_as(fe, "a3", "m1", "key:A");
    submit_as(fe, "a4", "m1", "key:A");
    expect_none(w, 50); /* no credit left: queued */
    finish_job(fe, w, "a1", "failed");
    expect_cmd(w, SB_CMD_JOB, "b1");
    finish_job(fe, w, "a2", "failed");
    expect_cmd(w, SB_CMD_JOB, "a3");
    /* key:A's third failure in a row opens its own circuit: its queued a4 is
     * refused, and so is its next SUBMIT... */
    finish_job(fe, w, "a3", "failed");
    sb_wire_msg_t *m = expect(fe, 1000);
    check_client_circuit_open(&m, "a4", "m1", 3);
    submit_as(fe, "a5", "m1", "key:A");
    m = expect(fe, 1000);
    check_client_circuit_open(&m, "a5", "m1", 3);
    /* ...but key:B and a client never seen get the model. */
    submit_as_expect_job(fe, w, "b2", "m1", "key:B");
    finish_job(fe, w, "b1", "ok");
    submit_as_expect_job(fe, w, "n1", "m1", "key:N");
    finish_job(fe, w, "b2", "ok");
    finish_job(fe, w, "n1", "ok");
    /* Jobs without a client are not key:A's either. */
    submit_expect_job(fe, w, "x1", "m1");
    finish_job(fe, w, "x1", "ok");
    expect_none(fe, 20);

    /* The route really fails, for two clients in a row: the model opens for
     * everyone (what is queued too), a client with no failures included. */
    submit_as_expect_job(fe, w, "b3", "m1", "key:B");
    submit_as_expect_job(fe, w, "c1", "m1", "key:C");
    submit_as(fe, "d1", "m1", "key:D");
    finish_job(fe, w, "b3", "failed");
    expect_cmd(w, SB_CMD_JOB, "d1");
    finish_job(fe, w, "c1", "failed");
    submit_as_expect_job(fe, w, "c2", "m1", "key:C");
    submit_as(fe, "e1", "m1", "key:E"); /* queued: d1 and c2 hold the credits */
    finish_job(fe, w, "c2", "failed");  /* key:B 1 + key:C 2: three in a row from two clients */
    m = expect(fe, 1000);
    check_circuit_open(&m, "e1", "m1", 3);
    submit_as(fe, "f1", "m1", "key:F");
    m = expect(fe, 1000);
    check_circuit_open(&m, "f1", "m1", 3);
    submit_simple(fe, "f2", "m1");
    m = expect(fe, 1000);
    check_circuit_open(&m, "f2", "m1", 3);
    finish_job(fe, w, "d1", "ok"); /* dispatched before it opened: ignored */
    submit_as(fe, "f3", "m1", "key:F");
    m = expect(fe, 1000);
    check_circuit_open(&m, "f3", "m1", 3);
    expect_none(w, 20);

    /* After the cooldown key:B's job probes the model and closes it; key:A's
     * own circuit is half-open: its next job probes for key:A alone (a
     * second one of key:A's is refused meanwhile, key:B's are not). */
    pump(450);
    submit_as_expect_job(fe, w, "p1", "m1", "key:B");
    finish_job(fe, w, "p1", "ok");
    submit_as_expect_job(fe, w, "a6", "m1", "key:A");
    submit_as(fe, "a7", "m1", "key:A");
    m = expect(fe, 1000);
    check_client_circuit_open(&m, "a7", "m1", 3);
    submit_as_expect_job(fe, w, "b4", "m1", "key:B");
    /* The probe fails: key:A's circuit opens again (for 800 ms); the model
     * stays closed for the others. */
    finish_job(fe, w, "a6", "failed");
    submit_as(fe, "a8", "m1", "key:A");
    m = expect(fe, 1000);
    check_client_circuit_open(&m, "a8", "m1", 4);
    finish_job(fe, w, "b4", "ok");
    submit_as_expect_job(fe, w, "b5", "m1", "key:B");
    finish_job(fe, w, "b5", "ok");

    /* A "client" that is not a short string is a malformed SUBMIT. */
    json_t *hdr = json_pack("{s:s, s:s, s:I, s:i}", "job_id", "bad1", "model", "m1", "deadline_ms",
                            (json_int_t)(sb_now_ms() + 10000), "client", 7);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, hdr, "\x81\xa1x\x01", 4), 0);
    json_decref(hdr);
    expect_error(fe, "bad1", 400, "invalid_request", "bad_job",
                 "malformed job: client must be a string of 1 to 64 bytes");
    char longc[SB_CLIENT_ID_MAX + 2];
    memset(longc, 'k', sizeof longc - 1);
    longc[sizeof longc - 1] = '\0';
    submit_as(fe, "bad2", "m1", longc);
    expect_error(fe, "bad2", 400, "invalid_request", "bad_job",
                 "malformed job: client must be a string of 1 to 64 bytes");
    expect_none(w, 20);

    teardown_peers(&fe, &w);
}

/* --breaker-failures 0: no circuit, however many failures. */
static void test_breaker_disabled(void)
{
    setup_cfg(0, 0, 0);
    zsock_t *fe = peer(FE), *w = ready_worker(1);
    char id[16];
    for (int i = 0; i < 2 * SB_BROKER_BREAKER_FAILURES_DEFAULT; i++) {
        snprintf(id, sizeof id, "d%d", i);
        submit_expect_job(fe, w, id, "m1");
        finish_job(fe, w, id, "failed");
    }
    submit_expect_job(fe, w, "last", "m1");
    expect_none(fe, 50);

    /* And the default is on: five failures open it. */
    teardown_peers(&fe, &w);
    setup(0);
    fe = peer(FE);
    w = ready_worker(1);
    for (int i = 0; i < SB_BROKER_BREAKER_FAILURES_DEFAULT; i++) {
        snprintf(id, sizeof id, "e%d", i);
        submit_expect_job(fe, w, id, "m1");
        finish_job(fe, w, id, "failed");
    }
    submit_simple(fe, "e-last", "m1");
    sb_wire_msg_t *m = expect(fe, 1000);
    CHECK_INT(check_circuit_open(&m, "e-last", "m1", SB_BROKER_BREAKER_FAILURES_DEFAULT),
              SB_BROKER_BREAKER_COOLDOWN_MS_DEFAULT / 1000);
    expect_none(w, 20);

    teardown_peers(&fe, &w);
}

/*
 * Restarts: epoch, stale SUBMITs, READY again, the startup grace.
 */

static bool is_epoch(const char *e)
{
    if (!e || strlen(e) != SB_EPOCH_HEX_LEN)
        return false;
    for (const char *p = e; *p; p++)
        if (!strchr("0123456789abcdef", *p))
            return false;
    return true;
}

/* Every message the broker sends carries its epoch; two brokers differ. */
static void test_epoch_everywhere(void)
{
    setup(0);
    const char *epoch = sb_broker_epoch(B);
    CHECK(is_epoch(epoch));
    zsock_t *fe = peer(FE), *w = peer(WK), *stranger = peer(WK);
    /* The heartbeat answered to a frontend. */
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    sb_wire_msg_t *m = expect_msg(fe, 1000, true);
    CHECK(m && m->cmd == SB_CMD_HEARTBEAT);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    sb_wire_msg_destroy(&m);
    /* RECONNECT, echoing the seq of the message it answers. */
    json_t *h = json_pack("{s:i}", "seq", 7);
    CHECK_INT(sb_wire_send(stranger, NULL, SB_CMD_HEARTBEAT, h, NULL, 0), 0);
    json_decref(h);
    m = expect(stranger, 1000);
    CHECK(m && m->cmd == SB_CMD_RECONNECT);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    CHECK_INT(m ? sb_wire_header_int(m, "seq", -1) : -2, 7);
    sb_wire_msg_destroy(&m);
    /* READY is answered at once (well before the next beat) with a
     * heartbeat; then JOB and CANCEL. */
    send_ready(w, "w1", 1, "m1", NULL);
    m = expect_msg(w, SB_HEARTBEAT_INTERVAL_MS / 5, true);
    CHECK(m && m->cmd == SB_CMD_HEARTBEAT);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    sb_wire_msg_destroy(&m);
    submit_simple(fe, "j1", "m1");
    m = expect(w, 1000);
    CHECK(m && m->cmd == SB_CMD_JOB);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    sb_wire_msg_destroy(&m);
    /* A forwarded EVENT (the worker's header, stamped). */
    send_event(w, "j1", false, "\xc0", 1);
    expect_cmd(fe, SB_CMD_EVENT, "j1");
    send_event(w, "j1", false, "\xc0", 1);
    m = expect(fe, 1000);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    sb_wire_msg_destroy(&m);
    send_cancel(fe, "j1");
    m = expect(w, 1000);
    CHECK(m && m->cmd == SB_CMD_CANCEL);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    sb_wire_msg_destroy(&m);
    /* An error the broker makes itself. */
    submit_simple(fe, "j2", "nobody");
    m = expect(fe, 1000);
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, epoch);
    check_error(&m, "j2", 503, "overloaded", "no_workers", "no worker is serving model 'nobody'");
    char first[SB_EPOCH_HEX_LEN + 1];
    snprintf(first, sizeof first, "%s", epoch);
    zsock_destroy(&fe);
    zsock_destroy(&w);
    zsock_destroy(&stranger);
    teardown();
    setup(0);
    CHECK(is_epoch(sb_broker_epoch(B)) && strcmp(sb_broker_epoch(B), first) != 0);
    teardown();
}

/* A SUBMIT stamped with another broker's epoch is refused (503
 * broker_restarted, refused_epoch named) and never dispatched; with this
 * broker's epoch, or none, it runs. */
static void test_stale_submit(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = ready_worker(4);
    json_t *h = json_pack("{s:s, s:s, s:I, s:s}", "job_id", "old", "model", "m1", "deadline_ms",
                          (json_int_t)sb_now_ms() + 10000, "epoch", "0123456789abcdef");
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, "\xc0", 1), 0);
    json_decref(h);
    sb_wire_msg_t *m = expect(fe, 1000);
    CHECK_STR(m ? sb_wire_header_str(m, "refused_epoch") : NULL, "0123456789abcdef");
    CHECK_STR(m ? sb_wire_header_str(m, "epoch") : NULL, sb_broker_epoch(B));
    check_error(&m, "old", 503, "overloaded", "broker_restarted",
                "the gateway's job broker restarted; retry the request");
    expect_none(w, 50);
    h = json_pack("{s:s, s:s, s:I, s:s}", "job_id", "cur", "model", "m1", "deadline_ms",
                  (json_int_t)sb_now_ms() + 10000, "epoch", sb_broker_epoch(B));
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, "\xc0", 1), 0);
    json_decref(h);
    expect_cmd(w, SB_CMD_JOB, "cur");
    submit_simple(fe, "none", "m1");
    expect_cmd(w, SB_CMD_JOB, "none");
    /* A malformed epoch is a malformed job. */
    h = json_pack("{s:s, s:s, s:I, s:i}", "job_id", "badep", "model", "m1", "deadline_ms",
                  (json_int_t)sb_now_ms() + 10000, "epoch", 5);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, "\xc0", 1), 0);
    json_decref(h);
    expect_error(fe, "badep", 400, "invalid_request", "bad_job", "malformed job: epoch must be a non-empty string");
    sb_broker_counts_t c;
    sb_broker_counts(B, &c);
    CHECK_INT(c.refused_stale, 1);
    teardown_peers(&fe, &w);
}

/* A burst of READYs from one connection (what a restart used to cause) is
 * one worker registered, never lost: no join/lose cycles, the latest READY's
 * credits count, and jobs submitted afterwards run. */
static void test_ready_burst(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = peer(WK);
    for (int i = 0; i < 20; i++)
        send_ready(w, "w1", i + 1, "m1", NULL);
    pump(50);
    sb_broker_counts_t c;
    sb_broker_counts(B, &c);
    CHECK_INT(c.joined, 1);
    CHECK_INT(c.lost, 0);
    CHECK_INT(c.reregistered, 19);
    for (int i = 0; i < 20; i++) {
        char id[16];
        snprintf(id, sizeof id, "b%d", i);
        submit_simple(fe, id, "m1");
        sb_wire_msg_t *m = expect(w, 1000);
        check_cmd(&m, SB_CMD_JOB, id);
    }
    expect_none(fe, 50); /* no no_workers, no worker_lost */
    sb_broker_counts(B, &c);
    CHECK_INT(c.lost, 0);
    teardown_peers(&fe, &w);
}

/* Just started, the broker queues jobs for models no worker has announced
 * yet: a worker registering within the grace gets them; at its end the rest
 * are answered 503 no_workers. */
static void test_startup_grace(void)
{
    startup_grace_ms = 400;
    setup(0);
    startup_grace_ms = 0;
    int64_t t0 = sb_mono_ms();
    zsock_t *fe = peer(FE), *w = peer(WK);
    submit_simple(fe, "g1", "m1");
    submit_simple(fe, "g2", "m2");
    expect_none(fe, 150);
    send_ready(w, "w1", 2, "m1", NULL);
    expect_cmd(w, SB_CMD_JOB, "g1");
    sb_wire_msg_t *m = expect(fe, 1000);
    int64_t took = sb_mono_ms() - t0;
    check_error(&m, "g2", 503, "overloaded", "no_workers", "no worker is serving model 'm2'");
    CHECK(took >= 380 && took < 900);
    /* After the grace, at once. */
    submit_simple(fe, "g3", "m3");
    m = expect(fe, 200);
    check_error(&m, "g3", 503, "overloaded", "no_workers", "no worker is serving model 'm3'");
    teardown_peers(&fe, &w);
}

static void send_window(zsock_t *w, int cmd, long long window, long long seq)
{
    json_t *hdr = json_pack("{s:I, s:I}", "window", (json_int_t)window, "seq", (json_int_t)seq);
    CHECK_INT(sb_wire_send(w, NULL, cmd, hdr, NULL, 0), 0);
    json_decref(hdr);
}

/* A worker serving several brokers shares its credits: its window (JOBs since
 * its READY this broker may have sent in all) bounds dispatch below its
 * credits; a window for an older READY is ignored; heartbeats carry it too. */
static void test_credit_window(void)
{
    setup(0);
    zsock_t *fe = peer(FE), *w = peer(WK);
    json_t *hdr = json_pack("{s:[s], s:i, s:s, s:i}", "models", "m1", "credits", 4, "name", "w1", "seq", 1);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, hdr, NULL, 0), 0);
    json_decref(hdr);
    send_window(w, SB_CMD_CREDIT, 1, 1);
    pump(20);
    submit_simple(fe, "c1", "m1");
    submit_simple(fe, "c2", "m1");
    submit_simple(fe, "c3", "m1");
    submit_simple(fe, "c4", "m1");
    expect_cmd(w, SB_CMD_JOB, "c1");
    expect_none(w, 100); /* 4 credits, but a window of 1 */
    send_window(w, SB_CMD_CREDIT, 2, 1);
    expect_cmd(w, SB_CMD_JOB, "c2");
    expect_none(w, 100);
    send_window(w, SB_CMD_CREDIT, 10, 0); /* for an older READY: stale */
    expect_none(w, 100);
    send_window(w, SB_CMD_HEARTBEAT, 3, 1);
    expect_cmd(w, SB_CMD_JOB, "c3");
    expect_none(w, 100);
    /* A finished job frees a credit, not window: the worker says when. */
    send_event(w, "c1", true, "\x81\xa1x\x01", 4);
    expect_cmd(fe, SB_CMD_EVENT, "c1");
    expect_none(w, 100);
    send_window(w, SB_CMD_CREDIT, 100, 1); /* a window past the credits: the credits bound it */
    expect_cmd(w, SB_CMD_JOB, "c4");
    submit_simple(fe, "c5", "m1");
    submit_simple(fe, "c6", "m1");
    expect_cmd(w, SB_CMD_JOB, "c5");
    expect_none(w, 100); /* c2..c5 hold all 4 credits */
    /* A new READY starts over: no window until the worker says one. */
    hdr = json_pack("{s:[s], s:i, s:s, s:i}", "models", "m1", "credits", 1, "name", "w1", "seq", 2);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, hdr, NULL, 0), 0);
    json_decref(hdr);
    expect_cmd(w, SB_CMD_JOB, "c6");
    teardown_peers(&fe, &w);
}

int main(void)
{
    sb_log_init("test_broker"); /* SB_LOG_LEVEL=debug shows the broker's job transitions */
    test_dispatch_and_forward();
    use_tcp = true; /* once over real tcp too (framing, maxmsgsize, wildcard ports) */
    test_dispatch_and_forward();
    use_tcp = false;
    test_credits();
    test_queue_full_and_no_worker();
    test_deadlines();
    test_cancel();
    test_heartbeats_and_reconnect();
    test_frontend_gone();
    test_background();
    test_worker_send_failure();
    test_malformed();
    test_ready_again();
    test_epoch_everywhere();
    test_stale_submit();
    test_ready_burst();
    test_startup_grace();
    test_credit_window();
    test_lifecycle();
    test_worker_lost();
    test_breaker_opens();
    test_breaker_probe();
    test_breaker_counting();
    test_breaker_fair();
    test_breaker_disabled();
    return sb_test_finish("broker");
}
