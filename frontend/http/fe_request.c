/*
 * fe_request: request lifecycle: routing, authentication, replies, the
 * request-log row, and freeing at a safe point.
 */
#include "fe_request.h"

#include <assert.h>
#include <event2/buffer.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_metrics.h"
#include "fe_router.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_keyhash.h"
#include "sb_log.h"
#include "sb_time.h"
#include "sb_utf8.h"

struct fe_request_cleanup {
    fe_request_cleanup_fn fn;
    void *arg;
    struct fe_request_cleanup *next;
};

static void fe_request_free(fe_request_t *r)
{
    while (r->cleanups) { /* they ran at the end; only the list is left */
        struct fe_request_cleanup *c = r->cleanups;
        r->cleanups = c->next;
        free(c);
    }
    if (r->deadline)
        event_free(r->deadline);
    free(r->tracestate);
    json_decref(r->key);
    json_decref(r->model);
    json_decref(r->body);
    json_decref(r->context);
    json_decref(r->job_input);
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
    free(r->requested_model);
    json_decref(r->fallbacks);
    free(r->path);
    free(r->path_arg);
    free(r->error_text);
    /* A request is 2 KiB: beyond malloc's per-thread cache, so each one
     * would take its slow path (and often a consolidation of the small
     * free chunks). A few are kept for the next requests instead. */
    fe_server_t *srv = r->srv;
    if (srv->n_spare < FE_REQUEST_SPARE_MAX) {
        r->next_reap = srv->spare;
        srv->spare = r;
        srv->n_spare++;
        return;
    }
    free(r);
}

/* A zeroed request, from the spares when there is one. */
static fe_request_t *fe_request_alloc(fe_server_t *srv)
{
    fe_request_t *r = srv->spare;
    if (!r)
        return sb_xcalloc(1, sizeof *r);
    srv->spare = r->next_reap;
    srv->n_spare--;
    memset(r, 0, sizeof *r);
    return r;
}

void fe_request_spares_free(fe_server_t *srv)
{
    while (srv->spare) {
        fe_request_t *r = srv->spare;
        srv->spare = r->next_reap;
        free(r);
    }
    srv->n_spare = 0;
}

void fe_request_cleanup_add(fe_request_t *r, fe_request_cleanup_fn fn, void *arg)
{
    if (r->ended) {
        fn(r, arg);
        return;
    }
    struct fe_request_cleanup *c = sb_xcalloc(1, sizeof *c);
    c->fn = fn;
    c->arg = arg;
    c->next = r->cleanups;
    r->cleanups = c;
}

/* Runs the cleanups, newest first; each once. */
static void fe_request_run_cleanups(fe_request_t *r)
{
    r->ended = true;
    for (struct fe_request_cleanup *c = r->cleanups; c; c = c->next)
        c->fn(r, c->arg);
}

void fe_request_hold(fe_request_t *r)
{
    r->pending++;
}

void fe_request_account(const fe_request_t *r, char *buf, size_t len)
{
    snprintf(buf, len, "%lld", (long long)json_integer_value(json_object_get(r->key, "account_id")));
}

void fe_request_set_state(fe_request_t *r, enum fe_req_state s)
{
    assert(r->state != FE_REQ_DONE || s == FE_REQ_DONE);
    r->state = s;
}

/* Puts an ended request with nothing pending on the reap list (once: a
 * request is DONE only once, and pending reaches 0 after that only once). */
static void fe_request_schedule_free(fe_request_t *r)
{
    fe_server_t *srv = r->srv;
    r->next_reap = srv->reap_list;
    srv->reap_list = r;
    if (srv->reap)
        event_active(srv->reap, EV_TIMEOUT, 0);
}

void fe_request_reap(fe_server_t *srv)
{
    while (srv->reap_list) {
        fe_request_t *r = srv->reap_list;
        srv->reap_list = r->next_reap;
        fe_request_free(r);
    }
}

bool fe_request_release(fe_request_t *r)
{
    assert(r->pending > 0);
    r->pending--;
    if (r->state != FE_REQ_DONE)
        return true;
    if (r->pending == 0)
        fe_request_schedule_free(r);
    return false;
}

static long long fe_request_key_field(const fe_request_t *r, const char *f)
{
    json_t *v = json_object_get(r->key, f);
    return json_is_integer(v) ? (long long)json_integer_value(v) : 0;
}

/* The model that answered, when it is a configured one (bounded labels). */
static const char *fe_request_model_label(const fe_request_t *r, const char *field)
{
    if (!r->model || json_is_true(json_object_get(r->model, "missing")))
        return NULL;
    return json_string_value(json_object_get(r->model, field));
}

static void fe_request_log(fe_request_t *r)
{
    if (r->no_log)
        return;
    int64_t total_us = sb_mono_us() - r->start_us;
    fe_metrics_request(&(fe_metrics_request_t){
        .style = r->style ? r->style->name : "",
        .model = fe_request_model_label(r, "id"),
        .upstream = fe_request_model_label(r, "provider"),
        .status = r->status,
        .total_us = total_us,
        .upstream_us = r->submitted ? r->result.upstream_us : -1,
        .ttft_us = r->first_token_us > 0 ? r->first_token_us - r->start_us : -1,
        .tokens_in = r->log_tokens_in,
        .tokens_out = r->log_tokens_out,
    });
    fe_reqlog_row_t row = {
        .request_id = r->request_id,
        .trace_id = r->trace.trace_id,
        .ts_ms = r->start_ms,
        .key_id = fe_request_key_field(r, "key_id"),
        .account_id = fe_request_key_field(r, "account_id"),
        .model = r->parsed.model_id,
        .path = r->path,
        .status = r->status,
        .latency_ms = (int)(total_us / 1000),
        .upstream_ms = r->result.upstream_us >= 0 ? (int)(r->result.upstream_us / 1000) : -1,
        .requested_model = r->requested_model,
        .tokens_in = r->log_tokens_in,
        .tokens_out = r->log_tokens_out,
        .tokens_estimated = r->est_tokens,
        .reasoning_tokens = r->result.reasoning_tokens,
        .error = r->error_text,
        .stream = r->parsed.stream,
        .tool_calls = r->result.tool_calls,
        .limit_block = r->taken.id[0] ? r->taken.id : NULL,
        .tokens_reserved = r->taken.reserved > 0 ? r->taken.reserved : 0,
    };
    fe_reqlog_add(r->srv->reqlog, &row);
    if (sb_log_enabled(SB_LOG_DEBUG))
        fe_request_log_line(r, SB_LOG_DEBUG, "%s %s %d %lld us%s", r->route ? r->route->method : "-", r->path,
                            r->status, (long long)total_us, r->error_text ? " (error)" : "");
}

static void fe_request_add_headers(fe_request_t *r, const char *content_type, int retry_after)
{
    sb_http_req_t *h = r->http;
    if (content_type)
        sb_http_req_add_header(h, "Content-Type", content_type);
    sb_http_req_add_header(h, "x-request-id", r->request_id);
    sb_http_req_add_header(h, "request-id", r->request_id); /* the name Anthropic's SDKs read */
    if (retry_after > 0) {
        char ra[16];
        snprintf(ra, sizeof ra, "%d", retry_after);
        sb_http_req_add_header(h, "Retry-After", ra);
    }
    if (r->no_retry && r->status >= 400)
        sb_http_req_add_header(h, "x-should-retry", "false");
}

/* The request is over (its reply sent, or its client gone): state DONE, the
 * cleanups (a request that ends early, client gone or deadline, still
 * frees its slot and cancels its job), the log row, and the free at the
 * next reap unless an asynchronous step still holds it. */
static void fe_request_done(fe_request_t *r)
{
    fe_request_run_cleanups(r);
    fe_request_log(r);
    r->srv->active_requests--;
    if (r->stream_started)
        r->srv->streams_open--;
    if (r->pending == 0)
        fe_request_schedule_free(r);
}

/* Stops the timers of a request whose reply is being finished. */
static void fe_request_stop_watching(fe_request_t *r)
{
    fe_request_set_state(r, FE_REQ_DONE);
    if (r->deadline)
        event_del(r->deadline);
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
    /* The request is done (its request_log row taken) before the reply's
     * last bytes are handed to the connection: a frontend killed once the
     * client has its answer has the row (fe_reqlog.h: the journal). r is
     * freed at the next reap at the earliest, so data stays valid. */
    sb_http_req_t *h = r->http;
    r->http = NULL;
    if (r->stream_started) {
        if (!h && status < 400)
            r->status = 499; /* the client left before the end */
        fe_request_done(r);
        if (h)
            sb_http_reply_end(h);
    } else if (h) {
        r->http = h; /* for the headers */
        fe_request_add_headers(r, content_type, retry_after);
        r->http = NULL;
        fe_request_done(r);
        sb_http_reply(h, status, data, data ? len : 0);
    } else {
        fe_request_done(r);
    }
}

bool fe_request_stream_start(fe_request_t *r, const char *content_type)
{
    if (r->stream_started || !r->http || r->state == FE_REQ_DONE)
        return r->stream_started;
    r->stream_started = true;
    r->srv->streams_open++;
    r->status = 200;
    fe_request_add_headers(r, content_type, 0);
    sb_http_req_add_header(r->http, "Cache-Control", "no-cache");
    sb_http_req_add_header(r->http, "X-Accel-Buffering", "no"); /* proxies must not buffer the stream */
    sb_http_reply_start(r->http, 200);
    return true;
}

void fe_request_stream_write(fe_request_t *r, struct evbuffer *buf)
{
    if (r->http && r->stream_started && r->state != FE_REQ_DONE && evbuffer_get_length(buf) > 0)
        sb_http_reply_chunk(r->http, buf);
    evbuffer_drain(buf, evbuffer_get_length(buf));
}

void fe_request_stream_end(fe_request_t *r, int log_status)
{
    fe_request_send(r, log_status, NULL, NULL, 0, 0);
}

static void fe_request_finish(fe_request_t *r, int status, json_t *body, int retry_after)
{
    char *text = body && r->state != FE_REQ_DONE ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    fe_request_send(r, status, "application/json", text, text ? strlen(text) : 0, retry_after);
    free(text);
}

void fe_request_reply_json(fe_request_t *r, int status, json_t *body)
{
    fe_request_finish(r, status, body, 0);
}

void fe_request_reply_raw(fe_request_t *r, int status, const char *content_type, const void *data, size_t len)
{
    fe_request_send(r, status, content_type, data, len, 0);
}

int fe_request_query_get(const fe_request_t *r, const char *name, char *buf, size_t len)
{
    return r->http ? sb_http_query_get(sb_http_req_query(r->http), name, buf, len) : -1;
}

void fe_request_fail(fe_request_t *r, const fe_error_t *e)
{
    r->no_retry = e->no_retry;
    if (e->status == 429)
        fe_metrics_limit_refused(e->kind);
    free(r->error_text);
    r->error_text = sb_xstrdup(e->message);
    fe_request_finish(r, e->status, r->style->error_body(e, r->request_id), e->retry_after);
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

/* The client closed its connection before the reply (sb_http's gone
 * callback): the request ends (its cleanups cancel a running job); one that
 * is storing its result finishes the store first. */
static void fe_request_on_gone(void *arg)
{
    fe_request_t *r = arg;
    r->http = NULL;     /* no reply */
    fe_request_hold(r); /* r stays valid to the end of this function */
    if (r->state != FE_REQ_DONE && r->state != FE_REQ_STORING) {
        /* 499: the nginx convention for "client closed request". */
        free(r->error_text);
        r->error_text = sb_xstrdup("client closed the connection");
        fe_request_finish(r, 499, NULL, 0);
    }
    if (r->reading_body) { /* its callback will not run now: its hold is dropped here */
        r->reading_body = false;
        fe_request_release(r);
    }
    fe_request_release(r);
}

/* The most a route's body may be: a file upload is a file plus a little
 * multipart framing. */
static size_t fe_request_body_max(const fe_request_t *r)
{
    if (r->route && r->route->file_body)
        return r->srv->cfg.max_file_bytes + 65536;
    return r->srv->cfg.max_body_bytes;
}

/* An error sb_http found in the request's framing or body, in the style's
 * body: e->kind from the status. */
static void fe_request_http_error(fe_request_t *r, const sb_http_err_t *he)
{
    fe_error_t e;
    const char *kind = he->status == 413 || he->status == 431 ? SB_ERR_TOO_LARGE
                       : he->status == 503                    ? SB_ERR_OVERLOADED
                       : he->status == 408                    ? SB_ERR_TIMEOUT
                                                              : SB_ERR_INVALID_REQUEST;
    if (he->status == 431)
        fe_error_set(&e, 431, kind, "headers_too_large", NULL,
                     "Request header fields too large: the request line and headers exceed the limit of %zu bytes.",
                     r->srv->cfg.max_header_bytes);
    else if (he->status == 413 && r->route && r->route->file_body)
        fe_error_set(&e, 413, kind, "file_too_large", "file",
                     "File is too large: the upload exceeds the limit of %zu bytes.", r->srv->cfg.max_file_bytes);
    else if (he->status == 413) {
        const char *declared = r->http ? sb_http_req_header(r->http, "Content-Length") : NULL;
        fe_error_set(&e, 413, kind, "request_too_large", NULL, "Request body%s%s%s exceeds the limit of %zu bytes.",
                     declared ? " of " : "", declared ? declared : "", declared ? " bytes" : "",
                     r->endpoint ? fe_request_body_max(r) : r->srv->cfg.max_body_bytes);
    } else if (he->status == 408)
        fe_error_set(&e, 408, kind, "request_timeout", NULL, "The request was not received completely within %d ms.",
                     r->srv->cfg.read_deadline_ms);
    else
        fe_error_set(&e, he->status, kind, he->code, NULL, "%s", he->message);
    if (he->status == 503)
        e.retry_after = 1;
    fe_request_fail(r, &e);
}

static void fe_request_on_body(sb_http_req_t *http, const sb_http_err_t *err, void *arg)
{
    (void)http;
    fe_request_t *r = arg;
    r->reading_body = false;
    if (!fe_request_release(r))
        return;
    if (err) {
        fe_request_http_error(r, err);
        return;
    }
    r->endpoint(r);
}

static void fe_request_on_key(json_t *rec, const char *err, void *arg)
{
    fe_request_t *r = arg;
    if (!fe_request_release(r))
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
    /* Only now is the body read: an unauthenticated client gets none of it
     * buffered. The callback may run before this returns. */
    fe_request_hold(r);
    r->reading_body = true;
    sb_http_req_read_body(r->http, fe_request_body_max(r), fe_request_on_body, r);
}

void fe_request_handle(sb_http_req_t *http, void *arg)
{
    fe_server_t *srv = arg;
    fe_request_t *r = fe_request_alloc(srv);
    r->srv = srv;
    r->http = http;
    r->start_us = sb_mono_us();
    r->start_ms = sb_now_ms();
    r->parsed.store = true;
    r->parsed.n = 1;
    sb_id_new_ordered(r->request_id, sizeof r->request_id, "req_", 16);
    /* W3C Trace Context: the client's trace, else a new one; this request
     * is a span of it. A malformed traceparent starts a new trace (and its
     * tracestate is dropped), as the spec asks. */
    if (sb_trace_parse(sb_http_req_header(http, "traceparent"), &r->trace) == 0) {
        const char *ts = sb_http_req_header(http, "tracestate");
        if (sb_tracestate_ok(ts))
            r->tracestate = sb_xstrdup(ts);
    } else {
        sb_trace_start(&r->trace);
    }
    sb_trace_span(&r->trace);
    fe_collect_init(&r->result);
    srv->active_requests++;
    sb_http_req_on_gone(http, fe_request_on_gone, r);

    /* Routing works on the path as sent, decoded except for "%2F": an
     * encoded slash is never a separator. A request sb_http refused is
     * answered in the style of its path (OpenAI's when it is unknown). */
    r->path = sb_xstrdup(sb_http_req_path(http)[0] ? sb_http_req_path(http) : "/");
    /* Escapes may decode to bytes that are not UTF-8; such a path matches no
     * route, and its request-log row must still be text PostgreSQL takes
     * (a row it refused stalled the log behind it). */
    sb_utf8_fix(r->path);
    r->style = fe_router_style_for_path(srv->routes, r->path);
    const sb_http_err_t *he = sb_http_req_error(http);
    if (he) {
        fe_request_http_error(r, he);
        return;
    }

    const char *method = sb_http_req_method(http);
    const fe_route_t *route;
    switch (fe_router_match(srv->routes, method, r->path, &route, &r->path_arg)) {
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
    r->style = route->style_of ? route->style_of(http, route->style) : route->style;
    r->route = route;
    r->endpoint = route->fn;
    if (srv->draining) {
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, "shutting_down", NULL, "The gateway is restarting, retry");
        e.retry_after = 1;
        fe_request_fail(r, &e);
        return;
    }
    size_t key_len = 0;
    const char *key = r->style->key(http, &key_len);
    if (!key) {
        fe_request_failf(r, 401, SB_ERR_AUTHENTICATION, "missing_api_key", NULL,
                         "Invalid API Key: no API key provided. Send it as %s.", r->style->key_hint);
        return;
    }
    if (sb_admin_key_well_formed(key, key_len)) { /* a key of the admin API's, never for this one */
        fe_request_failf(r, 403, SB_ERR_PERMISSION, "admin_key", NULL,
                         "Admin keys cannot be used for generation or the data APIs; use an API key.");
        return;
    }
    if (!sb_key_well_formed(key, key_len)) {
        fe_request_failf(r, 401, SB_ERR_AUTHENTICATION, "invalid_api_key", NULL, "Invalid API Key");
        return;
    }
    fe_request_set_state(r, FE_REQ_AUTH);
    fe_request_hold(r);
    fe_auth_lookup_key(srv->auth, key, key_len, fe_request_on_key, r);
}
