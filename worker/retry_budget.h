/*
 * retry_budget: how many upstream retries each client may still make on each
 * route, so that a failing upstream never sees more than (1 + ratio) times
 * the calls the clients asked for, and one client's failing requests cannot
 * spend the retries of everyone else.
 *
 * A budget entry is kept per (route, account) (key: provider, base_url,
 * upstream_model and the job's account_id; sb_retry_budget_key). Each has a
 * balance of tokens. Every new upstream call deposits `ratio` tokens (the
 * balance is capped at SB_RETRY_BUDGET_CAP); every retry withdraws one and is
 * allowed only while the balance holds at least one. An entry starts with
 * nothing, so retries <= ratio * calls holds for every account from its first
 * call on, and so for the route as a whole: with the default 0.2, at most one
 * retry per five calls, per worker and therefore overall. Balances are kept
 * in thousandths of a token, so five deposits of 0.2 make exactly one token.
 *
 * Memory is bounded: at most SB_RETRY_BUDGET_MAX_ENTRIES entries; a new one
 * past that evicts the least recently used (its balance is forgotten, which
 * only ever lowers what may be retried).
 *
 * One budget per worker, on its one loop; not thread-safe.
 */
#ifndef SB_RETRY_BUDGET_H
#define SB_RETRY_BUDGET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Most tokens a route can save up. */
#define SB_RETRY_BUDGET_CAP 100
/* (route, account) entries remembered; past this the least recently used goes. */
#define SB_RETRY_BUDGET_MAX_ENTRIES 16384

typedef struct sb_retry_budget sb_retry_budget_t;

/* ratio: tokens each new call deposits (0 or less: no retry is ever allowed).
 * Never NULL (aborts on out of memory). */
sb_retry_budget_t *sb_retry_budget_new(double ratio);
/* NULL-safe; sets *b to NULL. */
void sb_retry_budget_destroy(sb_retry_budget_t **b);

/* The budget key of a job: its route's provider, base_url and
 * upstream_model (missing ones count as "") and its account_id (missing: no
 * account, one shared entry). Owned by the caller (free()). */
char *sb_retry_budget_key(const json_t *job);

/* The functions below take a key from sb_retry_budget_key ("route"). */

/* A new upstream call on route: deposits the ratio. */
void sb_retry_budget_deposit(sb_retry_budget_t *b, const char *route);
/* A retry on route: withdraws one token and returns true, or returns false
 * (balance below one; nothing withdrawn). */
bool sb_retry_budget_withdraw(sb_retry_budget_t *b, const char *route);
/* The route's balance in tokens (0 for a route never seen). */
double sb_retry_budget_balance(const sb_retry_budget_t *b, const char *route);
/* Whether an exhausted route should be logged now: true at most once per
 * second per route (now_ms: any monotonic clock). */
bool sb_retry_budget_warn_due(sb_retry_budget_t *b, const char *route, int64_t now_ms);
/* Entries tracked. */
size_t sb_retry_budget_routes(const sb_retry_budget_t *b);

#endif
