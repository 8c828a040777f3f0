/*
 * fe_conn_guard: the limits evhttp (libevent 2.1) does not enforce itself, per
 * client connection of one frontend instance:
 *   - open connections (--max-connections): a connection accepted while the
 *     cap is already reached is marked, and its request is answered 503 with
 *     Retry-After: 1 and Connection: close as soon as its headers are in,
 *     before any body is read (fe_request_handle answers one whose start the
 *     guard did not see); the other connections are unaffected;
 *   - an absolute deadline for reading one request (--read-deadline-ms), from
 *     its first byte until evhttp hands it over complete: past it the client
 *     gets 408 and the connection is closed (evhttp's --read-timeout only
 *     bounds the silence between two reads);
 *   - the hard ceilings of request framing, checked on the bytes as they
 *     arrive: request line + headers over the header ceiling (431), a declared
 *     Content-Length or chunked content over the body ceiling (413), a chunk-size
 *     line that never ends (400); each refused before the body is read.
 *
 * libevent 2.1 has no hook between accepting a connection and handing over a
 * complete request (2.2's evhttp_set_newreqcb), so the guard creates each
 * connection's bufferevent itself (evhttp_set_bevcb) and watches its input
 * buffer (an evbuffer callback, which runs before evhttp parses the new
 * bytes). Answers the guard gives itself (408, 413, 431, 400, 503) are written
 * straight to the socket in the style of the request's path (OpenAI's when
 * the request line has not arrived), with Connection: close; the socket is
 * then drained for a moment ("lingering close") so that the client reads the
 * answer instead of a reset. Each gets a request-log row.
 *
 * The guard owns evhttp's close callback of every connection it tracks, which
 * keeps the count exact; a request registers its own through
 * fe_conn_guard_attach_request.
 *
 * What evhttp (2.1.12) does by itself, checked against it, and now only the
 * backstop (the guard answers first, at thresholds evhttp reaches no earlier):
 *   - request line + headers over evhttp_set_max_headers_size: "400 Bad
 *     Request" as an HTML page, connection closed (it reports a too long
 *     header as an invalid one);
 *   - a declared Content-Length over evhttp_set_max_body_size: "413 Request
 *     Entity Too Large" as HTML before reading the body, connection closed
 *     without draining it (a client still sending may get a reset instead);
 *     a chunked body: the same once a chunk size takes the total over;
 *   - a chunk-size line that never ends: buffered without any limit (no
 *     answer, memory grows with what the client sends);
 *   - evhttp_set_timeout: only the silence between two reads; a request
 *     trickled a byte at a time is read forever.
 * A request pipelined behind one being answered is already buffered when its
 * turn comes, so the guard does not see its start: it gets the read deadline
 * (in OpenAI's body) and evhttp's ceilings above, not the guard's answers.
 */
#ifndef FE_CONN_GUARD_H
#define FE_CONN_GUARD_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

#include "fe_reqlog.h"

typedef struct fe_conn_guard fe_conn_guard_t;

typedef struct {
    int max_connections;   /* connections accepted beyond this many get 503 on their requests */
    int read_deadline_ms;  /* time to read one request; 0 = no deadline */
    size_t header_ceiling; /* request line + header bytes (line ends included) refused above (431) */
    size_t body_ceiling;   /* declared Content-Length or chunked content refused above (413) */
} fe_conn_guard_limits_t;

/* Makes http create its connections' bufferevents through the guard. reqlog
 * (borrowed) gets a row for each answer the guard sends itself. */
fe_conn_guard_t *fe_conn_guard_new(struct event_base *base, struct evhttp *http, const fe_conn_guard_limits_t *lim,
                                   fe_reqlog_t *reqlog);
/* Call after evhttp_free (which closes every connection): frees the rest and
 * ends the lingering closes. NULL-safe; clears *g. */
void fe_conn_guard_destroy(fe_conn_guard_t **g);

/* evhttp handed over a complete request on conn: its read deadline stops, and
 * close_cb(conn, arg) runs if the connection closes before
 * fe_conn_guard_detach_request. Returns true when conn was accepted beyond
 * the connection cap (its requests are to be refused). */
bool fe_conn_guard_attach_request(fe_conn_guard_t *g, struct evhttp_connection *conn,
                                  void (*close_cb)(struct evhttp_connection *, void *), void *arg);
/* The request on conn is over (its reply handed to evhttp, or abandoned): its
 * close callback is dropped; a next request's deadline may run. Idempotent. */
void fe_conn_guard_detach_request(fe_conn_guard_t *g, struct evhttp_connection *conn);

/* Client connections open now (accepted and not yet closed, lingering closes
 * included). */
int fe_conn_guard_open(const fe_conn_guard_t *g);

#endif
