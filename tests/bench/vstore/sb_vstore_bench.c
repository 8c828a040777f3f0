/*
 * sb-vstore-bench: what file search costs on the worker (worker/tools/
 * wtool_vsjob.h, wtool_vsearch.h), with the worker's own statements
 * (wsql.c) on an sb_db pool and one libevent loop, as the worker runs
 * them, against the upstream emulator's embeddings (in a child process,
 * so its work is not counted as the worker's).
 *
 *   sb-vstore-bench --dsn DSN [--dims D] [--files N] [--file-kb K]
 *                   [--sizes "10000 100000"] [--queries Q] [--keep]
 *
 * DSN names a migrated database (tests/bench/vstore/run makes a throwaway
 * one). Everything is made under an account of its own, removed at the end
 * unless --keep.
 *
 * Ingestion: N files (default 16) of K KiB (default 64) of synthetic prose
 * are attached to a store and ingested by N concurrent vs_ingest jobs
 * (read, extract, chunk at 800/400 tokens, embed in batches of 64, write);
 * reported: chunks written per second of wall time (first start to last
 * end), and each job's time p50/p95.
 *
 * Search: for each size S (default 10000 and 100000), a store of S chunks
 * in 100 files is filled by SQL (text of about 500 words drawn from a
 * 1000-word vocabulary, unit embeddings of D dimensions, D default 256 (the
 * emulator's), random), then Q searches (default 30) of 2-4 vocabulary
 * words run one after another through sb_vsearch (the query embedded by
 * the emulator, then ranked exactly over every chunk): hybrid (0.7/0.3),
 * text only (0/1), and hybrid with a filter letting 10 of the 100 files
 * through. Reported: p50, p95, max in ms.
 *
 * It also tries CREATE EXTENSION vector and reports what the server says.
 */
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emu.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_db.h"
#include "sb_job.h"
#include "sb_time.h"
#include "upstream.h"
#include "wsql.h"
#include "wtool_vsearch.h"
#include "wtool_vsjob.h"

#define KEY "sk-bench-vstore"
#define KEY_ENV "SB_BENCH_VSTORE_KEY"
#define VOCAB 1000
#define STORE_FILES 100

static struct event_base *base;
static sb_upstream_t *up;
static sb_db_t *db;
static PGconn *conn;
static int emu_port;
static long long account;
static int dims = 256;
static char tag[32];

typedef struct series {
    double *v;
    size_t n, cap;
} series_t;

static void series_add(series_t *s, double ms)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = sb_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = ms;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile. */
static double pct(series_t *s, double p)
{
    if (s->n == 0)
        return 0;
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    size_t k = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}

static void die(const char *what, const char *why)
{
    fprintf(stderr, "sb-vstore-bench: %s: %s\n", what, why ? why : "");
    exit(2);
}

/* Runs SQL with text parameters on the setup connection; the result (to PQclear), or death. */
static PGresult *sql(const char *q, int n, const char *const *params)
{
    PGresult *r = PQexecParams(conn, q, n, NULL, params, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_COMMAND_OK && PQresultStatus(r) != PGRES_TUPLES_OK)
        die(q, PQerrorMessage(conn));
    return r;
}

static void sql0(const char *q, int n, const char *const *params)
{
    PQclear(sql(q, n, params));
}

/* The vocabulary: VOCAB made-up words ("word0".."word999" would all stem
 * alike in English full-text search: these are letters only). */
static char vocab[VOCAB][12];

static void make_vocab(void)
{
    static const char cons[] = "bcdfghjklmnprstvz", vow[] = "aeiou";
    unsigned s = 12345;
    for (int i = 0; i < VOCAB; i++) {
        int len = 2 + (int)(i % 3);
        char *w = vocab[i];
        int k = 0;
        for (int j = 0; j < len; j++) {
            s = s * 1103515245u + 12345u;
            w[k++] = cons[(s >> 16) % (sizeof cons - 1)];
            w[k++] = vow[(s >> 8) % (sizeof vow - 1)];
        }
        snprintf(w + k, sizeof vocab[i] - (size_t)k, "%c", 'a' + i % 26);
    }
}

static char *vocab_literal(void)
{
    const char *items[VOCAB];
    for (int i = 0; i < VOCAB; i++)
        items[i] = vocab[i];
    return sb_vs_pg_text_array(items, NULL, VOCAB);
}

static json_t *route(void)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", emu_port);
    return json_pack("{s:s, s:s, s:s, s:s, s:i, s:{s:i}}", "provider", "openai-chat", "base_url", url, "upstream_model",
                     "emu-embed", "credential_ref", KEY_ENV, "timeout_ms", 60000, "capabilities",
                     "embedding_dimensions", dims);
}

/* ---- the emulator in a child process --------------------------------------------------- */

static pid_t emu_pid;

static void start_emulator(void)
{
    int fds[2];
    if (pipe(fds) != 0)
        die("pipe", strerror(errno));
    emu_pid = fork();
    if (emu_pid < 0)
        die("fork", strerror(errno));
    if (emu_pid == 0) {
        close(fds[0]);
        signal(SIGPIPE, SIG_IGN);
        struct event_base *b = event_base_new();
        struct sb_emu_config cfg = {.port = 0, .require_key = KEY, .max_body = 256u * 1024u * 1024u};
        struct sb_emu *e = sb_emu_new(b, &cfg);
        int port = e ? sb_emu_port(e) : -1;
        if (write(fds[1], &port, sizeof port) != (ssize_t)sizeof port)
            _exit(1);
        close(fds[1]);
        if (e)
            event_base_dispatch(b);
        _exit(0);
    }
    close(fds[1]);
    if (read(fds[0], &emu_port, sizeof emu_port) != (ssize_t)sizeof emu_port || emu_port <= 0)
        die("emulator", "did not start");
    close(fds[0]);
}

/* ---- running jobs ------------------------------------------------------------------------ */

struct job_run {
    bool done;
    bool ok;
    int64_t start_us, end_us;
    json_t *events;
};

static void on_job(void *arg, json_t *events)
{
    struct job_run *r = arg;
    r->done = true;
    r->end_us = sb_mono_us();
    const json_t *fin = json_array_get(events, json_array_size(events) - 1);
    r->ok = fin && !strcmp(json_string_value(json_object_get(fin, "type")), "completed");
    if (!r->ok) {
        char *s = json_dumps(fin, 0);
        fprintf(stderr, "sb-vstore-bench: a job failed: %s\n", s ? s : "?");
        free(s);
    }
    r->events = events;
}

static sb_vsjob_t *start_job(json_t *job, struct job_run *r)
{
    sb_vs_env_t env = {.base = base, .db = db, .up = up, .connect_timeout_ms = 2000};
    sb_vsjob_t *v = NULL;
    json_t *err = NULL;
    r->start_us = sb_mono_us();
    if (sb_vsjob_start(&env, job, 0, on_job, r, &v, &err) < 0) {
        char *s = json_dumps(err, 0);
        die("a job did not start", s);
    }
    return v;
}

static void run_until_all(struct job_run *runs, size_t n)
{
    for (;;) {
        size_t left = 0;
        for (size_t i = 0; i < n; i++)
            left += !runs[i].done;
        if (!left)
            return;
        event_base_loop(base, EVLOOP_ONCE);
    }
}

/* ---- ingestion ------------------------------------------------------------------------ */

static void bench_ingest(int files, int kb)
{
    char acc[32], store[64];
    snprintf(acc, sizeof acc, "%lld", account);
    snprintf(store, sizeof store, "vs_%s_ingest", tag);
    const char *p[] = {store, acc};
    sql0("INSERT INTO vector_stores (id, account_id, embedding_model) VALUES ($1, $2::bigint, 'emu-embed')", 2, p);
    unsigned s = 777;
    for (int f = 0; f < files; f++) {
        sb_buf_t text = {0};
        while (text.len < (size_t)kb * 1024) {
            int words = 8 + (int)(s % 12);
            for (int w = 0; w < words; w++) {
                s = s * 1103515245u + 12345u;
                const char *word = vocab[(s >> 16) % VOCAB];
                sb_buf_add(&text, word, strlen(word));
                sb_buf_add(&text, w + 1 < words ? " " : ". ", w + 1 < words ? 1 : 2);
            }
            if ((s >> 8) % 5 == 0)
                sb_buf_add(&text, "\n\n", 2);
        }
        char id[64], name[64];
        snprintf(id, sizeof id, "file-%s-%d", tag, f);
        snprintf(name, sizeof name, "doc%d.txt", f);
        const char *pf[] = {id, acc, name, text.p};
        sql0("INSERT INTO files (id, account_id, filename, purpose, mime_type, bytes, content) VALUES "
             "($1, $2::bigint, $3, 'assistants', 'text/plain', length($4), convert_to($4, 'UTF8'))",
             4, pf);
        const char *pv[] = {store, id, name};
        sql0("INSERT INTO vector_store_files (vector_store_id, file_id, filename, chunking_strategy) VALUES "
             "($1, $2, $3, '{\"type\":\"auto\"}')",
             3, pv);
        sb_buf_free(&text);
    }
    struct job_run *runs = sb_xcalloc((size_t)files, sizeof *runs);
    json_t **jobs = sb_xcalloc((size_t)files, sizeof *jobs);
    int64_t t0 = sb_mono_us();
    for (int f = 0; f < files; f++) {
        char id[64];
        snprintf(id, sizeof id, "file-%s-%d", tag, f);
        jobs[f] = sb_job_new("req_bench", "emu-embed", account, route(),
                             json_pack("{s:s, s:s, s:s}", "op", "vs_ingest", "vector_store_id", store, "file_id", id));
        start_job(jobs[f], &runs[f]);
    }
    run_until_all(runs, (size_t)files);
    int64_t t1 = sb_mono_us();
    series_t per = {0};
    int ok = 0;
    for (int f = 0; f < files; f++) {
        ok += runs[f].ok;
        series_add(&per, (double)(runs[f].end_us - runs[f].start_us) / 1000.0);
        json_decref(runs[f].events);
        json_decref(jobs[f]);
    }
    PGresult *r = sql("SELECT count(*) FROM vector_store_chunks WHERE vector_store_id = $1", 1, p);
    long long chunks = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);
    double secs = (double)(t1 - t0) / 1e6;
    printf("\n## Ingestion\n\n");
    printf("%d files of %d KiB (%d ingested), chunks 800/400 tokens, %d dimensions, %d jobs at once\n\n", files, kb, ok,
           dims, files);
    printf("| chunks | wall s | chunks/s | KiB/s | job p50 ms | job p95 ms |\n|---|---|---|---|---|---|\n");
    printf("| %lld | %.2f | %.0f | %.0f | %.0f | %.0f |\n", chunks, secs, (double)chunks / secs,
           (double)files * kb / secs, pct(&per, 50), pct(&per, 95));
    free(per.v);
    free(runs);
    free(jobs);
}

/* ---- search --------------------------------------------------------------------------- */

struct search_run {
    bool done, ok;
    size_t results;
};

static void on_results(void *arg, json_t *result, int64_t tokens, json_t *err)
{
    struct search_run *r = arg;
    r->done = true;
    r->ok = err == NULL;
    r->results = json_array_size(json_object_get(result, "data"));
    if (err) {
        char *s = json_dumps(err, 0);
        fprintf(stderr, "sb-vstore-bench: a search failed: %s\n", s ? s : "?");
        free(s);
    }
    json_decref(result);
    json_decref(err);
}

static void fill_store(const char *store, long size)
{
    char acc[32], n[32], d[32], nf[32];
    snprintf(acc, sizeof acc, "%lld", account);
    snprintf(d, sizeof d, "%d", dims);
    snprintf(nf, sizeof nf, "%d", STORE_FILES);
    const char *p[] = {store, acc};
    sql0("INSERT INTO vector_stores (id, account_id, embedding_model) VALUES ($1, $2::bigint, 'emu-embed')", 2, p);
    const char *pf[] = {store, nf};
    sql0("INSERT INTO vector_store_files (vector_store_id, file_id, filename, status, attributes, chunking_strategy) "
         "SELECT $1, 'f' || g, 'doc' || g || '.txt', 'completed', jsonb_build_object('group', g % 10), "
         "'{\"type\":\"auto\"}' FROM generate_series(0, $2::int - 1) g",
         2, pf);
    char *words = vocab_literal();
    int64_t t0 = sb_mono_us();
    /* In batches, so progress shows and no statement holds everything. */
    const long batch = 10000;
    for (long from = 0; from < size; from += batch) {
        char f[32], t[32];
        snprintf(f, sizeof f, "%ld", from);
        snprintf(t, sizeof t, "%ld", (from + batch < size ? from + batch : size) - 1);
        const char *pi[] = {store, f, t, d, nf, words};
        sql0("INSERT INTO vector_store_chunks (vector_store_id, file_id, seq, text, embedding) "
             "SELECT $1, 'f' || (i % $5::int), i / $5::int, "
             "  (SELECT string_agg(($6::text[])[1 + floor(random() * 1000)::int], ' ') "
             "   FROM generate_series(1, 500) WHERE i >= 0), "
             "  (SELECT array_agg((x / nrm)::real) FROM (SELECT x, sqrt(sum(x * x) OVER ()) AS nrm FROM "
             "    (SELECT random() - 0.5 AS x FROM generate_series(1, $4::int) WHERE i >= 0) a) b) "
             "FROM generate_series($2::bigint, $3::bigint) i",
             6, pi);
        fprintf(stderr, "\rsb-vstore-bench: %s: %ld of %ld chunks", store, from + batch < size ? from + batch : size,
                size);
    }
    fprintf(stderr, " (%.0f s)\n", (double)(sb_mono_us() - t0) / 1e6);
    sql0("ANALYZE vector_store_chunks", 0, NULL);
    free(words);
    (void)n;
}

static void bench_search(const char *store, long size, int queries)
{
    struct {
        const char *name;
        const char *ranking;
        bool filter;
    } variants[] = {
        {"hybrid 0.7/0.3", NULL, false},
        {"text only", "{\"hybrid_search\":{\"embedding_weight\":0,\"text_weight\":1}}", false},
        {"embedding only", "{\"hybrid_search\":{\"embedding_weight\":1,\"text_weight\":0}}", false},
        {"hybrid, filter: 10 of 100 files", NULL, true},
    };
    json_t *r = route();
    unsigned s = 4242;
    for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
        series_t lat = {0};
        int failed = 0;
        size_t results = 0;
        for (int q = -2; q < queries; q++) { /* two warm-up searches, not counted */
            sb_buf_t qs = {0};
            int words = 2 + (int)(s % 3);
            for (int w = 0; w < words; w++) {
                s = s * 1103515245u + 12345u;
                const char *word = vocab[(s >> 16) % VOCAB];
                if (w)
                    sb_buf_add(&qs, " ", 1);
                sb_buf_add(&qs, word, strlen(word));
            }
            json_t *params = json_pack("{s:[s], s:s}", "vector_store_ids", store, "query", qs.p);
            sb_buf_free(&qs);
            if (variants[v].ranking)
                json_object_set_new(params, "ranking_options", json_loads(variants[v].ranking, 0, NULL));
            if (variants[v].filter)
                json_object_set_new(params, "filters",
                                    json_pack("{s:s, s:s, s:i}", "type", "eq", "key", "group", "value", 3));
            sb_vs_env_t env = {.base = base, .db = db, .up = up, .connect_timeout_ms = 2000};
            struct search_run run = {0};
            sb_vsearch_t *vs = NULL;
            json_t *err = NULL;
            int64_t t0 = sb_mono_us();
            if (sb_vsearch_start(&env, r, account, params, 0, on_results, &run, &vs, &err) < 0)
                die("search", json_string_value(json_object_get(err, "message")));
            while (!run.done)
                event_base_loop(base, EVLOOP_ONCE);
            double ms = (double)(sb_mono_us() - t0) / 1000.0;
            json_decref(params);
            if (q < 0)
                continue;
            failed += !run.ok;
            results += run.results;
            series_add(&lat, ms);
        }
        printf("| %ld | %s | %d | %.1f | %.1f | %.1f | %.1f |%s\n", size, variants[v].name, queries, pct(&lat, 50),
               pct(&lat, 95), pct(&lat, 100), (double)results / (double)(queries ? queries : 1),
               failed ? " (failures)" : "");
        fflush(stdout);
        free(lat.v);
    }
    json_decref(r);
}

static void usage(void)
{
    fprintf(stderr, "usage: sb-vstore-bench --dsn DSN [--dims D] [--files N] [--file-kb K] [--sizes \"10000 100000\"]"
                    " [--queries Q] [--keep]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    const char *dsn = NULL, *sizes = "10000 100000";
    int files = 16, kb = 64, queries = 30;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--keep")) {
            keep = true;
            continue;
        }
        if (!v)
            usage();
        i++;
        if (!strcmp(a, "--dsn"))
            dsn = v;
        else if (!strcmp(a, "--dims"))
            dims = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--files"))
            files = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--file-kb"))
            kb = (int)strtol(v, NULL, 10);
        else if (!strcmp(a, "--sizes"))
            sizes = v;
        else if (!strcmp(a, "--queries"))
            queries = (int)strtol(v, NULL, 10);
        else
            usage();
    }
    if (!dsn || dims < 1 || dims > 4096 || files < 0 || kb < 1 || queries < 1)
        usage();
    start_emulator();
    signal(SIGPIPE, SIG_IGN);
    setenv(KEY_ENV, KEY, 1);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    make_vocab();
    snprintf(tag, sizeof tag, "b%d", (int)getpid());
    conn = PQconnectdb(dsn);
    if (PQstatus(conn) != CONNECTION_OK)
        die("connect", PQerrorMessage(conn));
    base = event_base_new();
    up = sb_upstream_new(base);
    int n = 0;
    const sb_db_stmt_t *stmts = sb_wsql_all(&n);
    char err[256];
    db = sb_db_new(base, dsn, 2, stmts, n, err, sizeof err);
    if (!db || !up)
        die("pool", err);

    PGresult *r = PQexec(conn, "CREATE EXTENSION IF NOT EXISTS vector");
    char pgv[300];
    snprintf(pgv, sizeof pgv, "%s", PQresultStatus(r) == PGRES_COMMAND_OK ? "available" : PQerrorMessage(conn));
    pgv[strcspn(pgv, "\n")] = '\0';
    PQclear(r);
    r = PQexec(conn, "SELECT version()");
    printf("# File search benchmark\n\n%s\n\npgvector (CREATE EXTENSION vector): %s\n", PQgetvalue(r, 0, 0), pgv);
    PQclear(r);
    const char *pa[] = {tag};
    r = sql("INSERT INTO accounts (name) VALUES ('bench-' || $1) RETURNING id", 1, pa);
    account = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
    PQclear(r);

    if (files > 0)
        bench_ingest(files, kb);
    printf("\n## Search (exact ranking over real[%d], one search at a time)\n\n", dims);
    printf("| chunks | ranking | searches | p50 ms | p95 ms | max ms | results |\n|---|---|---|---|---|---|---|\n");
    fflush(stdout);
    for (const char *p = sizes; *p;) {
        char *end;
        long size = strtol(p, &end, 10);
        if (end == p)
            break;
        p = end + strspn(end, " ,");
        char store[64];
        snprintf(store, sizeof store, "vs_%s_%ld", tag, size);
        fill_store(store, size);
        bench_search(store, size, queries);
    }
    if (!keep) {
        char acc[32];
        snprintf(acc, sizeof acc, "%lld", account);
        const char *pk[] = {acc};
        sql0("DELETE FROM vector_stores WHERE account_id = $1::bigint", 1, pk);
        sql0("DELETE FROM files WHERE account_id = $1::bigint", 1, pk);
        sql0("DELETE FROM accounts WHERE id = $1::bigint", 1, pk);
    }
    sb_db_destroy(&db);
    sb_upstream_destroy(&up);
    event_base_free(base);
    PQfinish(conn);
    kill(emu_pid, SIGTERM);
    waitpid(emu_pid, NULL, 0);
    curl_global_cleanup();
    return 0;
}
