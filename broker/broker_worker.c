/*
 * broker_worker: what the broker knows of each worker (the models it serves,
 * its credits, the jobs it holds, when it was last heard from) and the
 * registry of live workers keyed by routing id. Losing a worker is two-step:
 * sb_broker_registry_mark_lost takes it out of lookups at once, and the loop
 * reaps it (fails its jobs, frees it) at the end of the iteration, so no
 * caller ever holds a pointer to a freed worker.
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "broker_internal.h"
#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_protocol.h"

/* Bounds on what a READY may announce. */
#define SB_BROKER_WORKER_MODELS_MAX 1024
#define SB_BROKER_WORKER_CREDITS_MAX 100000
#define SB_BROKER_WORKER_NAME_MAX 128

struct sb_broker_registry {
    sb_map_t *by_key;                /* hex routing id -> LIVE worker */
    sb_broker_worker_t *live, *lost; /* doubly linked lists */
    size_t nlive;
};

static void sb_broker_worker_list_push(sb_broker_worker_t **head, sb_broker_worker_t *w)
{
    w->prev = NULL;
    w->next = *head;
    if (*head)
        (*head)->prev = w;
    *head = w;
}

static void sb_broker_worker_list_unlink(sb_broker_worker_t **head, sb_broker_worker_t *w)
{
    if (w->prev)
        w->prev->next = w->next;
    else
        *head = w->next;
    if (w->next)
        w->next->prev = w->prev;
    w->prev = w->next = NULL;
}

static bool sb_broker_worker_str_ok(const json_t *v, size_t max)
{
    return json_is_string(v) && json_string_length(v) > 0 && json_string_length(v) <= max &&
           !memchr(json_string_value(v), '\0', json_string_length(v));
}

int sb_broker_worker_from_ready(const sb_wire_msg_t *msg, sb_broker_worker_t **out, const char **why)
{
    *out = NULL;
    *why = NULL;
    sb_broker_worker_t *w = NULL;
    const json_t *models = json_object_get(msg->header, "models");
    const json_t *credits = json_object_get(msg->header, "credits");
    const json_t *name = json_object_get(msg->header, "name");
    if (!msg->header) {
        *why = "no header";
        goto fail;
    }
    if (!json_is_array(models) || json_array_size(models) == 0 ||
        json_array_size(models) > SB_BROKER_WORKER_MODELS_MAX) {
        *why = "models is not a non-empty array";
        goto fail;
    }
    if (!json_is_integer(credits) || json_integer_value(credits) < 1 ||
        json_integer_value(credits) > SB_BROKER_WORKER_CREDITS_MAX) {
        *why = "credits is not an integer in range";
        goto fail;
    }
    if (!sb_broker_worker_str_ok(name, SB_BROKER_WORKER_NAME_MAX)) {
        *why = "name is not a non-empty string";
        goto fail;
    }
    w = sb_xcalloc(1, sizeof *w);
    w->nmodels = json_array_size(models);
    w->models = sb_xcalloc(w->nmodels, sizeof *w->models);
    for (size_t i = 0; i < w->nmodels; i++) {
        const json_t *m = json_array_get(models, i);
        if (!sb_broker_worker_str_ok(m, SB_MODEL_ID_MAX)) {
            *why = "a model is not a non-empty string";
            goto fail;
        }
        w->models[i] = sb_xstrdup(json_string_value(m));
        if (!strcmp(w->models[i], "*"))
            w->any_model = true;
    }
    w->routing_id = zframe_dup(msg->routing_id);
    w->key = zframe_strhex(msg->routing_id);
    if (!w->routing_id || !w->key)
        abort(); /* czmq's own allocation failure: out of memory */
    w->name = sb_xstrdup(json_string_value(name));
    w->credits = (int)json_integer_value(credits);
    const json_t *seq = json_object_get(msg->header, "seq");
    w->seq = json_is_integer(seq) ? (long long)json_integer_value(seq) : 0;
    w->state = SB_BWORKER_LIVE;
    *out = w;
    return 0;
fail:
    sb_broker_worker_destroy(&w);
    return -EPROTO;
}

void sb_broker_worker_destroy(sb_broker_worker_t **pw)
{
    if (!pw || !*pw)
        return;
    sb_broker_worker_t *w = *pw;
    for (size_t i = 0; w->models && i < w->nmodels; i++)
        free(w->models[i]);
    free(w->models);
    free(w->key);
    free(w->name);
    zframe_destroy(&w->routing_id);
    free(w);
    *pw = NULL;
}

void sb_broker_worker_swap_info(sb_broker_worker_t *w, sb_broker_worker_t *fresh)
{
    char *name = w->name, **models = w->models;
    size_t nmodels = w->nmodels;
    bool any = w->any_model;
    int credits = w->credits;
    /* A new READY starts a new count of JOBs and a new window. */
    w->seq = fresh->seq;
    w->windowed = false;
    w->window = 0;
    w->sent = 0;
    w->name = fresh->name;
    w->models = fresh->models;
    w->nmodels = fresh->nmodels;
    w->any_model = fresh->any_model;
    w->credits = fresh->credits;
    fresh->name = name;
    fresh->models = models;
    fresh->nmodels = nmodels;
    fresh->any_model = any;
    fresh->credits = credits;
}

bool sb_broker_worker_serves(const sb_broker_worker_t *w, const char *model)
{
    if (w->any_model)
        return true;
    for (size_t i = 0; i < w->nmodels; i++)
        if (!strcmp(w->models[i], model))
            return true;
    return false;
}

int sb_broker_worker_free_credits(const sb_broker_worker_t *w)
{
    int f = w->credits - w->in_flight;
    if (w->windowed && w->window - w->sent < f)
        f = w->window - w->sent > 0 ? (int)(w->window - w->sent) : 0;
    return f;
}

bool sb_broker_worker_on_window(sb_broker_worker_t *w, const json_t *header)
{
    const json_t *window = json_object_get(header, "window");
    const json_t *seq = json_object_get(header, "seq");
    if (!json_is_integer(window) || !json_is_integer(seq) || json_integer_value(seq) != w->seq ||
        json_integer_value(window) < 0)
        return false;
    bool changed = !w->windowed || w->window != json_integer_value(window);
    w->windowed = true;
    w->window = (long long)json_integer_value(window);
    return changed;
}

void sb_broker_worker_attach(sb_broker_worker_t *w, sb_broker_job_t *job)
{
    assert(!job->worker && !job->queue);
    job->prev = NULL;
    job->next = w->jobs;
    if (w->jobs)
        w->jobs->prev = job;
    w->jobs = job;
    job->worker = w;
    w->in_flight++;
    w->sent++;
}

void sb_broker_worker_detach(sb_broker_worker_t *w, sb_broker_job_t *job)
{
    assert(job->worker == w);
    if (job->prev)
        job->prev->next = job->next;
    else
        w->jobs = job->next;
    if (job->next)
        job->next->prev = job->prev;
    job->prev = job->next = NULL;
    job->worker = NULL;
    w->in_flight--;
}

const char *sb_broker_worker_models_str(const sb_broker_worker_t *w, char *buf, size_t size)
{
    size_t off = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < w->nmodels; i++) {
        int n = snprintf(buf + off, size - off, "%s%s", i ? "," : "", w->models[i]);
        if (n < 0 || (size_t)n >= size - off) {
            if (size >= 4)
                memcpy(buf + size - 4, "...", 4);
            break;
        }
        off += (size_t)n;
    }
    return buf;
}

void sb_broker_worker_set_state(sb_broker_worker_t *w, enum sb_broker_worker_state state)
{
    static const char *const names[] = {[SB_BWORKER_LIVE] = "live", [SB_BWORKER_LOST] = "lost"};
    /* The only move is LIVE -> LOST; a lost worker never comes back (it
     * re-registers as a new record after RECONNECT). */
    assert(w->state == SB_BWORKER_LIVE && state == SB_BWORKER_LOST);
    sb_debug("worker %s: %s -> %s", w->name, names[w->state], names[state]);
    w->state = state;
}

sb_broker_registry_t *sb_broker_registry_new(void)
{
    sb_broker_registry_t *r = sb_xcalloc(1, sizeof *r);
    r->by_key = sb_map_new();
    return r;
}

static void sb_broker_registry_free_list(sb_broker_worker_t *w)
{
    while (w) {
        sb_broker_worker_t *next = w->next;
        sb_broker_worker_destroy(&w);
        w = next;
    }
}

void sb_broker_registry_destroy(sb_broker_registry_t **pr)
{
    if (!pr || !*pr)
        return;
    sb_broker_registry_t *r = *pr;
    sb_broker_registry_free_list(r->live);
    sb_broker_registry_free_list(r->lost);
    sb_map_destroy(&r->by_key);
    free(r);
    *pr = NULL;
}

void sb_broker_registry_add(sb_broker_registry_t *r, sb_broker_worker_t *w)
{
    void *prev = sb_map_put(r->by_key, w->key, w);
    assert(!prev);
    (void)prev;
    sb_broker_worker_list_push(&r->live, w);
    r->nlive++;
}

sb_broker_worker_t *sb_broker_registry_find(const sb_broker_registry_t *r, const zframe_t *routing_id)
{
    char *key = zframe_strhex((zframe_t *)routing_id);
    if (!key)
        abort();
    sb_broker_worker_t *w = sb_map_get(r->by_key, key);
    free(key);
    return w;
}

void sb_broker_registry_mark_lost(sb_broker_registry_t *r, sb_broker_worker_t *w)
{
    if (w->state == SB_BWORKER_LOST)
        return;
    sb_map_remove(r->by_key, w->key);
    sb_broker_worker_list_unlink(&r->live, w);
    r->nlive--;
    sb_broker_worker_set_state(w, SB_BWORKER_LOST);
    sb_broker_worker_list_push(&r->lost, w);
}

sb_broker_worker_t *sb_broker_registry_best(const sb_broker_registry_t *r, const char *model)
{
    sb_broker_worker_t *best = NULL;
    int best_free = 0;
    for (sb_broker_worker_t *w = r->live; w; w = w->next) {
        int f = sb_broker_worker_free_credits(w);
        if (f > best_free && sb_broker_worker_serves(w, model)) {
            best = w;
            best_free = f;
        }
    }
    return best;
}

bool sb_broker_registry_serves(const sb_broker_registry_t *r, const char *model)
{
    for (sb_broker_worker_t *w = r->live; w; w = w->next)
        if (sb_broker_worker_serves(w, model))
            return true;
    return false;
}

sb_broker_worker_t *sb_broker_registry_first_live(const sb_broker_registry_t *r)
{
    return r->live;
}

size_t sb_broker_registry_count(const sb_broker_registry_t *r)
{
    return r->nlive;
}

sb_broker_worker_t *sb_broker_registry_pop_lost(sb_broker_registry_t *r)
{
    sb_broker_worker_t *w = r->lost;
    if (w)
        sb_broker_worker_list_unlink(&r->lost, w);
    return w;
}
