/*
 * sb-broker: arguments and environment, then the broker loop (sb_broker.h).
 * SIGINT/SIGTERM are caught by czmq (zsys_interrupted) and end the loop.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "sb_admin.h"
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
            "  --breaker-failures K    failed upstream outcomes in a row that open a model's\n"
            "                          circuit (its jobs get 503 circuit_open); 0 disables\n"
            "                          the breaker (default %d)\n"
            "  --breaker-cooldown-ms MS  how long an open circuit refuses jobs before one\n"
            "                          probe goes out; doubled on each failed probe, up to\n"
            "                          8x (default %d)\n"
            "  --admin-listen HOST:PORT  the admin port: GET /metrics (Prometheus), /healthz,\n"
            "                          /readyz; off unless given\n"
            "  --help\n",
            SB_BROKER_QUEUE_MAX_DEFAULT, SB_BROKER_BREAKER_FAILURES_DEFAULT, SB_BROKER_BREAKER_COOLDOWN_MS_DEFAULT);
}

/* Ready while the loop runs (its sockets are bound before it starts); read
 * from the admin thread. */
static atomic_bool sb_broker_running;

static bool sb_broker_ready(void *arg, char *why, size_t len)
{
    (void)arg;
    if (atomic_load(&sb_broker_running))
        return true;
    snprintf(why, len, "stopping");
    return false;
}

/* A whole decimal number in [min, INT_MAX]; -EINVAL otherwise. */
static int sb_broker_parse_int(const char *s, long min, int *out)
{
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > INT_MAX)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

int main(int argc, char **argv)
{
    sb_log_init("broker");
    sb_broker_config_t cfg;
    sb_broker_config_init(&cfg);
    cfg.frontend_endpoint = getenv("SB_BROKER_FRONTEND_ENDPOINT");
    cfg.worker_endpoint = getenv("SB_BROKER_WORKER_ENDPOINT");

    enum {
        OPT_FRONTEND = 1,
        OPT_WORKER,
        OPT_QUEUE_MAX,
        OPT_BREAKER_FAILURES,
        OPT_BREAKER_COOLDOWN,
        OPT_ADMIN,
        OPT_HELP
    };
    static const struct option options[] = {
        {"frontend-endpoint", required_argument, NULL, OPT_FRONTEND},
        {"worker-endpoint", required_argument, NULL, OPT_WORKER},
        {"queue-max", required_argument, NULL, OPT_QUEUE_MAX},
        {"breaker-failures", required_argument, NULL, OPT_BREAKER_FAILURES},
        {"breaker-cooldown-ms", required_argument, NULL, OPT_BREAKER_COOLDOWN},
        {"admin-listen", required_argument, NULL, OPT_ADMIN},
        {"help", no_argument, NULL, OPT_HELP},
        {NULL, 0, NULL, 0},
    };
    struct {
        sb_admin_config_t cfg;
        char host_buf[256];
    } admin = {.cfg = {.port = -1, .ready = sb_broker_ready}};
    int opt, n;
    while ((opt = getopt_long(argc, argv, "", options, NULL)) != -1) {
        switch (opt) {
        case OPT_FRONTEND:
            cfg.frontend_endpoint = optarg;
            break;
        case OPT_WORKER:
            cfg.worker_endpoint = optarg;
            break;
        case OPT_QUEUE_MAX:
            if (sb_broker_parse_int(optarg, 1, &n) < 0) {
                fprintf(stderr, "sb-broker: --queue-max wants a positive integer, not '%s'\n", optarg);
                return 2;
            }
            cfg.queue_max = (size_t)n;
            break;
        case OPT_BREAKER_FAILURES:
            if (sb_broker_parse_int(optarg, 0, &cfg.breaker_failures) < 0) {
                fprintf(stderr, "sb-broker: --breaker-failures wants an integer >= 0, not '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_BREAKER_COOLDOWN:
            if (sb_broker_parse_int(optarg, 1, &cfg.breaker_cooldown_ms) < 0) {
                fprintf(stderr, "sb-broker: --breaker-cooldown-ms wants a positive integer, not '%s'\n", optarg);
                return 2;
            }
            break;
        case OPT_ADMIN:
            if (sb_admin_parse_listen(optarg, admin.host_buf, sizeof admin.host_buf, &admin.cfg.port) < 0) {
                fprintf(stderr, "sb-broker: --admin-listen wants HOST:PORT, not '%s'\n", optarg);
                return 2;
            }
            admin.cfg.host = admin.host_buf;
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
    sb_admin_t *port = NULL;
    if (admin.cfg.port >= 0) {
        char err[256];
        port = sb_admin_start_thread(&admin.cfg, err, sizeof err);
        if (!port) {
            sb_error("admin port: %s", err);
            sb_broker_destroy(&b);
            return 1;
        }
    }
    atomic_store(&sb_broker_running, true);
    int rc = sb_broker_run(b);
    atomic_store(&sb_broker_running, false);
    sb_admin_free(&port);
    sb_broker_destroy(&b);
    return rc == 0 ? 0 : 1;
}
