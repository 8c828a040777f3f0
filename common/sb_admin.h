/*
 * sb_admin: a process's admin port: GET /metrics (sb_metrics, Prometheus
 * text format), /healthz (the process is alive: 200 while its loop runs) and
 * /readyz (200 "ready", or 503 with the reason: a dependency away, or
 * draining), on the strict HTTP server (sb_http). Any other path goes to the
 * owner's handler when it gave one (the frontend's admin API and console),
 * else 404. Never the public port: it listens where --admin-listen says
 * (loopback by default in every component).
 *
 * It runs on the caller's event loop (sb_admin_new), or on a thread of its
 * own with its own loop (sb_admin_start_thread) for a process whose loop is
 * not libevent's (the broker); readiness is then asked from that thread, so
 * the owner's ready callback must only read atomics.
 */
#ifndef SB_ADMIN_H
#define SB_ADMIN_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "sb_http.h"

typedef struct sb_admin sb_admin_t;

typedef struct {
    const char *host; /* IPv4 address to listen on */
    int port;
    /* true when ready; otherwise writes why (one line) into why. NULL:
     * always ready. */
    bool (*ready)(void *arg, char *why, size_t len);
    void *ready_arg;
    /* Every other request (NULL: 404). */
    sb_http_handler_fn other;
    void *other_arg;
} sb_admin_config_t;

/* Parses "HOST:PORT" into cfg->host (a copy in host, size hostlen) and
 * cfg->port: 0, or -1 when malformed. */
int sb_admin_parse_listen(const char *spec, char *host, size_t hostlen, int *port);

/* On base's loop; NULL with a message in err when it cannot listen. */
sb_admin_t *sb_admin_new(struct event_base *base, const sb_admin_config_t *cfg, char *err, size_t errlen);
/* On a thread of its own. */
sb_admin_t *sb_admin_start_thread(const sb_admin_config_t *cfg, char *err, size_t errlen);
/* Stops listening (and the thread, if any) and frees; NULL-safe, clears *a. */
void sb_admin_free(sb_admin_t **a);

/* Replies to an admin request with a text body (the metrics, health). */
void sb_admin_reply_text(sb_http_req_t *req, int status, const char *content_type, const char *body, size_t len);

#endif
