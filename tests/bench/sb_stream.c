/*
 * sb_stream: the streaming benchmark's two runs (see sb_stream.h): one event
 * loop, one bufferevent per connection, the request bytes built once and
 * queued by reference. Each read is timestamped once; the body bytes it
 * completes go through the HTTP decoder and the SSE splitter, and every event
 * they finish carries that timestamp.
 */
#include "sb_stream.h"

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
#include "sb_load.h"
#include "sb_log.h"
#include "sb_time.h"

#define RETRY_MS 10
#define OPEN_TICK_US 10000  /* hold: streams are opened in batches this often */
#define CHECK_TICK_US 50000 /* hold: deadlines are checked this often */

/* One client connection. */
enum stream_conn_state {
    STREAM_CONN_DOWN,       /* no socket: not opened yet, or waiting to reconnect */
    STREAM_CONN_CONNECTING, /* connect() in progress; the request goes out when it completes */
    STREAM_CONN_IDLE,       /* latency: connected, nothing in flight */
    STREAM_CONN_STREAMING,  /* request written, reading the streamed response */
    STREAM_CONN_FINISHED,   /* nothing more to do (socket closed) */
};

/* Hold run: what became of a stream's first content delta. */
enum stream_first {
    STREAM_FIRST_PENDING, /* not yet */
    STREAM_FIRST_OK,      /* arrived before the deadline */
    STREAM_FIRST_LATE,    /* the deadline passed first */
    STREAM_FIRST_FAILED,  /* the stream failed first */
};

struct stream_run;

struct stream_conn {
    struct stream_run *R;
    enum stream_conn_state state;
    struct bufferevent *bev;
    struct event *retry;
    bool recorded; /* latency: the request in flight counts (not warmup) */
    struct sb_stream_resp resp;
    struct sb_stream_sse sse;
    struct evbuffer *body;
    struct sb_stream_timing timing;
    int64_t now_us; /* when the read being processed was taken */
    bool saw_end;   /* the style's end marker arrived */
    bool saw_error; /* an error event (or bad event data) arrived */
    enum stream_first first;
};

struct stream_run {
    const struct sb_stream_config *cfg;
    bool hold;
    struct event_base *base;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    char *request;
    size_t request_len;
    struct stream_conn *conns;
    int nconns;

    /* latency */
    int next_req, total_reqs;
    int unfinished; /* connections not FINISHED */
    int64_t rec_start_us;

    /* hold */
    int opened, resolved;
    int64_t t0;
    struct event *open_tick, *check_tick, *hold_end;
    bool measured;

    struct sb_stream_samples ttft, gaps, total, tail;
    struct sb_stream_result res;
};

static void conn_connect(struct stream_conn *c);
static void conn_next(struct stream_conn *c);

static void conn_set_state(struct stream_conn *c, enum stream_conn_state s)
{
    c->state = s;
}

static void arm_us(struct event *ev, int64_t us)
{
    if (us < 0)
        us = 0;
    struct timeval tv = {(time_t)(us / 1000000), (suseconds_t)(us % 1000000)};
    evtimer_add(ev, &tv);
}

static void conn_close(struct stream_conn *c)
{
    if (c->bev) {
        bufferevent_free(c->bev);
        c->bev = NULL;
    }
    conn_set_state(c, STREAM_CONN_DOWN);
}

static void run_stop(struct stream_run *R)
{
    event_base_loopbreak(R->base);
}

/* ---- outcomes ------------------------------------------------------------------------------ */

/* Counts a failed request or stream under exactly one reason. */
static void count_failure(struct stream_run *R, struct stream_conn *c, bool transport)
{
    struct sb_stream_result *r = &R->res;
    r->failed++;
    if (!transport && c->resp.status && c->resp.status != 200) {
        r->non200++;
        r->last_bad_status = c->resp.status;
    } else if (c->saw_error) {
        r->error_events++;
    } else if (transport) {
        r->errors++;
    } else {
        r->bad_deltas++;
    }
}

static void count_ok_shape(struct stream_run *R, struct stream_conn *c)
{
    struct sb_stream_result *r = &R->res;
    if (!c->resp.event_stream)
        r->not_sse++;
    if (r->ok == 1 || c->timing.deltas < r->deltas_min)
        r->deltas_min = c->timing.deltas;
    if (c->timing.deltas > r->deltas_max)
        r->deltas_max = c->timing.deltas;
}

/* Hold: reads RSS once every stream is resolved, then holds or stops. */
static void hold_maybe_measure(struct stream_run *R)
{
    if (R->measured || R->opened < R->nconns || R->resolved < R->nconns)
        return;
    R->measured = true;
    const struct sb_stream_config *cfg = R->cfg;
    for (size_t i = 0; i < cfg->nrss && i < SB_STREAM_MAX_RSS; i++)
        R->res.rss_kib[i] = sb_stream_rss_kib(cfg->rss_pids[i]);
    R->res.elapsed_s = (double)(sb_mono_us() - R->t0) / 1e6;
    for (int i = 0; i < R->nconns; i++)
        if (R->conns[i].state == STREAM_CONN_STREAMING || R->conns[i].state == STREAM_CONN_CONNECTING)
            R->res.alive++;
    if (cfg->hold_s > 0)
        arm_us(R->hold_end, (int64_t)(cfg->hold_s * 1e6));
    else
        run_stop(R);
}

static void hold_resolve(struct stream_conn *c, enum stream_first how)
{
    struct stream_run *R = c->R;
    if (c->first != STREAM_FIRST_PENDING)
        return;
    c->first = how;
    R->resolved++;
    if (how == STREAM_FIRST_OK) {
        R->res.ok++;
        sb_stream_samples_push(&R->ttft, sb_stream_timing_ttft(&c->timing));
        count_ok_shape(R, c);
    } else if (how == STREAM_FIRST_LATE) {
        R->res.late++;
    }
    hold_maybe_measure(R);
}

/* Hold: the stream ended (or was refused); its socket closes. */
static void hold_done(struct stream_conn *c)
{
    conn_close(c); /* first: resolving the last stream counts those still open */
    conn_set_state(c, STREAM_CONN_FINISHED);
    if (c->first == STREAM_FIRST_PENDING) {
        count_failure(c->R, c, false);
        hold_resolve(c, STREAM_FIRST_FAILED);
    }
}

/* Latency: the response in flight ended (DONE, or EOF that ends it). */
static void latency_finish(struct stream_conn *c)
{
    struct stream_run *R = c->R;
    const struct sb_stream_config *cfg = R->cfg;
    if (c->recorded) {
        bool good = c->resp.status == 200 && !c->saw_error && c->timing.deltas > 0 &&
                    (cfg->expect_deltas <= 0 || c->timing.deltas == (size_t)cfg->expect_deltas);
        if (good) {
            R->res.ok++;
            sb_stream_samples_push(&R->ttft, sb_stream_timing_ttft(&c->timing));
            sb_stream_samples_append(&R->gaps, &c->timing.gaps);
            int64_t total = c->now_us - c->timing.start_us, tail = c->now_us - c->timing.last_us;
            sb_stream_samples_push(&R->total, total > 0 ? (uint64_t)total : 0);
            sb_stream_samples_push(&R->tail, tail > 0 ? (uint64_t)tail : 0);
            if (!c->saw_end && cfg->style != SB_STREAM_GEMINI)
                R->res.unterminated++;
            count_ok_shape(R, c);
        } else {
            count_failure(R, c, false);
        }
    }
    c->recorded = false;
}

/* ---- events of one stream ------------------------------------------------------------------- */

static int on_sse_event(void *arg, const char *type, const char *data, size_t len)
{
    struct stream_conn *c = arg;
    switch (sb_stream_classify(c->R->cfg->style, type, data, len)) {
    case SB_STREAM_EV_DELTA:
        sb_stream_timing_delta(&c->timing, c->now_us);
        if (c->R->hold && c->timing.deltas == 1) {
            int64_t due = c->timing.start_us + (int64_t)(c->R->cfg->first_timeout_s * 1e6);
            hold_resolve(c, c->now_us <= due ? STREAM_FIRST_OK : STREAM_FIRST_LATE);
        }
        break;
    case SB_STREAM_EV_END:
        c->saw_end = true;
        break;
    case SB_STREAM_EV_ERROR:
        c->saw_error = true;
        break;
    case SB_STREAM_EV_OTHER:
        break;
    }
    return 0;
}

/* Hands the decoded body bytes to the SSE splitter (200 responses only). A
 * held stream whose first delta is settled is only drained: the client's own
 * CPU should go to opening streams, not to parsing JSON nobody reads. */
static int drain_body(struct stream_conn *c)
{
    int rc = 0;
    if (c->resp.status == 200 && !(c->R->hold && c->first != STREAM_FIRST_PENDING)) {
        int n = evbuffer_peek(c->body, -1, NULL, NULL, 0);
        if (n > 0) {
            struct evbuffer_iovec stackv[16];
            struct evbuffer_iovec *v = n <= 16 ? stackv : sb_xmalloc((size_t)n * sizeof *v);
            evbuffer_peek(c->body, -1, NULL, v, n);
            for (int i = 0; i < n && rc >= 0; i++)
                rc = sb_stream_sse_feed(&c->sse, v[i].iov_base, v[i].iov_len, on_sse_event, c);
            if (v != stackv)
                free(v);
        }
    }
    evbuffer_drain(c->body, evbuffer_get_length(c->body));
    return rc < 0 ? rc : 0;
}

static void conn_send(struct stream_conn *c, bool restart_clock)
{
    struct stream_run *R = c->R;
    sb_stream_resp_reset(&c->resp);
    sb_stream_sse_reset(&c->sse);
    evbuffer_drain(c->body, evbuffer_get_length(c->body));
    c->saw_end = c->saw_error = false;
    if (restart_clock)
        sb_stream_timing_start(&c->timing, sb_mono_us());
    conn_set_state(c, STREAM_CONN_STREAMING);
    if (!R->hold) {
        double t = R->cfg->timeout_s;
        struct timeval tv = {(time_t)t, (suseconds_t)((t - floor(t)) * 1e6)};
        bufferevent_set_timeouts(c->bev, &tv, NULL);
    }
    evbuffer_add_reference(bufferevent_get_output(c->bev), R->request, R->request_len, NULL, NULL);
}

/* The connection broke (or was refused) with or without a request in flight. */
static void conn_fail(struct stream_conn *c, const char *why)
{
    struct stream_run *R = c->R;
    sb_debug("sb-stream: connection failed: %s", why);
    bool streaming = c->state == STREAM_CONN_STREAMING;
    bool connecting = c->state == STREAM_CONN_CONNECTING;
    conn_close(c);
    if (R->hold) {
        conn_set_state(c, STREAM_CONN_FINISHED);
        if (c->first == STREAM_FIRST_PENDING) {
            count_failure(R, c, true);
            hold_resolve(c, STREAM_FIRST_FAILED);
        }
        return;
    }
    if (streaming && c->recorded)
        count_failure(R, c, true);
    c->recorded = false;
    if (connecting) {
        /* A refused connect uses up a request, so a dead server ends the run. */
        if (R->next_req >= R->total_reqs) {
            conn_next(c); /* finishes the connection */
            return;
        }
        if (R->next_req++ >= R->cfg->warmup) {
            R->res.started++;
            R->res.failed++;
            R->res.errors++;
        }
        struct timeval tv = {0, RETRY_MS * 1000};
        evtimer_add(c->retry, &tv);
        return;
    }
    conn_connect(c);
}

/* Latency: the connection is free; start its next request or finish it. */
static void conn_next(struct stream_conn *c)
{
    struct stream_run *R = c->R;
    if (R->next_req >= R->total_reqs) {
        conn_close(c);
        conn_set_state(c, STREAM_CONN_FINISHED);
        if (--R->unfinished == 0) {
            R->res.elapsed_s = R->rec_start_us ? (double)(sb_mono_us() - R->rec_start_us) / 1e6 : 0;
            run_stop(R);
        }
        return;
    }
    int idx = R->next_req++;
    c->recorded = idx >= R->cfg->warmup;
    if (c->recorded) {
        R->res.started++;
        if (!R->rec_start_us)
            R->rec_start_us = sb_mono_us();
    }
    conn_send(c, true);
}

static void on_read(struct bufferevent *bev, void *arg)
{
    struct stream_conn *c = arg;
    struct stream_run *R = c->R;
    struct evbuffer *in = bufferevent_get_input(bev);
    c->now_us = sb_mono_us();
    if (c->state != STREAM_CONN_STREAMING) {
        evbuffer_drain(in, evbuffer_get_length(in));
        conn_fail(c, "unsolicited data");
        return;
    }
    enum sb_stream_parse p = sb_stream_resp_feed(&c->resp, in, c->body);
    if (drain_body(c) < 0)
        p = SB_STREAM_ERROR;
    if (p == SB_STREAM_ERROR) {
        conn_fail(c, "malformed response");
        return;
    }
    if (R->hold) {
        /* A refusal is final: there is no first delta to wait for. */
        if (p == SB_STREAM_DONE || (c->resp.status && c->resp.status != 200))
            hold_done(c);
        return;
    }
    if (p == SB_STREAM_DONE) {
        latency_finish(c);
        if (evbuffer_get_length(in) || !c->resp.keep_alive) {
            conn_close(c);
            conn_connect(c);
        } else {
            conn_set_state(c, STREAM_CONN_IDLE);
            bufferevent_set_timeouts(c->bev, NULL, NULL);
            conn_next(c);
        }
    }
}

static void on_event(struct bufferevent *bev, short what, void *arg)
{
    struct stream_conn *c = arg;
    struct stream_run *R = c->R;
    if (what & BEV_EVENT_CONNECTED) {
        int one = 1;
        if (setsockopt(bufferevent_getfd(bev), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
            sb_debug("sb-stream: TCP_NODELAY: %s", strerror(errno));
        if (R->hold) {
            conn_send(c, false); /* the clock started at the connect */
        } else {
            conn_set_state(c, STREAM_CONN_IDLE);
            conn_next(c);
        }
        return;
    }
    if ((what & BEV_EVENT_EOF) && c->state == STREAM_CONN_STREAMING) {
        /* Data may still sit in the input buffer when EOF arrives. */
        c->now_us = sb_mono_us();
        enum sb_stream_parse p = sb_stream_resp_feed(&c->resp, bufferevent_get_input(bev), c->body);
        if (drain_body(c) < 0)
            p = SB_STREAM_ERROR;
        if (p == SB_STREAM_AGAIN)
            p = sb_stream_resp_eof(&c->resp);
        if (p == SB_STREAM_DONE && R->hold) {
            hold_done(c);
            return;
        }
        if (p == SB_STREAM_DONE) {
            latency_finish(c);
            conn_close(c);
            conn_connect(c);
            return;
        }
    }
    conn_fail(c, (what & BEV_EVENT_TIMEOUT) ? "timeout"
                 : (what & BEV_EVENT_EOF)   ? "connection closed"
                                            : "socket error");
}

static void conn_connect(struct stream_conn *c)
{
    struct stream_run *R = c->R;
    c->bev = bufferevent_socket_new(R->base, -1, BEV_OPT_CLOSE_ON_FREE);
    conn_set_state(c, STREAM_CONN_CONNECTING);
    if (!c->bev) {
        conn_fail(c, "no bufferevent");
        return;
    }
    bufferevent_setcb(c->bev, on_read, NULL, on_event, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(c->bev, (struct sockaddr *)&R->addr, (int)R->addrlen) < 0)
        conn_fail(c, "connect failed");
}

static void on_retry(evutil_socket_t fd, short what, void *arg)
{
    struct stream_conn *c = arg;
    if (c->state == STREAM_CONN_DOWN)
        conn_connect(c);
}

/* ---- hold run timers ---------------------------------------------------------------------------- */

/* Opens the streams that are due by now at cfg->open_rate. */
static void on_open_tick(evutil_socket_t fd, short what, void *arg)
{
    struct stream_run *R = arg;
    int64_t now = sb_mono_us();
    double due = (double)(now - R->t0) / 1e6 * R->cfg->open_rate + 1;
    int want = due >= R->nconns ? R->nconns : (int)due;
    while (R->opened < want) {
        struct stream_conn *c = &R->conns[R->opened++];
        sb_stream_timing_start(&c->timing, sb_mono_us());
        conn_connect(c);
    }
    if (R->opened < R->nconns) {
        arm_us(R->open_tick, OPEN_TICK_US);
    } else {
        R->res.open_s = (double)(sb_mono_us() - R->t0) / 1e6;
        hold_maybe_measure(R);
    }
}

/* Streams whose first delta is overdue are late. */
static void on_check_tick(evutil_socket_t fd, short what, void *arg)
{
    struct stream_run *R = arg;
    int64_t now = sb_mono_us(), limit = (int64_t)(R->cfg->first_timeout_s * 1e6);
    for (int i = 0; i < R->opened && !R->measured; i++) {
        struct stream_conn *c = &R->conns[i];
        if (c->first == STREAM_FIRST_PENDING && now - c->timing.start_us > limit)
            hold_resolve(c, STREAM_FIRST_LATE);
    }
    if (!R->measured)
        arm_us(R->check_tick, CHECK_TICK_US);
}

static void on_hold_end(evutil_socket_t fd, short what, void *arg)
{
    run_stop(arg);
}

/* ---- setup ----------------------------------------------------------------------------------------- */

static int resolve(struct stream_run *R, const char *host, int port)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai = NULL;
    char portstr[16];
    snprintf(portstr, sizeof portstr, "%d", port);
    int rc = getaddrinfo(host, portstr, &hints, &ai);
    if (rc != 0 || !ai) {
        sb_error("sb-stream: cannot resolve %s: %s", host, gai_strerror(rc));
        return -EHOSTUNREACH;
    }
    memcpy(&R->addr, ai->ai_addr, ai->ai_addrlen);
    R->addrlen = ai->ai_addrlen;
    freeaddrinfo(ai);
    return 0;
}

static bool has_header(const struct sb_stream_config *cfg, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < cfg->nheaders; i++)
        if (!strncasecmp(cfg->headers[i], name, n) && cfg->headers[i][n] == ':')
            return true;
    return false;
}

static void build_request(struct stream_run *R, const struct sb_load_config *url)
{
    const struct sb_stream_config *cfg = R->cfg;
    char *req = sb_xasprintf("POST %s HTTP/1.1\r\n", url->path);
    char *r2;
    if (!has_header(cfg, "Host")) {
        r2 = sb_xasprintf("%sHost: %s:%d\r\n", req, url->host, url->port);
        free(req);
        req = r2;
    }
    if (!has_header(cfg, "Content-Type")) {
        r2 = sb_xasprintf("%sContent-Type: application/json\r\n", req);
        free(req);
        req = r2;
    }
    if (!has_header(cfg, "Accept")) {
        r2 = sb_xasprintf("%sAccept: text/event-stream\r\n", req);
        free(req);
        req = r2;
    }
    for (size_t i = 0; i < cfg->nheaders; i++) {
        r2 = sb_xasprintf("%s%s\r\n", req, cfg->headers[i]);
        free(req);
        req = r2;
    }
    r2 = sb_xasprintf("%sContent-Length: %zu\r\n\r\n", req, cfg->body_len);
    free(req);
    size_t hl = strlen(r2);
    R->request_len = hl + cfg->body_len;
    R->request = sb_xmalloc(R->request_len + 1);
    memcpy(R->request, r2, hl);
    if (cfg->body_len)
        memcpy(R->request + hl, cfg->body, cfg->body_len);
    R->request[R->request_len] = '\0';
    free(r2);
}

long sb_stream_rss_kib(int pid)
{
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%d/status", pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    long kib = -1;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "VmRSS:", 6)) {
            char *end = NULL;
            long v = strtol(line + 6, &end, 10);
            if (end != line + 6 && v >= 0)
                kib = v;
            break;
        }
    }
    fclose(f);
    return kib;
}

static int check_config(const struct sb_stream_config *cfg)
{
    if (!cfg->url || (!cfg->body && cfg->body_len) || cfg->timeout_s <= 0 || cfg->nrss > SB_STREAM_MAX_RSS)
        return -EINVAL;
    if (cfg->streams > 0)
        return cfg->open_rate > 0 && cfg->first_timeout_s > 0 && cfg->hold_s >= 0 ? 0 : -EINVAL;
    return cfg->requests > 0 && cfg->warmup >= 0 && cfg->concurrency > 0 ? 0 : -EINVAL;
}

int sb_stream_run(const struct sb_stream_config *cfg, struct sb_stream_result *out)
{
    memset(out, 0, sizeof *out);
    int rc = check_config(cfg);
    if (rc < 0)
        return rc;
    struct sb_load_config url;
    memset(&url, 0, sizeof url);
    if (sb_load_parse_url(cfg->url, &url) < 0)
        return -EINVAL;

    struct stream_run *R = sb_xcalloc(1, sizeof *R);
    R->cfg = cfg;
    R->hold = cfg->streams > 0;
    rc = resolve(R, url.host, url.port);
    if (rc < 0)
        goto fail;
    build_request(R, &url);

    rc = -ENOMEM;
    struct event_config *ec = event_config_new();
    if (ec) {
        event_config_set_flag(ec, EVENT_BASE_FLAG_PRECISE_TIMER);
        R->base = event_base_new_with_config(ec);
        event_config_free(ec);
    }
    if (!R->base)
        goto fail;

    R->nconns = R->hold ? cfg->streams : cfg->concurrency;
    R->conns = sb_xcalloc((size_t)R->nconns, sizeof *R->conns);
    for (int i = 0; i < R->nconns; i++) {
        struct stream_conn *c = &R->conns[i];
        c->R = R;
        c->retry = evtimer_new(R->base, on_retry, c);
        c->body = evbuffer_new();
        if (!c->retry || !c->body)
            goto fail;
        sb_stream_sse_init(&c->sse);
    }
    R->t0 = sb_mono_us();
    if (R->hold) {
        R->open_tick = evtimer_new(R->base, on_open_tick, R);
        R->check_tick = evtimer_new(R->base, on_check_tick, R);
        R->hold_end = evtimer_new(R->base, on_hold_end, R);
        if (!R->open_tick || !R->check_tick || !R->hold_end)
            goto fail;
        arm_us(R->open_tick, 0);
        arm_us(R->check_tick, CHECK_TICK_US);
        R->res.started = (uint64_t)cfg->streams;
    } else {
        R->total_reqs = cfg->warmup + cfg->requests;
        R->unfinished = R->nconns;
        for (int i = 0; i < R->nconns; i++)
            conn_connect(&R->conns[i]);
    }
    if (R->nconns > 0)
        event_base_dispatch(R->base);

    sb_stream_summarise(&R->ttft, &R->res.ttft);
    sb_stream_summarise(&R->gaps, &R->res.gap);
    sb_stream_summarise(&R->total, &R->res.total);
    sb_stream_summarise(&R->tail, &R->res.tail);
    if (R->hold && !R->measured)
        for (size_t i = 0; i < cfg->nrss; i++)
            R->res.rss_kib[i] = -1;
    *out = R->res;
    rc = 0;

fail:
    if (R->conns) {
        for (int i = 0; i < R->nconns; i++) {
            struct stream_conn *c = &R->conns[i];
            if (c->bev)
                bufferevent_free(c->bev);
            if (c->retry)
                event_free(c->retry);
            if (c->body)
                evbuffer_free(c->body);
            sb_stream_sse_free(&c->sse);
            sb_stream_timing_free(&c->timing);
        }
    }
    if (R->open_tick)
        event_free(R->open_tick);
    if (R->check_tick)
        event_free(R->check_tick);
    if (R->hold_end)
        event_free(R->hold_end);
    if (R->base)
        event_base_free(R->base);
    sb_stream_samples_free(&R->ttft);
    sb_stream_samples_free(&R->gaps);
    sb_stream_samples_free(&R->total);
    sb_stream_samples_free(&R->tail);
    free(R->conns);
    free(R->request);
    free(R);
    return rc;
}
