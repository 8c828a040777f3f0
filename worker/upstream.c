/*
 * upstream: libcurl multi on libevent (the curl "hiperfifo" pattern).
 *
 * curl tells us which sockets to watch (on_socket) and when to wake it
 * (on_timer); libevent wakes us and we hand the readiness back with
 * curl_multi_socket_action, then collect finished transfers. curl is never
 * re-entered from its own callbacks: the timer callback only arms a libevent
 * timer, and transfers are removed only from our libevent callbacks.
 *
 * Two connection pools, each a multi handle with its own timer: one for LLM
 * upstreams and operator-configured URLs, one for guarded fetches (sb_ssrf).
 * curl checks nothing when it reuses a pooled connection, so a guarded fetch
 * must never pick up a connection an unguarded one opened (an operator's
 * internal search backend, say, under a name a model could also ask for):
 * the guarded pool holds only connections whose address passed the
 * connect-time check. Guarded fetches follow redirects themselves (see
 * sb_upstream_follow) so each target is checked before anything is sent.
 */
#include "upstream.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_ssrf.h"
#include "sb_time.h"
#include "wmetrics.h"

/* One connection pool: a curl multi handle and the timer it asks for. */
struct sb_upstream_pool {
    sb_upstream_t *up;
    CURLM *multi;
    struct event *timer;
    int running;
    size_t active;
};

/* A socket curl asked us to watch. */
struct sb_upstream_sock {
    struct sb_upstream_pool *pool;
    curl_socket_t fd;
    struct event *ev;
    struct sb_upstream_sock *prev, *next;
};

struct sb_upstream_xfer {
    sb_upstream_t *up;
    struct sb_upstream_pool *pool;
    CURL *easy;
    struct curl_slist *headers;
    char *body; /* curl reads it in place (CURLOPT_POSTFIELDS) */
    char *method;
    char *url; /* the one being fetched now (a redirect replaces it) */
    const sb_ssrf_t *guard;
    sb_upstream_cbs_t cbs;
    void *arg;
    long retry_after;
    size_t max_bytes, got_bytes;
    int max_redirects, redirects;
    bool has_headers;  /* the caller gave headers (they may carry secrets) */
    bool has_location; /* the response being received has a Location */
    bool aborted;      /* on_data refused the body, or max_bytes was passed */
    bool blocked;      /* the guard refused an address or a redirect */
    int64_t start_us;
    int64_t timeout_ms, connect_timeout_ms;
    sb_upstream_xfer_t *prev, *next;
};

/* Easy handles kept for reuse. */
#define SB_UPSTREAM_SPARE_EASY 64

/* pools[0]: LLM upstreams and unguarded fetches; pools[1]: guarded ones. */
enum { SB_POOL_PLAIN, SB_POOL_GUARDED };

struct sb_upstream {
    struct event_base *base;
    struct sb_upstream_pool pools[2];
    /* The guard the guarded pool's connections were checked by: a fetch
     * under another guard (which may allow other addresses) neither reuses
     * them nor leaves its own behind. A worker has one guard. */
    const sb_ssrf_t *pool_guard;
    size_t active;
    sb_upstream_xfer_t *xfers;
    struct sb_upstream_sock *socks;
    /* Easy handles of ended transfers, reset, for the next ones: a fresh
     * handle per request cost its setup and several large allocations. */
    CURL *spare[SB_UPSTREAM_SPARE_EASY];
    int n_spare;
};

static const char sb_upstream_blocked_text[] = "blocked by the outbound address policy";

static void sb_upstream_xfer_free(sb_upstream_xfer_t *x)
{
    sb_upstream_t *up = x->up;
    if (x->prev)
        x->prev->next = x->next;
    else
        up->xfers = x->next;
    if (x->next)
        x->next->prev = x->prev;
    up->active--;
    x->pool->active--;
    /* Removed from its multi by the caller: kept for the next transfer
     * (curl_easy_reset keeps its buffers, drops every option). */
    if (x->easy && up->n_spare < SB_UPSTREAM_SPARE_EASY) {
        curl_easy_reset(x->easy);
        up->spare[up->n_spare++] = x->easy;
    } else {
        curl_easy_cleanup(x->easy);
    }
    curl_slist_free_all(x->headers);
    free(x->body);
    free(x->method);
    free(x->url);
    free(x);
}

static void sb_upstream_sock_free(struct sb_upstream_sock *sk)
{
    sb_upstream_t *up = sk->pool->up;
    if (sk->prev)
        sk->prev->next = sk->next;
    else
        up->socks = sk->next;
    if (sk->next)
        sk->next->prev = sk->prev;
    event_free(sk->ev);
    free(sk);
}

static enum sb_upstream_outcome sb_upstream_classify(sb_upstream_xfer_t *x, CURLcode rc, int64_t elapsed_ms)
{
    /* A refused address makes curl report a connect failure (or, with
     * another address left that worked, success). */
    if (x->blocked && rc != CURLE_OK)
        return SB_UPSTREAM_BLOCKED;
    switch (rc) {
    case CURLE_OK:
        return SB_UPSTREAM_OK;
    case CURLE_OPERATION_TIMEDOUT: {
        /* The connect timeout fires with the same code: no connection and
         * time left on the total clock means it was the connect phase. */
        curl_off_t connect_us = 0;
        curl_easy_getinfo(x->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
        if (connect_us == 0 && elapsed_ms + 50 < x->timeout_ms)
            return SB_UPSTREAM_CONNECT_FAILED;
        return SB_UPSTREAM_TIMEOUT;
    }
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
    case CURLE_SSL_CONNECT_ERROR:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return SB_UPSTREAM_CONNECT_FAILED;
    case CURLE_WRITE_ERROR:
        return x->aborted ? SB_UPSTREAM_ABORTED : SB_UPSTREAM_FAILED;
    case CURLE_FILESIZE_EXCEEDED: /* Content-Length over max_bytes */
        return SB_UPSTREAM_ABORTED;
    default:
        return SB_UPSTREAM_FAILED;
    }
}

/* Whether the response being received is a redirect this transfer
 * follows: a 301/302/303/307/308 with a Location, and redirects left. Asked
 * while the body arrives (to keep it from on_data: curl resolves the
 * Location into CURLINFO_REDIRECT_URL only once the transfer is done, so
 * here the header callback's has_location stands for it) and at the end,
 * where sb_upstream_follow takes the resolved URL. */
static bool sb_upstream_redirecting(sb_upstream_xfer_t *x, long status)
{
    if (x->redirects >= x->max_redirects || !x->has_location)
        return false;
    return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

/* Whether two absolute URLs have the same origin (scheme, host, port). */
static bool sb_upstream_same_origin(const char *a, const char *b)
{
    CURLU *ua = curl_url(), *ub = curl_url();
    bool same = false;
    if (ua && ub && curl_url_set(ua, CURLUPART_URL, a, 0) == CURLUE_OK &&
        curl_url_set(ub, CURLUPART_URL, b, 0) == CURLUE_OK) {
        static const CURLUPart parts[] = {CURLUPART_SCHEME, CURLUPART_HOST, CURLUPART_PORT};
        same = true;
        for (size_t i = 0; same && i < sizeof parts / sizeof parts[0]; i++) {
            char *pa = NULL, *pb = NULL;
            unsigned int flags = parts[i] == CURLUPART_PORT ? CURLU_DEFAULT_PORT : 0;
            same = curl_url_get(ua, parts[i], &pa, flags) == CURLUE_OK &&
                   curl_url_get(ub, parts[i], &pb, flags) == CURLUE_OK && !strcasecmp(pa, pb);
            curl_free(pa);
            curl_free(pb);
        }
    }
    curl_url_cleanup(ua);
    curl_url_cleanup(ub);
    return same;
}

/*
 * Follows the redirect the transfer (just removed from its multi handle)
 * ended with, by hand rather than with CURLOPT_FOLLOWLOCATION: curl would
 * connect to the new target before any callback of ours could look at its
 * URL, and would carry every custom header (an MCP server's Authorization
 * among them) to whatever host the Location names. Here the target is
 * checked with sb_ssrf_check_url first (its address is checked again at
 * connect time, as for any fetch); the caller's headers are dropped when it
 * leaves the origin (scheme, host, port), since any of them may be a
 * secret; and the method changes as browsers and curl do it (303: GET;
 * 301/302 after a POST: GET; 307/308 keep method and body).
 * 0: re-added; otherwise the transfer ends now with outcome *out.
 */
static int sb_upstream_follow(sb_upstream_xfer_t *x, long status, enum sb_upstream_outcome *out)
{
    char *loc = NULL;
    curl_easy_getinfo(x->easy, CURLINFO_REDIRECT_URL, &loc);
    if (!loc) { /* a Location curl could not make a URL of */
        *out = SB_UPSTREAM_FAILED;
        return -EINVAL;
    }
    if (x->guard && sb_ssrf_check_url(x->guard, loc, NULL, 0) < 0) {
        x->blocked = true;
        *out = SB_UPSTREAM_BLOCKED;
        return -EACCES;
    }
    int64_t left_ms = x->timeout_ms - (sb_mono_us() - x->start_us) / 1000;
    if (left_ms <= 0) {
        *out = SB_UPSTREAM_TIMEOUT;
        return -ETIMEDOUT;
    }
    char *target = sb_xstrdup(loc); /* loc lives in the handle: gone at the next setopt */
    CURL *e = x->easy;
    CURLcode rc = CURLE_OK;
    if (x->has_headers && !sb_upstream_same_origin(x->url, target)) {
        struct curl_slist *bare = curl_slist_append(NULL, "Expect:");
        if (!bare) {
            free(target);
            *out = SB_UPSTREAM_FAILED;
            return -ENOMEM;
        }
        curl_slist_free_all(x->headers);
        x->headers = bare;
        x->has_headers = false;
        rc = curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->headers);
    }
    bool post = !strcmp(x->method, "POST");
    if ((status == 303 && strcmp(x->method, "HEAD") != 0) || ((status == 301 || status == 302) && post)) {
        if (rc == CURLE_OK)
            rc = curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, NULL);
        if (rc == CURLE_OK)
            rc = curl_easy_setopt(e, CURLOPT_HTTPGET, 1L);
        free(x->method);
        x->method = sb_xstrdup("GET");
    }
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_URL, target);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)left_ms);
    if (rc == CURLE_OK)
        rc = curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS,
                              (long)(x->connect_timeout_ms < left_ms ? x->connect_timeout_ms : left_ms));
    free(x->url);
    x->url = target;
    if (rc != CURLE_OK || curl_multi_add_handle(x->pool->multi, e) != CURLM_OK) {
        *out = SB_UPSTREAM_FAILED;
        return -EIO;
    }
    x->redirects++;
    x->got_bytes = 0;
    x->retry_after = -1;
    return 0;
}

/* Collects a pool's finished transfers and reports them. Runs only from
 * our libevent callbacks, so on_done may start or cancel other transfers. */
static void sb_upstream_check_done(struct sb_upstream_pool *pool)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(pool->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode rc = m->data.result;
        sb_upstream_xfer_t *x = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(pool->multi, easy);
        if (!x)
            continue;
        sb_upstream_result_t res = {.retry_after = x->retry_after, .detail = curl_easy_strerror(rc)};
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &res.status);
        res.outcome = sb_upstream_classify(x, rc, (sb_mono_us() - x->start_us) / 1000);
        if (res.outcome == SB_UPSTREAM_OK && sb_upstream_redirecting(x, res.status) &&
            sb_upstream_follow(x, res.status, &res.outcome) == 0)
            continue;
        res.elapsed_us = sb_mono_us() - x->start_us;
        long connects = 0;
        if (curl_easy_getinfo(easy, CURLINFO_NUM_CONNECTS, &connects) == CURLE_OK && res.outcome != SB_UPSTREAM_BLOCKED)
            sb_wmetrics_connection(connects == 0);
        if (res.outcome == SB_UPSTREAM_BLOCKED)
            res.detail = sb_upstream_blocked_text;
        x->cbs.on_done(&res, x->arg);
        sb_upstream_xfer_free(x);
    }
}

static void sb_upstream_on_event(evutil_socket_t fd, short what, void *arg)
{
    struct sb_upstream_pool *pool = arg;
    int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    curl_multi_socket_action(pool->multi, fd, action, &pool->running);
    sb_upstream_check_done(pool);
    /* `running` predates the on_done callbacks, which may have started new
     * transfers (and curl armed the timer for them): keep it then. */
    if (pool->running <= 0 && pool->active == 0)
        evtimer_del(pool->timer);
}

static void sb_upstream_on_timeout(evutil_socket_t fd, short what, void *arg)
{
    struct sb_upstream_pool *pool = arg;
    curl_multi_socket_action(pool->multi, CURL_SOCKET_TIMEOUT, 0, &pool->running);
    sb_upstream_check_done(pool);
}

/* CURLMOPT_SOCKETFUNCTION: start, change or stop watching one socket. */
static int sb_upstream_on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    struct sb_upstream_pool *pool = userp;
    sb_upstream_t *up = pool->up;
    struct sb_upstream_sock *sk = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (sk)
            sb_upstream_sock_free(sk);
        return 0;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    if (!sk) {
        sk = sb_xcalloc(1, sizeof *sk);
        sk->pool = pool;
        sk->fd = fd;
        sk->ev = event_new(up->base, fd, kind, sb_upstream_on_event, pool);
        if (!sk->ev) {
            free(sk);
            return -1;
        }
        sk->next = up->socks;
        if (up->socks)
            up->socks->prev = sk;
        up->socks = sk;
        curl_multi_assign(pool->multi, fd, sk);
    } else {
        event_del(sk->ev);
        event_assign(sk->ev, up->base, fd, kind, sb_upstream_on_event, pool);
    }
    return event_add(sk->ev, NULL) < 0 ? -1 : 0;
}

/* CURLMOPT_TIMERFUNCTION: arm (or disarm, -1) the pool's timer. */
static int sb_upstream_on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    struct sb_upstream_pool *pool = userp;
    if (timeout_ms < 0)
        return evtimer_del(pool->timer) < 0 ? -1 : 0;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    return evtimer_add(pool->timer, &tv) < 0 ? -1 : 0;
}

static size_t sb_upstream_on_write(char *data, size_t size, size_t nmemb, void *userp)
{
    sb_upstream_xfer_t *x = userp;
    size_t len = size * nmemb;
    long status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    /* max_bytes bounds a redirect's body as well, which is read (so the
     * connection stays usable) but not passed on. */
    if (x->max_bytes && len > x->max_bytes - x->got_bytes) {
        x->aborted = true;
        return 0; /* CURLE_WRITE_ERROR */
    }
    x->got_bytes += len;
    if (sb_upstream_redirecting(x, status))
        return len;
    if (x->cbs.on_data && x->cbs.on_data(status, data, len, x->arg) < 0) {
        x->aborted = true;
        return 0;
    }
    return len;
}

/* Passes one header line to on_header, name and value trimmed; a status
 * line as name NULL. Folded continuation lines (obsolete) are dropped. */
static void sb_upstream_emit_header(sb_upstream_xfer_t *x, const char *data, size_t len)
{
    if (len >= 5 && !memcmp(data, "HTTP/", 5)) {
        x->cbs.on_header(NULL, 0, NULL, 0, x->arg);
        return;
    }
    if (len == 0 || data[0] == ' ' || data[0] == '\t')
        return;
    const char *colon = memchr(data, ':', len);
    if (!colon)
        return;
    size_t nlen = (size_t)(colon - data);
    while (nlen > 0 && (data[nlen - 1] == ' ' || data[nlen - 1] == '\t'))
        nlen--;
    const char *v = colon + 1, *end = data + len;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r' || end[-1] == '\n'))
        end--;
    if (nlen > 0)
        x->cbs.on_header(data, nlen, v, (size_t)(end - v), x->arg);
}

/* Picks Retry-After (delta-seconds only; an HTTP-date is ignored) out of the
 * response headers, and hands each to on_header. A new status line (a 1xx
 * or a redirect before the real response) starts over. */
static size_t sb_upstream_on_header(char *data, size_t size, size_t nmemb, void *userp)
{
    sb_upstream_xfer_t *x = userp;
    size_t len = size * nmemb;
    static const char name[] = "retry-after:";
    if (x->cbs.on_header)
        sb_upstream_emit_header(x, data, len);
    static const char location[] = "location:";
    if (len >= 5 && !memcmp(data, "HTTP/", 5)) {
        x->retry_after = -1;
        x->has_location = false;
    } else if (len > sizeof location - 1 && !strncasecmp(data, location, sizeof location - 1)) {
        x->has_location = true;
    } else if (len > sizeof name - 1 && !strncasecmp(data, name, sizeof name - 1)) {
        long v = 0;
        size_t i = sizeof name - 1;
        while (i < len && (data[i] == ' ' || data[i] == '\t'))
            i++;
        size_t digits = 0;
        while (i < len && data[i] >= '0' && data[i] <= '9' && digits < 7) {
            v = v * 10 + (data[i] - '0');
            i++;
            digits++;
        }
        while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
            i++;
        if (digits > 0 && i == len)
            x->retry_after = v;
    }
    return len;
}

/* CURLOPT_OPENSOCKETFUNCTION of a guarded fetch: the connect-time check,
 * on the address curl resolved and is about to connect to (each one it
 * tries, redirects included). A refused one is never connected to; curl
 * tries the next, and when none is left the outcome is BLOCKED. */
static curl_socket_t sb_upstream_open_socket(void *clientp, curlsocktype purpose, struct curl_sockaddr *a)
{
    sb_upstream_xfer_t *x = clientp;
    if (purpose != CURLSOCKTYPE_IPCXN || !sb_ssrf_addr_allowed(x->guard, &a->addr, (socklen_t)a->addrlen)) {
        x->blocked = true;
        return CURL_SOCKET_BAD;
    }
    return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

static int sb_upstream_pool_init(sb_upstream_t *up, struct sb_upstream_pool *pool)
{
    pool->up = up;
    pool->multi = curl_multi_init();
    pool->timer = evtimer_new(up->base, sb_upstream_on_timeout, pool);
    if (!pool->multi || !pool->timer)
        return -ENOMEM;
    if (curl_multi_setopt(pool->multi, CURLMOPT_SOCKETFUNCTION, sb_upstream_on_socket) != CURLM_OK ||
        curl_multi_setopt(pool->multi, CURLMOPT_SOCKETDATA, pool) != CURLM_OK ||
        curl_multi_setopt(pool->multi, CURLMOPT_TIMERFUNCTION, sb_upstream_on_timer) != CURLM_OK ||
        curl_multi_setopt(pool->multi, CURLMOPT_TIMERDATA, pool) != CURLM_OK)
        return -EIO;
    return 0;
}

static void sb_upstream_pool_fini(struct sb_upstream_pool *pool)
{
    if (pool->multi)
        curl_multi_cleanup(pool->multi); /* closes pooled connections */
    if (pool->timer)
        event_free(pool->timer);
}

sb_upstream_t *sb_upstream_new(struct event_base *base)
{
    sb_upstream_t *up = sb_xcalloc(1, sizeof *up);
    up->base = base;
    if (sb_upstream_pool_init(up, &up->pools[SB_POOL_PLAIN]) < 0 ||
        sb_upstream_pool_init(up, &up->pools[SB_POOL_GUARDED]) < 0) {
        sb_upstream_pool_fini(&up->pools[SB_POOL_PLAIN]);
        sb_upstream_pool_fini(&up->pools[SB_POOL_GUARDED]);
        free(up);
        return NULL;
    }
    return up;
}

void sb_upstream_destroy(sb_upstream_t **pup)
{
    if (!pup || !*pup)
        return;
    sb_upstream_t *up = *pup;
    while (up->xfers) {
        sb_upstream_xfer_t *x = up->xfers;
        sb_upstream_cancel(up, &x);
    }
    for (int i = 0; i < 2; i++) {
        curl_multi_cleanup(up->pools[i].multi);
        up->pools[i].multi = NULL;
    }
    while (up->socks) /* in case curl did not say REMOVE for all */
        sb_upstream_sock_free(up->socks);
    sb_upstream_pool_fini(&up->pools[SB_POOL_PLAIN]);
    sb_upstream_pool_fini(&up->pools[SB_POOL_GUARDED]);
    while (up->n_spare > 0)
        curl_easy_cleanup(up->spare[--up->n_spare]);
    free(up);
    *pup = NULL;
}

size_t sb_upstream_active(const sb_upstream_t *up)
{
    return up->active;
}

/* A method is an upper-case token: it goes on the request line as is. */
static bool sb_upstream_method_ok(const char *m)
{
    size_t n = strlen(m);
    if (n == 0 || n > 16)
        return false;
    for (size_t i = 0; i < n; i++)
        if (m[i] < 'A' || m[i] > 'Z')
            return false;
    return true;
}

/*
 * The one setup behind sb_upstream_start (a POST to an LLM upstream: no
 * guard, no redirects, no cap, the plain pool) and sb_upstream_fetch.
 */
static int sb_upstream_setup(sb_upstream_t *up, const sb_fetch_req_t *req, int64_t timeout_ms,
                             int64_t connect_timeout_ms, const sb_upstream_cbs_t *cbs, void *arg,
                             sb_upstream_xfer_t **out)
{
    const char *method = req->method ? req->method : "GET";
    sb_upstream_xfer_t *x = sb_xcalloc(1, sizeof *x);
    x->up = up;
    x->pool = &up->pools[req->guard ? SB_POOL_GUARDED : SB_POOL_PLAIN];
    x->guard = req->guard;
    x->cbs = *cbs;
    x->arg = arg;
    x->retry_after = -1;
    x->max_bytes = req->max_bytes;
    x->max_redirects = req->max_redirects > 0 ? req->max_redirects : 0;
    x->has_headers = req->n_headers > 0;
    if (connect_timeout_ms > timeout_ms)
        connect_timeout_ms = timeout_ms;
    x->timeout_ms = timeout_ms;
    x->connect_timeout_ms = connect_timeout_ms;
    x->method = sb_xstrdup(method);
    x->url = sb_xstrdup(req->url);
    if (req->body)
        x->body = sb_xstrndup(req->body, req->body_len);
    x->easy = up->n_spare > 0 ? up->spare[--up->n_spare] : curl_easy_init();
    if (!x->easy)
        goto fail;
    for (size_t i = 0; i < req->n_headers; i++) {
        struct curl_slist *h = curl_slist_append(x->headers, req->headers[i]);
        if (!h)
            goto fail;
        x->headers = h;
    }
    /* No "Expect: 100-continue" round trip on large bodies. */
    struct curl_slist *h = curl_slist_append(x->headers, "Expect:");
    if (!h)
        goto fail;
    x->headers = h;

    CURL *e = x->easy;
    CURLcode rc = CURLE_OK;
#define SB_SETOPT(opt, val)                                                                                            \
    do {                                                                                                               \
        if (rc == CURLE_OK)                                                                                            \
            rc = curl_easy_setopt(e, opt, val);                                                                        \
    } while (0)
    SB_SETOPT(CURLOPT_URL, req->url);
    if (x->guard) {
        const char *protos = sb_ssrf_http_allowed(x->guard) ? "http,https" : "https";
        SB_SETOPT(CURLOPT_PROTOCOLS_STR, protos);
        SB_SETOPT(CURLOPT_REDIR_PROTOCOLS_STR, protos);
        SB_SETOPT(CURLOPT_OPENSOCKETFUNCTION, sb_upstream_open_socket);
        SB_SETOPT(CURLOPT_OPENSOCKETDATA, x);
        /* A proxy from the environment would make the proxy's address the
         * one connected to (and checked), not the target's. */
        SB_SETOPT(CURLOPT_PROXY, "");
        if (!up->pool_guard)
            up->pool_guard = x->guard;
        if (up->pool_guard != x->guard) {
            SB_SETOPT(CURLOPT_FRESH_CONNECT, 1L);
            SB_SETOPT(CURLOPT_FORBID_REUSE, 1L);
        }
    } else {
        SB_SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    }
    if (!strcmp(method, "POST")) {
        SB_SETOPT(CURLOPT_POST, 1L);
        SB_SETOPT(CURLOPT_POSTFIELDS, x->body ? x->body : "");
        SB_SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(x->body ? req->body_len : 0));
    } else if (!strcmp(method, "HEAD")) {
        SB_SETOPT(CURLOPT_NOBODY, 1L);
    } else if (strcmp(method, "GET") != 0) {
        SB_SETOPT(CURLOPT_CUSTOMREQUEST, method);
        if (x->body) {
            SB_SETOPT(CURLOPT_POSTFIELDS, x->body);
            SB_SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
        }
    }
    if (x->max_bytes)
        SB_SETOPT(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)x->max_bytes);
    SB_SETOPT(CURLOPT_HTTPHEADER, x->headers);
    SB_SETOPT(CURLOPT_USERAGENT, "switchboard-worker/1");
    SB_SETOPT(CURLOPT_WRITEFUNCTION, sb_upstream_on_write);
    SB_SETOPT(CURLOPT_WRITEDATA, x);
    SB_SETOPT(CURLOPT_HEADERFUNCTION, sb_upstream_on_header);
    SB_SETOPT(CURLOPT_HEADERDATA, x);
    SB_SETOPT(CURLOPT_PRIVATE, x);
    SB_SETOPT(CURLOPT_NOSIGNAL, 1L);
    SB_SETOPT(CURLOPT_TCP_NODELAY, 1L);
    SB_SETOPT(CURLOPT_TCP_KEEPALIVE, 1L);
    SB_SETOPT(CURLOPT_TIMEOUT_MS, (long)timeout_ms);
    SB_SETOPT(CURLOPT_CONNECTTIMEOUT_MS, (long)connect_timeout_ms);
#undef SB_SETOPT
    if (rc != CURLE_OK) {
        sb_warn("upstream: curl_easy_setopt failed: %s", curl_easy_strerror(rc));
        goto fail;
    }
    x->start_us = sb_mono_us();
    if (curl_multi_add_handle(x->pool->multi, e) != CURLM_OK)
        goto fail;
    x->next = up->xfers;
    if (up->xfers)
        up->xfers->prev = x;
    up->xfers = x;
    up->active++;
    x->pool->active++;
    *out = x;
    return 0;
fail:
    if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    free(x->body);
    free(x->method);
    free(x->url);
    free(x);
    return -EIO;
}

int sb_upstream_start(sb_upstream_t *up, const sb_provider_request_t *req, int64_t timeout_ms,
                      int64_t connect_timeout_ms, const sb_upstream_cbs_t *cbs, void *arg, sb_upstream_xfer_t **out)
{
    *out = NULL;
    if (!req->url || !req->body || timeout_ms <= 0)
        return -EINVAL;
    sb_fetch_req_t f = {.method = "POST",
                        .url = req->url,
                        .headers = (const char *const *)req->headers,
                        .n_headers = req->n_headers,
                        .body = req->body,
                        .body_len = req->body_len};
    return sb_upstream_setup(up, &f, timeout_ms, connect_timeout_ms, cbs, arg, out);
}

int sb_upstream_fetch(sb_upstream_t *up, const sb_fetch_req_t *req, int64_t timeout_ms, int64_t connect_timeout_ms,
                      const sb_upstream_cbs_t *cbs, void *arg, sb_upstream_xfer_t **out)
{
    *out = NULL;
    if (!req->url || timeout_ms <= 0 || (req->n_headers && !req->headers) ||
        (req->method && !sb_upstream_method_ok(req->method)))
        return -EINVAL;
    if (req->body && (!req->method || !strcmp(req->method, "GET") || !strcmp(req->method, "HEAD")))
        return -EINVAL; /* a body needs a method that carries one */
    if (req->guard && sb_ssrf_check_url(req->guard, req->url, NULL, 0) < 0)
        return -EACCES;
    return sb_upstream_setup(up, req, timeout_ms, connect_timeout_ms, cbs, arg, out);
}

void sb_upstream_cancel(sb_upstream_t *up, sb_upstream_xfer_t **px)
{
    if (!px || !*px)
        return;
    sb_upstream_xfer_t *x = *px;
    /* Removing an unfinished transfer makes curl close its connection. */
    curl_multi_remove_handle(x->pool->multi, x->easy);
    sb_upstream_xfer_free(x);
    *px = NULL;
}
