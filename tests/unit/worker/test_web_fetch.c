/*
 * test_web_fetch: the web tool's requests (wtool_web.c) end to end against
 * the emulator's web (tests/emulator/emu_search.c), both on one event loop
 * in this process: a SearXNG and a Brave search (the credential read from
 * the environment variable the configuration names; missing, refused),
 * the Tavily request's shape (seen in the emulator's journal), allowed
 * domains passed on as a site: term, pages opened through the SSRF guard
 * (HTML as text, plain text, an image refused, a 404, a redirect, a cut
 * page), find_in_page, the guard's and the tool's refusals, a timeout,
 * a cancel, and callbacks that never run inside the starting call.
 */
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "sb_ssrf.h"
#include "sb_test.h"
#include "sb_time.h"
#include "upstream.h"
#include "wtool_web.h"

#define KEY "sk-emu-web"
#define KEY_ENV "SB_TEST_WEB_KEY"

static struct event_base *base;
static sb_upstream_t *up;
static struct sb_emu *emu;      /* keyed: --require-key KEY */
static struct sb_emu *slow_emu; /* every reply 400 ms late */
static bool starting;           /* inside sb_web_search / sb_web_page */

struct got {
    bool done;
    int calls;
    json_t *sources;
    char *text, *title;
    char error[256];
    bool has_error;
    size_t bytes_in;
};

static void got_clear(struct got *g)
{
    json_decref(g->sources);
    free(g->text);
    free(g->title);
    memset(g, 0, sizeof *g);
}

static void on_search(void *arg, json_t *sources, char *text, const char *error, size_t bytes_in)
{
    struct got *g = arg;
    CHECK(!starting);
    g->done = true;
    g->calls++;
    g->sources = sources;
    g->text = text;
    g->has_error = error != NULL;
    snprintf(g->error, sizeof g->error, "%s", error ? error : "");
    g->bytes_in = bytes_in;
}

static void on_page(void *arg, char *text, char *title, const char *error, size_t bytes_in)
{
    struct got *g = arg;
    CHECK(!starting);
    g->done = true;
    g->calls++;
    g->text = text;
    g->title = title;
    g->has_error = error != NULL;
    snprintf(g->error, sizeof g->error, "%s", error ? error : "");
    g->bytes_in = bytes_in;
}

static bool run_until_done(struct got *g, int64_t ms)
{
    int64_t end = sb_now_ms() + ms;
    while (!g->done && sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    return g->done;
}

static void run_for(int64_t ms)
{
    int64_t end = sb_now_ms() + ms;
    while (sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
}

static json_t *backend(const char *kind, struct sb_emu *e, const char *path, const char *cref)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sb_emu_port(e), path);
    return json_pack("{s:s, s:s, s:s?}", "kind", kind, "base_url", url, "credential_ref", cref);
}

/* Runs one search to its callback; returns sb_web_search's code (why filled). */
static int search(json_t *be, const char *tool_json, const char *query, struct got *g, char *why, size_t why_len)
{
    json_t *tool = tool_json ? json_loads(tool_json, 0, NULL) : NULL;
    sb_web_cfg_t cfg = {
        .backend = be, .tool = tool, .timeout_ms = 3000, .connect_timeout_ms = 1000, .max_bytes = 1 << 20};
    sb_web_op_t *op = NULL;
    memset(g, 0, sizeof *g);
    starting = true;
    int rc = sb_web_search(up, &cfg, query, on_search, g, &op, why, why_len);
    starting = false;
    json_decref(tool); /* cfg is copied */
    if (rc == 0) {
        CHECK(op != NULL);
        CHECK(!g->done);
        CHECK(run_until_done(g, 5000));
        CHECK_INT(g->calls, 1);
    } else {
        CHECK(op == NULL);
    }
    return rc;
}

static int page(const sb_ssrf_t *guard, const char *tool_json, const char *path, const char *pattern, size_t max,
                struct got *g, char *why, size_t why_len)
{
    json_t *tool = tool_json ? json_loads(tool_json, 0, NULL) : NULL;
    char url[256];
    if (path[0] == '/')
        snprintf(url, sizeof url, "http://127.0.0.1:%d%s", sb_emu_port(emu), path);
    else
        snprintf(url, sizeof url, "%s", path);
    sb_web_cfg_t cfg = {.tool = tool, .guard = guard, .timeout_ms = 3000, .connect_timeout_ms = 1000, .max_bytes = max};
    sb_web_op_t *op = NULL;
    memset(g, 0, sizeof *g);
    starting = true;
    int rc = sb_web_page(up, &cfg, url, pattern, on_page, g, &op, why, why_len);
    starting = false;
    json_decref(tool);
    if (rc == 0) {
        CHECK(!g->done);
        CHECK(run_until_done(g, 5000));
        CHECK_INT(g->calls, 1);
    }
    return rc;
}

struct fetched {
    bool done;
    char *body;
    size_t len;
};

static int fetched_data(long status, const char *data, size_t len, void *arg)
{
    (void)status;
    struct fetched *f = arg;
    f->body = realloc(f->body, f->len + len + 1);
    memcpy(f->body + f->len, data, len);
    f->len += len;
    f->body[f->len] = '\0';
    return 0;
}

static void fetched_done(const sb_upstream_result_t *res, void *arg)
{
    (void)res;
    ((struct fetched *)arg)->done = true;
}

/* The emulator's newest journal entry (read with the worker's own fetch). */
static json_t *last_request(struct sb_emu *e)
{
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/_emu/requests?limit=1", sb_emu_port(e));
    sb_fetch_req_t req = {.method = "GET", .url = url, .max_bytes = 1 << 20};
    sb_upstream_cbs_t cbs = {.on_data = fetched_data, .on_done = fetched_done};
    struct fetched f = {0};
    sb_upstream_xfer_t *x;
    CHECK_INT(sb_upstream_fetch(up, &req, 3000, 1000, &cbs, &f, &x), 0);
    int64_t end = sb_now_ms() + 3000;
    while (!f.done && sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    json_t *j = f.body ? json_loads(f.body, 0, NULL) : NULL;
    free(f.body);
    json_t *entry = json_incref(json_array_get(json_object_get(j, "requests"), 0));
    json_decref(j);
    CHECK(entry != NULL);
    return entry;
}

static void test_searxng(void)
{
    char why[128] = "";
    struct got g;
    json_t *be = backend("searxng", emu, "/_search/", NULL);
    CHECK_INT(search(be, NULL, "zorblax fruit", &g, why, sizeof why), 0);
    CHECK(!g.has_error);
    CHECK(g.bytes_in > 100);
    CHECK(json_array_size(g.sources) >= 2);
    char want[128];
    snprintf(want, sizeof want, "http://127.0.0.1:%d/_pages/zorblax.html", sb_emu_port(emu));
    CHECK_STR(json_string_value(json_object_get(json_array_get(g.sources, 0), "url")), want);
    CHECK_STR(json_string_value(json_object_get(json_array_get(g.sources, 0), "title")), "Zorblax fruit");
    CHECK(g.text && !strncmp(g.text, "[1] Zorblax fruit\nURL: ", 23));
    CHECK(strstr(g.text, "Cite the sources you use as markdown links [title](url).\n") != NULL);
    got_clear(&g);

    /* search_context_size low: three of the ten "fictional" results. */
    CHECK_INT(search(be, "{\"search_context_size\":\"low\"}", "fictional", &g, why, sizeof why), 0);
    CHECK_INT(json_array_size(g.sources), 3);
    got_clear(&g);

    /* One allowed domain: passed on as site:, and the results filtered. */
    CHECK_INT(search(be, "{\"filters\":{\"allowed_domains\":[\"example.org\"]}}", "zorblax fruit", &g, why, sizeof why),
              0);
    CHECK_INT(json_array_size(g.sources), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(g.sources, 0), "url")),
              "https://wiki.example.org/wiki/Zorblax");
    got_clear(&g);
    json_t *entry = last_request(emu);
    CHECK_STR(json_string_value(json_object_get(entry, "query")), "q=zorblax%20fruit%20site%3Aexample.org&format=json");
    CHECK_STR(json_string_value(json_object_get(entry, "method")), "GET");
    json_decref(entry);
    /* Two: filtered here only. */
    CHECK_INT(search(be, "{\"filters\":{\"allowed_domains\":[\"example.net\",\"example.org\"]}}", "fictional", &g, why,
                     sizeof why),
              0);
    CHECK_INT(json_array_size(g.sources), 2);
    got_clear(&g);
    json_decref(be);

    /* A base URL whose search is refused (format handling as SearXNG: a wrong path is a 404 here). */
    be = backend("searxng", emu, "/_search/nope", NULL);
    CHECK_INT(search(be, NULL, "zorblax", &g, why, sizeof why), 0);
    CHECK(g.has_error);
    CHECK_STR(g.error, "search backend returned HTTP 404");
    CHECK(g.sources == NULL && g.text == NULL);
    CHECK_STR(sb_web_outcome(g.error), "error");
    got_clear(&g);
    json_decref(be);
}

static void test_brave(void)
{
    char why[128] = "";
    struct got g;
    json_t *entry;
    json_t *be = backend("brave", emu, "/_search/brave", KEY_ENV);
    /* The variable is not set: refused before anything is sent, without a callback. */
    unsetenv(KEY_ENV);
    CHECK_INT(search(be, NULL, "zorblax", &g, why, sizeof why), -ENOKEY);
    CHECK_STR(why, "search backend credential is not set");
    CHECK(!g.done);
    setenv(KEY_ENV, "", 1);
    CHECK_INT(search(be, NULL, "zorblax", &g, why, sizeof why), -ENOKEY);

    setenv(KEY_ENV, KEY, 1);
    CHECK_INT(search(be, "{\"user_location\":{\"type\":\"approximate\",\"country\":\"de\"}}", "quintar river", &g, why,
                     sizeof why),
              0);
    CHECK(!g.has_error);
    CHECK(json_array_size(g.sources) >= 2);
    entry = last_request(emu);
    CHECK(strstr(json_string_value(json_object_get(entry, "query")), "&count=5&country=DE") != NULL);
    CHECK_STR(json_string_value(json_object_get(json_object_get(entry, "headers"), "x-subscription-token")),
              "[redacted]");
    json_decref(entry);
    /* Brave's <strong> marks are gone from what the model reads. */
    CHECK(g.text && strstr(g.text, "The Quintar river runs 412 km") && !strstr(g.text, "<strong>"));
    got_clear(&g);

    setenv(KEY_ENV, "wrong", 1);
    CHECK_INT(search(be, NULL, "zorblax", &g, why, sizeof why), 0);
    CHECK_STR(g.error, "search backend returned HTTP 422");
    got_clear(&g);
    unsetenv(KEY_ENV);
    json_decref(be);

    /* No credential_ref: none sent, which this Brave refuses. */
    be = backend("brave", emu, "/_search/brave", NULL);
    CHECK_INT(search(be, NULL, "zorblax", &g, why, sizeof why), 0);
    CHECK_STR(g.error, "search backend returned HTTP 422");
    got_clear(&g);
    json_decref(be);
}

static void test_tavily(void)
{
    /* The emulator has no Tavily: the request goes out (a POST to <base>/search) and its 404 comes back. */
    char why[128] = "";
    struct got g;
    setenv(KEY_ENV, KEY, 1);
    json_t *be = backend("tavily", emu, "/_search/tavily", KEY_ENV);
    CHECK_INT(search(be, "{\"filters\":{\"allowed_domains\":[\"example.org\"]}}", "zorblax", &g, why, sizeof why), 0);
    CHECK_STR(g.error, "search backend returned HTTP 404");
    got_clear(&g);
    json_t *entry = last_request(emu);
    CHECK_STR(json_string_value(json_object_get(entry, "method")), "POST");
    CHECK_STR(json_string_value(json_object_get(entry, "path")), "/_search/tavily/search");
    json_t *headers = json_object_get(entry, "headers");
    CHECK_STR(json_string_value(json_object_get(headers, "authorization")), "[redacted]");
    CHECK_STR(json_string_value(json_object_get(headers, "content-type")), "application/json");
    json_t *body = json_object_get(entry, "body");
    CHECK_STR(json_string_value(json_object_get(body, "query")), "zorblax"); /* no site: term: include_domains */
    CHECK_INT(json_integer_value(json_object_get(body, "max_results")), 5);
    CHECK_STR(json_string_value(json_array_get(json_object_get(body, "include_domains"), 0)), "example.org");
    json_decref(entry);
    json_decref(be);
    unsetenv(KEY_ENV);
}

static void test_refused_searches(void)
{
    char why[128] = "";
    struct got g;
    CHECK_INT(search(NULL, NULL, "x", &g, why, sizeof why), -EINVAL);
    CHECK_STR(why, "no search backend is configured");
    json_t *be = backend("bing", emu, "/", NULL);
    CHECK_INT(search(be, NULL, "x", &g, why, sizeof why), -EINVAL);
    CHECK_STR(why, "unknown search backend kind");
    json_decref(be);
    be = json_pack("{s:s, s:s}", "kind", "searxng", "base_url", "ftp://127.0.0.1/");
    CHECK_INT(search(be, NULL, "x", &g, why, sizeof why), -EINVAL);
    json_decref(be);
    be = backend("searxng", emu, "/_search", NULL);
    CHECK_INT(search(be, NULL, "", &g, why, sizeof why), -EINVAL);
    CHECK_STR(why, "empty search query");
    json_decref(be);
}

static void test_pages(const sb_ssrf_t *guard)
{
    char why[128] = "";
    struct got g;
    CHECK_INT(page(guard, NULL, "/_pages/zorblax.html", NULL, 1 << 20, &g, why, sizeof why), 0);
    CHECK(!g.has_error);
    CHECK_STR(g.title, "Zorblax fruit");
    CHECK(g.text && strstr(g.text, "Zorblax fruit\nThe zorblax is a blue-skinned fruit grown only on the terraces"));
    CHECK(strstr(g.text, "- Vitamin C: 61 mg per 100 g\n") != NULL);
    CHECK(!strstr(g.text, "script-text-never-shown") && !strstr(g.text, "font-family") &&
          !strstr(g.text, "Enable JavaScript"));
    CHECK(g.bytes_in > 500);
    got_clear(&g);

    /* find_in_page. */
    CHECK_INT(page(guard, NULL, "/_pages/zorblax.html", "HARVESTED", 1 << 20, &g, why, sizeof why), 0);
    CHECK(g.text && strstr(g.text, "1 line matching \"HARVESTED\":") && strstr(g.text, "harvested in late October"));
    got_clear(&g);
    CHECK_INT(page(guard, NULL, "/_pages/zorblax.html", "xyzzy", 1 << 20, &g, why, sizeof why), 0);
    CHECK(!g.has_error);
    CHECK_STR(g.text, "pattern not found");
    got_clear(&g);

    /* Plain text as is; an image refused; a 404; a redirect followed. */
    CHECK_INT(page(guard, NULL, "/_pages/notes.txt", NULL, 1 << 20, &g, why, sizeof why), 0);
    CHECK(g.text && !strncmp(g.text, "Field notes\n\nThe zorblax harvest", 32));
    CHECK(g.title == NULL);
    got_clear(&g);
    CHECK_INT(page(guard, NULL, "/_pages/image.png", NULL, 1 << 20, &g, why, sizeof why), 0);
    CHECK_STR(g.error, "unsupported content type");
    CHECK(g.text == NULL && g.title == NULL);
    got_clear(&g);
    CHECK_INT(page(guard, NULL, "/_pages/nope.html", NULL, 1 << 20, &g, why, sizeof why), 0);
    CHECK_STR(g.error, "page returned HTTP 404");
    got_clear(&g);
    CHECK_INT(page(guard, NULL, "/_pages/moved.html", NULL, 1 << 20, &g, why, sizeof why), 0);
    CHECK(!g.has_error);
    CHECK_STR(g.title, "Zorblax fruit");
    got_clear(&g);

    /* A page over max_bytes is read up to it and used cut. */
    CHECK_INT(page(guard, NULL, "/_pages/zorblax.html", NULL, 1200, &g, why, sizeof why), 0);
    CHECK(!g.has_error);
    CHECK_INT(g.bytes_in, 1200);
    CHECK(g.text && strstr(g.text, "[page text cut at "));
    got_clear(&g);
    /* The text is cut at the context size's budget (low: 8 KiB) even when the page is read whole. */
    CHECK_INT(
        page(guard, "{\"search_context_size\":\"low\"}", "/_pages/quintar.html", NULL, 1 << 20, &g, why, sizeof why),
        0);
    CHECK(g.text && strlen(g.text) <= 8 * 1024 + 64);
    got_clear(&g);

    /* Refused before anything starts (no callback). */
    CHECK_INT(
        page(guard, "{\"external_web_access\":false}", "/_pages/zorblax.html", NULL, 1 << 20, &g, why, sizeof why),
        -EPERM);
    CHECK_INT(page(guard, "{\"filters\":{\"allowed_domains\":[\"example.org\"]}}", "/_pages/zorblax.html", NULL,
                   1 << 20, &g, why, sizeof why),
              -EACCES);
    CHECK_STR(why, "the page is not on an allowed domain");
    CHECK_INT(page(guard, "{\"filters\":{\"allowed_domains\":[\"127.0.0.1\"]}}", "/_pages/zorblax.html", NULL, 1 << 20,
                   &g, why, sizeof why),
              0);
    got_clear(&g);
    CHECK_INT(page(NULL, NULL, "/_pages/zorblax.html", NULL, 1 << 20, &g, why, sizeof why), -EACCES);
    CHECK_INT(page(guard, NULL, "file:///etc/passwd", NULL, 1 << 20, &g, why, sizeof why), -EINVAL);
    CHECK_INT(page(guard, NULL, "/_pages/zorblax.html", "", 1 << 20, &g, why, sizeof why), -EINVAL);
    CHECK(!g.done);

    /* The default guard refuses loopback, and plain http. */
    sb_ssrf_t *strict = sb_ssrf_new();
    why[0] = '\0';
    CHECK_INT(page(strict, NULL, "/_pages/zorblax.html", NULL, 1 << 20, &g, why, sizeof why), -EACCES);
    CHECK(why[0] != '\0');
    CHECK_INT(page(strict, NULL, "https://127.0.0.1/x", NULL, 1 << 20, &g, why, sizeof why), -EACCES);
    sb_ssrf_destroy(&strict);
}

static void test_timeout_and_cancel(void)
{
    char why[128] = "";
    struct got g;
    json_t *be = backend("searxng", slow_emu, "/_search", NULL);
    json_t *tool = json_object();
    sb_web_cfg_t cfg = {.backend = be, .tool = tool, .timeout_ms = 150, .connect_timeout_ms = 100, .max_bytes = 4096};
    sb_web_op_t *op = NULL;
    memset(&g, 0, sizeof g);
    CHECK_INT(sb_web_search(up, &cfg, "zorblax", on_search, &g, &op, why, sizeof why), 0);
    CHECK(run_until_done(&g, 3000));
    CHECK_STR(g.error, "search backend timed out");
    CHECK_STR(sb_web_outcome(g.error), "timeout");
    got_clear(&g);

    /* Cancelled: no callback, ever. */
    cfg.timeout_ms = 3000;
    CHECK_INT(sb_web_search(up, &cfg, "zorblax", on_search, &g, &op, why, sizeof why), 0);
    run_for(50);
    sb_web_cancel(&op);
    CHECK(op == NULL);
    sb_web_cancel(&op); /* NULL-safe */
    run_for(600);
    CHECK(!g.done);
    CHECK_INT(sb_upstream_active(up), 0);
    json_decref(tool);
    json_decref(be);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    base = event_base_new();
    up = sb_upstream_new(base);
    struct sb_emu_config ecfg = {.host = "127.0.0.1", .port = 0, .require_key = KEY};
    struct sb_emu_config scfg = {.host = "127.0.0.1", .port = 0, .latency_ms = 400};
    emu = sb_emu_new(base, &ecfg);
    slow_emu = sb_emu_new(base, &scfg);
    CHECK(up && emu && slow_emu);
    sb_ssrf_t *guard = sb_ssrf_new();
    CHECK_INT(sb_ssrf_allow_cidr(guard, "127.0.0.0/8"), 0);
    sb_ssrf_allow_http(guard, true);

    test_searxng();
    test_brave();
    test_tavily();
    test_refused_searches();
    test_pages(guard);
    test_timeout_and_cancel();

    sb_ssrf_destroy(&guard);
    sb_upstream_destroy(&up);
    sb_emu_destroy(&emu);
    sb_emu_destroy(&slow_emu);
    event_base_free(base);
    curl_global_cleanup();
    return sb_test_finish("test_web_fetch");
}
