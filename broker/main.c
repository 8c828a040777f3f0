/*
 * sb-broker: arguments and the loop; the broker itself is libsbbroker.
 * SIGINT/SIGTERM stop it (czmq's handler sets zsys_interrupted).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "bk_broker.h"
#include "sb_log.h"

static void usage(void)
{
    fprintf(stderr, "usage: sb-broker [--frontend-endpoint EP] [--worker-endpoint EP] [--queue-max N]\n"
                    "  defaults: $SB_BROKER_FRONTEND_ENDPOINT or tcp://127.0.0.1:5555,\n"
                    "            $SB_BROKER_WORKER_ENDPOINT or tcp://127.0.0.1:5556, queue max 256\n");
}

int main(int argc, char **argv)
{
    sb_log_init("broker");
    bk_config_t cfg;
    bk_config_defaults(&cfg);
    if (getenv("SB_BROKER_FRONTEND_ENDPOINT"))
        cfg.frontend_endpoint = getenv("SB_BROKER_FRONTEND_ENDPOINT");
    if (getenv("SB_BROKER_WORKER_ENDPOINT"))
        cfg.worker_endpoint = getenv("SB_BROKER_WORKER_ENDPOINT");
    static const struct option opts[] = {{"frontend-endpoint", required_argument, 0, 'f'},
                                         {"worker-endpoint", required_argument, 0, 'w'},
                                         {"queue-max", required_argument, 0, 'q'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'f':
            cfg.frontend_endpoint = optarg;
            break;
        case 'w':
            cfg.worker_endpoint = optarg;
            break;
        case 'q': {
            char *end;
            errno = 0;
            long v = strtol(optarg, &end, 10);
            if (errno || *end || v < 1 || v > 1000000) {
                usage();
                return 2;
            }
            cfg.queue_max = (int)v;
            break;
        }
        default:
            usage();
            return c == 'h' ? 0 : 2;
        }
    }
    bk_broker_t *b = bk_broker_new(&cfg);
    if (!b)
        return 1;
    bk_broker_run(b);
    bk_broker_destroy(&b);
    return 0;
}
