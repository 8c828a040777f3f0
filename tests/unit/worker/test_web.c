/*
 * test_web: the web tool's pure parts (wtool_web_parse.c, wtool_html.c):
 * each search backend's answer read into sources and the model's text,
 * filters.allowed_domains (subdomains in, lookalikes out), the
 * search_context_size budgets, HTML turned into text, find_in_page, and
 * malformed input refused with -EINVAL rather than crashing.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_test.h"
#include "sb_utf8.h"
#include "wtool_web.h"

static json_t *tool_of(const char *json)
{
    json_t *t = json_loads(json, 0, NULL);
    CHECK(t != NULL);
    return t;
}

/* Parses body as kind with tool (JSON text or NULL); returns rc, fills sources/text. */
static int parse(const char *kind, const char *body, const char *tool_json, json_t **sources, char **text)
{
    json_t *tool = tool_json ? tool_of(tool_json) : NULL;
    int rc = sb_web_parse_results(kind, body, strlen(body), tool, sources, text);
    json_decref(tool);
    return rc;
}

static const char *src_url(const json_t *sources, size_t i)
{
    return json_string_value(json_object_get(json_array_get(sources, i), "url"));
}

static void test_searxng(void)
{
    const char *body = "{\"query\":\"zorblax\",\"number_of_results\":2,\"results\":["
                       "{\"url\":\"https://fruit.example.org/zorblax\",\"title\":\"Zorblax fruit\","
                       "\"content\":\"The zorblax is a  blue\\n fruit.\",\"engine\":\"emu\"},"
                       "{\"url\":\"https://b.example.net/z\",\"title\":\"More on zorblax\",\"content\":\"\"}],"
                       "\"answers\":[],\"suggestions\":[],\"infoboxes\":[],\"unresponsive_engines\":[]}";
    json_t *sources;
    char *text;
    CHECK_INT(parse("searxng", body, NULL, &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 2);
    CHECK_STR(src_url(sources, 0), "https://fruit.example.org/zorblax");
    CHECK_STR(json_string_value(json_object_get(json_array_get(sources, 0), "type")), "url");
    CHECK_STR(json_string_value(json_object_get(json_array_get(sources, 0), "title")), "Zorblax fruit");
    CHECK_STR(text, "[1] Zorblax fruit\nURL: https://fruit.example.org/zorblax\nThe zorblax is a blue fruit.\n\n"
                    "[2] More on zorblax\nURL: https://b.example.net/z\n\n"
                    "Cite the sources you use as markdown links [title](url).\n");
    json_decref(sources);
    free(text);
}

static void test_brave(void)
{
    const char *body = "{\"type\":\"search\",\"query\":{\"original\":\"quintar\"},\"web\":{\"type\":\"search\","
                       "\"results\":[{\"title\":\"The <strong>Quintar</strong> river\",\"url\":\"https://q.example/\","
                       "\"description\":\"It&#x27;s <strong>long</strong> &amp; wide &#8212; 90&nbsp;km\","
                       "\"extra_snippets\":[\"x\"]},"
                       "{\"title\":\"\",\"url\":\"http://r.example/x\",\"description\":\"untitled\"}]}}";
    json_t *sources;
    char *text;
    CHECK_INT(parse("brave", body, NULL, &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(sources, 0), "title")), "The Quintar river");
    CHECK(strstr(text, "[1] The Quintar river\nURL: https://q.example/\nIt's long & wide \xE2\x80\x94 90 km\n\n"));
    /* No title: the URL stands in. */
    CHECK(strstr(text, "[2] http://r.example/x\nURL: http://r.example/x\nuntitled\n"));
    json_decref(sources);
    free(text);

    /* Brave leaves "web" out when nothing matched: no results, not an error. */
    CHECK_INT(parse("brave", "{\"type\":\"search\",\"query\":{\"original\":\"x\"}}", NULL, &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 0);
    CHECK_STR(text, "No search results.\n");
    json_decref(sources);
    free(text);
}

static void test_tavily(void)
{
    const char *body = "{\"query\":\"helix cafe\",\"answer\":null,\"images\":[],\"results\":["
                       "{\"title\":\"Helix cafe hours\",\"url\":\"https://helix.example.com/hours\","
                       "\"content\":\"Open 7 to 19.\",\"score\":0.9,\"raw_content\":null}],"
                       "\"response_time\":0.5}";
    json_t *sources;
    char *text;
    CHECK_INT(parse("tavily", body, NULL, &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 1);
    CHECK_STR(text, "[1] Helix cafe hours\nURL: https://helix.example.com/hours\nOpen 7 to 19.\n\n"
                    "Cite the sources you use as markdown links [title](url).\n");
    json_decref(sources);
    free(text);
}

static void test_skipped_results(void)
{
    /* Not http(s), no URL, a URL that is not a string, a repeat, a non-object: all skipped. */
    const char *body = "{\"results\":[{\"url\":\"javascript:alert(1)\",\"title\":\"x\"},{\"title\":\"no url\"},"
                       "{\"url\":5},7,{\"url\":\"https://a.example/\",\"title\":\"A\"},"
                       "{\"url\":\"https://a.example/\",\"title\":\"A again\"},{\"url\":\"https://bad host/\"},"
                       "{\"url\":\"https:///nohost\"},{\"url\":\"ftp://a.example/\"}]}";
    json_t *sources;
    char *text;
    CHECK_INT(parse("searxng", body, NULL, &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 1);
    CHECK_STR(src_url(sources, 0), "https://a.example/");
    CHECK(!strstr(text, "again"));
    json_decref(sources);
    free(text);
}

static void test_allowed_domains(void)
{
    const char *body = "{\"results\":["
                       "{\"url\":\"https://example.com/a\",\"title\":\"1\"},"
                       "{\"url\":\"https://docs.example.com/b\",\"title\":\"2\"},"
                       "{\"url\":\"https://evilexample.com/c\",\"title\":\"3\"},"
                       "{\"url\":\"https://example.com.evil.net/d\",\"title\":\"4\"},"
                       "{\"url\":\"http://user@EXAMPLE.COM.:8443/e\",\"title\":\"5\"},"
                       "{\"url\":\"https://other.org/?u=https://example.com/\",\"title\":\"6\"},"
                       "{\"url\":\"https://example.com@evil.net/g\",\"title\":\"7\"}]}";
    json_t *sources;
    char *text;
    CHECK_INT(parse("searxng", body, "{\"filters\":{\"allowed_domains\":[\"example.com\"]}}", &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 3);
    CHECK_STR(src_url(sources, 0), "https://example.com/a");
    CHECK_STR(src_url(sources, 1), "https://docs.example.com/b");
    CHECK_STR(src_url(sources, 2), "http://user@EXAMPLE.COM.:8443/e");
    CHECK(!strstr(text, "evil"));
    json_decref(sources);
    free(text);

    /* Nothing allowed: no results (the model is told so), not an error. */
    CHECK_INT(parse("searxng", body, "{\"filters\":{\"allowed_domains\":[\"nowhere.test\"]}}", &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 0);
    CHECK_STR(text, "No search results.\n");
    json_decref(sources);
    free(text);

    json_t *t = tool_of("{\"filters\":{\"allowed_domains\":[\"*.Example.com\",\"https://openai.com/docs\",\"\",7]}}");
    CHECK(sb_web_url_allowed(t, "https://www.example.com/x"));
    CHECK(sb_web_url_allowed(t, "https://example.com"));
    CHECK(sb_web_url_allowed(t, "https://openai.com/"));
    CHECK(sb_web_url_allowed(t, "https://platform.openai.com/a?b#c"));
    CHECK(!sb_web_url_allowed(t, "https://notopenai.com/"));
    CHECK(!sb_web_url_allowed(t, "https://openai.com.evil/"));
    CHECK(!sb_web_url_allowed(t, "file:///etc/passwd"));
    CHECK(!sb_web_url_allowed(t, NULL));
    json_decref(t);
    t = tool_of("{\"filters\":{\"allowed_domains\":[\"127.0.0.1\",\"::1\"]}}");
    CHECK(sb_web_url_allowed(t, "http://127.0.0.1:8080/_pages/a.html"));
    CHECK(sb_web_url_allowed(t, "http://[::1]:8080/"));
    CHECK(!sb_web_url_allowed(t, "http://127.0.0.10/"));
    json_decref(t);
    /* blocked_domains (Messages, Generate Content): the domain and its
     * subdomains are dropped, lookalikes are not; both lists together. */
    CHECK_INT(parse("searxng", body, "{\"filters\":{\"blocked_domains\":[\"example.com\"]}}", &sources, &text), 0);
    CHECK_INT(json_array_size(sources), 4);
    CHECK_STR(src_url(sources, 0), "https://evilexample.com/c");
    json_decref(sources);
    free(text);
    t = tool_of("{\"filters\":{\"allowed_domains\":[\"example.com\"],\"blocked_domains\":[\"docs.example.com\"]}}");
    CHECK(sb_web_url_allowed(t, "https://example.com/x"));
    CHECK(!sb_web_url_allowed(t, "https://docs.example.com/x"));
    CHECK(!sb_web_url_allowed(t, "https://a.docs.example.com/x"));
    CHECK(!sb_web_url_allowed(t, "https://other.org/"));
    json_decref(t);
    /* No filter, or an empty list: everything. */
    CHECK(sb_web_url_allowed(NULL, "https://any.example/"));
    t = tool_of("{\"filters\":{\"allowed_domains\":[]}}");
    CHECK(sb_web_url_allowed(t, "https://any.example/"));
    json_decref(t);
}

/* An answer of n results, each with a snippet of len bytes made of unit (repeated). */
static char *many_results(size_t n, const char *unit, size_t len)
{
    sb_buf_t snip = {0};
    while (snip.len < len)
        sb_buf_add(&snip, unit, strlen(unit));
    json_t *list = json_array();
    for (size_t i = 0; i < n; i++) {
        char url[64];
        snprintf(url, sizeof url, "https://r%zu.example/", i);
        json_array_append_new(list, json_pack("{s:s, s:s, s:s}", "url", url, "title", "T", "content", snip.p));
    }
    json_t *root = json_pack("{s:o}", "results", list);
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    sb_buf_free(&snip);
    return s;
}

/* The longest snippet line in text (lines that are not "[n] ...", "URL: ..." or the cite line). */
static size_t longest_snippet(const char *text)
{
    size_t best = 0;
    for (const char *p = text; *p;) {
        size_t n = strcspn(p, "\n");
        if (n && *p != '[' && strncmp(p, "URL: ", 5) && strncmp(p, "Cite ", 5) && n > best)
            best = n;
        p += n + (p[n] == '\n');
    }
    return best;
}

static void test_context_sizes(void)
{
    static const struct {
        const char *tool;
        size_t results, snippet;
    } cases[] = {{"{\"search_context_size\":\"low\"}", 3, 300},
                 {"{\"search_context_size\":\"medium\"}", 5, 600},
                 {"{}", 5, 600},
                 {"{\"search_context_size\":\"high\"}", 8, 1200}};
    /* "é" is two bytes: a cut at an even or odd byte count must not split it. */
    const char *units[] = {"word ", "\xC3\xA9", "a\xC3\xA9", "\xE2\x82\xAC"};
    for (size_t u = 0; u < sizeof units / sizeof units[0]; u++) {
        char *body = many_results(10, units[u], 5000);
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            json_t *sources;
            char *text;
            CHECK_INT(parse("searxng", body, cases[i].tool, &sources, &text), 0);
            CHECK_INT(json_array_size(sources), cases[i].results);
            size_t longest = longest_snippet(text);
            CHECK(longest <= cases[i].snippet + 3); /* + "..." */
            CHECK(longest + 4 >= cases[i].snippet); /* at most a character (and the space) short */
            CHECK(strstr(text, "...\n") != NULL);
            CHECK_INT(sb_utf8_fix(text), 0); /* never a split character */
            json_decref(sources);
            free(text);
        }
        free(body);
    }
}

static void test_malformed(void)
{
    static const struct {
        const char *kind, *body;
    } bad[] = {
        {"searxng", ""},
        {"searxng", "not json"},
        {"searxng", "[1,2]"},
        {"searxng", "{}"},
        {"searxng", "{\"results\":{}}"},
        {"searxng", "{\"results\":[]"},
        {"tavily", "{\"results\":\"x\"}"},
        {"tavily", "null"},
        {"brave", "{\"web\":[]}"},
        {"brave", "{\"web\":{\"results\":{}}}"},
        {"brave", "\"web\""},
        {"bing", "{\"results\":[]}"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *sources = json_true(); /* a static singleton: no leak when overwritten */
        char *text = (char *)"x";
        CHECK_INT(parse(bad[i].kind, bad[i].body, NULL, &sources, &text), -EINVAL);
        CHECK(sources == NULL && text == NULL);
    }
    json_t *sources;
    char *text;
    CHECK_INT(sb_web_parse_results(NULL, "{}", 2, NULL, &sources, &text), -EINVAL);
    CHECK_INT(sb_web_parse_results("searxng", NULL, 0, NULL, &sources, &text), -EINVAL);
    /* A NUL inside the body is not JSON. */
    CHECK_INT(sb_web_parse_results("searxng", "{\"results\":[]}\0x", 16, NULL, &sources, &text), -EINVAL);
    /* An empty list is fine. */
    CHECK_INT(parse("tavily", "{\"results\":[]}", NULL, &sources, &text), 0);
    CHECK_STR(text, "No search results.\n");
    json_decref(sources);
    free(text);
}

static const char *page_html =
    "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title> The  Zorblax\n fruit </title>"
    "<style>body { color: red; }</style><script>var secret = 'script text';</script></head>"
    "<body><nav><a href=\"/\">Home</a> | <a href=\"/fruit\">Fruit</a></nav>"
    "<h1>Zorblax&nbsp;fruit</h1>\n<p>The zorblax is <b>blue</b>   and\n  sweet &amp; sour &lt;3 &eacute;t&eacute; "
    "&#8212; &#x1F34E;.</p><noscript>enable js</noscript><template><p>hidden</p></template>"
    "<ul><li>one</li><li>two <i>items</i></li></ul><div>Line<br>break</div>"
    "<pre>  code\n    indented</pre><table><tr><td>a</td><td>b</td></tr></table>"
    "<svg><text>svgtext</text></svg><!-- a comment --><p>End.</p>"
    "<script type=\"text/javascript\">document.write('late');</script></body></html>";

static void test_html_text(void)
{
    char *text, *title;
    CHECK_INT(sb_web_html_text(page_html, strlen(page_html), &text, &title), 0);
    CHECK_STR(title, "The Zorblax fruit");
    CHECK_STR(text, "Home | Fruit\n"
                    "Zorblax fruit\n"
                    "The zorblax is blue and sweet & sour <3 \xC3\xA9t\xC3\xA9 \xE2\x80\x94 \xF0\x9F\x8D\x8E.\n"
                    "- one\n"
                    "- two items\n"
                    "Line\n"
                    "break\n"
                    "  code\n"
                    "    indented\n"
                    "a b\n"
                    "End.");
    CHECK(!strstr(text, "script") && !strstr(text, "color") && !strstr(text, "hidden") && !strstr(text, "svgtext") &&
          !strstr(text, "comment") && !strstr(text, "enable js") && !strstr(text, "late"));
    free(text);
    free(title);

    /* No title; a fragment; unclosed tags: recovered. */
    const char *frag = "<p>Unclosed <b>bold<p>next &unknown; &amp";
    CHECK_INT(sb_web_html_text(frag, strlen(frag), &text, &title), 0);
    CHECK(title == NULL);
    CHECK(strstr(text, "Unclosed bold\nnext") == text);
    free(text);

    /* Latin-1 named by the Content-Type's charset. */
    const char latin[] = "<p>caf\xE9</p>";
    CHECK_INT(sb_web_html_text_enc(latin, strlen(latin), "ISO-8859-1", &text, &title), 0);
    CHECK_STR(text, "caf\xC3\xA9");
    free(text);
    /* An unknown charset is ignored (the page is read as it says, here UTF-8). */
    const char utf[] = "<p>caf\xC3\xA9</p>";
    CHECK_INT(sb_web_html_text_enc(utf, strlen(utf), "x-no-such-charset", &text, &title), 0);
    CHECK_STR(text, "caf\xC3\xA9");
    free(text);
    /* Bytes that are not UTF-8 never come out as such. */
    const char junk[] = "<p>\xFF\xFE\x80 ok</p>";
    CHECK_INT(sb_web_html_text(junk, strlen(junk), &text, &title), 0);
    CHECK_INT(sb_utf8_fix(text), 0);
    CHECK(strstr(text, "ok") != NULL);
    free(text);

    CHECK_INT(sb_web_html_text(NULL, 0, &text, &title), -EINVAL);
    CHECK_INT(sb_web_html_text("", 0, &text, &title), -EINVAL);
    CHECK(text == NULL && title == NULL);
}

static void test_html_limits(void)
{
    /* A page of more text than the cap: cut at it, on a character boundary. */
    sb_buf_t b = {0};
    sb_buf_add(&b, "<p>", 3);
    while (b.len < SB_WEB_HTML_TEXT_MAX + 100000)
        sb_buf_add(&b, "\xE2\x82\xAC word ", 9);
    char *text, *title;
    CHECK_INT(sb_web_html_text(b.p, b.len, &text, &title), 0);
    CHECK(strlen(text) <= SB_WEB_HTML_TEXT_MAX && strlen(text) > SB_WEB_HTML_TEXT_MAX - 10);
    CHECK_INT(sb_utf8_fix(text), 0);
    free(text);
    sb_buf_free(&b);

    /* Nested deeper than any stack would take if walked recursively. */
    for (int i = 0; i < 100000; i++)
        sb_buf_add(&b, "<div>", 5);
    sb_buf_add(&b, "deep", 4);
    CHECK_INT(sb_web_html_text(b.p, b.len, &text, &title), 0);
    free(text);
    free(title);
    sb_buf_free(&b);
}

static void test_find_in_text(void)
{
    const char *t = "Intro line\n"
                    "The Quintar river is long.\n"
                    "Its delta floods.\n"
                    "Unrelated\n"
                    "More unrelated\n"
                    "Fish of the QUINTAR: carp.\n"
                    "Last";
    char *out;
    CHECK_INT(sb_web_find_in_text(t, "quintar", 4096, &out), 0);
    CHECK_STR(out, "2 lines matching \"quintar\":\n\n"
                   "Intro line\n"
                   "The Quintar river is long.\n"
                   "Its delta floods.\n"
                   "...\n"
                   "More unrelated\n"
                   "Fish of the QUINTAR: carp.\n"
                   "Last\n");
    free(out);
    CHECK_INT(sb_web_find_in_text(t, "zorblax", 4096, &out), -ENOENT);
    CHECK(out == NULL);
    CHECK_INT(sb_web_find_in_text(t, "", 4096, &out), -EINVAL);
    CHECK_INT(sb_web_find_in_text(NULL, "x", 4096, &out), -EINVAL);

    /* Capped: many matches, a small budget. */
    sb_buf_t b = {0};
    for (int i = 0; i < 500; i++)
        sb_buf_add(&b, "match here\nfiller\n", 18);
    CHECK_INT(sb_web_find_in_text(b.p, "MATCH", 300, &out), 0);
    CHECK(strlen(out) <= 300);
    CHECK(strstr(out, "[more matches not shown]\n") != NULL);
    free(out);
    sb_buf_free(&b);

    /* A long line is cut, not split inside a character. */
    for (int i = 0; i < 1000; i++)
        sb_buf_add(&b, "\xC3\xA9", 2);
    sb_buf_add(&b, " needle", 7);
    CHECK_INT(sb_web_find_in_text(b.p, "needle", 100000, &out), 0);
    CHECK(strstr(out, "...\n") != NULL);
    CHECK(!strstr(out, "needle\n"));
    CHECK_INT(sb_utf8_fix(out), 0);
    free(out);
    sb_buf_free(&b);
}

static void test_outcome(void)
{
    CHECK_STR(sb_web_outcome(NULL), "ok");
    CHECK_STR(sb_web_outcome("search backend timed out"), "timeout");
    CHECK_STR(sb_web_outcome("page timed out"), "timeout");
    CHECK_STR(sb_web_outcome("blocked: the page's address is not allowed"), "blocked");
    CHECK_STR(sb_web_outcome("page returned HTTP 404"), "error");
}

int main(void)
{
    test_searxng();
    test_brave();
    test_tavily();
    test_skipped_results();
    test_allowed_domains();
    test_context_sizes();
    test_malformed();
    test_html_text();
    test_html_limits();
    test_find_in_text();
    test_outcome();
    return sb_test_finish("test_web");
}
