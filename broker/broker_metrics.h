/*
 * broker_metrics: the broker's metric families (sb_metrics), served on its
 * admin port (--admin-listen) by a thread of its own, so the loop only
 * updates atomics: counters as things happen, and the gauges (queue depth,
 * credits, workers, jobs in flight, circuits) from sb_broker_metrics_publish
 * on the loop's sweep (every 50 ms). Labels: models (the frontends submit
 * only configured ones) and the broker's own error codes.
 */
#ifndef SB_BROKER_METRICS_H
#define SB_BROKER_METRICS_H

#include <stdint.h>

#include "broker_breaker.h"
#include "broker_internal.h"

/* A job was queued for model. */
void sb_broker_metrics_queued(const char *model);
/* A job went to a worker after waiting waited_us in its queue. */
void sb_broker_metrics_dispatched(const char *model, int64_t waited_us);
/* The broker answered a job with an error (code: "queue_full", "no_workers",
 * "circuit_open", "deadline_exceeded", "worker_lost", ...). */
void sb_broker_metrics_error(const char *code);
/* A job's final event went back to its frontend. */
void sb_broker_metrics_finished(const char *model);

/* The live state, for a frontend's STATS (new reference): {"workers",
 * "jobs_in_flight", "client_circuits_open", "models": [{"model", "queued",
 * "credits_used", "credits_free", "workers", "circuit"}]}, one entry per
 * model that has a queue, a circuit or a worker serving it ("*": any). */
json_t *sb_broker_metrics_live(const sb_broker_queues_t *qs, const sb_broker_registry_t *r, sb_breakers_t *bs);

/* Sets the gauges from the broker's state. */
void sb_broker_metrics_publish(const sb_broker_queues_t *qs, const sb_broker_registry_t *r, sb_breakers_t *bs,
                               int64_t now);

#endif
