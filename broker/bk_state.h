/*
 * bk_state: the broker's records: workers (by routing id), jobs (by job id)
 * and per-model queues. Pure data structures; no sockets here.
 */
#ifndef BK_STATE_H
#define BK_STATE_H

#include <czmq.h>
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "sb_map.h"
#include "sb_protocol.h"

typedef struct bk_worker {
    char key[2 * 256 + 1]; /* routing id as hex: the map key */
    zframe_t *rid;         /* owned */
    char *name;
    json_t *models;        /* array of model ids; "*" = all */
    int credits;
    int inflight;
    int64_t last_seen_ms;  /* monotonic */
} bk_worker_t;

enum bk_job_state {
    BK_JOB_QUEUED,    /* waiting in its model's queue */
    BK_JOB_RUNNING,   /* sent to a worker; events flow to the frontend */
    BK_JOB_ABANDONED, /* the frontend no longer wants it (cancel, deadline,
                         frontend gone): events are dropped; the worker's final
                         event (or its death) frees the credit */
};

typedef struct bk_job {
    char id[SB_JOB_ID_MAX + 1];
    char model[SB_MODEL_ID_MAX + 1];
    enum bk_job_state state;
    zframe_t *frontend;    /* owned: the submitting frontend's routing id */
    json_t *header;        /* owned: forwarded to the worker as is */
    zframe_t *body;        /* owned until sent */
    int64_t deadline_ms;   /* epoch ms */
    bk_worker_t *worker;   /* borrowed; set while RUNNING/ABANDONED */
    struct bk_job *next;   /* queue link while QUEUED */
} bk_job_t;

typedef struct {
    bk_job_t *head, *tail;
    size_t len;
} bk_queue_t;

void bk_job_set_state(bk_job_t *j, enum bk_job_state s);
void bk_job_free(bk_job_t *j);

void bk_worker_key(const zframe_t *rid, char *out, size_t outlen);
bool bk_worker_serves(const bk_worker_t *w, const char *model);
void bk_worker_free(bk_worker_t *w);

void bk_queue_push(bk_queue_t *q, bk_job_t *j);
void bk_queue_push_front(bk_queue_t *q, bk_job_t *j);
bk_job_t *bk_queue_pop(bk_queue_t *q);
bool bk_queue_remove(bk_queue_t *q, bk_job_t *j);

#endif
