/*
 * sb_http_conn: one client connection of the frontend's HTTP/1.1 layer
 * (sb_http.h): reading a head, handing it to the handler, reading the body
 * when asked, writing the reply (whole or chunked), then the next request or
 * the close. One request at a time: pipelined bytes wait in the input buffer
 * (reading pauses above the head ceiling) until the reply before them is
 * written.
 *
 * Safe points: a connection is freed only from its own event callbacks, an
 * accept that sheds it, or sb_http_free — never inside a call the handler
 * made; the handler's calls only change state and schedule work (the kick
 * event parses what is buffered after a reply).
 */
#include "sb_http_internal.h"

#include <errno.h>
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "sb_alloc.h"
#include "sb_log.h"
#include "sb_time.h"

#define SB_HTTP_LINGER_MS 3000      /* longest a closing connection is drained */
#define SB_HTTP_LINGER_IDLE_MS 1000 /* ... or this long without a byte */
#define SB_HTTP_REFUSE_MS 2000      /* a connection accepted over a cap: time to send its head */
/* A streamed reply the client does not read: past this many bytes waiting
 * to be sent, the client is taken as gone (its job is cancelled) rather than
 * buffered without limit. */
#define SB_HTTP_MAX_PENDING_OUT (16u << 20)

static void sb_http_conn_process(sb_http_conn_t *c);

static void sb_http_timer_ms(sb_http_conn_t *c, int64_t ms)
{
    if (ms < 1)
        ms = 1;
    struct timeval tv = {.tv_sec = (time_t)(ms / 1000), .tv_usec = (suseconds_t)((ms % 1000) * 1000)};
    event_add(c->timer, &tv);
}

bool sb_http_conn_idle(const sb_http_conn_t *c)
{
    return !c->req && (c->state == FE_C_HEAD || c->state == FE_C_LINGER || c->state == FE_C_CLOSING);
}

/* The connection joins its peer address's source (the listener found or
 * made it): the counts its admission reads, and the list shedding walks. */
static void sb_http_conn_join(sb_http_conn_t *c, sb_http_source_t *src)
{
    sb_http_t *h = c->srv;
    c->src = src;
    if (c->refuse) {
        h->refusing++;
        src->refusing++;
    }
    src->conns++;
    c->src_next = src->list;
    if (src->list)
        src->list->src_prev = c;
    src->list = c;
}

/* The connection leaves its source (it closes): the source's counts drop,
 * and a source left with no connection is forgotten. */
static void sb_http_conn_leave(sb_http_conn_t *c)
{
    sb_http_t *h = c->srv;
    sb_http_source_t *s = c->src;
    if (!s)
        return;
    if (c->src_prev)
        c->src_prev->src_next = c->src_next;
    else
        s->list = c->src_next;
    if (c->src_next)
        c->src_next->src_prev = c->src_prev;
    c->src = NULL;
    if (c->refuse) {
        h->refusing--;
        s->refusing--;
    }
    if (--s->conns == 0) {
        sb_map_remove(h->sources, s->addr);
        free(s);
    }
}

void sb_http_conn_close(sb_http_conn_t *c)
{
    sb_http_t *h = c->srv;
    sb_http_req_t *r = c->req;
    c->req = NULL;
    if (r && r->gone) {
        void (*gone)(void *) = r->gone;
        r->gone = NULL;
        gone(r->gone_arg);
    }
    sb_http_req_free(r);
    if (c->bev)
        bufferevent_free(c->bev); /* closes the socket */
    event_free(c->timer);
    event_free(c->kick);
    evbuffer_free(c->stage);
    sb_http_conn_leave(c);
    if (c->prev)
        c->prev->next = c->next;
    else
        h->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    h->open--;
    free(c);
}

/* ---- requests handed to the handler ---- */

/* NUL-terminates the parsed names and values in place (each is followed by
 * ':' or by whitespace or the CR of its line, which are no longer needed). */
static void sb_http_req_terminate(sb_http_req_t *r)
{
    for (size_t k = 0; k < r->h.nfields; k++) {
        sb_http_field_t *f = &r->h.fields[k];
        ((char *)f->name)[f->name_len] = '\0';
        ((char *)f->value)[f->value_len] = '\0';
    }
}

static void sb_http_req_set_target(sb_http_req_t *r)
{
    if (!r->h.target)
        return;
    r->target = sb_xstrndup(r->h.target, r->h.target_len);
    char *q = strchr(r->target, '?');
    r->query = q ? q + 1 : NULL;
    size_t cap = r->h.target_len + 1;
    r->path = sb_xmalloc(cap > 4 ? cap : 4);
    if (sb_http_target_path(r->target, r->h.target_len, r->path, cap) < 0) {
        r->path[0] = '\0';
        if (!r->has_err) {
            r->has_err = true;
            r->err = (sb_http_err_t){400, "bad_request_target",
                                     "Malformed HTTP request: the request target is not a valid path."};
        }
    }
}

/* Hands the request to the handler: reading stops until it asks for the
 * body or replies. */
static void sb_http_hand_over(sb_http_conn_t *c, sb_http_req_t *r)
{
    c->req = r;
    c->state = FE_C_WAIT;
    c->scanned = 0;
    event_del(c->timer);
    bufferevent_disable(c->bev, EV_READ);
    if (r->has_err)
        r->close_after = true;
    c->srv->fn(r, c->srv->arg);
}

static void sb_http_read_head(sb_http_conn_t *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    /* Empty lines before a request line are skipped (RFC 9112 §2.2). */
    while (c->scanned == 0 && evbuffer_get_length(in) >= 2) {
        unsigned char two[2];
        evbuffer_copyout(in, two, 2);
        if (two[0] != '\r' || two[1] != '\n')
            break;
        evbuffer_drain(in, 2);
    }
    size_t len = evbuffer_get_length(in);
    if (len == 0)
        return;
    if (c->first_byte_ms == 0) {
        c->first_byte_ms = sb_mono_ms();
        if (!c->refuse)
            sb_http_timer_ms(c, c->srv->lim.read_deadline_ms);
    }
    size_t max = c->srv->lim.max_head;
    size_t look = len < max + 1 ? len : max + 1;
    const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)look);
    sb_http_err_t err;
    ssize_t n = sb_http_head_end(p, look, max, &c->scanned, &err);
    if (n == 0)
        return;
    sb_http_req_t *r = sb_http_req_new(c);
    if (n < 0) {
        r->has_err = true;
        r->err = err;
        if (sb_http_peek_target(p, look, &r->h) == 0) {
            r->head = sb_xstrndup(r->h.target, r->h.target_len); /* the target must outlive the buffer */
            r->h.target = r->head;
            sb_http_req_set_target(r);
        }
        r->h.nfields = 0;
        sb_http_hand_over(c, r);
        return;
    }
    r->head_len = (size_t)n;
    r->head = sb_xmalloc(r->head_len + 1);
    evbuffer_remove(in, r->head, r->head_len);
    r->head[r->head_len] = '\0';
    if (sb_http_head_parse(r->head, r->head_len, &r->h, &err) < 0) {
        r->has_err = true;
        r->err = err;
        r->h.nfields = 0; /* the fields of a refused head are not offered */
    } else {
        r->body_read = !r->h.chunked && (!r->h.has_length || r->h.length == 0);
    }
    sb_http_req_set_target(r);
    sb_http_req_terminate(r);
    if (c->refuse && !r->has_err) {
        r->has_err = true;
        r->err = (sb_http_err_t){503, "too_many_connections", c->refuse};
    }
    sb_http_hand_over(c, r);
}

/* ---- bodies ---- */

static void sb_http_body_fail(sb_http_conn_t *c, sb_http_req_t *r, const sb_http_err_t *err)
{
    c->state = FE_C_WAIT;
    r->close_after = true;
    event_del(c->timer);
    bufferevent_disable(c->bev, EV_READ);
    void (*done)(sb_http_req_t *, const sb_http_err_t *, void *) = r->done;
    r->done = NULL;
    if (done)
        done(r, err, r->done_arg);
}

static void sb_http_body_done(sb_http_conn_t *c, sb_http_req_t *r)
{
    c->state = FE_C_APP;
    r->body_read = true;
    event_del(c->timer);
    /* Reading goes on to notice the client leaving (EOF); what a pipelining
     * client sends meanwhile waits, up to the head ceiling. */
    bufferevent_enable(c->bev, EV_READ);
    void (*done)(sb_http_req_t *, const sb_http_err_t *, void *) = r->done;
    r->done = NULL;
    if (done)
        done(r, NULL, r->done_arg);
}

typedef struct {
    sb_http_req_t *r;
    bool over_budget;
} sb_http_sink_t;

static void sb_http_chunk_sink(void *arg, const char *data, size_t n)
{
    sb_http_sink_t *s = arg;
    sb_http_t *h = s->r->c->srv;
    if (s->over_budget || h->body_used + n > h->lim.body_budget) {
        s->over_budget = true;
        return;
    }
    h->body_used += n;
    s->r->reserved += n;
    evbuffer_add(s->r->body, data, n);
}

static const sb_http_err_t sb_http_e_budget = {
    503, "server_busy", "The gateway is receiving too many request bodies at once; retry shortly."};

static void sb_http_read_body(sb_http_conn_t *c)
{
    sb_http_req_t *r = c->req;
    struct evbuffer *in = bufferevent_get_input(c->bev);
    if (!r->h.chunked) {
        size_t avail = evbuffer_get_length(in);
        size_t n = (uint64_t)avail < r->length_left ? avail : (size_t)r->length_left;
        if (n) {
            evbuffer_remove_buffer(in, r->body, n);
            r->length_left -= n;
        }
        if (r->length_left == 0)
            sb_http_body_done(c, r);
        return;
    }
    while (evbuffer_get_length(in) > 0) {
        struct evbuffer_iovec v;
        if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
            break;
        sb_http_sink_t sink = {r, false};
        sb_http_err_t err;
        size_t used = 0;
        int rc = sb_http_chunked_feed(&r->chunked, v.iov_base, v.iov_len, &used, sb_http_chunk_sink, &sink, &err);
        evbuffer_drain(in, used);
        if (sink.over_budget) {
            sb_http_body_fail(c, r, &sb_http_e_budget);
            return;
        }
        if (rc < 0) {
            sb_http_body_fail(c, r, &err);
            return;
        }
        if (rc == 1) {
            sb_http_body_done(c, r);
            return;
        }
    }
}

void sb_http_req_read_body(sb_http_req_t *r, size_t max,
                           void (*done)(sb_http_req_t *req, const sb_http_err_t *err, void *arg), void *arg)
{
    sb_http_conn_t *c = r->c;
    sb_http_t *h = c->srv;
    r->done = done;
    r->done_arg = arg;
    r->body_max = max;
    if (!r->body)
        r->body = evbuffer_new();
    if (r->body_read || c->state != FE_C_WAIT) {
        if (c->state == FE_C_WAIT)
            sb_http_body_done(c, r);
        return;
    }
    if (r->h.has_length) {
        if (r->h.length > max) {
            sb_http_err_t e = {413, "request_too_large", "Request body too large."};
            sb_http_body_fail(c, r, &e);
            return;
        }
        if (h->body_used + r->h.length > h->lim.body_budget) {
            sb_http_body_fail(c, r, &sb_http_e_budget);
            return;
        }
        r->reserved = (size_t)r->h.length;
        h->body_used += r->reserved;
        r->length_left = r->h.length;
    } else {
        sb_http_chunked_init(&r->chunked, max, h->lim.max_head);
    }
    if (r->h.expect_continue)
        bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    c->state = FE_C_BODY;
    int64_t left = c->first_byte_ms + h->lim.read_deadline_ms - sb_mono_ms();
    sb_http_timer_ms(c, left);
    bufferevent_enable(c->bev, EV_READ);
    sb_http_read_body(c);
}

/* ---- replies ---- */

void sb_http_req_add_header(sb_http_req_t *r, const char *name, const char *value)
{
    if (strpbrk(name, "\r\n:") || strpbrk(value, "\r\n"))
        return;
    evbuffer_add_printf(r->out_headers, "%s: %s\r\n", name, value);
}

void sb_http_req_close_after(sb_http_req_t *r)
{
    r->close_after = true;
}

static void sb_http_date(char *buf, size_t len)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(buf, len, "%a, %d %b %Y %H:%M:%S GMT", &tm);
}

/* Sends msg (left empty): straight to the socket when nothing is queued
 * before it, so a reply the socket takes whole costs one writev and no write
 * event (arming EPOLLOUT, waking for it and disarming it were three more
 * syscalls and a loop turn per reply, and a turn before each streamed
 * chunk). What the socket does not take, or all of it when bytes are queued,
 * goes to the bufferevent, which sends it as the socket drains; a write that
 * fails leaves msg whole for the bufferevent, which then meets the error. */
static void sb_http_send(sb_http_conn_t *c, struct evbuffer *msg)
{
    struct evbuffer *out = bufferevent_get_output(c->bev);
    if (evbuffer_get_length(out) == 0)
        (void)evbuffer_write(msg, c->fd);
    if (evbuffer_get_length(msg) > 0)
        evbuffer_add_buffer(out, msg);
}

/* Status line and headers into out; decides whether the connection closes
 * after. */
static void sb_http_write_head(sb_http_req_t *r, struct evbuffer *out, int status, bool streamed, size_t len)
{
    sb_http_conn_t *c = r->c;
    if (!r->h.keep_alive || !r->body_read || r->has_err || (streamed && r->h.minor == 0) || c->srv->draining)
        r->close_after = true;
    char date[64];
    sb_http_date(date, sizeof date);
    evbuffer_add_printf(out, "HTTP/1.1 %d %s\r\nDate: %s\r\n", status, sb_http_reason(status), date);
    evbuffer_add_buffer(out, r->out_headers);
    if (streamed) {
        if (r->h.minor == 1)
            evbuffer_add(out, "Transfer-Encoding: chunked\r\n", 28);
    } else {
        evbuffer_add_printf(out, "Content-Length: %zu\r\n", len);
    }
    if (r->close_after)
        evbuffer_add(out, "Connection: close\r\n", 19);
    else if (r->h.minor == 0)
        evbuffer_add(out, "Connection: keep-alive\r\n", 24);
    evbuffer_add(out, "\r\n", 2);
}

/* The reply is written: the request ends; the connection closes once the
 * reply is sent, or goes on to the next request. */
static void sb_http_req_over(sb_http_req_t *r)
{
    sb_http_conn_t *c = r->c;
    bool close = r->close_after;
    c->req = NULL;
    r->gone = NULL;
    sb_http_req_free(r);
    c->first_byte_ms = 0;
    c->scanned = 0;
    if (close) {
        c->state = FE_C_CLOSING;
        event_del(c->timer);
        bufferevent_enable(c->bev, EV_READ); /* to discard what the client still sends */
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            event_active(c->kick, 0, 0);
        return;
    }
    c->state = FE_C_HEAD;
    sb_http_timer_ms(c, c->srv->lim.idle_timeout_ms);
    bufferevent_enable(c->bev, EV_READ);
    event_active(c->kick, 0, 0); /* a pipelined request may be buffered already */
}

void sb_http_reply(sb_http_req_t *r, int status, const void *body, size_t len)
{
    struct evbuffer *msg = r->c->stage;
    sb_http_write_head(r, msg, status, false, len);
    if (len && r->h.method != SB_HTTP_M_HEAD)
        evbuffer_add(msg, body, len);
    sb_http_send(r->c, msg);
    sb_http_req_over(r);
}

void sb_http_reply_start(sb_http_req_t *r, int status)
{
    r->streaming = true;
    sb_http_write_head(r, r->c->stage, status, true, 0);
    sb_http_send(r->c, r->c->stage);
}

void sb_http_reply_chunk(sb_http_req_t *r, struct evbuffer *buf)
{
    size_t n = evbuffer_get_length(buf);
    if (n == 0)
        return;
    struct evbuffer *out = bufferevent_get_output(r->c->bev);
    if (evbuffer_get_length(out) + n > SB_HTTP_MAX_PENDING_OUT) {
        evbuffer_drain(buf, n);
        if (!r->c->dead) {
            sb_warn("closing a connection from %s: %zu bytes of its streamed reply are unread", sb_http_req_peer(r),
                    evbuffer_get_length(out));
            r->c->dead = true;
            event_active(r->c->kick, 0, 0); /* closed from the loop, not inside the caller */
        }
        return;
    }
    struct evbuffer *msg = r->c->stage;
    if (r->h.minor == 1)
        evbuffer_add_printf(msg, "%zx\r\n", n);
    evbuffer_add_buffer(msg, buf);
    if (r->h.minor == 1)
        evbuffer_add(msg, "\r\n", 2);
    sb_http_send(r->c, msg);
}

void sb_http_reply_end(sb_http_req_t *r)
{
    if (r->h.minor == 1) {
        evbuffer_add(r->c->stage, "0\r\n\r\n", 5);
        sb_http_send(r->c, r->c->stage);
    }
    sb_http_req_over(r);
}

/* ---- accessors ---- */

const sb_http_err_t *sb_http_req_error(const sb_http_req_t *r)
{
    return r->has_err ? &r->err : NULL;
}
const char *sb_http_req_method(const sb_http_req_t *r)
{
    return r->h.method_name;
}
const char *sb_http_req_path(const sb_http_req_t *r)
{
    return r->path ? r->path : "";
}
const char *sb_http_req_query(const sb_http_req_t *r)
{
    return r->query;
}
size_t sb_http_req_head_bytes(const sb_http_req_t *r)
{
    return r->head_len;
}
const char *sb_http_req_peer(const sb_http_req_t *r)
{
    return r->c && r->c->src ? r->c->src->addr : "?";
}

sb_http_req_t *sb_http_req_parse_detached(const char *head, size_t len)
{
    sb_http_req_t *r = sb_http_req_new(NULL);
    r->head_len = len;
    r->head = sb_xmalloc(len + 1);
    memcpy(r->head, head, len);
    r->head[len] = '\0';
    sb_http_err_t err;
    if (sb_http_head_parse(r->head, len, &r->h, &err) < 0) {
        sb_http_req_free(r);
        return NULL;
    }
    sb_http_req_set_target(r);
    sb_http_req_terminate(r);
    return r;
}

void sb_http_req_destroy(sb_http_req_t *r)
{
    if (r && !r->c)
        sb_http_req_free(r);
}
struct evbuffer *sb_http_req_body(sb_http_req_t *r)
{
    if (!r->body)
        r->body = evbuffer_new();
    return r->body;
}

const char *sb_http_req_header(const sb_http_req_t *r, const char *name)
{
    for (size_t k = 0; k < r->h.nfields; k++)
        if (strcasecmp(r->h.fields[k].name, name) == 0)
            return r->h.fields[k].value;
    return NULL;
}

void sb_http_req_on_gone(sb_http_req_t *r, void (*gone)(void *arg), void *arg)
{
    r->gone = gone;
    r->gone_arg = arg;
}

/* ---- connection events ---- */

static void sb_http_linger(sb_http_conn_t *c)
{
    c->state = FE_C_LINGER;
    shutdown(c->fd, SHUT_WR);
    c->linger_until_ms = sb_mono_ms() + SB_HTTP_LINGER_MS;
    sb_http_timer_ms(c, SB_HTTP_LINGER_IDLE_MS);
    bufferevent_enable(c->bev, EV_READ);
}

static void sb_http_conn_process(sb_http_conn_t *c)
{
    struct evbuffer *in = bufferevent_get_input(c->bev);
    switch (c->state) {
    case FE_C_HEAD:
        sb_http_read_head(c);
        break;
    case FE_C_BODY:
        sb_http_read_body(c);
        break;
    case FE_C_APP:
        if (evbuffer_get_length(in) > c->srv->lim.max_head)
            bufferevent_disable(c->bev, EV_READ); /* a pipelining client waits for its answer */
        break;
    case FE_C_WAIT:
        break;
    case FE_C_CLOSING:
        evbuffer_drain(in, evbuffer_get_length(in));
        if (evbuffer_get_length(bufferevent_get_output(c->bev)) == 0)
            sb_http_linger(c);
        break;
    case FE_C_LINGER: {
        evbuffer_drain(in, evbuffer_get_length(in));
        int64_t left = c->linger_until_ms - sb_mono_ms();
        sb_http_timer_ms(c, left < SB_HTTP_LINGER_IDLE_MS ? left : SB_HTTP_LINGER_IDLE_MS);
        break;
    }
    }
}

static void sb_http_on_read(struct bufferevent *bev, void *arg)
{
    (void)bev;
    sb_http_conn_process(arg);
}

static void sb_http_on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_http_conn_t *c = arg;
    if (c->dead) {
        sb_http_conn_close(c);
        return;
    }
    sb_http_conn_process(c);
}

static void sb_http_on_write(struct bufferevent *bev, void *arg)
{
    (void)bev;
    sb_http_conn_t *c = arg;
    if (c->state == FE_C_CLOSING)
        sb_http_linger(c);
}

static void sb_http_on_event(struct bufferevent *bev, short what, void *arg)
{
    (void)bev;
    sb_http_conn_t *c = arg;
    if ((what & BEV_EVENT_EOF) && c->state == FE_C_CLOSING && evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
        return;            /* the client stopped sending; the reply is still going out */
    sb_http_conn_close(c); /* EOF, error, or a reply not read within the write timeout */
}

static void sb_http_on_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_http_conn_t *c = arg;
    switch (c->state) {
    case FE_C_HEAD:
        if (c->first_byte_ms == 0 && !c->refuse) {
            sb_http_conn_close(c); /* idle keep-alive connection */
            return;
        }
        {
            sb_http_req_t *r = sb_http_req_new(c);
            r->has_err = true;
            r->err = c->refuse ? (sb_http_err_t){503, "too_many_connections", c->refuse}
                               : (sb_http_err_t){408, "request_timeout", "The request was not received in time."};
            /* The path's style when the request line is in. */
            struct evbuffer *in = bufferevent_get_input(c->bev);
            size_t len = evbuffer_get_length(in), max = c->srv->lim.max_head;
            const char *p = (const char *)evbuffer_pullup(in, (ev_ssize_t)(len < max ? len : max));
            if (p && sb_http_peek_target(p, len < max ? len : max, &r->h) == 0) {
                r->head = sb_xstrndup(r->h.target, r->h.target_len);
                r->h.target = r->head;
                sb_http_req_set_target(r);
            }
            r->h.nfields = 0;
            sb_http_hand_over(c, r);
        }
        return;
    case FE_C_BODY: {
        sb_http_err_t e = {408, "request_timeout", "The request body was not received in time."};
        sb_http_body_fail(c, c->req, &e);
        return;
    }
    case FE_C_LINGER:
        if (sb_mono_ms() >= c->linger_until_ms || evbuffer_get_length(bufferevent_get_input(c->bev)) == 0) {
            sb_http_conn_close(c);
            return;
        }
        sb_http_conn_process(c);
        return;
    default:
        return;
    }
}

sb_http_conn_t *sb_http_conn_new(sb_http_t *h, evutil_socket_t fd, sb_http_source_t *src, const char *refuse)
{
    sb_http_conn_t *c = sb_xcalloc(1, sizeof *c);
    c->refuse = refuse;
    c->srv = h;
    c->fd = fd;
    c->bev = bufferevent_socket_new(h->base, fd, BEV_OPT_CLOSE_ON_FREE);
    c->timer = evtimer_new(h->base, sb_http_on_timer, c);
    c->kick = event_new(h->base, -1, 0, sb_http_on_kick, c);
    c->stage = evbuffer_new();
    c->state = FE_C_HEAD;
    sb_http_conn_join(c, src);
    bufferevent_setcb(c->bev, sb_http_on_read, sb_http_on_write, sb_http_on_event, c);
    if (h->lim.write_timeout_ms > 0) {
        struct timeval wt = {.tv_sec = h->lim.write_timeout_ms / 1000,
                             .tv_usec = (h->lim.write_timeout_ms % 1000) * 1000};
        bufferevent_set_timeouts(c->bev, NULL, &wt);
    }
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
    /* A refused connection has a short while to send its request line and
     * headers, so that its 503 can be in the style of its path. */
    sb_http_timer_ms(c, refuse ? SB_HTTP_REFUSE_MS : h->lim.idle_timeout_ms);
    c->next = h->conns;
    if (h->conns)
        h->conns->prev = c;
    h->conns = c;
    h->open++;
    return c;
}

const char *sb_http_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 201:
        return "Created";
    case 202:
        return "Accepted";
    case 204:
        return "No Content";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 405:
        return "Method Not Allowed";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 411:
        return "Length Required";
    case 413:
        return "Content Too Large";
    case 415:
        return "Unsupported Media Type";
    case 417:
        return "Expectation Failed";
    case 422:
        return "Unprocessable Content";
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    case 499:
        return "Client Closed Request";
    case 500:
        return "Internal Server Error";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 505:
        return "HTTP Version Not Supported";
    case 529:
        return "Overloaded";
    default:
        return status < 300 ? "OK" : status < 500 ? "Client Error" : "Server Error";
    }
}
