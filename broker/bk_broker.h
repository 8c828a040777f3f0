/*
 * bk_broker: the job broker. Two ROUTER sockets (frontends, workers), both
 * ZMQ_ROUTER_MANDATORY so an unroutable message is an error, never a silent
 * drop. Per-model bounded FIFO queues; workers announce models and credits
 * (jobs they run at once) and the broker never exceeds those; heartbeats
 * both ways; a deadline per job. Bodies are forwarded untouched.
 */
#ifndef BK_BROKER_H
#define BK_BROKER_H

#include <stddef.h>

typedef struct {
    const char *frontend_endpoint;
    const char *worker_endpoint;
    int queue_max; /* per model */
    int heartbeat_ms;
    int liveness;  /* heartbeats of silence before a worker is dead */
    int deadline_grace_ms;
} bk_config_t;

typedef struct bk_broker bk_broker_t;

void bk_config_defaults(bk_config_t *cfg);

/* Binds both sockets. Returns NULL on failure. */
bk_broker_t *bk_broker_new(const bk_config_t *cfg);
void bk_broker_destroy(bk_broker_t **b);

/* One loop step: waits up to timeout_ms for messages, handles all that are
 * waiting, and runs the timers that are due. Returns -1 when interrupted. */
int bk_broker_step(bk_broker_t *b, int timeout_ms);

/* Runs steps until interrupted (SIGINT/SIGTERM via czmq). */
void bk_broker_run(bk_broker_t *b);

/* Introspection for tests and logs. */
size_t bk_broker_queued(bk_broker_t *b, const char *model);
size_t bk_broker_workers(bk_broker_t *b);

#endif
