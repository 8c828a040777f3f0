/*
 * wtool_vsjob: file search's job operations (wtool_vsjob.h).
 *
 * Ingestion is a small state machine on the worker's loop:
 *   READ   the vector store file and its content (one statement);
 *   EMBED  its text extracted and chunked (CPU, in the callback), the
 *          chunks embedded (wtool_embed: batches on the upstream);
 *   WRITE  chunks, usage and status completed, in one statement;
 *   FAIL   status failed with last_error, then the job's error event.
 * A search is wtool_vsearch's, its results turned into the job's events.
 *
 * Database answers come back through a ticket (the pool has no cancel): a
 * cancelled operation detaches its ticket, and the late answer is dropped.
 */
#include <errno.h>
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_db.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_log.h"
#include "wsql_vstores.h"
#include "wtool_chunk.h"
#include "wtool_embed.h"
#include "wtool_extract.h"
#include "wtool_vsjob.h"

#define WHY_MAX 256

enum vs_state {
    VS_READ,   /* the file is being read */
    VS_EMBED,  /* its chunks are being embedded */
    VS_WRITE,  /* chunks and status completed are being written */
    VS_FAIL,   /* status failed is being written; then the error event */
    VS_SEARCH, /* a search runs */
};

struct ticket {
    sb_vsjob_t *v; /* NULL once the operation is gone */
};

struct sb_vsjob {
    sb_vs_env_t env;
    const json_t *job; /* borrowed */
    long long deadline_ms;
    enum vs_state state;
    char account[32];
    const char *store, *file; /* borrowed from the job */
    struct ticket *ticket;    /* the database query in flight, or NULL */
    char *text;               /* owned: the file's text */
    sb_chunk_t *chunks;       /* owned */
    size_t n_chunks;
    sb_embed_input_t *inputs; /* owned: the chunks as embedding inputs (into text) */
    sb_embed_t *embed;
    sb_vsearch_t *search;
    int64_t tokens, upstream_us;
    json_t *error; /* owned: the job's error event, sent once the failure is written */
    sb_vsjob_cb cb;
    void *arg;
};

bool sb_vsjob_is_op(const json_t *request)
{
    const char *op = json_string_value(json_object_get(request, "op"));
    return op && (!strcmp(op, SB_VSJOB_OP_INGEST) || !strcmp(op, SB_VSJOB_OP_SEARCH));
}

static void vsjob_free(sb_vsjob_t *v)
{
    if (v->ticket)
        v->ticket->v = NULL; /* the callback frees it */
    sb_embed_cancel(&v->embed);
    sb_vsearch_cancel(&v->search);
    free(v->text);
    free(v->chunks);
    free(v->inputs);
    json_decref(v->error);
    free(v);
}

void sb_vsjob_cancel(sb_vsjob_t **vp)
{
    if (!vp || !*vp)
        return;
    vsjob_free(*vp);
    *vp = NULL;
}

/* The end: events (stolen) go to the caller, who owns them; final (stolen) closes them. */
static void deliver(sb_vsjob_t *v, json_t *events, json_t *final)
{
    if (!events)
        events = json_array();
    json_array_append_new(events, final);
    v->cb(v->arg, events);
    vsjob_free(v);
}

/* events ending in completed, after the embedding's usage when counted. */
static json_t *completed(sb_vsjob_t *v, json_t *events)
{
    if (!events)
        events = json_array();
    if (v->tokens > 0)
        json_array_append_new(events, sb_event_usage(v->tokens, 0, 0));
    return events;
}

static json_t *final_completed(const sb_vsjob_t *v)
{
    return sb_event_completed("completed", NULL, json_string_value(json_object_get(v->job, "model")), v->upstream_us);
}

static void query(sb_vsjob_t *v, const char *stmt, int n, const char *const *params, sb_db_cb cb)
{
    v->ticket = sb_xcalloc(1, sizeof *v->ticket);
    v->ticket->v = v;
    sb_db_query(v->env.db, stmt, n, params, cb, v->ticket);
}

/* The operation behind a ticket whose answer came (NULL when it is gone); frees the ticket. */
static sb_vsjob_t *ticket_take(struct ticket *t)
{
    sb_vsjob_t *v = t->v;
    if (v)
        v->ticket = NULL;
    free(t);
    return v;
}

static json_t *db_error(const char *what, const char *err)
{
    sb_warn("file search: %s failed: %s", what, err ? err : "no result");
    return sb_event_error(500, SB_ERR_SERVER, NULL, "file search's database query failed");
}

/* ---- failure ------------------------------------------------------------------------ */

static void on_failed(const PGresult *res, const char *err, void *arg)
{
    sb_vsjob_t *v = ticket_take(arg);
    if (!v)
        return;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK)
        sb_warn("file search: marking %s in %s failed did not work: %s", v->file, v->store, err ? err : "no result");
    json_t *e = v->error;
    v->error = NULL;
    deliver(v, NULL, e);
}

/* The file cannot be ingested: last_error {code, message} is written, then
 * the job ends with error (stolen). */
static void fail(sb_vsjob_t *v, const char *code, const char *message, json_t *error)
{
    v->state = VS_FAIL;
    v->error = error;
    json_t *le = json_pack("{s:s, s:s}", "code", code, "message", message);
    char *last_error = json_dumps(le, JSON_COMPACT);
    json_decref(le);
    const char *params[] = {v->store, v->file, v->account, last_error};
    query(v, SB_WSQL_VS_INGEST_FAIL, 4, params, on_failed);
    free(last_error);
}

/* A failure of the file itself (unsupported_file, invalid_file): a 400 with that code. */
static void fail_file(sb_vsjob_t *v, const char *code, const char *message)
{
    fail(v, code, message, sb_event_error(400, SB_ERR_INVALID_REQUEST, code, message));
}

/* A failure of the gateway or the embeddings upstream: server_error, and error (stolen) for the job. */
static void fail_server(sb_vsjob_t *v, json_t *error)
{
    const char *m = json_string_value(json_object_get(error, "message"));
    fail(v, "server_error", m ? m : "the file could not be ingested", error);
}

/* ---- ingestion ---------------------------------------------------------------------- */

static void not_in_progress(sb_vsjob_t *v, const char *status)
{
    char *msg = sb_xasprintf("vector store file %s is %s, not in progress", v->file, status);
    deliver(v, NULL, sb_event_error(409, SB_ERR_INVALID_REQUEST, "vector_store_file_not_in_progress", msg));
    free(msg);
}

static void on_written(const PGresult *res, const char *err, void *arg)
{
    sb_vsjob_t *v = ticket_take(arg);
    if (!v)
        return;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) != 1) {
        fail_server(v, db_error("writing the chunks", err));
        return;
    }
    if (strcmp(PQgetvalue(res, 0, 0), "1")) {
        not_in_progress(v, "no longer in progress");
        return;
    }
    sb_info("file search: %s in %s: %zu chunks", v->file, v->store, v->n_chunks);
    deliver(v, completed(v, NULL), final_completed(v));
}

static void on_embedded(void *arg, float *vecs, size_t dim, int64_t tokens, int64_t upstream_us, json_t *err)
{
    sb_vsjob_t *v = arg;
    v->embed = NULL; /* it frees itself when this returns */
    v->tokens = tokens;
    v->upstream_us = upstream_us;
    if (err) {
        fail_server(v, err);
        return;
    }
    const char **texts = sb_xcalloc(v->n_chunks, sizeof *texts);
    size_t *lens = sb_xcalloc(v->n_chunks, sizeof *lens);
    long long usage = 0;
    for (size_t i = 0; i < v->n_chunks; i++) {
        texts[i] = v->text + v->chunks[i].off;
        lens[i] = v->chunks[i].len;
        usage += (long long)lens[i] + 4 * (long long)dim;
    }
    char *text_lit = sb_vs_pg_text_array(texts, lens, v->n_chunks);
    char *vec_lit = sb_vs_pg_real_array(vecs, v->n_chunks * dim);
    free(texts);
    free(lens);
    free(vecs);
    char dims[24], usage_bytes[24];
    snprintf(dims, sizeof dims, "%zu", dim);
    snprintf(usage_bytes, sizeof usage_bytes, "%lld", usage);
    v->state = VS_WRITE;
    const char *params[] = {v->store, v->file, v->account, text_lit, vec_lit, dims, usage_bytes};
    query(v, SB_WSQL_VS_INGEST_WRITE, 7, params, on_written);
    free(text_lit);
    free(vec_lit);
}

/* The file's bytes are here: text, chunks, and the embedding started. */
static void ingest(sb_vsjob_t *v, const PGresult *res)
{
    const char *mime = PQgetvalue(res, 0, 2), *filename = PQgetvalue(res, 0, 1);
    size_t len = 0;
    unsigned char *bytes = PQunescapeBytea((const unsigned char *)PQgetvalue(res, 0, 3), &len);
    if (!bytes) {
        fail_server(v, sb_event_error(500, SB_ERR_SERVER, NULL, "the file's content could not be read"));
        return;
    }
    char why[WHY_MAX];
    int rc = sb_extract_text(mime, filename, (const char *)bytes, len, &v->text, why, sizeof why);
    PQfreemem(bytes);
    if (rc < 0) {
        fail_file(v, rc == -ENOTSUP ? "unsupported_file" : "invalid_file", why);
        return;
    }
    json_t *strategy = json_loads(PQgetvalue(res, 0, 4), 0, NULL);
    int max, overlap;
    rc = sb_chunk_params(strategy, &max, &overlap, why, sizeof why);
    json_decref(strategy);
    if (rc < 0) {
        fail_server(v, sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, why));
        return;
    }
    sb_chunk_split(v->text, strlen(v->text), max, overlap, &v->chunks, &v->n_chunks);
    if (v->n_chunks == 0) { /* extraction refuses text without a word; kept as a guard */
        fail_file(v, "invalid_file", "the file has no text");
        return;
    }
    v->inputs = sb_xcalloc(v->n_chunks, sizeof *v->inputs);
    for (size_t i = 0; i < v->n_chunks; i++)
        v->inputs[i] = (sb_embed_input_t){v->text + v->chunks[i].off, v->chunks[i].len};
    v->state = VS_EMBED;
    sb_embed_env_t ee = {.base = v->env.base, .up = v->env.up, .connect_timeout_ms = v->env.connect_timeout_ms};
    v->embed = sb_embed_start(&ee, sb_job_route(v->job), v->inputs, v->n_chunks, false, v->deadline_ms, on_embedded, v);
}

static void on_read(const PGresult *res, const char *err, void *arg)
{
    sb_vsjob_t *v = ticket_take(arg);
    if (!v)
        return;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) < 6) {
        deliver(v, NULL, db_error("reading the file", err));
        return;
    }
    if (PQntuples(res) == 0) {
        char *msg = sb_xasprintf("No vector store file %s found in vector store %s.", v->file, v->store);
        deliver(v, NULL, sb_event_error(404, SB_ERR_NOT_FOUND, NULL, msg));
        free(msg);
        return;
    }
    const char *status = PQgetvalue(res, 0, 0);
    if (strcmp(status, "in_progress")) {
        not_in_progress(v, status);
        return;
    }
    if (PQgetisnull(res, 0, 3)) {
        fail_file(v, "invalid_file", "the file was not found (deleted before it was ingested)");
        return;
    }
    ingest(v, res);
}

/* ---- search ------------------------------------------------------------------------- */

static void on_results(void *arg, json_t *result, int64_t tokens, json_t *err)
{
    sb_vsjob_t *v = arg;
    v->search = NULL; /* it frees itself when this returns */
    v->tokens = tokens;
    if (err) {
        json_decref(result);
        deliver(v, completed(v, NULL), err);
        return;
    }
    json_t *events = completed(v, NULL);
    json_object_set_new(result, "type", json_string(SB_VSJOB_EV_RESULTS));
    json_array_append_new(events, result);
    deliver(v, events, final_completed(v));
}

/* ---- start -------------------------------------------------------------------------- */

int sb_vsjob_start(const sb_vs_env_t *env, const json_t *job, long long deadline_ms, sb_vsjob_cb cb, void *arg,
                   sb_vsjob_t **out, json_t **err)
{
    *out = NULL;
    *err = NULL;
    const json_t *request = sb_job_request(job);
    const json_t *account = json_object_get(job, "account_id");
    if (!json_is_object(sb_job_route(job)) || !json_is_integer(account)) {
        *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "file search job needs a route and an account_id");
        return -EINVAL;
    }
    if (!env->db) {
        *err = sb_event_error(503, SB_ERR_OVERLOADED, NULL, SB_VS_ERR_NO_DB);
        return -ENOTSUP;
    }
    sb_vsjob_t *v = sb_xcalloc(1, sizeof *v);
    v->env = *env;
    v->job = job;
    v->deadline_ms = deadline_ms;
    v->cb = cb;
    v->arg = arg;
    snprintf(v->account, sizeof v->account, "%lld", (long long)json_integer_value(account));
    const char *op = json_string_value(json_object_get(request, "op"));
    if (op && !strcmp(op, SB_VSJOB_OP_SEARCH)) {
        v->state = VS_SEARCH;
        if (sb_vsearch_start(env, sb_job_route(job), json_integer_value(account), request, deadline_ms, on_results, v,
                             &v->search, err) < 0) {
            vsjob_free(v);
            return -EINVAL;
        }
        *out = v;
        return 0;
    }
    v->store = json_string_value(json_object_get(request, "vector_store_id"));
    v->file = json_string_value(json_object_get(request, "file_id"));
    if (!v->store || !*v->store || !v->file || !*v->file) {
        vsjob_free(v);
        *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "vs_ingest needs a vector_store_id and a file_id");
        return -EINVAL;
    }
    v->state = VS_READ;
    const char *params[] = {v->store, v->file, v->account};
    query(v, SB_WSQL_VS_INGEST_READ, 3, params, on_read);
    *out = v;
    return 0;
}
