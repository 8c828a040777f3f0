/*
 * upstream: HTTP requests to LLM providers on the worker's one libevent loop.
 * One libcurl multi handle per process (so connections are pooled and
 * reused), driven by libevent through CURLMOPT_SOCKETFUNCTION and
 * CURLMOPT_TIMERFUNCTION; no thread per request. TCP_NODELAY is on.
 *
 * A transfer reports body bytes as they arrive (on_data) and then exactly
 * once how it ended (on_done), unless it is cancelled first, in which case
 * neither callback runs again.
 */
#ifndef SB_UPSTREAM_H
#define SB_UPSTREAM_H

#include <event2/event.h>
#include <stdint.h>

#include "provider.h"

typedef struct sb_upstream sb_upstream_t;
typedef struct sb_upstream_xfer sb_upstream_xfer_t;

/* How a transfer ended, from the worker's point of view. */
enum sb_upstream_outcome {
    SB_UPSTREAM_OK = 0,         /* a complete HTTP response (any status) */
    SB_UPSTREAM_TIMEOUT,        /* the total timeout fired */
    SB_UPSTREAM_CONNECT_FAILED, /* could not resolve, connect or handshake */
    SB_UPSTREAM_ABORTED,        /* on_data asked to stop */
    SB_UPSTREAM_FAILED,         /* anything else (reset, protocol error) */
};

typedef struct sb_upstream_result {
    enum sb_upstream_outcome outcome;
    long status;        /* HTTP status; 0 when none was received */
    long retry_after;   /* Retry-After seconds, -1 when absent */
    int64_t elapsed_ms; /* start to end */
    const char *detail; /* static curl error text (no URLs, no secrets) */
} sb_upstream_result_t;

typedef struct sb_upstream_cbs {
    /* Body bytes; status is the response's HTTP status. Return 0, or a
     * negative code to abort the transfer (then outcome is ABORTED). */
    int (*on_data)(long status, const char *data, size_t len, void *arg);
    /* The transfer is over; it is freed right after this returns. */
    void (*on_done)(const sb_upstream_result_t *res, void *arg);
} sb_upstream_cbs_t;

/* base is borrowed. Returns NULL on failure. Requires curl_global_init. */
sb_upstream_t *sb_upstream_new(struct event_base *base) __attribute__((warn_unused_result));
/* Cancels every transfer still running (without callbacks) and frees. */
void sb_upstream_destroy(sb_upstream_t **up);
/* Transfers in flight. */
size_t sb_upstream_active(const sb_upstream_t *up);

/* Starts a POST of req (copied). timeout_ms bounds the whole transfer,
 * connect_timeout_ms the connection phase. cbs is copied; arg is borrowed.
 * Returns 0 with *out set (borrowed handle, valid until on_done returns or
 * sb_upstream_cancel), or a negative code. */
int sb_upstream_start(sb_upstream_t *up, const sb_provider_request_t *req, int64_t timeout_ms,
                      int64_t connect_timeout_ms, const sb_upstream_cbs_t *cbs, void *arg, sb_upstream_xfer_t **out)
    __attribute__((warn_unused_result));

/* Stops a transfer now. On HTTP/1.1 curl closes its connection (an
 * unfinished transfer's connection is never reused); on a multiplexed HTTP/2
 * connection it resets just that stream. Either way the upstream sees the
 * request go away. No callback runs. Sets *x to NULL. Not to be called from
 * inside on_data (curl is not re-entrant there). */
void sb_upstream_cancel(sb_upstream_t *up, sb_upstream_xfer_t **x);

#endif
