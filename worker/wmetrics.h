/*
 * wmetrics: the worker's metric families (sb_metrics), served on its admin
 * port (--admin-listen) by its own loop: upstream calls by model and
 * outcome, retries, connections opened or reused, built-in tool calls by
 * kind and outcome, and (read at scrape time) jobs in flight and the broker
 * session.
 */
#ifndef SB_WMETRICS_H
#define SB_WMETRICS_H

#include <stdbool.h>

/* One upstream call attempt ended: outcome is its HTTP status as text, or
 * "timeout", "connect_failed", "aborted", "failed". */
void sb_wmetrics_upstream_call(const char *model, const char *outcome);
void sb_wmetrics_retry(const char *model);
/* A transfer ended on a connection it opened (reused false) or took from
 * the pool (true). */
void sb_wmetrics_connection(bool reused);
/* A built-in tool call ran (kind "mcp", "web_search", ...; outcome "ok",
 * "error", ...). */
void sb_wmetrics_tool_call(const char *kind, const char *outcome);

#endif
