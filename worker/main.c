/*
 * sb-worker: arguments, the event loop and signals; the work is in libsbworker
 * (worker.h).
 *
 *   sb-worker [--broker EP] [--models a,b] [--concurrency N] [--name NAME]
 *             [--stream-idle-timeout-ms MS] [--connect-timeout-ms MS]
 *             [--retry-max N] [--retry-base-ms MS] [--retry-cap-ms MS] [--retry-budget R]
 *             [--tool-timeout-ms MS] [--tool-max-iterations N] [--tool-output-max-bytes N]
 *             [--tool-allow-cidr LIST] [--tool-allow-http]
 *
 * SIGINT/SIGTERM: stop taking jobs, let in-flight ones finish (30 s at most),
 * exit. A second signal fails the remaining jobs at once.
 */
#include <curl/curl.h>
#include <czmq.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>

#include "sb_admin.h"
#include "sb_evbase.h"
#include "sb_log.h"
#include "sb_protocol.h"
#include "wadmin.h"
#include "worker.h"

static void sb_usage(FILE *f)
{
    fprintf(f,
            "usage: sb-worker [--broker ENDPOINTS] [--models a,b] [--concurrency N] [--name NAME]\n"
            "  --broker ENDPOINTS the brokers' worker endpoints, comma-separated (the worker serves\n"
            "                     them all), or dns://NAME:PORT for every address NAME resolves to,\n"
            "                     re-resolved every 5 s (env SB_BROKER_WORKER_ENDPOINT, default %s)\n"
            "  --models a,b       models served, comma-separated (default \"*\": all)\n"
            "  --concurrency N    jobs at once, announced as credits (default 64)\n"
            "  --name NAME        worker name in the broker (default <hostname>-<pid>)\n"
            "  --stream-idle-timeout-ms MS  end a streamed upstream silent this long with a\n"
            "                     timeout error event (default 60000)\n"
            "  --connect-timeout-ms MS  upstream connect timeout; a dead host fails this fast\n"
            "                     and can be retried (default 5000)\n"
            "  --retry-max N      retries per upstream call after a transient failure, 0: none\n"
            "                     (default 2)\n"
            "  --retry-base-ms MS, --retry-cap-ms MS  backoff before retry k: random in\n"
            "                     [0, min(cap, base * 2^k)], at least Retry-After (default 250, 4000)\n"
            "  --retry-budget R   retry tokens a route earns per call; a retry costs 1, so\n"
            "                     retries stay within R x calls, 0: none (default 0.2)\n"
            "  --tool-timeout-ms MS  one step of a built-in tool (an MCP request, a search, a\n"
            "                     page), cut to the job's deadline (default 30000)\n"
            "  --tool-max-iterations N  model calls one tool loop may make (default 16)\n"
            "  --tool-output-max-bytes N  bytes of one tool output given to the model (default 65536)\n"
            "  --tool-allow-cidr LIST  addresses (CIDRs, comma-separated) tools may reach although\n"
            "                     the outbound guard refuses them (default none: tests only)\n"
            "  --tool-allow-http  tools may fetch http:// URLs, not only https://\n"
            "  --database DSN     the tool data plane's PostgreSQL (containers, vector stores;\n"
            "                     env SB_PG_DSN); without it those tools' calls fail\n"
            "  --sandbox-uid-base N, --sandbox-uid-count N  as root, the code interpreter's\n"
            "                     sandboxes each run under their own uid from this range, which\n"
            "                     no other user of the host may use (default 200000, 1000)\n"
            "  --admin-listen HOST:PORT  the admin port: GET /metrics (Prometheus), /healthz,\n"
            "                     /readyz (503 while the broker or the database is away, or\n"
            "                     draining); off unless given\n",
            SB_BROKER_WORKER_ENDPOINT_DEFAULT);
}

/* A decimal integer in [min, INT_MAX]. */
static int sb_parse_int(const char *s, int min, int *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < min || v > INT_MAX)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

/* A decimal number in [0, 100]. */
static int sb_parse_ratio(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v) || v < 0 || v > 100)
        return -EINVAL;
    *out = v;
    return 0;
}

static void sb_on_signal(evutil_socket_t sig, short what, void *arg)
{
    sb_info("signal %d: stopping", (int)sig);
    sb_worker_stop(arg);
}

static void sb_on_stopped(void *arg)
{
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"broker", required_argument, NULL, 'b'},
        {"models", required_argument, NULL, 'm'},
        {"concurrency", required_argument, NULL, 'c'},
        {"name", required_argument, NULL, 'n'},
        {"stream-idle-timeout-ms", required_argument, NULL, 'i'},
        {"connect-timeout-ms", required_argument, NULL, 'T'},
        {"retry-max", required_argument, NULL, 'R'},
        {"retry-base-ms", required_argument, NULL, 'B'},
        {"retry-cap-ms", required_argument, NULL, 'C'},
        {"retry-budget", required_argument, NULL, 'G'},
        {"tool-timeout-ms", required_argument, NULL, 'O'},
        {"tool-max-iterations", required_argument, NULL, 'I'},
        {"tool-output-max-bytes", required_argument, NULL, 'X'},
        {"tool-allow-cidr", required_argument, NULL, 'A'},
        {"tool-allow-http", no_argument, NULL, 'H'},
        {"database", required_argument, NULL, 'D'},
        {"sandbox-uid-base", required_argument, NULL, 'U'},
        {"sandbox-uid-count", required_argument, NULL, 'V'},
        {"admin-listen", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    sb_log_init("worker");
    sb_worker_config_t cfg = {
        .endpoint = getenv("SB_BROKER_WORKER_ENDPOINT"), .models = "*", .pg_dsn = getenv("SB_PG_DSN")};
    int c, v;
    double ratio;
    char admin_host[256] = "";
    int admin_port = -1;
    while ((c = getopt_long(argc, argv, "b:m:c:n:i:h", opts, NULL)) != -1) {
        switch (c) {
        case 'b':
            cfg.endpoint = optarg;
            break;
        case 'm':
            cfg.models = optarg;
            break;
        case 'c':
            if (sb_parse_int(optarg, 1, &cfg.credits) < 0) {
                fprintf(stderr, "sb-worker: --concurrency needs a positive integer\n");
                return 2;
            }
            break;
        case 'n':
            cfg.name = optarg;
            break;
        case 'i':
            if (sb_parse_int(optarg, 1, &v) < 0) {
                fprintf(stderr, "sb-worker: --stream-idle-timeout-ms needs a positive integer\n");
                return 2;
            }
            cfg.stream_idle_ms = v;
            break;
        case 'T':
            if (sb_parse_int(optarg, 1, &v) < 0) {
                fprintf(stderr, "sb-worker: --connect-timeout-ms needs a positive integer\n");
                return 2;
            }
            cfg.connect_timeout_ms = v;
            break;
        case 'R':
            if (sb_parse_int(optarg, 0, &v) < 0) {
                fprintf(stderr, "sb-worker: --retry-max needs an integer >= 0\n");
                return 2;
            }
            cfg.retry_max = v > 0 ? v : -1; /* the config's 0 is the default */
            break;
        case 'B':
        case 'C':
            if (sb_parse_int(optarg, 1, &v) < 0) {
                fprintf(stderr, "sb-worker: --retry-%s-ms needs a positive integer\n", c == 'B' ? "base" : "cap");
                return 2;
            }
            *(c == 'B' ? &cfg.retry_base_ms : &cfg.retry_cap_ms) = v;
            break;
        case 'G':
            if (sb_parse_ratio(optarg, &ratio) < 0) {
                fprintf(stderr, "sb-worker: --retry-budget needs a number from 0 to 100\n");
                return 2;
            }
            cfg.retry_budget = ratio > 0 ? ratio : -1; /* the config's 0 is the default */
            break;
        case 'O':
        case 'I':
        case 'X':
            if (sb_parse_int(optarg, 1, &v) < 0) {
                fprintf(stderr, "sb-worker: --%s needs a positive integer\n",
                        c == 'O'   ? "tool-timeout-ms"
                        : c == 'I' ? "tool-max-iterations"
                                   : "tool-output-max-bytes");
                return 2;
            }
            if (c == 'O')
                cfg.tool_timeout_ms = v;
            else if (c == 'I')
                cfg.tool_max_iterations = v;
            else
                cfg.tool_output_max_bytes = v;
            break;
        case 'A':
            cfg.tool_allow_cidrs = optarg;
            break;
        case 'H':
            cfg.tool_allow_http = true;
            break;
        case 'D':
            cfg.pg_dsn = optarg;
            break;
        case 'U':
        case 'V':
            if (sb_parse_int(optarg, 1, &v) < 0) {
                fprintf(stderr, "sb-worker: --sandbox-uid-%s needs a positive integer\n", c == 'U' ? "base" : "count");
                return 2;
            }
            *(c == 'U' ? &cfg.sandbox_uid_base : &cfg.sandbox_uid_count) = v;
            break;
        case 'L':
            if (sb_admin_parse_listen(optarg, admin_host, sizeof admin_host, &admin_port) < 0) {
                fprintf(stderr, "sb-worker: --admin-listen wants HOST:PORT\n");
                return 2;
            }
            break;
        case 'h':
            sb_usage(stdout);
            return 0;
        default:
            sb_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        sb_usage(stderr);
        return 2;
    }

    int rc = 1;
    struct event_base *base = NULL;
    sb_worker_t *w = NULL;
    sb_wadmin_t *admin = NULL;
    struct event *sigint = NULL, *sigterm = NULL;
    /* Signals go through the loop, not czmq's handler. */
    zsys_handler_set(NULL);
    signal(SIGPIPE, SIG_IGN);
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        sb_error("curl_global_init failed");
        return 1;
    }
    base = sb_evbase_new();
    if (!base)
        goto fail;
    cfg.on_stopped = sb_on_stopped;
    cfg.arg = base;
    w = sb_worker_new(&cfg, base);
    if (!w)
        goto fail;
    if (admin_port >= 0) {
        char err[256];
        admin = sb_wadmin_new(base, w, admin_host, admin_port, err, sizeof err);
        if (!admin) {
            sb_error("admin port: %s", err);
            goto fail;
        }
    }
    sigint = evsignal_new(base, SIGINT, sb_on_signal, w);
    sigterm = evsignal_new(base, SIGTERM, sb_on_signal, w);
    if (!sigint || !sigterm || evsignal_add(sigint, NULL) < 0 || evsignal_add(sigterm, NULL) < 0)
        goto fail;
    if (event_base_dispatch(base) < 0)
        goto fail;
    rc = 0;
fail:
    if (sigint)
        event_free(sigint);
    if (sigterm)
        event_free(sigterm);
    sb_wadmin_free(&admin);
    sb_worker_destroy(&w);
    if (base)
        event_base_free(base);
    curl_global_cleanup();
    zsys_shutdown();
    return rc;
}
