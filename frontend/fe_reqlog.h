/*
 * fe_reqlog: the request log writer. Every request (failed ones included)
 * adds exactly one row; rows are buffered and written in batches off the
 * request path (one INSERT per batch, idempotent on request_id), retried when
 * the database is away, and flushed with a blocking write at clean shutdown.
 */
#ifndef FE_REQLOG_H
#define FE_REQLOG_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "fe_db.h"

typedef struct fe_reqlog fe_reqlog_t;

typedef struct {
    const char *request_id;
    int64_t ts_ms;          /* request start, epoch ms */
    long long key_id;       /* <= 0: unknown */
    long long account_id;   /* <= 0: unknown */
    const char *model;      /* NULL: unknown */
    const char *requested_model; /* the model asked for when a fallback answered; NULL otherwise */
    const char *path;
    int status;
    int latency_ms;
    int upstream_ms;        /* < 0: none */
    long long tokens_in, tokens_out, reasoning_tokens;
    long long tokens_estimated; /* the gateway's input estimate; 0: none made */
    const char *error;      /* NULL on success; never contains secrets */
    bool stream;
} fe_reqlog_row_t;

fe_reqlog_t *fe_reqlog_new(struct event_base *base, fe_db_t *db, const char *frontend_name);
/* Copies the row into the buffer. */
void fe_reqlog_add(fe_reqlog_t *l, const fe_reqlog_row_t *row);
/* Writes everything buffered, blocking; for shutdown. Returns rows left unwritten. */
size_t fe_reqlog_flush_blocking(fe_reqlog_t *l);
void fe_reqlog_destroy(fe_reqlog_t **l);

#endif
