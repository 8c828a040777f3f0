/*
 * worker: one worker process's session with the broker and its jobs.
 *
 * It holds a DEALER connected to the broker's worker endpoint, announces
 * itself with READY, heartbeats, and turns each JOB into an upstream HTTP
 * request (through a provider adapter, provider.h) whose answer goes back as
 * canonical EVENT messages, the last one marked final. A job makes more than
 * one request in three cases: n choices from an upstream that cannot do n
 * (one request per choice, merged), strict structured output that fails its
 * schema (one retry; strict.h), and a transient upstream failure before the
 * client has seen anything (retries with jittered backoff, within a per-route
 * budget; retry.h, retry_budget.h). The final EVENT's header says whether
 * the upstream answered ("upstream": "ok") or the route failed ("failed"),
 * for the broker's circuit breaker. Many jobs run at once on the caller's one
 * libevent loop; nothing here blocks or starts a thread.
 *
 * The caller owns the event_base and runs it; curl_global_init must have been
 * called. Tests drive the same library against a fake broker and upstream.
 */
#ifndef SB_WORKER_H
#define SB_WORKER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sb_worker sb_worker_t;

/* The worker's life; jobs have their own states (worker_internal.h). */
enum sb_worker_state {
    SB_WORKER_ACTIVE,   /* READY sent; taking jobs (also across reconnects) */
    SB_WORKER_DRAINING, /* stop asked: new jobs refused with 503, in-flight ones finishing */
    SB_WORKER_STOPPED,  /* no job left; on_stopped has run; only destroy remains */
};

typedef struct sb_worker_config {
    const char *endpoint;          /* broker worker endpoint; NULL: SB_BROKER_WORKER_ENDPOINT_DEFAULT */
    const char *models;            /* comma-separated model ids; NULL or "": "*" (every model) */
    int credits;                   /* jobs at once, announced in READY; <= 0: 64 */
    const char *name;              /* NULL: "<hostname>-<pid>" */
    int heartbeat_ms;              /* <= 0: SB_HEARTBEAT_INTERVAL_MS */
    int liveness;                  /* <= 0: SB_HEARTBEAT_LIVENESS */
    int64_t connect_timeout_ms;    /* upstream connect phase; <= 0: 5000 */
    int64_t drain_ms;              /* on stop, how long in-flight jobs may run; <= 0: 30000 */
    int64_t stream_idle_ms;        /* a streamed upstream silent this long is ended with a 504; <= 0: 60000 */
    int retry_max;                 /* retries per upstream call after a transient failure; 0: 2, < 0: none */
    int64_t retry_base_ms;         /* backoff before retry k: random in [0, min(cap, base * 2^k)]; <= 0: 250 */
    int64_t retry_cap_ms;          /* <= 0: 4000 */
    double retry_budget;           /* retry tokens each new call earns its route (retry_budget.h); 0: 0.2, < 0: none */
    int64_t tool_timeout_ms;       /* one step of a built-in tool; <= 0: 30000 */
    int tool_max_iterations;       /* model calls one tool loop may make; <= 0: 16 */
    int64_t tool_output_max_bytes; /* bytes of one tool output given to the model; <= 0: 65536 */
    const char *tool_allow_cidrs;  /* CIDRs the outbound guard lets through (tests); NULL: none */
    bool tool_allow_http;          /* tools may fetch http:// as well as https:// */
    const char *pg_dsn;            /* the tool data plane's database (containers, vector stores); NULL: none,
                                      and the tools that need it fail their calls */
    int db_conns;                  /* its pool size; <= 0: 2 */
    int sandbox_uid_base;          /* as root: the code interpreter sandboxes' first uid; <= 0: 200000 */
    int sandbox_uid_count;         /* how many uids that range holds; <= 0: 1000 */
    /* Called once, at a safe point of the loop, when the worker reaches
     * STOPPED (typically: event_base_loopexit). May not destroy the worker. */
    void (*on_stopped)(void *arg);
    void *arg;
} sb_worker_config_t;

/* Connects (asynchronously) and sends READY. cfg strings are copied; base is
 * borrowed and must outlive the worker. Returns NULL on failure (bad
 * endpoint, out of sockets). */
sb_worker_t *sb_worker_new(const sb_worker_config_t *cfg, struct event_base *base) __attribute__((warn_unused_result));

/* Aborts jobs still running (without events), closes the socket (letting
 * queued events out for up to 1 s) and frees everything. NULL-safe. */
void sb_worker_destroy(sb_worker_t **w);

/* Starts a graceful stop (DRAINING). A second call while draining aborts the
 * remaining jobs now, each with a final 503 error event. */
void sb_worker_stop(sb_worker_t *w);

enum sb_worker_state sb_worker_state(const sb_worker_t *w);
/* Jobs running upstream now. */
size_t sb_worker_inflight(const sb_worker_t *w);
/* Readiness (the admin port): NULL when the worker takes jobs (the broker
 * heard from within its liveness window, its database reachable when it has
 * one, not draining), else why not. */
const char *sb_worker_not_ready(const sb_worker_t *w);
/* The broker heard from within the liveness window. */
bool sb_worker_broker_connected(const sb_worker_t *w);

#endif
