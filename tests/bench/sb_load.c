/*
 * sb_load: the load engine (see sb_load.h for the two modes). One event loop,
 * one bufferevent per connection, the request bytes built once and queued by
 * reference. Latency samples are kept whole and sorted at the end.
 */
#include "sb_load.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"

#define RETRY_MS 10

/* One client connection. */
enum load_conn_state {
    LOAD_CONN_DOWN,       /* no socket; the retry timer reconnects */
    LOAD_CONN_CONNECTING, /* connect() in progress */
    LOAD_CONN_IDLE,       /* connected, nothing in flight */
    LOAD_CONN_BUSY,       /* request written (or being written), reading the response */
};

struct load_conn {
    struct sb_load *L;
    int idx;
    enum load_conn_state state;
    bool in_idle_stack;
    struct bufferevent *bev;
    struct event *retry;
    int64_t origin_us; /* latency origin: send time (closed) or due time (open) */
    struct sb_load_resp resp;
};

struct sb_load {
    const struct sb_load_config *cfg;
    struct event_base *base;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char *request;
    size_t request_len;
    bool head;
    bool open_loop;

    struct load_conn *conns;
    int nconns;
    int *idle; /* stack of idle connection indices (open loop) */
    int nidle;

    int64_t t0, warm_end, end, drain_deadline;
    bool sending_done; /* past the window: no new requests */

    /* open loop schedule: due times of requests not yet sent */
    int64_t *queue;
    size_t qhead, qlen, qcap;
    uint64_t scheduled;
    double interval_us;
    struct event *tick;
    struct event *phase; /* end of window, then drain deadline */

    uint64_t *samples;
    size_t nsamples, samples_cap;
    struct sb_load_result res;
};

static void conn_connect(struct load_conn *c);
static void conn_ready(struct load_conn *c);

static bool in_window(const struct sb_load *L, int64_t t)
{
    return t >= L->warm_end && t < L->end;
}

static void conn_set_state(struct load_conn *c, enum load_conn_state s)
{
    c->state = s;
}

static void maybe_finish(struct sb_load *L)
{
    if (!L->sending_done || L->qlen)
        return;
    for (int i = 0; i < L->nconns; i++)
        if (L->conns[i].state == LOAD_CONN_BUSY)
            return;
    event_base_loopbreak(L->base);
}

static void record(struct sb_load *L, int64_t origin, int status)
{
    if (!in_window(L, origin))
        return;
    int64_t lat = sb_mono_us() - origin;
    if (lat < 0)
        lat = 0;
    if (L->nsamples == L->samples_cap) {
        L->samples_cap = L->samples_cap ? L->samples_cap * 2 : 65536;
        L->samples = sb_xrealloc(L->samples, L->samples_cap * sizeof *L->samples);
    }
    L->samples[L->nsamples++] = (uint64_t)lat;
    L->res.count++;
    if (status >= 200 && status < 300)
        L->res.ok++;
    else
        L->res.non2xx++;
    if (status >= 100 && status < 600)
        L->res.status[status / 100]++;
}

static void conn_close(struct load_conn *c)
{
    if (c->bev) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    conn_set_state(c, LOAD_CONN_DOWN);
}

static void conn_retry_later(struct load_conn *c)
{
    conn_close(c);
    struct timeval tv = {0, RETRY_MS * 1000};
    evtimer_add(c->retry, &tv);
}

/* The request in flight failed without a response. */
static void conn_fail(struct load_conn *c, const char *why)
{
    struct sb_load *L = c->L;
    if (c->state == LOAD_CONN_BUSY) {
        if (in_window(L, c->origin_us))
            L->res.errors++;
        sb_debug("sb-load: request failed on connection %d: %s", c->idx, why);
        conn_close(c);
        conn_connect(c);
    } else if (c->state == LOAD_CONN_CONNECTING) {
        if (!L->open_loop && !L->sending_done && in_window(L, sb_mono_us()))
            L->res.errors++;
        sb_debug("sb-load: connect failed on connection %d: %s", c->idx, why);
        conn_retry_later(c);
    } else {
        conn_close(c); /* idle keep-alive closed by the server */
        conn_connect(c);
    }
    maybe_finish(L);
}

static void conn_send(struct load_conn *c, int64_t origin)
{
    struct sb_load *L = c->L;
    c->origin_us = origin;
    sb_load_resp_reset(&c->resp, L->head);
    conn_set_state(c, LOAD_CONN_BUSY);
    double t = L->cfg->timeout_s;
    struct timeval tv = {(time_t)t, (suseconds_t)((t - floor(t)) * 1e6)};
    bufferevent_set_timeouts(c->bev, &tv, NULL);
    evbuffer_add_reference(bufferevent_get_output(c->bev), L->request, L->request_len, NULL, NULL);
}

static void idle_push(struct load_conn *c)
{
    struct sb_load *L = c->L;
    if (c->in_idle_stack)
        return;
    c->in_idle_stack = true;
    L->idle[L->nidle++] = c->idx;
}

static int64_t queue_pop(struct sb_load *L)
{
    int64_t t = L->queue[L->qhead];
    L->qhead = (L->qhead + 1) % L->qcap;
    L->qlen--;
    return t;
}

static void queue_push(struct sb_load *L, int64_t due)
{
    if (L->qlen == L->qcap) {
        size_t cap = L->qcap ? L->qcap * 2 : 1024;
        int64_t *q = sb_xmalloc(cap * sizeof *q);
        for (size_t i = 0; i < L->qlen; i++)
            q[i] = L->queue[(L->qhead + i) % L->qcap];
        free(L->queue);
        L->queue = q;
        L->qcap = cap;
        L->qhead = 0;
    }
    L->queue[(L->qhead + L->qlen) % L->qcap] = due;
    L->qlen++;
}

/* Open loop: hand due requests to idle connections. */
static void dispatch(struct sb_load *L)
{
    while (L->qlen && L->nidle) {
        struct load_conn *c = &L->conns[L->idle[--L->nidle]];
        c->in_idle_stack = false;
        if (c->state != LOAD_CONN_IDLE)
            continue;
        conn_send(c, queue_pop(L));
    }
}

/* A connection has nothing in flight: give it work or park it. */
static void conn_ready(struct load_conn *c)
{
    struct sb_load *L = c->L;
    conn_set_state(c, LOAD_CONN_IDLE);
    bufferevent_set_timeouts(c->bev, NULL, NULL);
    if (L->open_loop) {
        idle_push(c);
        dispatch(L);
    } else if (!L->sending_done && sb_mono_us() < L->end) {
        conn_send(c, sb_mono_us());
    }
    maybe_finish(L);
}

static void on_response(struct load_conn *c)
{
    struct sb_load *L = c->L;
    record(L, c->origin_us, c->resp.status);
    if (!c->resp.keep_alive) {
        conn_close(c);
        conn_connect(c);
        maybe_finish(L);
        return;
    }
    conn_ready(c);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct load_conn *c = arg;
    struct evbuffer *in = bufferevent_get_input(bev);
    if (c->state != LOAD_CONN_BUSY) {
        evbuffer_drain(in, evbuffer_get_length(in));
        conn_fail(c, "unsolicited data");
        return;
    }
    enum sb_load_parse p = sb_load_resp_feed(&c->resp, in);
    if (p == SB_LOAD_ERROR) {
        conn_fail(c, "malformed response");
        return;
    }
    if (p == SB_LOAD_DONE) {
        if (evbuffer_get_length(in)) {
            record(c->L, c->origin_us, c->resp.status);
            conn_set_state(c, LOAD_CONN_IDLE);
            conn_fail(c, "bytes after the response");
            return;
        }
        on_response(c);
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct load_conn *c = arg;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        evutil_socket_t fd = bufferevent_getfd(bev);
        if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
            sb_debug("sb-load: TCP_NODELAY: %s", strerror(errno));
        conn_ready(c);
        return;
    }
    if ((what & BEV_EVENT_EOF) && c->state == LOAD_CONN_BUSY) {
        /* Data may still sit in the input buffer when EOF arrives. */
        enum sb_load_parse p = sb_load_resp_feed(&c->resp, bufferevent_get_input(bev));
        if (p == SB_LOAD_AGAIN)
            p = sb_load_resp_eof(&c->resp);
        if (p == SB_LOAD_DONE) {
            record(c->L, c->origin_us, c->resp.status);
            conn_set_state(c, LOAD_CONN_IDLE);
            conn_fail(c, "closed after response");
            return;
        }
    }
    conn_fail(c, (what & BEV_EVENT_TIMEOUT) ? "timeout"
                 : (what & BEV_EVENT_EOF)   ? "connection closed"
                                            : "socket error");
}

static void conn_connect(struct load_conn *c)
{
    struct sb_load *L = c->L;
    c->bev = bufferevent_socket_new(L->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (!c->bev) {
        conn_retry_later(c);
        return;
    }
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    conn_set_state(c, LOAD_CONN_CONNECTING);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&L->addr, (int)L->addrlen) < 0) {
        /* libevent already freed nothing; the error callback may not run */
        if (!L->open_loop && in_window(L, sb_mono_us()))
            L->res.errors++;
        conn_retry_later(c);
    }
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct load_conn *c = arg;
    if (c->state == LOAD_CONN_DOWN)
        conn_connect(c);
}

static void arm_us(struct event *ev, int64_t us)
{
    if (us < 0)
        us = 0;
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    evtimer_add(ev, &tv);
}

/* Open loop: queue every request that is due, then re-arm for the next one. */
static void on_tick(evutil_socket_t fd, short what, void *arg)
{
    struct sb_load *L = arg;
    int64_t now = sb_mono_us();
    for (;;) {
        int64_t due = L->t0 + (int64_t)llround((double)L->scheduled * L->interval_us);
        if (due >= L->end) {
            L->sending_done = true;
            break;
        }
        if (due > now) {
            arm_us(L->tick, due - now);
            break;
        }
        queue_push(L, due);
        L->scheduled++;
    }
    dispatch(L);
    maybe_finish(L);
}

/* End of the window (closed loop stops sending), then the drain deadline. */
static void on_phase(evutil_socket_t fd, short what, void *arg)
{
    struct sb_load *L = arg;
    int64_t now = sb_mono_us();
    if (now < L->drain_deadline) {
        L->sending_done = true;
        arm_us(L->phase, L->drain_deadline - now);
        maybe_finish(L);
        return;
    }
    /* Deadline: whatever is still in flight or queued failed. */
    for (int i = 0; i < L->nconns; i++)
        if (L->conns[i].state == LOAD_CONN_BUSY && in_window(L, L->conns[i].origin_us))
            L->res.errors++;
    while (L->qlen)
        if (in_window(L, queue_pop(L)))
            L->res.errors++;
    event_base_loopbreak(L->base);
}

static int resolve(struct sb_load *L)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char port[16];
    snprintf(port, sizeof port, "%d", L->cfg->port);
    int rc = getaddrinfo(L->cfg->host, port, &hints, &ai);
    if (rc != 0 || !ai) {
        sb_error("sb-load: cannot resolve %s: %s", L->cfg->host, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    memcpy(&L->addr, ai->ai_addr, ai->ai_addrlen);
    L->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static void build_request(struct sb_load *L)
{
    const struct sb_load_config *cfg = L->cfg;
    const char *method = cfg->method ? cfg->method : (cfg->body ? "POST" : "GET");
    L->head = !strcasecmp(method, "HEAD");
    bool have_host = false;
    for (size_t i = 0; i < cfg->nheaders; i++)
        if (!strncasecmp(cfg->headers[i], "Host:", 5))
            have_host = true;
    char *req = sb_xasprintf("%s %s HTTP/1.1\r\n", method, cfg->path);
    if (!have_host) {
        char *r2 = sb_xasprintf("%sHost: %s:%d\r\n", req, cfg->host, cfg->port);
        free(req);
        req = r2;
    }
    for (size_t i = 0; i < cfg->nheaders; i++) {
        char *r2 = sb_xasprintf("%s%s\r\n", req, cfg->headers[i]);
        free(req);
        req = r2;
    }
    char *r2 =
        cfg->body ? sb_xasprintf("%sContent-Length: %zu\r\n\r\n", req, cfg->body_len) : sb_xasprintf("%s\r\n", req);
    free(req);
    size_t hl = strlen(r2);
    L->request_len = hl + (cfg->body ? cfg->body_len : 0);
    L->request = sb_xmalloc(L->request_len + 1);
    memcpy(L->request, r2, hl);
    if (cfg->body)
        memcpy(L->request + hl, cfg->body, cfg->body_len);
    L->request[L->request_len] = '\0';
    free(r2);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t sb_load_percentile(const uint64_t *sorted, size_t n, double p)
{
    if (n == 0)
        return 0;
    double rank = ceil(p / 100.0 * (double)n - 1e-9); /* 99.9% of 1000 is 999, not 1000 */
    size_t idx = rank < 1 ? 0 : (size_t)rank - 1;
    if (idx >= n)
        idx = n - 1;
    return sorted[idx];
}

static void summarise(struct sb_load *L, struct sb_load_result *out)
{
    struct sb_load_result *r = &L->res;
    r->elapsed_s = L->cfg->duration_s;
    r->rps = r->elapsed_s > 0 ? (double)r->count / r->elapsed_s : 0;
    if (L->nsamples) {
        qsort(L->samples, L->nsamples, sizeof *L->samples, cmp_u64);
        double sum = 0;
        for (size_t i = 0; i < L->nsamples; i++)
            sum += (double)L->samples[i];
        r->mean_us = sum / (double)L->nsamples;
        r->min_us = L->samples[0];
        r->max_us = L->samples[L->nsamples - 1];
        r->p50_us = sb_load_percentile(L->samples, L->nsamples, 50);
        r->p90_us = sb_load_percentile(L->samples, L->nsamples, 90);
        r->p99_us = sb_load_percentile(L->samples, L->nsamples, 99);
        r->p999_us = sb_load_percentile(L->samples, L->nsamples, 99.9);
    }
    *out = *r;
}

int sb_load_run(const struct sb_load_config *cfg, struct sb_load_result *out)
{
    int rc = -EINVAL;
    memset(out, 0, sizeof *out);
    struct sb_load *L = sb_xcalloc(1, sizeof *L);
    L->cfg = cfg;
    L->open_loop = cfg->rate > 0;
    L->nconns = L->open_loop ? cfg->connections : cfg->concurrency;
    if (L->nconns <= 0 || cfg->duration_s <= 0 || cfg->timeout_s <= 0 || cfg->warmup_s < 0)
        goto fail;
    rc = resolve(L);
    if (rc < 0)
        goto fail;
    build_request(L);

    struct event_config *ec = event_config_new();
    if (ec) {
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        L->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    rc = -ENOMEM;
    if (!L->base)
        goto fail;

    L->conns = sb_xcalloc((size_t)L->nconns, sizeof *L->conns);
    L->idle = sb_xcalloc((size_t)L->nconns, sizeof *L->idle);
    L->t0 = sb_mono_us();
    L->warm_end = L->t0 + (int64_t)(cfg->warmup_s * 1e6);
    L->end = L->warm_end + (int64_t)(cfg->duration_s * 1e6);
    L->drain_deadline = L->end + (int64_t)(cfg->timeout_s * 1e6);
    L->phase = evtimer_new(L->base, on_phase, L);
    arm_us(L->phase, L->end - L->t0);
    for (int i = 0; i < L->nconns; i++) {
        struct load_conn *c = &L->conns[i];
        c->L = L;
        c->idx = i;
        c->retry = evtimer_new(L->base, on_retry, c);
        conn_connect(c);
    }
    if (L->open_loop) {
        L->interval_us = 1e6 / cfg->rate;
        L->tick = evtimer_new(L->base, on_tick, L);
        arm_us(L->tick, 0);
    }
    event_base_dispatch(L->base);
    summarise(L, out);
    rc = 0;

fail:
    if (L->conns) {
        for (int i = 0; i < L->nconns; i++) {
            if (L->conns[i].bev)
                bufferevent_free(L->conns[i].bev);
            if (L->conns[i].retry)
                event_free(L->conns[i].retry);
        }
    }
    if (L->tick)
        event_free(L->tick);
    if (L->phase)
        event_free(L->phase);
    if (L->base)
        event_base_free(L->base);
    free(L->conns);
    free(L->idle);
    free(L->queue);
    free(L->samples);
    free(L->request);
    free(L);
    return rc;
}

int sb_load_parse_url(const char *url, struct sb_load_config *cfg)
{
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0)
        return -EINVAL;
    p += 7;
    const char *slash = strchr(p, '/');
    size_t hostport_len = slash ? (size_t)(slash - p) : strlen(p);
    const char *path = slash ? slash : "/";
    if (strlen(path) >= sizeof cfg->path || hostport_len == 0)
        return -EINVAL;
    const char *host = p;
    size_t host_len = hostport_len;
    const char *port = NULL;
    if (host[0] == '[') {
        const char *rb = memchr(host, ']', hostport_len);
        if (!rb)
            return -EINVAL;
        host_len = (size_t)(rb - host - 1);
        host++;
        if (rb + 1 < p + hostport_len) {
            if (rb[1] != ':')
                return -EINVAL;
            port = rb + 2;
        }
    } else {
        const char *colon = memchr(host, ':', hostport_len);
        if (colon) {
            host_len = (size_t)(colon - host);
            port = colon + 1;
        }
    }
    if (host_len == 0 || host_len >= sizeof cfg->host)
        return -EINVAL;
    memcpy(cfg->host, host, host_len);
    cfg->host[host_len] = '\0';
    cfg->port = 80;
    if (port) {
        size_t plen = (size_t)(p + hostport_len - port);
        char buf[8];
        if (plen == 0 || plen >= sizeof buf)
            return -EINVAL;
        memcpy(buf, port, plen);
        buf[plen] = '\0';
        char *end = NULL;
        long v = strtol(buf, &end, 10);
        if (*end || v <= 0 || v > 65535)
            return -EINVAL;
        cfg->port = (int)v;
    }
    snprintf(cfg->path, sizeof cfg->path, "%s", path);
    return 0;
}
