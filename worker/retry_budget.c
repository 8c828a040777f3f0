/*
 * retry_budget: per-(route, account) retry tokens (see retry_budget.h). A
 * string map from key to a small entry; balances in thousandths of a token so
 * that the bound is exact rather than subject to floating-point drift. Each
 * entry remembers when it was last used (a counter, not a clock), so that a
 * full table evicts the least recently used entry.
 */
#include "retry_budget.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_job.h"
#include "sb_map.h"

#define SB_RETRY_BUDGET_MILLI 1000
#define SB_RETRY_BUDGET_WARN_EVERY_MS 1000

typedef struct {
    int64_t milli;     /* balance, thousandths of a token */
    int64_t warned_ms; /* when exhaustion was last logged */
    bool warned;       /* warned_ms is set */
    uint64_t used;     /* the budget's tick when last used */
} sb_retry_route_t;

struct sb_retry_budget {
    int64_t deposit_milli; /* per new call */
    sb_map_t *routes;      /* key -> sb_retry_route_t (owned) */
    uint64_t tick;         /* counts uses, for least-recently-used eviction */
};

sb_retry_budget_t *sb_retry_budget_new(double ratio)
{
    sb_retry_budget_t *b = sb_xcalloc(1, sizeof *b);
    if (ratio > 0 && isfinite(ratio))
        b->deposit_milli = ratio >= SB_RETRY_BUDGET_CAP ? (int64_t)SB_RETRY_BUDGET_CAP * SB_RETRY_BUDGET_MILLI
                                                        : (int64_t)(ratio * SB_RETRY_BUDGET_MILLI + 0.5);
    b->routes = sb_map_new();
    return b;
}

static int sb_retry_budget_free_one(const char *key, void *value, void *arg)
{
    free(value);
    return 1;
}

void sb_retry_budget_destroy(sb_retry_budget_t **pb)
{
    if (!pb || !*pb)
        return;
    sb_retry_budget_t *b = *pb;
    sb_map_remove_if(b->routes, sb_retry_budget_free_one, NULL);
    sb_map_destroy(&b->routes);
    free(b);
    *pb = NULL;
}

char *sb_retry_budget_key(const json_t *job)
{
    const char *provider = sb_job_route_str(job, "provider");
    const char *base = sb_job_route_str(job, "base_url");
    const char *model = sb_job_route_str(job, "upstream_model");
    /* The account the frontend authenticated (sb_job_new): each account
     * spends only the retries its own calls earned. */
    const json_t *account = json_object_get(job, "account_id");
    char acct[32] = "";
    if (json_is_integer(account))
        snprintf(acct, sizeof acct, "%lld", (long long)json_integer_value(account));
    /* 0x1f (unit separator) cannot be part of a sane URL or model id. */
    return sb_xasprintf("%s\x1f%s\x1f%s\x1f%s", provider ? provider : "", base ? base : "", model ? model : "", acct);
}

/* The search for the least recently used entry. */
typedef struct {
    const char *key;
    uint64_t used;
} sb_retry_lru_t;

static void sb_retry_budget_find_lru(const char *key, void *value, void *arg)
{
    sb_retry_lru_t *lru = arg;
    const sb_retry_route_t *r = value;
    if (!lru->key || r->used < lru->used) {
        lru->key = key;
        lru->used = r->used;
    }
}

/* An entry in use: its place in the eviction order. */
static sb_retry_route_t *sb_retry_budget_touch(sb_retry_budget_t *b, sb_retry_route_t *r)
{
    if (r)
        r->used = ++b->tick;
    return r;
}

/* The key's entry, created empty when new. */
static sb_retry_route_t *sb_retry_budget_route(sb_retry_budget_t *b, const char *route)
{
    sb_retry_route_t *r = sb_map_get(b->routes, route);
    if (r)
        return sb_retry_budget_touch(b, r);
    if (sb_map_size(b->routes) >= SB_RETRY_BUDGET_MAX_ENTRIES) {
        /* Full (many accounts, or a flood of new ones): the least recently
         * used entry goes. A scan, but only when full, over a bounded table.
         * A forgotten balance restarts at zero, so the bound still holds. */
        sb_retry_lru_t lru = {0};
        sb_map_foreach(b->routes, sb_retry_budget_find_lru, &lru);
        if (lru.key) {
            char *victim = sb_xstrdup(lru.key);
            free(sb_map_remove(b->routes, victim));
            free(victim);
        }
    }
    r = sb_xcalloc(1, sizeof *r);
    sb_map_put(b->routes, route, r);
    return sb_retry_budget_touch(b, r);
}

void sb_retry_budget_deposit(sb_retry_budget_t *b, const char *route)
{
    if (b->deposit_milli <= 0)
        return;
    sb_retry_route_t *r = sb_retry_budget_route(b, route);
    r->milli += b->deposit_milli;
    if (r->milli > (int64_t)SB_RETRY_BUDGET_CAP * SB_RETRY_BUDGET_MILLI)
        r->milli = (int64_t)SB_RETRY_BUDGET_CAP * SB_RETRY_BUDGET_MILLI;
}

bool sb_retry_budget_withdraw(sb_retry_budget_t *b, const char *route)
{
    sb_retry_route_t *r = sb_retry_budget_touch(b, sb_map_get(b->routes, route));
    if (!r || r->milli < SB_RETRY_BUDGET_MILLI)
        return false;
    r->milli -= SB_RETRY_BUDGET_MILLI;
    return true;
}

double sb_retry_budget_balance(const sb_retry_budget_t *b, const char *route)
{
    const sb_retry_route_t *r = sb_map_get(b->routes, route);
    return r ? (double)r->milli / SB_RETRY_BUDGET_MILLI : 0.0;
}

bool sb_retry_budget_warn_due(sb_retry_budget_t *b, const char *route, int64_t now_ms)
{
    sb_retry_route_t *r = sb_retry_budget_route(b, route);
    if (r->warned && now_ms - r->warned_ms < SB_RETRY_BUDGET_WARN_EVERY_MS)
        return false;
    r->warned = true;
    r->warned_ms = now_ms;
    return true;
}

size_t sb_retry_budget_routes(const sb_retry_budget_t *b)
{
    return sb_map_size(b->routes);
}
