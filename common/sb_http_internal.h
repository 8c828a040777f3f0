/*
 * sb_http_internal: the structures shared by sb_http.c (the server: listener,
 * peer addresses, admission and shedding) and sb_http_conn.c (one
 * connection: reading, requests, replies, closing). Not for other files.
 */
#ifndef SB_HTTP_INTERNAL_H
#define SB_HTTP_INTERNAL_H

#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <stdint.h>

#include "sb_http.h"
#include "sb_map.h"

#define SB_HTTP_PEER_MAX 48

/* Where a connection is. */
enum sb_http_cstate {
    FE_C_HEAD,    /* reading a request head (or idle between requests) */
    FE_C_WAIT,    /* head with the handler, body not asked for yet: not reading */
    FE_C_BODY,    /* reading the body the handler asked for */
    FE_C_APP,     /* request complete, with the handler */
    FE_C_CLOSING, /* last reply written; closed once it is sent */
    FE_C_LINGER,  /* write side shut; reading and discarding until EOF or a timeout */
};

/* One peer address and its connections. */
typedef struct sb_http_source {
    char addr[SB_HTTP_PEER_MAX];
    int conns;
    int refusing;              /* of which accepted over a cap, waiting for their head */
    struct sb_http_conn *list; /* its connections, newest first */
} sb_http_source_t;

typedef struct sb_http_conn sb_http_conn_t;

struct sb_http_req {
    sb_http_conn_t *c;
    sb_http_err_t err;
    bool has_err;
    char *head; /* the head as sent, names and values NUL-terminated in place */
    size_t head_len;
    sb_http_head_t h;
    char *path;
    const char *query; /* into target copy */
    char *target;      /* NUL-terminated copy of the target */
    struct evbuffer *body;
    size_t body_max;
    size_t reserved; /* of the body budget */
    bool body_read;  /* the body is complete (or there is none) */
    bool chunked_started;
    sb_http_chunked_t chunked;
    uint64_t length_left;
    void (*done)(sb_http_req_t *, const sb_http_err_t *, void *);
    void *done_arg;
    void (*gone)(void *);
    void *gone_arg;
    struct evbuffer *out_headers;
    bool streaming;
    bool close_after;
    struct sb_http_req *next_spare; /* in the server's spare list */
};

struct sb_http_conn {
    sb_http_t *srv;
    sb_http_source_t *src;
    struct bufferevent *bev;
    evutil_socket_t fd;
    enum sb_http_cstate state;
    sb_http_req_t *req;    /* the request being read or served */
    size_t scanned;        /* head bytes already looked at */
    int64_t first_byte_ms; /* of the request being read; 0 before it */
    int64_t linger_until_ms;
    struct event *timer;              /* read deadline, idle timeout, linger */
    struct event *kick;               /* deferred: parse what is buffered */
    struct evbuffer *stage;           /* a reply (or chunk) being put together for sb_http_send */
    const char *refuse;               /* accepted over a cap: its request gets 503 with this message, then the close */
    bool dead;                        /* closed at the next kick (a client that does not read its stream) */
    struct sb_http_conn *prev, *next; /* all connections */
    struct sb_http_conn *src_prev, *src_next; /* the source's */
};

struct sb_http {
    struct event_base *base;
    sb_http_limits_t lim;
    sb_http_handler_fn fn;
    void *arg;
    struct evconnlistener *listener;
    sb_map_t *sources; /* addr -> sb_http_source_t */
    sb_http_conn_t *conns;
    int open;
    int refusing; /* connections accepted over a cap, waiting for their head */
    bool draining;
    size_t body_used;
    int64_t last_shed_log_ms;
    unsigned long shed, refused;
    sb_http_req_t *spare; /* freed requests kept for reuse (sb_http_conn.c) */
    int n_spare;
};

/* sb_http_conn.c. The listener (sb_http.c) calls into the connection,
 * never the other way: a connection joins its source when it is made and
 * leaves it when it closes. */
sb_http_conn_t *sb_http_conn_new(sb_http_t *h, evutil_socket_t fd, sb_http_source_t *src, const char *refuse);
/* sb_http_req.c: a new request of connection c (body_read until a head
 * declares a body), from the server's spares when it has one; its free (the
 * body budget it reserved goes back); the spares' free. */
sb_http_req_t *sb_http_req_new(sb_http_conn_t *c);
void sb_http_req_free(sb_http_req_t *r);
void sb_http_spare_free(sb_http_t *h);
/* Closes at once (no reply); a request served gets its gone callback. */
void sb_http_conn_close(sb_http_conn_t *c);
/* True when the connection serves no request (it may be shed). */
bool sb_http_conn_idle(const sb_http_conn_t *c);

#endif
