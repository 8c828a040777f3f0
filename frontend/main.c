/*
 * sb-frontend: arguments, configuration and the event loop; everything else
 * lives in libsbfrontend. SIGTERM/SIGINT drain: new requests get 503, those
 * in flight finish (up to --drain-seconds), the request log is flushed.
 */
#include <czmq.h>
#include <errno.h>
#include <event2/event.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_server.h"
#include "sb_admin.h"
#include "sb_evbase.h"
#include "sb_log.h"

static struct event_base *base;
static fe_server_t *server;
static int drain_seconds = 10;
static int drain_ticks;

static int parse_int(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Every 100 ms while draining: once no request is in flight, the listener
 * closes and the process exits when the last replies are sent (their
 * connections closed), or 3 s later; in any case after --drain-seconds. */
static void on_drain_tick(evutil_socket_t fd, short what, void *arg)
{
    static int quiet_since;
    if (++drain_ticks > drain_seconds * 10) {
        event_base_loopbreak(base);
        return;
    }
    if (server->active_requests > 0)
        return;
    if (!quiet_since)
        quiet_since = drain_ticks;
    if (fe_server_quiesce(server) || drain_ticks - quiet_since > 30)
        event_base_loopbreak(base);
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    static struct event *tick;
    if (tick) {
        event_base_loopbreak(base); /* second signal: stop now */
        return;
    }
    sb_info("signal %d: draining %d requests", (int)sig, server->active_requests);
    fe_server_drain(server);
    tick = event_new(base, -1, EV_PERSIST, on_drain_tick, NULL);
    struct timeval tv = {0, 100000};
    event_add(tick, &tv);
    *(struct event **)arg = tick;
}

/* Reads a small secret file, trimming surrounding whitespace. */
static int read_key_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    size_t n = fread(buf, 1, size - 1, f);
    fclose(f);
    buf[n] = '\0';
    while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
        buf[--n] = '\0';
    return n > 0 ? 0 : -1;
}

static void usage(void)
{
    fprintf(stderr,
            "usage: sb-frontend [--listen HOST:PORT] [--broker ENDPOINTS] [--pg DSN] [--name NAME]\n"
            "                   [--max-body-bytes N] [--max-file-bytes N] [--db-conns N] [--read-timeout S]\n"
            "                   [--drain-seconds S] [--reasoning-key-file PATH] [--stream-keepalive-ms MS]\n"
            "                   [--max-header-bytes N] [--max-json-depth N] [--max-json-elements N]\n"
            "                   [--read-deadline-ms MS] [--max-connections N] [--max-connections-per-source N]\n"
            "                   [--max-body-memory N] [--embedding-model ID] [--admin-listen HOST:PORT]\n"
            "  --broker ENDPOINTS  the brokers' frontend endpoints, comma-separated (several run\n"
            "                   active-active), or dns://NAME:PORT for every address NAME resolves to,\n"
            "                   re-resolved every 5 s (env SB_BROKER_FRONTEND_ENDPOINT; default\n"
            "                   tcp://127.0.0.1:5555)\n"
            "  --admin-listen HOST:PORT  the admin listener: GET /metrics (Prometheus), /healthz, /readyz\n"
            "                   (503 while PostgreSQL or the broker is away, or draining); off unless given;\n"
            "                   keep it off the public network\n"
            "  Limits (each refused in the error body of the request's API style):\n"
            "    --max-body-bytes N       JSON request body (413 above; default 33554432)\n"
            "    --max-file-bytes N       file upload (413 above; default 16777216)\n"
            "    --max-header-bytes N     request line + headers (431 above; default 65536)\n"
            "    --max-json-depth N       nesting of a JSON body (400 json_too_deep above; default 64)\n"
            "    --max-json-elements N    array elements + object members of a JSON body\n"
            "                             (400 json_too_many_elements above; default 200000)\n"
            "    --read-timeout S         longest silence while reading a request or between two (default 30)\n"
            "    --read-deadline-ms MS    time to read a whole request, first byte to last (408 after;\n"
            "                             0 = none; default 30000)\n"
            "    --max-connections N      open client connections; at the cap a waiting connection of the\n"
            "                             address holding the most is closed for a newcomer from a lighter one,\n"
            "                             else the newcomer gets 503 with Retry-After: 1 (default 4096)\n"
            "    --max-connections-per-source N\n"
            "                             open connections one peer address may hold (503 beyond;\n"
            "                             default 1024)\n"
            "    --max-body-memory N      request body bytes buffered at once across connections, read only\n"
            "                             after the key is checked (503 when spent; default 268435456)\n"
            "  --spool-dir DIR  request log rows go to DIR/reqlog-NAME.spool while PostgreSQL is away, so a\n"
            "                   frontend that dies then loses none; replayed once it is back and at start\n"
            "                   (default: none, rows wait in memory only)\n"
            "  --embedding-model ID  the model (sbctl model) whose embeddings route a new vector store uses;\n"
            "                   the key's token group need not allow it (default text-embedding-3-small)\n"
            "  SB_PG_DSN and SB_BROKER_FRONTEND_ENDPOINT are read from the environment when not given.\n"
            "  The reasoning key (64 hex characters) seals encrypted reasoning items; without it\n"
            "  include=[\"reasoning.encrypted_content\"] is refused. SB_REASONING_KEY_FILE also names the file.\n");
}

int main(int argc, char **argv)
{
    sb_log_init("frontend");
    zsys_init();
    zsys_handler_set(NULL); /* signals go through the libevent loop */
    fe_config_t cfg;
    fe_config_defaults(&cfg);
    cfg.pg_dsn = getenv("SB_PG_DSN") ? getenv("SB_PG_DSN") : "";
    if (getenv("SB_BROKER_FRONTEND_ENDPOINT"))
        cfg.broker_endpoint = getenv("SB_BROKER_FRONTEND_ENDPOINT");
    static char host[256], admin_host[256];
    static const struct option opts[] = {{"listen", required_argument, 0, 'l'},
                                         {"broker", required_argument, 0, 'b'},
                                         {"pg", required_argument, 0, 'p'},
                                         {"name", required_argument, 0, 'n'},
                                         {"max-body-bytes", required_argument, 0, 'm'},
                                         {"db-conns", required_argument, 0, 'd'},
                                         {"read-timeout", required_argument, 0, 't'},
                                         {"drain-seconds", required_argument, 0, 's'},
                                         {"max-file-bytes", required_argument, 0, 'f'},
                                         {"reasoning-key-file", required_argument, 0, 'k'},
                                         {"stream-keepalive-ms", required_argument, 0, 'K'},
                                         {"max-header-bytes", required_argument, 0, 'H'},
                                         {"max-json-depth", required_argument, 0, 'D'},
                                         {"max-json-elements", required_argument, 0, 'E'},
                                         {"read-deadline-ms", required_argument, 0, 'R'},
                                         {"max-connections", required_argument, 0, 'C'},
                                         {"max-connections-per-source", required_argument, 0, 'S'},
                                         {"max-body-memory", required_argument, 0, 'M'},
                                         {"spool-dir", required_argument, 0, 'Y'},
                                         {"embedding-model", required_argument, 0, 'e'},
                                         {"admin-listen", required_argument, 0, 'A'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *key_file = getenv("SB_REASONING_KEY_FILE");
    const char *spool_dir = NULL;
    int c;
    long v;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'l': {
            const char *colon = strrchr(optarg, ':');
            if (!colon || (size_t)(colon - optarg) >= sizeof host || parse_int(colon + 1, 0, 65535, &v) < 0) {
                fprintf(stderr, "bad --listen %s (want HOST:PORT)\n", optarg);
                return 2;
            }
            memcpy(host, optarg, (size_t)(colon - optarg));
            host[colon - optarg] = '\0';
            cfg.listen_host = host;
            cfg.listen_port = (int)v;
            break;
        }
        case 'b':
            cfg.broker_endpoint = optarg;
            break;
        case 'p':
            cfg.pg_dsn = optarg;
            break;
        case 'n':
            cfg.name = optarg;
            break;
        case 'm':
            if (parse_int(optarg, 1024, LONG_MAX, &v) < 0)
                return usage(), 2;
            cfg.max_body_bytes = (size_t)v;
            break;
        case 'f':
            if (parse_int(optarg, 1, 1L << 30, &v) < 0)
                return usage(), 2;
            cfg.max_file_bytes = (size_t)v;
            break;
        case 'k':
            key_file = optarg;
            break;
        case 'K':
            if (parse_int(optarg, 0, 3600000, &v) < 0)
                return usage(), 2;
            cfg.stream_keepalive_ms = (int)v;
            break;
        case 'd':
            if (parse_int(optarg, 1, 64, &v) < 0)
                return usage(), 2;
            cfg.db_conns = (int)v;
            break;
        case 't':
            if (parse_int(optarg, 1, 3600, &v) < 0)
                return usage(), 2;
            cfg.read_timeout_s = (int)v;
            break;
        case 's':
            if (parse_int(optarg, 0, 3600, &v) < 0)
                return usage(), 2;
            drain_seconds = (int)v;
            break;
        case 'H':
            if (parse_int(optarg, 1024, 16L << 20, &v) < 0)
                return usage(), 2;
            cfg.max_header_bytes = (size_t)v;
            break;
        case 'D':
            if (parse_int(optarg, 1, 10000, &v) < 0)
                return usage(), 2;
            cfg.max_json_depth = (int)v;
            break;
        case 'E':
            if (parse_int(optarg, 1, 100000000, &v) < 0)
                return usage(), 2;
            cfg.max_json_elements = (size_t)v;
            break;
        case 'R':
            if (parse_int(optarg, 0, 3600000, &v) < 0)
                return usage(), 2;
            cfg.read_deadline_ms = (int)v;
            break;
        case 'C':
            if (parse_int(optarg, 1, 1000000, &v) < 0)
                return usage(), 2;
            cfg.max_connections = (int)v;
            break;
        case 'S':
            if (parse_int(optarg, 1, 1000000, &v) < 0)
                return usage(), 2;
            cfg.max_connections_per_source = (int)v;
            break;
        case 'M':
            if (parse_int(optarg, 65536, LONG_MAX, &v) < 0)
                return usage(), 2;
            cfg.max_body_memory = (size_t)v;
            break;
        case 'Y':
            spool_dir = optarg;
            break;
        case 'A':
            if (sb_admin_parse_listen(optarg, admin_host, sizeof admin_host, &cfg.admin_port) < 0) {
                fprintf(stderr, "bad --admin-listen %s (want HOST:PORT)\n", optarg);
                return 2;
            }
            cfg.admin_host = admin_host;
            break;
        case 'e':
            if (!optarg[0] || strlen(optarg) > 128)
                return usage(), 2;
            cfg.embedding_model = optarg;
            break;
        default:
            usage();
            return c == 'h' ? 0 : 2;
        }
    }
    char reasoning_key[128] = "";
    if (key_file && key_file[0]) {
        if (read_key_file(key_file, reasoning_key, sizeof reasoning_key) < 0) {
            sb_error("cannot read the reasoning key from %s", key_file);
            return 1;
        }
        cfg.reasoning_key = reasoning_key;
    }
    signal(SIGPIPE, SIG_IGN);
    base = sb_evbase_new();
    char err[512] = "";
    server = fe_server_new(base, &cfg, err, sizeof err);
    explicit_bzero(reasoning_key, sizeof reasoning_key);
    if (server && spool_dir && fe_reqlog_spool_open(server->reqlog, spool_dir, err, sizeof err) < 0)
        fe_server_destroy(&server);
    if (!server) {
        sb_error("start-up failed: %s", err);
        event_base_free(base);
        return 1;
    }
    struct event *tick = NULL;
    struct event *sigterm = evsignal_new(base, SIGTERM, on_signal, &tick);
    struct event *sigint = evsignal_new(base, SIGINT, on_signal, &tick);
    event_add(sigterm, NULL);
    event_add(sigint, NULL);
    event_base_dispatch(base);
    sb_info("stopping");
    event_free(sigterm);
    event_free(sigint);
    if (tick)
        event_free(tick);
    fe_server_destroy(&server);
    event_base_free(base);
    return 0;
}
