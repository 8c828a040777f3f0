/* fe_reqlog: batched request_log inserts. */
#include "fe_reqlog.h"

#include <jansson.h>
#include <stdlib.h>

#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_log.h"

#define FE_REQLOG_FLUSH_MS 100
#define FE_REQLOG_BATCH_MAX 500
#define FE_REQLOG_BUFFER_MAX 200000 /* rows held while the database is away */

struct fe_reqlog {
    fe_db_t *db;
    char *frontend;
    json_t *buffer;   /* rows waiting */
    json_t *inflight; /* batch being written, NULL if none */
    struct event *timer;
};

static void fe_reqlog_on_written(const PGresult *res, const char *err, void *arg)
{
    fe_reqlog_t *l = arg;
    if (!l->inflight)
        return; /* the batch was taken over by the blocking shutdown flush */
    if (err) {
        /* Put the batch back in front; it is retried on the next tick. */
        sb_warn("request log batch of %zu rows not written (%s); will retry", json_array_size(l->inflight), err);
        json_array_extend(l->inflight, l->buffer);
        json_decref(l->buffer);
        l->buffer = l->inflight;
    } else {
        json_decref(l->inflight);
    }
    l->inflight = NULL;
}

static void fe_reqlog_tick(evutil_socket_t fd, short what, void *arg)
{
    fe_reqlog_t *l = arg;
    if (l->inflight || json_array_size(l->buffer) == 0)
        return;
    size_t n = json_array_size(l->buffer);
    if (n <= FE_REQLOG_BATCH_MAX) {
        l->inflight = l->buffer;
        l->buffer = json_array();
    } else {
        l->inflight = json_array();
        for (size_t i = 0; i < FE_REQLOG_BATCH_MAX; i++)
            json_array_append(l->inflight, json_array_get(l->buffer, i));
        json_t *rest = json_array();
        for (size_t i = FE_REQLOG_BATCH_MAX; i < n; i++)
            json_array_append(rest, json_array_get(l->buffer, i));
        json_decref(l->buffer);
        l->buffer = rest;
    }
    char *text = json_dumps(l->inflight, JSON_COMPACT);
    const char *params[1] = {text};
    fe_db_query(l->db, FE_SQL_REQLOG_INSERT, 1, params, fe_reqlog_on_written, l);
    free(text);
}

fe_reqlog_t *fe_reqlog_new(struct event_base *base, fe_db_t *db, const char *frontend_name)
{
    fe_reqlog_t *l = sb_xcalloc(1, sizeof *l);
    l->db = db;
    l->frontend = sb_xstrdup(frontend_name);
    l->buffer = json_array();
    l->timer = event_new(base, -1, EV_PERSIST, fe_reqlog_tick, l);
    struct timeval tv = {0, FE_REQLOG_FLUSH_MS * 1000};
    event_add(l->timer, &tv);
    return l;
}

static json_t *fe_reqlog_id_or_null(long long v)
{
    return v > 0 ? json_integer(v) : json_null();
}

void fe_reqlog_add(fe_reqlog_t *l, const fe_reqlog_row_t *r)
{
    if (json_array_size(l->buffer) >= FE_REQLOG_BUFFER_MAX) {
        sb_error("request log buffer full (%d rows): database unreachable for too long; dropping the oldest row",
                 FE_REQLOG_BUFFER_MAX);
        json_array_remove(l->buffer, 0);
    }
    json_t *row = json_pack(
        "{s:s, s:I, s:o, s:o, s:s?, s:s?, s:s, s:i, s:i, s:o, s:I, s:I, s:I, s:o, s:s?, s:b, s:s}", "request_id",
        r->request_id, "ts_ms", (json_int_t)r->ts_ms, "key_id", fe_reqlog_id_or_null(r->key_id), "account_id",
        fe_reqlog_id_or_null(r->account_id), "model", r->model, "requested_model", r->requested_model, "path", r->path,
        "status", r->status, "latency_ms", r->latency_ms, "upstream_latency_ms",
        r->upstream_ms >= 0 ? json_integer(r->upstream_ms) : json_null(), "tokens_in", (json_int_t)r->tokens_in,
        "tokens_out", (json_int_t)r->tokens_out, "reasoning_tokens", (json_int_t)r->reasoning_tokens,
        "tokens_estimated", r->tokens_estimated > 0 ? json_integer(r->tokens_estimated) : json_null(), "error",
        r->error, "stream", r->stream, "frontend", l->frontend);
    if (!row) {
        /* Only invalid UTF-8 in model/path/error can get here: keep the row, lose the text. */
        row =
            json_pack("{s:s, s:I, s:o, s:o, s:s, s:i, s:i, s:s, s:b, s:s}", "request_id", r->request_id, "ts_ms",
                      (json_int_t)r->ts_ms, "key_id", fe_reqlog_id_or_null(r->key_id), "account_id",
                      fe_reqlog_id_or_null(r->account_id), "path", "(invalid utf-8)", "status", r->status, "latency_ms",
                      r->latency_ms, "error", "(invalid utf-8)", "stream", r->stream, "frontend", l->frontend);
    }
    json_array_append_new(l->buffer, row);
    if (json_array_size(l->buffer) >= FE_REQLOG_BATCH_MAX)
        event_active(l->timer, EV_TIMEOUT, 0);
}

size_t fe_reqlog_flush_blocking(fe_reqlog_t *l)
{
    if (l->inflight) {
        /* The async write may or may not land; rewriting it is harmless (ON CONFLICT). */
        json_array_extend(l->inflight, l->buffer);
        json_decref(l->buffer);
        l->buffer = l->inflight;
        l->inflight = NULL;
    }
    if (json_array_size(l->buffer) == 0)
        return 0;
    char *text = json_dumps(l->buffer, JSON_COMPACT);
    const char *params[1] = {text};
    int rc = fe_db_exec_blocking(l->db, fe_sql_reqlog_insert_sql, 1, params);
    free(text);
    size_t left = rc == 0 ? 0 : json_array_size(l->buffer);
    if (rc == 0)
        json_array_clear(l->buffer);
    return left;
}

void fe_reqlog_destroy(fe_reqlog_t **pl)
{
    if (!pl || !*pl)
        return;
    fe_reqlog_t *l = *pl;
    event_free(l->timer);
    json_decref(l->buffer);
    json_decref(l->inflight);
    free(l->frontend);
    free(l);
    *pl = NULL;
}
