/*
 * wtool_vsearch: one file search on the worker's loop (wtool_vsearch.h).
 *
 *   start ──> the queries' embeddings (wtool_embed) ─┐
 *         └─> the stores' completed files (SQL) ─────┴─> filters (C) ─> one
 *             ranking query per query (SQL, at once) ─> merged, best first ─> cb
 *
 * The embedding and the file list run concurrently. The pool (sb_db) has
 * no cancel: each query carries a ticket that a cancelled search detaches,
 * so a late answer finds no search and is dropped.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_db.h"
#include "sb_event.h"
#include "sb_log.h"
#include "wsql_vstores.h"
#include "wtool_embed.h"
#include "wtool_vsearch.h"

/* Queries in flight at once: the file list, and one ranking per query. */
#define MAX_TICKETS (SB_VS_MAX_QUERIES + 1)

struct ticket {
    sb_vsearch_t *s; /* NULL once the search is gone */
    int query;       /* the ranking's query, or -1 for the file list */
};

struct sb_vsearch {
    sb_vs_env_t env;
    json_t *route;
    long long account_id;
    long long deadline_ms;
    sb_vs_params_t p;
    sb_embed_t *embed;
    sb_embed_input_t *inputs; /* the queries, as embedding inputs (borrowed from p.queries) */
    bool embedded, listed;
    float *qvecs; /* owned: one unit vector per query */
    size_t dim;
    int64_t tokens;
    json_t *files; /* owned: "store\x1f" "file" -> {filename, attributes} of the files that may answer */
    json_t *hits;  /* owned: "store\x1f" "file\x1f" "seq" -> {score, store, file, text}, best score per chunk */
    int ranks_open;
    struct ticket *tickets[MAX_TICKETS];
    sb_vsearch_cb cb;
    void *arg;
};

static void search_free(sb_vsearch_t *s)
{
    for (int i = 0; i < MAX_TICKETS; i++)
        if (s->tickets[i])
            s->tickets[i]->s = NULL; /* the callback frees it */
    sb_embed_cancel(&s->embed);
    sb_vs_params_clear(&s->p);
    free(s->inputs);
    free(s->qvecs);
    json_decref(s->files);
    json_decref(s->hits);
    json_decref(s->route);
    free(s);
}

void sb_vsearch_cancel(sb_vsearch_t **sp)
{
    if (!sp || !*sp)
        return;
    search_free(*sp);
    *sp = NULL;
}

static void deliver(sb_vsearch_t *s, json_t *result, json_t *err)
{
    s->cb(s->arg, result, s->tokens, err);
    search_free(s);
}

static void db_failed(sb_vsearch_t *s, const char *what, const char *err)
{
    sb_warn("file search: %s failed: %s", what, err ? err : "no result");
    deliver(s, NULL, sb_event_error(500, SB_ERR_SERVER, NULL, "file search's database query failed"));
}

static struct ticket *ticket_new(sb_vsearch_t *s, int query)
{
    for (int i = 0; i < MAX_TICKETS; i++) {
        if (!s->tickets[i]) {
            struct ticket *t = sb_xcalloc(1, sizeof *t);
            t->s = s;
            t->query = query;
            s->tickets[i] = t;
            return t;
        }
    }
    return NULL; /* cannot happen: at most MAX_TICKETS queries are ever made */
}

/* The search behind a ticket whose answer came, or NULL when it is gone;
 * the ticket is freed either way. */
static sb_vsearch_t *ticket_take(struct ticket *t)
{
    sb_vsearch_t *s = t->s;
    if (s)
        for (int i = 0; i < MAX_TICKETS; i++)
            if (s->tickets[i] == t)
                s->tickets[i] = NULL;
    free(t);
    return s;
}

static int cmp_score(const void *a, const void *b)
{
    double x = json_real_value(json_object_get(*(json_t *const *)a, "score"));
    double y = json_real_value(json_object_get(*(json_t *const *)b, "score"));
    if (x != y)
        return x < y ? 1 : -1;
    /* Ties: a stable order, so the same search answers the same. */
    return strcmp(json_string_value(json_object_get(*(json_t *const *)a, "key")),
                  json_string_value(json_object_get(*(json_t *const *)b, "key")));
}

/* All rankings are in: the best chunks, as OpenAI's search results. */
static void finish(sb_vsearch_t *s)
{
    size_t n = json_object_size(s->hits), k = 0;
    json_t **all = sb_xcalloc(n ? n : 1, sizeof *all);
    const char *key;
    json_t *hit;
    json_object_foreach (s->hits, key, hit) {
        json_object_set_new(hit, "key", json_string(key));
        all[k++] = hit;
    }
    qsort(all, n, sizeof *all, cmp_score);
    json_t *data = json_array();
    for (size_t i = 0; i < n && i < (size_t)s->p.max_results; i++) {
        const char *fkey = json_string_value(json_object_get(all[i], "file_key"));
        const json_t *file = json_object_get(s->files, fkey);
        json_array_append_new(
            data, json_pack("{s:O, s:O, s:O, s:O, s:[{s:s, s:O}]}", "file_id", json_object_get(all[i], "file"),
                            "filename", json_object_get(file, "filename"), "score", json_object_get(all[i], "score"),
                            "attributes", json_object_get(file, "attributes"), "content", "type", "text", "text",
                            json_object_get(all[i], "text")));
    }
    free(all);
    deliver(s, json_pack("{s:O, s:o}", "search_query", s->p.queries, "data", data), NULL);
}

static void on_rank(const PGresult *res, const char *err, void *arg)
{
    sb_vsearch_t *s = ticket_take(arg);
    if (!s)
        return;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) < 5) {
        db_failed(s, "ranking", err);
        return;
    }
    for (int r = 0; r < PQntuples(res); r++) {
        const char *store = PQgetvalue(res, r, 0), *file = PQgetvalue(res, r, 1), *seq = PQgetvalue(res, r, 2);
        double score = strtod(PQgetvalue(res, r, 4), NULL);
        char *key = sb_xasprintf("%s\x1f%s\x1f%s", store, file, seq);
        json_t *hit = json_object_get(s->hits, key);
        if (!hit || json_real_value(json_object_get(hit, "score")) < score) {
            char *fkey = sb_xasprintf("%s\x1f%s", store, file);
            json_t *text = json_string(PQgetvalue(res, r, 3));
            json_object_set_new(s->hits, key,
                                json_pack("{s:f, s:s, s:s, s:o}", "score", score, "file", file, "file_key", fkey,
                                          "text", text ? text : json_string("")));
            free(fkey);
        }
        free(key);
    }
    if (--s->ranks_open == 0)
        finish(s);
}

/* Both halves are in: the filters pick the files, and each query is ranked. */
static void rank(sb_vsearch_t *s)
{
    size_t n = json_object_size(s->files), k = 0;
    if (n == 0) {
        finish(s);
        return;
    }
    const char **stores = sb_xcalloc(n, sizeof *stores), **files = sb_xcalloc(n, sizeof *files);
    const char *key;
    json_t *f;
    json_object_foreach (s->files, key, f) {
        stores[k] = json_string_value(json_object_get(f, "store"));
        files[k++] = json_string_value(json_object_get(f, "file"));
    }
    char *store_lit = sb_vs_pg_text_array(stores, NULL, n), *file_lit = sb_vs_pg_text_array(files, NULL, n);
    free(stores);
    free(files);
    char ew[32], tw[32], threshold[32], limit[16];
    snprintf(ew, sizeof ew, "%.17g", s->p.ew);
    snprintf(tw, sizeof tw, "%.17g", s->p.tw);
    snprintf(threshold, sizeof threshold, "%.17g", s->p.threshold);
    snprintf(limit, sizeof limit, "%d", s->p.max_results);
    size_t nq = json_array_size(s->p.queries);
    for (size_t q = 0; q < nq; q++) {
        char *vec = s->qvecs ? sb_vs_pg_real_array(s->qvecs + q * s->dim, s->dim) : sb_xstrdup("{}");
        const char *params[] = {store_lit, file_lit, vec,       json_string_value(json_array_get(s->p.queries, q)),
                                ew,        tw,       threshold, limit};
        s->ranks_open++;
        sb_db_query(s->env.db, SB_WSQL_VS_SEARCH_RANK, 8, params, on_rank, ticket_new(s, (int)q));
        free(vec);
    }
    free(store_lit);
    free(file_lit);
}

static void on_files(const PGresult *res, const char *err, void *arg)
{
    sb_vsearch_t *s = ticket_take(arg);
    if (!s)
        return;
    if (!res || PQresultStatus(res) != PGRES_TUPLES_OK || PQnfields(res) < 4) {
        db_failed(s, "listing the stores' files", err);
        return;
    }
    for (int r = 0; r < PQntuples(res); r++) {
        json_t *attributes = json_loads(PQgetvalue(res, r, 3), 0, NULL);
        if (!json_is_object(attributes)) {
            json_decref(attributes);
            attributes = json_object();
        }
        if (s->p.filter && !sb_vs_filter_match(s->p.filter, attributes)) {
            json_decref(attributes);
            continue;
        }
        const char *store = PQgetvalue(res, r, 0), *file = PQgetvalue(res, r, 1);
        json_t *filename = json_string(PQgetvalue(res, r, 2));
        char *key = sb_xasprintf("%s\x1f%s", store, file);
        json_object_set_new(s->files, key,
                            json_pack("{s:s, s:s, s:o, s:o}", "store", store, "file", file, "filename",
                                      filename ? filename : json_string(""), "attributes", attributes));
        free(key);
    }
    s->listed = true;
    if (s->embedded)
        rank(s);
}

static void on_embedded(void *arg, float *vecs, size_t dim, int64_t tokens, int64_t upstream_us, json_t *err)
{
    sb_vsearch_t *s = arg;
    s->embed = NULL; /* it frees itself when this returns */
    s->tokens = tokens;
    if (err) {
        deliver(s, NULL, err);
        return;
    }
    s->qvecs = vecs;
    s->dim = dim;
    s->embedded = true;
    if (s->listed)
        rank(s);
}

int sb_vsearch_start(const sb_vs_env_t *env, const json_t *route, long long account_id, const json_t *params,
                     long long deadline_ms, sb_vsearch_cb cb, void *arg, sb_vsearch_t **out, json_t **err)
{
    *out = NULL;
    *err = NULL;
    if (!env->db) {
        *err = sb_event_error(503, SB_ERR_OVERLOADED, NULL, SB_VS_ERR_NO_DB);
        return -ENOTSUP;
    }
    sb_vsearch_t *s = sb_xcalloc(1, sizeof *s);
    if (sb_vs_params_parse(params, &s->p, err) < 0) {
        free(s);
        return -EINVAL;
    }
    s->env = *env;
    s->route = json_incref((json_t *)route);
    s->account_id = account_id;
    s->deadline_ms = deadline_ms;
    s->files = json_object();
    s->hits = json_object();
    s->cb = cb;
    s->arg = arg;

    size_t ns = json_array_size(s->p.store_ids);
    const char **ids = sb_xcalloc(ns ? ns : 1, sizeof *ids);
    for (size_t i = 0; i < ns; i++)
        ids[i] = json_string_value(json_array_get(s->p.store_ids, i));
    char *lit = sb_vs_pg_text_array(ids, NULL, ns);
    free(ids);
    char account[32];
    snprintf(account, sizeof account, "%lld", account_id);
    const char *qp[] = {lit, account};
    sb_db_query(env->db, SB_WSQL_VS_SEARCH_FILES, 2, qp, on_files, ticket_new(s, -1));
    free(lit);

    if (s->p.ew > 0) {
        size_t nq = json_array_size(s->p.queries);
        s->inputs = sb_xcalloc(nq, sizeof *s->inputs);
        for (size_t i = 0; i < nq; i++) {
            const json_t *q = json_array_get(s->p.queries, i);
            s->inputs[i] = (sb_embed_input_t){json_string_value(q), json_string_length(q)};
        }
        sb_embed_env_t ee = {.base = env->base, .up = env->up, .connect_timeout_ms = env->connect_timeout_ms};
        s->embed = sb_embed_start(&ee, route, s->inputs, nq, true, deadline_ms, on_embedded, s);
    } else {
        s->embedded = true; /* text alone: nothing to embed */
    }
    *out = s;
    return 0;
}
