/*
 * wadmin: see wadmin.h.
 */
#include "wadmin.h"

#include <stdio.h>
#include <stdlib.h>

#include "sb_admin.h"
#include "sb_alloc.h"
#include "sb_metrics.h"

struct sb_wadmin {
    sb_worker_t *w;
    sb_admin_t *port;
    sb_metric_t *jobs, *broker_up, *draining, *ready;
};

static bool sb_wadmin_ready(void *arg, char *why, size_t len)
{
    const char *no = sb_worker_not_ready(arg);
    if (no)
        snprintf(why, len, "%s", no);
    return !no;
}

static void sb_wadmin_collect(void *arg)
{
    sb_wadmin_t *a = arg;
    const char *no = sb_worker_not_ready(a->w);
    sb_series_set(sb_metric_at(a->jobs), (double)sb_worker_inflight(a->w));
    sb_series_set(sb_metric_at(a->draining), sb_worker_state(a->w) != SB_WORKER_ACTIVE);
    sb_series_set(sb_metric_at(a->broker_up), sb_worker_broker_connected(a->w));
    sb_series_set(sb_metric_at(a->ready), !no);
}

sb_wadmin_t *sb_wadmin_new(struct event_base *base, sb_worker_t *w, const char *host, int port, char *err,
                           size_t errlen)
{
    sb_wadmin_t *a = sb_xcalloc(1, sizeof *a);
    a->w = w;
    a->jobs = sb_metric_gauge("sb_worker_jobs_in_flight", "Jobs this worker is running.", NULL);
    a->broker_up = sb_metric_gauge("sb_worker_broker_connected", "1 while the broker answers.", NULL);
    a->draining = sb_metric_gauge("sb_draining", "1 once a drain (SIGTERM) began.", NULL);
    a->ready = sb_metric_gauge("sb_ready", "1 while /readyz answers 200.", NULL);
    sb_admin_config_t cfg = {.host = host, .port = port, .ready = sb_wadmin_ready, .ready_arg = w};
    a->port = sb_admin_new(base, &cfg, err, errlen);
    if (!a->port) {
        free(a);
        return NULL;
    }
    sb_metrics_collector_add(sb_wadmin_collect, a);
    return a;
}

void sb_wadmin_free(sb_wadmin_t **pa)
{
    if (!pa || !*pa)
        return;
    sb_wadmin_t *a = *pa;
    sb_metrics_collector_remove(sb_wadmin_collect, a);
    sb_admin_free(&a->port);
    free(a);
    *pa = NULL;
}
