/* Unit tests for sb_metrics: the text format, histogram buckets, the series
 * cap, escaping, collectors, and updates from several threads. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sb_metrics.h"
#include "sb_test.h"

static char *render(void)
{
    sb_buf_t b = {0};
    sb_metrics_render(&b);
    return b.p; /* owned by the caller */
}

static int collected;
static void collect(void *arg)
{
    collected++;
    sb_series_set(sb_metric_at(arg, "x"), 42);
}

static sb_metric_t *threads_counter;
static void *bump(void *arg)
{
    (void)arg;
    sb_series_t *s = sb_metric_at(threads_counter, "t");
    for (int i = 0; i < 100000; i++)
        sb_series_add(s, 1);
    return NULL;
}

int main(void)
{
    sb_metric_t *req = sb_metric_counter("t_requests_total", "Requests.", "style,status");
    CHECK(sb_metric_counter("t_requests_total", "again", "x") == req);
    sb_series_add(sb_metric_at(req, "chat", "200"), 1);
    sb_series_add(sb_metric_at(req, "chat", "200"), 2);
    sb_series_add(sb_metric_at(req, "messages", "429"), 1);
    CHECK(sb_metric_at(req, "chat", "200") == sb_metric_at(req, "chat", "200"));
    CHECK(sb_series_value(sb_metric_at(req, "chat", "200")) == 3);

    static const double bounds[] = {0.001, 0.01, 0.1};
    sb_metric_t *lat = sb_metric_histogram("t_latency_seconds", "Latency.", "model", bounds, 3);
    sb_series_t *h = sb_metric_at(lat, "m1");
    sb_series_observe(h, 0.0005);
    sb_series_observe(h, 0.001); /* on the bound: that bucket (le is <=) */
    sb_series_observe(h, 0.05);
    sb_series_observe(h, 7);
    CHECK(sb_series_value(h) == 4);

    sb_metric_t *g = sb_metric_gauge("t_escape", "Escaping.", "v");
    sb_series_set(sb_metric_at(g, "a\"b\\c\nd"), -2.5);
    sb_metric_t *nolabel = sb_metric_gauge("t_plain", "No labels.", NULL);
    sb_series_set(sb_metric_at(nolabel), 5);

    sb_metric_t *coll = sb_metric_gauge("t_collected", "Set by a collector.", "k");
    sb_metrics_collector_add(collect, coll);

    char *text = render();
    CHECK(text != NULL);
    CHECK(strstr(text, "# HELP t_requests_total Requests.\n# TYPE t_requests_total counter\n") != NULL);
    CHECK(strstr(text, "t_requests_total{style=\"chat\",status=\"200\"} 3\n") != NULL);
    CHECK(strstr(text, "t_requests_total{style=\"messages\",status=\"429\"} 1\n") != NULL);
    CHECK(strstr(text, "# TYPE t_latency_seconds histogram\n") != NULL);
    CHECK(strstr(text, "t_latency_seconds_bucket{model=\"m1\",le=\"0.001\"} 2\n") != NULL);
    CHECK(strstr(text, "t_latency_seconds_bucket{model=\"m1\",le=\"0.01\"} 2\n") != NULL);
    CHECK(strstr(text, "t_latency_seconds_bucket{model=\"m1\",le=\"0.1\"} 3\n") != NULL);
    CHECK(strstr(text, "t_latency_seconds_bucket{model=\"m1\",le=\"+Inf\"} 4\n") != NULL);
    CHECK(strstr(text, "t_latency_seconds_count{model=\"m1\"} 4\n") != NULL);
    CHECK(strstr(text, "t_latency_seconds_sum{model=\"m1\"} 7.0515") != NULL);
    CHECK(strstr(text, "t_escape{v=\"a\\\"b\\\\c\\nd\"} -2.5\n") != NULL);
    CHECK(strstr(text, "t_plain 5\n") != NULL);
    CHECK(strstr(text, "t_collected{k=\"x\"} 42\n") != NULL);
    CHECK(collected == 1);
    free(text);

    sb_metrics_collector_remove(collect, coll);
    text = render();
    CHECK(collected == 1);
    free(text);

    /* The cap: past SB_METRIC_SERIES_MAX combinations, one "other" series. */
    sb_metric_t *many = sb_metric_counter("t_many_total", "Many.", "id");
    for (int i = 0; i < SB_METRIC_SERIES_MAX + 50; i++) {
        char id[16];
        snprintf(id, sizeof id, "%d", i);
        sb_series_add(sb_metric_at(many, id), 1);
    }
    CHECK(sb_series_value(sb_metric_at(many, "other")) == 50);
    text = render();
    CHECK(strstr(text, "t_many_total{id=\"other\"} 50\n") != NULL);
    free(text);

    /* A long value is cut, and the cut value names one series. */
    char longv[300];
    memset(longv, 'v', sizeof longv - 1);
    longv[sizeof longv - 1] = '\0';
    sb_series_t *l1 = sb_metric_at(g, longv);
    longv[200] = '\0';
    CHECK(sb_metric_at(g, longv) == l1);

    sb_metric_zero(g);
    CHECK(sb_series_value(l1) == 0);

    /* Updates from several threads are not lost. */
    threads_counter = sb_metric_counter("t_threads_total", "Threads.", "k");
    pthread_t th[4];
    for (int i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, bump, NULL);
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    CHECK(sb_series_value(sb_metric_at(threads_counter, "t")) == 400000);
    return sb_test_finish("metrics");
}
