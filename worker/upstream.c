/*
 * upstream: libcurl multi on libevent (the curl "hiperfifo" pattern).
 *
 * curl tells us which sockets to watch (on_socket) and when to wake it
 * (on_timer); libevent wakes us and we hand the readiness back with
 * curl_multi_socket_action, then collect finished transfers. curl is never
 * re-entered from its own callbacks: the timer callback only arms a libevent
 * timer, and transfers are removed only from our libevent callbacks.
 */
#include "upstream.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"

/* A socket curl asked us to watch. */
struct sb_upstream_sock {
    sb_upstream_t *up;
    curl_socket_t fd;
    struct event *ev;
    struct sb_upstream_sock *prev, *next;
};

struct sb_upstream_xfer {
    sb_upstream_t *up;
    CURL *easy;
    struct curl_slist *headers;
    char *body; /* curl reads it in place (CURLOPT_POSTFIELDS) */
    sb_upstream_cbs_t cbs;
    void *arg;
    long retry_after;
    bool aborted; /* on_data refused the body */
    int64_t start_us;
    int64_t timeout_ms;
    sb_upstream_xfer_t *prev, *next;
};

struct sb_upstream {
    struct event_base *base;
    CURLM *multi;
    struct event *timer;
    int running;
    size_t active;
    sb_upstream_xfer_t *xfers;
    struct sb_upstream_sock *socks;
};

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
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    free(x->body);
    free(x);
}

static void sb_upstream_sock_free(struct sb_upstream_sock *sk)
{
    sb_upstream_t *up = sk->up;
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
    default:
        return SB_UPSTREAM_FAILED;
    }
}

/* Collects finished transfers and reports them. Runs only from our libevent
 * callbacks, so on_done may start or cancel other transfers. */
static void sb_upstream_check_done(sb_upstream_t *up)
{
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(up->multi, &left))) {
        if (m->msg != CURLMSG_DONE)
            continue;
        CURL *easy = m->easy_handle;
        CURLcode rc = m->data.result;
        sb_upstream_xfer_t *x = NULL;
        curl_easy_getinfo(easy, CURLINFO_PRIVATE, (char **)&x);
        curl_multi_remove_handle(up->multi, easy);
        if (!x)
            continue;
        sb_upstream_result_t res = {.retry_after = x->retry_after, .detail = curl_easy_strerror(rc)};
        res.elapsed_ms = (sb_mono_us() - x->start_us) / 1000;
        curl_easy_getinfo(easy, CURLINFO_RESPONSE_CODE, &res.status);
        res.outcome = sb_upstream_classify(x, rc, res.elapsed_ms);
        x->cbs.on_done(&res, x->arg);
        sb_upstream_xfer_free(x);
    }
}

static void sb_upstream_on_event(evutil_socket_t fd, short what, void *arg)
{
    sb_upstream_t *up = arg;
    int action = ((what & EV_READ) ? CURL_CSELECT_IN : 0) | ((what & EV_WRITE) ? CURL_CSELECT_OUT : 0);
    curl_multi_socket_action(up->multi, fd, action, &up->running);
    sb_upstream_check_done(up);
    /* `running` predates the on_done callbacks, which may have started new
     * transfers (and curl armed the timer for them): keep it then. */
    if (up->running <= 0 && up->active == 0)
        evtimer_del(up->timer);
}

static void sb_upstream_on_timeout(evutil_socket_t fd, short what, void *arg)
{
    sb_upstream_t *up = arg;
    curl_multi_socket_action(up->multi, CURL_SOCKET_TIMEOUT, 0, &up->running);
    sb_upstream_check_done(up);
}

/* CURLMOPT_SOCKETFUNCTION: start, change or stop watching one socket. */
static int sb_upstream_on_socket(CURL *easy, curl_socket_t fd, int what, void *userp, void *socketp)
{
    sb_upstream_t *up = userp;
    struct sb_upstream_sock *sk = socketp;
    if (what == CURL_POLL_REMOVE) {
        if (sk)
            sb_upstream_sock_free(sk);
        return 0;
    }
    short kind = (short)(((what & CURL_POLL_IN) ? EV_READ : 0) | ((what & CURL_POLL_OUT) ? EV_WRITE : 0) | EV_PERSIST);
    if (!sk) {
        sk = sb_xcalloc(1, sizeof *sk);
        sk->up = up;
        sk->fd = fd;
        sk->ev = event_new(up->base, fd, kind, sb_upstream_on_event, up);
        if (!sk->ev) {
            free(sk);
            return -1;
        }
        sk->next = up->socks;
        if (up->socks)
            up->socks->prev = sk;
        up->socks = sk;
        curl_multi_assign(up->multi, fd, sk);
    } else {
        event_del(sk->ev);
        event_assign(sk->ev, up->base, fd, kind, sb_upstream_on_event, up);
    }
    return event_add(sk->ev, NULL) < 0 ? -1 : 0;
}

/* CURLMOPT_TIMERFUNCTION: arm (or disarm, -1) our one timer. */
static int sb_upstream_on_timer(CURLM *multi, long timeout_ms, void *userp)
{
    sb_upstream_t *up = userp;
    if (timeout_ms < 0)
        return evtimer_del(up->timer) < 0 ? -1 : 0;
    struct timeval tv = {.tv_sec = timeout_ms / 1000, .tv_usec = (timeout_ms % 1000) * 1000};
    return evtimer_add(up->timer, &tv) < 0 ? -1 : 0;
}

static size_t sb_upstream_on_write(char *data, size_t size, size_t nmemb, void *userp)
{
    sb_upstream_xfer_t *x = userp;
    size_t len = size * nmemb;
    long status = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
    if (x->cbs.on_data && x->cbs.on_data(status, data, len, x->arg) < 0) {
        x->aborted = true;
        return 0; /* CURLE_WRITE_ERROR */
    }
    return len;
}

/* Picks Retry-After (delta-seconds only; an HTTP-date is ignored) out of the
 * response headers. A new status line (a 1xx before the real response)
 * starts over. */
static size_t sb_upstream_on_header(char *data, size_t size, size_t nmemb, void *userp)
{
    sb_upstream_xfer_t *x = userp;
    size_t len = size * nmemb;
    static const char name[] = "retry-after:";
    if (len >= 5 && !memcmp(data, "HTTP/", 5)) {
        x->retry_after = -1;
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

sb_upstream_t *sb_upstream_new(struct event_base *base)
{
    sb_upstream_t *up = sb_xcalloc(1, sizeof *up);
    up->base = base;
    up->multi = curl_multi_init();
    up->timer = evtimer_new(base, sb_upstream_on_timeout, up);
    if (!up->multi || !up->timer)
        goto fail;
    if (curl_multi_setopt(up->multi, CURLMOPT_SOCKETFUNCTION, sb_upstream_on_socket) != CURLM_OK ||
        curl_multi_setopt(up->multi, CURLMOPT_SOCKETDATA, up) != CURLM_OK ||
        curl_multi_setopt(up->multi, CURLMOPT_TIMERFUNCTION, sb_upstream_on_timer) != CURLM_OK ||
        curl_multi_setopt(up->multi, CURLMOPT_TIMERDATA, up) != CURLM_OK)
        goto fail;
    return up;
fail:
    if (up->multi)
        curl_multi_cleanup(up->multi);
    if (up->timer)
        event_free(up->timer);
    free(up);
    return NULL;
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
    curl_multi_cleanup(up->multi); /* closes pooled connections */
    while (up->socks)              /* in case curl did not say REMOVE for all */
        sb_upstream_sock_free(up->socks);
    event_free(up->timer);
    free(up);
    *pup = NULL;
}

size_t sb_upstream_active(const sb_upstream_t *up)
{
    return up->active;
}

int sb_upstream_start(sb_upstream_t *up, const sb_provider_request_t *req, int64_t timeout_ms,
                      int64_t connect_timeout_ms, const sb_upstream_cbs_t *cbs, void *arg, sb_upstream_xfer_t **out)
{
    *out = NULL;
    if (!req->url || !req->body || timeout_ms <= 0)
        return -EINVAL;
    sb_upstream_xfer_t *x = sb_xcalloc(1, sizeof *x);
    x->up = up;
    x->cbs = *cbs;
    x->arg = arg;
    x->retry_after = -1;
    x->timeout_ms = timeout_ms;
    x->body = sb_xstrndup(req->body, req->body_len);
    x->easy = curl_easy_init();
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
    if (connect_timeout_ms > timeout_ms)
        connect_timeout_ms = timeout_ms;

    CURL *e = x->easy;
    CURLcode rc = CURLE_OK;
#define SB_SETOPT(opt, val)                                                                                            \
    do {                                                                                                               \
        if (rc == CURLE_OK)                                                                                            \
            rc = curl_easy_setopt(e, opt, val);                                                                        \
    } while (0)
    SB_SETOPT(CURLOPT_URL, req->url);
    SB_SETOPT(CURLOPT_PROTOCOLS_STR, "http,https");
    SB_SETOPT(CURLOPT_POST, 1L);
    SB_SETOPT(CURLOPT_POSTFIELDS, x->body);
    SB_SETOPT(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)req->body_len);
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
    if (curl_multi_add_handle(up->multi, e) != CURLM_OK)
        goto fail;
    x->next = up->xfers;
    if (up->xfers)
        up->xfers->prev = x;
    up->xfers = x;
    up->active++;
    *out = x;
    return 0;
fail:
    if (x->easy)
        curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->headers);
    free(x->body);
    free(x);
    return -EIO;
}

void sb_upstream_cancel(sb_upstream_t *up, sb_upstream_xfer_t **px)
{
    if (!px || !*px)
        return;
    sb_upstream_xfer_t *x = *px;
    /* Removing an unfinished transfer makes curl close its connection. */
    curl_multi_remove_handle(up->multi, x->easy);
    sb_upstream_xfer_free(x);
    *px = NULL;
}
