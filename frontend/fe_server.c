/*
 * fe_server: builds one frontend instance: database pool and LISTEN for
 * cache invalidation, broker client, request log, and the HTTP listener
 * (sb_http: SO_REUSEPORT so several processes share a port; limits on
 * header size, body memory, read time and open connections).
 */
#include "fe_server.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_admin.h"
#include "fe_bg.h"
#include "fe_body.h"
#include "fe_limits_batch.h"
#include "fe_limits_block.h"
#include "fe_request.h"
#include "fe_routes.h"
#include "fe_sql.h"
#include "fe_storebatch.h"
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
    cfg->max_connections_per_source = 1024;
    cfg->max_body_memory = 256u * 1024u * 1024u;
    cfg->default_timeout_ms = 60000;
    cfg->stream_keepalive_ms = 15000;
    cfg->max_file_bytes = 16u * 1024u * 1024u;
    cfg->embedding_model = "text-embedding-3-small";
    cfg->admin_host = "127.0.0.1";
    cfg->admin_port = -1;
}

/* After the loop iteration in which requests ended: free them, outside
 * every callback that may still hold a pointer to them. */
static void fe_server_on_reap(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fe_request_reap(arg);
}

static void fe_server_on_notify(const char *payload, void *arg)
{
    fe_server_t *s = arg;
    sb_debug("configuration changed (%s): dropping caches", payload ? payload : "reconnect");
    fe_auth_flush(s->auth);
    /* Limits may have changed: what blocks hold was granted under the old ones. */
    if (!payload || !strcmp(payload, "api_keys") || !strcmp(payload, "token_groups") || !strcmp(payload, "accounts"))
        fe_limits_blocks_flush(s->limit_blocks);
}

fe_server_t *fe_server_new(struct event_base *base, const fe_config_t *cfg, char *err, size_t errlen)
{
    fe_server_t *s = sb_xcalloc(1, sizeof *s);
    s->base = base;
    s->cfg = *cfg;
    s->routes = &fe_routes;
    s->cfg.reasoning_key = NULL; /* the secret is kept only in parsed form */
    s->reap = event_new(base, -1, 0, fe_server_on_reap, s);
    if (!s->reap) {
        snprintf(err, errlen, "cannot create the reap event");
        goto fail;
    }
    if (cfg->reasoning_key) {
        if (sb_seal_key_parse(cfg->reasoning_key, &s->seal_key) != 0) {
            snprintf(err, errlen, "the reasoning key must be 64 hex characters");
            goto fail;
        }
        s->seal_ready = true;
    }
    int nstmts = 0;
    const sb_db_stmt_t *stmts = fe_sql_all(&nstmts);
    s->db = sb_db_new(base, cfg->pg_dsn, cfg->db_conns, stmts, nstmts, err, errlen);
    if (!s->db)
        goto fail;
    s->auth = fe_auth_new(s->db);
    if (sb_db_listen(s->db, "sb_config", fe_server_on_notify, s) < 0) {
        snprintf(err, errlen, "cannot LISTEN for configuration changes");
        goto fail;
    }
    s->broker = fe_broker_new(base, cfg->broker_endpoint);
    if (!s->broker) {
        snprintf(err, errlen, "cannot connect to the broker at %s", cfg->broker_endpoint);
        goto fail;
    }
    s->reqlog = fe_reqlog_new(base, s->db, cfg->name);
    s->responses_store = fe_storebatch_new(base, s->db, FE_SQL_RESPONSE_SAVE);
    s->chat_store = fe_storebatch_new(base, s->db, FE_SQL_CHAT_SAVE);
    s->limits = fe_limits_batch_new(base, s->db);
    s->limit_blocks = fe_limits_blocks_new(base, s->limits);
    s->bg = fe_bg_new(s);

    fe_body_set_max_elements(cfg->max_json_elements);
    sb_http_limits_t lim = {
        .host = cfg->listen_host,
        .port = cfg->listen_port,
        .max_connections = cfg->max_connections,
        .max_per_source = cfg->max_connections_per_source,
        .read_deadline_ms = cfg->read_deadline_ms > 0 ? cfg->read_deadline_ms : 24 * 3600 * 1000,
        .idle_timeout_ms = cfg->read_timeout_s * 1000,
        .write_timeout_ms = cfg->read_timeout_s * 2000,
        .max_head = cfg->max_header_bytes,
        .body_budget = cfg->max_body_memory,
    };
    s->http = sb_http_new(base, &lim, fe_request_handle, s, err, errlen);
    if (!s->http)
        goto fail;
    if (cfg->admin_port >= 0) {
        s->admin = fe_admin_new(s, cfg->admin_host, cfg->admin_port, err, errlen);
        if (!s->admin)
            goto fail;
    }
    sb_info("listening on %s:%d, broker %s", cfg->listen_host, cfg->listen_port, cfg->broker_endpoint);
    return s;
fail:
    fe_server_destroy(&s);
    return NULL;
}

/* New requests get 503 shutting_down (fe_request_handle) rather than a
 * closed listener, whose queued connections would be reset. */
void fe_server_drain(fe_server_t *s)
{
    s->draining = true;
    sb_http_drain(s->http);
}

bool fe_server_quiesce(fe_server_t *s)
{
    sb_http_stop_accepting(s->http);
    sb_http_drain(s->http);
    return sb_http_open(s->http) == 0;
}

void fe_server_destroy(fe_server_t **ps)
{
    if (!ps || !*ps)
        return;
    fe_server_t *s = *ps;
    fe_admin_free(&s->admin);
    sb_http_free(&s->http); /* closes every client connection */
    /* Outstanding jobs fail now; their requests log a row each. */
    fe_broker_destroy(&s->broker);
    if (s->reqlog) {
        size_t left = fe_reqlog_flush_blocking(s->reqlog);
        if (left)
            sb_error("%zu request log rows could not be written at shutdown", left);
    }
    if (s->limit_blocks && s->db)
        fe_limits_blocks_return_all(s->limit_blocks, s->db);
    sb_db_destroy(&s->db); /* fails the stores in flight: before their writers go */
    fe_bg_destroy(&s->bg); /* its finalizations in flight were failed just above */
    fe_storebatch_free(&s->responses_store);
    fe_storebatch_free(&s->chat_store);
    fe_limits_batch_free(&s->limits);
    fe_reqlog_destroy(&s->reqlog);
    fe_auth_destroy(&s->auth);
    /* The loop has stopped: requests that ended above (their connections
     * closed, their jobs and queries failed) are freed here. */
    fe_request_reap(s);
    fe_request_spares_free(s);
    fe_limits_blocks_free(&s->limit_blocks); /* no request holds a block now */
    if (s->reap)
        event_free(s->reap);
    sb_seal_key_wipe(&s->seal_key);
    free(s);
    *ps = NULL;
}
