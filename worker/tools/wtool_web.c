/*
 * wtool_web: the web tool's requests (see wtool_web.h): a query to the
 * deployment's search backend, and a page opened (or searched) for the
 * model. Each is one sb_upstream_fetch on the worker's loop; its answer is
 * collected here, bounded, and handed to wtool_web_parse.c (search) or
 * wtool_html.c (pages), and the caller's callback runs once with the result.
 *
 * The backend's URL is the operator's (tools_config), so its fetch has no
 * SSRF guard; a page's URL comes from a model, so its fetch has the job's
 * guard, redirects included. The backend's secret is read from the
 * environment variable the configuration names, put in one header, and
 * wiped once sb_upstream_fetch has copied it: it is never logged, returned
 * or kept.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_ssrf.h"
#include "sb_utf8.h"
#include "wtool_web.h"
#include "wtool_web_internal.h"

#define QUERY_MAX 2000
#define ERR_MAX 160
#define CTYPE_MAX 160
/* Redirects a backend may answer with (http -> https, a trailing slash). */
#define BACKEND_REDIRECTS 3
#define PAGE_REDIRECTS 5
/* Brave returns at most 20 results a request. */
#define BRAVE_COUNT_MAX 20
/* Bytes of an answer or page read when the configuration gives no bound. */
#define DEFAULT_MAX_BYTES (2 * 1024 * 1024)
/* A page's Content-Length may pass max_bytes this many times over before the fetch refuses it outright. */
#define PAGE_CAP_FACTOR 4
#define DEFAULT_TIMEOUT_MS 15000
#define DEFAULT_CONNECT_MS 5000

#define ERR_CREDENTIAL "search backend credential is not set"

struct sb_web_op {
    sb_upstream_t *up;
    sb_upstream_xfer_t *xfer;
    bool page;
    json_t *tool; /* owned copy of the request's web_search tool (or NULL) */
    char *kind;   /* search: the backend's kind */
    char *pattern;
    struct sb_web_sizes sizes;
    sb_buf_t body;
    size_t max_bytes;
    bool cut;    /* a page longer than max_bytes: read up to it */
    long status; /* the answer's HTTP status, as on_data saw it */
    char ctype[CTYPE_MAX];
    sb_web_search_cb search_cb;
    sb_web_page_cb page_cb;
    void *arg;
    char err[ERR_MAX];
};

static void why_set(char *why, size_t why_len, const char *msg)
{
    if (why && why_len)
        snprintf(why, why_len, "%s", msg);
}

static void op_free(sb_web_op_t *op)
{
    json_decref(op->tool);
    free(op->kind);
    free(op->pattern);
    sb_buf_free(&op->body);
    free(op);
}

void sb_web_cancel(sb_web_op_t **opp)
{
    if (!opp || !*opp)
        return;
    sb_web_op_t *op = *opp;
    if (op->xfer)
        sb_upstream_cancel(op->up, &op->xfer);
    op_free(op);
    *opp = NULL;
}

/* ---- the transfer ------------------------------------------------------------------ */

static int on_data(long status, const char *data, size_t len, void *arg)
{
    sb_web_op_t *op = arg;
    op->status = status;
    if (op->body.len + len > op->max_bytes) {
        /* A page is used cut; a backend's answer cut would not parse. */
        if (op->page)
            sb_buf_add(&op->body, data, op->max_bytes - op->body.len);
        op->cut = true;
        return -E2BIG;
    }
    sb_buf_add(&op->body, data, len);
    return 0;
}

static void on_header(const char *name, size_t name_len, const char *value, size_t value_len, void *arg)
{
    sb_web_op_t *op = arg;
    if (!name) {
        op->ctype[0] = '\0'; /* a new response (after a redirect): its own headers count */
        return;
    }
    if (name_len == 12 && !strncasecmp(name, "Content-Type", 12)) {
        size_t n = value_len < CTYPE_MAX - 1 ? value_len : CTYPE_MAX - 1;
        memcpy(op->ctype, value, n);
        op->ctype[n] = '\0';
    }
}

/* The transfer's failure as the callback's error, or NULL when there is an answer to read. */
static const char *transfer_error(sb_web_op_t *op, const sb_upstream_result_t *res)
{
    const char *what = op->page ? "page" : "search backend";
    switch (res->outcome) {
    case SB_UPSTREAM_OK:
        break;
    case SB_UPSTREAM_ABORTED:
        if (op->page && op->cut && op->body.len > 0)
            break;
        snprintf(op->err, sizeof op->err, "%s answer is too large", what);
        return op->err;
    case SB_UPSTREAM_TIMEOUT:
        return op->page ? SB_WEB_ERR_TIMEOUT_PAGE : SB_WEB_ERR_TIMEOUT_SEARCH;
    case SB_UPSTREAM_BLOCKED:
        return SB_WEB_ERR_BLOCKED;
    case SB_UPSTREAM_CONNECT_FAILED:
        snprintf(op->err, sizeof op->err, "%s unreachable", what);
        return op->err;
    case SB_UPSTREAM_FAILED:
    default:
        snprintf(op->err, sizeof op->err, "%s transfer failed", what);
        return op->err;
    }
    long status = res->outcome == SB_UPSTREAM_OK ? res->status : op->status;
    if (status < 200 || status > 299) {
        snprintf(op->err, sizeof op->err, "%s returned HTTP %ld", what, status);
        return op->err;
    }
    return NULL;
}

static void search_done(sb_web_op_t *op, const sb_upstream_result_t *res)
{
    const char *error = transfer_error(op, res);
    json_t *sources = NULL;
    char *text = NULL;
    if (!error &&
        sb_web_parse_results(op->kind, op->body.p ? op->body.p : "", op->body.len, op->tool, &sources, &text) < 0)
        error = "search backend answer is not valid";
    op->search_cb(op->arg, sources, text, error, op->body.len);
}

/* The media type of a Content-Type value (lower-cased into type), and its charset (into charset, or ""). */
static void media_type(const char *ctype, char *type, size_t type_len, char *charset, size_t charset_len)
{
    size_t n = strcspn(ctype, "; \t");
    if (n >= type_len)
        n = type_len - 1;
    for (size_t i = 0; i < n; i++)
        type[i] = (char)((ctype[i] >= 'A' && ctype[i] <= 'Z') ? ctype[i] - 'A' + 'a' : ctype[i]);
    type[n] = '\0';
    charset[0] = '\0';
    for (const char *p = strchr(ctype, ';'); p; p = strchr(p + 1, ';')) {
        p += strspn(p + 1, " \t") + 1;
        if (strncasecmp(p, "charset=", 8))
            continue;
        p += 8;
        if (*p == '"')
            p++;
        size_t m = strcspn(p, "\"; \t");
        if (m < charset_len) {
            memcpy(charset, p, m);
            charset[m] = '\0';
        }
        break;
    }
}

/* The page's bytes as text (html or plain), its title, or an error. */
static const char *page_text(sb_web_op_t *op, char **text, char **title)
{
    char type[64], charset[64];
    media_type(op->ctype, type, sizeof type, charset, sizeof charset);
    const char *body = op->body.p ? op->body.p : "";
    if (!*type) {
        /* No Content-Type: markup is read as HTML, anything else as text. */
        const char *p = body + strspn(body, " \t\r\n");
        snprintf(type, sizeof type, "%s", *p == '<' ? "text/html" : "text/plain");
    }
    if (!strcmp(type, "text/html") || !strcmp(type, "application/xhtml+xml")) {
        if (op->body.len == 0) {
            *text = sb_xstrdup("");
            return NULL;
        }
        if (sb_web_html_text_enc(body, op->body.len, *charset ? charset : NULL, text, title) < 0)
            return "page is not readable HTML";
        return NULL;
    }
    if (!strcmp(type, "text/plain") || !strcmp(type, "text/markdown")) {
        char *t = sb_xmalloc(op->body.len + 1);
        for (size_t i = 0; i < op->body.len; i++)
            t[i] = body[i] ? body[i] : ' '; /* a NUL would end the text early */
        t[op->body.len] = '\0';
        /* A cut page may end inside a character; anything not UTF-8 becomes '?'. */
        sb_utf8_fix(t);
        *text = t;
        return NULL;
    }
    return "unsupported content type";
}

static void page_done(sb_web_op_t *op, const sb_upstream_result_t *res)
{
    const char *error = transfer_error(op, res);
    char *text = NULL, *title = NULL;
    if (!error)
        error = page_text(op, &text, &title);
    if (!error && op->pattern) {
        char *found = NULL;
        int rc = sb_web_find_in_text(text, op->pattern, op->sizes.page_max, &found);
        free(text);
        text = rc == 0 ? found : sb_xstrdup("pattern not found");
    } else if (!error) {
        size_t len = strlen(text);
        bool cut = op->cut || len > op->sizes.page_max;
        if (cut) {
            size_t n = sb_web_utf8_prefix(text, len, op->sizes.page_max);
            text[n] = '\0';
            char *t = sb_xasprintf("%s\n[page text cut at %zu bytes]", text, n);
            free(text);
            text = t;
        }
    }
    if (error) {
        free(text);
        free(title);
        text = title = NULL;
    }
    op->page_cb(op->arg, text, title, error, op->body.len);
}

static void on_done(const sb_upstream_result_t *res, void *arg)
{
    sb_web_op_t *op = arg;
    op->xfer = NULL; /* freed by upstream.c after this returns */
    if (op->page)
        page_done(op, res);
    else
        search_done(op, res);
    op_free(op);
}

static int start(sb_upstream_t *up, const sb_web_cfg_t *cfg, sb_web_op_t *op, const sb_fetch_req_t *req,
                 sb_web_op_t **out)
{
    sb_upstream_cbs_t cbs = {.on_data = on_data, .on_done = on_done, .on_header = on_header};
    op->up = up;
    op->max_bytes = cfg->max_bytes ? cfg->max_bytes : DEFAULT_MAX_BYTES;
    sb_fetch_req_t r = *req;
    /* on_data ends the transfer itself one byte over the limit, keeping what a page has; the fetch's own
     * cap, which refuses an answer whose Content-Length passes it before any byte arrives, is set above
     * that for a page (one a little too long is still read, cut) and also bounds a redirect's body. */
    r.max_bytes =
        op->page && op->max_bytes < SIZE_MAX / PAGE_CAP_FACTOR ? op->max_bytes * PAGE_CAP_FACTOR : op->max_bytes + 1;
    int64_t timeout = cfg->timeout_ms > 0 ? cfg->timeout_ms : DEFAULT_TIMEOUT_MS;
    int64_t connect = cfg->connect_timeout_ms > 0 ? cfg->connect_timeout_ms : DEFAULT_CONNECT_MS;
    int rc = sb_upstream_fetch(up, &r, timeout, connect, &cbs, op, &op->xfer);
    if (rc < 0)
        return rc;
    *out = op;
    return 0;
}

/* ---- search ------------------------------------------------------------------------ */

/* s percent-encoded for a query string (RFC 3986 unreserved bytes kept). Owned. */
static char *url_encode(const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    sb_buf_t b = {0};
    sb_buf_add(&b, "", 0);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
            *p == '_' || *p == '.' || *p == '~') {
            sb_buf_add(&b, (const char *)p, 1);
        } else {
            char e[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            sb_buf_add(&b, e, 3);
        }
    }
    return b.p;
}

/* The one allowed domain, when the tool names exactly one (a site: term narrows a backend's search to it). */
static const char *single_domain(const json_t *tool)
{
    const json_t *list = json_object_get(json_object_get(tool, "filters"), "allowed_domains");
    return json_array_size(list) == 1 ? json_string_value(json_array_get(list, 0)) : NULL;
}

/* user_location.country when it is an ISO 3166 alpha-2 code (upper-cased into cc). */
static bool country_of(const json_t *tool, char cc[3])
{
    const char *c = json_string_value(json_object_get(json_object_get(tool, "user_location"), "country"));
    if (!c || strlen(c) != 2)
        return false;
    for (int i = 0; i < 2; i++) {
        char ch = c[i] >= 'a' && c[i] <= 'z' ? (char)(c[i] - 'a' + 'A') : c[i];
        if (ch < 'A' || ch > 'Z')
            return false;
        cc[i] = ch;
    }
    cc[2] = '\0';
    return true;
}

static void wipe_free(char *s)
{
    if (s) {
        explicit_bzero(s, strlen(s));
        free(s);
    }
}

int sb_web_search(sb_upstream_t *up, const sb_web_cfg_t *cfg, const char *query, sb_web_search_cb cb, void *arg,
                  sb_web_op_t **out, char *why, size_t why_len)
{
    *out = NULL;
    const json_t *be = cfg->backend;
    const char *kind = json_string_value(json_object_get(be, "kind"));
    const char *base = json_string_value(json_object_get(be, "base_url"));
    const char *cref = json_string_value(json_object_get(be, "credential_ref"));
    if (!kind || !base) {
        why_set(why, why_len, "no search backend is configured");
        return -EINVAL;
    }
    bool searxng = !strcmp(kind, "searxng"), brave = !strcmp(kind, "brave"), tavily = !strcmp(kind, "tavily");
    if (!searxng && !brave && !tavily) {
        why_set(why, why_len, "unknown search backend kind");
        return -EINVAL;
    }
    if (strncasecmp(base, "http://", 7) && strncasecmp(base, "https://", 8)) {
        why_set(why, why_len, "search backend URL is not http(s)");
        return -EINVAL;
    }
    if (!query || !*query || strlen(query) > QUERY_MAX) {
        why_set(why, why_len, !query || !*query ? "empty search query" : "search query is too long");
        return -EINVAL;
    }
    const char *secret = NULL;
    if (cref && *cref) {
        secret = getenv(cref);
        if (!secret || !*secret) {
            why_set(why, why_len, ERR_CREDENTIAL);
            return -ENOKEY;
        }
    }

    sb_web_op_t *op = sb_xcalloc(1, sizeof *op);
    op->tool = cfg->tool ? json_deep_copy(cfg->tool) : NULL;
    op->kind = sb_xstrdup(kind);
    op->search_cb = cb;
    op->arg = arg;
    sb_web_sizes_of(cfg->tool, &op->sizes);

    size_t blen = strlen(base);
    while (blen > 0 && base[blen - 1] == '/')
        blen--;
    const char *site = single_domain(cfg->tool);
    char *q = site && !tavily ? sb_xasprintf("%s site:%s", query, site) : sb_xstrdup(query);
    char *eq = url_encode(q);
    char *url = NULL, *auth = NULL, *body = NULL;
    const char *headers[3] = {"Accept: application/json", NULL, NULL};
    size_t nh = 1;
    char cc[3];
    if (searxng) {
        url = sb_xasprintf("%.*s/search?q=%s&format=json", (int)blen, base, eq);
    } else if (brave) {
        /* Ask for more than are shown when a filter will drop some. */
        size_t count = json_object_get(json_object_get(cfg->tool, "filters"), "allowed_domains") ? BRAVE_COUNT_MAX
                                                                                                 : op->sizes.results;
        bool has_cc = country_of(cfg->tool, cc);
        url = sb_xasprintf("%.*s/res/v1/web/search?q=%s&count=%zu%s%s", (int)blen, base, eq, count,
                           has_cc ? "&country=" : "", has_cc ? cc : "");
        if (secret)
            headers[nh++] = auth = sb_xasprintf("X-Subscription-Token: %s", secret);
    } else {
        url = sb_xasprintf("%.*s/search", (int)blen, base);
        json_t *req = json_pack("{s:s, s:I, s:s, s:s}", "query", q, "max_results", (json_int_t)op->sizes.results,
                                "search_depth", "basic", "topic", "general");
        json_t *domains = json_object_get(json_object_get(cfg->tool, "filters"), "allowed_domains");
        if (req && json_is_array(domains) && json_array_size(domains) > 0)
            json_object_set_new(req, "include_domains", json_deep_copy(domains));
        body = req ? json_dumps(req, JSON_COMPACT) : NULL;
        json_decref(req);
        headers[nh++] = "Content-Type: application/json";
        if (secret)
            headers[nh++] = auth = sb_xasprintf("Authorization: Bearer %s", secret);
    }
    free(q);
    free(eq);
    if (tavily && !body) {
        /* Only a query that is not UTF-8 can fail to pack. */
        why_set(why, why_len, "search query is not valid UTF-8");
        free(url);
        wipe_free(auth);
        op_free(op);
        return -EINVAL;
    }
    sb_fetch_req_t req = {.method = tavily ? "POST" : "GET",
                          .url = url,
                          .headers = headers,
                          .n_headers = nh,
                          .body = body,
                          .body_len = body ? strlen(body) : 0,
                          .max_redirects = BACKEND_REDIRECTS,
                          .guard = NULL};
    int rc = start(up, cfg, op, &req, out);
    free(url);
    free(body);
    wipe_free(auth);
    if (rc < 0) {
        why_set(why, why_len, "search backend request could not start");
        op_free(op);
    }
    return rc;
}

/* ---- pages ------------------------------------------------------------------------- */

int sb_web_page(sb_upstream_t *up, const sb_web_cfg_t *cfg, const char *url, const char *pattern, sb_web_page_cb cb,
                void *arg, sb_web_op_t **out, char *why, size_t why_len)
{
    *out = NULL;
    char host[256];
    if (!url || sb_web_url_host(url, host, sizeof host) < 0) {
        why_set(why, why_len, "not an http(s) URL");
        return -EINVAL;
    }
    if (pattern && !*pattern) {
        why_set(why, why_len, "empty pattern");
        return -EINVAL;
    }
    if (json_is_false(json_object_get(cfg->tool, "external_web_access"))) {
        why_set(why, why_len, "live web access is off for this request");
        return -EPERM;
    }
    if (!cfg->guard) {
        why_set(why, why_len, "no outbound guard for pages");
        return -EACCES;
    }
    if (!sb_web_url_allowed(cfg->tool, url)) {
        why_set(why, why_len, "the page is not on an allowed domain");
        return -EACCES;
    }
    int rc = sb_ssrf_check_url(cfg->guard, url, why, why_len);
    if (rc < 0)
        return rc;

    sb_web_op_t *op = sb_xcalloc(1, sizeof *op);
    op->page = true;
    op->tool = cfg->tool ? json_deep_copy(cfg->tool) : NULL;
    op->pattern = pattern ? sb_xstrdup(pattern) : NULL;
    op->page_cb = cb;
    op->arg = arg;
    sb_web_sizes_of(cfg->tool, &op->sizes);
    static const char *const headers[] = {"Accept: text/html, application/xhtml+xml, text/plain;q=0.9, */*;q=0.1"};
    sb_fetch_req_t req = {.method = "GET",
                          .url = url,
                          .headers = headers,
                          .n_headers = 1,
                          .max_redirects = PAGE_REDIRECTS,
                          .guard = cfg->guard};
    rc = start(up, cfg, op, &req, out);
    if (rc < 0) {
        why_set(why, why_len, rc == -EACCES ? "the page's URL is not allowed" : "page request could not start");
        op_free(op);
    }
    return rc;
}
