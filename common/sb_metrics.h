/*
 * sb_metrics: the process's Prometheus metrics (text exposition format
 * 0.0.4), one registry per process.
 *
 * A metric is a family (counter, gauge or histogram) with fixed label names;
 * a series is one combination of label values, created on first use and then
 * kept (callers may keep the pointer). Values are atomics, so the thread
 * that owns the work (the frontend's or worker's loop, the broker's loop)
 * updates them while another (the broker's admin thread) renders; creating
 * a series and rendering take the registry's mutex.
 *
 * Label sets are bounded: label values must come from bounded sets (styles,
 * configured models, statuses, kinds; never key or request ids), values are
 * cut to SB_METRIC_VALUE_MAX bytes, and a family holds at most
 * SB_METRIC_SERIES_MAX series: past that every new combination lands in
 * one series whose values are all "other".
 *
 * Collectors run just before each render, on the rendering thread: they set
 * the gauges that are cheaper to read at scrape time than to keep current
 * (open connections, pool use). Only a process that renders on its own loop
 * registers collectors.
 */
#ifndef SB_METRICS_H
#define SB_METRICS_H

#include <stddef.h>

#include "sb_buf.h"

#define SB_METRIC_SERIES_MAX 2000
#define SB_METRIC_VALUE_MAX 96
#define SB_METRIC_LABELS_MAX 5

typedef struct sb_metric sb_metric_t;
typedef struct sb_series sb_series_t;

/* Families. name and help are borrowed (string literals); labels is a
 * comma-separated list of label names ("style,model,status") or NULL. The
 * same name twice returns the first family. */
sb_metric_t *sb_metric_counter(const char *name, const char *help, const char *labels);
sb_metric_t *sb_metric_gauge(const char *name, const char *help, const char *labels);
/* bounds: the buckets' upper bounds, ascending (copied); +Inf is added. */
sb_metric_t *sb_metric_histogram(const char *name, const char *help, const char *labels, const double *bounds,
                                 size_t nbounds);

/* The series of these label values, one per label name (NULL counts as "");
 * created on first use. Never NULL. */
sb_series_t *sb_metric_at(sb_metric_t *m, ...);
sb_series_t *sb_metric_atv(sb_metric_t *m, const char *const *values);

void sb_series_add(sb_series_t *s, double v);     /* counters and gauges */
void sb_series_set(sb_series_t *s, double v);     /* gauges */
void sb_series_observe(sb_series_t *s, double v); /* histograms */
/* The current value (counter or gauge), or a histogram's count. */
double sb_series_value(const sb_series_t *s);

/* Sets every series of a gauge family to 0 (before a collector or a periodic
 * refresh sets the live ones, so that a model gone from a queue reads 0). */
void sb_metric_zero(sb_metric_t *m);

/* A collector runs before each render, on the rendering thread. */
void sb_metrics_collector_add(void (*fn)(void *arg), void *arg);
void sb_metrics_collector_remove(void (*fn)(void *arg), void *arg);

/* Holds the registry across several updates (zeroing a family, then
 * setting its live series), so that a render on another thread sees all of
 * them or none. Nests. */
void sb_metrics_hold(void);
void sb_metrics_release(void);

/* Appends every family in the text format to out. */
void sb_metrics_render(sb_buf_t *out);

/* Standard bucket bounds, in seconds. */
extern const double sb_metric_latency_bounds[]; /* 100 µs .. 120 s */
extern const size_t sb_metric_latency_nbounds;
/* Finer below 10 ms (50 µs steps up to 1 ms), for what the gateway itself
 * adds and for time to first token: 50 µs .. 30 s. */
extern const double sb_metric_overhead_bounds[];
extern const size_t sb_metric_overhead_nbounds;

#endif
