/*
 * Unit tests for the broker's per-route circuit breaker (broker_breaker.h):
 * the state machine on its own, with the times passed in, and the set of
 * breakers by model. test_broker drives it through a real broker.
 */
#include <stdio.h>
#include <string.h>

#include "broker_breaker.h"
#include "sb_log.h"
#include "sb_test.h"

#define T0 1000000 /* an arbitrary monotonic start */

/* Dispatches one job at now and reports its outcome at once; returns
 * whether that opened the circuit. */
static bool run_job(sb_breaker_t *br, int64_t now, enum sb_breaker_outcome o)
{
    uint64_t t = sb_breaker_on_dispatch(br, now);
    CHECK(t != 0);
    return sb_breaker_on_outcome(br, t, o, now);
}

/* CLOSED counts failures in a row; ok resets; the K-th opens it. */
static void test_counting(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 3, 1000);
    CHECK_STR(sb_breaker_model(br), "m");
    CHECK_INT(sb_breaker_tick(br, T0), SB_BREAKER_CLOSED);
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_failures(br), 2);
    CHECK(!run_job(br, T0, SB_BREAKER_OK)); /* resets */
    CHECK_INT(sb_breaker_failures(br), 0);
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(!run_job(br, T0, SB_BREAKER_NO_OUTCOME)); /* ignored: neither counts nor resets */
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    CHECK(sb_breaker_allow_submit(br, T0, 100));
    CHECK(sb_breaker_allow_dispatch(br, T0));
    CHECK_INT(sb_breaker_retry_after_ms(br, T0), 0);
    CHECK(run_job(br, T0 + 5, SB_BREAKER_FAILED)); /* the third in a row */
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
    CHECK_INT(sb_breaker_failures(br), 3);
    CHECK(!sb_breaker_allow_submit(br, T0 + 5, 0));
    CHECK(!sb_breaker_allow_dispatch(br, T0 + 5));
    CHECK_INT(sb_breaker_retry_after_ms(br, T0 + 5), 1000);
    CHECK_INT(sb_breaker_retry_after_ms(br, T0 + 1004), 1);
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
    /* The cooldown ends exactly at open + cooldown. */
    CHECK_INT(sb_breaker_tick(br, T0 + 1005), SB_BREAKER_HALF_OPEN);
    sb_breaker_destroy(&br);
    CHECK(br == NULL);
    sb_breaker_destroy(&br); /* NULL-safe */

    /* A threshold of 1: the first failure opens. */
    br = sb_breaker_new("m", 1, 1000);
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
    sb_breaker_destroy(&br);
}

/* Retry-After: whole seconds, rounded up, at least 1. */
static void test_retry_after(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 1, 10000);
    CHECK_INT(sb_breaker_retry_after_s(br, T0), 1); /* closed: still >= 1 */
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_retry_after_s(br, T0), 10);
    CHECK_INT(sb_breaker_retry_after_s(br, T0 + 1), 10);
    CHECK_INT(sb_breaker_retry_after_s(br, T0 + 1000), 9);
    CHECK_INT(sb_breaker_retry_after_s(br, T0 + 1001), 9);
    CHECK_INT(sb_breaker_retry_after_s(br, T0 + 9999), 1);
    CHECK_INT(sb_breaker_retry_after_s(br, T0 + 10000), 1); /* half-open now */
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_HALF_OPEN);
    sb_breaker_destroy(&br);
}

/* HALF_OPEN: one job may wait to probe; dispatching it makes it the probe;
 * its ok closes the circuit. */
static void test_probe_ok(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 2, 1000);
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(!sb_breaker_allow_submit(br, T0 + 999, 0));
    CHECK(sb_breaker_allow_submit(br, T0 + 1000, 0));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_HALF_OPEN);
    CHECK(!sb_breaker_allow_submit(br, T0 + 1000, 1)); /* one is already waiting to probe */
    CHECK(sb_breaker_allow_dispatch(br, T0 + 1000));
    uint64_t probe = sb_breaker_on_dispatch(br, T0 + 1000);
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_PROBING);
    CHECK(sb_breaker_is_probe(br, probe));
    CHECK(!sb_breaker_is_probe(br, probe + 1));
    CHECK(!sb_breaker_allow_submit(br, T0 + 1000, 0));
    CHECK(!sb_breaker_allow_dispatch(br, T0 + 1000));
    CHECK_INT(sb_breaker_retry_after_s(br, T0 + 1000), 1);
    CHECK(!sb_breaker_on_outcome(br, probe, SB_BREAKER_OK, T0 + 1500));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    CHECK_INT(sb_breaker_failures(br), 0);
    CHECK(!sb_breaker_is_probe(br, probe));
    /* Counting starts over: one failure does not re-open it. */
    CHECK(!run_job(br, T0 + 1600, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    sb_breaker_destroy(&br);
}

/* A failed probe re-opens the circuit, the cooldown doubling each time up to 8x;
 * a closing resets the backoff. */
static void test_probe_failed_backoff(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 2, 1000);
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    int64_t now = T0;
    static const int64_t cooldowns[] = {1000, 2000, 4000, 8000, 8000, 8000};
    for (size_t i = 0; i < sizeof cooldowns / sizeof cooldowns[0]; i++) {
        CHECK_INT(sb_breaker_retry_after_ms(br, now), cooldowns[i]);
        CHECK_INT(sb_breaker_tick(br, now + cooldowns[i] - 1), SB_BREAKER_OPEN);
        now += cooldowns[i];
        CHECK(sb_breaker_allow_dispatch(br, now));
        uint64_t probe = sb_breaker_on_dispatch(br, now);
        CHECK(sb_breaker_is_probe(br, probe));
        CHECK(sb_breaker_on_outcome(br, probe, SB_BREAKER_FAILED, now)); /* re-opened: returns true */
        CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
        CHECK_INT(sb_breaker_failures(br), 3 + (int)i);
    }
    now += 8000;
    uint64_t probe = sb_breaker_on_dispatch(br, now);
    CHECK(!sb_breaker_on_outcome(br, probe, SB_BREAKER_OK, now));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    /* Open again: back to the configured cooldown. */
    CHECK(!run_job(br, now, SB_BREAKER_FAILED));
    CHECK(run_job(br, now, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_retry_after_ms(br, now), 1000);
    sb_breaker_destroy(&br);
}

/* A probe that ends without an outcome, or is abandoned, lets the next job probe. */
static void test_probe_no_outcome(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 1, 100);
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    uint64_t p1 = sb_breaker_on_dispatch(br, T0 + 100);
    CHECK(sb_breaker_is_probe(br, p1));
    CHECK(!sb_breaker_on_outcome(br, p1, SB_BREAKER_NO_OUTCOME, T0 + 150)); /* e.g. its worker was lost */
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_HALF_OPEN);
    CHECK(sb_breaker_allow_submit(br, T0 + 150, 0));

    uint64_t p2 = sb_breaker_on_dispatch(br, T0 + 160);
    CHECK(sb_breaker_is_probe(br, p2));
    sb_breaker_on_abandon(br, p2 + 7); /* not the probe: nothing */
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_PROBING);
    sb_breaker_on_abandon(br, p2); /* cancelled, or past its deadline */
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_HALF_OPEN);
    CHECK(!sb_breaker_is_probe(br, p2));
    uint64_t p3 = sb_breaker_on_dispatch(br, T0 + 170);
    CHECK(sb_breaker_is_probe(br, p3));
    /* The abandoned probe ends later, whatever it says: the new probe stays out. */
    CHECK(!sb_breaker_on_outcome(br, p2, SB_BREAKER_FAILED, T0 + 180));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_PROBING);
    CHECK(!sb_breaker_on_outcome(br, p3, SB_BREAKER_OK, T0 + 190));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    sb_breaker_destroy(&br);
}

/* Jobs dispatched before the circuit opened: their outcomes are ignored while
 * it is open (an ok does not close it) and after it closed again. */
static void test_stale_outcomes(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 2, 1000);
    uint64_t old1 = sb_breaker_on_dispatch(br, T0);
    uint64_t old2 = sb_breaker_on_dispatch(br, T0);
    uint64_t old3 = sb_breaker_on_dispatch(br, T0);
    uint64_t old4 = sb_breaker_on_dispatch(br, T0);
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(!sb_breaker_on_outcome(br, old1, SB_BREAKER_OK, T0 + 10));
    CHECK(!sb_breaker_on_outcome(br, old2, SB_BREAKER_FAILED, T0 + 10));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
    CHECK_INT(sb_breaker_failures(br), 2);
    CHECK_INT(sb_breaker_retry_after_ms(br, T0 + 10), 990); /* not extended either */
    uint64_t probe = sb_breaker_on_dispatch(br, T0 + 1000);
    CHECK(!sb_breaker_on_outcome(br, old3, SB_BREAKER_OK, T0 + 1001)); /* not the probe */
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_PROBING);
    CHECK(!sb_breaker_on_outcome(br, probe, SB_BREAKER_OK, T0 + 1002));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    CHECK(!sb_breaker_on_outcome(br, old4, SB_BREAKER_FAILED, T0 + 1003));
    CHECK_INT(sb_breaker_failures(br), 0);
    sb_breaker_destroy(&br);
}

/* The set: disabled holds nothing; breakers are created on demand, pruned
 * once they have nothing to remember, and described for the status log. */
static void test_set(void)
{
    sb_breakers_t *bs = sb_breakers_new(0, 1000);
    CHECK(!sb_breakers_enabled(bs));
    CHECK(sb_breakers_get(bs, "m") == NULL);
    CHECK(sb_breakers_find(bs, "m") == NULL);
    sb_breakers_destroy(&bs);
    CHECK(bs == NULL);
    sb_breakers_destroy(&bs);

    bs = sb_breakers_new(1, 1000);
    CHECK(sb_breakers_enabled(bs));
    CHECK(sb_breakers_find(bs, "a") == NULL);
    sb_breaker_t *a = sb_breakers_get(bs, "a");
    CHECK(a != NULL && sb_breakers_get(bs, "a") == a && sb_breakers_find(bs, "a") == a);
    sb_breaker_t *b = sb_breakers_get(bs, "b");
    sb_breaker_t *c = sb_breakers_get(bs, "c");
    sb_breaker_t *d = sb_breakers_get(bs, "d");
    uint64_t tb = sb_breaker_on_dispatch(b, T0); /* outstanding: kept */
    CHECK(run_job(c, T0, SB_BREAKER_FAILED));    /* open: kept */
    CHECK(run_job(d, T0, SB_BREAKER_FAILED));
    char buf[256];
    CHECK_INT(sb_breakers_describe(bs, T0, buf, sizeof buf), 2);
    CHECK(strstr(buf, " c=open(1s)") != NULL);
    CHECK(strstr(buf, " d=open(1s)") != NULL);
    sb_breakers_prune(bs);
    CHECK(sb_breakers_find(bs, "a") == NULL);
    CHECK(sb_breakers_find(bs, "b") == b);
    CHECK(sb_breakers_find(bs, "c") == c);
    /* The tick moves open circuits on without a job. */
    sb_breakers_tick(bs, T0 + 1000);
    CHECK_INT(sb_breaker_state_of(c), SB_BREAKER_HALF_OPEN);
    (void)sb_breaker_on_dispatch(d, T0 + 1000);
    CHECK_INT(sb_breakers_describe(bs, T0 + 1000, buf, sizeof buf), 2);
    CHECK(strstr(buf, " c=half-open") != NULL);
    CHECK(strstr(buf, " d=probing") != NULL);
    /* Truncated, not overrun. */
    char small[12];
    CHECK_INT(sb_breakers_describe(bs, T0 + 1000, small, sizeof small), 2);
    CHECK_INT(strlen(small), sizeof small - 1);
    CHECK(!strcmp(small + sizeof small - 5, " ..."));
    CHECK(!sb_breaker_on_outcome(b, tb, SB_BREAKER_OK, T0 + 1000));
    sb_breakers_prune(bs);
    CHECK(sb_breakers_find(bs, "b") == NULL);
    CHECK_INT(sb_breakers_describe(bs, T0 + 1000, buf, sizeof buf), 2);
    sb_breakers_destroy(&bs); /* frees the rest, outstanding tickets or not */
}

int main(void)
{
    sb_log_init("test_breaker");
    test_counting();
    test_retry_after();
    test_probe_ok();
    test_probe_failed_backoff();
    test_probe_no_outcome();
    test_stale_outcomes();
    test_set();
    return sb_test_finish("breaker");
}
