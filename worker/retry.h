/*
 * retry: what the end of one upstream attempt says about its route, whether
 * the failure is transient enough to retry, and how long to wait first. Pure
 * functions; the worker applies the rest of the rules (nothing sent to the
 * client yet, attempts left, the job's deadline, the retry budget in
 * retry_budget.h).
 *
 * Transient (retryable): a connection that could not be made (refused,
 * unresolvable, the connect timeout), a transfer that broke before a complete
 * response (reset, closed without a reply), and HTTP 408, 429 (unless it says
 * insufficient_quota: waiting does not add quota), 500, 502, 503, 504 and 529
 * (Anthropic overloaded). Not: the total timeout (the upstream took the
 * whole allowance; another try would double it), a body the adapter could
 * not use, any other status.
 *
 * The route (for the broker's circuit breaker, the EVENT header's
 * "upstream"): OK when the upstream answered: any 2xx whose body translated
 * (an in-band 4xx error included), or a 4xx, 429 included, since that is the
 * request's own fault or a busy upstream, not a broken one. FAILED when the
 * route itself failed: no connection, a reset, a timeout, a 408, a 5xx or
 * any other status, or a 2xx body that could not be used.
 */
#ifndef SB_RETRY_H
#define SB_RETRY_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "upstream.h"

/* What is known about a route from one call. */
enum sb_retry_route {
    SB_RETRY_ROUTE_UNKNOWN = 0, /* the call never got an answer or an error from the upstream */
    SB_RETRY_ROUTE_OK,          /* the upstream answered */
    SB_RETRY_ROUTE_FAILED,      /* the route failed */
};

typedef struct sb_retry_verdict {
    enum sb_retry_route route;
    bool transient; /* a retry may help */
} sb_retry_verdict_t;

/* One attempt's end: the transfer's outcome, its HTTP status (0 when none)
 * and the final event the adapter made of it (borrowed; NULL when the worker
 * made the error itself). */
sb_retry_verdict_t sb_retry_classify(enum sb_upstream_outcome outcome, long http_status, const json_t *final);

/* The full-jitter window before retry number `retry` (1 for the first):
 * min(cap_ms, base_ms * 2^retry), 0 when base_ms <= 0. */
int64_t sb_retry_window_ms(int retry, int64_t base_ms, int64_t cap_ms);

/* The delay before retry number `retry`: uniformly random in
 * [0, sb_retry_window_ms], and at least retry_after_s seconds when that is
 * >= 0 (the upstream's Retry-After is a floor, even above the cap). */
int64_t sb_retry_backoff_ms(int retry, int64_t base_ms, int64_t cap_ms, long retry_after_s);

#endif
