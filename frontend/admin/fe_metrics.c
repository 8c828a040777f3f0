/*
 * fe_metrics: the families are created on first use (one registry per
 * process, sb_metrics.h); series are looked up per request.
 */
#include "fe_metrics.h"

#include <stdio.h>

#include "sb_metrics.h"

static sb_metric_t *requests, *duration, *upstream, *added, *ttft, *tokens, *refusals, *fallbacks;

static void fe_metrics_init(void)
{
    if (requests)
        return;
    requests = sb_metric_counter("sb_requests_total", "Requests answered, by style, model, upstream kind and status.",
                                 "style,model,upstream,status");
    duration = sb_metric_histogram("sb_request_duration_seconds", "Total time from request head to reply end.",
                                   "style,model", sb_metric_latency_bounds, sb_metric_latency_nbounds);
    upstream = sb_metric_histogram("sb_upstream_duration_seconds", "Time spent in upstream calls.", "style,model",
                                   sb_metric_latency_bounds, sb_metric_latency_nbounds);
    added = sb_metric_histogram("sb_gateway_added_seconds",
                                "Gateway-added time: total minus upstream, for requests that called an upstream.",
                                "style,model", sb_metric_overhead_bounds, sb_metric_overhead_nbounds);
    ttft = sb_metric_histogram("sb_time_to_first_token_seconds", "Streams: request head to first token delta.",
                               "style,model", sb_metric_overhead_bounds, sb_metric_overhead_nbounds);
    tokens = sb_metric_counter("sb_tokens_total", "Tokens by model and direction (input, output).", "model,direction");
    refusals = sb_metric_counter("sb_limit_refusals_total", "Requests refused by a limit, by kind.", "kind");
    fallbacks =
        sb_metric_counter("sb_fallbacks_total", "Requests a fallback model answered, by the model asked.", "model");
}

void fe_metrics_request(const fe_metrics_request_t *m)
{
    fe_metrics_init();
    char status[16];
    snprintf(status, sizeof status, "%d", m->status);
    const char *model = m->model ? m->model : "";
    sb_series_add(sb_metric_at(requests, m->style, model, m->upstream ? m->upstream : "", status), 1);
    sb_series_observe(sb_metric_at(duration, m->style, model), (double)m->total_us / 1e6);
    if (m->upstream_us >= 0) {
        sb_series_observe(sb_metric_at(upstream, m->style, model), (double)m->upstream_us / 1e6);
        int64_t a = m->total_us - m->upstream_us;
        sb_series_observe(sb_metric_at(added, m->style, model), (double)(a > 0 ? a : 0) / 1e6);
    }
    if (m->ttft_us >= 0)
        sb_series_observe(sb_metric_at(ttft, m->style, model), (double)m->ttft_us / 1e6);
    if (m->tokens_in > 0)
        sb_series_add(sb_metric_at(tokens, model, "input"), (double)m->tokens_in);
    if (m->tokens_out > 0)
        sb_series_add(sb_metric_at(tokens, model, "output"), (double)m->tokens_out);
}

void fe_metrics_limit_refused(const char *kind)
{
    fe_metrics_init();
    sb_series_add(sb_metric_at(refusals, kind ? kind : ""), 1);
}

void fe_metrics_fallback(const char *model)
{
    fe_metrics_init();
    sb_series_add(sb_metric_at(fallbacks, model ? model : ""), 1);
}
