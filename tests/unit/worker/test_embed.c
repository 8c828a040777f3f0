/*
 * test_embed: embeddings for file search (wtool_embed.h). The request for
 * each route kind (OpenAI's /embeddings, Gemini's batchEmbedContents; the
 * credential from the environment into its header, dimensions from the
 * route's capabilities; a kind without embeddings refused); the answer
 * read (index order, base64 floats, unit length, usage) and malformed
 * answers refused; and whole calls against the emulator on this process's
 * loop: 150 inputs in 3 batches, vectors that are deterministic and
 * similar for similar texts, a 503 retried, a 400 passed on, a timeout,
 * a cancel, and callbacks that never run inside the starting call.
 */
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "sb_base64.h"
#include "sb_test.h"
#include "sb_time.h"
#include "upstream.h"
#include "wtool_embed.h"

#define KEY "sk-emu-embed"
#define KEY_ENV "SB_TEST_EMBED_KEY"

static struct event_base *base;
static sb_upstream_t *up;
static struct sb_emu *emu;
static bool starting;

/* ---- the request -------------------------------------------------------------------- */

static json_t *route_of(const char *json)
{
    json_t *r = json_loads(json, 0, NULL);
    CHECK(r != NULL);
    return r;
}

static const char *header(const sb_provider_request_t *req, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < req->n_headers; i++)
        if (!strncasecmp(req->headers[i], name, n) && req->headers[i][n] == ':')
            return req->headers[i] + n + 2;
    return NULL;
}

static void test_build(void)
{
    sb_embed_input_t in[] = {{"first text", 10}, {"second\"text", 11}};
    sb_provider_request_t req = {0};
    json_t *err = NULL;
    setenv(KEY_ENV, KEY, 1);

    json_t *r = route_of("{\"provider\":\"openai-chat\",\"base_url\":\"http://h/v1/\",\"upstream_model\":\"emb-3\","
                         "\"credential_ref\":\"" KEY_ENV "\",\"capabilities\":{\"embedding_dimensions\":256}}");
    CHECK_INT(sb_embed_api_of(r), SB_EMBED_API_OPENAI);
    CHECK_INT(sb_embed_build(r, in, 2, false, &req, &err), 0);
    CHECK_STR(req.url, "http://h/v1/embeddings");
    CHECK_STR(header(&req, "Authorization"), "Bearer " KEY);
    json_t *body = json_loads(req.body, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(body, "model")), "emb-3");
    CHECK_STR(json_string_value(json_array_get(json_object_get(body, "input"), 1)), "second\"text");
    CHECK_INT(json_array_size(json_object_get(body, "input")), 2);
    CHECK_STR(json_string_value(json_object_get(body, "encoding_format")), "float");
    CHECK_INT(json_integer_value(json_object_get(body, "dimensions")), 256);
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(r);

    r = route_of("{\"provider\":\"gemini\",\"base_url\":\"http://g/v1beta\",\"upstream_model\":\"text-embedding-004\","
                 "\"credential_ref\":\"" KEY_ENV "\",\"capabilities\":{\"embedding_dimensions\":64}}");
    CHECK_INT(sb_embed_build(r, in, 2, true, &req, &err), 0);
    CHECK_STR(req.url, "http://g/v1beta/models/text-embedding-004:batchEmbedContents");
    CHECK_STR(header(&req, "x-goog-api-key"), KEY);
    CHECK(header(&req, "Authorization") == NULL);
    body = json_loads(req.body, 0, NULL);
    json_t *r0 = json_array_get(json_object_get(body, "requests"), 0);
    CHECK_STR(json_string_value(json_object_get(r0, "model")), "models/text-embedding-004");
    CHECK_STR(json_string_value(json_object_get(r0, "taskType")), "RETRIEVAL_QUERY");
    CHECK_INT(json_integer_value(json_object_get(r0, "outputDimensionality")), 64);
    CHECK_STR(json_string_value(
                  json_object_get(json_array_get(json_object_get(json_object_get(r0, "content"), "parts"), 0), "text")),
              "first text");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(r);
    /* Documents, not queries; no dimensions without the capability. */
    r = route_of("{\"provider\":\"gemini\",\"base_url\":\"http://g\",\"upstream_model\":\"models/e\"}");
    CHECK_INT(sb_embed_build(r, in, 1, false, &req, &err), 0);
    CHECK_STR(req.url, "http://g/models/e:batchEmbedContents");
    CHECK(strstr(req.body, "RETRIEVAL_DOCUMENT") && !strstr(req.body, "outputDimensionality"));
    sb_provider_request_clear(&req);
    json_decref(r);

    /* Refusals. */
    static const char *const bad[] = {
        "{\"provider\":\"anthropic\",\"base_url\":\"http://a\",\"upstream_model\":\"claude\"}",
        "{\"provider\":\"openai-chat\",\"upstream_model\":\"e\"}",
        "{\"provider\":\"openai-chat\",\"base_url\":\"http://h\"}",
        "{\"provider\":\"gemini\",\"base_url\":\"http://g\",\"upstream_model\":\"../x?key=1\"}",
        "{\"provider\":\"openai-chat\",\"base_url\":\"http://h\",\"upstream_model\":\"e\",\"credential_ref\":"
        "\"SB_TEST_EMBED_UNSET\"}",
    };
    static const int status[] = {400, 400, 400, 400, 502};
    unsetenv("SB_TEST_EMBED_UNSET");
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        r = route_of(bad[i]);
        err = NULL;
        CHECK_INT(sb_embed_build(r, in, 1, false, &req, &err), -EINVAL);
        CHECK(err != NULL);
        CHECK_INT(json_integer_value(json_object_get(err, "status")), status[i]);
        json_decref(err);
        sb_provider_request_clear(&req);
        json_decref(r);
    }
}

/* ---- the answer --------------------------------------------------------------------- */

static int parse(enum sb_embed_api api, const char *body, size_t n, size_t *dim, float **v, int64_t *tokens)
{
    char why[160] = "";
    int rc = sb_embed_parse(api, body, strlen(body), n, dim, v, tokens, why, sizeof why);
    if (rc < 0)
        CHECK(why[0] && *v == NULL);
    return rc;
}

static bool near(double a, double b)
{
    return fabs(a - b) < 1e-6;
}

static void test_parse(void)
{
    size_t dim = 0;
    float *v = NULL;
    int64_t tokens = -1;
    /* Out of order, scaled to unit length, usage read. */
    CHECK_INT(parse(SB_EMBED_API_OPENAI,
                    "{\"data\":[{\"index\":1,\"embedding\":[0,2]},{\"index\":0,\"embedding\":[3,4]}],"
                    "\"usage\":{\"prompt_tokens\":7,\"total_tokens\":7}}",
                    2, &dim, &v, &tokens),
              0);
    CHECK_INT(dim, 2);
    CHECK_INT(tokens, 7);
    CHECK(near(v[0], 0.6) && near(v[1], 0.8) && near(v[2], 0) && near(v[3], 1));
    free(v);
    /* base64 float32, as OpenAI sends with encoding_format base64; a zero vector stays zero. */
    float raw[3] = {1, 0, 0};
    char *b64 = sb_base64_encode(raw, sizeof raw, NULL);
    char body[512];
    snprintf(body, sizeof body, "{\"data\":[{\"index\":0,\"embedding\":\"%s\"},{\"index\":1,\"embedding\":[0,0,0]}]}",
             b64);
    free(b64);
    dim = 0;
    CHECK_INT(parse(SB_EMBED_API_OPENAI, body, 2, &dim, &v, &tokens), 0);
    CHECK_INT(dim, 3);
    CHECK_INT(tokens, 0);
    CHECK(near(v[0], 1) && near(v[3], 0) && near(v[5], 0));
    free(v);
    /* Gemini: in order. */
    dim = 0;
    CHECK_INT(parse(SB_EMBED_API_GEMINI, "{\"embeddings\":[{\"values\":[0,0,5]},{\"values\":[1,1,0]}]}", 2, &dim, &v,
                    &tokens),
              0);
    CHECK(near(v[2], 1) && near(v[3], 1 / sqrt(2)));
    free(v);
    /* The size must be the one asked for when given. */
    dim = 3;
    CHECK_INT(parse(SB_EMBED_API_GEMINI, "{\"embeddings\":[{\"values\":[1,2]}]}", 1, &dim, &v, &tokens), -EINVAL);
    CHECK_INT(dim, 3);

    static const char *const bad[] = {
        "",
        "[]",
        "{\"data\":[]}",
        "{\"data\":[{\"index\":0,\"embedding\":[1]}]}",                                   /* one for two */
        "{\"data\":[{\"index\":0,\"embedding\":[1]},{\"index\":0,\"embedding\":[1]}]}",   /* repeated */
        "{\"data\":[{\"index\":0,\"embedding\":[1]},{\"index\":2,\"embedding\":[1]}]}",   /* out of range */
        "{\"data\":[{\"embedding\":[1]},{\"index\":1,\"embedding\":[1]}]}",               /* no index */
        "{\"data\":[{\"index\":0,\"embedding\":[1,2]},{\"index\":1,\"embedding\":[1]}]}", /* sizes differ */
        "{\"data\":[{\"index\":0,\"embedding\":[1,\"x\"]},{\"index\":1,\"embedding\":[1,2]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":[]},{\"index\":1,\"embedding\":[]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":\"abc\"},{\"index\":1,\"embedding\":[1]}]}", /* not float32 base64 */
        "{\"data\":[{\"index\":0,\"embedding\":[1e300]},{\"index\":1,\"embedding\":[1]}]}",
        "{\"data\":[{\"index\":0,\"embedding\":{}},{\"index\":1,\"embedding\":[1]}]}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dim = 0;
        v = NULL;
        CHECK_INT(parse(SB_EMBED_API_OPENAI, bad[i], 2, &dim, &v, &tokens), -EINVAL);
        CHECK_INT(dim, 0);
    }
    dim = 0;
    CHECK_INT(parse(SB_EMBED_API_GEMINI, "{\"data\":[{\"index\":0,\"embedding\":[1]}]}", 1, &dim, &v, &tokens),
              -EINVAL);
}

/* ---- whole calls against the emulator --------------------------------------------- */

struct got {
    bool done;
    int calls;
    float *vecs;
    size_t dim;
    int64_t tokens;
    json_t *err;
};

static void on_embedded(void *arg, float *vecs, size_t dim, int64_t tokens, int64_t upstream_us, json_t *err)
{
    struct got *g = arg;
    CHECK(!starting);
    CHECK(upstream_us >= 0);
    g->done = true;
    g->calls++;
    g->vecs = vecs;
    g->dim = dim;
    g->tokens = tokens;
    g->err = err;
}

static void run_for(int64_t ms, const struct got *g)
{
    int64_t end = sb_now_ms() + ms;
    while ((!g || !g->done) && sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static json_t *emu_route(const char *provider, const char *model, const char *extra)
{
    char json[512];
    snprintf(json, sizeof json,
             "{\"provider\":\"%s\",\"base_url\":\"http://127.0.0.1:%d/%s\",\"upstream_model\":\"%s\","
             "\"credential_ref\":\"" KEY_ENV "\",\"timeout_ms\":3000%s}",
             provider, sb_emu_port(emu), strcmp(provider, "gemini") ? "v1" : "v1beta", model, extra ? extra : "");
    return route_of(json);
}

static void embed(const json_t *route, const sb_embed_input_t *in, size_t n, long long deadline, struct got *g)
{
    memset(g, 0, sizeof *g);
    sb_embed_env_t env = {.base = base, .up = up, .connect_timeout_ms = 1000};
    starting = true;
    sb_embed_t *e = sb_embed_start(&env, route, in, n, false, deadline, on_embedded, g);
    starting = false;
    CHECK(e != NULL);
    CHECK(!g->done);
    run_for(10000, g);
    CHECK(g->done);
    CHECK_INT(g->calls, 1);
}

/* A control request to the emulator (PUT/GET /_emu/...), answered synchronously on the loop. */
struct ctl {
    bool done;
    char body[4096];
    size_t len;
};
static int ctl_data(long status, const char *data, size_t len, void *arg)
{
    struct ctl *c = arg;
    size_t n = len < sizeof c->body - 1 - c->len ? len : sizeof c->body - 1 - c->len;
    memcpy(c->body + c->len, data, n);
    c->len += n;
    c->body[c->len] = '\0';
    return 0;
}
static void ctl_done(const sb_upstream_result_t *res, void *arg)
{
    ((struct ctl *)arg)->done = true;
}
static json_t *emu_ctl(const char *method, const char *path, const char *body)
{
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sb_emu_port(emu), path);
    const char *hdr[] = {"Content-Type: application/json"};
    sb_fetch_req_t req = {.method = method,
                          .url = url,
                          .headers = hdr,
                          .n_headers = body ? 1 : 0,
                          .body = body,
                          .body_len = body ? strlen(body) : 0,
                          .max_bytes = 1 << 20};
    sb_upstream_cbs_t cbs = {.on_data = ctl_data, .on_done = ctl_done};
    struct ctl c = {0};
    sb_upstream_xfer_t *x;
    CHECK_INT(sb_upstream_fetch(up, &req, 3000, 1000, &cbs, &c, &x), 0);
    int64_t end = sb_now_ms() + 3000;
    while (!c.done && sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    return json_loads(c.body, 0, NULL);
}

/* /v1 requests the emulator counted for model. */
static long long requests_for(const char *model)
{
    json_t *s = emu_ctl("GET", "/_emu/stats", NULL);
    long long n =
        json_integer_value(json_object_get(json_object_get(json_object_get(s, "by_model"), model), "requests"));
    json_decref(s);
    return n;
}

static double dot(const float *a, const float *b, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

static void test_calls(void)
{
    /* 150 inputs: three batches (64, 64, 22), in order. */
    enum { N = 150 };
    static char texts[N][64];
    sb_embed_input_t in[N];
    for (int i = 0; i < N; i++) {
        snprintf(texts[i], sizeof texts[i], "document number %d about %s", i, i % 2 ? "apples" : "rockets");
        in[i] = (sb_embed_input_t){texts[i], strlen(texts[i])};
    }
    json_t *r = emu_route("openai-chat", "emu-embed", NULL);
    long long before = requests_for("emu-embed");
    struct got g;
    embed(r, in, N, 0, &g);
    CHECK(g.err == NULL && g.vecs != NULL);
    CHECK_INT(g.dim, 256);
    CHECK(g.tokens > 0);
    CHECK_INT(requests_for("emu-embed") - before, 3);
    for (int i = 0; i < N && g.vecs; i++)
        CHECK(fabs(dot(g.vecs + i * g.dim, g.vecs + i * g.dim, g.dim) - 1) < 1e-4);
    /* Texts sharing their topic are closer than texts that do not. */
    if (g.vecs)
        CHECK(dot(g.vecs + 1 * g.dim, g.vecs + 3 * g.dim, g.dim) > dot(g.vecs + 1 * g.dim, g.vecs + 2 * g.dim, g.dim));
    float *first = g.vecs;
    /* Deterministic: the same text, alone, gets the same vector as in the batch. */
    embed(r, in + 140, 1, 0, &g);
    CHECK(g.vecs && first && fabs(dot(g.vecs, first + 140 * 256, 256) - 1) < 1e-5);
    free(g.vecs);
    free(first);
    json_decref(r);

    /* Dimensions from the route; Gemini's batch API. */
    r = emu_route("gemini", "text-embedding-004", ",\"capabilities\":{\"embedding_dimensions\":32}");
    embed(r, in, 70, 0, &g);
    CHECK(g.err == NULL);
    CHECK_INT(g.dim, 32);
    CHECK_INT(g.tokens, 0);
    free(g.vecs);
    json_decref(r);

    /* A 503 is retried (one more request), and the call succeeds. */
    json_decref(emu_ctl("PUT", "/_emu/faults/emu-embed-r", "{\"directives\":\"status=503\",\"count\":1}"));
    r = emu_route("openai-chat", "emu-embed-r", NULL);
    before = requests_for("emu-embed-r");
    embed(r, in, 3, 0, &g);
    CHECK(g.err == NULL && g.vecs != NULL);
    CHECK_INT(requests_for("emu-embed-r") - before, 2);
    free(g.vecs);
    /* A 400 is not retried: its error is passed on. */
    json_decref(emu_ctl("PUT", "/_emu/faults/emu-embed-r", "{\"directives\":\"status=400\",\"count\":1}"));
    before = requests_for("emu-embed-r");
    embed(r, in, 3, 0, &g);
    CHECK(g.vecs == NULL && g.err != NULL);
    CHECK_INT(json_integer_value(json_object_get(g.err, "status")), 400);
    CHECK_INT(requests_for("emu-embed-r") - before, 1);
    json_decref(g.err);
    /* 503 every time: retried twice, then the 503 is the error. */
    json_decref(emu_ctl("PUT", "/_emu/faults/emu-embed-r", "{\"directives\":\"status=503\",\"count\":3}"));
    before = requests_for("emu-embed-r");
    embed(r, in, 3, 0, &g);
    CHECK(g.err != NULL);
    CHECK_INT(json_integer_value(json_object_get(g.err, "status")), 503);
    CHECK_INT(requests_for("emu-embed-r") - before, 3);
    json_decref(g.err);
    json_decref(r);

    /* A wrong key: the operator's problem, a 502 that names no key. */
    setenv(KEY_ENV, "sk-wrong", 1);
    r = emu_route("openai-chat", "emu-embed", NULL);
    embed(r, in, 1, 0, &g);
    CHECK(g.err && json_integer_value(json_object_get(g.err, "status")) == 502);
    CHECK(g.err && !strstr(json_string_value(json_object_get(g.err, "message")), "sk-wrong"));
    json_decref(g.err);
    json_decref(r);
    setenv(KEY_ENV, KEY, 1);

    /* A route that cannot embed fails from the loop, not inside the call. */
    json_t *bad = route_of("{\"provider\":\"anthropic\",\"base_url\":\"http://127.0.0.1:9\",\"upstream_model\":\"c\"}");
    embed(bad, in, 1, 0, &g);
    CHECK(g.err && json_integer_value(json_object_get(g.err, "status")) == 400);
    json_decref(g.err);
    json_decref(bad);

    /* The deadline: a hung upstream ends in a 504 by then. */
    json_decref(emu_ctl("PUT", "/_emu/faults/emu-embed-h", "{\"directives\":\"hang\",\"count\":1}"));
    r = emu_route("openai-chat", "emu-embed-h", NULL);
    embed(r, in, 1, sb_now_ms() + 300, &g);
    CHECK(g.err && json_integer_value(json_object_get(g.err, "status")) == 504);
    json_decref(g.err);
    /* A deadline already past: nothing is sent. */
    before = requests_for("emu-embed-h");
    embed(r, in, 1, sb_now_ms() - 1, &g);
    CHECK(g.err && json_integer_value(json_object_get(g.err, "status")) == 504);
    CHECK_INT(requests_for("emu-embed-h"), before);
    json_decref(g.err);
    json_decref(r);
    json_decref(emu_ctl("DELETE", "/_emu/faults", NULL));

    /* Cancelled (before and after the first batch left): no callback, nothing leaks. */
    r = emu_route("openai-chat", "emu-embed", NULL);
    sb_embed_env_t env = {.base = base, .up = up, .connect_timeout_ms = 1000};
    memset(&g, 0, sizeof g);
    sb_embed_t *e = sb_embed_start(&env, r, in, N, false, 0, on_embedded, &g);
    sb_embed_cancel(&e);
    CHECK(e == NULL);
    e = sb_embed_start(&env, r, in, N, false, 0, on_embedded, &g);
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    sb_embed_cancel(&e);
    run_for(200, NULL);
    CHECK(!g.done);
    sb_embed_cancel(&e); /* NULL-safe */
    json_decref(r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    test_build();
    test_parse();
    base = event_base_new();
    up = sb_upstream_new(base);
    struct sb_emu_config cfg = {.port = 0, .require_key = KEY};
    emu = sb_emu_new(base, &cfg);
    CHECK(emu != NULL && up != NULL);
    if (emu && up)
        test_calls();
    sb_emu_destroy(&emu);
    sb_upstream_destroy(&up);
    event_base_free(base);
    curl_global_cleanup();
    return sb_test_finish("test_embed");
}
