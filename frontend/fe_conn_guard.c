/*
 * fe_conn_guard: connection count, request read deadline and framing
 * ceilings for evhttp's client connections (the why is in fe_conn_guard.h).
 * Three parts: tracking connections (the bufferevent factory, attaching to
 * evhttp's connection, its close callback), a scanner that follows the
 * HTTP/1.1 framing of each request as its bytes arrive (request line, headers,
 * Content-Length or chunked body), and the guard's own answers with their
 * lingering close.
 *
 * Libevent internals this relies on (2.1.12, checked by the integration
 * tests): evhttp passes its connection as the callback argument of the
 * bufferevent it is given, and bufferevent_free clears that argument; the
 * input buffer's callbacks run inside the read, before evhttp parses; evhttp
 * reads nothing on a connection while its request is with the application.
 */
#include "fe_conn_guard.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "fe_request.h"
#include "fe_router.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_time.h"

#define FE_SCAN_LINE_MAX 512   /* bytes of a line kept for parsing; longer lines are only counted */
#define FE_SCAN_PATH_MAX 256   /* bytes of the request path kept (enough to pick a style) */
#define FE_LINGER_MS 3000      /* longest a refused connection is drained before it is closed */
#define FE_LINGER_IDLE_MS 1000 /* ... or this long without a byte from the client */

/* Where the scanner is in the request being read. */
enum fe_scan_state {
    FE_SCAN_LINE,       /* the request line */
    FE_SCAN_HEADERS,    /* header lines, up to the blank line */
    FE_SCAN_BODY,       /* a Content-Length body: body_left bytes to come */
    FE_SCAN_CHUNK_SIZE, /* a chunk-size line, or the line end after a chunk's data (evhttp skips it too) */
    FE_SCAN_CHUNK_DATA, /* body_left bytes of one chunk's data */
    FE_SCAN_TRAILER,    /* trailer lines after the last chunk, up to the blank line */
    FE_SCAN_DONE,       /* complete: later bytes belong to the next request */
    FE_SCAN_OFF,        /* not followed: its start was not seen, or evhttp rejects it itself */
};

/* What the scanner found wrong with a request. */
enum fe_scan_verdict {
    FE_SCAN_OK,
    FE_SCAN_HEADERS_TOO_LARGE, /* 431 */
    FE_SCAN_BODY_TOO_LARGE,    /* 413 */
    FE_SCAN_BAD_CHUNK,         /* 400: a chunk-size line that does not end */
    FE_SCAN_OVER_CAP,          /* 503: the headers are in, on a connection beyond the cap */
};

typedef struct {
    enum fe_scan_state state;
    char line[FE_SCAN_LINE_MAX];     /* the current line's first bytes */
    size_t line_len;                 /* the current line's length so far (may exceed what line holds) */
    size_t head_bytes;               /* request line, headers and trailers so far, line ends included */
    bool body_method;                /* POST, PUT or PATCH: the methods evhttp reads a body for */
    bool seen_length, seen_encoding; /* only the first of each header counts, as in evhttp_find_header */
    bool length_ok;                  /* the Content-Length is a number */
    bool chunked;
    bool over_cap;               /* refuse once the headers are in (the connection is beyond the cap) */
    uint64_t length;             /* declared Content-Length (UINT64_MAX when it overflows) */
    uint64_t body_left;          /* bytes to the end of the body or of the chunk */
    uint64_t content;            /* chunked: data bytes declared so far (never above the ceiling) */
    char path[FE_SCAN_PATH_MAX]; /* the target's path, decoded; "" until the request line is complete */
} fe_scan_t;

typedef struct fe_conn {
    fe_conn_guard_t *g;
    struct bufferevent *bev;         /* evhttp's; one reference of ours is held until attached */
    struct evhttp_connection *evcon; /* NULL until attached */
    struct evbuffer_cb_entry *input_cb;
    struct event *timer;        /* activated once to attach; afterwards the read deadline */
    evutil_socket_t fd;         /* -1 until attached */
    bool over_cap;              /* accepted while the cap was reached: its requests get 503 */
    bool reading;               /* a request's first byte arrived and evhttp has not handed it over */
    bool busy;                  /* a request is with fe_request (attached and not yet detached) */
    int64_t start_us, start_ms; /* the first byte of the request being read */
    fe_scan_t scan;
    void (*close_cb)(struct evhttp_connection *, void *); /* the attached request's */
    void *close_arg;
    struct fe_conn *prev, *next;
} fe_conn_t;

/* A refused connection being drained so that closing it sends no reset. */
typedef struct fe_linger {
    fe_conn_guard_t *g;
    evutil_socket_t fd; /* our own descriptor of the socket (evhttp closed its one) */
    struct event *ev;
    int64_t until_ms;
    struct fe_linger *prev, *next;
} fe_linger_t;

struct fe_conn_guard {
    struct event_base *base;
    fe_conn_guard_limits_t lim;
    fe_reqlog_t *reqlog;
    int open;          /* tracked connections plus lingering closes */
    fe_conn_t *conns;  /* every tracked connection */
    fe_conn_t **by_fd; /* attached connections by socket */
    size_t by_fd_len;
    fe_linger_t *lingers;
};

/* ---- the framing scanner ------------------------------------------------- */

/* The request line: whether the method has a body, and the target's path. */
static void fe_scan_request_line(fe_scan_t *s)
{
    const char *sp = strchr(s->line, ' ');
    if (!sp)
        return;
    size_t mlen = (size_t)(sp - s->line);
    s->body_method = (mlen == 4 && !memcmp(s->line, "POST", 4)) || (mlen == 3 && !memcmp(s->line, "PUT", 3)) ||
                     (mlen == 5 && !memcmp(s->line, "PATCH", 5));
    const char *target = sp + 1;
    size_t tlen = strcspn(target, " ?#");
    /* absolute-form (http://host/path): the path starts at the first '/' after the host */
    size_t skip = 0;
    if (tlen > 7 && !strncasecmp(target, "http://", 7))
        skip = 7;
    else if (tlen > 8 && !strncasecmp(target, "https://", 8))
        skip = 8;
    if (skip) {
        const char *slash = memchr(target + skip, '/', tlen - skip);
        if (!slash)
            return;
        tlen -= (size_t)(slash - target);
        target = slash;
    }
    char raw[FE_SCAN_PATH_MAX];
    if (tlen >= sizeof raw)
        tlen = sizeof raw - 1;
    memcpy(raw, target, tlen);
    raw[tlen] = '\0';
    char *decoded = evhttp_uridecode(raw, 0, NULL);
    snprintf(s->path, sizeof s->path, "%s", decoded && decoded[0] ? decoded : "/");
    free(decoded);
}

/* One header line: Content-Length and Transfer-Encoding, as evhttp reads them. */
static void fe_scan_header(fe_scan_t *s, bool truncated)
{
    const char *line = s->line;
    if (line[0] == ' ' || line[0] == '\t')
        return; /* a continuation line */
    const char *colon = strchr(line, ':');
    if (!colon)
        return;
    size_t nlen = (size_t)(colon - line);
    const char *v = colon + 1;
    while (*v == ' ')
        v++;
    size_t vlen = strlen(v);
    while (vlen > 0 && (v[vlen - 1] == ' ' || v[vlen - 1] == '\t'))
        vlen--;
    if (nlen == 14 && !strncasecmp(line, "content-length", 14) && !s->seen_length) {
        s->seen_length = true;
        s->length_ok = vlen > 0 && !truncated;
        s->length = 0;
        for (size_t i = 0; i < vlen && s->length_ok; i++) {
            if (v[i] < '0' || v[i] > '9')
                s->length_ok = false;
            else if (s->length > (UINT64_MAX - 9) / 10)
                s->length = UINT64_MAX; /* too large for anything: evhttp saturates as well */
            else
                s->length = s->length * 10 + (uint64_t)(v[i] - '0');
        }
    } else if (nlen == 17 && !strncasecmp(line, "transfer-encoding", 17) && !s->seen_encoding) {
        s->seen_encoding = true;
        s->chunked = vlen == 7 && !strncasecmp(v, "chunked", 7);
    }
}

/* The blank line after the headers: what body follows, if any. */
static enum fe_scan_verdict fe_scan_headers_done(fe_scan_t *s, const fe_conn_guard_limits_t *lim)
{
    if (s->over_cap)
        return FE_SCAN_OVER_CAP;
    if (!s->body_method) {
        s->state = FE_SCAN_DONE; /* evhttp reads no body for other methods */
    } else if (s->chunked) {
        s->state = FE_SCAN_CHUNK_SIZE;
    } else if (s->seen_length && !s->length_ok) {
        s->state = FE_SCAN_OFF; /* evhttp answers a malformed Content-Length itself */
    } else if (s->seen_length && s->length > 0) {
        if (s->length > lim->body_ceiling)
            return FE_SCAN_BODY_TOO_LARGE;
        s->state = FE_SCAN_BODY;
        s->body_left = s->length;
    } else {
        s->state = FE_SCAN_DONE;
    }
    return FE_SCAN_OK;
}

/* A chunk-size line (chunk extensions are refused by evhttp, so is this). */
static enum fe_scan_verdict fe_scan_chunk_size(fe_scan_t *s, const fe_conn_guard_limits_t *lim)
{
    if (s->line[0] == '\0')
        return FE_SCAN_OK; /* the line end after a chunk's data */
    char *end;
    long long size = strtoll(s->line, &end, 16); /* as evhttp parses it; ERANGE saturates, refused below */
    if (end == s->line || (*end != '\0' && *end != ' ') || size < 0) {
        s->state = FE_SCAN_OFF;
        return FE_SCAN_OK;
    }
    if ((uint64_t)size > lim->body_ceiling - s->content)
        return FE_SCAN_BODY_TOO_LARGE;
    s->content += (uint64_t)size;
    if (size == 0) {
        s->state = FE_SCAN_TRAILER;
    } else {
        s->state = FE_SCAN_CHUNK_DATA;
        s->body_left = (uint64_t)size;
    }
    return FE_SCAN_OK;
}

/* A complete line (its end included in line_len) in a line-oriented state. */
static enum fe_scan_verdict fe_scan_line_done(fe_scan_t *s, const fe_conn_guard_limits_t *lim)
{
    bool truncated = s->line_len >= sizeof s->line;
    size_t kept = truncated ? sizeof s->line - 1 : s->line_len;
    s->line[kept] = '\0';
    if (!truncated) {
        if (kept > 0 && s->line[kept - 1] == '\n')
            s->line[--kept] = '\0';
        if (kept > 0 && s->line[kept - 1] == '\r')
            s->line[--kept] = '\0';
    }
    s->line_len = 0;
    switch (s->state) {
    case FE_SCAN_LINE:
        fe_scan_request_line(s);
        s->state = FE_SCAN_HEADERS;
        return FE_SCAN_OK;
    case FE_SCAN_HEADERS:
        if (kept == 0 && !truncated)
            return fe_scan_headers_done(s, lim);
        fe_scan_header(s, truncated);
        return FE_SCAN_OK;
    case FE_SCAN_TRAILER:
        if (kept == 0 && !truncated)
            s->state = FE_SCAN_DONE;
        return FE_SCAN_OK;
    case FE_SCAN_CHUNK_SIZE:
        return fe_scan_chunk_size(s, lim);
    default:
        return FE_SCAN_OK;
    }
}

/* Follows n new bytes of the request. Runs before evhttp sees them, and
 * refuses at thresholds evhttp would reach no earlier (it counts header
 * lines without their ends), so evhttp's own HTML errors stay a backstop. */
static enum fe_scan_verdict fe_scan_feed(fe_scan_t *s, const char *p, size_t n, const fe_conn_guard_limits_t *lim)
{
    while (n > 0) {
        switch (s->state) {
        case FE_SCAN_DONE:
        case FE_SCAN_OFF:
            return FE_SCAN_OK;
        case FE_SCAN_BODY:
        case FE_SCAN_CHUNK_DATA: {
            size_t take = (uint64_t)n < s->body_left ? n : (size_t)s->body_left;
            s->body_left -= take;
            p += take;
            n -= take;
            if (s->body_left == 0)
                s->state = s->state == FE_SCAN_BODY ? FE_SCAN_DONE : FE_SCAN_CHUNK_SIZE;
            break;
        }
        default: {
            const char *lf = memchr(p, '\n', n);
            size_t take = lf ? (size_t)(lf - p) + 1 : n;
            if (s->line_len < sizeof s->line - 1) {
                size_t room = sizeof s->line - 1 - s->line_len;
                memcpy(s->line + s->line_len, p, take < room ? take : room);
            }
            s->line_len += take;
            p += take;
            n -= take;
            if (s->state == FE_SCAN_CHUNK_SIZE) {
                if (s->line_len >= sizeof s->line)
                    return FE_SCAN_BAD_CHUNK; /* evhttp would buffer such a line without end */
            } else {
                s->head_bytes += take;
                if (s->head_bytes > lim->header_ceiling)
                    return FE_SCAN_HEADERS_TOO_LARGE;
            }
            if (lf) {
                enum fe_scan_verdict v = fe_scan_line_done(s, lim);
                if (v != FE_SCAN_OK)
                    return v;
            }
            break;
        }
        }
    }
    return FE_SCAN_OK;
}

/* ---- lingering close ----------------------------------------------------- */

static void fe_linger_end(fe_linger_t *l)
{
    fe_conn_guard_t *g = l->g;
    if (l->prev)
        l->prev->next = l->next;
    else
        g->lingers = l->next;
    if (l->next)
        l->next->prev = l->prev;
    event_free(l->ev);
    close(l->fd);
    g->open--;
    free(l);
}

/* Reads and drops what the client still sends, until it closes its side, is
 * quiet for FE_LINGER_IDLE_MS, or FE_LINGER_MS have passed. */
static void fe_linger_on_event(evutil_socket_t fd, short what, void *arg)
{
    fe_linger_t *l = arg;
    if ((what & EV_READ) && sb_mono_ms() < l->until_ms) {
        char buf[16384];
        for (int i = 0; i < 64; i++) { /* at most 1 MiB per wake-up */
            ssize_t n = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
            if (n > 0)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
                return;
            /* the client closed its side, or the socket failed */
            fe_linger_end(l);
            return;
        }
        if (sb_mono_ms() < l->until_ms)
            return; /* more is coming: go on draining */
    }
    fe_linger_end(l);
}

/* Takes ownership of fd. */
static void fe_linger_start(fe_conn_guard_t *g, evutil_socket_t fd)
{
    fe_linger_t *l = sb_xcalloc(1, sizeof *l);
    l->g = g;
    l->fd = fd;
    l->until_ms = sb_mono_ms() + FE_LINGER_MS;
    l->ev = event_new(g->base, fd, EV_READ | EV_PERSIST, fe_linger_on_event, l);
    struct timeval idle = {FE_LINGER_IDLE_MS / 1000, (FE_LINGER_IDLE_MS % 1000) * 1000};
    event_add(l->ev, &idle);
    l->next = g->lingers;
    if (l->next)
        l->next->prev = l;
    g->lingers = l;
    g->open++;
}

/* ---- connections --------------------------------------------------------- */

static void fe_conn_free(fe_conn_t *c)
{
    fe_conn_guard_t *g = c->g;
    if (c->input_cb)
        evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->input_cb);
    event_free(c->timer);
    if (c->fd >= 0 && (size_t)c->fd < g->by_fd_len && g->by_fd[c->fd] == c)
        g->by_fd[c->fd] = NULL;
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    if (!c->evcon)
        bufferevent_decref(c->bev); /* the reference held until attached */
    g->open--;
    free(c);
}

static fe_conn_t *fe_conn_find(fe_conn_guard_t *g, struct evhttp_connection *evcon)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0 || (size_t)fd >= g->by_fd_len)
        return NULL;
    fe_conn_t *c = g->by_fd[fd];
    return c && c->evcon == evcon ? c : NULL;
}

/* evhttp closes the connection (or frees it): the count drops, and the
 * attached request, if any, learns that its client is gone. */
static void fe_conn_on_close(struct evhttp_connection *evcon, void *arg)
{
    fe_conn_t *c = arg;
    void (*cb)(struct evhttp_connection *, void *) = c->close_cb;
    void *cb_arg = c->close_arg;
    fe_conn_free(c);
    if (cb)
        cb(evcon, cb_arg);
}

/* Finds evhttp's connection for our bufferevent and takes over its close
 * callback. Returns false when evhttp already freed it (c is freed too). */
static bool fe_conn_attach(fe_conn_t *c)
{
    fe_conn_guard_t *g = c->g;
    event_del(c->timer); /* the pending activation, if the first bytes came first */
    void *arg = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, NULL, &arg);
    struct evhttp_connection *evcon = arg;
    if (!evcon || evhttp_connection_get_bufferevent(evcon) != c->bev) {
        fe_conn_free(c);
        return false;
    }
    c->evcon = evcon;
    c->fd = bufferevent_getfd(c->bev);
    if (c->fd >= 0) {
        if ((size_t)c->fd >= g->by_fd_len) {
            size_t len = g->by_fd_len ? g->by_fd_len : 256;
            while (len <= (size_t)c->fd)
                len *= 2;
            g->by_fd = sb_xrealloc(g->by_fd, len * sizeof *g->by_fd);
            memset(g->by_fd + g->by_fd_len, 0, (len - g->by_fd_len) * sizeof *g->by_fd);
            g->by_fd_len = len;
        }
        g->by_fd[c->fd] = c;
    }
    evhttp_connection_set_closecb(evcon, fe_conn_on_close, c);
    bufferevent_decref(c->bev); /* evhttp's from now on; its end comes through fe_conn_on_close */
    return true;
}

static void fe_conn_arm(fe_conn_t *c)
{
    int ms = c->g->lim.read_deadline_ms;
    if (ms <= 0)
        return;
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    event_add(c->timer, &tv);
}

/* The style's error body for path ("" = request line not received: OpenAI's). */
static json_t *fe_conn_error_body(const char *path, const fe_error_t *e, const char *request_id)
{
    /* A style renders its error body from the request's id alone; no request
     * exists yet, so a blank one carries the id. */
    fe_request_t probe;
    memset(&probe, 0, sizeof probe);
    probe.style = path[0] ? fe_router_style_for_path(path) : &fe_style_responses;
    snprintf(probe.request_id, sizeof probe.request_id, "%s", request_id);
    return probe.style->error_body(&probe, e);
}

/*
 * Answers the request being read with e (Connection: close) straight on the
 * socket, logs it, and closes the connection through evhttp, keeping a
 * descriptor of its own to drain what the client still sends. Runs from the
 * deadline timer or from the input buffer's callback inside evhttp's read
 * (before evhttp looks at the bytes; freeing the connection there is safe, as
 * the bufferevent holds a reference of its own while it reads). Frees c.
 */
static void fe_conn_refuse(fe_conn_t *c, const fe_error_t *e, const char *reason)
{
    fe_conn_guard_t *g = c->g;
    char request_id[SB_ID_MAX];
    sb_id_new(request_id, sizeof request_id, "req_", 16);
    json_t *body = fe_conn_error_body(c->scan.path, e, request_id);
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct evbuffer *out = evbuffer_new();
    evbuffer_add_printf(out,
                        "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                        "Connection: close\r\nx-request-id: %s\r\nrequest-id: %s\r\n",
                        e->status, reason, text ? strlen(text) : 0, request_id, request_id);
    if (e->retry_after > 0)
        evbuffer_add_printf(out, "Retry-After: %d\r\n", e->retry_after);
    evbuffer_add(out, "\r\n", 2);
    if (text)
        evbuffer_add(out, text, strlen(text));
    free(text);
    /* Nothing else is queued on the socket while a request is read (evhttp
     * sends a reply completely before it reads the next request), so this
     * goes out at once unless the client stopped reading a previous reply;
     * then the answer is cut, and the connection closes all the same. */
    if (evbuffer_write(out, c->fd) < 0)
        sb_debug("could not send %d on a client connection: %s", e->status, strerror(errno));
    evbuffer_free(out);

    fe_reqlog_row_t row = {
        .request_id = request_id,
        .ts_ms = c->start_ms,
        .path = c->scan.path[0] ? c->scan.path : "(request line not received)",
        .status = e->status,
        .latency_ms = (int)((sb_mono_us() - c->start_us) / 1000),
        .upstream_ms = -1,
        .error = e->message,
    };
    fe_reqlog_add(g->reqlog, &row);
    sb_debug("refused a request with %d: %s", e->status, e->message);

    evutil_socket_t dup_fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
    /* evhttp shuts the socket down for writing (the client reads the answer,
     * then end of stream) and closes its descriptor; fe_conn_on_close frees c. */
    evhttp_connection_free(c->evcon);
    if (dup_fd >= 0)
        fe_linger_start(g, dup_fd);
}

static void fe_conn_refuse_scan(fe_conn_t *c, enum fe_scan_verdict v)
{
    const fe_conn_guard_limits_t *lim = &c->g->lim;
    fe_error_t e;
    switch (v) {
    case FE_SCAN_HEADERS_TOO_LARGE:
        fe_error_set(&e, 431, SB_ERR_TOO_LARGE, "headers_too_large", NULL,
                     "Request header fields too large: the request line and headers exceed %zu bytes.",
                     lim->header_ceiling);
        fe_conn_refuse(c, &e, "Request Header Fields Too Large");
        return;
    case FE_SCAN_BODY_TOO_LARGE:
        if (c->scan.chunked)
            fe_error_set(&e, 413, SB_ERR_TOO_LARGE, "request_too_large", NULL,
                         "Request body exceeds the limit of %zu bytes", lim->body_ceiling);
        else
            fe_error_set(&e, 413, SB_ERR_TOO_LARGE, "request_too_large", NULL,
                         "Request body of %llu bytes exceeds the limit of %zu bytes",
                         (unsigned long long)c->scan.length, lim->body_ceiling);
        fe_conn_refuse(c, &e, "Payload Too Large");
        return;
    case FE_SCAN_OVER_CAP:
        /* As fe_request_handle answers it, but before the body is read. */
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, "too_many_connections", NULL,
                     "This gateway instance has too many open connections; retry shortly.");
        e.retry_after = 1;
        fe_conn_refuse(c, &e, "Service Unavailable");
        return;
    case FE_SCAN_BAD_CHUNK:
        fe_error_set(&e, 400, SB_ERR_INVALID_REQUEST, "invalid_chunked_body", NULL,
                     "Malformed chunked request body: a chunk-size line longer than %d bytes.", FE_SCAN_LINE_MAX - 1);
        fe_conn_refuse(c, &e, "Bad Request");
        return;
    case FE_SCAN_OK:
        return;
    }
}

/* Attaches (the first time), and runs the read deadline. */
static void fe_conn_on_timer(evutil_socket_t fd, short what, void *arg)
{
    fe_conn_t *c = arg;
    if (!c->evcon) {
        fe_conn_attach(c);
        return;
    }
    if (!c->reading || c->busy)
        return;
    if (evbuffer_get_length(bufferevent_get_output(c->bev)) > 0) {
        /* evhttp is sending an answer of its own (an error page, or "100
         * Continue" to a client that does not read): an answer cannot go in
         * between, so the connection just closes. */
        evhttp_connection_free(c->evcon);
        return;
    }
    fe_error_t e;
    fe_error_set(&e, 408, SB_ERR_TIMEOUT, "request_timeout", NULL,
                 "The request was not received completely within %d ms; the connection is closed.",
                 c->g->lim.read_deadline_ms);
    fe_conn_refuse(c, &e, "Request Timeout");
}

/* The first byte of a request arrived (leftover: bytes before it were already
 * buffered, so its start was not seen and it is not scanned). */
static void fe_conn_begin_request(fe_conn_t *c, bool leftover)
{
    c->reading = true;
    c->start_us = sb_mono_us();
    c->start_ms = sb_now_ms();
    memset(&c->scan, 0, sizeof c->scan);
    c->scan.state = leftover ? FE_SCAN_OFF : FE_SCAN_LINE;
    c->scan.over_cap = c->over_cap;
    if (!c->busy)
        fe_conn_arm(c);
}

/* Every change of the connection's input buffer; only bytes evhttp has just
 * read (n_added, at the buffer's end) matter. */
static void fe_conn_on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    fe_conn_t *c = arg;
    if (info->n_added == 0)
        return;
    if (!c->evcon && !fe_conn_attach(c))
        return;
    size_t len = evbuffer_get_length(buf);
    size_t n = info->n_added < len ? info->n_added : len;
    size_t at = len - n;
    if (!c->reading)
        fe_conn_begin_request(c, at > 0);
    struct evbuffer_ptr pos;
    if (evbuffer_ptr_set(buf, &pos, at, EVBUFFER_PTR_SET) < 0)
        return;
    while (n > 0 && c->scan.state != FE_SCAN_DONE && c->scan.state != FE_SCAN_OFF) {
        struct evbuffer_iovec v[8];
        int k = evbuffer_peek(buf, (ev_ssize_t)n, &pos, v, 8);
        if (k <= 0)
            return;
        size_t done = 0;
        for (int i = 0; i < k && i < 8 && n > 0; i++) {
            size_t m = v[i].iov_len < n ? v[i].iov_len : n;
            enum fe_scan_verdict verdict = fe_scan_feed(&c->scan, v[i].iov_base, m, &c->g->lim);
            if (verdict != FE_SCAN_OK) {
                fe_conn_refuse_scan(c, verdict); /* frees c */
                return;
            }
            n -= m;
            done += m;
        }
        if (n > 0 && evbuffer_ptr_set(buf, &pos, done, EVBUFFER_PTR_ADD) < 0)
            return;
    }
}

/* evhttp's bufferevent factory: runs for each accepted connection, before
 * evhttp sets it up; attaching waits for the timer's activation. */
static struct bufferevent *fe_conn_guard_bevcb(struct event_base *base, void *arg)
{
    fe_conn_guard_t *g = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, 0);
    if (!bev)
        return NULL; /* evhttp makes its own; that connection goes unguarded */
    fe_conn_t *c = sb_xcalloc(1, sizeof *c);
    c->g = g;
    c->bev = bev;
    c->fd = -1;
    bufferevent_incref(bev);
    c->input_cb = evbuffer_add_cb(bufferevent_get_input(bev), fe_conn_on_input, c);
    c->timer = evtimer_new(base, fe_conn_on_timer, c);
    c->next = g->conns;
    if (c->next)
        c->next->prev = c;
    g->conns = c;
    g->open++;
    c->over_cap = g->open > g->lim.max_connections;
    event_active(c->timer, EV_TIMEOUT, 1);
    return bev;
}

/* ---- interface ----------------------------------------------------------- */

fe_conn_guard_t *fe_conn_guard_new(struct event_base *base, struct evhttp *http, const fe_conn_guard_limits_t *lim,
                                   fe_reqlog_t *reqlog)
{
    fe_conn_guard_t *g = sb_xcalloc(1, sizeof *g);
    g->base = base;
    g->lim = *lim;
    g->reqlog = reqlog;
    evhttp_set_bevcb(http, fe_conn_guard_bevcb, g);
    return g;
}

void fe_conn_guard_destroy(fe_conn_guard_t **pg)
{
    if (!pg || !*pg)
        return;
    fe_conn_guard_t *g = *pg;
    while (g->conns) {
        fe_conn_t *c = g->conns;
        if (c->evcon) {
            /* evhttp_free closed every connection it had: one still here
             * missed its close callback, and its bufferevent is gone. */
            sb_warn("connection guard: a connection outlived evhttp");
            c->input_cb = NULL;
            c->fd = -1;
        }
        fe_conn_free(c);
    }
    while (g->lingers)
        fe_linger_end(g->lingers);
    free(g->by_fd);
    free(g);
    *pg = NULL;
}

bool fe_conn_guard_attach_request(fe_conn_guard_t *g, struct evhttp_connection *conn,
                                  void (*close_cb)(struct evhttp_connection *, void *), void *arg)
{
    fe_conn_t *c = fe_conn_find(g, conn);
    if (!c) {
        evhttp_connection_set_closecb(conn, close_cb, arg); /* an unguarded connection */
        return false;
    }
    c->reading = false;
    c->busy = true;
    event_del(c->timer);
    c->close_cb = close_cb;
    c->close_arg = arg;
    return c->over_cap;
}

void fe_conn_guard_detach_request(fe_conn_guard_t *g, struct evhttp_connection *conn)
{
    fe_conn_t *c = fe_conn_find(g, conn);
    if (!c) {
        evhttp_connection_set_closecb(conn, NULL, NULL);
        return;
    }
    c->close_cb = NULL;
    c->close_arg = NULL;
    if (!c->busy)
        return;
    c->busy = false;
    if (c->reading)
        fe_conn_arm(c); /* a next request began while this one was answered */
}

int fe_conn_guard_open(const fe_conn_guard_t *g)
{
    return g->open;
}
