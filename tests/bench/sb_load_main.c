/*
 * sb-load: command line for the load generator in sb_load.c.
 *
 *   sb-load --url http://127.0.0.1:8080/v1/chat/completions
 *           [--body-file F | --body STRING] [-H 'Name: value']... [-X METHOD]
 *           (--concurrency N | --rate R [--connections N])
 *           [--duration S] [--warmup S] [--timeout S] [--json]
 *
 * --concurrency N   closed loop over N keep-alive connections
 * --rate R          open loop: R requests/s on a fixed schedule over
 *                   --connections (default 64) connections; latency counts
 *                   from the scheduled time (coordinated omission corrected)
 * --duration S      measured window, default 10 (fractions allowed)
 * --warmup S        unrecorded run-in before the window, default 0
 * --timeout S       per-request timeout and end-of-run drain limit, default 10
 * Method defaults to POST with a body, GET without.
 *
 * Output (text, or one JSON line with --json):
 *   {"url","mode":"closed"|"open","concurrency","rate","connections",
 *    "duration_s","warmup_s","count","ok","non2xx","errors","rps",
 *    "min_us","mean_us","p50_us","p90_us","p99_us","p999_us","max_us",
 *    "status":{"1xx","2xx","3xx","4xx","5xx"}}
 * count = responses to requests started in the window; errors = requests
 * in the window with no response (connect/reset/timeout/bad response).
 * Exit 0 when the run completed (even with errors), 1 on setup failure,
 * 2 on a usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_bench_opts.h"
#include "sb_load.h"
#include "sb_log.h"

static void usage(void)
{
    fprintf(stderr, "usage: sb-load --url http://HOST:PORT/PATH [--body-file F | --body S] [-H 'N: v']... [-X M]\n"
                    "               (--concurrency N | --rate R [--connections N])\n"
                    "               [--duration S] [--warmup S] [--timeout S] [--json]\n");
}

/* sb-load's own options (sb_bench_opt_fn); arg is the run's sb_load_config. */
static int load_opt(void *arg, const char *a, char *v)
{
    struct sb_load_config *cfg = arg;
    if (!strcmp(a, "-X") || !strcmp(a, "--method")) {
        cfg->method = v;
        return 0;
    }
    if (!strcmp(a, "--concurrency"))
        return sb_bench_parse_int(v, 1, 100000, &cfg->concurrency);
    if (!strcmp(a, "--rate"))
        return sb_bench_parse_double(v, 0.001, 10e6, &cfg->rate);
    if (!strcmp(a, "--connections"))
        return sb_bench_parse_int(v, 1, 100000, &cfg->connections);
    if (!strcmp(a, "--duration"))
        return sb_bench_parse_double(v, 0.001, 86400, &cfg->duration_s);
    if (!strcmp(a, "--warmup"))
        return sb_bench_parse_double(v, 0, 86400, &cfg->warmup_s);
    if (!strcmp(a, "--timeout"))
        return sb_bench_parse_double(v, 0.001, 86400, &cfg->timeout_s);
    return -EINVAL;
}

static void print_json(const char *url, const struct sb_load_config *cfg, const struct sb_load_result *r)
{
    bool open = cfg->rate > 0;
    printf("{\"url\":\"");
    for (const char *p = url; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        if ((unsigned char)*p >= 0x20)
            putchar(*p);
    }
    printf("\",\"mode\":\"%s\",\"concurrency\":%d,\"rate\":%.3f,\"connections\":%d,"
           "\"duration_s\":%.3f,\"warmup_s\":%.3f,\"count\":%llu,\"ok\":%llu,\"non2xx\":%llu,\"errors\":%llu,"
           "\"rps\":%.1f,\"min_us\":%llu,\"mean_us\":%.1f,\"p50_us\":%llu,\"p90_us\":%llu,\"p99_us\":%llu,"
           "\"p999_us\":%llu,\"max_us\":%llu,\"status\":{\"1xx\":%llu,\"2xx\":%llu,\"3xx\":%llu,\"4xx\":%llu,"
           "\"5xx\":%llu}}\n",
           open ? "open" : "closed", open ? 0 : cfg->concurrency, open ? cfg->rate : 0.0,
           open ? cfg->connections : cfg->concurrency, cfg->duration_s, cfg->warmup_s, (unsigned long long)r->count,
           (unsigned long long)r->ok, (unsigned long long)r->non2xx, (unsigned long long)r->errors, r->rps,
           (unsigned long long)r->min_us, r->mean_us, (unsigned long long)r->p50_us, (unsigned long long)r->p90_us,
           (unsigned long long)r->p99_us, (unsigned long long)r->p999_us, (unsigned long long)r->max_us,
           (unsigned long long)r->status[1], (unsigned long long)r->status[2], (unsigned long long)r->status[3],
           (unsigned long long)r->status[4], (unsigned long long)r->status[5]);
}

static void print_text(const char *url, const struct sb_load_config *cfg, const struct sb_load_result *r)
{
    printf("url         %s\n", url);
    if (cfg->rate > 0)
        printf("mode        open loop, %.1f req/s over %d connections\n", cfg->rate, cfg->connections);
    else
        printf("mode        closed loop, concurrency %d\n", cfg->concurrency);
    printf("window      %.2f s (after %.2f s warmup)\n", cfg->duration_s, cfg->warmup_s);
    printf("requests    %llu (2xx %llu, non-2xx %llu, errors %llu)\n", (unsigned long long)r->count,
           (unsigned long long)r->ok, (unsigned long long)r->non2xx, (unsigned long long)r->errors);
    printf("throughput  %.1f req/s\n", r->rps);
    printf("latency us  p50 %llu  p90 %llu  p99 %llu  p99.9 %llu  max %llu  (min %llu, mean %.1f)\n",
           (unsigned long long)r->p50_us, (unsigned long long)r->p90_us, (unsigned long long)r->p99_us,
           (unsigned long long)r->p999_us, (unsigned long long)r->max_us, (unsigned long long)r->min_us, r->mean_us);
}

int main(int argc, char **argv)
{
    sb_log_init("sb-load");
    struct sb_load_config cfg = {.connections = 64, .duration_s = 10, .warmup_s = 0, .timeout_s = 10};
    struct sb_bench_opts o;
    int stop = sb_bench_parse_args(argc, argv, "sb-load", &o, load_opt, &cfg, usage);
    if (stop >= 0)
        return stop;
    const char *url = o.url;
    if (!url || (cfg.concurrency > 0) == (cfg.rate > 0) || (o.body && o.body_file)) {
        fprintf(stderr, "sb-load: need --url and exactly one of --concurrency / --rate\n");
        usage();
        return 2;
    }
    if (sb_load_parse_url(url, &cfg) < 0) {
        fprintf(stderr, "sb-load: bad --url '%s' (want http://HOST:PORT/PATH)\n", url);
        return 2;
    }
    char *file_body = NULL;
    if (sb_bench_body(&o, "sb-load", &cfg.body, &cfg.body_len, &file_body) < 0)
        return 1;
    cfg.headers = o.headers;
    cfg.nheaders = o.nheaders;

    signal(SIGPIPE, SIG_IGN);
    struct sb_load_result res;
    int rc = sb_load_run(&cfg, &res);
    free(file_body);
    if (rc < 0) {
        fprintf(stderr, "sb-load: run failed: %s\n", strerror(-rc));
        return 1;
    }
    if (o.json)
        print_json(url, &cfg, &res);
    else
        print_text(url, &cfg, &res);
    return 0;
}
