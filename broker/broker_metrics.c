/*
 * broker_metrics: see broker_metrics.h.
 */
#include "broker_metrics.h"

#include <jansson.h>

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

/* The entry of model in the live view's map, made on first use. */
static json_t *sb_broker_live_model(json_t *models, const char *model)
{
    json_t *m = json_object_get(models, model);
    if (!m) {
        m = json_pack("{s:s, s:i, s:i, s:i, s:i, s:s}", "model", model, "queued", 0, "credits_used", 0, "credits_free",
                      0, "workers", 0, "circuit", "closed");
        json_object_set_new(models, model, m);
    }
    return m;
}

static void sb_broker_live_add(json_t *m, const char *key, json_int_t v)
{
    json_object_set_new(m, key, json_integer(json_integer_value(json_object_get(m, key)) + v));
}

static void sb_broker_live_circuit(const sb_breaker_t *br, void *arg)
{
    json_t **ctx = arg; /* {models, clients open counter} */
    if (sb_breaker_client(br)) {
        if (sb_breaker_state_of(br) != SB_BREAKER_CLOSED)
            sb_broker_live_add(ctx[1], "client_circuits_open", 1);
        return;
    }
    json_object_set_new(sb_broker_live_model(ctx[0], sb_breaker_model(br)), "circuit",
                        json_string(sb_breaker_state_name(sb_breaker_state_of(br))));
}

json_t *sb_broker_metrics_live(const sb_broker_queues_t *qs, const sb_broker_registry_t *r, sb_breakers_t *bs)
{
    json_t *models = json_object();
    for (const sb_broker_queue_t *q = sb_broker_queues_first(qs); q; q = q->next)
        sb_broker_live_add(sb_broker_live_model(models, q->model), "queued", (json_int_t)q->len);
    json_int_t jobs = 0;
    for (const sb_broker_worker_t *w = sb_broker_registry_first_live(r); w; w = w->next) {
        jobs += w->in_flight;
        for (size_t i = 0; i < w->nmodels; i++) {
            json_t *m = sb_broker_live_model(models, w->models[i]);
            sb_broker_live_add(m, "credits_used", w->in_flight);
            sb_broker_live_add(m, "credits_free", sb_broker_worker_free_credits(w));
            sb_broker_live_add(m, "workers", 1);
        }
    }
    json_t *out = json_pack("{s:I, s:I, s:i}", "workers", (json_int_t)sb_broker_registry_count(r), "jobs_in_flight",
                            jobs, "client_circuits_open", 0);
    json_t *ctx[2] = {models, out};
    sb_breakers_each(bs, sb_broker_live_circuit, ctx);
    json_t *list = json_array();
    const char *k;
    json_t *v;
    json_object_foreach (models, k, v)
        json_array_append(list, v);
    json_decref(models);
    json_object_set_new(out, "models", list);
    return out;
}
