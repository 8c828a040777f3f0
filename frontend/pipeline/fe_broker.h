/*
 * fe_broker: the frontend's connections to the brokers (one or several,
 * active-active: docs/protocol.md, "Several brokers"). Submits each job to
 * one of them, routes each returned event to the job's sink, heartbeats,
 * and when a broker goes down (its connection closes, or it falls silent)
 * resubmits or fails its jobs (503) instead of hanging. A job lost before
 * its first event (its broker went down or restarted, or its worker died)
 * is resubmitted once, invisibly to its sink (fe_broker.c).
 */
#ifndef FE_BROKER_H
#define FE_BROKER_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef struct fe_broker fe_broker_t;

/* Receives each event of a job (borrowed). final=true is the last call for
 * that job; the sink is forgotten after it. */
typedef void (*fe_broker_sink)(const json_t *event, bool final, void *arg);

/* endpoints: the brokers' frontend endpoints, as sb_endpoints reads them
 * ("tcp://a:5555,tcp://b:5555", or "dns://sb-broker:5555"); NULL: the
 * default. NULL when the list is malformed (logged). */
fe_broker_t *fe_broker_new(struct event_base *base, const char *endpoints);
void fe_broker_destroy(fe_broker_t **b);

/* Sends SUBMIT. job is encoded at once (borrowed); the bytes are kept until
 * the job's first event, for a resubmission. client (borrowed; NULL: none) names who asked, e.g.
 * "key:<key id>": the broker's circuit breakers keep a circuit per model and
 * client. On failure returns -errno and the sink is not registered. */
int fe_broker_submit(fe_broker_t *b, const char *job_id, const char *model, const char *client, int64_t deadline_ms,
                     const json_t *job, fe_broker_sink sink, void *arg) __attribute__((warn_unused_result));

/* A background job's submitter hears this once the broker has queued the
 * job (SB_CMD_ACCEPTED); a refusal comes to the sink as a final error
 * event instead. */
typedef void (*fe_broker_accepted_fn)(void *arg);

/* fe_broker_submit for a background job (docs/background.md): the SUBMIT
 * names the response whose events the worker keeps and asks for ACCEPTED,
 * which calls accepted(arg) once. The sink then gets the job's events as
 * any job's (and the job is resubmitted, lost before its first event). */
int fe_broker_submit_background(fe_broker_t *b, const char *job_id, const char *response_id, const char *model,
                                const char *client, int64_t deadline_ms, const json_t *job, fe_broker_sink sink,
                                fe_broker_accepted_fn accepted, void *arg) __attribute__((warn_unused_result));

/* Forgets the job's sink (no more calls) and tells the broker to cancel it. */
void fe_broker_cancel(fe_broker_t *b, const char *job_id);

/* Tells the broker to cancel job_id, whoever submitted it (a background
 * job, which any frontend may cancel). A sink of this frontend's for it
 * still gets the job's final event (the cancel's). */
void fe_broker_cancel_any(fe_broker_t *b, const char *job_id);

size_t fe_broker_outstanding(const fe_broker_t *b);

/* The broker's live state (SB_CMD_STATS: queues, credits, circuits; see
 * sb_broker_metrics_live), for the admin API: fn(stats, arg) once, with the
 * stats borrowed, or with NULL when the broker did not answer within
 * timeout_ms (or the frontend is shutting down). */
typedef void (*fe_broker_stats_fn)(const json_t *stats, void *arg);
void fe_broker_stats(fe_broker_t *b, int timeout_ms, fe_broker_stats_fn fn, void *arg);

/* Whether a broker answers: one heard from within the heartbeat liveness
 * window (readiness, metrics). */
bool fe_broker_connected(const fe_broker_t *b);

/* The brokers in the set; *usable (if not NULL): how many answer now. */
size_t fe_broker_count(const fe_broker_t *b, size_t *usable);

#endif
