/*
 * wmetrics: see wmetrics.h. Families are created on first use.
 */
#include "wmetrics.h"

#include "sb_metrics.h"

static sb_metric_t *calls, *retries, *conns, *tools;

static void sb_wmetrics_init(void)
{
    if (calls)
        return;
    calls = sb_metric_counter("sb_worker_upstream_calls_total",
                              "Upstream call attempts by model and outcome (HTTP status, or timeout, "
                              "connect_failed, aborted, failed).",
                              "model,outcome");
    retries = sb_metric_counter("sb_worker_upstream_retries_total", "Upstream calls retried, by model.", "model");
    conns = sb_metric_counter("sb_worker_upstream_connections_total",
                              "Outbound transfers by whether their connection was reused from the pool.", "reused");
    tools = sb_metric_counter("sb_tool_calls_total", "Built-in tool calls the gateway ran, by kind and outcome.",
                              "kind,outcome");
}

void sb_wmetrics_upstream_call(const char *model, const char *outcome)
{
    sb_wmetrics_init();
    sb_series_add(sb_metric_at(calls, model ? model : "", outcome), 1);
}

void sb_wmetrics_retry(const char *model)
{
    sb_wmetrics_init();
    sb_series_add(sb_metric_at(retries, model ? model : ""), 1);
}

void sb_wmetrics_connection(bool reused)
{
    sb_wmetrics_init();
    sb_series_add(sb_metric_at(conns, reused ? "true" : "false"), 1);
}

void sb_wmetrics_tool_call(const char *kind, const char *outcome)
{
    sb_wmetrics_init();
    sb_series_add(sb_metric_at(tools, kind ? kind : "", outcome ? outcome : ""), 1);
}
