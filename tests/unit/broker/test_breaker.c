/*
 * Unit tests for the broker's circuit breakers (broker_breaker.h): the state
 * machine on its own, with the times passed in, the model-wide breaker's
 * fairness to clients, and the set of breakers by model and by client. test_broker drives it through a real broker.
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

/* Dispatches one job of client at now and reports its outcome from that
 * client; returns whether that opened the circuit. */
static bool run_job_from(sb_breaker_t *br, const char *client, int64_t now, enum sb_breaker_outcome o)
{
    uint64_t t = sb_breaker_on_dispatch(br, now);
    CHECK(t != 0);
    return sb_breaker_on_outcome_from(br, t, o, client, now);
}

/* The model-wide breaker is fair: one client's failures, however many, never
 * open it; each client counts for at most ceil(K/2) of the K; failures from
 * two clients in a row do; any ok starts the count over. */
static void test_model_wide_fair(void)
{
    sb_breaker_t *br = sb_breaker_new("m", 5, 1000);
    CHECK(sb_breaker_client(br) == NULL);
    for (int i = 0; i < 20; i++)
        CHECK(!run_job_from(br, "key:1", T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    CHECK_INT(sb_breaker_failures(br), 20);
    /* key:1 counts 3 of the 5: one failure of key:2 is not enough... */
    CHECK(!run_job_from(br, "key:2", T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    /* ...two are: the route fails for two clients in a row. */
    CHECK(run_job_from(br, "key:2", T0 + 1, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
    CHECK_INT(sb_breaker_failures(br), 22);
    CHECK(!sb_breaker_allow_submit(br, T0 + 1, 0));
    /* The probe (anyone's) closes it; the count starts over. */
    uint64_t probe = sb_breaker_on_dispatch(br, T0 + 1001);
    CHECK(!sb_breaker_on_outcome_from(br, probe, SB_BREAKER_OK, "key:9", T0 + 1002));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_CLOSED);
    /* An ok from any client resets the run, weights included. */
    CHECK(!run_job_from(br, "key:1", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:1", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:2", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:3", T0 + 1003, SB_BREAKER_OK));
    CHECK_INT(sb_breaker_failures(br), 0);
    CHECK(!run_job_from(br, "key:2", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:3", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:4", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:5", T0 + 1003, SB_BREAKER_FAILED));
    CHECK(run_job_from(br, "key:6", T0 + 1003, SB_BREAKER_FAILED)); /* five clients, one each */
    sb_breaker_destroy(&br);

    /* K = 1: one client alone never opens it; a second one does. */
    br = sb_breaker_new("m", 1, 1000);
    CHECK(!run_job_from(br, "key:1", T0, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:1", T0, SB_BREAKER_FAILED));
    CHECK(run_job_from(br, "key:2", T0, SB_BREAKER_FAILED));
    sb_breaker_destroy(&br);

    /* Jobs without a client cannot be told apart: they keep the plain rule
     * (K in a row), and mixed with a named client they count in full. */
    br = sb_breaker_new("m", 3, 1000);
    CHECK(!run_job_from(br, "key:1", T0, SB_BREAKER_FAILED));
    CHECK(!run_job_from(br, "key:1", T0, SB_BREAKER_FAILED)); /* capped at 2 of 3 */
    CHECK(run_job_from(br, NULL, T0, SB_BREAKER_FAILED));
    sb_breaker_destroy(&br);
}

/* A client's breaker counts that client's failures and opens for it. */
static void test_client_breaker(void)
{
    sb_breaker_t *br = sb_breaker_new_client("m", "key:7", 3, 1000);
    CHECK_STR(sb_breaker_client(br), "key:7");
    CHECK_STR(sb_breaker_model(br), "m");
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(!run_job(br, T0, SB_BREAKER_FAILED));
    CHECK(run_job(br, T0, SB_BREAKER_FAILED));
    CHECK_INT(sb_breaker_state_of(br), SB_BREAKER_OPEN);
    CHECK_INT(sb_breaker_retry_after_ms(br, T0), 1000);
    /* Probes and backoff as for the model-wide one. */
    uint64_t probe = sb_breaker_on_dispatch(br, T0 + 1000);
    CHECK(sb_breaker_is_probe(br, probe));
    CHECK(sb_breaker_on_outcome(br, probe, SB_BREAKER_FAILED, T0 + 1000));
    CHECK_INT(sb_breaker_retry_after_ms(br, T0 + 1000), 2000);
    sb_breaker_destroy(&br);
}

/* Per-client breakers in the set: by (model, client), apart from the
 * model-wide ones; pruned alike; capped, the least recently used one with no
 * ticket outstanding dropped first; described with their client. */
static void test_set_clients(void)
{
    sb_breakers_t *bs = sb_breakers_new(0, 1000);
    CHECK(sb_breakers_get_client(bs, "m", "key:1") == NULL); /* disabled */
    sb_breakers_destroy(&bs);

    bs = sb_breakers_new(1, 1000);
    CHECK(sb_breakers_get_client(bs, "m", NULL) == NULL);
    CHECK(sb_breakers_find_client(bs, "m", NULL) == NULL);
    CHECK(sb_breakers_find_client(bs, "m", "key:1") == NULL);
    sb_breaker_t *a = sb_breakers_get_client(bs, "m", "key:1");
    CHECK(a != NULL && sb_breakers_find_client(bs, "m", "key:1") == a);
    CHECK(sb_breakers_get_client(bs, "m", "key:1") == a);
    CHECK(sb_breakers_find(bs, "m") == NULL); /* not the model-wide one */
    /* The key cannot be spelt by another (model, client) pair. */
    sb_breaker_t *a2 = sb_breakers_get_client(bs, "1m", "key:");
    CHECK(a2 != NULL && a2 != a);
    sb_breaker_t *other = sb_breakers_get_client(bs, "n", "key:1");
    CHECK(other != a && other != a2);
    CHECK_INT(sb_breakers_clients(bs), 3);
    CHECK(run_job(a, T0, SB_BREAKER_FAILED)); /* open for key:1 on m */
    char buf[256];
    CHECK_INT(sb_breakers_describe(bs, T0, buf, sizeof buf), 1);
    CHECK_STR(buf, " m[key:1]=open(1s)");
    sb_breakers_prune(bs);
    CHECK_INT(sb_breakers_clients(bs), 1);
    CHECK(sb_breakers_find_client(bs, "m", "key:1") == a);
    CHECK(sb_breakers_find_client(bs, "n", "key:1") == NULL);

    /* The cap: 2. c1 has a ticket out and is never dropped; among the
     * others the least recently used goes. */
    sb_breakers_set_clients_max(bs, 2);
    sb_breaker_t *c1 = sb_breakers_get_client(bs, "m", "c1");
    uint64_t t1 = sb_breaker_on_dispatch(c1, T0);
    CHECK_INT(sb_breakers_clients(bs), 2);
    CHECK(sb_breakers_find_client(bs, "m", "key:1") == a);    /* still in the cap */
    sb_breaker_t *c2 = sb_breakers_get_client(bs, "m", "c2"); /* drops a, the oldest without tickets */
    CHECK(c2 != NULL);
    CHECK_INT(sb_breakers_clients(bs), 2);
    CHECK(sb_breakers_find_client(bs, "m", "key:1") == NULL);
    CHECK(sb_breakers_find_client(bs, "m", "c1") == c1);
    (void)sb_breaker_on_dispatch(c2, T0);
    /* Everything held has a ticket out: over the cap rather than lose one. */
    sb_breaker_t *c3 = sb_breakers_get_client(bs, "m", "c3");
    CHECK_INT(sb_breakers_clients(bs), 3);
    CHECK(sb_breakers_find_client(bs, "m", "c1") == c1 && sb_breakers_find_client(bs, "m", "c2") == c2);
    /* Use refreshes: c1's ticket ends (ok) and c1 is used again, so with a
     * cap of 3 it is c3 (created after c1, used before) that c4 drops. */
    CHECK(!sb_breaker_on_outcome(c1, t1, SB_BREAKER_OK, T0));
    CHECK(sb_breakers_get_client(bs, "m", "c1") == c1);
    sb_breakers_set_clients_max(bs, 3);
    CHECK_INT(sb_breakers_clients(bs), 3);
    CHECK(sb_breakers_get_client(bs, "m", "c4") != NULL);
    CHECK(c3 != NULL && sb_breakers_find_client(bs, "m", "c3") == NULL);
    CHECK(sb_breakers_find_client(bs, "m", "c1") == c1);
    CHECK_INT(sb_breakers_clients(bs), 3);
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
    test_model_wide_fair();
    test_client_breaker();
    test_set_clients();
    return sb_test_finish("breaker");
}
