/*
 * emu_server: the emulator's HTTP server (libevent evhttp, one event loop).
 *
 * It hands /v1/... and /v1beta/... to the route table (emu_routes.c), which
 * picks the protocol file (Chat Completions, Responses, Messages, Gemini),
 * journals each such request (emu_journal.c), serves the /_emu/... control
 * endpoints (health, journal, stats, route faults, scenarios), and owns the
 * life of every such request: a protocol handler only describes the reply
 * (struct sb_emu_reply, emu_reply.c); this file delivers it now, after a
 * timer, chunk by chunk, or never (hang), and notices when the client goes
 * away first. The handlers never call back into this file: what they read of
 * the request and the emulator is in emu_call.c.
 *
 * Faults of the delivery ([[emu:latency|trickle|reset|reset_after|endless]],
 * see emu_faults.c): nothing is written before a delay is over; a trickled
 * or reset plain reply is sent with its Content-Length and then the body in
 * pieces (or half of it, then a TCP reset); a stream is sent event by event
 * (or in pieces), an endless one generating its next event each time.
 * Writes are bounded: an endless stream waits while the client is not
 * reading.
 *
 * Client aborts. When a client closes its connection while a request is still
 * unanswered, libevent detaches the request from the connection (it becomes
 * ours to free) and frees the connection, calling our close callback first;
 * requests still attached at that point are freed by libevent itself. The
 * close callback therefore only records which case applies and marks the
 * request GONE; the request is reaped from its own timer on the next loop
 * iteration (a safe point, never inside libevent's callback stack).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "emu_faults.h"
#include "emu_internal.h"
#include "emu_routes.h"
#include "emu_scenarios.h"
#include "emu_server.h"
#include "sb_alloc.h"
#include "sb_id.h"
#include "sb_log.h"

/* Life of one /v1 request that is not answered synchronously. */
enum sb_emu_req_state {
    SB_EMU_REQ_DELAYED,   /* nothing sent yet; the timer fires when the reply is due */
    SB_EMU_REQ_STREAMING, /* status and headers sent; the timer sends the next chunk(s) or piece(s) */
    SB_EMU_REQ_HANGING,   /* nothing more will be sent; waiting for the client to leave */
    SB_EMU_REQ_GONE,      /* the client left (or we dropped it); reaped by the next timer */
};

struct sb_emu_req {
    struct sb_emu *emu;
    struct evhttp_request *req;      /* NULL once libevent freed it with the connection */
    struct evhttp_connection *evcon; /* NULL once the connection closed */
    bool req_detached;               /* libevent detached req: we must free it */
    bool dropping;                   /* we are closing the connection on purpose */
    enum sb_emu_req_state state;
    struct event *timer;
    struct event *watch; /* EV_READ on the client socket: notices the client leaving */
    struct sb_emu_reply reply;
    /* Progress of a STREAMING reply: an "event" is a chunk of a stream, or the whole body of a plain reply. */
    bool body_mode;    /* a plain reply sent in pieces (trickle, reset): the body is the one event */
    size_t events;     /* events fully sent */
    size_t off;        /* bytes of the current event sent */
    size_t sent;       /* bytes of body sent in all */
    size_t reset_at;   /* body_mode with reset: reset the connection once this many bytes are out */
    char *endless_cur; /* owned: the endless event being sent, or NULL */
    size_t endless_len;
    struct sb_emu_req *prev, *next;
};

/* An endless stream stops writing while this much is still queued for the client. */
#define ENDLESS_MAX_QUEUED (64 * 1024)

static void set_nodelay(evutil_socket_t fd)
{
    int one = 1;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) < 0)
        sb_debug("emulator: TCP_NODELAY on fd %d: %s", (int)fd, strerror(errno));
}

/* ---- connection tracking ------------------------------------------------------- */

static void req_set_state(struct sb_emu_req *r, enum sb_emu_req_state state);

/*
 * Runs when libevent is about to free a client connection (client closed,
 * error, timeout, or server shutdown). See the file comment.
 */
static void on_conn_close(struct evhttp_connection *evcon, void *arg)
{
    struct sb_emu *emu = arg;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0 && (size_t)fd < emu->conn_cap && emu->conn_by_fd[fd] == evcon) {
        emu->conn_by_fd[fd] = NULL;
    } else {
        for (size_t i = 0; i < emu->conn_cap; i++)
            if (emu->conn_by_fd[i] == evcon)
                emu->conn_by_fd[i] = NULL;
    }
    emu->stats.open_connections--;

    for (struct sb_emu_req *r = emu->reqs; r; r = r->next) {
        if (r->evcon != evcon)
            continue;
        r->evcon = NULL;
        if (r->watch)
            event_del(r->watch);
        if (r->req && evhttp_request_get_connection(r->req) == NULL)
            r->req_detached = true;
        else
            r->req = NULL;
        if (r->dropping || r->state == SB_EMU_REQ_GONE)
            continue;
        if (!emu->closing)
            emu->stats.closed_by_client++;
        req_set_state(r, SB_EMU_REQ_GONE);
        if (!emu->closing)
            event_active(r->timer, EV_TIMEOUT, 1);
    }
}

/* Called for every request: TCP_NODELAY and a close callback, once per connection. */
static void track_connection(struct sb_emu *emu, struct evhttp_request *req)
{
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    if (!evcon)
        return;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return;
    if ((size_t)fd >= emu->conn_cap) {
        size_t cap = emu->conn_cap ? emu->conn_cap : 64;
        while (cap <= (size_t)fd)
            cap *= 2;
        emu->conn_by_fd = sb_xrealloc(emu->conn_by_fd, cap * sizeof *emu->conn_by_fd);
        memset(emu->conn_by_fd + emu->conn_cap, 0, (cap - emu->conn_cap) * sizeof *emu->conn_by_fd);
        emu->conn_cap = cap;
    }
    if (emu->conn_by_fd[fd] == evcon)
        return;
    emu->conn_by_fd[fd] = evcon;
    set_nodelay(fd);
    evhttp_connection_set_closecb(evcon, on_conn_close, emu);
    emu->stats.open_connections++;
    emu->stats.connections_total++;
}

/* ---- request delivery ---------------------------------------------------------- */

static void req_set_state(struct sb_emu_req *r, enum sb_emu_req_state state)
{
    if (state == SB_EMU_REQ_GONE && r->state != SB_EMU_REQ_GONE)
        r->emu->stats.open_requests--;
    r->state = state;
}

static void req_free(struct sb_emu_req *r)
{
    struct sb_emu *emu = r->emu;
    if (r->state != SB_EMU_REQ_GONE)
        emu->stats.open_requests--;
    if (r->prev)
        r->prev->next = r->next;
    else
        emu->reqs = r->next;
    if (r->next)
        r->next->prev = r->prev;
    if (r->timer)
        event_free(r->timer);
    if (r->watch)
        event_free(r->watch);
    if (r->req && r->req_detached)
        evhttp_request_free(r->req);
    sb_emu_reply_clear(&r->reply);
    free(r->endless_cur);
    free(r);
}

static void add_reply_headers(struct sb_emu_req *r)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->req);
    evhttp_add_header(h, "Content-Type", r->reply.content_type);
    for (size_t i = 0; i < r->reply.nheaders; i++)
        evhttp_add_header(h, r->reply.headers[i].name, r->reply.headers[i].value);
}

/* Reason phrases libevent 2.1 lacks or words differently (it says "Client Error" for 429). */
static const char *status_reason(int status)
{
    switch (status) {
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 408:
        return "Request Timeout";
    case 409:
        return "Conflict";
    case 413:
        return "Payload Too Large";
    case 422:
        return "Unprocessable Entity";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    case 529:
        return "Overloaded";
    }
    return NULL;
}

static void arm_timer(struct sb_emu_req *r, int ms)
{
    struct timeval tv = {.tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000};
    evtimer_add(r->timer, &tv);
}

/*
 * Closes the client connection on purpose ([[emu:drop]], drop_after). What was
 * already queued (headers, earlier chunks) is flushed first: while output is
 * pending, the timer retries in 1 ms. Returns true if r was freed.
 */
static bool req_drop(struct sb_emu_req *r)
{
    struct bufferevent *bev = r->evcon ? evhttp_connection_get_bufferevent(r->evcon) : NULL;
    if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
        arm_timer(r, 1);
        return false;
    }
    r->dropping = true;
    if (r->evcon)
        evhttp_connection_free(r->evcon); /* runs on_conn_close, which frees or detaches r->req */
    req_free(r);
    return true;
}

/*
 * Resets the client connection on purpose ([[emu:reset]], reset_after): what
 * was queued is flushed first (the timer retries in 1 ms while output is
 * pending), then the socket is closed with SO_LINGER {1, 0}, so the kernel
 * sends a RST and the client's next read fails with ECONNRESET. libevent
 * would shut the socket down for writing before closing it, which sends a FIN
 * first (the client would see a clean EOF); so the socket is closed here, by
 * putting a placeholder socket in its descriptor slot (dup2), and libevent
 * then frees the connection and closes the placeholder. Returns true if r was
 * freed.
 */
static bool req_reset(struct sb_emu_req *r)
{
    struct bufferevent *bev = r->evcon ? evhttp_connection_get_bufferevent(r->evcon) : NULL;
    if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > 0) {
        arm_timer(r, 1);
        return false;
    }
    r->dropping = true;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        if (r->watch)
            event_del(r->watch);
        struct linger lg = {.l_onoff = 1, .l_linger = 0};
        if (setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg) < 0)
            sb_debug("emulator: SO_LINGER on fd %d: %s", (int)fd, strerror(errno));
        int placeholder = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (placeholder >= 0) {
            if (dup2(placeholder, fd) < 0)
                sb_debug("emulator: dup2 over fd %d: %s", (int)fd, strerror(errno));
            close(placeholder);
        }
    }
    if (r->evcon)
        evhttp_connection_free(r->evcon); /* runs on_conn_close, which frees or detaches r->req */
    req_free(r);
    return true;
}

/* The event being sent (a chunk, the body, or the next endless event, made on first use); NULL when none is left. */
static const char *current_event(struct sb_emu_req *r, size_t *len)
{
    struct sb_emu_reply *rep = &r->reply;
    if (r->body_mode) {
        *len = rep->body_len;
        return r->events == 0 ? (rep->body ? rep->body : "") : NULL;
    }
    if (r->events < rep->nchunks) {
        *len = strlen(rep->chunks[r->events]);
        return rep->chunks[r->events];
    }
    if (!rep->endless_json)
        return NULL;
    if (!r->endless_cur) {
        if (rep->endless_seq_field)
            json_object_set_new(rep->endless_json, rep->endless_seq_field,
                                json_integer((json_int_t)(rep->endless_seq + (long long)(r->events - rep->nchunks))));
        char *s = json_dumps(rep->endless_json, JSON_COMPACT | JSON_PRESERVE_ORDER);
        r->endless_cur = sb_xasprintf("%s%s%s", rep->endless_pre, s ? s : "{}", rep->endless_post);
        r->endless_len = strlen(r->endless_cur);
        free(s);
    }
    *len = r->endless_len;
    return r->endless_cur;
}

static bool more_events(const struct sb_emu_req *r)
{
    if (r->body_mode)
        return r->events == 0;
    return r->events < r->reply.nchunks || r->reply.endless_json;
}

/*
 * Sends what is due of a STREAMING reply: whole events, or with trickle one
 * piece of SB_EMU_TRICKLE_BYTES, until a pause (chunk_delay, trickle), a
 * fault (hang_after, drop_after, reset_after, the reset point of a body) or
 * the end. Returns true if r was freed (done, dropped or reset).
 */
static bool req_stream_step(struct sb_emu_req *r)
{
    struct sb_emu_reply *rep = &r->reply;
    for (;;) {
        if (r->body_mode && rep->reset && r->sent >= r->reset_at)
            return req_reset(r);
        if (r->off == 0 && !r->body_mode) {
            if (rep->hang_after >= 0 && r->events >= (size_t)rep->hang_after) {
                req_set_state(r, SB_EMU_REQ_HANGING);
                return false;
            }
            if (rep->drop_after >= 0 && r->events >= (size_t)rep->drop_after)
                return req_drop(r);
            if (rep->reset_after >= 0 && r->events >= (size_t)rep->reset_after)
                return req_reset(r);
        }
        size_t len = 0;
        const char *ev = current_event(r, &len);
        if (!ev)
            break;
        if (r->events >= rep->nchunks && !r->body_mode) {
            /* Endless: never queue without bound for a client that does not read. */
            struct bufferevent *bev = r->evcon ? evhttp_connection_get_bufferevent(r->evcon) : NULL;
            if (bev && evbuffer_get_length(bufferevent_get_output(bev)) > ENDLESS_MAX_QUEUED) {
                arm_timer(r, rep->chunk_delay_ms > 0 ? rep->chunk_delay_ms : 1);
                return false;
            }
        }
        size_t n = len - r->off;
        if (rep->trickle_ms > 0 && n > SB_EMU_TRICKLE_BYTES)
            n = SB_EMU_TRICKLE_BYTES;
        if (r->body_mode && rep->reset && r->sent + n > r->reset_at)
            n = r->reset_at - r->sent;
        struct evbuffer *buf = evbuffer_new();
        evbuffer_add(buf, ev + r->off, n);
        evhttp_send_reply_chunk(r->req, buf);
        evbuffer_free(buf);
        r->off += n;
        r->sent += n;
        bool event_done = r->off == len;
        if (event_done) {
            r->events++;
            r->off = 0;
            free(r->endless_cur);
            r->endless_cur = NULL;
        }
        if (r->body_mode && rep->reset && r->sent >= r->reset_at)
            continue; /* reset now, at the top */
        int pause = rep->trickle_ms > 0 ? rep->trickle_ms : event_done ? rep->chunk_delay_ms : 0;
        if (rep->endless_json && pause <= 0 && r->events >= rep->nchunks)
            pause = 1; /* an endless stream never spins */
        if (pause > 0 && more_events(r)) {
            arm_timer(r, pause);
            return false;
        }
    }
    if (!r->body_mode && rep->hang_after >= 0 && r->events >= (size_t)rep->hang_after) {
        req_set_state(r, SB_EMU_REQ_HANGING);
        return false;
    }
    if (!r->body_mode && rep->drop_after >= 0)
        return req_drop(r);
    if (!r->body_mode && rep->reset_after >= 0)
        return req_reset(r);
    evhttp_send_reply_end(r->req);
    r->req = NULL;
    req_free(r);
    return true;
}

/* Delivers the reply's first bytes (or all of it). The reply is due now. */
static void req_deliver(struct sb_emu_req *r)
{
    struct sb_emu_reply *rep = &r->reply;
    if (rep->drop) {
        req_drop(r);
        return;
    }
    if (rep->hang) {
        req_set_state(r, SB_EMU_REQ_HANGING);
        return;
    }
    add_reply_headers(r);
    if (rep->stream) {
        if (rep->reset && rep->reset_after < 0)
            rep->reset_after = rep->nchunks / 2 > 0 ? (long)(rep->nchunks / 2) : 1;
        evhttp_send_reply_start(r->req, rep->status, status_reason(rep->status));
        req_set_state(r, SB_EMU_REQ_STREAMING);
        req_stream_step(r);
        return;
    }
    if (rep->trickle_ms > 0 || rep->reset) {
        /* A plain reply in pieces: its real Content-Length, so the framing is not chunked. */
        char cl[32];
        snprintf(cl, sizeof cl, "%zu", rep->body_len);
        evhttp_add_header(evhttp_request_get_output_headers(r->req), "Content-Length", cl);
        r->body_mode = true;
        r->reset_at = rep->body_len / 2;
        evhttp_send_reply_start(r->req, rep->status, status_reason(rep->status));
        req_set_state(r, SB_EMU_REQ_STREAMING);
        req_stream_step(r);
        return;
    }
    struct evbuffer *buf = evbuffer_new();
    evbuffer_add(buf, rep->body ? rep->body : "", rep->body ? rep->body_len : 0);
    evhttp_send_reply(r->req, rep->status, status_reason(rep->status), buf);
    evbuffer_free(buf);
    r->req = NULL;
    req_free(r);
}

static void on_req_timer(evutil_socket_t fd, short what, void *arg)
{
    struct sb_emu_req *r = arg;
    switch (r->state) {
    case SB_EMU_REQ_DELAYED:
        req_deliver(r);
        break;
    case SB_EMU_REQ_STREAMING:
        req_stream_step(r);
        break;
    case SB_EMU_REQ_HANGING:
        break;
    case SB_EMU_REQ_GONE:
        req_free(r);
        break;
    }
}

/*
 * Runs when a client socket with an unanswered request becomes readable.
 * libevent does not read from a connection while its request awaits a reply,
 * so without this a client that gives up on a delayed or hanging request
 * would go unnoticed until we write. EOF or an error means the client left:
 * free the connection (on_conn_close marks r GONE). Data means a pipelined
 * request: stop watching and leave it to libevent.
 */
static void on_client_readable(evutil_socket_t fd, short what, void *arg)
{
    struct sb_emu_req *r = arg;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
        return;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        event_add(r->watch, NULL);
        return;
    }
    if (r->evcon)
        evhttp_connection_free(r->evcon);
}

/*
 * Takes over call->reply. A plain reply due now is sent at once; anything
 * else (delay, hang, drop, stream, trickle, reset) goes through r->timer, so
 * that connections are never freed inside libevent's request callback.
 */
static void req_start(struct sb_emu *emu, struct sb_emu_call *call)
{
    struct sb_emu_req *r = sb_xcalloc(1, sizeof *r);
    r->emu = emu;
    r->req = call->req;
    r->evcon = evhttp_request_get_connection(call->req);
    r->reply = call->reply;
    sb_emu_reply_init(&call->reply);
    r->state = SB_EMU_REQ_DELAYED;
    r->timer = evtimer_new(emu->base, on_req_timer, r);
    r->next = emu->reqs;
    if (emu->reqs)
        emu->reqs->prev = r;
    emu->reqs = r;
    emu->stats.open_requests++;

    long delay = (long)emu->latency_ms + r->reply.delay_ms;
    if (delay == 0 && !r->reply.hang && !r->reply.drop && !r->reply.stream && !r->reply.trickle_ms && !r->reply.reset) {
        req_deliver(r);
        return;
    }
    struct bufferevent *bev = r->evcon ? evhttp_connection_get_bufferevent(r->evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd >= 0) {
        r->watch = event_new(emu->base, fd, EV_READ, on_client_readable, r);
        event_add(r->watch, NULL);
    }
    arm_timer(r, (int)delay);
}

/* ---- routing ------------------------------------------------------------------- */

static const char *method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_TRACE:
        return "TRACE";
    case EVHTTP_REQ_CONNECT:
        return "CONNECT";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    }
    return "UNKNOWN";
}

static void send_json_now(struct evhttp_request *req, int status, json_t *json /* stolen */)
{
    char *s = json_dumps(json, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(json);
    struct evbuffer *buf = evbuffer_new();
    if (s)
        evbuffer_add(buf, s, strlen(s));
    free(s);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, status, status_reason(status), buf);
    evbuffer_free(buf);
}

/* Parses "limit" from a query string; 0 (all) when absent or invalid. */
static size_t query_limit(const char *query)
{
    if (!query)
        return 0;
    struct evkeyvalq params;
    params.tqh_first = NULL;
    params.tqh_last = &params.tqh_first;
    size_t limit = 0;
    if (evhttp_parse_query_str(query, &params) == 0) {
        const char *v = evhttp_find_header(&params, "limit");
        if (v) {
            char *end = NULL;
            errno = 0;
            long n = strtol(v, &end, 10);
            if (!errno && end != v && *end == '\0' && n > 0)
                limit = (size_t)n;
        }
    }
    evhttp_clear_headers(&params);
    return limit;
}

static json_t *stats_json(const struct sb_emu *emu)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "requests_total", (json_int_t)emu->stats.requests_total,
                     "open_requests", (json_int_t)emu->stats.open_requests, "closed_by_client",
                     (json_int_t)emu->stats.closed_by_client, "open_connections",
                     (json_int_t)emu->stats.open_connections, "connections_total",
                     (json_int_t)emu->stats.connections_total, "journal_size",
                     (json_int_t)sb_emu_journal_size(emu->journal), "by_model", sb_emu_faults_by_model(emu->faults));
}

/*
 * A per-model control table: /_emu/faults[/{model}] (emu_faults.h) or
 * /_emu/scenarios[/{model}] (emu_scenarios.h); rest is what follows the
 * table's name; scenarios says which table.
 */
static void handle_table(struct sb_emu *emu, struct evhttp_request *req, enum evhttp_cmd_type cmd, const char *rest,
                         bool scenarios)
{
    char *model = NULL;
    if (*rest == '/') {
        model = evhttp_uridecode(rest + 1, 0, NULL);
        if (!model) {
            send_json_now(req, 400, json_pack("{s:s}", "error", "bad percent-encoding in the model"));
            return;
        }
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    char *body = sb_xmalloc(len + 1);
    if (len)
        evbuffer_copyout(in, body, len);
    body[len] = '\0';
    int status = 500;
    json_t *out = scenarios ? sb_emu_scenarios_control(emu->scenarios, method_name(cmd), model, body, len, &status)
                            : sb_emu_faults_control(emu->faults, method_name(cmd), model, body, len, &status);
    send_json_now(req, status, out);
    free(body);
    free(model);
}

/* /_emu/...: the test-control endpoints. Always answered synchronously. */
static void handle_control(struct sb_emu *emu, struct evhttp_request *req, enum evhttp_cmd_type cmd, const char *path,
                           const char *query)
{
    if (!strcmp(path, "/_emu/health") && cmd == EVHTTP_REQ_GET) {
        send_json_now(req, 200, json_pack("{s:b}", "ok", 1));
    } else if (!strcmp(path, "/_emu/requests") && cmd == EVHTTP_REQ_GET) {
        json_t *list = sb_emu_journal_list(emu->journal, query_limit(query));
        send_json_now(req, 200, json_pack("{s:o}", "requests", list));
    } else if (!strcmp(path, "/_emu/requests") && cmd == EVHTTP_REQ_DELETE) {
        sb_emu_journal_clear(emu->journal);
        send_json_now(req, 200, json_pack("{s:b}", "ok", 1));
    } else if (!strcmp(path, "/_emu/stats") && cmd == EVHTTP_REQ_GET) {
        send_json_now(req, 200, stats_json(emu));
    } else if (!strcmp(path, "/_emu/stats") && cmd == EVHTTP_REQ_DELETE) {
        emu->stats.requests_total = 0;
        emu->stats.closed_by_client = 0;
        emu->stats.connections_total = 0;
        sb_emu_faults_reset_stats(emu->faults);
        send_json_now(req, 200, json_pack("{s:b}", "ok", 1));
    } else if (!strcmp(path, "/_emu/faults") || !strncmp(path, "/_emu/faults/", 13)) {
        handle_table(emu, req, cmd, path + 12, false);
    } else if (!strcmp(path, "/_emu/scenarios") || !strncmp(path, "/_emu/scenarios/", 16)) {
        handle_table(emu, req, cmd, path + 15, true);
    } else {
        send_json_now(req, 404, json_pack("{s:s}", "error", "no such emulator control endpoint"));
    }
}

static void handle_v1(struct sb_emu *emu, struct evhttp_request *req, enum evhttp_cmd_type cmd, const char *path,
                      const char *query)
{
    emu->stats.requests_total++;

    struct sb_emu_call call = {.emu = emu, .req = req, .method = method_name(cmd), .path = path, .query = query};
    sb_id_new(call.request_id, sizeof call.request_id, "req_", 16);
    sb_emu_reply_init(&call.reply);
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    call.body_len = evbuffer_get_length(in);
    char *body = sb_xmalloc(call.body_len + 1);
    if (call.body_len)
        evbuffer_copyout(in, body, call.body_len);
    body[call.body_len] = '\0';
    call.body = body;
    if (call.body_len)
        call.json = json_loadb(body, call.body_len, JSON_DECODE_ANY, NULL);

    json_t *entry = sb_emu_journal_entry(&call, ++emu->journal_seq);

    sb_emu_route(&call);
    if (call.reply.status == 0)
        sb_emu_openai_error(&call.reply, 500, "emulator handler produced no reply", "server_error", NULL, NULL);

    sb_emu_reply_header(&call.reply, "x-request-id", call.request_id);
    if (entry) {
        json_object_set_new(entry, "request_id", json_string(call.request_id));
        json_object_set_new(entry, "protocol", call.protocol ? json_string(call.protocol) : json_null());
        if (call.reply.hang || call.reply.drop)
            json_object_set_new(entry, "status", json_null());
        else
            json_object_set_new(entry, "status", json_integer(call.reply.status));
        json_object_set_new(entry, "model", call.model ? json_string(call.model) : json_null());
        json_object_set_new(entry, "fault", json_boolean(call.faulted));
        sb_emu_journal_add(emu->journal, entry);
    }
    if (call.model)
        sb_emu_faults_note(emu->faults, call.model, call.faulted);

    req_start(emu, &call);
    json_decref(call.json);
    free(call.model);
    free(body);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    struct sb_emu *emu = arg;
    track_connection(emu, req);
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!path || !*path)
        path = "/";
    if (!strncmp(path, "/_emu/", 6))
        handle_control(emu, req, cmd, path, query);
    else if (!strcmp(path, "/v1") || !strncmp(path, "/v1/", 4) || !strcmp(path, "/v1beta") ||
             !strncmp(path, "/v1beta/", 8) || !strncmp(path, "/_search/", 9) || !strncmp(path, "/_pages/", 8))
        handle_v1(emu, req, cmd, path, query);
    else
        send_json_now(req, 404,
                      json_pack("{s:{s:s, s:s, s:n, s:n}}", "error", "message", "Not found", "type",
                                "invalid_request_error", "param", "code"));
}

/* ---- lifecycle ----------------------------------------------------------------- */

struct sb_emu *sb_emu_new(struct event_base *base, const struct sb_emu_config *cfg)
{
    struct sb_emu *emu = sb_xcalloc(1, sizeof *emu);
    emu->base = base;
    emu->latency_ms = cfg->latency_ms > 0 ? cfg->latency_ms : 0;
    if (cfg->require_key && *cfg->require_key)
        emu->require_key = sb_xstrdup(cfg->require_key);
    emu->journal = sb_emu_journal_new(cfg->journal_max ? cfg->journal_max : SB_EMU_DEFAULT_JOURNAL);
    emu->faults = sb_emu_faults_new();
    emu->scenarios = sb_emu_scenarios_new();

    emu->http = evhttp_new(base);
    if (!emu->http) {
        sb_error("emulator: evhttp_new failed");
        goto fail;
    }
    evhttp_set_max_body_size(emu->http, (ev_ssize_t)(cfg->max_body ? cfg->max_body : SB_EMU_DEFAULT_MAX_BODY));
    evhttp_set_max_headers_size(emu->http, 64 * 1024);
    evhttp_set_timeout(emu->http, cfg->idle_timeout_s > 0 ? cfg->idle_timeout_s : SB_EMU_DEFAULT_IDLE_TIMEOUT_S);
    evhttp_set_allowed_methods(emu->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                              EVHTTP_REQ_DELETE | EVHTTP_REQ_PATCH | EVHTTP_REQ_OPTIONS);
    evhttp_set_gencb(emu->http, on_request, emu);

    const char *host = cfg->host ? cfg->host : SB_EMU_DEFAULT_HOST;
    if (cfg->port < 0 || cfg->port > 65535)
        goto fail;
    emu->bound = evhttp_bind_socket_with_handle(emu->http, host, (ev_uint16_t)cfg->port);
    if (!emu->bound) {
        sb_error("emulator: cannot listen on %s:%d: %s", host, cfg->port, strerror(errno));
        goto fail;
    }
    evutil_socket_t lfd = evhttp_bound_socket_get_fd(emu->bound);
    set_nodelay(lfd); /* inherited by accepted sockets on Linux; set again per connection */
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getsockname(lfd, (struct sockaddr *)&ss, &sl) < 0)
        goto fail;
    if (ss.ss_family == AF_INET)
        emu->port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    else if (ss.ss_family == AF_INET6)
        emu->port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    return emu;

fail:
    sb_emu_destroy(&emu);
    return NULL;
}

int sb_emu_port(const struct sb_emu *emu)
{
    return emu->port;
}

void sb_emu_get_stats(const struct sb_emu *emu, struct sb_emu_stats *out)
{
    *out = emu->stats;
}

void sb_emu_destroy(struct sb_emu **emup)
{
    if (!emup || !*emup)
        return;
    struct sb_emu *emu = *emup;
    emu->closing = true;
    /* Frees every connection; on_conn_close sorts out which requests libevent frees. */
    if (emu->http)
        evhttp_free(emu->http);
    while (emu->reqs)
        req_free(emu->reqs);
    sb_emu_journal_destroy(&emu->journal);
    sb_emu_faults_destroy(&emu->faults);
    sb_emu_scenarios_destroy(&emu->scenarios);
    for (size_t i = 0; i < emu->ntags; i++)
        free(emu->tags[i]);
    free(emu->conn_by_fd);
    free(emu->require_key);
    free(emu);
    *emup = NULL;
}
