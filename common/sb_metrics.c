/*
 * sb_metrics: the registry (see sb_metrics.h). Families live for the
 * process; each holds its series in a small open hash keyed by the joined
 * label values. A double is kept as the bits of an atomic 64-bit word and
 * added to with compare-and-swap.
 */
/* PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP: _GNU_SOURCE is set for the whole build */
#include "sb_metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_map.h"

enum sb_metric_type { SB_COUNTER, SB_GAUGE, SB_HISTOGRAM };

struct sb_series {
    const struct sb_metric *family;
    char *values[SB_METRIC_LABELS_MAX];
    _Atomic uint64_t value;    /* the bits of a double: counter or gauge value, histogram sum */
    _Atomic uint64_t count;    /* histograms: observations */
    _Atomic uint64_t *buckets; /* histograms: observations <= bounds[i] (not cumulative), nbounds + 1 */
    struct sb_series *next;    /* creation order */
};

struct sb_metric {
    enum sb_metric_type type;
    const char *name, *help;
    char *label_names[SB_METRIC_LABELS_MAX];
    size_t nlabels;
    double *bounds;
    size_t nbounds;
    sb_map_t *by_values; /* joined values -> series */
    sb_series_t *first, *last;
    size_t nseries;
    struct sb_metric *next;
};

typedef struct sb_collector {
    void (*fn)(void *arg);
    void *arg;
    struct sb_collector *next;
} sb_collector_t;

/* Recursive: a publisher holds it across several updates (sb_metrics_hold). */
static pthread_mutex_t sb_metrics_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static sb_metric_t *sb_metrics_first, *sb_metrics_last;
static sb_collector_t *sb_collectors;

const double sb_metric_latency_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
                                           0.25,   0.5,     1,      2.5,   5,      10,    30,   60,    120};
const size_t sb_metric_latency_nbounds = sizeof sb_metric_latency_bounds / sizeof sb_metric_latency_bounds[0];
const double sb_metric_overhead_bounds[] = {0.00005, 0.0001, 0.00015, 0.0002, 0.00025, 0.0003, 0.00035, 0.0004, 0.00045,
                                            0.0005,  0.0006, 0.0007,  0.0008, 0.0009,  0.001,  0.00125, 0.0015, 0.00175,
                                            0.002,   0.0025, 0.003,   0.004,  0.005,   0.0075, 0.01,    0.025,  0.05,
                                            0.1,     0.25,   0.5,     1,      2.5,     5,      10,      30};
const size_t sb_metric_overhead_nbounds = sizeof sb_metric_overhead_bounds / sizeof sb_metric_overhead_bounds[0];

static double sb_bits_double(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static uint64_t sb_double_bits(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static void sb_atomic_add_double(_Atomic uint64_t *a, double v)
{
    uint64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(a, &old, sb_double_bits(sb_bits_double(old) + v),
                                                  memory_order_relaxed, memory_order_relaxed))
        ;
}

static sb_metric_t *sb_metric_find(const char *name)
{
    for (sb_metric_t *m = sb_metrics_first; m; m = m->next)
        if (!strcmp(m->name, name))
            return m;
    return NULL;
}

static sb_metric_t *sb_metric_new(enum sb_metric_type type, const char *name, const char *help, const char *labels,
                                  const double *bounds, size_t nbounds)
{
    pthread_mutex_lock(&sb_metrics_lock);
    sb_metric_t *m = sb_metric_find(name);
    if (m) {
        pthread_mutex_unlock(&sb_metrics_lock);
        return m;
    }
    m = sb_xcalloc(1, sizeof *m);
    m->type = type;
    m->name = name;
    m->help = help;
    for (const char *p = labels; p && *p && m->nlabels < SB_METRIC_LABELS_MAX;) {
        size_t n = strcspn(p, ",");
        m->label_names[m->nlabels++] = sb_xstrndup(p, n);
        p += n + (p[n] == ',');
    }
    if (nbounds) {
        m->bounds = sb_xmalloc(nbounds * sizeof *bounds);
        memcpy(m->bounds, bounds, nbounds * sizeof *bounds);
        m->nbounds = nbounds;
    }
    m->by_values = sb_map_new();
    if (sb_metrics_last)
        sb_metrics_last->next = m;
    else
        sb_metrics_first = m;
    sb_metrics_last = m;
    pthread_mutex_unlock(&sb_metrics_lock);
    return m;
}

sb_metric_t *sb_metric_counter(const char *name, const char *help, const char *labels)
{
    return sb_metric_new(SB_COUNTER, name, help, labels, NULL, 0);
}

sb_metric_t *sb_metric_gauge(const char *name, const char *help, const char *labels)
{
    return sb_metric_new(SB_GAUGE, name, help, labels, NULL, 0);
}

sb_metric_t *sb_metric_histogram(const char *name, const char *help, const char *labels, const double *bounds,
                                 size_t nbounds)
{
    return sb_metric_new(SB_HISTOGRAM, name, help, labels, bounds, nbounds);
}

/* The map key: the values, each cut to SB_METRIC_VALUE_MAX, joined by \x1f. */
static void sb_metric_key(const sb_metric_t *m, const char *const *values, char *key, size_t len)
{
    size_t at = 0;
    key[0] = '\0';
    for (size_t i = 0; i < m->nlabels; i++) {
        const char *v = values[i] ? values[i] : "";
        int n = snprintf(key + at, len - at, "%s%.*s", i ? "\x1f" : "", SB_METRIC_VALUE_MAX, v);
        if (n < 0 || (size_t)n >= len - at)
            break;
        at += (size_t)n;
    }
}

static sb_series_t *sb_series_new(sb_metric_t *m, const char *const *values, const char *key)
{
    sb_series_t *s = sb_xcalloc(1, sizeof *s);
    s->family = m;
    for (size_t i = 0; i < m->nlabels; i++)
        s->values[i] =
            sb_xstrndup(values[i] ? values[i] : "", strnlen(values[i] ? values[i] : "", SB_METRIC_VALUE_MAX));
    if (m->type == SB_HISTOGRAM)
        s->buckets = sb_xcalloc(m->nbounds + 1, sizeof *s->buckets);
    sb_map_put(m->by_values, key, s);
    if (m->last)
        m->last->next = s;
    else
        m->first = s;
    m->last = s;
    m->nseries++;
    return s;
}

sb_series_t *sb_metric_atv(sb_metric_t *m, const char *const *values)
{
    char key[SB_METRIC_LABELS_MAX * (SB_METRIC_VALUE_MAX + 1) + 1];
    sb_metric_key(m, values, key, sizeof key);
    pthread_mutex_lock(&sb_metrics_lock);
    sb_series_t *s = sb_map_get(m->by_values, key);
    if (!s && m->nseries >= SB_METRIC_SERIES_MAX) {
        const char *other[SB_METRIC_LABELS_MAX] = {"other", "other", "other", "other", "other"};
        sb_metric_key(m, other, key, sizeof key);
        s = sb_map_get(m->by_values, key);
        if (!s)
            s = sb_series_new(m, other, key);
    } else if (!s) {
        s = sb_series_new(m, values, key);
    }
    pthread_mutex_unlock(&sb_metrics_lock);
    return s;
}

sb_series_t *sb_metric_at(sb_metric_t *m, ...)
{
    const char *values[SB_METRIC_LABELS_MAX] = {0};
    va_list ap;
    va_start(ap, m);
    for (size_t i = 0; i < m->nlabels; i++)
        values[i] = va_arg(ap, const char *);
    va_end(ap);
    return sb_metric_atv(m, values);
}

void sb_series_add(sb_series_t *s, double v)
{
    sb_atomic_add_double(&s->value, v);
}

void sb_series_set(sb_series_t *s, double v)
{
    atomic_store_explicit(&s->value, sb_double_bits(v), memory_order_relaxed);
}

double sb_series_value(const sb_series_t *s)
{
    if (s->buckets)
        return (double)atomic_load_explicit(&s->count, memory_order_relaxed);
    return sb_bits_double(atomic_load_explicit(&s->value, memory_order_relaxed));
}

/* The index of the first bound >= v (nbounds: the +Inf bucket). */
static size_t sb_bucket_of(const double *bounds, size_t n, double v)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (v <= bounds[mid])
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

void sb_series_observe(sb_series_t *s, double v)
{
    if (!s->buckets || isnan(v))
        return;
    size_t b = sb_bucket_of(s->family->bounds, s->family->nbounds, v);
    atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->count, 1, memory_order_relaxed);
    sb_atomic_add_double(&s->value, v);
}

void sb_metric_zero(sb_metric_t *m)
{
    pthread_mutex_lock(&sb_metrics_lock);
    for (sb_series_t *s = m->first; s; s = s->next)
        atomic_store_explicit(&s->value, sb_double_bits(0), memory_order_relaxed);
    pthread_mutex_unlock(&sb_metrics_lock);
}

void sb_metrics_collector_add(void (*fn)(void *arg), void *arg)
{
    sb_collector_t *c = sb_xcalloc(1, sizeof *c);
    c->fn = fn;
    c->arg = arg;
    pthread_mutex_lock(&sb_metrics_lock);
    c->next = sb_collectors;
    sb_collectors = c;
    pthread_mutex_unlock(&sb_metrics_lock);
}

void sb_metrics_collector_remove(void (*fn)(void *arg), void *arg)
{
    pthread_mutex_lock(&sb_metrics_lock);
    for (sb_collector_t **p = &sb_collectors; *p; p = &(*p)->next) {
        if ((*p)->fn == fn && (*p)->arg == arg) {
            sb_collector_t *c = *p;
            *p = c->next;
            free(c);
            break;
        }
    }
    pthread_mutex_unlock(&sb_metrics_lock);
}

static void sb_emit(sb_buf_t *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_emit(sb_buf_t *out, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0)
        sb_buf_add(out, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* A number as the text format writes it: integers without a fraction,
 * others with enough digits to read back the same double. */
static void sb_emit_number(sb_buf_t *out, double v)
{
    if (isinf(v))
        sb_emit(out, "%s", v > 0 ? "+Inf" : "-Inf");
    else if (isnan(v))
        sb_emit(out, "NaN");
    else if (v == floor(v) && fabs(v) < 1e15)
        sb_emit(out, "%.0f", v);
    else {
        char t[40];
        snprintf(t, sizeof t, "%.15g", v);
        if (strtod(t, NULL) != v)
            snprintf(t, sizeof t, "%.17g", v);
        sb_emit(out, "%s", t);
    }
}

/* A label value escaped as the text format wants: backslash, quote and
 * newline. */
static void sb_emit_value(sb_buf_t *out, const char *v)
{
    for (const char *p = v; *p; p++) {
        if (*p == '\\')
            sb_buf_add(out, "\\\\", 2);
        else if (*p == '"')
            sb_buf_add(out, "\\\"", 2);
        else if (*p == '\n')
            sb_buf_add(out, "\\n", 2);
        else
            sb_buf_add(out, p, 1);
    }
}

/* {a="x",b="y"} with an optional extra label (le) last; nothing when
 * there are no labels at all. */
static void sb_emit_labels(sb_buf_t *out, const sb_metric_t *m, const sb_series_t *s, const char *extra,
                           const char *extra_value)
{
    if (!m->nlabels && !extra)
        return;
    sb_buf_add(out, "{", 1);
    for (size_t i = 0; i < m->nlabels; i++) {
        sb_emit(out, "%s%s=\"", i ? "," : "", m->label_names[i]);
        sb_emit_value(out, s->values[i]);
        sb_buf_add(out, "\"", 1);
    }
    if (extra)
        sb_emit(out, "%s%s=\"%s\"", m->nlabels ? "," : "", extra, extra_value);
    sb_buf_add(out, "}", 1);
}

static void sb_render_family(sb_buf_t *out, const sb_metric_t *m)
{
    static const char *types[] = {"counter", "gauge", "histogram"};
    sb_emit(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, types[m->type]);
    for (const sb_series_t *s = m->first; s; s = s->next) {
        double sum = sb_bits_double(atomic_load_explicit(&s->value, memory_order_relaxed));
        if (m->type != SB_HISTOGRAM) {
            sb_emit(out, "%s", m->name);
            sb_emit_labels(out, m, s, NULL, NULL);
            sb_buf_add(out, " ", 1);
            sb_emit_number(out, sum);
            sb_buf_add(out, "\n", 1);
            continue;
        }
        /* Buckets are cumulative; the count is their total as read now, so
         * a scrape racing an observation is still self-consistent. */
        uint64_t cum = 0;
        for (size_t b = 0; b <= m->nbounds; b++) {
            cum += atomic_load_explicit(&s->buckets[b], memory_order_relaxed);
            char le[32];
            if (b == m->nbounds)
                snprintf(le, sizeof le, "+Inf");
            else
                snprintf(le, sizeof le, "%g", m->bounds[b]);
            sb_emit(out, "%s_bucket", m->name);
            sb_emit_labels(out, m, s, "le", le);
            sb_emit(out, " %llu\n", (unsigned long long)cum);
        }
        sb_emit(out, "%s_sum", m->name);
        sb_emit_labels(out, m, s, NULL, NULL);
        sb_buf_add(out, " ", 1);
        sb_emit_number(out, sum);
        sb_emit(out, "\n%s_count", m->name);
        sb_emit_labels(out, m, s, NULL, NULL);
        sb_emit(out, " %llu\n", (unsigned long long)cum);
    }
}

void sb_metrics_render(sb_buf_t *out)
{
    /* Collectors first, outside the lock: they set gauges, which may
     * create series. */
    pthread_mutex_lock(&sb_metrics_lock);
    size_t n = 0;
    for (sb_collector_t *c = sb_collectors; c; c = c->next)
        n++;
    sb_collector_t *copy = n ? sb_xcalloc(n, sizeof *copy) : NULL;
    n = 0;
    for (sb_collector_t *c = sb_collectors; c; c = c->next)
        copy[n++] = *c;
    pthread_mutex_unlock(&sb_metrics_lock);
    for (size_t i = 0; i < n; i++)
        copy[i].fn(copy[i].arg);
    free(copy);
    pthread_mutex_lock(&sb_metrics_lock);
    for (const sb_metric_t *m = sb_metrics_first; m; m = m->next)
        sb_render_family(out, m);
    pthread_mutex_unlock(&sb_metrics_lock);
}

void sb_metrics_hold(void)
{
    pthread_mutex_lock(&sb_metrics_lock);
}

void sb_metrics_release(void)
{
    pthread_mutex_unlock(&sb_metrics_lock);
}
