/*
 * fe_server: one frontend instance: the HTTP listener (sb_http; SO_REUSEPORT,
 * so several processes can share a port), and the modules every request uses.
 */
#ifndef FE_SERVER_H
#define FE_SERVER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "fe_auth.h"
#include "fe_broker.h"
#include "fe_reqlog.h"
#include "sb_db.h"
#include "sb_http.h"
#include "sb_seal.h"

struct fe_route_table;

typedef struct {
    const char *listen_host;
    int listen_port;
    const char *broker_endpoint;
    const char *pg_dsn;
    const char *name;
    size_t max_body_bytes;
    size_t max_header_bytes;  /* request line + headers; 431 above */
    int max_json_depth;       /* 400 json_too_deep above */
    size_t max_json_elements; /* array elements + object members of a JSON body; 400 json_too_many_elements above */
    int db_conns;
    int read_timeout_s;   /* idle limit: the longest silence while reading a request, or between two requests */
    int read_deadline_ms; /* absolute limit for reading one request, first byte to last; 408 after; 0 = none */
    int max_connections;  /* open client connections (sb_http.h: shedding at the cap) */
    int max_connections_per_source; /* open connections one peer address may hold */
    size_t max_body_memory;         /* request body bytes buffered at once (503 when spent) */
    int default_timeout_ms;         /* job deadline when the model has none */
    size_t max_file_bytes;          /* POST /v1/files: largest file accepted (413 above) */
    int stream_keepalive_ms;        /* a stream quiet this long gets a keep-alive; 0 = never */
    const char *reasoning_key;      /* 64 hex chars: the key sealing encrypted reasoning; NULL = off */
    const char *embedding_model;    /* the model (models.id) a new vector store's embeddings use */
    const char *admin_host;         /* the admin listener (fe_admin.h) */
    int admin_port;                 /* < 0: none */
} fe_config_t;

typedef struct fe_server {
    struct event_base *base;
    fe_config_t cfg;
    sb_http_t *http; /* listener and client connections: framing, caps, deadlines */
    sb_db_t *db;
    fe_auth_t *auth;
    fe_broker_t *broker;
    fe_reqlog_t *reqlog;
    struct fe_storebatch *responses_store; /* group commit of stored responses (fe_storebatch.h) */
    struct fe_storebatch *chat_store;      /* ... and of stored chat completions */
    struct fe_limits_batch *limits;        /* limited keys' admissions and releases, batched per key */
    struct fe_limits_blocks *limit_blocks; /* limited keys' capacity blocks (fe_limits_block.h) */
    const struct fe_route_table *routes;   /* every endpoint (fe_routes.c), borrowed */
    struct fe_bg *bg;                      /* background responses: sweep, finalizer (fe_bg.h) */
    struct fe_admin *admin;                /* the admin listener, or NULL (fe_admin.h) */
    int active_requests;
    int streams_open; /* streamed replies started and not ended */
    bool draining;
    sb_seal_key_t seal_key; /* valid when seal_ready */
    bool seal_ready;
    struct event *reap;           /* frees ended requests at a safe point (fe_request_reap) */
    struct fe_request *reap_list; /* ended requests with nothing pending, owned, linked by next_reap */
    struct fe_request *spare;     /* freed requests kept for the next ones (fe_request.c), linked by next_reap */
    int n_spare;
} fe_server_t;

/* Fills cfg with defaults. */
void fe_config_defaults(fe_config_t *cfg);

fe_server_t *fe_server_new(struct event_base *base, const fe_config_t *cfg, char *err, size_t errlen);
/* Draining: new requests get 503 shutting_down, every reply closes its
 * connection, idle connections are closed; requests in flight finish. */
void fe_server_drain(fe_server_t *s);
/* Once no request is in flight: stops accepting and closes idle
 * connections; true when no connection is left (the last replies are sent
 * and their closes done), so the process may exit. */
bool fe_server_quiesce(fe_server_t *s);
/* Frees everything; flushes the request log with a blocking write first. */
void fe_server_destroy(fe_server_t **s);

#endif
