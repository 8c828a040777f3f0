/*
 * fe_server: builds one frontend instance: database pool and LISTEN for
 * cache invalidation, broker client, request log, and the HTTP listener
 * (SO_REUSEPORT so several processes share a port; limits on body size,
 * header size, read time and open connections, with fe_conn_guard).
 */
#include "fe_server.h"

#include <event2/listener.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fe_request.h"
#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_log.h"

void fe_config_defaults(fe_config_t *cfg)
{
    memset(cfg, 0, sizeof *cfg);
    cfg->listen_host = "127.0.0.1";
    cfg->listen_port = 8080;
    cfg->broker_endpoint = "tcp://127.0.0.1:5555";
    cfg->name = "frontend";
    cfg->max_body_bytes = 32u * 1024u * 1024u;
    cfg->max_header_bytes = 64u * 1024u;
    cfg->max_json_depth = 64;
    cfg->max_json_elements = 200000;
    cfg->db_conns = 4;
    cfg->read_timeout_s = 30;
    cfg->read_deadline_ms = 30000;
    cfg->max_connections = 4096;
    cfg->default_timeout_ms = 60000;
    cfg->stream_keepalive_ms = 15000;
    cfg->max_file_bytes = 16u * 1024u * 1024u;
}

static void fe_server_on_notify(const char *payload, void *arg)
{
    fe_server_t *s = arg;
    sb_debug("configuration changed (%s): dropping caches", payload ? payload : "reconnect");
    fe_auth_flush(s->auth);
}

fe_server_t *fe_server_new(struct event_base *base, const fe_config_t *cfg, char *err, size_t errlen)
{
    fe_server_t *s = sb_xcalloc(1, sizeof *s);
    s->base = base;
    s->cfg = *cfg;
    s->cfg.reasoning_key = NULL; /* the secret is kept only in parsed form */
    if (cfg->reasoning_key) {
        if (sb_seal_key_parse(cfg->reasoning_key, &s->seal_key) != 0) {
            snprintf(err, errlen, "the reasoning key must be 64 hex characters");
            goto fail;
        }
        s->seal_ready = true;
    }
    s->db = fe_db_new(base, cfg->pg_dsn, cfg->db_conns, fe_sql_statements, fe_sql_statement_count, err, errlen);
    if (!s->db)
        goto fail;
    s->auth = fe_auth_new(s->db);
    if (fe_db_listen(s->db, "sb_config", fe_server_on_notify, s) < 0) {
        snprintf(err, errlen, "cannot LISTEN for configuration changes");
        goto fail;
    }
    s->broker = fe_broker_new(base, cfg->broker_endpoint);
    if (!s->broker) {
        snprintf(err, errlen, "cannot connect to the broker at %s", cfg->broker_endpoint);
        goto fail;
    }
    s->reqlog = fe_reqlog_new(base, s->db, cfg->name);

    s->http = evhttp_new(base);
    /* A file upload is a file plus a little multipart framing. Bodies over
     * this (declared or chunked) are refused by the connection guard with 413
     * before they are read; smaller ones by their endpoint (fe_body_json,
     * fe_files_upload). */
    size_t max_body = cfg->max_body_bytes > cfg->max_file_bytes + 65536 ? cfg->max_body_bytes
                                                                         : cfg->max_file_bytes + 65536;
    evhttp_set_max_body_size(s->http, (ev_ssize_t)max_body);
    /* Headers over max_header_bytes get 431 in the request's style
     * (fe_request_handle); evhttp keeps a generous hard ceiling, which the
     * connection guard enforces first (431 too) as the bytes arrive. */
    size_t header_ceiling = 4 * cfg->max_header_bytes;
    evhttp_set_max_headers_size(s->http, (ev_ssize_t)header_ceiling);
    evhttp_set_timeout(s->http, cfg->read_timeout_s);
    fe_conn_guard_limits_t lim = {
        .max_connections = cfg->max_connections,
        .read_deadline_ms = cfg->read_deadline_ms,
        .header_ceiling = header_ceiling,
        .body_ceiling = max_body,
    };
    s->guard = fe_conn_guard_new(base, s->http, &lim, s->reqlog);
    fe_body_set_max_elements(cfg->max_json_elements);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_DELETE | EVHTTP_REQ_PUT |
                                            EVHTTP_REQ_PATCH | EVHTTP_REQ_HEAD | EVHTTP_REQ_OPTIONS);
    evhttp_set_gencb(s->http, fe_request_handle, s);

    struct sockaddr_in sin = {.sin_family = AF_INET, .sin_port = htons((uint16_t)cfg->listen_port)};
    if (inet_pton(AF_INET, cfg->listen_host, &sin.sin_addr) != 1) {
        snprintf(err, errlen, "bad listen address %s", cfg->listen_host);
        goto fail;
    }
    struct evconnlistener *l =
        evconnlistener_new_bind(base, NULL, NULL, LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT,
                                1024, (struct sockaddr *)&sin, sizeof sin);
    if (!l) {
        snprintf(err, errlen, "cannot listen on %s:%d", cfg->listen_host, cfg->listen_port);
        goto fail;
    }
    if (!evhttp_bind_listener(s->http, l)) {
        evconnlistener_free(l);
        snprintf(err, errlen, "cannot bind the HTTP listener");
        goto fail;
    }
    sb_info("listening on %s:%d, broker %s", cfg->listen_host, cfg->listen_port, cfg->broker_endpoint);
    return s;
fail:
    fe_server_destroy(&s);
    return NULL;
}

void fe_server_drain(fe_server_t *s) { s->draining = true; }

void fe_server_destroy(fe_server_t **ps)
{
    if (!ps || !*ps)
        return;
    fe_server_t *s = *ps;
    if (s->http)
        evhttp_free(s->http); /* closes every client connection */
    fe_conn_guard_destroy(&s->guard);
    /* Outstanding jobs fail now; their requests log a row each. */
    fe_broker_destroy(&s->broker);
    if (s->reqlog) {
        size_t left = fe_reqlog_flush_blocking(s->reqlog);
        if (left)
            sb_error("%zu request log rows could not be written at shutdown", left);
    }
    fe_db_destroy(&s->db);
    fe_reqlog_destroy(&s->reqlog);
    fe_auth_destroy(&s->auth);
    sb_seal_key_wipe(&s->seal_key);
    free(s);
    *ps = NULL;
}
