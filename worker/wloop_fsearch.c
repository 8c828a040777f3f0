/*
 * wloop_fsearch: file search's steps (wloop_tools.h). The model's queries
 * are ranked over the request's vector stores (wtool_vsearch.h: hybrid
 * full-text and embedding similarity, the tool's filters and
 * ranking_options), embedded with the stores' own embeddings model. The
 * item keeps every result (shown with include file_search_call.results);
 * the model reads them numbered, with their file names, which it cites as
 * [filename] (file_citation annotations at the citing text).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_log.h"
#include "sb_time.h"
#include "wloop_tools.h"
#include "wsql_tools.h"
#include "wtool_vsearch.h"

typedef struct sb_wfs {
    sb_wexec_t *e;
    sb_wdbq_t *q;
    sb_vsearch_t *vs;
    json_t *queries; /* owned */
} sb_wfs_t;

static void sb_wfs_free(sb_wfs_t *f)
{
    if (!f)
        return;
    sb_wdbq_forget(&f->q);
    sb_vsearch_cancel(&f->vs);
    json_decref(f->queries);
    free(f);
}

static void sb_wfs_end(sb_wfs_t *f, const char *text, const char *error, size_t n)
{
    sb_wexec_t *e = f->e;
    json_object_set_new(e->item, "status", json_string(error ? "failed" : "completed"));
    json_object_set_new(e->item, "sb_output", json_string(text));
    sb_wloop_log(e->l, e, "file_search", NULL, error ? "error" : "ok", n, error);
    e->step = NULL;
    sb_wfs_free(f);
    sb_wexec_finish(e, text);
}

static void sb_wfs_fail(sb_wfs_t *f, const char *why)
{
    char *text = sb_xasprintf("Error: the file search failed: %s", why);
    sb_wfs_end(f, text, why, 0);
    free(text);
}

/* The text of a result's content parts, joined (malloc'd). */
static char *sb_wfs_text(const json_t *r)
{
    sb_buf_t b = {0};
    size_t i;
    const json_t *c;
    json_array_foreach (json_object_get(r, "content"), i, c) {
        const char *t = json_string_value(json_object_get(c, "text"));
        if (t)
            sb_buf_add(&b, t, strlen(t));
    }
    sb_buf_add(&b, "", 1);
    return b.p;
}

static void sb_wfs_on_results(void *arg, json_t *result, int64_t tokens, json_t *err)
{
    sb_wfs_t *f = arg;
    f->vs = NULL; /* freed when this returns */
    (void)tokens;
    if (err) {
        const char *msg = json_string_value(json_object_get(err, "message"));
        sb_wfs_fail(f, msg ? msg : "the search could not be run");
        json_decref(err);
        json_decref(result);
        return;
    }
    sb_wloop_t *l = f->e->l;
    json_t *results = json_array();
    sb_buf_t b = {0};
    size_t i;
    const json_t *r;
    json_t *data = json_object_get(result, "data");
    if (!l->cited_files)
        l->cited_files = json_array();
    json_array_foreach (data, i, r) {
        char *text = sb_wfs_text(r);
        const char *name = json_string_value(json_object_get(r, "filename"));
        json_array_append_new(results, json_pack("{s:O?, s:O?, s:O?, s:O?, s:s}", "file_id",
                                                 json_object_get(r, "file_id"), "filename",
                                                 json_object_get(r, "filename"), "score", json_object_get(r, "score"),
                                                 "attributes", json_object_get(r, "attributes"), "text", text));
        json_array_append_new(l->cited_files, json_pack("{s:O?, s:O?}", "file_id", json_object_get(r, "file_id"),
                                                        "filename", json_object_get(r, "filename")));
        char *head = sb_xasprintf("%s[%zu] %s (score %.3f)\n", i ? "\n\n" : "", i + 1, name ? name : "?",
                                  json_number_value(json_object_get(r, "score")));
        sb_buf_add(&b, head, strlen(head));
        sb_buf_add(&b, text, strlen(text));
        free(head);
        free(text);
    }
    if (json_array_size(data) == 0) {
        static const char none[] = "No results: nothing in the files matches these queries.";
        sb_buf_add(&b, none, sizeof none - 1);
    }
    sb_buf_add(&b, "", 1);
    json_object_set_new(f->e->item, "results", results);
    char *capped = sb_wloop_cap(l, b.p);
    sb_wfs_end(f, capped, NULL, b.len);
    free(capped);
    free(b.p);
    json_decref(result);
}

static void sb_wfs_on_route(const PGresult *res, const char *err, void *owner)
{
    sb_wfs_t *f = owner;
    f->q = NULL;
    sb_wloop_t *l = f->e->l;
    const json_t *tool = l->plan->file_search;
    if (err || !res || PQntuples(res) != 1) {
        char *why = sb_xasprintf(err ? "the vector store could not be read" : "vector store %.64s was not found",
                                 json_string_value(json_array_get(json_object_get(tool, "vector_store_ids"), 0)));
        sb_wfs_fail(f, why);
        free(why);
        return;
    }
    json_t *route = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
    json_t *params =
        json_pack("{s:O, s:O}", "vector_store_ids", json_object_get(tool, "vector_store_ids"), "query", f->queries);
    static const char *const copied[] = {"filters", "max_num_results", "ranking_options"};
    for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
        json_t *v = json_object_get(tool, copied[i]);
        if (v && !json_is_null(v))
            json_object_set(params, copied[i], v);
    }
    sb_worker_t *w = l->j->w;
    sb_vs_env_t env = {.base = w->base, .db = w->db, .up = w->upstream, .connect_timeout_ms = w->connect_timeout_ms};
    json_t *e = NULL;
    long long account = json_integer_value(json_object_get(l->j->job, "account_id"));
    if (sb_vsearch_start(&env, route, account, params, sb_now_ms() + sb_wloop_timeout(l), sb_wfs_on_results, f, &f->vs,
                         &e) < 0) {
        const char *msg = json_string_value(json_object_get(e, "message"));
        sb_wfs_fail(f, msg ? msg : "the search could not be started");
        json_decref(e);
    }
    json_decref(params);
    json_decref(route);
}

void sb_wloop_fsearch_start(sb_wexec_t *e, const json_t *args)
{
    sb_wloop_t *l = e->l;
    sb_wfs_t *f = sb_xcalloc(1, sizeof *f);
    f->e = e;
    e->step = f;
    json_t *q = json_object_get(args, "queries");
    f->queries = json_array();
    size_t i;
    json_t *v;
    json_array_foreach (q, i, v)
        if (json_is_string(v) && json_string_length(v) > 0 && json_array_size(f->queries) < SB_VS_MAX_QUERIES)
            json_array_append(f->queries, v);
    if (json_is_string(json_object_get(args, "query")) && json_array_size(f->queries) == 0)
        json_array_append(f->queries, json_object_get(args, "query"));
    json_object_set(e->item, "queries", f->queries);
    sb_wloop_emit(l, sb_event_item_progress(e->index, "searching"));
    if (json_array_size(f->queries) == 0) {
        sb_wfs_fail(f, "the call has no query");
        return;
    }
    if (!l->j->w->db) {
        sb_wfs_fail(f, SB_VS_ERR_NO_DB);
        return;
    }
    char account[32];
    snprintf(account, sizeof account, "%lld", (long long)json_integer_value(json_object_get(l->j->job, "account_id")));
    const char *store = json_string_value(json_array_get(json_object_get(l->plan->file_search, "vector_store_ids"), 0));
    const char *params[] = {store ? store : "", account};
    f->q = sb_wdbq_run(l, SB_WSQL_STORE_ROUTE, 2, params, sb_wfs_on_route, f);
}

void sb_wloop_fsearch_cancel(sb_wexec_t *e)
{
    sb_wfs_free(e->step);
    e->step = NULL;
}
