/*
 * test_retry_budget: the per-(route, account) retry budget
 * (worker/retry_budget.h): nothing to start with, 0.2 per call, 1 per retry,
 * the cap, the 1.2x bound under a failing upstream, routes apart, accounts
 * apart (one account's failures cannot spend another's retries), the key,
 * the warning's rate limit and the table's limit (least recently used out).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "retry_budget.h"
#include "sb_job.h"
#include "sb_test.h"

static void test_no_initial_balance(void)
{
    sb_retry_budget_t *b = sb_retry_budget_new(0.2);
    CHECK(sb_retry_budget_balance(b, "a") == 0.0);
    CHECK(!sb_retry_budget_withdraw(b, "a"));
    /* Four calls earn 0.8: still no retry. */
    for (int i = 0; i < 4; i++)
        sb_retry_budget_deposit(b, "a");
    CHECK(!sb_retry_budget_withdraw(b, "a"));
    CHECK(sb_retry_budget_balance(b, "a") > 0.79 && sb_retry_budget_balance(b, "a") < 0.81);
    /* The fifth makes exactly one token (no floating-point shortfall). */
    sb_retry_budget_deposit(b, "a");
    CHECK(sb_retry_budget_balance(b, "a") == 1.0);
    CHECK(sb_retry_budget_withdraw(b, "a"));
    CHECK(sb_retry_budget_balance(b, "a") == 0.0);
    CHECK(!sb_retry_budget_withdraw(b, "a"));
    sb_retry_budget_destroy(&b);
    CHECK(b == NULL);
    sb_retry_budget_destroy(&b); /* NULL-safe */
}

/* An upstream that always fails, and a worker that would retry every call
 * twice if it could: attempts never pass 1.2 x calls, at any point. */
static void test_bound(void)
{
    sb_retry_budget_t *b = sb_retry_budget_new(0.2);
    long calls = 0, attempts = 0;
    bool ok = true;
    for (int i = 0; i < 1000; i++) {
        calls++;
        attempts++;
        sb_retry_budget_deposit(b, "down");
        for (int r = 0; r < 2 && sb_retry_budget_withdraw(b, "down"); r++)
            attempts++;
        if (attempts * 10 > calls * 12)
            ok = false;
    }
    CHECK(ok);
    CHECK_INT(attempts, 1200); /* and the budget is spent, not hoarded */
    sb_retry_budget_destroy(&b);
}

static void test_cap(void)
{
    sb_retry_budget_t *b = sb_retry_budget_new(0.2);
    for (int i = 0; i < 1000; i++) /* 200 tokens' worth */
        sb_retry_budget_deposit(b, "a");
    CHECK(sb_retry_budget_balance(b, "a") == SB_RETRY_BUDGET_CAP);
    int n = 0;
    while (sb_retry_budget_withdraw(b, "a"))
        n++;
    CHECK_INT(n, SB_RETRY_BUDGET_CAP);
    sb_retry_budget_destroy(&b);

    /* A ratio of 1 or more still caps. */
    b = sb_retry_budget_new(1e9);
    sb_retry_budget_deposit(b, "a");
    sb_retry_budget_deposit(b, "a");
    CHECK(sb_retry_budget_balance(b, "a") == SB_RETRY_BUDGET_CAP);
    sb_retry_budget_destroy(&b);
}

static void test_disabled(void)
{
    double ratios[] = {0, -1};
    for (size_t k = 0; k < 2; k++) {
        sb_retry_budget_t *b = sb_retry_budget_new(ratios[k]);
        for (int i = 0; i < 100; i++)
            sb_retry_budget_deposit(b, "a");
        CHECK(!sb_retry_budget_withdraw(b, "a"));
        sb_retry_budget_destroy(&b);
    }
}

static void test_routes_apart(void)
{
    sb_retry_budget_t *b = sb_retry_budget_new(0.5);
    sb_retry_budget_deposit(b, "a");
    sb_retry_budget_deposit(b, "a");
    sb_retry_budget_deposit(b, "b");
    CHECK(!sb_retry_budget_withdraw(b, "b"));
    CHECK(sb_retry_budget_withdraw(b, "a"));
    CHECK(!sb_retry_budget_withdraw(b, "a"));
    CHECK(sb_retry_budget_balance(b, "b") == 0.5);
    CHECK_INT(sb_retry_budget_routes(b), 2);
    sb_retry_budget_destroy(&b);
}

static json_t *job_of(const char *provider, const char *base_url, const char *model, long long account)
{
    json_t *route = json_pack("{s:s, s:s, s:s, s:i}", "provider", provider, "base_url", base_url, "upstream_model",
                              model, "timeout_ms", 1000);
    return sb_job_new("req_1", "public", account, route, json_pack("{s:[]}", "input"));
}

static json_t *job(const char *provider, const char *base_url, const char *model)
{
    return job_of(provider, base_url, model, 1);
}

static void test_key(void)
{
    json_t *a = job("openai-chat", "http://h/v1", "m"), *a2 = job("openai-chat", "http://h/v1", "m");
    json_t *b = job("openai-chat", "http://h/v1", "m2"), *c = job("openai-chat", "http://h2/v1", "m");
    json_t *d = job("anthropic", "http://h/v1", "m");
    char *ka = sb_retry_budget_key(a), *ka2 = sb_retry_budget_key(a2), *kb = sb_retry_budget_key(b);
    char *kc = sb_retry_budget_key(c), *kd = sb_retry_budget_key(d);
    CHECK_STR(ka, ka2);
    CHECK(strcmp(ka, kb) && strcmp(ka, kc) && strcmp(ka, kd));
    /* A job without a route still has a key. */
    json_t *bare = json_object();
    char *kbare = sb_retry_budget_key(bare);
    CHECK_STR(kbare, "\x1f\x1f\x1f");
    free(ka);
    free(ka2);
    free(kb);
    free(kc);
    free(kd);
    free(kbare);
    json_decref(a);
    json_decref(a2);
    json_decref(b);
    json_decref(c);
    json_decref(d);
    json_decref(bare);
}

static void test_warn_rate(void)
{
    sb_retry_budget_t *b = sb_retry_budget_new(0.2);
    CHECK(sb_retry_budget_warn_due(b, "a", 10000));
    CHECK(!sb_retry_budget_warn_due(b, "a", 10001));
    CHECK(!sb_retry_budget_warn_due(b, "a", 10999));
    CHECK(sb_retry_budget_warn_due(b, "b", 10999)); /* per route */
    CHECK(sb_retry_budget_warn_due(b, "a", 11000));
    CHECK(!sb_retry_budget_warn_due(b, "a", 11500));
    sb_retry_budget_destroy(&b);
}

/*
 * Two accounts on one route. Account 1's requests all fail and retry
 * whenever the budget lets them; account 2 makes five calls among them and
 * then needs one retry. With one budget for the route (the old behaviour)
 * account 1 has spent every token by then and account 2 gets none; per
 * account, account 2's own five calls earned it one.
 */
static void test_accounts_apart(void)
{
    json_t *j1 = job_of("openai-chat", "http://h/v1", "m", 1), *j1b = job_of("openai-chat", "http://h/v1", "m", 1);
    json_t *j2 = job_of("openai-chat", "http://h/v1", "m", 2);
    char *k1 = sb_retry_budget_key(j1), *k1b = sb_retry_budget_key(j1b), *k2 = sb_retry_budget_key(j2);
    CHECK_STR(k1, k1b);
    CHECK(strcmp(k1, k2) != 0);

    sb_retry_budget_t *b = sb_retry_budget_new(0.2);
    int retries1 = 0;
    for (int round = 0; round < 5; round++) {
        sb_retry_budget_deposit(b, k2); /* account 2: one call */
        for (int i = 0; i < 20; i++) {  /* account 1: twenty failing calls */
            sb_retry_budget_deposit(b, k1);
            while (sb_retry_budget_withdraw(b, k1))
                retries1++;
        }
    }
    CHECK(sb_retry_budget_withdraw(b, k2)); /* account 2's retry */
    CHECK(!sb_retry_budget_withdraw(b, k2));
    CHECK_INT(retries1, 20); /* account 1 got its own 0.2 per call, no more */
    CHECK_INT(sb_retry_budget_routes(b), 2);
    sb_retry_budget_destroy(&b);
    free(k1);
    free(k1b);
    free(k2);
    json_decref(j1);
    json_decref(j1b);
    json_decref(j2);
}

/* Past SB_RETRY_BUDGET_MAX_ENTRIES the least recently used entry goes:
 * memory stays bounded, and a flood of new keys does not wipe the balances
 * of keys in use. */
static void test_max_entries(void)
{
    sb_retry_budget_t *b = sb_retry_budget_new(1);
    char key[32];
    for (int i = 0; i < SB_RETRY_BUDGET_MAX_ENTRIES; i++) {
        snprintf(key, sizeof key, "r%d", i);
        sb_retry_budget_deposit(b, key);
    }
    CHECK_INT(sb_retry_budget_routes(b), SB_RETRY_BUDGET_MAX_ENTRIES);
    CHECK(sb_retry_budget_balance(b, "r0") == 1.0);
    sb_retry_budget_deposit(b, "r0"); /* r0 in use again: r1 is now the oldest */
    sb_retry_budget_deposit(b, "one more");
    CHECK_INT(sb_retry_budget_routes(b), SB_RETRY_BUDGET_MAX_ENTRIES);
    CHECK(sb_retry_budget_balance(b, "r0") == 2.0);
    CHECK(sb_retry_budget_balance(b, "r1") == 0.0); /* evicted */
    CHECK(!sb_retry_budget_withdraw(b, "r1"));
    CHECK(sb_retry_budget_balance(b, "r2") == 1.0);
    CHECK(sb_retry_budget_withdraw(b, "one more"));
    /* A flood of new keys: the table never grows past its limit. */
    for (int i = 0; i < 1000; i++) {
        snprintf(key, sizeof key, "flood%d", i);
        sb_retry_budget_deposit(b, key);
        sb_retry_budget_deposit(b, "r0"); /* a key in steady use survives it */
    }
    CHECK_INT(sb_retry_budget_routes(b), SB_RETRY_BUDGET_MAX_ENTRIES);
    CHECK(sb_retry_budget_balance(b, "r0") == SB_RETRY_BUDGET_CAP); /* kept, and saved up to the cap */
    sb_retry_budget_destroy(&b);
}

int main(void)
{
    test_no_initial_balance();
    test_bound();
    test_cap();
    test_disabled();
    test_routes_apart();
    test_key();
    test_warn_rate();
    test_accounts_apart();
    test_max_entries();
    return sb_test_finish("retry_budget");
}
