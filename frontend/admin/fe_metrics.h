/*
 * fe_metrics: the frontend's metric families (sb_metrics), recorded where
 * the request log row is made, so that the counts equal the log's rows:
 * requests by style, model, upstream kind and status; total, upstream,
 * gateway-added (total minus upstream, microsecond clocks) and first-token
 * times; tokens. The model label is the configured model that answered (a
 * name the client sent that matched none is ""), so label sets stay
 * bounded.
 */
#ifndef FE_METRICS_H
#define FE_METRICS_H

#include <stdbool.h>
#include <stdint.h>

typedef struct {
    const char *style;    /* "responses", "chat", "messages", "gemini" */
    const char *model;    /* configured model id, or NULL */
    const char *upstream; /* the model's provider kind, or NULL */
    int status;
    int64_t total_us;
    int64_t upstream_us; /* < 0: no upstream call */
    int64_t ttft_us;     /* < 0: none (not streamed, or no token) */
    long long tokens_in, tokens_out;
} fe_metrics_request_t;

/* One finished request (one request_log row). */
void fe_metrics_request(const fe_metrics_request_t *m);
/* A request refused by a limit: kind is "rate", "quota", "concurrency"... */
void fe_metrics_limit_refused(const char *kind);
/* A fallback model answered for model. */
void fe_metrics_fallback(const char *model);

#endif
