/*
 * fuzz_cite: libFuzzer harness for sb_tool_citations (worker/tools/
 * wtool_cite.c), which reads the text a model wrote (untrusted: a page the
 * model read may have told it what to write) for the web search sources
 * it cites.
 *
 * Input: "SOURCES\0TEXT", SOURCES one URL a line (a tab, then a title, may
 * follow); without a NUL byte, the whole input is the text and the sources
 * are a fixed set. The text is cited as it came, then made valid UTF-8
 * (as a JSON string is) and cited again; of that second answer is
 * checked, besides "no crash, no leak, no UB": the result
 * is an array of url_citation annotations in text order that do not
 * overlap, their indexes are code points within the text, each carries a
 * source's own url and a title, and each span is what the model wrote for
 * that source: a markdown link "[label](url)" or the bare URL, its url the
 * source's (a trailing slash aside). The same call twice gives the same
 * answer.
 */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_utf8.h"
#include "wtool.h"

static const char *fuzz_cite_default[] = {"https://a.test/z", "http://b.test/b/", "https://w.test/wiki/Foo_(bar)",
                                          "https://c.test/q?x=1&y=%C3%A9"};

/* Byte offset of code point cp of text[0..n) (n when past the end). */
static size_t fuzz_cite_byte(const char *text, size_t n, long long cp)
{
    long long c = -1;
    for (size_t i = 0; i < n; i++) {
        if (((unsigned char)text[i] & 0xC0) != 0x80)
            c++;
        if (c == cp && ((unsigned char)text[i] & 0xC0) != 0x80)
            return i;
    }
    return n;
}

static long long fuzz_cite_cps(const char *text, size_t n)
{
    long long c = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80)
            c++;
    return c;
}

/* url[0..len) names the source URL u, a trailing slash on either aside. */
static bool fuzz_cite_same(const char *url, size_t len, const char *u)
{
    size_t ul = strlen(u);
    if (len > 0 && url[len - 1] == '/')
        len--;
    if (ul > 0 && u[ul - 1] == '/')
        ul--;
    return len == ul && !memcmp(url, u, len);
}

static bool fuzz_cite_is_source(const json_t *sources, const json_t *url)
{
    size_t i;
    const json_t *s;
    json_array_foreach (sources, i, s)
        if (json_equal(json_object_get(s, "url"), url))
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    json_t *sources = json_array();
    const char *text_at = (const char *)data;
    size_t text_len = size;
    if (nul) {
        /* The sources' lines; one that is not valid UTF-8 (jansson refuses
         * it, as it never reaches the loop) is left out. */
        const char *p = (const char *)data, *end = (const char *)nul;
        while (p < end) {
            const char *eol = memchr(p, '\n', (size_t)(end - p));
            if (!eol)
                eol = end;
            const char *tab = memchr(p, '\t', (size_t)(eol - p));
            json_t *url = json_stringn(p, (size_t)((tab ? tab : eol) - p));
            json_t *title = tab ? json_stringn(tab + 1, (size_t)(eol - tab - 1)) : NULL;
            if (url)
                json_array_append_new(sources,
                                      title ? json_pack("{s:s, s:o, s:o}", "type", "url", "url", url, "title", title)
                                            : json_pack("{s:s, s:o}", "type", "url", "url", url));
            else
                json_decref(title);
            p = eol + 1;
        }
        text_at = (const char *)nul + 1;
        text_len = size - (size_t)(nul + 1 - data);
    } else {
        for (size_t i = 0; i < sizeof fuzz_cite_default / sizeof *fuzz_cite_default; i++)
            json_array_append_new(
                sources, json_pack("{s:s, s:s, s:s}", "type", "url", "url", fuzz_cite_default[i], "title", "T"));
    }
    /* The text as the loop has it: NUL-terminated (a NUL in it ends it),
     * and valid UTF-8 (a JSON string). Raw bytes first: no crash is all. */
    char *text = sb_xmalloc(text_len + 1);
    memcpy(text, text_at, text_len);
    text[text_len] = '\0';
    json_decref(sb_tool_citations(text, sources));
    sb_utf8_fix(text);
    size_t n = strlen(text);
    long long total = fuzz_cite_cps(text, n);

    json_t *cites = sb_tool_citations(text, sources);
    FUZZ_REQUIRE(json_is_array(cites));
    long long prev_end = 0;
    size_t i;
    const json_t *c;
    json_array_foreach (cites, i, c) {
        FUZZ_REQUIRE(json_object_size(c) == 5);
        const char *type = json_string_value(json_object_get(c, "type"));
        FUZZ_REQUIRE(type && !strcmp(type, "url_citation"));
        const json_t *url = json_object_get(c, "url");
        FUZZ_REQUIRE(json_is_string(url) && fuzz_cite_is_source(sources, url));
        FUZZ_REQUIRE(json_is_string(json_object_get(c, "title")));
        json_t *si = json_object_get(c, "start_index"), *ei = json_object_get(c, "end_index");
        FUZZ_REQUIRE(json_is_integer(si) && json_is_integer(ei));
        long long a = json_integer_value(si), b = json_integer_value(ei);
        FUZZ_REQUIRE(prev_end <= a && a < b && b <= total);
        prev_end = b;
        /* the span, in bytes: a link to the source or the source's bare URL */
        size_t ba = fuzz_cite_byte(text, n, a), bb = fuzz_cite_byte(text, n, b);
        FUZZ_REQUIRE(ba < bb && bb <= n);
        const char *span = text + ba;
        size_t len = bb - ba;
        if (span[0] == '[') {
            const char *close = memchr(span, ']', len);
            FUZZ_REQUIRE(close && close + 1 < span + len && close[1] == '(' && span[len - 1] == ')');
            FUZZ_REQUIRE(!memchr(span, '\n', (size_t)(close - span)));
            const char *u = close + 2;
            FUZZ_REQUIRE(fuzz_cite_same(u, (size_t)(span + len - 1 - u), json_string_value(url)));
        } else {
            FUZZ_REQUIRE(!strncmp(span, "http://", 7) || !strncmp(span, "https://", 8));
            FUZZ_REQUIRE(fuzz_cite_same(span, len, json_string_value(url)));
        }
    }
    json_t *again = sb_tool_citations(text, sources);
    FUZZ_REQUIRE(json_equal(cites, again));
    json_decref(again);
    json_decref(cites);
    json_decref(sources);
    free(text);
    return 0;
}
