/*
 * sb-broker: arguments and environment, then the broker loop (sb_broker.h).
 * SIGINT/SIGTERM are caught by czmq (zsys_interrupted) and end the loop.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "sb_broker.h"
#include "sb_log.h"
#include "sb_protocol.h"

static void sb_broker_usage(FILE *out)
{
    fprintf(out,
            "usage: sb-broker [options]\n"
            "  --frontend-endpoint EP  bind for frontends (env SB_BROKER_FRONTEND_ENDPOINT,\n"
            "                          default " SB_BROKER_FRONTEND_ENDPOINT_DEFAULT ")\n"
            "  --worker-endpoint EP    bind for workers (env SB_BROKER_WORKER_ENDPOINT,\n"
            "                          default " SB_BROKER_WORKER_ENDPOINT_DEFAULT ")\n"
            "  --queue-max N           queued jobs per model before 429 (default %d)\n"
            "  --help\n",
            SB_BROKER_QUEUE_MAX_DEFAULT);
}

/* A whole decimal number in [1, INT_MAX]; -EINVAL otherwise. */
static int sb_broker_parse_count(const char *s, size_t *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < 1 || v > INT_MAX)
        return -EINVAL;
    *out = (size_t)v;
    return 0;
}

int main(int argc, char **argv)
{
    sb_log_init("broker");
    sb_broker_config_t cfg;
    sb_broker_config_init(&cfg);
    cfg.frontend_endpoint = getenv("SB_BROKER_FRONTEND_ENDPOINT");
    cfg.worker_endpoint = getenv("SB_BROKER_WORKER_ENDPOINT");

    enum { OPT_FRONTEND = 1, OPT_WORKER, OPT_QUEUE_MAX, OPT_HELP };
    static const struct option options[] = {
        {"frontend-endpoint", required_argument, NULL, OPT_FRONTEND},
        {"worker-endpoint", required_argument, NULL, OPT_WORKER},
        {"queue-max", required_argument, NULL, OPT_QUEUE_MAX},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    int opt;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case OPT_FRONTEND:
            cfg.frontend_endpoint = optarg;
            break;
        case OPT_WORKER:
            cfg.worker_endpoint = optarg;
            break;
        case OPT_QUEUE_MAX:
            if (sb_broker_parse_count(optarg, &cfg.queue_max) < 0) {
                fprintf(stderr, "sb-broker: --queue-max wants a positive integer, not '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_HELP:
            sb_broker_usage(stdout);
            return 0;
        default:
            sb_broker_usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sb-broker: unexpected argument '%s'\n", argv[optind]);
        sb_broker_usage(stderr);
        return 2;
    }
    if (cfg.frontend_endpoint && !*cfg.frontend_endpoint)
        cfg.frontend_endpoint = NULL;
    if (cfg.worker_endpoint && !*cfg.worker_endpoint)
        cfg.worker_endpoint = NULL;

    sb_broker_t *b = sb_broker_new(&cfg);
    if (!b)
        return 1;
    int rc = sb_broker_run(b);
    sb_broker_destroy(&b);
    return rc == 0 ? 0 : 1;
}
