/*
 * sb-sandbox-bench: what the code interpreter's sandbox (worker/tools/
 * wtool_sandbox.h) costs, with the real bubblewrap and python3 on one
 * libevent loop, as the worker runs it.
 *
 *   sb-sandbox-bench [--runs N] [--warm M] [--max-seconds S] [--data-stack]
 *
 * For each of N runs (default 10) a new sandbox is made and timed:
 *   start    sb_sandbox_exec("print('ready')") on the new sandbox -> its
 *            result: bwrap, the namespaces and tmpfs, python's start, the
 *            driver, the first output (start-to-first-output);
 *   warm     then M execs (default 20) of "x += 1\nx" on the same,
 *            running interpreter: one round trip (request, run, output
 *            captured, processes swept, /mnt/data scanned, reply parsed);
 *   stack    with --data-stack, one more exec importing numpy, pandas and
 *            matplotlib.pyplot and drawing one figure (a cold import in
 *            every new sandbox: nothing is cached across sandboxes).
 * Reported: p50, p95 and max of each, in ms. The whole is bounded by
 * --max-seconds (default 120): runs stop there. Every result must be ok,
 * else the run counts as failed and the exit status is 1.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_time.h"
#include "wtool_sandbox.h"

typedef struct bench_series {
    const char *name;
    double *v;
    size_t n, cap;
} bench_series_t;

static struct event_base *base;
static int failures;

static void series_add(bench_series_t *s, double ms)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->v = sb_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = ms;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of the sorted series. */
static double pct(const bench_series_t *s, double p)
{
    size_t k = (size_t)(p / 100.0 * (double)s->n + 0.999999);
    if (k < 1)
        k = 1;
    if (k > s->n)
        k = s->n;
    return s->v[k - 1];
}

static void series_print(bench_series_t *s)
{
    if (s->n == 0) {
        printf("%-8s no samples\n", s->name);
        return;
    }
    qsort(s->v, s->n, sizeof *s->v, cmp_double);
    printf("%-8s n=%-5zu p50 %8.1f ms   p95 %8.1f ms   max %8.1f ms\n", s->name, s->n, pct(s, 50), pct(s, 95),
           s->v[s->n - 1]);
}

typedef struct wait {
    bool done;
    sb_sandbox_status_t status;
} wait_t;

static void on_result(void *arg, sb_sandbox_result_t *r)
{
    wait_t *w = arg;
    w->done = true;
    w->status = r->status;
    if (r->status != SB_SANDBOX_OK)
        fprintf(stderr, "sb-sandbox-bench: %s: %s\n", sb_sandbox_status_name(r->status), r->logs);
}

/* One exec, waited for on the loop: its time in ms, or -1 when not ok. */
static double timed_exec(sb_sandbox_t *s, const char *code)
{
    wait_t w = {0};
    int64_t t0 = sb_mono_us();
    if (sb_sandbox_exec(s, code, on_result, &w) != 0)
        return -1;
    while (!w.done)
        event_base_loop(base, EVLOOP_ONCE);
    double ms = (double)(sb_mono_us() - t0) / 1000.0;
    if (w.status != SB_SANDBOX_OK) {
        failures++;
        return -1;
    }
    return ms;
}

static long arg_long(const char *v, const char *name, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = strtol(v ? v : "", &end, 10);
    if (!v || errno || *end || x < lo || x > hi) {
        fprintf(stderr, "sb-sandbox-bench: %s takes a number from %ld to %ld\n", name, lo, hi);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    long runs = 10, warm = 20, max_seconds = 120;
    bool stack = false;
    for (int i = 1; i < argc; i++) {
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(argv[i], "--runs") == 0)
            runs = arg_long(v, "--runs", 1, 1000), i++;
        else if (strcmp(argv[i], "--warm") == 0)
            warm = arg_long(v, "--warm", 0, 10000), i++;
        else if (strcmp(argv[i], "--max-seconds") == 0)
            max_seconds = arg_long(v, "--max-seconds", 1, 3600), i++;
        else if (strcmp(argv[i], "--data-stack") == 0)
            stack = true;
        else {
            fprintf(stderr, "usage: sb-sandbox-bench [--runs N] [--warm M] [--max-seconds S] [--data-stack]\n");
            return 2;
        }
    }
    base = event_base_new();
    bench_series_t start = {.name = "start"}, hot = {.name = "warm"}, data = {.name = "stack"};
    int64_t deadline = sb_mono_ms() + max_seconds * 1000;
    long done = 0;
    for (long r = 0; r < runs && sb_mono_ms() < deadline; r++, done++) {
        sb_sandbox_t *s = sb_sandbox_new(base, NULL);
        double ms = timed_exec(s, "x = 0\nprint('ready')");
        if (ms >= 0)
            series_add(&start, ms);
        for (long k = 0; ms >= 0 && k < warm && sb_mono_ms() < deadline; k++) {
            double w = timed_exec(s, "x += 1\nx");
            if (w >= 0)
                series_add(&hot, w);
        }
        if (stack && ms >= 0 && sb_mono_ms() < deadline) {
            double d = timed_exec(s, "import numpy, pandas\nimport matplotlib.pyplot as plt\nplt.plot([1, 2, 3])");
            if (d >= 0)
                series_add(&data, d);
        }
        sb_sandbox_destroy(&s);
    }
    printf("sb-sandbox-bench: %ld sandboxes (%ld asked), %ld warm execs each, %d failed\n", done, runs, warm, failures);
    series_print(&start);
    series_print(&hot);
    if (stack)
        series_print(&data);
    free(start.v);
    free(hot.v);
    free(data.v);
    event_base_free(base);
    return failures ? 1 : 0;
}
