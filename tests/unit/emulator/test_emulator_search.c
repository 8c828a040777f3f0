/*
 * Unit test of the emulator's web (emu_search.c): the SearXNG-compatible
 * backend (GET /_search/search: its JSON shape, the 403 for a format other
 * than json, the 400 without a query, word matching and ranking, site:
 * terms, result URLs on the request's Host), the Brave-shaped one (the
 * subscription token against the emulator's key, its 422 errors, <strong>
 * marks, count, "web" left out when nothing matched, the token redacted in
 * the journal), and the pages (HTML, plain text, an image, a redirect, 404,
 * 405). The emulator runs in-process (sb_emu_test.h).
 */
#include "sb_emu_test.h"

static json_t *get_json(struct sb_emu *emu, const char *path, const char *header, long want)
{
    struct resp r = http(emu, "GET", path, NULL, header, NULL, 0);
    CHECK_INT(r.status, want);
    json_t *j = json_loads(r.body, 0, NULL);
    if (!j)
        fprintf(stderr, "  %s: not JSON: %s\n", path, r.body);
    resp_free(&r);
    return j;
}

static const char *result_url(json_t *results, size_t i)
{
    return json_string_value(json_object_get(json_array_get(results, i), "url"));
}

static void test_searxng(struct sb_emu *emu)
{
    char want[256];
    json_t *j = get_json(emu, "/_search/search?q=quintar%20river&format=json", NULL, 200);
    CHECK_STR(jstr(j, "query"), "quintar river");
    json_t *results = json_object_get(j, "results");
    /* The page (title: 2 + 2), the flood news (title: 2 + 2, after it in the corpus), then the pages that
     * name it in their snippet or keywords (tessel-bridge: 1 + 1). */
    CHECK_INT(json_array_size(results), 3);
    CHECK_INT(json_integer_value(json_object_get(j, "number_of_results")), 3);
    snprintf(want, sizeof want, "http://127.0.0.1:%d/_pages/quintar.html", port_of(emu));
    CHECK_STR(result_url(results, 0), want);
    CHECK_STR(result_url(results, 1), "https://news.example.net/2029/quintar-flood");
    snprintf(want, sizeof want, "http://127.0.0.1:%d/_pages/tessel-bridge.html", port_of(emu));
    CHECK_STR(result_url(results, 2), want);
    json_t *r0 = json_array_get(results, 0);
    CHECK_STR(json_string_value(json_object_get(r0, "title")), "Quintar river");
    CHECK(strstr(json_string_value(json_object_get(r0, "content")), "412 km") != NULL);
    CHECK_STR(json_string_value(json_object_get(r0, "engine")), "emulator");
    CHECK_STR(json_string_value(json_array_get(json_object_get(r0, "engines"), 0)), "emulator");
    CHECK_STR(json_string_value(json_object_get(r0, "category")), "general");
    CHECK(json_is_number(json_object_get(r0, "score")));
    CHECK_STR(json_string_value(json_array_get(json_object_get(r0, "parsed_url"), 2)), "/_pages/quintar.html");
    static const char *const empty[] = {"answers", "suggestions", "infoboxes", "unresponsive_engines", "corrections"};
    for (size_t i = 0; i < sizeof empty / sizeof empty[0]; i++)
        CHECK(json_is_array(json_object_get(j, empty[i])) && json_array_size(json_object_get(j, empty[i])) == 0);
    json_decref(j);

    /* Stop words and case do not matter; "+" is a space; title words outrank snippet words. */
    j = get_json(emu, "/_search/search?format=json&q=What+is+the+ZORBLAX+fruit%3F", NULL, 200);
    results = json_object_get(j, "results");
    CHECK(json_array_size(results) >= 2);
    CHECK(strstr(result_url(results, 0), "/_pages/zorblax.html") != NULL);
    CHECK_STR(result_url(results, 1), "https://wiki.example.org/wiki/Zorblax");
    json_decref(j);

    /* "fictional" lists all ten; site: narrows them. */
    j = get_json(emu, "/_search/search?q=fictional&format=json", NULL, 200);
    CHECK_INT(json_array_size(json_object_get(j, "results")), 10);
    json_decref(j);
    j = get_json(emu, "/_search/search?q=fictional%20site%3Aexample.org&format=json", NULL, 200);
    results = json_object_get(j, "results");
    CHECK_INT(json_array_size(results), 1);
    CHECK_STR(result_url(results, 0), "https://wiki.example.org/wiki/Zorblax");
    json_decref(j);
    j = get_json(emu, "/_search/search?q=site%3A127.0.0.1%20fictional&format=json", NULL, 200);
    CHECK_INT(json_array_size(json_object_get(j, "results")), 8);
    json_decref(j);
    /* A subdomain is on its domain; a lookalike is not. */
    j = get_json(emu, "/_search/search?q=fictional%20site%3Aexample.net&format=json", NULL, 200);
    CHECK_INT(json_array_size(json_object_get(j, "results")), 1);
    json_decref(j);
    j = get_json(emu, "/_search/search?q=fictional%20site%3Ample.net&format=json", NULL, 200);
    CHECK_INT(json_array_size(json_object_get(j, "results")), 0);
    json_decref(j);

    /* Nothing matches: an empty list. */
    j = get_json(emu, "/_search/search?q=xyzzy%20plugh&format=json", NULL, 200);
    CHECK_INT(json_array_size(json_object_get(j, "results")), 0);
    CHECK_INT(json_integer_value(json_object_get(j, "number_of_results")), 0);
    json_decref(j);

    /* Page URLs are on the host the client asked for. */
    j = get_json(emu, "/_search/search?q=helix&format=json", "Host: web.test:8080", 200);
    CHECK_STR(result_url(json_object_get(j, "results"), 0), "http://web.test:8080/_pages/helix-cafe.html");
    json_decref(j);
    /* Without a Host header: the address the connection reached. */
    j = get_json(emu, "/_search/search?q=helix&format=json", "Host:", 200);
    snprintf(want, sizeof want, "http://127.0.0.1:%d/_pages/helix-cafe.html", port_of(emu));
    CHECK_STR(result_url(json_object_get(j, "results"), 0), want);
    json_decref(j);

    /* Format other than json (or none): 403; no query: 400; not GET: 405. */
    static const struct {
        const char *path;
        long status;
    } bad[] = {{"/_search/search?q=zorblax", 403},
               {"/_search/search?q=zorblax&format=html", 403},
               {"/_search/search?q=zorblax&format=rss", 403},
               {"/_search/search?format=json", 400},
               {"/_search/search?q=&format=json", 400},
               {"/_search/nope", 404}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        struct resp r = http(emu, "GET", bad[i].path, NULL, NULL, NULL, 0);
        CHECK_INT(r.status, bad[i].status);
        resp_free(&r);
    }
    struct resp r = http(emu, "POST", "/_search/search?q=zorblax&format=json", "q=zorblax", NULL,
                         "Content-Type: application/x-www-form-urlencoded", 0);
    CHECK_INT(r.status, 405);
    resp_free(&r);
}

static const char *brave_code(json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "error"), "code"));
}

static void test_brave(struct sb_emu *keyed, struct sb_emu *open)
{
    const char *path = "/_search/brave/res/v1/web/search?q=zorblax%20fruit";
    /* The keyed emulator wants its key. */
    json_t *j = get_json(keyed, path, NULL, 422);
    CHECK_STR(json_string_value(json_object_get(j, "type")), "ErrorResponse");
    CHECK_STR(brave_code(j), "SUBSCRIPTION_TOKEN_INVALID");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "error"), "status")), 422);
    json_decref(j);
    j = get_json(keyed, path, "X-Subscription-Token: wrong", 422);
    CHECK_STR(brave_code(j), "SUBSCRIPTION_TOKEN_INVALID");
    json_decref(j);
    /* The key in another header is no token. */
    j = get_json(keyed, path, "Authorization: Bearer " KEY, 422);
    json_decref(j);

    j = get_json(keyed, path, "X-Subscription-Token: " KEY, 200);
    CHECK_STR(json_string_value(json_object_get(j, "type")), "search");
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "query"), "original")), "zorblax fruit");
    json_t *results = json_object_get(json_object_get(j, "web"), "results");
    CHECK(json_array_size(results) >= 2);
    json_t *r0 = json_array_get(results, 0);
    CHECK_STR(json_string_value(json_object_get(r0, "title")), "Zorblax fruit");
    CHECK_STR(json_string_value(json_object_get(r0, "type")), "search_result");
    CHECK(strstr(json_string_value(json_object_get(r0, "description")), "The <strong>zorblax</strong> is a") != NULL);
    CHECK(strstr(json_string_value(json_object_get(r0, "url")), "/_pages/zorblax.html") != NULL);
    json_decref(j);

    /* count, country. */
    j = get_json(keyed, "/_search/brave/res/v1/web/search?q=fictional&count=3&country=DE", "X-Subscription-Token: " KEY,
                 200);
    CHECK_INT(json_array_size(json_object_get(json_object_get(j, "web"), "results")), 3);
    json_decref(j);
    static const char *const invalid[] = {
        "/_search/brave/res/v1/web/search?q=x&count=21",  "/_search/brave/res/v1/web/search?q=x&count=0",
        "/_search/brave/res/v1/web/search?q=x&count=ten", "/_search/brave/res/v1/web/search?q=x&country=DEU",
        "/_search/brave/res/v1/web/search?count=3",       NULL};
    for (size_t i = 0; invalid[i]; i++) {
        j = get_json(keyed, invalid[i], "X-Subscription-Token: " KEY, 422);
        CHECK_STR(brave_code(j), "VALIDATION");
        json_decref(j);
    }
    /* Nothing matched: no "web". */
    j = get_json(keyed, "/_search/brave/res/v1/web/search?q=xyzzy", "X-Subscription-Token: " KEY, 200);
    CHECK(json_object_get(j, "web") == NULL);
    json_decref(j);

    /* Without --require-key any token will do, but one is needed. */
    j = get_json(open, path, "X-Subscription-Token: anything", 200);
    CHECK(json_array_size(json_object_get(json_object_get(j, "web"), "results")) >= 2);
    json_decref(j);
    j = get_json(open, path, NULL, 422);
    json_decref(j);

    /* The journal keeps the header's name, never the token. */
    j = get_json(keyed, "/_emu/requests?limit=1", NULL, 200);
    json_t *entry = json_array_get(json_object_get(j, "requests"), 0);
    CHECK_STR(json_string_value(json_object_get(entry, "protocol")), "brave");
    CHECK_STR(json_string_value(json_object_get(json_object_get(entry, "headers"), "x-subscription-token")),
              "[redacted]");
    CHECK_STR(json_string_value(json_object_get(entry, "auth_header")), "x-subscription-token");
    char *dump = json_dumps(j, 0);
    CHECK(strstr(dump, KEY) == NULL);
    free(dump);
    json_decref(j);
}

static void test_pages(struct sb_emu *emu)
{
    static const char *const names[] = {"zorblax",      "quintar",        "helix-cafe",     "vantor-lamp",
                                        "glimmer-moss", "orrin-festival", "brask-language", "tessel-bridge"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[128];
        snprintf(path, sizeof path, "/_pages/%s.html", names[i]);
        struct resp r = http(emu, "GET", path, NULL, NULL, NULL, 0);
        CHECK_INT(r.status, 200);
        CHECK(strstr(r.headers, "Content-Type: text/html; charset=utf-8") != NULL);
        CHECK(strncmp(r.body, "<!DOCTYPE html>", 15) == 0);
        CHECK(strstr(r.body, "<title>") && strstr(r.body, "<script>") && strstr(r.body, "<style>") &&
              strstr(r.body, "<nav>") && strstr(r.body, "</html>"));
        resp_free(&r);
    }
    /* Every page a search lists is served. */
    json_t *j = get_json(emu, "/_search/search?q=fictional&format=json", NULL, 200);
    size_t i, served = 0;
    json_t *res;
    json_array_foreach (json_object_get(j, "results"), i, res) {
        const char *url = json_string_value(json_object_get(res, "url"));
        const char *p = strstr(url, "/_pages/");
        if (!p || strncmp(url, "http://127.0.0.1:", 17))
            continue;
        struct resp r = http(emu, "GET", p, NULL, NULL, NULL, 0);
        CHECK_INT(r.status, 200);
        char title[256];
        snprintf(title, sizeof title, "<title>%s</title>", json_string_value(json_object_get(res, "title")));
        CHECK(strstr(r.body, title) != NULL);
        served++;
        resp_free(&r);
    }
    CHECK_INT(served, 8);
    json_decref(j);

    struct resp r = http(emu, "GET", "/_pages/helix-cafe.html", NULL, NULL, NULL, 0);
    CHECK(strstr(r.body, "Monday to Friday: 07:30&ndash;18:00") != NULL);
    resp_free(&r);
    r = http(emu, "GET", "/_pages/notes.txt", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.headers, "Content-Type: text/plain; charset=utf-8") != NULL);
    CHECK(strstr(r.body, "24 October") != NULL);
    resp_free(&r);
    r = http(emu, "GET", "/_pages/image.png", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.headers, "Content-Type: image/png") != NULL);
    CHECK_INT(r.len, 16);
    CHECK(memcmp(r.body, "\x89PNG", 4) == 0);
    resp_free(&r);
    r = http(emu, "GET", "/_pages/moved.html", NULL, "Host: web.test:81", NULL, 0);
    CHECK_INT(r.status, 302);
    CHECK(strstr(r.headers, "Location: http://web.test:81/_pages/zorblax.html") != NULL);
    resp_free(&r);
    r = http(emu, "GET", "/_pages/nope.html", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 404);
    resp_free(&r);
    r = http(emu, "GET", "/_pages/zorblax", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 404);
    resp_free(&r);
    r = http(emu, "DELETE", "/_pages/zorblax.html", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 405);
    resp_free(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    test_searxng(s.open_emu);
    test_searxng(s.keyed_emu); /* the search itself needs no key */
    test_brave(s.keyed_emu, s.open_emu);
    test_pages(s.open_emu);
    server_stop(&s);
    curl_global_cleanup();
    return sb_test_finish("emulator_search");
}
