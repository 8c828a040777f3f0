/*
 * test_vsearch: file search on the worker (wtool_vsearch.h, wtool_vsjob.h).
 *
 * Pure: the search request checked (OpenAI's bounds), attribute filters
 * (comparison and compound, nested) and the array literals the statements
 * take (read back by PostgreSQL).
 *
 * Against a throwaway PostgreSQL cluster with the real schema
 * (tests/unit/sbctl/sbctl_test_pg.h: initdb, sbctl migrate) and the
 * emulator's embeddings, both on this process's loop, through the worker's
 * own statements (wsql.c) on an sb_db pool: vs_ingest of text, Markdown,
 * HTML and CSV files (chunks, usage_bytes, status completed), of an
 * unsupported and an invalid file (failed, last_error), of a file no longer
 * in progress (409, nothing written, even when cancelled while it was
 * being embedded), of another account's (404); vs_search ranking (the
 * matching file first, recall@5 on a small labelled set, reported),
 * filters, score_threshold, max_num_results, several queries, text-only
 * weights, another account's stores (nothing), a deleted vector store file
 * (its chunks gone with it); no database (503); a search cancelled while
 * its queries run (no callback). Skipped (passing) without PostgreSQL's
 * server binaries.
 */
#include <curl/curl.h>
#include <event2/event.h>
#include <math.h>
#include <signal.h>

#include "emu.h"
#include "sb_buf.h"
#include "sb_db.h"
#include "sb_event.h"
#include "sb_job.h"
#include "sb_time.h"
#include "sbctl/sbctl_test_pg.h"
#include "upstream.h"
#include "wsql.h"
#include "wtool_vsearch.h"
#include "wtool_vsjob.h"

/* ---- pure ------------------------------------------------------------------------- */

static int parse_params(const char *json, sb_vs_params_t *p)
{
    json_t *j = json_loads(json, 0, NULL);
    json_t *e = NULL;
    int rc = sb_vs_params_parse(j, p, &e);
    if (rc < 0) {
        CHECK(e != NULL && json_integer_value(json_object_get(e, "status")) == 400);
        CHECK(p->queries == NULL && p->store_ids == NULL);
    }
    json_decref(e);
    json_decref(j);
    return rc;
}

static void test_params(void)
{
    sb_vs_params_t p;
    CHECK_INT(parse_params("{\"vector_store_ids\":[\"vs_1\"],\"query\":\"hello\"}", &p), 0);
    CHECK_INT(json_array_size(p.queries), 1);
    CHECK_INT(p.max_results, 10);
    CHECK(p.ew == 0.7 && p.tw == 0.3 && p.threshold == 0 && p.filter == NULL);
    sb_vs_params_clear(&p);
    CHECK_INT(parse_params("{\"vector_store_ids\":[],\"query\":[\"a\",\"b\"],\"max_num_results\":50,"
                           "\"ranking_options\":{\"ranker\":\"none\",\"score_threshold\":0.5,"
                           "\"hybrid_search\":{\"embedding_weight\":0,\"text_weight\":2}},\"rewrite_query\":true,"
                           "\"filters\":{\"type\":\"eq\",\"key\":\"k\",\"value\":1}}",
                           &p),
              0);
    CHECK_INT(json_array_size(p.queries), 2);
    CHECK_INT(p.max_results, 50);
    CHECK(p.ew == 0 && p.tw == 2 && p.threshold == 0.5 && p.filter != NULL);
    sb_vs_params_clear(&p);

    static const char *const bad[] = {
        "[]",
        "{\"query\":\"x\"}",
        "{\"vector_store_ids\":\"vs_1\",\"query\":\"x\"}",
        "{\"vector_store_ids\":[1],\"query\":\"x\"}",
        "{\"vector_store_ids\":[\"\"],\"query\":\"x\"}",
        "{\"vector_store_ids\":[],\"query\":\"\"}",
        "{\"vector_store_ids\":[],\"query\":[]}",
        "{\"vector_store_ids\":[],\"query\":[\"a\",\"\"]}",
        "{\"vector_store_ids\":[],\"query\":[\"a\",1]}",
        "{\"vector_store_ids\":[],\"query\":[\"1\",\"2\",\"3\",\"4\",\"5\",\"6\",\"7\",\"8\",\"9\",\"10\",\"11\"]}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"max_num_results\":0}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"max_num_results\":51}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"max_num_results\":2.5}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"ranking_options\":{\"score_threshold\":1.5}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"ranking_options\":{\"ranker\":\"best\"}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"ranking_options\":{\"hybrid_search\":{\"embedding_weight\":0,"
        "\"text_weight\":0}}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"ranking_options\":{\"hybrid_search\":{\"text_weight\":-1}}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"rewrite_query\":\"yes\"}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"like\",\"key\":\"k\",\"value\":1}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"eq\",\"value\":1}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"eq\",\"key\":\"k\",\"value\":[1]}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"in\",\"key\":\"k\",\"value\":1}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"in\",\"key\":\"k\",\"value\":[true]}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"and\",\"filters\":[]}}",
        "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":{\"type\":\"or\",\"filters\":[{\"type\":\"eq\"}]}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (parse_params(bad[i], &p) != -EINVAL)
            fprintf(stderr, "  accepted: %s\n", bad[i]);
    }
    /* Nesting past the bound is refused, not recursed into without end. */
    sb_buf_t b = {0};
    sb_buf_add(&b, "{\"vector_store_ids\":[],\"query\":\"x\",\"filters\":", 46);
    for (int i = 0; i < 40; i++)
        sb_buf_add(&b, "{\"type\":\"and\",\"filters\":[", 26);
    sb_buf_add(&b, "{\"type\":\"eq\",\"key\":\"k\",\"value\":1}", 33);
    for (int i = 0; i < 40; i++)
        sb_buf_add(&b, "]}", 2);
    sb_buf_add(&b, "}", 1);
    CHECK_INT(parse_params(b.p, &p), -EINVAL);
    sb_buf_free(&b);
}

static bool matches(const char *filter, const char *attributes)
{
    json_t *f = json_loads(filter, 0, NULL), *a = json_loads(attributes, 0, NULL);
    char why[200];
    CHECK_INT(sb_vs_filter_check(f, why, sizeof why), 0);
    bool m = sb_vs_filter_match(f, a);
    json_decref(f);
    json_decref(a);
    return m;
}

static void test_filters(void)
{
    const char *attrs = "{\"author\":\"ada\",\"year\":2021,\"score\":4.5,\"draft\":false,\"tag\":\"b\",\"none\":null}";
    CHECK(matches("{\"type\":\"eq\",\"key\":\"author\",\"value\":\"ada\"}", attrs));
    CHECK(!matches("{\"type\":\"eq\",\"key\":\"author\",\"value\":\"Ada\"}", attrs));
    CHECK(matches("{\"type\":\"eq\",\"key\":\"year\",\"value\":2021.0}", attrs));
    CHECK(!matches("{\"type\":\"eq\",\"key\":\"year\",\"value\":\"2021\"}", attrs));
    CHECK(matches("{\"type\":\"eq\",\"key\":\"draft\",\"value\":false}", attrs));
    CHECK(!matches("{\"type\":\"eq\",\"key\":\"missing\",\"value\":false}", attrs));
    CHECK(!matches("{\"type\":\"eq\",\"key\":\"none\",\"value\":false}", attrs));
    CHECK(matches("{\"type\":\"ne\",\"key\":\"author\",\"value\":\"bob\"}", attrs));
    CHECK(matches("{\"type\":\"ne\",\"key\":\"missing\",\"value\":\"bob\"}", attrs));
    CHECK(!matches("{\"type\":\"ne\",\"key\":\"year\",\"value\":2021}", attrs));
    CHECK(matches("{\"type\":\"gt\",\"key\":\"year\",\"value\":2020}", attrs));
    CHECK(!matches("{\"type\":\"gt\",\"key\":\"year\",\"value\":2021}", attrs));
    CHECK(matches("{\"type\":\"gte\",\"key\":\"year\",\"value\":2021}", attrs));
    CHECK(matches("{\"type\":\"lt\",\"key\":\"score\",\"value\":5}", attrs));
    CHECK(matches("{\"type\":\"lte\",\"key\":\"score\",\"value\":4.5}", attrs));
    CHECK(!matches("{\"type\":\"lt\",\"key\":\"score\",\"value\":4.5}", attrs));
    CHECK(matches("{\"type\":\"gt\",\"key\":\"author\",\"value\":\"aa\"}", attrs));
    CHECK(!matches("{\"type\":\"gt\",\"key\":\"author\",\"value\":\"ada\"}", attrs));
    CHECK(matches("{\"type\":\"lt\",\"key\":\"author\",\"value\":\"adam\"}", attrs)); /* a prefix sorts first */
    CHECK(!matches("{\"type\":\"gt\",\"key\":\"year\",\"value\":\"2000\"}", attrs));  /* types differ */
    CHECK(!matches("{\"type\":\"gt\",\"key\":\"draft\",\"value\":true}", attrs));
    CHECK(!matches("{\"type\":\"lt\",\"key\":\"missing\",\"value\":1}", attrs));
    CHECK(matches("{\"type\":\"in\",\"key\":\"tag\",\"value\":[\"a\",\"b\"]}", attrs));
    CHECK(matches("{\"type\":\"in\",\"key\":\"year\",\"value\":[2020,2021]}", attrs));
    CHECK(!matches("{\"type\":\"in\",\"key\":\"tag\",\"value\":[]}", attrs));
    CHECK(!matches("{\"type\":\"in\",\"key\":\"missing\",\"value\":[\"b\"]}", attrs));
    CHECK(matches("{\"type\":\"nin\",\"key\":\"tag\",\"value\":[\"c\"]}", attrs));
    CHECK(!matches("{\"type\":\"nin\",\"key\":\"tag\",\"value\":[\"b\"]}", attrs));
    CHECK(matches("{\"type\":\"nin\",\"key\":\"missing\",\"value\":[\"b\"]}", attrs));
    CHECK(matches("{\"type\":\"and\",\"filters\":[{\"type\":\"eq\",\"key\":\"author\",\"value\":\"ada\"},"
                  "{\"type\":\"or\",\"filters\":[{\"type\":\"gt\",\"key\":\"year\",\"value\":2030},"
                  "{\"type\":\"eq\",\"key\":\"tag\",\"value\":\"b\"}]}]}",
                  attrs));
    CHECK(!matches("{\"type\":\"and\",\"filters\":[{\"type\":\"eq\",\"key\":\"author\",\"value\":\"ada\"},"
                   "{\"type\":\"gt\",\"key\":\"year\",\"value\":2030}]}",
                   attrs));
    CHECK(!matches("{\"type\":\"or\",\"filters\":[{\"type\":\"eq\",\"key\":\"author\",\"value\":\"x\"},"
                   "{\"type\":\"gt\",\"key\":\"year\",\"value\":2030}]}",
                   attrs));
    /* No attributes at all. */
    CHECK(!matches("{\"type\":\"eq\",\"key\":\"author\",\"value\":\"ada\"}", "{}"));
    CHECK(matches("{\"type\":\"ne\",\"key\":\"author\",\"value\":\"ada\"}", "{}"));
}

static void test_literals(void)
{
    const char *items[] = {"plain", "with \"quotes\"", "back\\slash", "", "{braces},commas", "NULL", "é"};
    char *lit = sb_vs_pg_text_array(items, NULL, 7);
    CHECK_STR(lit, "{\"plain\",\"with \\\"quotes\\\"\",\"back\\\\slash\",\"\",\"{braces},commas\",\"NULL\",\"é\"}");
    size_t lens[] = {3, 4};
    char *part = sb_vs_pg_text_array(items, lens, 2);
    CHECK_STR(part, "{\"pla\",\"with\"}");
    free(part);
    float v[] = {0.1f, -1.0f, 3.4028235e38f, 1e-45f};
    char *r = sb_vs_pg_real_array(v, 4);
    CHECK_STR(r, "{0.100000001,-1,3.40282347e+38,1.40129846e-45}");
    char *e = sb_vs_pg_real_array(v, 0);
    CHECK_STR(e, "{}");
    free(e);
    if (pg.conn) {
        /* PostgreSQL reads them back as they were. */
        const char *params[] = {lit};
        CHECK_QUERY("SELECT array_to_json($1::text[])::text", lit,
                    "[\"plain\",\"with \\\"quotes\\\"\",\"back\\\\slash\",\"\",\"{braces},commas\",\"NULL\",\"é\"]");
        (void)params;
        CHECK_QUERY("SELECT ($1::real[])[1] = 0.1::real AND ($1::real[])[3] = 3.4028235e38::real", r, "t");
    }
    free(lit);
    free(r);
}

/* ---- against PostgreSQL and the emulator ------------------------------------------- */

#define KEY "sk-emu-vs"
#define KEY_ENV "SB_TEST_VS_KEY"

static struct event_base *base;
static sb_upstream_t *up;
static struct sb_emu *emu;
static sb_db_t *db;
static bool starting;
static long long account_a, account_b;

struct done {
    bool done;
    json_t *events;
};

static void on_job(void *arg, json_t *events)
{
    struct done *d = arg;
    CHECK(!starting);
    CHECK(!d->done);
    d->done = true;
    d->events = events;
}

static void run_until(const bool *flag, int64_t ms)
{
    int64_t end = sb_now_ms() + ms;
    while (!*flag && sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static json_t *route(void)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", sb_emu_port(emu));
    return json_pack("{s:s, s:s, s:s, s:s, s:i}", "provider", "openai-chat", "base_url", url, "upstream_model",
                     "emu-embed", "credential_ref", KEY_ENV, "timeout_ms", 5000);
}

/* Runs a job to its end; returns its events (the last one final). */
static json_t *run_job(long long account, json_t *request, sb_db_t *with_db)
{
    json_t *job = sb_job_new("req_test", "emu-embed", account, route(), request);
    sb_vs_env_t env = {.base = base, .db = with_db, .up = up, .connect_timeout_ms = 1000};
    struct done d = {0};
    sb_vsjob_t *v = NULL;
    json_t *err = NULL;
    starting = true;
    int rc = sb_vsjob_start(&env, job, sb_now_ms() + 20000, on_job, &d, &v, &err);
    starting = false;
    if (rc < 0) {
        json_decref(job);
        CHECK(v == NULL);
        json_t *evs = json_array();
        json_array_append_new(evs, err);
        return evs;
    }
    CHECK(!d.done);
    run_until(&d.done, 20000);
    CHECK(d.done);
    json_decref(job);
    return d.events ? d.events : json_array();
}

static const json_t *final_of(const json_t *events)
{
    return json_array_get(events, json_array_size(events) - 1);
}

static void exec_ok(const char *sql)
{
    CHECK(exec_sql(sql, 0, NULL));
}

/* A file of the account, attached to store vs with attributes, in progress. */
static void add_file(long long account, const char *store, const char *id, const char *name, const char *mime,
                     const char *content, size_t len, const char *attributes, const char *strategy)
{
    char acc[32];
    snprintf(acc, sizeof acc, "%lld", account);
    size_t hexlen = 0;
    unsigned char *hex = PQescapeByteaConn(pg.conn, (const unsigned char *)content, len, &hexlen);
    const char *p1[] = {id, acc, name, mime, (const char *)hex};
    CHECK(exec_sql("INSERT INTO files (id, account_id, filename, purpose, mime_type, bytes, content) "
                   "VALUES ($1, $2::bigint, $3, 'assistants', $4, length($5::bytea), $5::bytea)",
                   5, p1));
    PQfreemem(hex);
    const char *p2[] = {store, id, name, attributes ? attributes : "{}", strategy ? strategy : "{\"type\":\"auto\"}"};
    CHECK(exec_sql("INSERT INTO vector_store_files (vector_store_id, file_id, filename, attributes, chunking_strategy) "
                   "VALUES ($1, $2, $3, $4::jsonb, $5::jsonb)",
                   5, p2));
}

static json_t *ingest_req(const char *store, const char *file)
{
    return json_pack("{s:s, s:s, s:s}", "op", "vs_ingest", "vector_store_id", store, "file_id", file);
}

static void check_ingested(long long account, const char *store, const char *file)
{
    json_t *evs = run_job(account, ingest_req(store, file), db);
    const json_t *fin = final_of(evs);
    CHECK(sb_event_type_of(fin) == SB_EV_COMPLETED);
    if (sb_event_type_of(fin) != SB_EV_COMPLETED)
        fprintf(stderr, "  %s: %s\n", file, json_dumps(fin, 0));
    CHECK_STR(json_string_value(json_object_get(fin, "model")), "emu-embed");
    CHECK(sb_event_type_of(json_array_get(evs, 0)) == SB_EV_USAGE);
    CHECK(json_integer_value(json_object_get(json_array_get(evs, 0), "input_tokens")) > 0);
    json_decref(evs);
    const char *p[] = {store, file};
    PGresult *res = PQexecParams(pg.conn,
                                 "SELECT status, usage_bytes > 0, (SELECT count(*) FROM vector_store_chunks c WHERE "
                                 "c.vector_store_id = $1 AND c.file_id = $2), (SELECT min(array_length(embedding, 1)) "
                                 "FROM vector_store_chunks c WHERE c.vector_store_id = $1 AND c.file_id = $2) "
                                 "FROM vector_store_files WHERE vector_store_id = $1 AND file_id = $2",
                                 2, NULL, p, NULL, NULL, 0);
    CHECK(PQntuples(res) == 1);
    if (PQntuples(res) == 1) {
        CHECK_STR(PQgetvalue(res, 0, 0), "completed");
        CHECK_STR(PQgetvalue(res, 0, 1), "t");
        CHECK(strtol(PQgetvalue(res, 0, 2), NULL, 10) >= 1);
        CHECK_STR(PQgetvalue(res, 0, 3), "256");
    }
    PQclear(res);
}

/* The failed file's last_error code, and the job's final error event's status and code. */
static void check_failed(const char *store, const char *file, const char *code)
{
    json_t *evs = run_job(account_a, ingest_req(store, file), db);
    const json_t *fin = final_of(evs);
    CHECK(sb_event_type_of(fin) == SB_EV_ERROR);
    CHECK_INT(json_integer_value(json_object_get(fin, "status")), 400);
    CHECK_STR(json_string_value(json_object_get(fin, "code")), code);
    json_decref(evs);
    const char *p[] = {store, file};
    PGresult *res = PQexecParams(pg.conn,
                                 "SELECT status, last_error->>'code', length(last_error->>'message') > 0 FROM "
                                 "vector_store_files WHERE vector_store_id = $1 AND file_id = $2",
                                 2, NULL, p, NULL, NULL, 0);
    CHECK(PQntuples(res) == 1);
    if (PQntuples(res) == 1) {
        CHECK_STR(PQgetvalue(res, 0, 0), "failed");
        CHECK_STR(PQgetvalue(res, 0, 1), code);
        CHECK_STR(PQgetvalue(res, 0, 2), "t");
    }
    PQclear(res);
}

/* Ten short documents on ten topics, and a query for each (its words mostly not the document's first words). */
static const char *const docs[][3] = {
    {"volcano.txt", "Volcanoes erupt when magma rises through the crust; lava flows and ash clouds follow eruptions.",
     "what happens when magma reaches the surface and lava erupts"},
    {"bees.md", "# Honey bees\n\nBees collect nectar from flowers and make honey in the hive; the queen lays eggs.",
     "how do bees make honey from nectar"},
    {"chess.txt", "Chess openings: the king's pawn, the queen's gambit and castling early protect the king.",
     "queen's gambit chess opening"},
    {"bread.txt", "Baking bread: knead the dough, let the yeast rise, and bake the loaf until the crust is brown.",
     "knead dough with yeast to bake a loaf"},
    {"comet.html",
     "<html><head><title>Comets</title></head><body><p>A comet is an icy body; near the sun its tail of gas and dust "
     "glows.</p></body></html>",
     "icy comet tail near the sun"},
    {"tides.txt", "Ocean tides are caused by the moon's gravity pulling the sea; high tide and low tide alternate.",
     "moon gravity causes ocean tides"},
    {"guitar.txt", "Tuning a guitar: tighten each string until its pitch matches the tuner; frets change the note.",
     "tune guitar strings to the right pitch"},
    {"coffee.csv", "bean,roast,origin\narabica,light,ethiopia\nrobusta,dark,vietnam\ncoffee beans roasted espresso\n",
     "which coffee beans come from ethiopia"},
    {"rain.txt", "Rain forms when water vapour condenses into droplets in clouds and falls as precipitation.",
     "water vapour condenses into rain droplets"},
    {"python.txt", "Python lists are mutable sequences; append adds an element and sort orders the list in place.",
     "append an element to a python list"},
};
#define NDOCS (sizeof docs / sizeof docs[0])

static json_t *search(long long account, const char *json_params, sb_db_t *with_db)
{
    json_t *req = json_loads(json_params, 0, NULL);
    CHECK(req != NULL);
    json_object_set_new(req, "op", json_string("vs_search"));
    return run_job(account, req, with_db);
}

/* The vs_results event of a search's events (borrowed), or NULL. */
static const json_t *results_of(const json_t *events)
{
    size_t i;
    const json_t *e;
    json_array_foreach (events, i, e)
        if (json_string_value(json_object_get(e, "type")) &&
            !strcmp(json_string_value(json_object_get(e, "type")), "vs_results"))
            return e;
    return NULL;
}

static const char *result_file(const json_t *res, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(res, "data"), i), "filename"));
}

static void test_ingest_and_search(void)
{
    char sql[512];
    snprintf(sql, sizeof sql,
             "INSERT INTO vector_stores (id, account_id, embedding_model) VALUES "
             "('vs_a', %lld, 'emu-embed'), ('vs_b', %lld, 'emu-embed'), ('vs_other', %lld, 'emu-embed')",
             account_a, account_a, account_b);
    exec_ok(sql);
    for (size_t i = 0; i < NDOCS; i++) {
        const char *name = docs[i][0];
        const char *mime = strstr(name, ".html")  ? "text/html"
                           : strstr(name, ".md")  ? "text/markdown"
                           : strstr(name, ".csv") ? "text/csv"
                                                  : "text/plain";
        char id[32], attrs[128];
        snprintf(id, sizeof id, "file-%zu", i);
        snprintf(attrs, sizeof attrs, "{\"n\":%zu,\"kind\":\"%s\"}", i, i % 2 ? "odd" : "even");
        add_file(account_a, "vs_a", id, name, mime, docs[i][1], strlen(docs[i][1]), attrs, NULL);
        check_ingested(account_a, "vs_a", id);
    }
    /* A long file in small chunks: several chunks, overlapping. */
    sb_buf_t long_text = {0};
    for (int i = 0; i < 300; i++) {
        char w[64];
        int k = snprintf(w, sizeof w, "Sentence %d talks about gardens and tomatoes. ", i);
        sb_buf_add(&long_text, w, (size_t)k);
    }
    add_file(account_a, "vs_b", "file-long", "garden.txt", "text/plain", long_text.p, long_text.len, "{}",
             "{\"type\":\"static\",\"static\":{\"max_chunk_size_tokens\":100,\"chunk_overlap_tokens\":50}}");
    check_ingested(account_a, "vs_b", "file-long");
    CHECK_QUERY("SELECT count(*) >= 30 FROM vector_store_chunks WHERE file_id = $1", "file-long", "t");
    CHECK_QUERY("SELECT max(length(text)) <= 400 FROM vector_store_chunks WHERE file_id = $1", "file-long", "t");
    sb_buf_free(&long_text);
    add_file(account_b, "vs_other", "file-o", "secret.txt", "text/plain", "volcano magma secret", 20, "{}", NULL);
    check_ingested(account_b, "vs_other", "file-o");

    /* Failures: written to the row, and the job's error. */
    add_file(account_a, "vs_b", "file-png", "pic.png", "image/png", "\x89PNG\r\n", 6, NULL, NULL);
    check_failed("vs_b", "file-png", "unsupported_file");
    add_file(account_a, "vs_b", "file-bin", "data.txt", "text/plain", "ab\0cd", 5, NULL, NULL);
    check_failed("vs_b", "file-bin", "invalid_file");
    add_file(account_a, "vs_b", "file-pdf", "broken.pdf", "application/pdf", "%PDF-1.4 nothing", 16, NULL, NULL);
    check_failed("vs_b", "file-pdf", "invalid_file");
    /* Done already: not ingested twice (409). */
    json_t *evs = run_job(account_a, ingest_req("vs_a", "file-0"), db);
    CHECK_INT(json_integer_value(json_object_get(final_of(evs), "status")), 409);
    json_decref(evs);
    /* Another account's file, or none: 404, nothing written. */
    add_file(account_b, "vs_other", "file-o2", "o2.txt", "text/plain", "other text", 10, NULL, NULL);
    evs = run_job(account_a, ingest_req("vs_other", "file-o2"), db);
    CHECK_INT(json_integer_value(json_object_get(final_of(evs), "status")), 404);
    json_decref(evs);
    CHECK_QUERY("SELECT status FROM vector_store_files WHERE file_id = $1", "file-o2", "in_progress");
    evs = run_job(account_a, ingest_req("vs_a", "file-nope"), db);
    CHECK_INT(json_integer_value(json_object_get(final_of(evs), "status")), 404);
    json_decref(evs);
    /* Cancelled while its chunks were being embedded: nothing written, not revived. */
    add_file(account_a, "vs_b", "file-c", "c.txt", "text/plain", "cancel me please", 16, NULL, NULL);
    {
        /* A second emulator, slow to answer: the file is cancelled while its chunks are being embedded. */
        struct sb_emu_config cfg = {.port = 0, .require_key = KEY, .latency_ms = 400};
        struct sb_emu *slow = sb_emu_new(base, &cfg);
        CHECK(slow != NULL);
        char url[128];
        snprintf(url, sizeof url, "http://127.0.0.1:%d/v1", slow ? sb_emu_port(slow) : 9);
        json_t *r = json_pack("{s:s, s:s, s:s, s:s}", "provider", "openai-chat", "base_url", url, "upstream_model",
                              "emu-embed", "credential_ref", KEY_ENV);
        json_t *job = sb_job_new("req_c", "emu-embed", account_a, r, ingest_req("vs_b", "file-c"));
        sb_vs_env_t env = {.base = base, .db = db, .up = up, .connect_timeout_ms = 1000};
        struct done d = {0};
        sb_vsjob_t *v = NULL;
        json_t *err = NULL;
        CHECK_INT(sb_vsjob_start(&env, job, 0, on_job, &d, &v, &err), 0);
        int64_t end = sb_now_ms() + 150;
        while (sb_now_ms() < end)
            event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
        CHECK(!d.done);
        exec_ok("UPDATE vector_store_files SET status = 'cancelled' WHERE file_id = 'file-c'");
        run_until(&d.done, 5000);
        CHECK(d.done);
        CHECK_INT(json_integer_value(json_object_get(final_of(d.events), "status")), 409);
        json_decref(d.events);
        json_decref(job);
        CHECK_QUERY("SELECT status || (SELECT count(*) FROM vector_store_chunks WHERE file_id = $1) FROM "
                    "vector_store_files WHERE file_id = $1",
                    "file-c", "cancelled0");
        sb_emu_destroy(&slow);
    }

    /* Search: each labelled query finds its document in the top 5 (recall@5), mostly first. */
    int hits5 = 0, hits1 = 0;
    for (size_t i = 0; i < NDOCS; i++) {
        json_t *qs = json_string(docs[i][2]);
        char *q = json_dumps(qs, JSON_ENCODE_ANY);
        json_decref(qs);
        char params[512];
        snprintf(params, sizeof params, "{\"vector_store_ids\":[\"vs_a\"],\"query\":%s,\"max_num_results\":5}", q);
        free(q);
        evs = search(account_a, params, db);
        const json_t *res = results_of(evs);
        CHECK(res != NULL);
        CHECK(sb_event_type_of(final_of(evs)) == SB_EV_COMPLETED);
        CHECK(json_array_size(json_object_get(res, "data")) <= 5);
        for (size_t k = 0; k < json_array_size(json_object_get(res, "data")); k++)
            if (!strcmp(result_file(res, k), docs[i][0])) {
                hits5++;
                hits1 += k == 0;
            }
        json_decref(evs);
    }
    printf("test_vsearch: recall@5 %d/%zu, first %d/%zu on the labelled set\n", hits5, NDOCS, hits1, NDOCS);
    CHECK(hits5 >= 9);
    CHECK(hits1 >= 8);

    /* One result's shape. */
    evs =
        search(account_a, "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"honey bees hive\",\"max_num_results\":1}", db);
    const json_t *res = results_of(evs);
    CHECK_STR(json_string_value(json_array_get(json_object_get(res, "search_query"), 0)), "honey bees hive");
    const json_t *r0 = json_array_get(json_object_get(res, "data"), 0);
    CHECK_STR(json_string_value(json_object_get(r0, "file_id")), "file-1");
    CHECK_STR(json_string_value(json_object_get(r0, "filename")), "bees.md");
    CHECK(json_real_value(json_object_get(r0, "score")) > 0.2 && json_real_value(json_object_get(r0, "score")) <= 1);
    CHECK_STR(json_string_value(json_object_get(json_object_get(r0, "attributes"), "kind")), "odd");
    const json_t *c0 = json_array_get(json_object_get(r0, "content"), 0);
    CHECK_STR(json_string_value(json_object_get(c0, "type")), "text");
    CHECK(strstr(json_string_value(json_object_get(c0, "text")), "Bees collect nectar") != NULL);
    CHECK(sb_event_type_of(json_array_get(evs, 0)) == SB_EV_USAGE);
    json_decref(evs);

    /* Filters: the best match is filtered out, the others stay. */
    evs = search(account_a,
                 "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"honey bees hive\",\"filters\":{\"type\":\"eq\","
                 "\"key\":\"kind\",\"value\":\"even\"}}",
                 db);
    res = results_of(evs);
    CHECK_INT(json_array_size(json_object_get(res, "data")), 5);
    for (size_t k = 0; k < json_array_size(json_object_get(res, "data")); k++)
        CHECK_STR(json_string_value(json_object_get(
                      json_object_get(json_array_get(json_object_get(res, "data"), k), "attributes"), "kind")),
                  "even");
    json_decref(evs);
    evs = search(account_a,
                 "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"bees\",\"filters\":{\"type\":\"or\",\"filters\":["
                 "{\"type\":\"in\",\"key\":\"n\",\"value\":[1,2]},{\"type\":\"gte\",\"key\":\"n\",\"value\":9}]}}",
                 db);
    CHECK_INT(json_array_size(json_object_get(results_of(evs), "data")), 3);
    json_decref(evs);

    /* score_threshold drops what does not match well; max_num_results caps. */
    evs = search(account_a,
                 "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"honey bees hive\",\"ranking_options\":"
                 "{\"score_threshold\":0.2}}",
                 db);
    res = results_of(evs);
    CHECK_INT(json_array_size(json_object_get(res, "data")), 1);
    json_decref(evs);
    evs = search(account_a, "{\"vector_store_ids\":[\"vs_a\",\"vs_b\"],\"query\":\"the\",\"max_num_results\":3}", db);
    CHECK_INT(json_array_size(json_object_get(results_of(evs), "data")), 3);
    json_decref(evs);
    evs = search(account_a, "{\"vector_store_ids\":[\"vs_a\",\"vs_b\"],\"query\":\"the\",\"max_num_results\":50}", db);
    CHECK(json_array_size(json_object_get(results_of(evs), "data")) > 30);
    json_decref(evs);
    /* Scores are best first, and within [0, 1]. */
    evs = search(account_a, "{\"vector_store_ids\":[\"vs_a\",\"vs_b\"],\"query\":\"tomatoes in gardens\"}", db);
    res = results_of(evs);
    double prev = 2;
    for (size_t k = 0; k < json_array_size(json_object_get(res, "data")); k++) {
        double s = json_real_value(json_object_get(json_array_get(json_object_get(res, "data"), k), "score"));
        CHECK(s <= prev && s >= 0 && s <= 1);
        prev = s;
    }
    CHECK_STR(result_file(res, 0), "garden.txt");
    json_decref(evs);

    /* Several queries: the best of each. */
    evs = search(account_a,
                 "{\"vector_store_ids\":[\"vs_a\"],\"query\":[\"honey bees hive\",\"queen's gambit chess\"],"
                 "\"max_num_results\":2}",
                 db);
    res = results_of(evs);
    CHECK_INT(json_array_size(json_object_get(res, "search_query")), 2);
    CHECK(result_file(res, 0) && result_file(res, 1));
    if (result_file(res, 0) && result_file(res, 1)) {
        bool bees = !strcmp(result_file(res, 0), "bees.md") || !strcmp(result_file(res, 1), "bees.md");
        bool chess = !strcmp(result_file(res, 0), "chess.txt") || !strcmp(result_file(res, 1), "chess.txt");
        CHECK(bees && chess);
    }
    json_decref(evs);
    /* Text alone: a word only the text half can match (the query's embedding is not even made). */
    evs = search(account_a,
                 "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"espresso\",\"ranking_options\":{\"hybrid_search\":"
                 "{\"embedding_weight\":0,\"text_weight\":1},\"score_threshold\":0.01}}",
                 db);
    res = results_of(evs);
    CHECK_INT(json_array_size(json_object_get(res, "data")), 1);
    CHECK_STR(result_file(res, 0), "coffee.csv");
    CHECK(sb_event_type_of(json_array_get(evs, 0)) != SB_EV_USAGE);
    json_decref(evs);

    /* Another account's store, and a store that does not exist: nothing. */
    evs = search(account_a, "{\"vector_store_ids\":[\"vs_other\",\"vs_nope\"],\"query\":\"volcano magma\"}", db);
    CHECK_INT(json_array_size(json_object_get(results_of(evs), "data")), 0);
    CHECK(sb_event_type_of(final_of(evs)) == SB_EV_COMPLETED);
    json_decref(evs);
    /* Its owner finds it. */
    evs = search(account_b, "{\"vector_store_ids\":[\"vs_other\"],\"query\":\"volcano magma\"}", db);
    CHECK_STR(result_file(results_of(evs), 0), "secret.txt");
    json_decref(evs);

    /* A deleted vector store file takes its chunks with it. */
    exec_ok("DELETE FROM vector_store_files WHERE file_id = 'file-1'");
    CHECK_QUERY("SELECT count(*) FROM vector_store_chunks WHERE file_id = $1", "file-1", "0");
    evs =
        search(account_a, "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"honey bees hive\",\"max_num_results\":50}", db);
    res = results_of(evs);
    for (size_t k = 0; k < json_array_size(json_object_get(res, "data")); k++)
        CHECK(strcmp(result_file(res, k), "bees.md") != 0);
    json_decref(evs);

    /* A bad search is a 400 before anything runs. */
    evs = search(account_a, "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"\"}", db);
    CHECK_INT(json_integer_value(json_object_get(final_of(evs), "status")), 400);
    json_decref(evs);

    /* A search cancelled while its queries run: no callback, and the late answers are dropped. */
    json_t *params = json_pack("{s:[s], s:s}", "vector_store_ids", "vs_a", "query", "volcano");
    json_t *r = route();
    sb_vs_env_t env = {.base = base, .db = db, .up = up, .connect_timeout_ms = 1000};
    struct done d = {0};
    sb_vsearch_t *s = NULL;
    json_t *err = NULL;
    CHECK_INT(sb_vsearch_start(&env, r, account_a, params, 0, NULL, &d, &s, &err), 0);
    sb_vsearch_cancel(&s);
    CHECK(s == NULL);
    int64_t end = sb_now_ms() + 300;
    while (sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    CHECK(sb_db_pending(db) == 0);
    json_decref(params);
    json_decref(r);
}

static void test_no_database(void)
{
    json_t *evs = run_job(account_a, ingest_req("vs_a", "file-0"), NULL);
    const json_t *fin = final_of(evs);
    CHECK_INT(json_integer_value(json_object_get(fin, "status")), 503);
    CHECK_STR(json_string_value(json_object_get(fin, "message")), "file search needs the worker's database");
    json_decref(evs);
    evs = search(account_a, "{\"vector_store_ids\":[\"vs_a\"],\"query\":\"x\"}", NULL);
    CHECK_INT(json_integer_value(json_object_get(final_of(evs), "status")), 503);
    json_decref(evs);
    /* Not a job for file search: refused at once. */
    sb_vs_env_t env = {.base = base, .db = NULL, .up = up};
    json_t *job = json_pack("{s:s, s:{s:s}}", "model", "m", "request", "op", "vs_search");
    sb_vsjob_t *v = NULL;
    json_t *err = NULL;
    CHECK(sb_vsjob_start(&env, job, 0, on_job, NULL, &v, &err) < 0);
    CHECK_INT(json_integer_value(json_object_get(err, "status")), 400);
    json_decref(err);
    json_decref(job);
    json_t *req = json_pack("{s:s}", "op", "vs_ingest");
    CHECK(sb_vsjob_is_op(req));
    json_object_set_new(req, "op", json_string("generate"));
    CHECK(!sb_vsjob_is_op(req));
    json_decref(req);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    test_params();
    test_filters();
    int up_pg = pg_setup_migrated();
    test_literals();
    if (!up_pg)
        return sb_test_finish("test_vsearch");
    curl_global_init(CURL_GLOBAL_DEFAULT);
    setenv(KEY_ENV, KEY, 1);
    base = event_base_new();
    up = sb_upstream_new(base);
    struct sb_emu_config cfg = {.port = 0, .require_key = KEY};
    emu = sb_emu_new(base, &cfg);
    int n = 0;
    const sb_db_stmt_t *stmts = sb_wsql_all(&n);
    char dberr[256] = "";
    db = sb_db_new(base, pg.dsn, 2, stmts, n, dberr, sizeof dberr);
    if (!db)
        fprintf(stderr, "test_vsearch: %s\n", dberr);
    CHECK(emu && up && db);
    exec_ok("INSERT INTO accounts (name) VALUES ('vs-one'), ('vs-two')");
    char *a = query1("SELECT id::text FROM accounts WHERE name = $1", "vs-one");
    char *o = query1("SELECT id::text FROM accounts WHERE name = $1", "vs-two");
    account_a = a ? strtoll(a, NULL, 10) : 0;
    account_b = o ? strtoll(o, NULL, 10) : 0;
    free(a);
    free(o);
    if (emu && up && db) {
        test_ingest_and_search();
        test_no_database();
    }
    sb_db_destroy(&db);
    sb_emu_destroy(&emu);
    sb_upstream_destroy(&up);
    event_base_free(base);
    curl_global_cleanup();
    return sb_test_finish("test_vsearch");
}
