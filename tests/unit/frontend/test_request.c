/*
 * Unit tests for fe_request's lifecycle: the one state setter, the cleanup
 * hooks (run once when the request ends, newest first, before its log row;
 * added after the end, at once; one may hold the request), and the free at
 * a safe point (fe_request_release only marks; the reap frees, after the
 * loop iteration). A request is built by hand: no connection, so its reply
 * goes nowhere, as for a client that has left.
 */
#include <event2/event.h>
#include <stdlib.h>
#include <string.h>

#include "fe_request.h"
#include "sb_alloc.h"
#include "sb_test.h"

static struct event_base *base;
static fe_server_t srv;

/* What the cleanups saw, in the order they ran. */
static char trace[64];
static int ran;

static void record(fe_request_t *r, void *arg)
{
    size_t n = strlen(trace);
    if (n + 1 < sizeof trace) {
        trace[n] = *(const char *)arg;
        trace[n + 1] = '\0';
    }
    ran++;
    CHECK(r->state == FE_REQ_DONE); /* they run once the request has ended */
    r->log_tokens_in = 7;           /* and may still fill its log row */
}

/* A cleanup with an asynchronous release: it holds the request. */
static void hold_it(fe_request_t *r, void *arg)
{
    (void)arg;
    fe_request_hold(r);
}

static fe_request_t *new_request(void)
{
    fe_request_t *r = sb_xcalloc(1, sizeof *r);
    r->srv = &srv;
    r->path = sb_xstrdup("/v1/test");
    r->state = FE_REQ_AUTH;
    fe_collect_init(&r->result);
    srv.active_requests++;
    return r;
}

static void on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_request_reap(arg);
}

static void test_state_and_release(void)
{
    fe_request_t *r = new_request();
    fe_request_set_state(r, FE_REQ_MODEL);
    CHECK(r->state == FE_REQ_MODEL);
    fe_request_hold(r);
    CHECK(fe_request_release(r)); /* not ended: the caller goes on */
    fe_request_hold(r);
    fe_request_reply_json(r, 200, json_object()); /* ends it while a step holds it */
    CHECK(r->state == FE_REQ_DONE);
    CHECK(srv.reap_list == NULL);  /* held: not freed */
    CHECK(!fe_request_release(r)); /* ended: the caller stops, r still readable */
    CHECK(r->state == FE_REQ_DONE);
    CHECK(srv.reap_list == r); /* nothing pending: marked for the reap */
    fe_request_reap(&srv);
    CHECK(srv.reap_list == NULL);
    CHECK_INT(srv.active_requests, 0);
}

static void test_cleanups(void)
{
    trace[0] = '\0';
    ran = 0;
    fe_request_t *r = new_request();
    fe_request_cleanup_add(r, record, "a");
    fe_request_cleanup_add(r, record, "b");
    fe_request_cleanup_add(r, record, "c");
    CHECK_INT(ran, 0);
    fe_request_reply_json(r, 200, json_object());
    CHECK_STR(trace, "cba"); /* newest first, once */
    CHECK_INT(r->log_tokens_in, 7);
    fe_request_reply_json(r, 500, json_object()); /* a second end is a no-op */
    CHECK_INT(ran, 3);
    fe_request_cleanup_add(r, record, "d"); /* after the end: at once */
    CHECK_STR(trace, "cbad");
    CHECK(srv.reap_list == r);
    fe_request_reap(&srv);
}

/* A cleanup that holds the request keeps it from the reap until its
 * release; the reap runs after the loop iteration, not inside the call
 * that ended the request. */
static void test_hold_in_cleanup_and_reap_event(void)
{
    srv.reap = event_new(base, -1, 0, on_reap, &srv);
    fe_request_t *r = new_request();
    fe_request_cleanup_add(r, hold_it, NULL);
    fe_request_reply_json(r, 200, json_object());
    CHECK(srv.reap_list == NULL);
    CHECK(!fe_request_release(r));
    CHECK(srv.reap_list == r);
    event_base_loop(base, EVLOOP_NONBLOCK);
    CHECK(srv.reap_list == NULL);
    event_free(srv.reap);
    srv.reap = NULL;
}

int main(void)
{
    base = event_base_new();
    srv.base = base;
    srv.reqlog = fe_reqlog_new(base, NULL, "test"); /* rows stay in its buffer */
    test_state_and_release();
    test_cleanups();
    test_hold_in_cleanup_and_reap_event();
    fe_reqlog_destroy(&srv.reqlog);
    event_base_free(base);
    return sb_test_finish("request");
}
