/*
 * fe_http: the frontend's HTTP/1.1 server, on libevent bufferevents with the
 * strict framing of fe_http_parse. It replaced evhttp (libevent 2.1), whose
 * lenient parser and HTML error pages could not be fixed from outside (the
 * reasons are in docs/security.md, "HTTP framing").
 *
 * What it owns, per frontend instance:
 *   - framing: request heads parsed strictly; a refused one is still handed
 *     to the handler (fe_http_req_error) so that the answer is in the style
 *     of its path, then the connection is closed;
 *   - the body is read only when the handler asks (fe_http_req_read_body),
 *     after it has checked the key from the headers: an unauthenticated
 *     client gets no body byte buffered; bodies in flight share a memory
 *     budget (503 when spent);
 *   - connections: a cap per peer address and a total cap; at the total cap
 *     the connection of the heaviest address that is only waiting (no
 *     request being served) is closed to admit a new one from a lighter
 *     address;
 *   - deadlines: reading one request (408), an idle keep-alive connection,
 *     a reply the client does not read;
 *   - client departure: EOF while a request is served calls its gone
 *     callback (the job is cancelled);
 *   - keep-alive and pipelining (one request at a time, in order), and a
 *     lingering close so that a refused client reads its answer.
 */
#ifndef FE_HTTP_H
#define FE_HTTP_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "fe_http_parse.h"

typedef struct fe_http fe_http_t;
typedef struct fe_http_req fe_http_req_t;

typedef struct {
    const char *host; /* listen address (IPv4) */
    int port;
    int max_connections;  /* open connections at most */
    int max_per_source;   /* open connections one peer address may hold */
    int read_deadline_ms; /* reading one request's head and body */
    int idle_timeout_ms;  /* a keep-alive connection between requests */
    int write_timeout_ms; /* a reply the client does not read for this long: closed */
    size_t max_head;      /* request line + header bytes (431 above) */
    size_t body_budget;   /* request body bytes buffered at once, across connections */
} fe_http_limits_t;

/* A request head arrived, or was refused (fe_http_req_error is set). The
 * handler replies now or later, unless the gone callback it set has run. */
typedef void (*fe_http_handler_fn)(fe_http_req_t *req, void *arg);

fe_http_t *fe_http_new(struct event_base *base, const fe_http_limits_t *lim, fe_http_handler_fn fn, void *arg,
                       char *err, size_t errlen);
/* Closes every connection (requests still served get their gone callback).
 * NULL-safe; clears *h. */
void fe_http_free(fe_http_t **h);
/* Stops accepting; open connections go on. */
void fe_http_stop_accepting(fe_http_t *h);
/* Draining: every reply from now on closes its connection after it is sent,
 * and connections waiting for a request (none begun) are closed now; call
 * again to close those that became idle since. */
void fe_http_drain(fe_http_t *h);
/* Connections open now (lingering closes included). */
int fe_http_open(const fe_http_t *h);
/* Body bytes buffered now, across connections. */
size_t fe_http_body_bytes(const fe_http_t *h);

/* ---- one request ---- */

/* Non-NULL when the request was refused before the handler saw it: reply
 * with its status (the connection closes after). */
const fe_http_err_t *fe_http_req_error(const fe_http_req_t *req);
/* "GET", ... ; NULL when the request line was not readable. */
const char *fe_http_req_method(const fe_http_req_t *req);
/* The path, percent-decoded except "%2F" (fe_http_target_path); "" when
 * unknown. */
const char *fe_http_req_path(const fe_http_req_t *req);
/* The raw query string (after '?'), or NULL. */
const char *fe_http_req_query(const fe_http_req_t *req);
/* The first header named name (case-insensitive), or NULL. */
const char *fe_http_req_header(const fe_http_req_t *req, const char *name);
/* The size of the request line and headers as sent. */
size_t fe_http_req_head_bytes(const fe_http_req_t *req);
/* The peer's address, as text. */
const char *fe_http_req_peer(const fe_http_req_t *req);

/* The client left before the reply ended: gone(arg) runs once, after which
 * req must not be used. */
void fe_http_req_on_gone(fe_http_req_t *req, void (*gone)(void *arg), void *arg);

/* Reads the body, refusing it (413) above max bytes; done(req, NULL, arg)
 * when it is complete, done(req, err, arg) when it is refused (413, 503 with
 * the budget spent, 400, 408): reply with err's status then. Runs done at
 * once when there is no body. Sends 100 Continue when the client waits for
 * it. */
void fe_http_req_read_body(fe_http_req_t *req, size_t max,
                           void (*done)(fe_http_req_t *req, const fe_http_err_t *err, void *arg), void *arg);
/* The body read so far (complete after done). */
struct evbuffer *fe_http_req_body(fe_http_req_t *req);

/* Reply headers (before fe_http_reply or fe_http_reply_start). Values with
 * CR or LF are dropped. */
void fe_http_req_add_header(fe_http_req_t *req, const char *name, const char *value);
/* Closes the connection after this reply. */
void fe_http_req_close_after(fe_http_req_t *req);
/* A whole reply; req is finished (must not be used after). */
void fe_http_reply(fe_http_req_t *req, int status, const void *body, size_t len);
/* A streamed reply: status and headers now, then chunks; end finishes req. */
void fe_http_reply_start(fe_http_req_t *req, int status);
void fe_http_reply_chunk(fe_http_req_t *req, struct evbuffer *buf); /* empties buf */
void fe_http_reply_end(fe_http_req_t *req);

/* A request parsed from a complete head with no connection (unit tests):
 * NULL when the head is refused. Only the accessors apply; free it with
 * fe_http_req_destroy. */
fe_http_req_t *fe_http_req_parse_detached(const char *head, size_t len);
void fe_http_req_destroy(fe_http_req_t *req);

/* The standard reason phrase of status. */
const char *fe_http_reason(int status);

#endif
