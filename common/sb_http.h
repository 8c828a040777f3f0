/*
 * sb_http: the frontend's HTTP/1.1 server, on libevent bufferevents with the
 * strict framing of sb_http_parse. It replaced evhttp (libevent 2.1), whose
 * lenient parser and HTML error pages could not be fixed from outside (the
 * reasons are in docs/security.md, "HTTP framing").
 *
 * What it owns, per frontend instance:
 *   - framing: request heads parsed strictly; a refused one is still handed
 *     to the handler (sb_http_req_error) so that the answer is in the style
 *     of its path, then the connection is closed;
 *   - the body is read only when the handler asks (sb_http_req_read_body),
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
#ifndef SB_HTTP_H
#define SB_HTTP_H

#include <event2/buffer.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "sb_http_parse.h"

typedef struct sb_http sb_http_t;
typedef struct sb_http_req sb_http_req_t;

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
} sb_http_limits_t;

/* A request head arrived, or was refused (sb_http_req_error is set). The
 * handler replies now or later, unless the gone callback it set has run. */
typedef void (*sb_http_handler_fn)(sb_http_req_t *req, void *arg);

sb_http_t *sb_http_new(struct event_base *base, const sb_http_limits_t *lim, sb_http_handler_fn fn, void *arg,
                       char *err, size_t errlen);
/* Closes every connection (requests still served get their gone callback).
 * NULL-safe; clears *h. */
void sb_http_free(sb_http_t **h);
/* Stops accepting; open connections go on. */
void sb_http_stop_accepting(sb_http_t *h);
/* Draining: every reply from now on closes its connection after it is sent,
 * and connections waiting for a request (none begun) are closed now; call
 * again to close those that became idle since. */
void sb_http_drain(sb_http_t *h);
/* Connections open now (lingering closes included). */
int sb_http_open(const sb_http_t *h);
/* Body bytes buffered now, across connections. */
size_t sb_http_body_bytes(const sb_http_t *h);

/* ---- one request ---- */

/* Non-NULL when the request was refused before the handler saw it: reply
 * with its status (the connection closes after). */
const sb_http_err_t *sb_http_req_error(const sb_http_req_t *req);
/* "GET", ... ; NULL when the request line was not readable. */
const char *sb_http_req_method(const sb_http_req_t *req);
/* The path, percent-decoded except "%2F" (sb_http_target_path); "" when
 * unknown. */
const char *sb_http_req_path(const sb_http_req_t *req);
/* The raw query string (after '?'), or NULL. */
const char *sb_http_req_query(const sb_http_req_t *req);
/* The first header named name (case-insensitive), or NULL. */
const char *sb_http_req_header(const sb_http_req_t *req, const char *name);
/* The size of the request line and headers as sent. */
size_t sb_http_req_head_bytes(const sb_http_req_t *req);
/* The peer's address, as text. */
const char *sb_http_req_peer(const sb_http_req_t *req);

/* The client left before the reply ended: gone(arg) runs once, after which
 * req must not be used. */
void sb_http_req_on_gone(sb_http_req_t *req, void (*gone)(void *arg), void *arg);

/* Reads the body, refusing it (413) above max bytes; done(req, NULL, arg)
 * when it is complete, done(req, err, arg) when it is refused (413, 503 with
 * the budget spent, 400, 408): reply with err's status then. Runs done at
 * once when there is no body. Sends 100 Continue when the client waits for
 * it. */
void sb_http_req_read_body(sb_http_req_t *req, size_t max,
                           void (*done)(sb_http_req_t *req, const sb_http_err_t *err, void *arg), void *arg);
/* The body read so far (complete after done). */
struct evbuffer *sb_http_req_body(sb_http_req_t *req);

/* Reply headers (before sb_http_reply or sb_http_reply_start). Values with
 * CR or LF are dropped. */
void sb_http_req_add_header(sb_http_req_t *req, const char *name, const char *value);
/* Closes the connection after this reply. */
void sb_http_req_close_after(sb_http_req_t *req);
/* A whole reply; req is finished (must not be used after). */
void sb_http_reply(sb_http_req_t *req, int status, const void *body, size_t len);
/* A streamed reply: status and headers now, then chunks; end finishes req. */
void sb_http_reply_start(sb_http_req_t *req, int status);
void sb_http_reply_chunk(sb_http_req_t *req, struct evbuffer *buf); /* empties buf */
void sb_http_reply_end(sb_http_req_t *req);

/* A request parsed from a complete head with no connection (unit tests):
 * NULL when the head is refused. Only the accessors apply; free it with
 * sb_http_req_destroy. */
sb_http_req_t *sb_http_req_parse_detached(const char *head, size_t len);
void sb_http_req_destroy(sb_http_req_t *req);

/* The standard reason phrase of status. */
const char *sb_http_reason(int status);

#endif
