/*
 * fe_request: request lifecycle: routing, authentication, replies, the
 * request-log row, and freeing at a safe point.
 */
#include "fe_request.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <sys/queue.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "fe_limits.h"
#include "fe_router.h"
#include "fe_stream.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_keyhash.h"
#include "sb_log.h"
#include "sb_time.h"

static const char *fe_method_name(enum evhttp_cmd_type cmd)
{
    switch (cmd) {
    case EVHTTP_REQ_GET:
        return "GET";
    case EVHTTP_REQ_POST:
        return "POST";
    case EVHTTP_REQ_DELETE:
        return "DELETE";
    case EVHTTP_REQ_PUT:
        return "PUT";
    case EVHTTP_REQ_HEAD:
        return "HEAD";
    case EVHTTP_REQ_OPTIONS:
        return "OPTIONS";
    case EVHTTP_REQ_PATCH:
        return "PATCH";
    default:
        return "OTHER";
    }
}

static void fe_request_free(fe_request_t *r)
{
    if (r->deadline)
        event_free(r->deadline);
    if (r->client_watch)
        event_free(r->client_watch);
    fe_stream_free(&r->stream_out);
    json_decref(r->key);
    json_decref(r->model);
    json_decref(r->body);
    json_decref(r->canonical);
    json_decref(r->context);
    json_decref(r->job_input);
    json_decref(r->prompt_ref);
    json_decref(r->style_state);
    fe_collect_free(&r->result);
    free(r->model_id);
    free(r->requested_model);
    json_decref(r->fallbacks);
    free(r->previous_response_id);
    free(r->path);
    free(r->path_arg);
    free(r->error_text);
    free(r);
}

void fe_request_hold(fe_request_t *r) { r->pending++; }

void fe_request_account(const fe_request_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "%lld", (long long)json_integer_value(json_object_get(r->key, "account_id")));
}

bool fe_request_release(fe_request_t *r)
{
    r->pending--;
    if (r->pending == 0 && r->state == FE_REQ_DONE) {
        fe_request_free(r);
        return false;
    }
    return true;
}

static long long fe_request_key_field(const fe_request_t *r, const char *f)
{
    json_t *v = json_object_get(r->key, f);
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

static void fe_request_log(fe_request_t *r)
{
    int64_t tokens_in, tokens_out;
    fe_limits_usage(r, &tokens_in, &tokens_out);
    fe_reqlog_row_t row = {
        .request_id = r->request_id,
        .ts_ms = r->start_ms,
        .key_id = fe_request_key_field(r, "key_id"),
        .account_id = fe_request_key_field(r, "account_id"),
        .model = r->model_id,
        .path = r->path,
        .status = r->status,
        .latency_ms = (int)((sb_mono_us() - r->start_us) / 1000),
        .upstream_ms = (int)r->result.upstream_ms,
        .requested_model = r->requested_model,
        .tokens_in = tokens_in,
        .tokens_out = tokens_out,
        .tokens_estimated = r->est_tokens,
        .reasoning_tokens = r->result.reasoning_tokens,
        .error = r->error_text,
        .stream = r->stream,
    };
    fe_reqlog_add(r->srv->reqlog, &row);
}

static void fe_request_add_headers(fe_request_t *r, const char *content_type, int retry_after)
{
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->http);
    evhttp_add_header(h, "Content-Type", content_type);
    evhttp_add_header(h, "x-request-id", r->request_id);
    evhttp_add_header(h, "request-id", r->request_id); /* the name Anthropic's SDKs read */
    if (retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry_after);
        evhttp_add_header(h, "Retry-After", ra);
    }
    if (r->no_retry && r->status >= 400)
        evhttp_add_header(h, "x-should-retry", "false");
}

/* The request is over (its reply sent, or its client gone): state DONE, the
 * log row, and the free unless an asynchronous step still holds it. */
static void fe_request_done(fe_request_t *r)
{
    if (r->conn) {
        fe_conn_guard_detach_request(r->srv->guard, r->conn);
        r->conn = NULL;
    }
    fe_request_log(r);
    fe_limits_release(r, NULL); /* a request that ends early (client gone, deadline) still frees its slot */
    r->srv->active_requests--;
    if (r->pending == 0)
        fe_request_free(r);
}

/* Stops the timers of a request whose reply is being finished. */
static void fe_request_stop_watching(fe_request_t *r)
{
    r->state = FE_REQ_DONE;
    fe_stream_free(&r->stream_out);
    if (r->deadline)
        event_del(r->deadline);
    if (r->client_watch) /* the connection may serve its next request now */
        event_del(r->client_watch);
}

/* Reason phrases libevent 2.1 does not know (it says "Client Error"); NULL:
 * libevent's own. */
static const char *fe_request_reason(int status)
{
    switch (status) {
    case 429:
        return "Too Many Requests";
    case 431:
        return "Request Header Fields Too Large";
    default:
        return NULL;
    }
}

/* Sends the reply (if the client is still there) and ends the request. A
 * started stream just ends: its status went out with its first bytes, and
 * `status` is only what the request log records. */
static void fe_request_send(fe_request_t *r, int status, const char *content_type, const void *data, size_t len,
                            int retry_after)
{
    if (r->state == FE_REQ_DONE)
        return;
    fe_request_stop_watching(r);
    r->status = status;
    if (r->stream_started) {
        if (r->http) {
            if (r->conn) { /* evhttp may free the connection once the reply is out */
                fe_conn_guard_detach_request(r->srv->guard, r->conn);
                r->conn = NULL;
            }
            evhttp_send_reply_end(r->http);
            r->http = NULL;
        } else if (status < 400) {
            r->status = 499; /* the client left before the end */
        }
    } else if (r->http) {
        fe_request_add_headers(r, content_type, retry_after);
        struct evbuffer *buf = evbuffer_new();
        if (data && len)
            evbuffer_add(buf, data, len);
        evhttp_send_reply(r->http, status, fe_request_reason(status), buf);
        evbuffer_free(buf);
        r->http = NULL;
    }
    fe_request_done(r);
}

bool fe_request_stream_start(fe_request_t *r, const char *content_type)
{
    if (r->stream_started || !r->http || r->state == FE_REQ_DONE)
        return r->stream_started;
    r->stream_started = true;
    r->status = 200;
    fe_request_add_headers(r, content_type, 0);
    struct evkeyvalq *h = evhttp_request_get_output_headers(r->http);
    evhttp_add_header(h, "Cache-Control", "no-cache");
    evhttp_add_header(h, "X-Accel-Buffering", "no"); /* proxies must not buffer the stream */
    evhttp_send_reply_start(r->http, 200, "OK");
    return true;
}

void fe_request_stream_write(fe_request_t *r, struct evbuffer *buf)
{
    if (r->http && r->stream_started && r->state != FE_REQ_DONE && evbuffer_get_length(buf) > 0)
        evhttp_send_reply_chunk(r->http, buf);
    evbuffer_drain(buf, evbuffer_get_length(buf));
}

void fe_request_stream_end(fe_request_t *r, int log_status) { fe_request_send(r, log_status, NULL, NULL, 0, 0); }

static void fe_request_finish(fe_request_t *r, int status, json_t *body, int retry_after)
{
    char *text = body && r->state != FE_REQ_DONE ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    fe_request_send(r, status, "application/json", text, text ? strlen(text) : 0, retry_after);
    free(text);
}

void fe_request_reply_json(fe_request_t *r, int status, json_t *body) { fe_request_finish(r, status, body, 0); }

void fe_request_reply_raw(fe_request_t *r, int status, const char *content_type, const void *data, size_t len)
{
    fe_request_send(r, status, content_type, data, len, 0);
}

int fe_request_query_get(const fe_request_t *r, const char *name, char *buf, size_t len)
{
    const struct evhttp_uri *uri = r->http ? evhttp_request_get_evhttp_uri(r->http) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!query)
        return -1;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    if (evhttp_parse_query_str(query, &q) != 0) {
        evhttp_clear_headers(&q);
        return -1;
    }
    const char *v = evhttp_find_header(&q, name);
    int rc = -1;
    if (v && strlen(v) < len) {
        memcpy(buf, v, strlen(v) + 1);
        rc = 0;
    }
    evhttp_clear_headers(&q);
    return rc;
}

void fe_request_fail(fe_request_t *r, const fe_error_t *e)
{
    r->no_retry = e->no_retry;
    free(r->error_text);
    r->error_text = sb_xstrdup(e->message);
    fe_request_finish(r, e->status, r->style->error_body(r, e), e->retry_after);
}

void fe_request_failf(fe_request_t *r, int status, const char *kind, const char *code, const char *param,
                      const char *fmt, ...)
{
    fe_error_t e;
    char msg[sizeof e.message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fe_error_set(&e, status, kind, code, param, "%s", msg);
    fe_request_fail(r, &e);
}

/* The client closed its connection before the reply. */
static void fe_request_on_close(struct evhttp_connection *conn, void *arg)
{
    fe_request_t *r = arg;
    r->conn = NULL;
    /* evhttp frees the request with its connection — except a streamed
     * reply's, which it hands over to us when the client leaves mid-stream. */
    if (r->http && !evhttp_request_get_connection(r->http))
        evhttp_request_free(r->http);
    r->http = NULL; /* no reply */
    if (r->client_watch)
        event_del(r->client_watch);
    if (r->state == FE_REQ_RUNNING)
        fe_broker_cancel(r->srv->broker, r->request_id);
    if (r->state != FE_REQ_DONE && r->state != FE_REQ_STORING) {
        /* 499: the nginx convention for "client closed request". */
        free(r->error_text);
        r->error_text = sb_xstrdup("client closed the connection");
        fe_request_finish(r, 499, NULL, 0);
    }
}

/*
 * libevent's evhttp stops reading a connection while its request is being
 * answered, so it never notices a client that hangs up meanwhile. The
 * request watches the socket itself: EOF (or an error) means the client
 * left, and freeing the connection runs fe_request_on_close, which cancels
 * the job upstream. Data means a pipelined request: stop watching, evhttp
 * reads it after this reply.
 */
static void fe_request_on_client_readable(evutil_socket_t fd, short what, void *arg)
{
    fe_request_t *r = arg;
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n > 0)
        return;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
        event_add(r->client_watch, NULL);
        return;
    }
    if (r->conn)
        evhttp_connection_free(r->conn); /* may free r (fe_request_on_close) */
}

static void fe_request_watch_client(fe_request_t *r)
{
    struct bufferevent *bev = r->conn ? evhttp_connection_get_bufferevent(r->conn) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (fd < 0)
        return;
    r->client_watch = event_new(r->srv->base, fd, EV_READ, fe_request_on_client_readable, r);
    event_add(r->client_watch, NULL);
}

static void fe_request_on_key(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r) || r->state == FE_REQ_DONE)
        return;
    if (err) {
        fe_request_failf(r, 503, SB_ERR_SERVER, "service_unavailable", NULL,
                         "The service is temporarily unable to check credentials, retry later");
        return;
    }
    if (json_is_true(json_object_get(rec, "missing")) || !json_is_true(json_object_get(rec, "usable"))) {
        fe_request_failf(r, 401, SB_ERR_AUTHENTICATION, "invalid_api_key", NULL, "Invalid API Key");
        return;
    }
    r->key = json_incref(rec);
    r->endpoint(r);
}

static void fe_request_set_nodelay(struct evhttp_connection *conn)
{
    struct bufferevent *bev = evhttp_connection_get_bufferevent(conn);
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* The request line and headers as the client sent them, line ends included
 * (an HTTP/1.1 version assumed): what --max-header-bytes limits. */
static size_t fe_request_header_bytes(struct evhttp_request *http)
{
    const char *uri = evhttp_request_get_uri(http);
    size_t n = strlen(fe_method_name(evhttp_request_get_command(http))) + 1 + (uri ? strlen(uri) : 0) +
               sizeof " HTTP/1.1\r\n" - 1;
    const struct evkeyvalq *headers = evhttp_request_get_input_headers(http);
    for (const struct evkeyval *h = TAILQ_FIRST(headers); h; h = TAILQ_NEXT(h, next))
        n += strlen(h->key) + 2 + strlen(h->value) + 2;
    return n + 2;
}

void fe_request_handle(struct evhttp_request *http, void *arg)
{
    fe_server_t *srv = arg;
    fe_request_t *r = sb_xcalloc(1, sizeof *r);
    r->srv = srv;
    r->http = http;
    r->start_us = sb_mono_us();
    r->start_ms = sb_now_ms();
    r->store = true;
    r->n = 1;
    sb_id_new(r->request_id, sizeof r->request_id, "req_", 16);
    fe_collect_init(&r->result);
    srv->active_requests++;

    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(http);
    const char *raw_path = uri ? evhttp_uri_get_path(uri) : NULL;
    char *decoded = raw_path ? evhttp_uridecode(raw_path, 0, NULL) : NULL;
    r->path = sb_xstrdup(decoded ? decoded : "/");
    free(decoded);
    r->style = fe_router_style_for_path(r->path);

    bool over_cap = false;
    r->conn = evhttp_request_get_connection(http);
    if (r->conn) {
        fe_request_set_nodelay(r->conn);
        over_cap = fe_conn_guard_attach_request(srv->guard, r->conn, fe_request_on_close, r);
    }
    if (over_cap) {
        /* The connection was accepted beyond --max-connections: refused, and
         * closed after the reply so that the client reconnects. */
        evhttp_add_header(evhttp_request_get_output_headers(http), "Connection", "close");
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, "too_many_connections", NULL,
                     "This gateway instance has too many open connections; retry shortly.");
        e.retry_after = 1;
        fe_request_fail(r, &e);
        return;
    }
    size_t header_bytes = fe_request_header_bytes(http);
    if (header_bytes > srv->cfg.max_header_bytes) {
        fe_request_failf(r, 431, SB_ERR_TOO_LARGE, "headers_too_large", NULL,
                         "Request header fields too large: %zu bytes of request line and headers exceed the limit "
                         "of %zu bytes.",
                         header_bytes, srv->cfg.max_header_bytes);
        return;
    }

    const char *method = fe_method_name(evhttp_request_get_command(http));
    const fe_route_t *route;
    switch (fe_router_match(method, r->path, &route, &r->path_arg)) {
    case FE_ROUTE_NO_PATH:
        fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Invalid URL (%s %.200s)", method, r->path);
        return;
    case FE_ROUTE_BAD_METHOD:
        fe_request_failf(r, 405, SB_ERR_INVALID_REQUEST, "method_not_allowed", NULL,
                         "Method %s is not allowed for %.200s", method, r->path);
        return;
    case FE_ROUTE_OK:
        break;
    }
    r->style = route->fn == fe_models_list ? fe_models_style(http, route->style) : route->style;
    r->endpoint = route->fn;
    if (srv->draining) {
        fe_request_failf(r, 503, SB_ERR_OVERLOADED, "shutting_down", NULL, "The gateway is restarting, retry");
        return;
    }
    size_t key_len = 0;
    const char *key = r->style->key(http, &key_len);
    if (!key) {
        const char *how = r->style == &fe_style_messages ? "the 'x-api-key' header"
                          : r->style == &fe_style_gemini  ? "the 'x-goog-api-key' header"
                                                          : "'Authorization: Bearer <API_KEY>'";
        fe_request_failf(r, 401, SB_ERR_AUTHENTICATION, "missing_api_key", NULL,
                         "Invalid API Key: no API key provided. Send it as %s.", how);
        return;
    }
    if (!sb_key_well_formed(key, key_len)) {
        fe_request_failf(r, 401, SB_ERR_AUTHENTICATION, "invalid_api_key", NULL, "Invalid API Key");
        return;
    }
    r->state = FE_REQ_AUTH;
    fe_request_watch_client(r);
    fe_request_hold(r);
    fe_auth_lookup_key(srv->auth, key, key_len, fe_request_on_key, r);
}
