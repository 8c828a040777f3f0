/*
 * sb_broker: the job broker. One single-threaded loop owns two ROUTER
 * sockets: frontends SUBMIT jobs on one, workers announce credits (READY) and
 * stream EVENTs back on the other. The broker keeps a bounded FIFO queue per
 * model, hands each job to the live worker serving the model that has the
 * most free credit, forwards events back to the submitting frontend, and
 * turns deadlines, cancellations and lost workers into canonical error
 * events. A circuit breaker per model stops sending jobs to a route whose
 * upstream keeps failing (as workers report it in their final EVENTs). It
 * never decodes job or event bodies. The wire protocol is
 * common/sb_protocol.h; the semantics are written up in docs/protocol.md.
 *
 * Each broker draws a random epoch (instance id) at start and stamps it on
 * everything it sends, so that frontends and workers notice a restarted
 * broker at once (sb_protocol.h).
 *
 * Not thread-safe: every call on one broker must come from the thread that
 * drives its loop (sb_broker_stop may also be called from a signal handler).
 */
#ifndef SB_BROKER_H
#define SB_BROKER_H

#include <stddef.h>

#define SB_BROKER_QUEUE_MAX_DEFAULT 256
/* How long past an in-flight job's deadline the broker waits before it gives
 * up on the worker, so the worker's own timeout error normally arrives first. */
#define SB_BROKER_DEADLINE_GRACE_MS 250
/* Per-model circuit breaker (docs/protocol.md): failed upstream outcomes in a
 * row that open a model's circuit, and how long it then stays open. */
#define SB_BROKER_BREAKER_FAILURES_DEFAULT 5
#define SB_BROKER_BREAKER_COOLDOWN_MS_DEFAULT 10000

typedef struct sb_broker sb_broker_t;

typedef struct {
    const char *frontend_endpoint; /* borrowed; bound. NULL: SB_BROKER_FRONTEND_ENDPOINT_DEFAULT */
    const char *worker_endpoint;   /* borrowed; bound. NULL: SB_BROKER_WORKER_ENDPOINT_DEFAULT */
    size_t queue_max;              /* queued jobs per model; 0: SB_BROKER_QUEUE_MAX_DEFAULT */
    int heartbeat_interval_ms;     /* <= 0: SB_HEARTBEAT_INTERVAL_MS */
    int heartbeat_liveness;        /* <= 0: SB_HEARTBEAT_LIVENESS */
    int deadline_grace_ms;         /* < 0: SB_BROKER_DEADLINE_GRACE_MS; 0 is honoured */
    int breaker_failures;          /* failed outcomes in a row that open a model's circuit; 0 disables
                                      the breaker; < 0: SB_BROKER_BREAKER_FAILURES_DEFAULT */
    int breaker_cooldown_ms;       /* how long an open circuit refuses jobs (doubled on each re-open
                                      by a failed probe, up to 8x); <= 0: SB_BROKER_BREAKER_COOLDOWN_MS_DEFAULT */
    int startup_grace_ms;          /* after start, how long a job for a model no worker serves yet waits
                                      (queued) for workers to register before 503 no_workers; 0: no wait;
                                      < 0: heartbeat interval x liveness */
} sb_broker_config_t;

/* What happened to workers since the broker started (for logs and tests). */
typedef struct {
    unsigned long joined;        /* READY from a new routing id */
    unsigned long lost;          /* declared dead: silent, a send failed */
    unsigned long reregistered;  /* READY again from a live worker: updated in place */
    unsigned long refused_stale; /* SUBMITs refused because they named another broker epoch */
} sb_broker_counts_t;

/* Fills cfg with the defaults above (endpoints NULL, deadline_grace_ms and
 * startup_grace_ms -1). */
void sb_broker_config_init(sb_broker_config_t *cfg);

/* Creates the broker and binds both sockets. cfg is borrowed (strings are
 * copied). Returns NULL, after logging why, when an endpoint cannot be bound. */
sb_broker_t *sb_broker_new(const sb_broker_config_t *cfg);

/* One loop iteration: waits up to timeout_ms (less when a timer is due; < 0:
 * until the next timer) for
 * messages, handles what arrived, runs due timers (heartbeats, liveness,
 * deadlines, stats) and dispatches queued jobs. Returns 0, or -EINTR once
 * the process was interrupted (SIGINT/SIGTERM via czmq) or sb_broker_stop
 * was called. Tests drive the broker in-process with this. */
int sb_broker_run_once(sb_broker_t *b, int timeout_ms) __attribute__((warn_unused_result));

/* Runs sb_broker_run_once until it returns -EINTR; then returns 0. */
int sb_broker_run(sb_broker_t *b) __attribute__((warn_unused_result));

/* Asks the loop to return at its next iteration. Async-signal-safe. */
void sb_broker_stop(sb_broker_t *b);

/* The endpoints actually bound (a "tcp://host:*" wildcard resolved to its
 * port). Borrowed; valid until the broker is destroyed. */
const char *sb_broker_frontend_endpoint(const sb_broker_t *b);
const char *sb_broker_worker_endpoint(const sb_broker_t *b);

/* This broker's epoch: SB_EPOCH_HEX_LEN hex digits, random per instance.
 * Borrowed; valid until the broker is destroyed. */
const char *sb_broker_epoch(const sb_broker_t *b);

void sb_broker_counts(const sb_broker_t *b, sb_broker_counts_t *out);

/* Closes the sockets and frees every job, queue and worker record. NULL-safe;
 * sets *b to NULL. Outstanding jobs are dropped without events: frontends
 * notice the broker's loss through their heartbeats, or a new broker's
 * epoch. */
void sb_broker_destroy(sb_broker_t **b);

#endif
