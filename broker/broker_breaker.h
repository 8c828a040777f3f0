/*
 * broker_breaker: circuit breakers per route, fair to clients. A route is a
 * model id (each model has exactly one upstream route), and workers report
 * how each job went upstream in the final EVENT header ("upstream": "ok" /
 * "failed"). A job may name its client (the SUBMIT header's "client": the
 * frontend puts the API key there). Each route has two kinds of breaker:
 *
 *  - one per (model, client): opens for that client only, after `threshold`
 *    of its own jobs failed in a row. A client whose own requests make the
 *    upstream fail (a bad prompt) is turned away fast; nobody else is.
 *  - one model-wide: opens for everyone, but only on evidence from more than
 *    one client: `threshold` failures in a row (any success resets them) in
 *    which no one client counts for more than half (ceil(threshold/2)) and at
 *    least two clients failed. A route that is really down is seen failing
 *    by several clients and still opens for all; one client cannot open it.
 *    Jobs without a client (an older frontend) cannot be told apart: each
 *    counts as a client of its own and uncapped, which is the plain "K
 *    failures in a row" breaker.
 *
 * Once open, both kinds behave alike: refuse for a cooldown, then one job
 * probes (the client's own job for a per-client breaker), whose outcome
 * closes the circuit or opens it again with a doubled cooldown.
 * docs/protocol.md has the whole story.
 *
 * The breaker is a pure state machine: it never reads a clock (every call
 * that depends on time takes `now`, monotonic ms), never touches jobs or
 * sockets, and only logs its own transitions. broker.c asks it before it
 * queues or dispatches a job and tells it how each dispatched job ended.
 *
 * Tickets. Each dispatch gets a ticket (sb_breaker_on_dispatch) that the job
 * keeps; the job's end is reported with it, exactly once
 * (sb_breaker_on_outcome). Tickets are what lets the breaker ignore the
 * outcomes of jobs dispatched before the circuit last opened, and tell the
 * probe apart from jobs still running from earlier. A job holds one ticket
 * from its model's breaker and one from its client's.
 *
 * Not thread-safe (the broker has one loop).
 */
#ifndef SB_BROKER_BREAKER_H
#define SB_BROKER_BREAKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Each re-open straight after a failed probe doubles the cooldown, up to
 * this multiple of the configured one. */
#define SB_BREAKER_BACKOFF_MAX 8

/* Per-client breakers kept at most (all models together) unless more have
 * jobs outstanding; past it the least recently used one with none is dropped
 * (that client starts afresh). Bounds the memory many clients can take. */
#define SB_BREAKER_CLIENTS_MAX 4096

enum sb_breaker_state {
    SB_BREAKER_CLOSED = 0, /* normal: jobs are dispatched; failed outcomes in a row are counted */
    SB_BREAKER_OPEN,       /* tripped: nothing is dispatched and every job is refused until the
                              cooldown ends (open_until) */
    SB_BREAKER_HALF_OPEN,  /* cooldown over: the next job (queued or submitted) goes out as the
                              probe; one job may wait for it, others are refused */
    SB_BREAKER_PROBING,    /* the probe is out: every other job is refused until it ends */
};

/* How a dispatched job ended, as far as its route is concerned. */
enum sb_breaker_outcome {
    SB_BREAKER_NO_OUTCOME = 0, /* never reached the upstream, or the broker stopped caring about the job
                                  (cancelled, past its deadline, frontend gone) or lost its worker */
    SB_BREAKER_OK,             /* the upstream answered (4xx and 429 included) */
    SB_BREAKER_FAILED,         /* connect error, reset, timeout, 5xx after retries, malformed body */
};

typedef struct sb_breaker sb_breaker_t;
typedef struct sb_breakers sb_breakers_t;

/*
 * One route's breaker.
 */

/* A model-wide breaker: threshold >= 1 failures in a row, from more than one
 * client as described above, open it for cooldown_ms >= 1 (doubled on each
 * re-open by a failed probe, up to SB_BREAKER_BACKOFF_MAX times). model is
 * copied (it names the route in logs). */
sb_breaker_t *sb_breaker_new(const char *model, int threshold, int cooldown_ms);
/* A client's breaker for model: threshold failures in a row of that client's
 * jobs open it. client (copied) must not be NULL. */
sb_breaker_t *sb_breaker_new_client(const char *model, const char *client, int threshold, int cooldown_ms);
void sb_breaker_destroy(sb_breaker_t **br);

/* The state at `now`: moves OPEN -> HALF_OPEN once the cooldown is over (and
 * logs it). Every other call taking `now` does this first. */
enum sb_breaker_state sb_breaker_tick(sb_breaker_t *br, int64_t now);
/* The state as last moved, without looking at the clock (for logs). */
enum sb_breaker_state sb_breaker_state_of(const sb_breaker_t *br);
const char *sb_breaker_state_name(enum sb_breaker_state state);

/* Whether a new job may join the model's queue, which holds `queued` jobs:
 * CLOSED yes; HALF_OPEN only when nothing is queued (that job will be the
 * probe); OPEN and PROBING no. */
bool sb_breaker_allow_submit(sb_breaker_t *br, int64_t now, size_t queued);
/* Whether the job at the head of the model's queue may be dispatched now:
 * CLOSED and HALF_OPEN yes, OPEN and PROBING no. */
bool sb_breaker_allow_dispatch(sb_breaker_t *br, int64_t now);
/* A job was dispatched (allow_dispatch said yes). Returns its ticket (never
 * 0). In HALF_OPEN this job is the probe: the circuit moves to PROBING. */
uint64_t sb_breaker_on_dispatch(sb_breaker_t *br, int64_t now);
/* Whether ticket is the probe now out (PROBING). */
bool sb_breaker_is_probe(const sb_breaker_t *br, uint64_t ticket);
/* The broker stopped caring about the job (cancelled, deadline, frontend
 * gone) but it still runs on its worker. If it was the probe, the circuit
 * goes back to HALF_OPEN so the next job probes. The ticket still has to be
 * ended with sb_breaker_on_outcome (NO_OUTCOME). */
void sb_breaker_on_abandon(sb_breaker_t *br, uint64_t ticket);
/* The job holding ticket ended; call exactly once per ticket. Outcomes count
 * only for jobs dispatched since the circuit last opened: in CLOSED a failed
 * one adds to the count (threshold reached: OPEN), an ok one resets it; the
 * probe's ok closes the circuit, its failure opens it again, and the probe
 * ending without an outcome makes it HALF_OPEN. Everything else is ignored.
 * Returns true when this call opened the circuit (the caller then refuses
 * what is queued for the model). */
bool sb_breaker_on_outcome(sb_breaker_t *br, uint64_t ticket, enum sb_breaker_outcome outcome, int64_t now);
/* The same, saying which client the job came from (NULL: unknown). Only a
 * model-wide breaker looks at it, to weigh failures by client. */
bool sb_breaker_on_outcome_from(sb_breaker_t *br, uint64_t ticket, enum sb_breaker_outcome outcome, const char *client,
                                int64_t now);

/* Milliseconds until the circuit lets a job through: the rest of the
 * cooldown when OPEN, 0 otherwise. */
int64_t sb_breaker_retry_after_ms(sb_breaker_t *br, int64_t now);
/* The same for a Retry-After: whole seconds rounded up, at least 1. */
int sb_breaker_retry_after_s(sb_breaker_t *br, int64_t now);
/* Failed outcomes in a row (failed probes included) behind the last opening. */
int sb_breaker_failures(const sb_breaker_t *br);
const char *sb_breaker_model(const sb_breaker_t *br);
/* The client of a per-client breaker; NULL for a model-wide one. */
const char *sb_breaker_client(const sb_breaker_t *br);

/*
 * The breakers of all routes: model-wide ones by model, per-client ones by
 * (model, client).
 */

/* threshold 0 disables circuit breaking: the set then holds nothing and
 * sb_breakers_get returns NULL. cooldown_ms >= 1. */
sb_breakers_t *sb_breakers_new(int threshold, int cooldown_ms);
void sb_breakers_destroy(sb_breakers_t **bs);
bool sb_breakers_enabled(const sb_breakers_t *bs);
/* The model's model-wide breaker, or NULL (disabled, or none yet: the route is
 * then CLOSED with no failures). */
sb_breaker_t *sb_breakers_find(const sb_breakers_t *bs, const char *model);
/* The model's model-wide breaker, created CLOSED if need be; NULL when disabled. */
sb_breaker_t *sb_breakers_get(sb_breakers_t *bs, const char *model);
/* The client's breaker for model, or NULL (disabled, client NULL, or none:
 * CLOSED with no failures). */
sb_breaker_t *sb_breakers_find_client(const sb_breakers_t *bs, const char *model, const char *client);
/* The client's breaker for model, created CLOSED if need be (which may drop
 * the least recently used one, see SB_BREAKER_CLIENTS_MAX) and marked as
 * used now; NULL when disabled or client is NULL. */
sb_breaker_t *sb_breakers_get_client(sb_breakers_t *bs, const char *model, const char *client);
/* Changes the cap on per-client breakers (>= 1; for tests). */
void sb_breakers_set_clients_max(sb_breakers_t *bs, size_t max);
/* How many per-client breakers are held. */
size_t sb_breakers_clients(const sb_breakers_t *bs);
/* Ticks every breaker, so OPEN -> HALF_OPEN happens (and is logged) on time
 * even when no job for the model comes. */
void sb_breakers_tick(sb_breakers_t *bs, int64_t now);
/* Frees the breakers with nothing to remember: CLOSED, no failures counted,
 * no ticket outstanding. */
void sb_breakers_prune(sb_breakers_t *bs);
/* The circuits that are not CLOSED, as " m1=open(9s) m2[key:7]=half-open"
 * into buf (a per-client one names its client in brackets; truncated with
 * " ..."), for the status log. Returns how many there are. */
/* Calls fn for every breaker, model-wide and per client. */
void sb_breakers_each(sb_breakers_t *bs, void (*fn)(const sb_breaker_t *br, void *arg), void *arg);

size_t sb_breakers_describe(sb_breakers_t *bs, int64_t now, char *buf, size_t size);

#endif
