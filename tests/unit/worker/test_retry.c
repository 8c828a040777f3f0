/*
 * test_retry: the worker's retry policy (worker/retry.h): which attempt
 * endings are transient and what they say about the route, the backoff
 * window, full jitter and Retry-After as a floor.
 */
#include <stdint.h>

#include "retry.h"
#include "sb_event.h"
#include "sb_test.h"

/* outcome/status/final -> route and transient. */
static void check_class(enum sb_upstream_outcome outcome, long status, json_t *final, enum sb_retry_route route,
                        bool transient, int line)
{
    sb_retry_verdict_t v = sb_retry_classify(outcome, status, final);
    sb_test_checks++;
    if (v.route != route || v.transient != transient) {
        sb_test_failures++;
        fprintf(stderr, "%s:%d: classify(%d, %ld): route %d transient %d, want %d %d\n", __FILE__, line, (int)outcome,
                status, (int)v.route, (int)v.transient, (int)route, (int)transient);
    }
    json_decref(final);
}
#define CLASS(outcome, status, final, route, transient)                                                                \
    check_class((outcome), (status), (final), SB_RETRY_ROUTE_##route, (transient), __LINE__)

static json_t *err(int status, const char *kind)
{
    return sb_event_error(status, kind, NULL, "x");
}

static void test_classify(void)
{
    /* Transport failures: the route failed; all but the total timeout and a
     * body the adapter refused may be retried. */
    CLASS(SB_UPSTREAM_CONNECT_FAILED, 0, err(502, SB_ERR_UPSTREAM), FAILED, true);
    CLASS(SB_UPSTREAM_FAILED, 0, err(502, SB_ERR_UPSTREAM), FAILED, true);
    CLASS(SB_UPSTREAM_FAILED, 200, err(502, SB_ERR_UPSTREAM), FAILED, true); /* reset mid-body */
    CLASS(SB_UPSTREAM_TIMEOUT, 0, err(504, SB_ERR_TIMEOUT), FAILED, false);
    CLASS(SB_UPSTREAM_ABORTED, 200, err(502, SB_ERR_UPSTREAM), FAILED, false);
    /* Statuses that are worth another try. */
    long transient_failed[] = {408, 500, 502, 503, 504, 529};
    for (size_t i = 0; i < sizeof transient_failed / sizeof transient_failed[0]; i++)
        CLASS(SB_UPSTREAM_OK, transient_failed[i], err(503, SB_ERR_OVERLOADED), FAILED, true);
    /* 429: busy, not broken; retried unless it is about quota. */
    CLASS(SB_UPSTREAM_OK, 429, err(429, SB_ERR_RATE_LIMIT), OK, true);
    CLASS(SB_UPSTREAM_OK, 429, err(429, SB_ERR_QUOTA), OK, false);
    /* Other 4xx: the request's fault; the upstream answered. */
    long fault[] = {400, 401, 403, 404, 409, 413, 422};
    for (size_t i = 0; i < sizeof fault / sizeof fault[0]; i++)
        CLASS(SB_UPSTREAM_OK, fault[i], err(400, SB_ERR_INVALID_REQUEST), OK, false);
    /* Other 5xx and odd statuses: failed, not retried. */
    CLASS(SB_UPSTREAM_OK, 501, err(502, SB_ERR_UPSTREAM), FAILED, false);
    CLASS(SB_UPSTREAM_OK, 505, err(502, SB_ERR_UPSTREAM), FAILED, false);
    CLASS(SB_UPSTREAM_OK, 302, err(502, SB_ERR_UPSTREAM), FAILED, false);
    CLASS(SB_UPSTREAM_OK, 0, NULL, FAILED, false);
    /* 2xx: ok, unless the body was unusable (a 5xx the adapter made). */
    CLASS(SB_UPSTREAM_OK, 200, sb_event_completed("completed", NULL, "m", 1), OK, false);
    CLASS(SB_UPSTREAM_OK, 200, err(400, SB_ERR_INVALID_REQUEST), OK, false);
    CLASS(SB_UPSTREAM_OK, 200, err(429, SB_ERR_RATE_LIMIT), OK, false);
    CLASS(SB_UPSTREAM_OK, 200, err(502, SB_ERR_UPSTREAM), FAILED, false);
    CLASS(SB_UPSTREAM_OK, 201, err(503, SB_ERR_OVERLOADED), FAILED, false);
}

static void test_window(void)
{
    CHECK_INT(sb_retry_window_ms(1, 250, 4000), 500);
    CHECK_INT(sb_retry_window_ms(2, 250, 4000), 1000);
    CHECK_INT(sb_retry_window_ms(3, 250, 4000), 2000);
    CHECK_INT(sb_retry_window_ms(4, 250, 4000), 4000);
    CHECK_INT(sb_retry_window_ms(5, 250, 4000), 4000);
    CHECK_INT(sb_retry_window_ms(1000000, 250, 4000), 4000); /* no overflow */
    CHECK_INT(sb_retry_window_ms(1, 250, 300), 300);
    CHECK_INT(sb_retry_window_ms(1, 0, 4000), 0);
    CHECK_INT(sb_retry_window_ms(1, INT64_MAX / 2, INT64_MAX), INT64_MAX - 1);
}

static void test_backoff(void)
{
    /* Full jitter: every delay inside [0, window], spread over it. */
    int64_t lo = INT64_MAX, hi = -1;
    bool inside = true;
    for (int i = 0; i < 2000; i++) {
        int64_t d = sb_retry_backoff_ms(2, 250, 4000, -1);
        inside &= d >= 0 && d <= 1000;
        lo = d < lo ? d : lo;
        hi = d > hi ? d : hi;
    }
    CHECK(inside);
    CHECK(lo < 100);
    CHECK(hi > 900);
    /* Retry-After is a floor, even above the cap. */
    bool floor_ok = true;
    for (int i = 0; i < 200; i++) {
        floor_ok &= sb_retry_backoff_ms(1, 250, 4000, 1) >= 1000;
        floor_ok &= sb_retry_backoff_ms(1, 250, 4000, 30) == 30000;
        int64_t d = sb_retry_backoff_ms(1, 250, 4000, 0);
        floor_ok &= d >= 0 && d <= 500;
    }
    CHECK(floor_ok);
    CHECK_INT(sb_retry_backoff_ms(1, 0, 0, -1), 0);
}

int main(void)
{
    test_classify();
    test_window();
    test_backoff();
    return sb_test_finish("retry");
}
