/* bk_state: worker, job and queue records. */
#include "bk_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bk_job_set_state(bk_job_t *j, enum bk_job_state s) { j->state = s; }

void bk_job_free(bk_job_t *j)
{
    if (!j)
        return;
    zframe_destroy(&j->frontend);
    zframe_destroy(&j->body);
    json_decref(j->header);
    free(j);
}

void bk_worker_key(const zframe_t *rid, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *d = zframe_data((zframe_t *)rid);
    size_t n = zframe_size((zframe_t *)rid), o = 0;
    for (size_t i = 0; i < n && o + 2 < outlen; i++) {
        out[o++] = hex[d[i] >> 4];
        out[o++] = hex[d[i] & 15];
    }
    out[o] = '\0';
}

bool bk_worker_serves(const bk_worker_t *w, const char *model)
{
    size_t i;
    json_t *m;
    json_array_foreach(w->models, i, m)
    {
        const char *s = json_string_value(m);
        if (s && (!strcmp(s, "*") || !strcmp(s, model)))
            return true;
    }
    return false;
}

void bk_worker_free(bk_worker_t *w)
{
    if (!w)
        return;
    zframe_destroy(&w->rid);
    json_decref(w->models);
    free(w->name);
    free(w);
}

void bk_queue_push(bk_queue_t *q, bk_job_t *j)
{
    j->next = NULL;
    if (q->tail)
        q->tail->next = j;
    else
        q->head = j;
    q->tail = j;
    q->len++;
}

void bk_queue_push_front(bk_queue_t *q, bk_job_t *j)
{
    j->next = q->head;
    q->head = j;
    if (!q->tail)
        q->tail = j;
    q->len++;
}

bk_job_t *bk_queue_pop(bk_queue_t *q)
{
    bk_job_t *j = q->head;
    if (!j)
        return NULL;
    q->head = j->next;
    if (!q->head)
        q->tail = NULL;
    j->next = NULL;
    q->len--;
    return j;
}

bool bk_queue_remove(bk_queue_t *q, bk_job_t *j)
{
    bk_job_t **pp = &q->head, *prev = NULL;
    while (*pp && *pp != j) {
        prev = *pp;
        pp = &(*pp)->next;
    }
    if (!*pp)
        return false;
    *pp = j->next;
    if (q->tail == j)
        q->tail = prev;
    j->next = NULL;
    q->len--;
    return true;
}
