/*
 * fe_admin: see fe_admin.h. Runs on the frontend's loop, so its collector
 * reads the server's state directly.
 */
#include "fe_admin.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_admin_api.h"
#include "fe_console.h"
#include "fe_server.h"
#include "sb_admin.h"
#include "sb_alloc.h"
#include "sb_metrics.h"

struct fe_admin {
    fe_server_t *srv;
    sb_admin_t *port;
    sb_metric_t *conns, *streams, *inflight, *body_bytes, *pool, *pool_queued, *log_waiting, *log_lag, *log_written,
        *log_spool, *log_dropped, *broker_up, *brokers, *broker_jobs, *draining, *ready;
};

static bool fe_admin_ready(void *arg, char *why, size_t len)
{
    fe_server_t *s = arg;
    if (s->draining)
        snprintf(why, len, "draining");
    else if (!sb_db_available(s->db))
        snprintf(why, len, "PostgreSQL unreachable");
    else if (!fe_broker_connected(s->broker))
        snprintf(why, len, "broker not answering");
    else
        return true;
    return false;
}

static void fe_admin_collect(void *arg)
{
    fe_admin_t *a = arg;
    fe_server_t *s = a->srv;
    sb_series_set(sb_metric_at(a->conns), s->http ? sb_http_open(s->http) : 0);
    sb_series_set(sb_metric_at(a->streams), s->streams_open);
    sb_series_set(sb_metric_at(a->inflight), s->active_requests);
    sb_series_set(sb_metric_at(a->body_bytes), s->http ? (double)sb_http_body_bytes(s->http) : 0);
    sb_db_usage_t u;
    sb_db_usage(s->db, &u);
    sb_series_set(sb_metric_at(a->pool, "busy"), u.busy);
    sb_series_set(sb_metric_at(a->pool, "idle"), u.idle);
    sb_series_set(sb_metric_at(a->pool, "down"), u.down);
    sb_series_set(sb_metric_at(a->pool_queued), u.queued);
    fe_reqlog_stats_t st;
    fe_reqlog_stats(s->reqlog, &st);
    sb_series_set(sb_metric_at(a->log_waiting), (double)st.waiting);
    sb_series_set(sb_metric_at(a->log_lag), (double)st.lag_us / 1e6);
    sb_series_set(sb_metric_at(a->log_written), (double)st.written);
    sb_series_set(sb_metric_at(a->log_spool), (double)st.spool_bytes);
    sb_series_set(sb_metric_at(a->log_dropped), (double)st.dropped);
    sb_series_set(sb_metric_at(a->broker_up), fe_broker_connected(s->broker));
    size_t usable = 0, listed = fe_broker_count(s->broker, &usable);
    sb_series_set(sb_metric_at(a->brokers, "listed"), (double)listed);
    sb_series_set(sb_metric_at(a->brokers, "usable"), (double)usable);
    sb_series_set(sb_metric_at(a->broker_jobs), (double)fe_broker_outstanding(s->broker));
    sb_series_set(sb_metric_at(a->draining), s->draining);
    char why[64];
    sb_series_set(sb_metric_at(a->ready), fe_admin_ready(s, why, sizeof why));
}

/* Everything but /metrics, /healthz and /readyz: the admin API. */
static void fe_admin_other(sb_http_req_t *req, void *arg)
{
    if (sb_http_req_error(req)) {
        const sb_http_err_t *e = sb_http_req_error(req);
        sb_admin_reply_text(req, e->status, "text/plain; charset=utf-8", e->message, strlen(e->message));
        return;
    }
    if (fe_admin_api_handle(req, arg) || fe_console_serve(req))
        return;
    static const char nf[] = "not found\n";
    sb_http_req_close_after(req);
    sb_admin_reply_text(req, 404, "text/plain; charset=utf-8", nf, sizeof nf - 1);
}

fe_admin_t *fe_admin_new(fe_server_t *srv, const char *host, int port, char *err, size_t errlen)
{
    fe_admin_t *a = sb_xcalloc(1, sizeof *a);
    a->srv = srv;
    a->conns = sb_metric_gauge("sb_frontend_connections_open", "Open client connections on the public port.", NULL);
    a->streams = sb_metric_gauge("sb_frontend_streams_open", "Streamed replies in progress.", NULL);
    a->inflight = sb_metric_gauge("sb_frontend_requests_in_flight", "Requests being served.", NULL);
    a->body_bytes = sb_metric_gauge("sb_frontend_body_bytes_buffered", "Request body bytes buffered now.", NULL);
    a->pool = sb_metric_gauge("sb_db_pool_connections", "PostgreSQL pool connections by state.", "state");
    a->pool_queued = sb_metric_gauge("sb_db_queries_queued", "Queries waiting for a pool connection.", NULL);
    a->log_waiting = sb_metric_gauge("sb_reqlog_rows_waiting", "Request log rows not yet written.", NULL);
    a->log_lag = sb_metric_gauge("sb_reqlog_write_lag_seconds",
                                 "How long the oldest request log row not yet written has waited.", NULL);
    a->log_written = sb_metric_counter("sb_reqlog_rows_written_total", "Request log rows written.", NULL);
    a->log_spool = sb_metric_gauge("sb_reqlog_spool_bytes", "Request log rows spooled to disk, in bytes.", NULL);
    a->log_dropped = sb_metric_counter("sb_reqlog_rows_dropped_total", "Request log rows dropped (spool full).", NULL);
    a->broker_up = sb_metric_gauge("sb_frontend_broker_connected", "1 while a broker answers.", NULL);
    a->brokers = sb_metric_gauge("sb_frontend_brokers",
                                 "Brokers in the set (listed), and those answering and taking jobs (usable).", "state");
    a->broker_jobs = sb_metric_gauge("sb_frontend_jobs_outstanding", "Jobs submitted and not yet ended.", NULL);
    a->draining = sb_metric_gauge("sb_draining", "1 once a drain (SIGTERM) began.", NULL);
    a->ready = sb_metric_gauge("sb_ready", "1 while /readyz answers 200.", NULL);
    sb_admin_config_t cfg = {.host = host,
                             .port = port,
                             .ready = fe_admin_ready,
                             .ready_arg = srv,
                             .other = fe_admin_other,
                             .other_arg = srv};
    a->port = sb_admin_new(srv->base, &cfg, err, errlen);
    if (!a->port) {
        free(a);
        return NULL;
    }
    sb_metrics_collector_add(fe_admin_collect, a);
    return a;
}

void fe_admin_free(fe_admin_t **pa)
{
    if (!pa || !*pa)
        return;
    fe_admin_t *a = *pa;
    sb_metrics_collector_remove(fe_admin_collect, a);
    sb_admin_free(&a->port);
    free(a);
    *pa = NULL;
}
