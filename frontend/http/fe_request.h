/*
 * fe_request: one HTTP request through the gateway, as an explicit state
 * machine. Every step that waits (key lookup, model lookup, stored context,
 * the job, storing the result) holds a pending count; the object is freed
 * only at a safe point, when its reply is sent and nothing is pending.
 */
#ifndef FE_REQUEST_H
#define FE_REQUEST_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "fe_collect.h"
#include "fe_error.h"
#include "fe_limits_block.h"
#include "fe_server.h"
#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_http.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_trace.h"

struct fe_request;
typedef struct fe_request fe_request_t;
typedef struct fe_stream fe_stream_t; /* a streamed reply's state (fe_stream.h), freed by its cleanup */

/* What an endpoint does once the caller is authenticated. */
typedef void (*fe_endpoint_fn)(fe_request_t *r);

/* A continuation: what runs when an asynchronous step of the request is
 * done (a preparation step's, handed in by fe_generate.c). */
typedef void (*fe_request_then_fn)(fe_request_t *r);

/* A request's state; fe_request_set_state() is the one place it changes.
 * DONE is final: the request is freed by the reap after the loop iteration
 * in which it is DONE with nothing pending. */
enum fe_req_state {
    FE_REQ_AUTH,    /* looking up the key */
    FE_REQ_MODEL,   /* looking up the model and its route */
    FE_REQ_PREPARE, /* loading what the job needs: prompt, stored context, files */
    FE_REQ_RUNNING, /* job submitted; events arriving */
    FE_REQ_STORING, /* writing the stored response before replying */
    FE_REQ_QUERY,   /* a database-backed endpoint (GET/DELETE, lists) */
    FE_REQ_DONE,    /* reply sent or client gone; reaped when nothing is pending */
};

struct fe_request {
    fe_server_t *srv;
    sb_http_req_t *http; /* NULL once replied or the client is gone */
    enum fe_req_state state;
    const fe_style_t *style;
    fe_endpoint_fn endpoint;
    const struct fe_route *route; /* the route matched (fe_router.h), borrowed; NULL before */
    char request_id[SB_ID_MAX];
    sb_trace_t trace; /* the client's trace (or a new one) with this request's span (sb_trace.h) */
    char *tracestate; /* the client's tracestate, passed on; NULL: none */
    char *path;
    char *path_arg; /* e.g. the {id} of /v1/responses/{id} */
    int64_t start_us, start_ms;
    int pending;

    json_t *key;             /* key record (fe_auth.h), owned */
    json_t *model;           /* model record, owned */
    json_t *body;            /* parsed request body, owned */
    fe_parsed_t parsed;      /* what the style's parse filled */
    json_t *context;         /* previous response's context and output items, owned */
    json_t *job_input;       /* context + input as the worker gets it (files, reasoning resolved), owned */
    bool stream_started;     /* the streamed reply's status and headers are out */
    fe_stream_t *stream_out; /* the stream's state while it runs, owned */
    bool reading_body;       /* sb_http is reading the body for us (a hold is taken) */
    bool submitted;          /* a job went to the broker (its upstream may bill) */
    bool lease;              /* admitted under limits; released at the end (fe_limits.h) */
    fe_limits_taken_t taken; /* what it took from its key's capacity block, if admitted from one */
    bool no_retry;           /* the error reply says x-should-retry: false */
    bool no_log;             /* its request_log row is someone else's to write (a background
                                response's: the finalizer's, pipeline/fe_bg.h) */
    int64_t est_tokens;      /* input token estimate (fe_tokens.h) */
    char *requested_model;   /* the model asked for, when a fallback answered; owned */
    json_t *fallbacks;       /* models still to try when the upstream fails (fe_fallback.h); owned */
    bool count_tokens;       /* a token-count endpoint: parse takes its body, the job has request.op
                                "count_tokens", and style->render_count makes the reply */
    unsigned prepared;       /* preparation steps started (fe_generate.c's step table) */
    int list_limit;          /* list endpoints: the page size asked for */

    fe_collect_t result;
    struct event *deadline;
    fe_request_then_fn prep_done;          /* the running preparation step's continuation */
    struct fe_request_cleanup *cleanups;   /* run when the request ends (fe_request_cleanup_add), owned */
    bool ended;                            /* the cleanups have run */
    int64_t log_tokens_in, log_tokens_out; /* what the request log records; set by a cleanup of the pipeline */
    struct fe_request *next_reap;          /* on the server's reap list (DONE, nothing pending) */
    int status;                            /* HTTP status sent */
    int64_t first_token_us;                /* streams: when the first token delta arrived (monotonic); 0: none */
    char *error_text;                      /* for the request log */
};

/* sb_http's handler for every request (arg: the fe_server_t). */
void fe_request_handle(sb_http_req_t *http, void *arg);

/* Reply helpers: each ends the request (state DONE). body is stolen. */
void fe_request_reply_json(fe_request_t *r, int status, json_t *body);
/* A non-JSON body (file content); data is copied. */
void fe_request_reply_raw(fe_request_t *r, int status, const char *content_type, const void *data, size_t len);

/* A streamed reply: start sends status 200 and the headers (false when the
 * client is gone); write sends buf's bytes as one chunk at once and empties
 * buf; end finishes the reply and the request, logging log_status (the
 * error's status when the stream ended with an error event). */
bool fe_request_stream_start(fe_request_t *r, const char *content_type);
void fe_request_stream_write(fe_request_t *r, struct evbuffer *buf);
void fe_request_stream_end(fe_request_t *r, int log_status);

/* Query-string parameter name (decoded) into buf: 0, or -1 when absent or too long. */
int fe_request_query_get(const fe_request_t *r, const char *name, char *buf, size_t len);
void fe_request_fail(fe_request_t *r, const fe_error_t *e);
void fe_request_failf(fe_request_t *r, int status, const char *kind, const char *code, const char *param,
                      const char *fmt, ...) __attribute__((format(printf, 6, 7)));

/* A log line of this request: its request_id and trace_id are fields of
 * the line (sb_log.h). */
#define fe_request_log_line(r, level, ...) sb_log_req(level, (r)->request_id, (r)->trace.trace_id, __VA_ARGS__)

/* Moves the request to state s. Leaving DONE is a programmer error. */
void fe_request_set_state(fe_request_t *r, enum fe_req_state s);

/* Pending-operation bracket for asynchronous steps: hold before the step,
 * release in its callback. fe_request_release returns false when the
 * request has ended (DONE: replied, or the client gone); the caller must
 * stop, but r stays valid until the reap, so it may still be read. */
void fe_request_hold(fe_request_t *r);
bool fe_request_release(fe_request_t *r);

/* A cleanup hook (as nginx's ngx_pool_cleanup_add): what a module that
 * attached something to the request (a lease, a stream, a job on the
 * broker) does when the request ends, so this layer need not know it. */
typedef void (*fe_request_cleanup_fn)(fe_request_t *r, void *arg);

/* Registers fn(r, arg) to run once when the request ends (its reply sent or
 * its client gone), before its request-log row is written, so a cleanup may
 * still fill the row. Cleanups run last-registered first; one may take a
 * hold (an asynchronous release), which keeps r until its callback. Added
 * after the end, fn runs at once. */
void fe_request_cleanup_add(fe_request_t *r, fe_request_cleanup_fn fn, void *arg);

/* How many freed requests a server keeps for reuse (sb_alloc.h). */
#define FE_REQUEST_SPARE_MAX SB_SPARES(64)

/* Frees the requests kept for reuse (at shutdown, after the last reap). */
void fe_request_spares_free(fe_server_t *srv);

/* Frees the requests that ended with nothing pending (srv->reap_list): the
 * safe point, run by the server's reap event after the loop iteration in
 * which they ended (and at shutdown), never inside a callback. */
void fe_request_reap(fe_server_t *srv);

/* The caller's account id as a decimal string (for SQL parameters). */
void fe_request_account(const fe_request_t *r, char *buf, size_t len);

#endif
