/*
 * broker_metrics: see broker_metrics.h.
 */
#include "broker_metrics.h"

#include "sb_metrics.h"

static sb_metric_t *queued, *dispatched, *queue_wait, *errors, *finished, *depth, *credits, *workers, *in_flight,
    *circuit, *client_open;

static void sb_broker_metrics_init(void)
{
    if (queued)
        return;
    queued = sb_metric_counter("sb_broker_jobs_queued_total", "Jobs accepted into a model's queue.", "model");
    dispatched =
        sb_metric_counter("sb_broker_jobs_dispatched_total", "Jobs handed to a worker (retries included).", "model");
    finished = sb_metric_counter("sb_broker_jobs_finished_total", "Jobs whose final event went back.", "model");
    queue_wait = sb_metric_histogram("sb_broker_queue_wait_seconds", "Time a job waited in its model's queue.", "model",
                                     sb_metric_latency_bounds, sb_metric_latency_nbounds);
    errors = sb_metric_counter("sb_broker_errors_total",
                               "Jobs the broker answered with an error, by code (queue_full, no_workers, "
                               "circuit_open, deadline_exceeded, worker_lost, ...).",
                               "code");
    depth = sb_metric_gauge("sb_broker_queue_depth", "Jobs waiting in a model's queue.", "model");
    credits = sb_metric_gauge("sb_broker_worker_credits",
                              "Worker credits per model served, in use or free (a worker serving several models "
                              "counts under each; \"*\": any model).",
                              "model,state");
    workers = sb_metric_gauge("sb_broker_workers", "Live workers.", NULL);
    in_flight =
        sb_metric_gauge("sb_broker_jobs_in_flight", "Jobs on workers (dispatched, or abandoned and ending).", NULL);
    circuit = sb_metric_gauge("sb_broker_circuit_state",
                              "A model's circuit breaker: 0 closed, 1 open, 2 half-open, 3 probing.", "model");
    client_open = sb_metric_gauge("sb_broker_client_circuits_open", "Per-client circuits not closed.", NULL);
}

void sb_broker_metrics_queued(const char *model)
{
    sb_broker_metrics_init();
    sb_series_add(sb_metric_at(queued, model), 1);
}

void sb_broker_metrics_dispatched(const char *model, int64_t waited_us)
{
    sb_broker_metrics_init();
    sb_series_add(sb_metric_at(dispatched, model), 1);
    sb_series_observe(sb_metric_at(queue_wait, model), (double)(waited_us > 0 ? waited_us : 0) / 1e6);
}

void sb_broker_metrics_error(const char *code)
{
    sb_broker_metrics_init();
    sb_series_add(sb_metric_at(errors, code ? code : ""), 1);
}

void sb_broker_metrics_finished(const char *model)
{
    sb_broker_metrics_init();
    sb_series_add(sb_metric_at(finished, model), 1);
}

static void sb_broker_metrics_circuit(const sb_breaker_t *br, void *arg)
{
    int *open_clients = arg;
    enum sb_breaker_state st = sb_breaker_state_of(br);
    if (sb_breaker_client(br))
        *open_clients += st != SB_BREAKER_CLOSED;
    else
        sb_series_set(sb_metric_at(circuit, sb_breaker_model(br)), (double)st);
}

void sb_broker_metrics_publish(const sb_broker_queues_t *qs, const sb_broker_registry_t *r, sb_breakers_t *bs,
                               int64_t now)
{
    (void)now;
    sb_broker_metrics_init();
    sb_metrics_hold(); /* a scrape sees these all as of one sweep */
    sb_metric_zero(depth);
    for (const sb_broker_queue_t *q = sb_broker_queues_first(qs); q; q = q->next)
        sb_series_set(sb_metric_at(depth, q->model), (double)q->len);
    sb_metric_zero(credits);
    double jobs = 0;
    for (const sb_broker_worker_t *w = sb_broker_registry_first_live(r); w; w = w->next) {
        jobs += w->in_flight;
        int free_credits = sb_broker_worker_free_credits(w);
        for (size_t i = 0; i < w->nmodels; i++) {
            sb_series_add(sb_metric_at(credits, w->models[i], "used"), w->in_flight);
            sb_series_add(sb_metric_at(credits, w->models[i], "free"), free_credits);
        }
    }
    sb_series_set(sb_metric_at(workers), (double)sb_broker_registry_count(r));
    sb_series_set(sb_metric_at(in_flight), jobs);
    int open_clients = 0;
    sb_breakers_each(bs, sb_broker_metrics_circuit, &open_clients);
    sb_series_set(sb_metric_at(client_open), open_clients);
    sb_metrics_release();
}
