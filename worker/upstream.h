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
    SB_UPSTREAM_BLOCKED,        /* the SSRF guard refused the URL or the address it resolved to (sb_ssrf.h) */
};

typedef struct sb_upstream_result {
    enum sb_upstream_outcome outcome;
    long status;        /* HTTP status; 0 when none was received */
    long retry_after;   /* Retry-After seconds, -1 when absent */
    int64_t elapsed_us; /* start to end, microseconds */
    const char *detail; /* static curl error text (no URLs, no secrets) */
} sb_upstream_result_t;

typedef struct sb_upstream_cbs {
    /* Body bytes; status is the response's HTTP status. Return 0, or a
     * negative code to abort the transfer (then outcome is ABORTED). */
    int (*on_data)(long status, const char *data, size_t len, void *arg);
    /* The transfer is over; it is freed right after this returns. */
    void (*on_done)(const sb_upstream_result_t *res, void *arg);
    /* Optional: one response header (name and value trimmed, not
     * NUL-terminated); a new status line (a redirect or a 1xx) calls it
     * with name NULL first, so only the last response's headers count. */
    void (*on_header)(const char *name, size_t name_len, const char *value, size_t value_len, void *arg);
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

/*
 * A request the worker's tools make (MCP servers, search backends, pages):
 * any method, optional body, bounded, and, with a guard, subject to the
 * SSRF rules of sb_ssrf.h on the URL before it starts, on every address it
 * connects to (the resolved address, at connect time: DNS rebinding cannot
 * pass) and on every redirect it follows.
 */
typedef struct sb_fetch_req {
    const char *method;         /* "GET" (also NULL), "POST", "DELETE", "HEAD"...: upper-case */
    const char *url;            /* borrowed */
    const char *const *headers; /* "Name: value"; may carry secrets: never logged */
    size_t n_headers;
    const char *body; /* NULL: none (a GET or HEAD has none) */
    size_t body_len;
    size_t max_bytes;            /* body bytes accepted; more aborts the transfer (ABORTED); 0: no cap */
    int max_redirects;           /* 0: a 3xx is the answer */
    const struct sb_ssrf *guard; /* borrowed; NULL: no guard (operator-configured URLs only) */
} sb_fetch_req_t;

/* Starts a fetch (req and everything it points to are copied). As
 * sb_upstream_start otherwise; a URL the guard refuses fails at once with
 * -EACCES (nothing starts, no callback); an address or redirect it refuses
 * later ends the transfer with outcome SB_UPSTREAM_BLOCKED (detail "blocked
 * by the outbound address policy"; status the refused redirect's 3xx, or 0).
 *
 * Redirects (301, 302, 303, 307, 308 with a Location) are followed by the
 * gateway, not by curl, up to max_redirects: each target is checked with the
 * guard before anything is sent to it; a redirect leaving the origin (scheme,
 * host, port) drops every header of req (any may be a secret, an MCP
 * server's Authorization say); 303, and 301/302 after a POST, become a GET.
 * A followed redirect's body is never passed to on_data; its headers are
 * passed to on_header, after a NULL name, as the doc of on_header says.
 * Guarded fetches use only https (and http when the guard allows it), never
 * a proxy from the environment, and never a connection an unguarded
 * transfer (or one under another guard) opened. */
int sb_upstream_fetch(sb_upstream_t *up, const sb_fetch_req_t *req, int64_t timeout_ms, int64_t connect_timeout_ms,
                      const sb_upstream_cbs_t *cbs, void *arg, sb_upstream_xfer_t **out)
    __attribute__((warn_unused_result));

/* Stops a transfer now. On HTTP/1.1 curl closes its connection (an
 * unfinished transfer's connection is never reused); on a multiplexed HTTP/2
 * connection it resets just that stream. Either way the upstream sees the
 * request go away. No callback runs. Sets *x to NULL. Not to be called from
 * inside on_data (curl is not re-entrant there). */
void sb_upstream_cancel(sb_upstream_t *up, sb_upstream_xfer_t **x);

#endif
