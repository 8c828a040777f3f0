/*
 * broker_internal: the broker's private types, shared by the files of
 * broker/ and by nothing else. A job lives in exactly one place at a time:
 * its model's queue (QUEUED) or its worker's job list (DISPATCHED,
 * ABANDONED), so one pair of list links serves both. The job table (job_id
 * -> job) in broker.c owns every job; queues and workers only link them.
 */
#ifndef SB_BROKER_INTERNAL_H
#define SB_BROKER_INTERNAL_H

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sb_map.h"
#include "sb_wire.h"

typedef struct sb_broker_job sb_broker_job_t;
typedef struct sb_broker_queue sb_broker_queue_t;
typedef struct sb_broker_queues sb_broker_queues_t;
typedef struct sb_broker_worker sb_broker_worker_t;
typedef struct sb_broker_registry sb_broker_registry_t;

/*
 * Jobs (broker_job.c).
 */

enum sb_broker_job_state {
    SB_BJOB_NEW = 0,    /* just built, not yet linked anywhere */
    SB_BJOB_QUEUED,     /* waiting in its model's queue; owns header and body */
    SB_BJOB_DISPATCHED, /* JOB sent to `worker`, holding one of its credits;
                           its events are forwarded to the frontend */
    SB_BJOB_ABANDONED,  /* still on `worker` (and holding the credit), but
                           nobody wants the result: cancelled by the frontend,
                           past its deadline, or the frontend vanished. Its
                           events are dropped; it ends with the worker's final
                           event or the worker's loss. */
    SB_BJOB_DONE,       /* finished and unlinked; about to be freed */
};

struct sb_broker_job {
    char *id;
    char *model;
    char *client;        /* the SUBMIT header's "client" (who asked: the API key), for the breakers; NULL: none */
    bool background;     /* the SUBMIT header names a background response: the job runs to its end
                            whatever becomes of its frontend, and any frontend may cancel it
                            (docs/background.md) */
    int64_t deadline_ms; /* absolute, epoch ms (sb_now_ms) */
    int64_t queued_us;   /* when it was last queued (sb_mono_us), for the queue wait metric */
    zframe_t *frontend;  /* owned copy of the submitter's routing id */
    json_t *header;      /* owned SUBMIT header, forwarded as the JOB header; NULL once dispatched */
    zframe_t *body;      /* owned job body, forwarded untouched; NULL once dispatched */
    enum sb_broker_job_state state;
    sb_broker_queue_t *queue;     /* while QUEUED */
    sb_broker_worker_t *worker;   /* while DISPATCHED or ABANDONED */
    uint64_t breaker_ticket;      /* from its model's circuit breaker when dispatched (broker_breaker.h),
                                     until its end is reported there; 0: none (not dispatched, breaker
                                     disabled, or already reported) */
    uint64_t client_ticket;       /* the same from its client's breaker for the model; 0: none (no client) */
    sb_broker_job_t *prev, *next; /* links in the queue or in the worker's list */
};

/* Takes ownership of *header and *body (and clears them); copies the rest. */
sb_broker_job_t *sb_broker_job_new(const char *id, const char *model, int64_t deadline_ms, const zframe_t *frontend,
                                   json_t **header, zframe_t **body);
void sb_broker_job_destroy(sb_broker_job_t **job);
/* The one place a job changes state; asserts the move is a legal one. */
void sb_broker_job_set_state(sb_broker_job_t *job, enum sb_broker_job_state state);
const char *sb_broker_job_state_name(enum sb_broker_job_state state);

/*
 * Per-model queues (broker_queue.c).
 */

struct sb_broker_queue {
    char *model;
    sb_broker_job_t *head, *tail;
    size_t len;
    sb_broker_queue_t *prev, *next; /* in the queues' round-robin list */
};

sb_broker_queues_t *sb_broker_queues_new(size_t max_per_model);
/* Frees the queues, not the jobs in them (the job table owns those). */
void sb_broker_queues_destroy(sb_broker_queues_t **qs);
sb_broker_queue_t *sb_broker_queues_get(sb_broker_queues_t *qs, const char *model);
sb_broker_queue_t *sb_broker_queues_get_or_add(sb_broker_queues_t *qs, const char *model);
/* Round-robin order: the queue served longest ago first. */
sb_broker_queue_t *sb_broker_queues_first(const sb_broker_queues_t *qs);
size_t sb_broker_queues_count(const sb_broker_queues_t *qs);
/* Moves q to the end of the round-robin order (it was just served). */
void sb_broker_queues_rotate(sb_broker_queues_t *qs, sb_broker_queue_t *q);
/* Frees the empty queues. Not while iterating. */
void sb_broker_queues_prune(sb_broker_queues_t *qs);
/* Queued jobs across all models. */
size_t sb_broker_queues_total(const sb_broker_queues_t *qs);

/* Appends job (QUEUED afterwards). -ENOSPC when the queue is full. */
int sb_broker_queue_push(sb_broker_queues_t *qs, sb_broker_queue_t *q, sb_broker_job_t *job)
    __attribute__((warn_unused_result));
/* Unlinks a QUEUED job from its queue; its state is the caller's to set. */
void sb_broker_queue_remove(sb_broker_queues_t *qs, sb_broker_job_t *job);

/*
 * Workers and their registry (broker_worker.c).
 */

enum sb_broker_worker_state {
    SB_BWORKER_LIVE = 0, /* registered and heard from within the liveness window; gets jobs */
    SB_BWORKER_LOST,     /* declared dead (silent, or a send to it failed): out
                            of the registry, waiting for the reap at the end of the loop
                            iteration to fail its jobs and free it */
};

struct sb_broker_worker {
    char *key;            /* hex routing id: the registry key */
    zframe_t *routing_id; /* owned */
    char *name;
    char **models; /* owned strings */
    size_t nmodels;
    bool any_model; /* "*" was among the models */
    int credits;    /* jobs it takes at once */
    int in_flight;  /* jobs on its list (DISPATCHED or ABANDONED) */
    /* A worker serving several brokers shares its credits among them
     * (docs/protocol.md, "Several brokers"): it says, in CREDIT and
     * HEARTBEAT, how many JOBs (counted since its READY) this broker may
     * have sent it in all by now. */
    bool windowed;        /* it has said so: window bounds what is sent */
    long long window;     /* the latest it said */
    long long sent;       /* JOBs sent to it since its READY */
    long long seq;        /* its READY's seq: a CREDIT for an older READY is stale */
    int64_t expires_mono; /* declared lost if silent until then (sb_mono_ms) */
    enum sb_broker_worker_state state;
    sb_broker_job_t *jobs;           /* its in-flight jobs */
    sb_broker_worker_t *prev, *next; /* in the registry's live or lost list */
};

/* Builds a worker from a READY message; -EPROTO (with *out NULL) when the
 * header is missing or malformed, *why then says what was wrong. */
int sb_broker_worker_from_ready(const sb_wire_msg_t *msg, sb_broker_worker_t **out, const char **why)
    __attribute__((warn_unused_result));
void sb_broker_worker_destroy(sb_broker_worker_t **w);
/* Gives w what a later READY (parsed into fresh) announced: name, models and
 * credits; fresh gets w's old ones (to be destroyed). Jobs, liveness and
 * routing id stay. */
void sb_broker_worker_swap_info(sb_broker_worker_t *w, sb_broker_worker_t *fresh);
bool sb_broker_worker_serves(const sb_broker_worker_t *w, const char *model);
int sb_broker_worker_free_credits(const sb_broker_worker_t *w);
/* A CREDIT or HEARTBEAT header's window, when it is for the worker's
 * current READY: true when it changed. */
bool sb_broker_worker_on_window(sb_broker_worker_t *w, const json_t *header);
/* Links a job onto / off the worker's in-flight list (counts credits). */
void sb_broker_worker_attach(sb_broker_worker_t *w, sb_broker_job_t *job);
void sb_broker_worker_detach(sb_broker_worker_t *w, sb_broker_job_t *job);
/* "m1,m2" into buf (truncated with "..."), for logs. */
const char *sb_broker_worker_models_str(const sb_broker_worker_t *w, char *buf, size_t size);
void sb_broker_worker_set_state(sb_broker_worker_t *w, enum sb_broker_worker_state state);

sb_broker_registry_t *sb_broker_registry_new(void);
/* Frees every worker record, live or lost (not their jobs). */
void sb_broker_registry_destroy(sb_broker_registry_t **r);
/* Takes ownership of w (LIVE). A worker with the same key must not exist. */
void sb_broker_registry_add(sb_broker_registry_t *r, sb_broker_worker_t *w);
/* The LIVE worker with that routing id, or NULL. */
sb_broker_worker_t *sb_broker_registry_find(const sb_broker_registry_t *r, const zframe_t *routing_id);
/* LIVE -> LOST: out of lookups and dispatch, onto the reap list. Idempotent. */
void sb_broker_registry_mark_lost(sb_broker_registry_t *r, sb_broker_worker_t *w);
/* The LIVE worker serving model with the most free credits (> 0), or NULL. */
sb_broker_worker_t *sb_broker_registry_best(const sb_broker_registry_t *r, const char *model);
/* Whether any LIVE worker serves model at all, free credit or not. */
bool sb_broker_registry_serves(const sb_broker_registry_t *r, const char *model);
sb_broker_worker_t *sb_broker_registry_first_live(const sb_broker_registry_t *r);
size_t sb_broker_registry_count(const sb_broker_registry_t *r);
/* Unlinks and returns one LOST worker (the caller frees it), or NULL. */
sb_broker_worker_t *sb_broker_registry_pop_lost(sb_broker_registry_t *r);

#endif
