/*
 * retry: the retry policy's pure parts (see retry.h): classifying an
 * attempt's end and the jittered exponential backoff.
 */
#include "retry.h"

#include <stdlib.h>
#include <string.h>

#include "sb_event.h"

sb_retry_verdict_t sb_retry_classify(enum sb_upstream_outcome outcome, long http_status, const json_t *final)
{
    sb_retry_verdict_t failed = {.route = SB_RETRY_ROUTE_FAILED, .transient = false};
    switch (outcome) {
    case SB_UPSTREAM_CONNECT_FAILED:
    case SB_UPSTREAM_FAILED:
        return (sb_retry_verdict_t){.route = SB_RETRY_ROUTE_FAILED, .transient = true};
    case SB_UPSTREAM_TIMEOUT:
    case SB_UPSTREAM_ABORTED:
    case SB_UPSTREAM_BLOCKED: /* only guarded tool fetches; never worth a retry */
        return failed;
    case SB_UPSTREAM_OK:
        break;
    }
    if (http_status >= 200 && http_status < 300) {
        /* The adapter's verdict on the body: a 5xx error is a body it could
         * not use (or the upstream failing in band); a 4xx one is the
         * request's. Neither is retried: the upstream did answer. */
        if (sb_event_type_of(final) == SB_EV_ERROR && json_integer_value(json_object_get(final, "status")) >= 500)
            return failed;
        return (sb_retry_verdict_t){.route = SB_RETRY_ROUTE_OK, .transient = false};
    }
    switch (http_status) {
    case 429: {
        const char *kind = json_string_value(json_object_get(final, "kind"));
        bool quota = kind && !strcmp(kind, SB_ERR_QUOTA);
        return (sb_retry_verdict_t){.route = SB_RETRY_ROUTE_OK, .transient = !quota};
    }
    case 408:
    case 500:
    case 502:
    case 503:
    case 504:
    case 529:
        return (sb_retry_verdict_t){.route = SB_RETRY_ROUTE_FAILED, .transient = true};
    default:
        break;
    }
    if (http_status >= 400 && http_status < 500)
        return (sb_retry_verdict_t){.route = SB_RETRY_ROUTE_OK, .transient = false};
    return failed; /* other 5xx, 1xx, 3xx, none */
}

int64_t sb_retry_window_ms(int retry, int64_t base_ms, int64_t cap_ms)
{
    if (base_ms <= 0 || cap_ms <= 0)
        return 0;
    int64_t w = base_ms;
    for (int i = 0; i < retry && w < cap_ms; i++)
        w *= 2; /* stops at the cap, so it cannot overflow */
    return w < cap_ms ? w : cap_ms;
}

int64_t sb_retry_backoff_ms(int retry, int64_t base_ms, int64_t cap_ms, long retry_after_s)
{
    int64_t window = sb_retry_window_ms(retry, base_ms, cap_ms);
    if (window > UINT32_MAX - 1)
        window = UINT32_MAX - 1;
    /* Full jitter: anywhere in the window, so that clients failed together
     * do not come back together. Quality randomness is not needed, but
     * arc4random needs no seeding. */
    int64_t delay = window > 0 ? (int64_t)arc4random_uniform((uint32_t)window + 1) : 0;
    if (retry_after_s >= 0 && retry_after_s * 1000 > delay)
        delay = (int64_t)retry_after_s * 1000;
    return delay;
}
