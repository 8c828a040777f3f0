/*
 * sb-stream: command line for the streaming benchmark client in sb_stream.c.
 *
 *   sb-stream --url http://127.0.0.1:8080/v1/chat/completions
 *             [--body-file F | --body STRING] [-H 'Name: value']...
 *             [--style chat|responses|messages|gemini] [--timeout S] [--json]
 *     latency run (default):
 *             [--requests R] [--warmup W] [--concurrency K] [--expect-deltas N]
 *     hold run:
 *             --streams N [--open-rate R] [--first-timeout S] [--hold S]
 *             [--rss NAME=PID]...
 *
 * --style          what a content delta is (default chat): chat
 *                  choices[].delta.content, responses response.output_text.delta,
 *                  messages content_block_delta/text_delta, gemini
 *                  candidates[0].content.parts[].text; always non-empty text
 * --timeout S      a stream that sends nothing for S seconds fails (default 10;
 *                  latency run only)
 * --requests R     recorded requests (default 20), after --warmup W unrecorded
 *                  ones (default 2), over --concurrency K keep-alive connections
 *                  (default 1), each sending its next request when its stream ends
 * --expect-deltas N  a stream with another number of content deltas fails
 * --streams N      hold run: open N streams at --open-rate per second (default
 *                  1000); each must deliver its first content delta within
 *                  --first-timeout S of its connect (default 5); once all have
 *                  (or failed, or are late) VmRSS of each --rss process is read;
 *                  the streams stay open --hold S more seconds (default 0), then
 *                  all are closed
 * The POST carries Content-Type: application/json and Accept: text/event-stream
 * unless -H gives them.
 *
 * Output: text, or one flat JSON line with --json:
 *   {"url","style","mode":"latency"|"hold","requests","warmup","concurrency",
 *    "streams","started","ok","failed","non200","errors","bad_deltas",
 *    "error_events","late","unterminated","not_sse","last_bad_status",
 *    "deltas_min","deltas_max","elapsed_s","open_s","alive",
 *    "ttft_n","ttft_min_us","ttft_mean_us","ttft_p50_us","ttft_p90_us",
 *    "ttft_p99_us","ttft_max_us", the same for "gap_", "total_" and "tail_",
 *    "rss_<NAME>_kib" per --rss}
 * ttft is the first-delta time (hold run: counted from the connect); gap the
 * time between successive content deltas of a stream; total request -> end of
 * the response; tail last content delta -> end of the response.
 * Exit 0 when the run completed (even with failures), 1 on setup failure,
 * 2 on a usage error.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "sb_bench_opts.h"
#include "sb_log.h"
#include "sb_stream.h"

static void usage(void)
{
    fprintf(stderr,
            "usage: sb-stream --url http://HOST:PORT/PATH [--body-file F | --body S] [-H 'N: v']...\n"
            "                 [--style chat|responses|messages|gemini] [--timeout S] [--json]\n"
            "                 [--requests R] [--warmup W] [--concurrency K] [--expect-deltas N]\n"
            "                 | --streams N [--open-rate R] [--first-timeout S] [--hold S] [--rss NAME=PID]...\n");
}

/* "NAME=PID" with NAME of [A-Za-z0-9_] (it becomes part of a JSON key). */
static int parse_rss(char *arg, struct sb_stream_config *cfg)
{
    char *eq = strchr(arg, '=');
    if (!eq || eq == arg || cfg->nrss == SB_STREAM_MAX_RSS)
        return -EINVAL;
    for (const char *p = arg; p < eq; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '_'))
            return -EINVAL;
    int pid;
    if (sb_bench_parse_int(eq + 1, 1, 1L << 30, &pid) < 0)
        return -EINVAL;
    *eq = '\0';
    cfg->rss_names[cfg->nrss] = arg;
    cfg->rss_pids[cfg->nrss] = pid;
    cfg->nrss++;
    return 0;
}

/* sb-stream's own options (sb_bench_opt_fn); arg is the run's sb_stream_config. */
static int stream_opt(void *arg, const char *a, char *v)
{
    struct sb_stream_config *cfg = arg;
    if (!strcmp(a, "--style"))
        return sb_stream_style_parse(v, &cfg->style);
    if (!strcmp(a, "--timeout"))
        return sb_bench_parse_double(v, 0.001, 86400, &cfg->timeout_s);
    if (!strcmp(a, "--requests"))
        return sb_bench_parse_int(v, 1, 10000000, &cfg->requests);
    if (!strcmp(a, "--warmup"))
        return sb_bench_parse_int(v, 0, 10000000, &cfg->warmup);
    if (!strcmp(a, "--concurrency"))
        return sb_bench_parse_int(v, 1, 100000, &cfg->concurrency);
    if (!strcmp(a, "--expect-deltas"))
        return sb_bench_parse_int(v, 0, 100000000, &cfg->expect_deltas);
    if (!strcmp(a, "--streams"))
        return sb_bench_parse_int(v, 1, 1000000, &cfg->streams);
    if (!strcmp(a, "--open-rate"))
        return sb_bench_parse_double(v, 0.001, 10e6, &cfg->open_rate);
    if (!strcmp(a, "--first-timeout"))
        return sb_bench_parse_double(v, 0.001, 86400, &cfg->first_timeout_s);
    if (!strcmp(a, "--hold"))
        return sb_bench_parse_double(v, 0, 86400, &cfg->hold_s);
    if (!strcmp(a, "--rss"))
        return parse_rss(v, cfg);
    return -EINVAL;
}

/* As many descriptors as allowed: a hold run keeps one socket per stream. */
static void raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
            sb_debug("sb-stream: setrlimit: %s", strerror(errno));
    }
}

static void print_summary_json(const char *name, const struct sb_stream_summary *s)
{
    printf(",\"%s_n\":%zu,\"%s_min_us\":%llu,\"%s_mean_us\":%.1f,\"%s_p50_us\":%llu,\"%s_p90_us\":%llu,"
           "\"%s_p99_us\":%llu,\"%s_max_us\":%llu",
           name, s->n, name, (unsigned long long)s->min, name, s->mean, name, (unsigned long long)s->p50, name,
           (unsigned long long)s->p90, name, (unsigned long long)s->p99, name, (unsigned long long)s->max);
}

static void print_json(const struct sb_stream_config *cfg, const struct sb_stream_result *r)
{
    bool hold = cfg->streams > 0;
    printf("{\"url\":\"");
    for (const char *p = cfg->url; *p; p++) {
        if (*p == '"' || *p == '\\')
            putchar('\\');
        if ((unsigned char)*p >= 0x20)
            putchar(*p);
    }
    printf("\",\"style\":\"%s\",\"mode\":\"%s\",\"requests\":%d,\"warmup\":%d,\"concurrency\":%d,\"streams\":%d,"
           "\"started\":%llu,\"ok\":%llu,\"failed\":%llu,\"non200\":%llu,\"errors\":%llu,\"bad_deltas\":%llu,"
           "\"error_events\":%llu,\"late\":%llu,\"unterminated\":%llu,\"not_sse\":%llu,\"last_bad_status\":%d,"
           "\"deltas_min\":%zu,\"deltas_max\":%zu,\"elapsed_s\":%.3f,\"open_s\":%.3f,\"alive\":%llu",
           sb_stream_style_name(cfg->style), hold ? "hold" : "latency", hold ? 0 : cfg->requests,
           hold ? 0 : cfg->warmup, hold ? 0 : cfg->concurrency, hold ? cfg->streams : 0, (unsigned long long)r->started,
           (unsigned long long)r->ok, (unsigned long long)r->failed, (unsigned long long)r->non200,
           (unsigned long long)r->errors, (unsigned long long)r->bad_deltas, (unsigned long long)r->error_events,
           (unsigned long long)r->late, (unsigned long long)r->unterminated, (unsigned long long)r->not_sse,
           r->last_bad_status, r->deltas_min, r->deltas_max, r->elapsed_s, r->open_s, (unsigned long long)r->alive);
    print_summary_json("ttft", &r->ttft);
    print_summary_json("gap", &r->gap);
    print_summary_json("total", &r->total);
    print_summary_json("tail", &r->tail);
    for (size_t i = 0; i < cfg->nrss; i++)
        printf(",\"rss_%s_kib\":%ld", cfg->rss_names[i], r->rss_kib[i]);
    printf("}\n");
}

static void print_summary_text(const char *label, const struct sb_stream_summary *s)
{
    printf("%-11s n %zu  p50 %llu  p90 %llu  p99 %llu  max %llu  (min %llu, mean %.1f)\n", label, s->n,
           (unsigned long long)s->p50, (unsigned long long)s->p90, (unsigned long long)s->p99,
           (unsigned long long)s->max, (unsigned long long)s->min, s->mean);
}

static void print_text(const struct sb_stream_config *cfg, const struct sb_stream_result *r)
{
    printf("url         %s (%s)\n", cfg->url, sb_stream_style_name(cfg->style));
    if (cfg->streams > 0) {
        printf("mode        hold %d streams, opened in %.2f s, measured after %.2f s, %llu still open\n", cfg->streams,
               r->open_s, r->elapsed_s, (unsigned long long)r->alive);
        printf("streams     first delta in time %llu, late %llu, failed %llu (non-200 %llu, errors %llu, "
               "error events %llu, no delta %llu)\n",
               (unsigned long long)r->ok, (unsigned long long)r->late, (unsigned long long)r->failed,
               (unsigned long long)r->non200, (unsigned long long)r->errors, (unsigned long long)r->error_events,
               (unsigned long long)r->bad_deltas);
        if (r->last_bad_status)
            printf("            last non-200 status %d\n", r->last_bad_status);
        print_summary_text("first us", &r->ttft);
        for (size_t i = 0; i < cfg->nrss; i++)
            printf("rss         %s %ld KiB\n", cfg->rss_names[i], r->rss_kib[i]);
        return;
    }
    printf("mode        %d requests (+%d warmup), concurrency %d, %.2f s\n", cfg->requests, cfg->warmup,
           cfg->concurrency, r->elapsed_s);
    printf("requests    ok %llu, failed %llu (non-200 %llu, errors %llu, bad delta count %llu, error events %llu)",
           (unsigned long long)r->ok, (unsigned long long)r->failed, (unsigned long long)r->non200,
           (unsigned long long)r->errors, (unsigned long long)r->bad_deltas, (unsigned long long)r->error_events);
    if (r->last_bad_status)
        printf("; last non-200 status %d", r->last_bad_status);
    printf("\n");
    printf("deltas      %zu..%zu per stream; %llu without end marker, %llu not text/event-stream\n", r->deltas_min,
           r->deltas_max, (unsigned long long)r->unterminated, (unsigned long long)r->not_sse);
    print_summary_text("ttft us", &r->ttft);
    print_summary_text("gap us", &r->gap);
    print_summary_text("total us", &r->total);
    print_summary_text("tail us", &r->tail);
}

int main(int argc, char **argv)
{
    sb_log_init("sb-stream");
    struct sb_stream_config cfg = {
        .style = SB_STREAM_CHAT,
        .timeout_s = 10,
        .requests = 20,
        .warmup = 2,
        .concurrency = 1,
        .open_rate = 1000,
        .first_timeout_s = 5,
    };
    struct sb_bench_opts o;
    int stop = sb_bench_parse_args(argc, argv, "sb-stream", &o, stream_opt, &cfg, usage);
    if (stop >= 0)
        return stop;
    cfg.url = o.url;
    if (!cfg.url || (o.body && o.body_file) || (!o.body && !o.body_file)) {
        fprintf(stderr, "sb-stream: need --url and one of --body / --body-file\n");
        usage();
        return 2;
    }
    char *file_body = NULL;
    if (sb_bench_body(&o, "sb-stream", &cfg.body, &cfg.body_len, &file_body) < 0)
        return 1;
    cfg.headers = o.headers;
    cfg.nheaders = o.nheaders;

    signal(SIGPIPE, SIG_IGN);
    raise_nofile();
    struct sb_stream_result res;
    int rc = sb_stream_run(&cfg, &res);
    if (rc < 0) {
        free(file_body);
        fprintf(stderr, "sb-stream: run failed: %s\n", strerror(-rc));
        return rc == -EINVAL ? 2 : 1;
    }
    if (o.json)
        print_json(&cfg, &res);
    else
        print_text(&cfg, &res);
    free(file_body);
    return 0;
}
