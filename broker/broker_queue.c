/*
 * broker_queue: the bounded FIFO of waiting jobs per model, and the set of
 * those queues in round-robin order so that one busy model cannot starve
 * another when workers serve several ("*"). A queue is created on the first
 * job for its model and pruned once empty.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "broker_internal.h"
#include "sb_alloc.h"

struct sb_broker_queues {
    sb_map_t *by_model;              /* model -> sb_broker_queue_t */
    sb_broker_queue_t *first, *last; /* round-robin order */
    size_t count;
    size_t max_per_model;
    size_t total; /* queued jobs across all models */
};

sb_broker_queues_t *sb_broker_queues_new(size_t max_per_model)
{
    sb_broker_queues_t *qs = sb_xcalloc(1, sizeof *qs);
    qs->by_model = sb_map_new();
    qs->max_per_model = max_per_model;
    return qs;
}

static void sb_broker_queue_free(sb_broker_queue_t *q)
{
    free(q->model);
    free(q);
}

void sb_broker_queues_destroy(sb_broker_queues_t **pqs)
{
    if (!pqs || !*pqs)
        return;
    sb_broker_queues_t *qs = *pqs;
    sb_broker_queue_t *q = qs->first;
    while (q) {
        sb_broker_queue_t *next = q->next;
        sb_broker_queue_free(q);
        q = next;
    }
    sb_map_destroy(&qs->by_model);
    free(qs);
    *pqs = NULL;
}

sb_broker_queue_t *sb_broker_queues_get(sb_broker_queues_t *qs, const char *model)
{
    return sb_map_get(qs->by_model, model);
}

static void sb_broker_queues_link_last(sb_broker_queues_t *qs, sb_broker_queue_t *q)
{
    q->next = NULL;
    q->prev = qs->last;
    if (qs->last)
        qs->last->next = q;
    else
        qs->first = q;
    qs->last = q;
}

static void sb_broker_queues_unlink(sb_broker_queues_t *qs, sb_broker_queue_t *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        qs->first = q->next;
    if (q->next)
        q->next->prev = q->prev;
    else
        qs->last = q->prev;
    q->prev = q->next = NULL;
}

sb_broker_queue_t *sb_broker_queues_get_or_add(sb_broker_queues_t *qs, const char *model)
{
    sb_broker_queue_t *q = sb_map_get(qs->by_model, model);
    if (q)
        return q;
    q = sb_xcalloc(1, sizeof *q);
    q->model = sb_xstrdup(model);
    sb_map_put(qs->by_model, model, q);
    sb_broker_queues_link_last(qs, q);
    qs->count++;
    return q;
}

sb_broker_queue_t *sb_broker_queues_first(const sb_broker_queues_t *qs)
{
    return qs->first;
}

size_t sb_broker_queues_count(const sb_broker_queues_t *qs)
{
    return qs->count;
}

size_t sb_broker_queues_total(const sb_broker_queues_t *qs)
{
    return qs->total;
}

void sb_broker_queues_rotate(sb_broker_queues_t *qs, sb_broker_queue_t *q)
{
    if (qs->last == q)
        return;
    sb_broker_queues_unlink(qs, q);
    sb_broker_queues_link_last(qs, q);
}

void sb_broker_queues_prune(sb_broker_queues_t *qs)
{
    sb_broker_queue_t *q = qs->first;
    while (q) {
        sb_broker_queue_t *next = q->next;
        if (q->len == 0) {
            sb_broker_queues_unlink(qs, q);
            sb_map_remove(qs->by_model, q->model);
            qs->count--;
            sb_broker_queue_free(q);
        }
        q = next;
    }
}

int sb_broker_queue_push(sb_broker_queues_t *qs, sb_broker_queue_t *q, sb_broker_job_t *job)
{
    if (q->len >= qs->max_per_model)
        return -ENOSPC;
    job->next = NULL;
    job->prev = q->tail;
    if (q->tail)
        q->tail->next = job;
    else
        q->head = job;
    q->tail = job;
    q->len++;
    qs->total++;
    job->queue = q;
    sb_broker_job_set_state(job, SB_BJOB_QUEUED);
    return 0;
}

void sb_broker_queue_remove(sb_broker_queues_t *qs, sb_broker_job_t *job)
{
    sb_broker_queue_t *q = job->queue;
    assert(q && job->state == SB_BJOB_QUEUED);
    if (job->prev)
        job->prev->next = job->next;
    else
        q->head = job->next;
    if (job->next)
        job->next->prev = job->prev;
    else
        q->tail = job->prev;
    job->prev = job->next = NULL;
    job->queue = NULL;
    q->len--;
    qs->total--;
}
