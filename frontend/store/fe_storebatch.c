/*
 * fe_storebatch: batched statements (fe_storebatch.h). A batch is its rows
 * (a JSON array, dumped once as the statement's one parameter) and their
 * waiters; the pool's callback for the batch answers them all, each with
 * its own result row when it asked for one.
 */
#include "fe_storebatch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_log.h"

typedef struct {
    sb_db_cb done;              /* a row whose statement returns nothing of it, or */
    fe_storebatch_row_fn found; /* one that gets its result row */
    void *arg;
} fe_storebatch_waiter_t;

typedef struct fe_storebatch_batch {
    fe_storebatch_t *writer;
    json_t *rows;
    fe_storebatch_waiter_t *waiters;
    size_t n, cap;
    bool single; /* a row retried alone after its batch failed */
} fe_storebatch_batch_t;

struct fe_storebatch {
    sb_db_t *db;
    char *stmt;
    struct event *flush;
    fe_storebatch_batch_t *pending; /* rows waiting for the next batch */
    int inflight;                   /* batches sent and not answered */
    int singles;                    /* rows of failed batches sent again alone */
};

static fe_storebatch_batch_t *fe_storebatch_batch_new(fe_storebatch_t *w)
{
    fe_storebatch_batch_t *b = sb_xcalloc(1, sizeof *b);
    b->writer = w;
    b->rows = json_array();
    return b;
}

static void fe_storebatch_batch_push(fe_storebatch_batch_t *b, json_t *row, fe_storebatch_waiter_t w)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? b->cap * 2 : 8;
        b->waiters = sb_xrealloc(b->waiters, b->cap * sizeof *b->waiters);
    }
    b->waiters[b->n++] = w;
    json_array_append_new(b->rows, row);
}

/* The result row of the batch's i-th row (0-based): the one whose first
 * column is i + 1; -1 when there is none. Rows come back in order, so the
 * i-th is tried first. */
static int fe_storebatch_row_of(const PGresult *res, size_t i)
{
    int n = res ? PQntuples(res) : 0;
    char want[24];
    snprintf(want, sizeof want, "%zu", i + 1);
    if ((int)i < n && !strcmp(PQgetvalue(res, (int)i, 0), want))
        return (int)i;
    for (int k = 0; k < n; k++)
        if (!strcmp(PQgetvalue(res, k, 0), want))
            return k;
    return -1;
}

/* Answers the batch's i-th waiter. */
static void fe_storebatch_answer(const fe_storebatch_batch_t *b, size_t i, const PGresult *res, const char *err)
{
    const fe_storebatch_waiter_t *w = &b->waiters[i];
    if (!w->found) {
        w->done(NULL, err, w->arg);
        return;
    }
    int row = err ? -1 : fe_storebatch_row_of(res, i);
    w->found(row >= 0 ? res : NULL, row, err ? err : row < 0 ? "the batch returned no row for it" : NULL, w->arg);
}

static void fe_storebatch_batch_free(fe_storebatch_batch_t *b)
{
    json_decref(b->rows);
    free(b->waiters);
    free(b);
}

static void fe_storebatch_send(fe_storebatch_t *w, fe_storebatch_batch_t *b);

static void fe_storebatch_on_done(const PGresult *res, const char *err, void *arg)
{
    fe_storebatch_batch_t *b = arg;
    fe_storebatch_t *w = b->writer;
    if (err && b->n > 1) {
        /* One bad row must not fail the others: each goes again alone (in
         * flight beside the batches, so the retries need no slot). */
        sb_warn("a batch of %zu rows failed (%.*s): sending them one by one", b->n, (int)strcspn(err, "\n"), err);
        for (size_t i = 0; i < b->n; i++) {
            fe_storebatch_batch_t *one = fe_storebatch_batch_new(w);
            one->single = true;
            fe_storebatch_batch_push(one, json_incref(json_array_get(b->rows, i)), b->waiters[i]);
            fe_storebatch_send(w, one);
        }
    } else {
        for (size_t i = 0; i < b->n; i++)
            fe_storebatch_answer(b, i, res, err);
    }
    /* Counted out only now: while its waiters run, the writer is not idle,
     * so nothing they call frees it (fe_storebatch_idle). */
    if (b->single)
        w->singles--;
    else
        w->inflight--;
    fe_storebatch_batch_free(b);
    if (w->pending && w->inflight < FE_STOREBATCH_INFLIGHT)
        event_active(w->flush, 0, 0);
}

static void fe_storebatch_send(fe_storebatch_t *w, fe_storebatch_batch_t *b)
{
    char *rows = json_dumps(b->rows, JSON_COMPACT);
    const char *params[1] = {rows};
    if (b->single)
        w->singles++;
    else
        w->inflight++;
    sb_db_query(w->db, w->stmt, 1, params, fe_storebatch_on_done, b);
    free(rows);
}

static void fe_storebatch_on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_storebatch_t *w = arg;
    if (!w->pending || w->inflight >= FE_STOREBATCH_INFLIGHT)
        return; /* the next commit sends them */
    fe_storebatch_batch_t *b = w->pending;
    w->pending = NULL;
    fe_storebatch_send(w, b);
}

fe_storebatch_t *fe_storebatch_new(struct event_base *base, sb_db_t *db, const char *stmt)
{
    fe_storebatch_t *w = sb_xcalloc(1, sizeof *w);
    w->db = db;
    w->stmt = sb_xstrdup(stmt);
    w->flush = event_new(base, -1, 0, fe_storebatch_on_flush, w);
    return w;
}

static void fe_storebatch_queue(fe_storebatch_t *w, json_t *row, fe_storebatch_waiter_t waiter)
{
    if (!w->pending)
        w->pending = fe_storebatch_batch_new(w);
    fe_storebatch_batch_push(w->pending, row, waiter);
    if (w->pending->n >= FE_STOREBATCH_MAX_ROWS && w->inflight < FE_STOREBATCH_INFLIGHT)
        fe_storebatch_on_flush(-1, 0, w);
    else if (w->inflight < FE_STOREBATCH_INFLIGHT)
        event_active(w->flush, 0, 0); /* after the other callbacks of this turn: their rows join */
}

void fe_storebatch_add(fe_storebatch_t *w, json_t *row, sb_db_cb done, void *arg)
{
    fe_storebatch_queue(w, row, (fe_storebatch_waiter_t){.done = done, .arg = arg});
}

void fe_storebatch_add_row(fe_storebatch_t *w, json_t *row, fe_storebatch_row_fn found, void *arg)
{
    fe_storebatch_queue(w, row, (fe_storebatch_waiter_t){.found = found, .arg = arg});
}

bool fe_storebatch_idle(const fe_storebatch_t *w)
{
    return !w->pending && w->inflight == 0 && w->singles == 0;
}

void fe_storebatch_free(fe_storebatch_t **pw)
{
    if (!pw || !*pw)
        return;
    fe_storebatch_t *w = *pw;
    if (w->pending) {
        fe_storebatch_batch_t *b = w->pending;
        for (size_t i = 0; i < b->n; i++)
            fe_storebatch_answer(b, i, NULL, "shutting down");
        fe_storebatch_batch_free(b);
    }
    event_free(w->flush);
    free(w->stmt);
    free(w);
    *pw = NULL;
}
