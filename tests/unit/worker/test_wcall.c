/*
 * test_wcall: one upstream call's life (wcall.c), against the fake broker and
 * upstream of sb_worker_test.h: deadlines and timeouts, unreachable and
 * failing upstreams, the stream idle timer, and retries (backoff,
 * Retry-After, the deadline, cancel, the retry budget, fan-out calls).
 */
#include "sb_worker_test.h"

/*
 * Upstream resilience: retries, the retry budget, route outcomes, context
 * errors. The worker here retries after 20..80 ms (retry_base_ms 20,
 * retry_cap_ms 80) up to twice per call, within a budget of 0.2 retries per
 * call and route, which starts empty: a test earns its route one retry with
 * five "warm" calls first.
 */

static void test_deadline(void)
{
    int want = srv_n + 1;
    send_job("job_deadline", make_job("openai-chat", "hang", srv_port, NULL), sb_now_ms() + 300);
    CHECK(run_until(has_final, "job_deadline", 3000));
    check_final_error("job_deadline", 504, "timeout", "timeout: upstream did not answer within ");
    CHECK_STR(final_upstream("job_deadline"), "failed");
    CHECK(srv_n == want);
    CHECK(run_until(rec_closed, &srv_recs[want - 1], 3000));
    /* Already past its deadline: refused without an upstream request. */
    send_job("job_late", make_job("openai-chat", "fast", srv_port, NULL), sb_now_ms() - 1);
    CHECK(run_until(has_final, "job_late", 3000));
    check_final_error("job_late", 504, "timeout", "timeout: ");
    CHECK_STR(final_upstream("job_late"), ""); /* never reached it */
    CHECK_INT(srv_n, want);
}

static void test_unreachable(void)
{
    /* A port that was just free: connection refused. */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    bind(fd, (struct sockaddr *)&sin, sizeof sin);
    socklen_t sl = sizeof sin;
    getsockname(fd, (struct sockaddr *)&sin, &sl);
    close(fd);
    send_job("job_unreach", make_job("openai-chat", "fast", ntohs(sin.sin_port), NULL), 0);
    CHECK(run_until(has_final, "job_unreach", 7000));
    check_final_error("job_unreach", 502, "upstream_error", "upstream connection failed");
    CHECK_STR(final_upstream("job_unreach"), "failed");
}

static void test_upstream_errors(void)
{
    send_job("job_429", make_job("openai-chat", "ratelimit", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_429", 3000));
    check_final_error("job_429", 429, "rate_limit", "Rate limit reached for requests");
    const got_event_t *g = final_of("job_429");
    CHECK(g && json_integer_value(json_object_get(g->ev, "retry_after")) == 3);
    CHECK_STR(final_upstream("job_429"), "ok"); /* busy, not broken */

    send_job("job_404", make_job("openai-chat", "nope", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_404", 3000));
    check_final_error("job_404", 404, "not_found", "no such model");
    CHECK_STR(final_upstream("job_404"), "ok");
}

/* A streamed job whose upstream sends nothing is ended by the stream idle
 * timeout (300 ms here) with a 504, and its upstream request is closed. */
static void test_stream_idle(sb_worker_t *w)
{
    int want = srv_n + 1;
    json_t *job = make_job("openai-chat", "hang", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    int64_t t0 = sb_mono_ms();
    send_job("job_stream_idle", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_stream_idle", 3000));
    int64_t took = sb_mono_ms() - t0;
    check_final_error("job_stream_idle", 504, "timeout", "timeout: the upstream stream sent nothing for 300 ms");
    CHECK_STR(final_upstream("job_stream_idle"), "failed");
    CHECK(took >= 250 && took < 2000);
    CHECK(srv_n == want);
    CHECK(run_until(rec_closed, &srv_recs[want - 1], 3000));
    CHECK_INT(sb_worker_inflight(w), 0);
    /* A job that does not stream has no idle limit, only its timeout. */
    send_job("job_nostream_slow", make_job("openai-chat", "slow300", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_nostream_slow", 3000));
    check_completed("job_nostream_slow");
}

/* A 503 is retried once the route has a token, and the client sees only
 * the answer of the attempt that worked. Without a token it is not. */
static void test_retry_503(void)
{
    warm_route("fail503_once_a", srv_port);
    int first = srv_n;
    send_job("job_r503", make_job("openai-chat", "fail503_once_a", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_r503", 3000));
    check_completed("job_r503");
    CHECK_INT(srv_n, first + 2);
    CHECK_INT(count_events("job_r503"), 5);
    CHECK_STR(job_text("job_r503", 0), "Hello!");
    CHECK_STR(final_upstream("job_r503"), "ok");
    if (srv_n == first + 2) /* the same request again */
        CHECK(json_equal(srv_recs[first].body, srv_recs[first + 1].body));

    /* A route nobody has called yet has no budget: no retry. */
    first = srv_n;
    send_job("job_r503_cold", make_job("openai-chat", "fail503_once_b", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_r503_cold", 3000));
    check_final_error("job_r503_cold", 503, "overloaded", "The engine is currently overloaded");
    CHECK_STR(final_upstream("job_r503_cold"), "failed");
    run_for(200);
    CHECK_INT(srv_n, first + 1);
}

/* A streamed job is retried too while nothing of it has been sent. */
static void test_retry_stream_before_events(void)
{
    warm_route("fail503_once_c", srv_port);
    int first = srv_n;
    json_t *job = make_job("openai-chat", "fail503_once_c", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_r503_stream", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_r503_stream", 3000));
    check_completed("job_r503_stream");
    CHECK_INT(srv_n, first + 2);
    CHECK_STR(job_text("job_r503_stream", 0), "Hello!");
}

/* ... but not once the client has seen an event: a stream that breaks after
 * its first chunk ends with an error, after what was sent. */
static void test_no_retry_after_events(void)
{
    warm_route("stream_reset_a", srv_port);
    int first = srv_n;
    json_t *job = make_job("openai-chat", "stream_reset_a", srv_port, NULL);
    json_object_set_new((json_t *)sb_job_request(job), "stream", json_true());
    send_job("job_stream_reset", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_stream_reset", 3000));
    CHECK(count_events("job_stream_reset") >= 2); /* item_added, text_delta "Hel" */
    const got_event_t *g = final_of("job_stream_reset");
    CHECK(g && sb_event_type_of(g->ev) == SB_EV_ERROR);
    CHECK(g && json_integer_value(json_object_get(g->ev, "status")) == 502);
    CHECK_STR(final_upstream("job_stream_reset"), "failed");
    run_for(300);
    CHECK_INT(srv_n, first + 1);
}

/* A connection closed without a reply is retried. The listener closes every
 * connection after its answer, so the first attempt was on a fresh one and
 * curl did not re-send it by itself: the second request is the worker's. */
static void test_retry_reset(void)
{
    warm_route("reset_once_a", srv_fresh_port);
    int first = srv_n;
    send_job("job_reset", make_job("openai-chat", "reset_once_a", srv_fresh_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_reset", 3000));
    check_completed("job_reset");
    CHECK_INT(srv_n, first + 2);
    CHECK_STR(final_upstream("job_reset"), "ok");
    if (srv_n == first + 2)
        CHECK(srv_recs[first].peer_port != srv_recs[first + 1].peer_port);
}

/* Retry-After is the floor of the delay. */
static void test_retry_after(void)
{
    warm_route("ratelimit_once_a", srv_port);
    int first = srv_n;
    send_job("job_ra", make_job("openai-chat", "ratelimit_once_a", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_ra", 4000));
    check_completed("job_ra");
    CHECK_INT(srv_n, first + 2);
    if (srv_n == first + 2) {
        int64_t gap_ms = (srv_recs[first + 1].recv_us - srv_recs[first].reply_us) / 1000;
        /* 10 ms of slack: libevent may time with a coarse clock, a tick
         * behind the one sb_mono_us reads. */
        CHECK(gap_ms >= 990);
        CHECK(gap_ms < 1500); /* Retry-After, not Retry-After on top of a backoff of seconds */
        if (gap_ms < 990 || gap_ms >= 1500)
            fprintf(stderr, "  retry came %lld ms after the 429\n", (long long)gap_ms);
    }
}

/* No retry that would start past the deadline: the 429 goes to the client
 * at once rather than after a 1 s wait the client cannot afford. */
static void test_retry_deadline(void)
{
    warm_route("ratelimit_once_b", srv_port);
    int first = srv_n;
    int64_t t0 = sb_mono_ms();
    send_job("job_ra_late", make_job("openai-chat", "ratelimit_once_b", srv_port, NULL), sb_now_ms() + 700);
    CHECK(run_until(has_final, "job_ra_late", 3000));
    CHECK(sb_mono_ms() - t0 < 500);
    check_final_error("job_ra_late", 429, "rate_limit", "Rate limit reached for requests");
    CHECK_STR(final_upstream("job_ra_late"), "ok");
    run_for(1200);
    CHECK_INT(srv_n, first + 1);

    /* A retry's transfer gets what is left before the deadline, not the
     * route's 10 s: a retry that hangs ends at the job's deadline. */
    warm_route("fail503_hang_a", srv_port);
    first = srv_n;
    t0 = sb_mono_ms();
    send_job("job_retry_hang", make_job("openai-chat", "fail503_hang_a", srv_port, NULL), sb_now_ms() + 800);
    CHECK(run_until(has_final, "job_retry_hang", 3000));
    int64_t took = sb_mono_ms() - t0;
    check_final_error("job_retry_hang", 504, "timeout", "timeout: upstream did not answer within ");
    CHECK(took >= 700 && took < 1500);
    CHECK_STR(final_upstream("job_retry_hang"), "failed");
    CHECK_INT(srv_n, first + 2);
    /* "... within <ms> ms": the retry's timeout, cut to the deadline: at
     * most the 800 ms the job had (all of it when the first attempt took
     * under a millisecond), never the route's 10 s. */
    const got_event_t *g = final_of("job_retry_hang");
    static const char prefix[] = "timeout: upstream did not answer within ";
    const char *msg = g ? json_string_value(json_object_get(g->ev, "message")) : NULL;
    long long ms = msg && !strncmp(msg, prefix, sizeof prefix - 1) ? strtoll(msg + sizeof prefix - 1, NULL, 10) : 0;
    CHECK(ms > 0 && ms <= 800);
    if (srv_n == first + 2)
        CHECK(run_until(rec_closed, &srv_recs[first + 1], 3000));
}

/* A cancel while a retry waits: the retry never happens. */
static void test_retry_cancel(void)
{
    warm_route("ratelimit_once_c", srv_port);
    int first = srv_n, want = srv_n + 1;
    send_job("job_ra_cancel", make_job("openai-chat", "ratelimit_once_c", srv_port, NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_requests, &want, 3000));
    run_for(200); /* the 429 is in; the retry waits out Retry-After: 1 */
    CHECK(!has_final("job_ra_cancel"));
    broker_send(SB_CMD_CANCEL, json_pack("{s:s}", "job_id", "job_ra_cancel"), NULL);
    CHECK(run_until(has_final, "job_ra_cancel", 3000));
    check_final_error("job_ra_cancel", 499, "cancelled", "job cancelled");
    CHECK_STR(final_upstream("job_ra_cancel"), "");
    run_for(1200);
    CHECK_INT(srv_n, first + 1);
}

/* N jobs against an upstream that always fails: at most 1.2 N requests
 * (the budget), at least N, and the budget is used (a retry happened). */
static void test_retry_budget(void)
{
    enum { N = 10 };
    int first = srv_n;
    for (int i = 0; i < N; i++) {
        char id[32];
        snprintf(id, sizeof id, "job_down_%d", i);
        send_job(id, make_job("openai-chat", "fail503_always", srv_port, NULL), sb_now_ms() + 5000);
        CHECK(run_until(has_final, id, 3000));
        check_final_error(id, 503, "overloaded", "The engine is currently overloaded");
        CHECK_STR(final_upstream(id), "failed");
    }
    run_for(200);
    int requests = srv_n - first;
    CHECK(requests >= N);
    CHECK(requests <= N * 12 / 10);
    CHECK(requests > N);
    if (requests <= N || requests > N * 12 / 10)
        fprintf(stderr, "  %d jobs made %d upstream requests\n", N, requests);
}

/* Each call of a fan-out retries on its own, even after another choice has
 * finished (a non-streamed job has sent nothing yet). */
static void test_retry_fanout(void)
{
    warm_route("fail503_second_a", srv_port);
    int first = srv_n;
    json_t *job = make_job("openai-chat", "fail503_second_a", srv_port, NULL);
    set_n(job, 3, "{\"n\":false}");
    send_job("job_fan_retry", job, sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_fan_retry", 3000));
    check_completed("job_fan_retry");
    CHECK_INT(srv_n, first + 4);
    for (int k = 0; k < 3; k++)
        CHECK(job_text("job_fan_retry", k) && !strncmp(job_text("job_fan_retry", k), "Hello ", 6));
    CHECK_STR(final_upstream("job_fan_retry"), "ok");
}

/* The upstream's context-length error is the canonical one; never retried. */
static void test_context_exceeded(void)
{
    warm_route("ctx_exceeded", srv_port);
    int first = srv_n;
    send_job("job_ctx", make_job("openai-chat", "ctx_exceeded", srv_port, NULL), 0);
    CHECK(run_until(has_final, "job_ctx", 3000));
    check_final_error("job_ctx", 400, "invalid_request",
                      "context length exceeded: This model's maximum context length is 8192 tokens.");
    const got_event_t *g = final_of("job_ctx");
    CHECK(g && !strcmp(json_string_value(json_object_get(g->ev, "code")) ?: "", "context_length_exceeded"));
    CHECK_STR(final_upstream("job_ctx"), "ok");
    run_for(100);
    CHECK_INT(srv_n, first + 1);
}

/* A host that takes no connections fails within the connect timeout (500 ms
 * here), not the route's 10 s, as a connection failure. */
static void test_connect_timeout(void)
{
    /* A listener whose accept queue is full: the kernel drops new SYNs. */
    int lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(bind(lfd, (struct sockaddr *)&sin, sizeof sin) == 0);
    CHECK(listen(lfd, 0) == 0);
    socklen_t sl = sizeof sin;
    getsockname(lfd, (struct sockaddr *)&sin, &sl);
    int fill[3];
    for (int i = 0; i < 3; i++) {
        fill[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
        connect(fill[i], (struct sockaddr *)&sin, sizeof sin);
    }
    run_for(50);
    int64_t t0 = sb_mono_ms();
    send_job("job_blackhole", make_job("openai-chat", "fast", ntohs(sin.sin_port), NULL), sb_now_ms() + 5000);
    CHECK(run_until(has_final, "job_blackhole", 4000));
    int64_t took = sb_mono_ms() - t0;
    check_final_error("job_blackhole", 502, "upstream_error", "upstream connection failed");
    CHECK(took >= 400 && took < 2000);
    CHECK_STR(final_upstream("job_blackhole"), "failed");
    for (int i = 0; i < 3; i++)
        close(fill[i]);
    close(lfd);
}

int main(void)
{
    sb_worker_t *w = sb_wt_start();
    test_deadline();
    test_unreachable();
    test_upstream_errors();
    test_stream_idle(w);
    test_retry_503();
    test_retry_stream_before_events();
    test_no_retry_after_events();
    test_retry_reset();
    test_retry_after();
    test_retry_deadline();
    test_retry_cancel();
    test_retry_budget();
    test_retry_fanout();
    test_context_exceeded();
    test_connect_timeout();
    return sb_wt_finish(&w, "wcall");
}
