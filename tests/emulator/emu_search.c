/*
 * emu_search: the emulator's search backends and pages (emu_search.h).
 *
 * A query matches a corpus entry (emu_search_pages.c) by its words: each
 * word of the query (ASCII letters and digits, lower-cased; bytes above
 * 0x7f count as letters; common English words and one-letter words
 * ignored) scores 2 when it is a word of the entry's title and 1 when it
 * is one of its snippet or keywords; entries scoring more than 0 are the
 * results, best first (ties in corpus order). A "site:DOMAIN" term keeps
 * only results on DOMAIN or a subdomain of it, as the engines behind a
 * SearXNG do. Page URLs are absolute, on the host the request named (its
 * Host header), so a client reaches them as it reached the search.
 */
#include "emu_search.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_buf.h"

#define MAX_WORDS 32
#define WORD_MAX 64
#define HOST_MAX 256
#define BRAVE_COUNT_MAX 20

static const char *const stop_words[] = {"the",   "and", "for",   "what", "are",  "is",   "of", "an",
                                         "in",    "on",  "to",    "how",  "when", "does", "do", "with",
                                         "about", "who", "which", "was",  "at",   "by",   "it", "its"};

/* ---- words ------------------------------------------------------------------------------ */

static bool word_byte(unsigned char c)
{
    return isalnum(c) || c >= 0x80;
}

/* The next word of *p (lower-cased into w), advancing *p; false at the end. */
static bool next_word(const char **p, char w[WORD_MAX])
{
    const unsigned char *s = (const unsigned char *)*p;
    while (*s && !word_byte(*s))
        s++;
    if (!*s)
        return false;
    size_t n = 0;
    while (*s && word_byte(*s)) {
        if (n < WORD_MAX - 1)
            w[n++] = (char)tolower(*s);
        s++;
    }
    w[n] = '\0';
    *p = (const char *)s;
    return true;
}

static bool has_word(const char *text, const char *word)
{
    char w[WORD_MAX];
    const char *p = text;
    while (text && next_word(&p, w))
        if (!strcmp(w, word))
            return true;
    return false;
}

static bool stop_word(const char *w)
{
    if (strlen(w) < 2)
        return true;
    for (size_t i = 0; i < sizeof stop_words / sizeof stop_words[0]; i++)
        if (!strcmp(w, stop_words[i]))
            return true;
    return false;
}

struct query {
    char words[MAX_WORDS][WORD_MAX];
    size_t nwords;
    char site[HOST_MAX]; /* "" when the query has no site: term */
};

static void query_parse(const char *q, struct query *out)
{
    memset(out, 0, sizeof *out);
    const char *p = q;
    while (*p) {
        p += strspn(p, " \t\r\n");
        size_t n = strcspn(p, " \t\r\n");
        if (n > 5 && !strncasecmp(p, "site:", 5)) {
            size_t m = n - 5 < HOST_MAX - 1 ? n - 5 : HOST_MAX - 1;
            for (size_t i = 0; i < m; i++)
                out->site[i] = (char)tolower((unsigned char)p[5 + i]);
            out->site[m] = '\0';
        } else if (n) {
            char *term = sb_xstrndup(p, n);
            const char *t = term;
            char w[WORD_MAX];
            while (next_word(&t, w)) {
                bool dup = false;
                for (size_t i = 0; i < out->nwords; i++)
                    dup = dup || !strcmp(out->words[i], w);
                if (!dup && !stop_word(w) && out->nwords < MAX_WORDS)
                    memcpy(out->words[out->nwords++], w, WORD_MAX);
            }
            free(term);
        }
        p += n;
    }
}

/* ---- results ---------------------------------------------------------------------------- */

/* The host the client reached us by (its Host header when it is a plain host[:port]). */
static void request_host(const struct sb_emu_call *call, char host[HOST_MAX])
{
    const char *h = sb_emu_call_header(call, "Host");
    bool ok = h && *h && strlen(h) < HOST_MAX;
    for (const char *p = h; ok && *p; p++)
        ok = isalnum((unsigned char)*p) || strchr(".-:[]", *p);
    if (ok) {
        snprintf(host, HOST_MAX, "%s", h);
        return;
    }
    /* No usable Host: the address this connection reached (read from the socket, so this file needs
     * nothing of the server's). */
    struct evhttp_connection *conn = evhttp_request_get_connection(call->req);
    struct bufferevent *bev = conn ? evhttp_connection_get_bufferevent(conn) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    struct sockaddr_in sin;
    socklen_t len = sizeof sin;
    int port = 0;
    if (fd >= 0 && getsockname(fd, (struct sockaddr *)&sin, &len) == 0 && sin.sin_family == AF_INET)
        port = ntohs(sin.sin_port);
    snprintf(host, HOST_MAX, "127.0.0.1:%d", port);
}

static char *doc_url(const struct sb_emu_doc *d, const char *host)
{
    return d->url ? sb_xstrdup(d->url) : sb_xasprintf("http://%s/_pages/%s.html", host, d->name);
}

/* The host of an http(s) URL, lower-cased, without port (brackets kept off IPv6). */
static void url_host(const char *url, char out[HOST_MAX])
{
    const char *p = strstr(url, "://");
    p = p ? p + 3 : url;
    size_t n;
    if (*p == '[') {
        p++;
        n = strcspn(p, "]");
    } else {
        n = strcspn(p, ":/?#");
    }
    if (n >= HOST_MAX)
        n = HOST_MAX - 1;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)tolower((unsigned char)p[i]);
    out[n] = '\0';
}

static bool on_site(const char *url, const char *site)
{
    if (!*site)
        return true;
    char host[HOST_MAX];
    url_host(url, host);
    size_t hl = strlen(host), sl = strlen(site);
    return hl >= sl && !strcmp(host + hl - sl, site) && (hl == sl || host[hl - sl - 1] == '.');
}

struct hit {
    size_t doc;
    int score;
    char *url; /* owned */
};

/* The corpus entries q matches, best first; *n of them (owned array, hits_free). */
static struct hit *search(const struct query *q, const char *host, size_t *n)
{
    struct hit *hits = sb_xcalloc(sb_emu_ndocs + 1, sizeof *hits);
    *n = 0;
    for (size_t i = 0; i < sb_emu_ndocs; i++) {
        const struct sb_emu_doc *d = &sb_emu_docs[i];
        int score = 0;
        for (size_t k = 0; k < q->nwords; k++) {
            if (has_word(d->title, q->words[k]))
                score += 2;
            else if (has_word(d->snippet, q->words[k]) || has_word(d->keywords, q->words[k]))
                score += 1;
        }
        char *url = doc_url(d, host);
        if (score == 0 || !on_site(url, q->site)) {
            free(url);
            continue;
        }
        /* Insertion keeps corpus order among equal scores. */
        size_t at = *n;
        while (at > 0 && hits[at - 1].score < score) {
            hits[at] = hits[at - 1];
            at--;
        }
        hits[at] = (struct hit){i, score, url};
        (*n)++;
    }
    return hits;
}

static void hits_free(struct hit *hits, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(hits[i].url);
    free(hits);
}

/* ---- SearXNG ---------------------------------------------------------------------------- */

static void reply_text(struct sb_emu_reply *r, int status, const char *content_type, const char *text)
{
    free(r->body);
    r->status = status;
    r->content_type = content_type;
    r->body = sb_xstrdup(text);
    r->body_len = strlen(text);
}

static json_t *parsed_url(const char *url)
{
    const char *rest = strstr(url, "://");
    const char *netloc = rest ? rest + 3 : url;
    size_t nl = strcspn(netloc, "/?#");
    return json_pack("[s#, s#, s, s, s, s]", url, rest ? (int)(rest - url) : 0, netloc, (int)nl,
                     netloc[nl] == '/' ? netloc + nl : "/", "", "", "");
}

static void searxng(struct sb_emu_call *call)
{
    call->protocol = "searxng";
    if (strcmp(call->method, "GET")) {
        reply_text(&call->reply, 405, "text/html; charset=utf-8", "405 Method Not Allowed");
        return;
    }
    char *format = sb_emu_call_query_param(call, "format");
    char *q = sb_emu_call_query_param(call, "q");
    /* SearXNG refuses an output format its settings do not list (here: json only), before anything else. */
    if (!format || strcmp(format, "json")) {
        reply_text(&call->reply, 403, "text/html; charset=utf-8", "403 Forbidden");
    } else if (!q || !*q) {
        reply_text(&call->reply, 400, "text/html; charset=utf-8", "400 Bad Request");
    } else {
        char host[HOST_MAX];
        request_host(call, host);
        struct query query;
        query_parse(q, &query);
        size_t n;
        struct hit *hits = search(&query, host, &n);
        json_t *results = json_array();
        for (size_t i = 0; i < n; i++) {
            const struct sb_emu_doc *d = &sb_emu_docs[hits[i].doc];
            json_array_append_new(results,
                                  json_pack("{s:s, s:s, s:s, s:s, s:[s], s:o, s:[i], s:f, s:s}", "url", hits[i].url,
                                            "title", d->title, "content", d->snippet, "engine", "emulator", "engines",
                                            "emulator", "parsed_url", parsed_url(hits[i].url), "positions",
                                            (int)(i + 1), "score", (double)hits[i].score, "category", "general"));
        }
        json_t *out =
            json_pack("{s:s, s:I, s:o, s:[], s:[], s:[], s:[], s:[]}", "query", q, "number_of_results", (json_int_t)n,
                      "results", results, "answers", "corrections", "infoboxes", "suggestions", "unresponsive_engines");
        sb_emu_reply_json(&call->reply, 200, out);
        json_decref(out);
        hits_free(hits, n);
    }
    free(format);
    free(q);
}

/* ---- Brave -------------------------------------------------------------------------------- */

static void brave_error(struct sb_emu_call *call, const char *code, const char *detail, json_t *meta)
{
    char id[40];
    snprintf(id, sizeof id, "%08lx-emu0-4000-8000-%012lx", (unsigned long)random() & 0xffffffffUL,
             (unsigned long)random() & 0xffffffffffffUL);
    json_t *out =
        json_pack("{s:s, s:{s:s, s:i, s:s, s:s, s:o}, s:I}", "type", "ErrorResponse", "error", "id", id, "status", 422,
                  "code", code, "detail", detail, "meta", meta ? meta : json_object(), "time", (json_int_t)time(NULL));
    sb_emu_reply_json(&call->reply, 422, out);
    json_decref(out);
}

static void brave_invalid(struct sb_emu_call *call, const char *param, const char *type, const char *msg,
                          const char *input)
{
    json_t *err = json_pack("{s:s, s:[s,s], s:s}", "type", type, "loc", "query", param, "msg", msg);
    if (input)
        json_object_set_new(err, "input", json_string(input));
    brave_error(call, "VALIDATION", "Unable to validate request parameter(s)", json_pack("{s:[o]}", "errors", err));
}

/* text with every whole word of the query wrapped in <strong>, as Brave marks matches. Owned. */
static char *highlight(const char *text, const struct query *q)
{
    sb_buf_t b = {0};
    sb_buf_add(&b, "", 0);
    const char *p = text;
    while (*p) {
        if (!word_byte((unsigned char)*p)) {
            sb_buf_add(&b, p++, 1);
            continue;
        }
        const char *start = p;
        char w[WORD_MAX];
        next_word(&p, w);
        bool hit = false;
        for (size_t i = 0; i < q->nwords && !hit; i++)
            hit = !strcmp(w, q->words[i]);
        if (hit)
            sb_buf_add(&b, "<strong>", 8);
        sb_buf_add(&b, start, (size_t)(p - start));
        if (hit)
            sb_buf_add(&b, "</strong>", 9);
    }
    return b.p;
}

static void brave(struct sb_emu_call *call)
{
    call->protocol = "brave";
    const char *token = sb_emu_call_header(call, "X-Subscription-Token");
    const char *key = sb_emu_required_key(call->emu);
    if (!token || !*token || (key && strcmp(token, key))) {
        brave_error(call, "SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.",
                    json_pack("{s:s}", "component", "authentication"));
        return;
    }
    if (strcmp(call->method, "GET") && strcmp(call->method, "POST")) {
        reply_text(&call->reply, 405, "application/json", "{\"detail\":\"Method Not Allowed\"}");
        return;
    }
    char *q = sb_emu_call_query_param(call, "q");
    char *count_s = sb_emu_call_query_param(call, "count");
    char *country = sb_emu_call_query_param(call, "country");
    long count = BRAVE_COUNT_MAX;
    char *end = NULL;
    if (count_s)
        count = strtol(count_s, &end, 10);
    if (!q || !*q) {
        brave_invalid(call, "q", "missing", "Field required", NULL);
    } else if (count_s && (!*count_s || *end || count < 1 || count > BRAVE_COUNT_MAX)) {
        brave_invalid(call, "count", "less_than_equal", "Input should be between 1 and 20", count_s);
    } else if (country && strcasecmp(country, "ALL") &&
               (strlen(country) != 2 || !isalpha((unsigned char)country[0]) || !isalpha((unsigned char)country[1]))) {
        brave_invalid(call, "country", "enum", "Input should be a 2 character country code or ALL", country);
    } else {
        char host[HOST_MAX];
        request_host(call, host);
        struct query query;
        query_parse(q, &query);
        size_t n;
        struct hit *hits = search(&query, host, &n);
        json_t *out =
            json_pack("{s:s, s:{s:s, s:b}}", "type", "search", "query", "original", q, "more_results_available", 0);
        if (n > 0) {
            json_t *results = json_array();
            for (size_t i = 0; i < n && i < (size_t)count; i++) {
                const struct sb_emu_doc *d = &sb_emu_docs[hits[i].doc];
                char h[HOST_MAX];
                url_host(hits[i].url, h);
                char *desc = highlight(d->snippet, &query);
                const char *scheme_end = strstr(hits[i].url, "://");
                json_array_append_new(results,
                                      json_pack("{s:s, s:s, s:s, s:s, s:b, s:b, s:s, s:b, s:{s:s#, s:s, s:s}}", "type",
                                                "search_result", "title", d->title, "url", hits[i].url, "description",
                                                desc, "is_source_local", 0, "is_source_both", 0, "language", "en",
                                                "family_friendly", 1, "meta_url", "scheme", hits[i].url,
                                                (int)(scheme_end - hits[i].url), "netloc", h, "hostname", h));
                free(desc);
            }
            json_object_set_new(
                out, "web", json_pack("{s:s, s:o, s:b}", "type", "search", "results", results, "family_friendly", 1));
        }
        sb_emu_reply_json(&call->reply, 200, out);
        json_decref(out);
        hits_free(hits, n);
    }
    free(q);
    free(count_s);
    free(country);
}

/* ---- pages -------------------------------------------------------------------------------- */

static const char page_head[] =
    "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>%s</title>\n"
    "<style>body { font-family: serif; max-width: 40em; } nav a { margin-right: 1em; } .ad { display: none; }"
    "</style>\n<script>window.emuAnalytics = { page: \"%s\", secret: \"script-text-never-shown\" };</script>\n"
    "</head>\n<body>\n<nav><a href=\"/_pages/zorblax.html\">Fruit</a> <a href=\"/_pages/quintar.html\">Rivers</a> "
    "<a href=\"/_pages/helix-cafe.html\">Cafes</a></nav>\n<main>\n";
static const char page_tail[] =
    "\n</main>\n<noscript>Enable JavaScript for the comments.</noscript>\n"
    "<footer><p>&copy; 2031 The Emulated Encyclopedia &middot; All facts here are fictional.</p></footer>\n"
    "<script>document.querySelectorAll('.ad').forEach(function (e) { e.remove(); });</script>\n"
    "</body>\n</html>\n";

/* A tiny PNG signature and header: a page that is not text. */
static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0, 0, 13, 'I', 'H', 'D', 'R'};

static void pages(struct sb_emu_call *call)
{
    call->protocol = "pages";
    if (strcmp(call->method, "GET")) {
        reply_text(&call->reply, 405, "text/html; charset=utf-8", "<h1>405 Method Not Allowed</h1>");
        return;
    }
    const char *name = call->path + strlen("/_pages/");
    if (!strcmp(name, "notes.txt")) {
        reply_text(&call->reply, 200, "text/plain; charset=utf-8",
                   "Field notes\n\nThe zorblax harvest at Mount Terrel began on 24 October.\n"
                   "Helix cafe ran out of zorblax cake by noon.\n");
        return;
    }
    if (!strcmp(name, "image.png")) {
        free(call->reply.body);
        call->reply.status = 200;
        call->reply.content_type = "image/png";
        call->reply.body = sb_xmalloc(sizeof png);
        memcpy(call->reply.body, png, sizeof png);
        call->reply.body_len = sizeof png;
        return;
    }
    if (!strcmp(name, "moved.html")) {
        char host[HOST_MAX];
        request_host(call, host);
        char *to = sb_xasprintf("http://%s/_pages/zorblax.html", host);
        reply_text(&call->reply, 302, "text/html; charset=utf-8", "<a href=\"/_pages/zorblax.html\">moved</a>");
        sb_emu_reply_header(&call->reply, "Location", to);
        free(to);
        return;
    }
    size_t len = strlen(name);
    for (size_t i = 0; i < sb_emu_ndocs; i++) {
        const struct sb_emu_doc *d = &sb_emu_docs[i];
        if (!d->name || len != strlen(d->name) + 5 || strncmp(name, d->name, len - 5) ||
            strcmp(name + len - 5, ".html"))
            continue;
        char *head = sb_xasprintf(page_head, d->title, d->name);
        char *page = sb_xasprintf("%s%s%s", head, d->body, page_tail);
        reply_text(&call->reply, 200, "text/html; charset=utf-8", page);
        free(head);
        free(page);
        return;
    }
    reply_text(&call->reply, 404, "text/html; charset=utf-8",
               "<!DOCTYPE html><html><head><title>Not found</title></head><body><h1>Not found</h1></body></html>");
}

void sb_emu_search_handle(struct sb_emu_call *call)
{
    if (!strncmp(call->path, "/_pages/", 8))
        pages(call);
    else if (!strcmp(call->path, "/_search/search"))
        searxng(call);
    else if (!strcmp(call->path, "/_search/brave/res/v1/web/search"))
        brave(call);
    else
        reply_text(&call->reply, 404, "application/json", "{\"error\":\"no such search endpoint\"}");
}
