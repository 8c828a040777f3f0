/*
 * Unit tests for the broker over real ZeroMQ sockets (inproc): the broker is
 * stepped in-process while fake frontend and worker DEALERs talk to it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bk_broker.h"
#include "sb_event.h"
#include "sb_mpjson.h"
#include "sb_protocol.h"
#include "sb_test.h"
#include "sb_time.h"
#include "sb_wire.h"

static bk_broker_t *broker;

static void pump(int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (sb_mono_ms() < end)
        (void)bk_broker_step(broker, 5);
}

/* Steps the broker until sock has a message (or ms pass); returns it. */
static sb_wire_msg_t *expect_msg(zsock_t *sock, int ms)
{
    int64_t end = sb_mono_ms() + ms;
    while (sb_mono_ms() < end) {
        (void)bk_broker_step(broker, 5);
        sb_wire_msg_t *m = NULL;
        if (sb_wire_recv(sock, false, &m) == 0) {
            if (m->cmd == SB_CMD_HEARTBEAT) { /* liveness noise */
                sb_wire_msg_destroy(&m);
                continue;
            }
            return m;
        }
    }
    return NULL;
}

static void submit(zsock_t *fe, const char *id, const char *model, int64_t deadline, const char *body)
{
    json_t *h = json_pack("{s:s, s:s, s:I}", "job_id", id, "model", model, "deadline_ms", (json_int_t)deadline);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, h, body, strlen(body)), 0);
    json_decref(h);
}

static void ready(zsock_t *w, const char *model, int credits)
{
    json_t *h = json_pack("{s:[s], s:i, s:s}", "models", model, "credits", credits, "name", "test-worker");
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_READY, h, NULL, 0), 0);
    json_decref(h);
}

static void event(zsock_t *w, const char *id, bool final, const char *body)
{
    json_t *h = json_pack("{s:s, s:b}", "job_id", id, "final", final);
    CHECK_INT(sb_wire_send(w, NULL, SB_CMD_EVENT, h, body, strlen(body)), 0);
    json_decref(h);
}

/* Checks msg is a final error event for id with the given status and code. */
static void check_error(sb_wire_msg_t *m, const char *id, int status, const char *code)
{
    CHECK(m != NULL);
    if (!m)
        return;
    CHECK_INT(m->cmd, SB_CMD_EVENT);
    CHECK_STR(sb_wire_header_str(m, "job_id"), id);
    CHECK(sb_wire_header_bool(m, "final"));
    json_t *ev = NULL;
    CHECK_INT(sb_mpjson_decode(zframe_data(m->body), zframe_size(m->body), &ev), 0);
    CHECK_INT(sb_event_type_of(ev), SB_EV_ERROR);
    CHECK_INT(json_integer_value(json_object_get(ev, "status")), status);
    CHECK_STR(json_string_value(json_object_get(ev, "code")), code);
    json_decref(ev);
}

int main(void)
{
    bk_config_t cfg;
    bk_config_defaults(&cfg);
    cfg.frontend_endpoint = "inproc://bk-fe";
    cfg.worker_endpoint = "inproc://bk-wk";
    cfg.queue_max = 2;
    cfg.heartbeat_ms = 100;
    cfg.liveness = 3;
    cfg.deadline_grace_ms = 50;
    broker = bk_broker_new(&cfg);
    CHECK(broker != NULL);
    zsock_t *fe = zsock_new_dealer("inproc://bk-fe");
    zsock_t *wk = zsock_new_dealer("inproc://bk-wk");
    int64_t far = sb_now_ms() + 60000;

    /* No worker serves the model: 503 at once. */
    submit(fe, "j0", "m", far, "x");
    sb_wire_msg_t *m = expect_msg(fe, 500);
    check_error(m, "j0", 503, "no_workers");
    sb_wire_msg_destroy(&m);

    /* One worker, one credit. */
    ready(wk, "m", 1);
    pump(20);
    CHECK_INT(bk_broker_workers(broker), 1);
    submit(fe, "j1", "m", far, "body-1");
    submit(fe, "j2", "m", far, "body-2");
    submit(fe, "j3", "m", far, "body-3");
    submit(fe, "j4", "m", far, "body-4"); /* queue holds 2: this one is refused */
    m = expect_msg(wk, 500);
    CHECK(m && m->cmd == SB_CMD_JOB);
    CHECK_STR(sb_wire_header_str(m, "job_id"), "j1");
    CHECK(m && zframe_size(m->body) == 6 && memcmp(zframe_data(m->body), "body-1", 6) == 0);
    sb_wire_msg_destroy(&m);
    m = expect_msg(fe, 500);
    check_error(m, "j4", 429, "queue_full");
    sb_wire_msg_destroy(&m);
    CHECK_INT(bk_broker_queued(broker, "m"), 2);
    /* Credits are never exceeded: no second JOB while j1 runs. */
    CHECK(expect_msg(wk, 100) == NULL);

    /* Events are forwarded untouched; the final one frees the credit. */
    event(wk, "j1", false, "delta");
    m = expect_msg(fe, 500);
    CHECK(m && m->cmd == SB_CMD_EVENT && !sb_wire_header_bool(m, "final"));
    CHECK(m && zframe_size(m->body) == 5 && memcmp(zframe_data(m->body), "delta", 5) == 0);
    sb_wire_msg_destroy(&m);
    event(wk, "j1", true, "done");
    m = expect_msg(fe, 500);
    CHECK(m && sb_wire_header_bool(m, "final"));
    sb_wire_msg_destroy(&m);
    m = expect_msg(wk, 500);
    CHECK(m && m->cmd == SB_CMD_JOB);
    CHECK_STR(sb_wire_header_str(m, "job_id"), "j2");
    sb_wire_msg_destroy(&m);

    /* Cancelling a queued job drops it; cancelling a running one reaches the worker. */
    json_t *h = json_pack("{s:s}", "job_id", "j3");
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_CANCEL, h, NULL, 0), 0);
    json_decref(h);
    pump(30);
    CHECK_INT(bk_broker_queued(broker, "m"), 0);
    h = json_pack("{s:s}", "job_id", "j2");
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_CANCEL, h, NULL, 0), 0);
    json_decref(h);
    m = expect_msg(wk, 500);
    CHECK(m && m->cmd == SB_CMD_CANCEL);
    CHECK_STR(sb_wire_header_str(m, "job_id"), "j2");
    sb_wire_msg_destroy(&m);
    event(wk, "j2", true, "cancelled"); /* the worker's final: dropped, credit back */
    pump(30);
    CHECK(expect_msg(fe, 50) == NULL);

    /* A queued job past its deadline: 504. */
    submit(fe, "j5", "m", far, "long");
    m = expect_msg(wk, 500);
    CHECK(m && m->cmd == SB_CMD_JOB);
    sb_wire_msg_destroy(&m);
    submit(fe, "j6", "m", sb_now_ms() + 60, "short");
    m = expect_msg(fe, 1000);
    check_error(m, "j6", 504, "deadline_exceeded");
    sb_wire_msg_destroy(&m);

    /* The worker falls silent: its running job fails with 502 within liveness. */
    int64_t t0 = sb_mono_ms();
    m = expect_msg(fe, 2000);
    check_error(m, "j5", 502, "worker_lost");
    CHECK(sb_mono_ms() - t0 < 1000);
    sb_wire_msg_destroy(&m);
    CHECK_INT(bk_broker_workers(broker), 0);

    /* An unknown worker's heartbeat is answered with RECONNECT. */
    CHECK_INT(sb_wire_send(wk, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    m = expect_msg(wk, 500);
    CHECK(m && m->cmd == SB_CMD_RECONNECT);
    sb_wire_msg_destroy(&m);

    /* Malformed input is dropped without harm. */
    zstr_send(fe, "garbage");
    zstr_sendx(wk, "\x01", "not msgpack", NULL);
    json_t *bad = json_pack("{s:i}", "job_id", 7);
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_SUBMIT, bad, "x", 1), 0);
    json_decref(bad);
    pump(50);
    /* Still serving. */
    ready(wk, "*", 4);
    submit(fe, "j7", "any-model", far, "b");
    m = expect_msg(wk, 500);
    CHECK(m && m->cmd == SB_CMD_JOB);
    sb_wire_msg_destroy(&m);
    /* The frontend heartbeat is answered. */
    CHECK_INT(sb_wire_send(fe, NULL, SB_CMD_HEARTBEAT, NULL, NULL, 0), 0);
    int64_t end = sb_mono_ms() + 500;
    bool got_hb = false;
    while (!got_hb && sb_mono_ms() < end) {
        (void)bk_broker_step(broker, 5);
        if (sb_wire_recv(fe, false, &m) == 0) {
            got_hb = m->cmd == SB_CMD_HEARTBEAT;
            sb_wire_msg_destroy(&m);
        }
    }
    CHECK(got_hb);

    zsock_destroy(&fe);
    zsock_destroy(&wk);
    bk_broker_destroy(&broker);
    return sb_test_finish("broker");
}
