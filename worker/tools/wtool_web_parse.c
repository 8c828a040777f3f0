/*
 * wtool_web_parse: a search backend's JSON answer turned into what the model
 * reads (numbered results: title, URL, snippet) and the sources the
 * web_search_call item lists. Pure functions of their input: unit-tested
 * (tests/unit/worker/test_web.c) and fuzzed (tests/fuzz/fuzz_web_results.c),
 * since the answer comes from a network peer.
 *
 * The three shapes read:
 *   searxng  {"results":[{"url","title","content"}...]}       (results required)
 *   brave    {"web":{"results":[{"url","title","description"}]}} (no "web": no results)
 *   tavily   {"results":[{"url","title","content"}...]}       (results required)
 * A result without an http(s) URL is skipped, as is one off the tool's
 * filters.allowed_domains (a domain and its subdomains; the Messages and
 * Generate Content styles' blocked_domains drop theirs) and a repeated URL.
 * Snippets lose HTML tags (Brave marks matches with <strong>) and the common
 * entities, whitespace is collapsed, and each is cut on a UTF-8 boundary at
 * the search_context_size's length.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "wtool_web.h"
#include "wtool_web_internal.h"

/* Results of an answer looked at, whatever the filter keeps (a bound on work). */
#define SCAN_MAX 100
#define TITLE_MAX 300
#define URL_MAX 2048
#define HOST_MAX 256

#define CITE_LINE "Cite the sources you use as markdown links [title](url).\n"
#define NO_RESULTS "No search results.\n"

void sb_web_sizes_of(const json_t *tool, struct sb_web_sizes *out)
{
    const char *size = json_string_value(json_object_get(tool, "search_context_size"));
    if (size && !strcmp(size, "low"))
        *out = (struct sb_web_sizes){3, 300, 8 * 1024};
    else if (size && !strcmp(size, "high"))
        *out = (struct sb_web_sizes){8, 1200, 32 * 1024};
    else
        *out = (struct sb_web_sizes){5, 600, 16 * 1024};
}

const char *sb_web_outcome(const char *error)
{
    if (!error)
        return "ok";
    if (!strcmp(error, SB_WEB_ERR_TIMEOUT_SEARCH) || !strcmp(error, SB_WEB_ERR_TIMEOUT_PAGE))
        return "timeout";
    if (!strcmp(error, SB_WEB_ERR_BLOCKED))
        return "blocked";
    return "error";
}

size_t sb_web_utf8_prefix(const char *s, size_t len, size_t max)
{
    if (len <= max)
        return len;
    size_t n = max;
    /* Back up over continuation bytes to the start of the sequence the limit falls in. */
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
        n--;
    return n;
}

static char lower(char c)
{
    return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool prefix_ci(const char *s, const char *p)
{
    for (; *p; s++, p++)
        if (lower(*s) != *p)
            return false;
    return true;
}

int sb_web_url_host(const char *url, char *host, size_t host_len)
{
    const char *p;
    if (prefix_ci(url, "https://"))
        p = url + 8;
    else if (prefix_ci(url, "http://"))
        p = url + 7;
    else
        return -EINVAL;
    size_t auth_len = strcspn(p, "/?#");
    const char *at = NULL;
    for (size_t i = 0; i < auth_len; i++)
        if (p[i] == '@')
            at = p + i;
    const char *end = p + auth_len;
    /* The host starts after the last '@' of the authority (at most its end). */
    size_t host_off = at ? (size_t)(at - p) + 1 : 0;
    const char *h = p + host_off;
    size_t rest = auth_len - host_off;
    const char *hend;
    if (rest > 0 && *h == '[') {
        const char *close = memchr(h, ']', rest);
        if (!close)
            return -EINVAL;
        h++;
        hend = close;
    } else {
        hend = memchr(h, ':', rest);
        if (!hend)
            hend = end;
    }
    if (hend > h && hend[-1] == '.')
        hend--;
    size_t n = (size_t)(hend - h);
    if (n == 0 || n >= host_len)
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)h[i];
        if (c <= ' ' || c == 0x7f)
            return -EINVAL;
        host[i] = lower((char)c);
    }
    host[n] = '\0';
    return 0;
}

/* An allowed_domains entry as a bare lower-case domain (a scheme, path, port,
 * leading "*." or "." and trailing dot dropped): n bytes into d. 0 if empty. */
static size_t domain_of(const char *entry, char *d, size_t dlen)
{
    const char *p = entry;
    if (prefix_ci(p, "https://"))
        p += 8;
    else if (prefix_ci(p, "http://"))
        p += 7;
    if (!strncmp(p, "*.", 2))
        p += 2;
    while (*p == '.')
        p++;
    size_t n = strcspn(p, "/?#:");
    const char *colon = strchr(p, ':');
    if (*p == '[') {
        /* An IPv6 literal as a URL writes it ("[::1]:8080"). */
        p++;
        n = strcspn(p, "]");
    } else if (colon && strchr(colon + 1, ':')) {
        n = strcspn(p, "/?#"); /* a bare IPv6 address ("::1") */
    }
    while (n > 0 && p[n - 1] == '.')
        n--;
    if (n >= dlen)
        return 0;
    for (size_t i = 0; i < n; i++)
        d[i] = lower(p[i]);
    d[n] = '\0';
    return n;
}

/* Whether host is one of list's domains or a subdomain of one. */
static bool sb_web_host_in(const json_t *list, const char *host)
{
    size_t hlen = strlen(host);
    size_t i;
    const json_t *v;
    json_array_foreach (list, i, v) {
        const char *entry = json_string_value(v);
        char d[HOST_MAX];
        size_t dlen = entry ? domain_of(entry, d, sizeof d) : 0;
        if (dlen == 0 || dlen > hlen)
            continue;
        /* The domain itself, or a subdomain: the byte before the match must be a dot. */
        if (!strcmp(host + hlen - dlen, d) && (hlen == dlen || host[hlen - dlen - 1] == '.'))
            return true;
    }
    return false;
}

bool sb_web_url_allowed(const json_t *tool, const char *url)
{
    const json_t *filters = json_object_get(tool, "filters");
    const json_t *allowed = json_object_get(filters, "allowed_domains");
    const json_t *blocked = json_object_get(filters, "blocked_domains");
    bool any_allowed = json_is_array(allowed) && json_array_size(allowed) > 0;
    bool any_blocked = json_is_array(blocked) && json_array_size(blocked) > 0;
    if (!any_allowed && !any_blocked)
        return true;
    char host[HOST_MAX];
    if (!url || sb_web_url_host(url, host, sizeof host) < 0)
        return false;
    if (any_blocked && sb_web_host_in(blocked, host))
        return false;
    return !any_allowed || sb_web_host_in(allowed, host);
}

/* ---- text cleanup --------------------------------------------------------------- */

static void put_utf8(sb_buf_t *b, uint32_t cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | (cp >> 6));
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | (cp >> 12));
        u[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | (cp >> 18));
        u[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
        u[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    sb_buf_add(b, u, n);
}

/* An entity at s ("&...;"): appends what it stands for and returns its length,
 * or 0 when it is not one this knows (then the '&' is kept as text). */
static size_t entity(const char *s, sb_buf_t *b)
{
    static const struct {
        const char *name;
        const char *text;
    } named[] = {{"&amp;", "&"},
                 {"&lt;", "<"},
                 {"&gt;", ">"},
                 {"&quot;", "\""},
                 {"&apos;", "'"},
                 {"&#39;", "'"},
                 {"&nbsp;", " "},
                 {"&hellip;", "\xE2\x80\xA6"},
                 {"&mdash;", "\xE2\x80\x94"},
                 {"&ndash;", "\xE2\x80\x93"}};
    for (size_t i = 0; i < sizeof named / sizeof named[0]; i++) {
        size_t n = strlen(named[i].name);
        if (!strncmp(s, named[i].name, n)) {
            sb_buf_add(b, named[i].text, strlen(named[i].text));
            return n;
        }
    }
    if (s[1] != '#')
        return 0;
    bool hex = s[2] == 'x' || s[2] == 'X';
    const char *p = s + (hex ? 3 : 2);
    uint32_t cp = 0;
    size_t digits = 0;
    for (; digits < 8; p++, digits++) {
        int v;
        if (*p >= '0' && *p <= '9')
            v = *p - '0';
        else if (hex && lower(*p) >= 'a' && lower(*p) <= 'f')
            v = lower(*p) - 'a' + 10;
        else
            break;
        cp = cp * (hex ? 16 : 10) + (uint32_t)v;
    }
    if (digits == 0 || *p != ';' || cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
        return 0;
    put_utf8(b, cp < 0x20 ? ' ' : cp);
    return (size_t)(p + 1 - s);
}

/* s without HTML tags and entities, whitespace collapsed and trimmed, cut at
 * max bytes on a UTF-8 boundary ("..." marks a cut). Owned. */
static char *clean_text(const char *s, size_t max)
{
    sb_buf_t b = {0};
    sb_buf_add(&b, "", 0);
    bool space = false;
    while (*s) {
        unsigned char c = (unsigned char)*s;
        if (c == '<' && (s[1] == '/' || (lower(s[1]) >= 'a' && lower(s[1]) <= 'z'))) {
            const char *close = strchr(s, '>');
            if (close) {
                s = close + 1;
                continue;
            }
        }
        if (c <= ' ' || c == 0x7f) {
            space = b.len > 0;
            s++;
            continue;
        }
        if (space) {
            sb_buf_add(&b, " ", 1);
            space = false;
        }
        size_t n = c == '&' ? entity(s, &b) : 0;
        if (n) {
            s += n;
            continue;
        }
        sb_buf_add(&b, s, 1);
        s++;
    }
    /* An entity may have left a trailing space (&nbsp;). */
    while (b.len > 0 && b.p[b.len - 1] == ' ')
        b.p[--b.len] = '\0';
    if (b.len > max) {
        size_t n = sb_web_utf8_prefix(b.p, b.len, max);
        b.len = n;
        b.p[n] = '\0';
        sb_buf_add(&b, "...", 3);
    }
    return b.p;
}

/* ---- answers ---------------------------------------------------------------------- */

static bool url_ok(const char *url)
{
    char host[HOST_MAX];
    if (!url || strlen(url) > URL_MAX || sb_web_url_host(url, host, sizeof host) < 0)
        return false;
    for (const char *p = url; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return false;
    return true;
}

static bool seen(const json_t *sources, const char *url)
{
    size_t i;
    const json_t *s;
    json_array_foreach (sources, i, s)
        if (!strcmp(json_string_value(json_object_get(s, "url")), url))
            return true;
    return false;
}

/* The results array of an answer, in the kind's shape: *list NULL for "none". 0 or -EINVAL. */
static int results_of(const char *kind, const json_t *root, const json_t **list, const char **snippet_key)
{
    *list = NULL;
    if (!json_is_object(root))
        return -EINVAL;
    if (!strcmp(kind, "searxng") || !strcmp(kind, "tavily")) {
        *snippet_key = "content";
        *list = json_object_get(root, "results");
        return json_is_array(*list) ? 0 : -EINVAL;
    }
    if (!strcmp(kind, "brave")) {
        *snippet_key = "description";
        const json_t *web = json_object_get(root, "web");
        if (!web || json_is_null(web))
            return 0; /* Brave leaves "web" out when nothing matched */
        *list = json_object_get(web, "results");
        if (!json_is_object(web) || (*list && !json_is_array(*list)))
            return -EINVAL;
        return 0;
    }
    return -EINVAL;
}

int sb_web_parse_results(const char *kind, const char *body, size_t len, const json_t *tool, json_t **sources,
                         char **text)
{
    *sources = NULL;
    *text = NULL;
    if (!kind || !body)
        return -EINVAL;
    json_t *root = json_loadb(body, len, 0, NULL);
    const json_t *list;
    const char *snippet_key = NULL;
    if (results_of(kind, root, &list, &snippet_key) < 0) {
        json_decref(root);
        return -EINVAL;
    }
    struct sb_web_sizes sz;
    sb_web_sizes_of(tool, &sz);
    json_t *out = json_array();
    sb_buf_t b = {0};
    sb_buf_add(&b, "", 0);
    size_t i;
    const json_t *r;
    json_array_foreach (list, i, r) {
        if (i >= SCAN_MAX || json_array_size(out) >= sz.results)
            break;
        const char *url = json_string_value(json_object_get(r, "url"));
        if (!url_ok(url) || !sb_web_url_allowed(tool, url) || seen(out, url))
            continue;
        const char *title_raw = json_string_value(json_object_get(r, "title"));
        const char *snippet_raw = json_string_value(json_object_get(r, snippet_key));
        char *title = clean_text(title_raw ? title_raw : "", TITLE_MAX);
        char *snippet = clean_text(snippet_raw ? snippet_raw : "", sz.snippet_max);
        const char *shown = *title ? title : url;
        json_t *src = json_pack("{s:s, s:s, s:s}", "type", "url", "url", url, "title", shown);
        if (!src || json_array_append_new(out, src) < 0) {
            free(title);
            free(snippet);
            continue;
        }
        char *entry =
            sb_xasprintf("[%zu] %s\nURL: %s\n%s%s\n", json_array_size(out), shown, url, snippet, *snippet ? "\n" : "");
        sb_buf_add(&b, entry, strlen(entry));
        free(entry);
        free(title);
        free(snippet);
    }
    if (json_array_size(out) == 0)
        sb_buf_add(&b, NO_RESULTS, strlen(NO_RESULTS));
    else
        sb_buf_add(&b, CITE_LINE, strlen(CITE_LINE));
    json_decref(root);
    *sources = out;
    *text = b.p;
    return 0;
}
