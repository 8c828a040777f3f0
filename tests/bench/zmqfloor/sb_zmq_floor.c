/*
 * sb-zmq-floor: the floor cost of Switchboard's ZeroMQ message path, with no
 * HTTP, JSON, msgpack or upstream: what four ZeroMQ hops cost by themselves
 * (client DEALER -> broker ROUTER -> worker DEALER -> broker ROUTER ->
 * client), each crossing processes through libzmq's I/O threads. The
 * gateway's CPU per request cannot go below this with its current design.
 *
 *   sb-zmq-floor broker --frontend EP --backend EP [--workers N] [common]
 *   sb-zmq-floor worker --backend EP [common]
 *   sb-zmq-floor client --frontend EP [--inflight K] [--rate R]
 *                       [--seconds S] [--warmup S] [common]
 *   common: [--io-threads N] [--max-seconds S] [--header-bytes N]
 *           [--body-bytes N] [--reply-bytes N]
 *
 * Each role is its own process (tests/bench/zmqfloor/run starts them).
 *
 * Messages are shaped like ours (common/sb_protocol.h): a DEALER sends a
 * 1-byte command, a header frame (--header-bytes, default 100) and a body
 * frame (--body-bytes, default 400); on the broker's ROUTER that is 4 frames
 * with the routing id. The broker is one thread, as ours: it waits the way
 * broker/broker.c's sb_broker_wait does (ZMQ_EVENTS of both sockets first,
 * then poll() on their edge-triggered ZMQ_FDs) and drains each socket with
 * ZMQ_DONTWAIT until EAGAIN (sb_wire_recv_frames, common/sb_wire.c). It
 * forwards a client's job to a worker (round robin) with the client's
 * routing id as an envelope frame, and the worker's reply back to the
 * client by that id: the classic prepend/strip of a ROUTER-ROUTER broker.
 * Ours looks the client up by job id in a map instead; either costs far less
 * than a ZeroMQ hop. Frames are forwarded with zmq_msg_send (no copy), so
 * this is a floor: ours copies each frame once more (zframe_new, zmq_send)
 * and en/decodes the msgpack header.
 *
 * Worker: echoes each job as one reply: the EVENT command, the job's header
 * and a --reply-bytes body (default 500; ~600 bytes in all) that starts with
 * the job's body. Client: keeps K jobs in flight (one per slot; each reply
 * sends the slot's next job) or, with --rate R, sends one job every 1/R s
 * while fewer than K are in flight: the gateway runs at a few thousand
 * requests a second, where fewer messages share a wake-up than in a closed
 * loop at full speed. It runs --warmup s (default 1) unmeasured, prints
 * "measuring" on stdout, runs --seconds s (default 5, at most 600) measured,
 * then collects the jobs still in flight and prints one line:
 *   result round_trips=N seconds=S rps=R p50_us=A p99_us=B mismatches=M lost=L
 * Every reply is checked against the job its slot sent (sequence number,
 * header and body bytes); a reply that does not match counts as a mismatch,
 * a job unanswered 2 s after the end as lost, and either fails the run
 * (exit 1). Before the warm-up the client pings the broker (command
 * HEARTBEAT) until it answers, which it does once --workers workers (default
 * 1) have said READY.
 *
 * Broker and worker stop on SIGINT/SIGTERM or after --max-seconds (default
 * 300), so nothing outlives a runner that died.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "sb_alloc.h"
#include "sb_wire.h"

/* Command bytes: the values of sb_protocol.h, so a capture reads alike. */
enum {
    ZF_CMD_SUBMIT = 0x01,
    ZF_CMD_EVENT = 0x03,
    ZF_CMD_PING = 0x04, /* SB_CMD_HEARTBEAT */
    ZF_CMD_READY = 0x10,
};

/* Frames a message may have on the broker: worker id, client id, command,
 * header, body. A longer message is read to its end and dropped. */
#define ZF_MAX_FRAMES 5
/* As broker.c's SB_BROKER_RECV_BUDGET: messages taken from one socket
 * before the other gets its turn. */
#define ZF_RECV_BUDGET 512
#define ZF_MAX_WORKERS 64
#define ZF_ROUTING_ID_MAX 256
/* The job header carries the slot's sequence number and its index. */
#define ZF_TAG_BYTES 12

typedef struct {
    const char *role;
    const char *frontend, *backend;
    int io_threads, inflight, workers, max_seconds;
    double seconds, warmup, rate;
    int header_bytes, body_bytes, reply_bytes;
} zf_opts_t;

static volatile sig_atomic_t zf_stop;

static void zf_on_signal(int sig)
{
    (void)sig;
    zf_stop = 1;
}

/* No SA_RESTART: a signal ends a poll() at once. */
static void zf_catch_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = zf_on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
}

static int64_t zf_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * Options.
 */

static int zf_parse_long(const char *s, long min, long max, long *out)
{
    if (!s || !*s)
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

static int zf_parse_int(const char *s, int min, int max, int *out)
{
    long v;
    if (zf_parse_long(s, min, max, &v) < 0)
        return -EINVAL;
    *out = (int)v;
    return 0;
}

static int zf_parse_seconds(const char *s, double min, double max, double *out)
{
    if (!s || !*s)
        return -EINVAL;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !(v >= min && v <= max))
        return -EINVAL;
    *out = v;
    return 0;
}

static void zf_usage(void)
{
    fprintf(stderr,
            "usage: sb-zmq-floor broker --frontend EP --backend EP [--workers N] [common]\n"
            "       sb-zmq-floor worker --backend EP [common]\n"
            "       sb-zmq-floor client --frontend EP [--inflight K] [--rate R] [--seconds S] [--warmup S] [common]\n"
            "common: [--io-threads N] [--max-seconds S] [--header-bytes N] [--body-bytes N] "
            "[--reply-bytes N]\n"
            "EP: a ZeroMQ endpoint; the broker also takes tcp://HOST:LO-HI (the first free port)\n");
}

static int zf_parse_opts(int argc, char **argv, zf_opts_t *o)
{
    *o = (zf_opts_t){.io_threads = 1,
                     .inflight = 16,
                     .workers = 1,
                     .max_seconds = 300,
                     .seconds = 5,
                     .warmup = 1,
                     .header_bytes = 100,
                     .body_bytes = 400,
                     .reply_bytes = 500};
    if (argc < 2)
        return -EINVAL;
    o->role = argv[1];
    for (int i = 2; i < argc; i++) {
        const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        int rc;
        if (!strcmp(k, "--frontend"))
            rc = v ? (o->frontend = v, 0) : -EINVAL;
        else if (!strcmp(k, "--backend"))
            rc = v ? (o->backend = v, 0) : -EINVAL;
        else if (!strcmp(k, "--io-threads"))
            rc = zf_parse_int(v, 1, 64, &o->io_threads);
        else if (!strcmp(k, "--inflight"))
            rc = zf_parse_int(v, 1, 100000, &o->inflight);
        else if (!strcmp(k, "--workers"))
            rc = zf_parse_int(v, 1, ZF_MAX_WORKERS, &o->workers);
        else if (!strcmp(k, "--max-seconds"))
            rc = zf_parse_int(v, 1, 3600, &o->max_seconds);
        else if (!strcmp(k, "--seconds"))
            rc = zf_parse_seconds(v, 0.1, 600, &o->seconds);
        else if (!strcmp(k, "--rate"))
            rc = zf_parse_seconds(v, 0, 10000000, &o->rate);
        else if (!strcmp(k, "--warmup"))
            rc = zf_parse_seconds(v, 0, 60, &o->warmup);
        else if (!strcmp(k, "--header-bytes"))
            rc = zf_parse_int(v, ZF_TAG_BYTES, 1 << 20, &o->header_bytes);
        else if (!strcmp(k, "--body-bytes"))
            rc = zf_parse_int(v, 8, 1 << 20, &o->body_bytes);
        else if (!strcmp(k, "--reply-bytes"))
            rc = zf_parse_int(v, 8, 1 << 20, &o->reply_bytes);
        else
            rc = -EINVAL;
        if (rc < 0) {
            fprintf(stderr, "sb-zmq-floor: bad option %s%s%s\n", k, v ? " " : "", v ? v : "");
            return -EINVAL;
        }
        i++;
    }
    return 0;
}

/*
 * Sockets.
 */

static void *zf_ctx_new(int io_threads)
{
    void *ctx = zmq_ctx_new();
    if (!ctx || zmq_ctx_set(ctx, ZMQ_IO_THREADS, io_threads) < 0) {
        fprintf(stderr, "sb-zmq-floor: context: %s\n", zmq_strerror(zmq_errno()));
        if (ctx)
            zmq_ctx_term(ctx);
        return NULL;
    }
    return ctx;
}

static void zf_sock_close(void **s)
{
    if (*s) {
        int zero = 0;
        zmq_setsockopt(*s, ZMQ_LINGER, &zero, sizeof zero);
        zmq_close(*s);
        *s = NULL;
    }
}

/* Binds s to ep. An endpoint tcp://HOST:LO-HI takes the first port of the
 * range that binds (the runner keeps to the ports it was given). */
static int zf_bind(void *s, const char *ep)
{
    const char *colon = strrchr(ep, ':'), *dash = colon ? strchr(colon, '-') : NULL;
    if (strncmp(ep, "tcp://", 6) != 0 || !dash)
        return zmq_bind(s, ep) < 0 ? -zmq_errno() : 0;
    char lo_s[16], hi_s[16];
    long lo, hi;
    size_t lo_len = (size_t)(dash - colon - 1);
    if (lo_len == 0 || lo_len >= sizeof lo_s || strlen(dash + 1) >= sizeof hi_s)
        return -EINVAL;
    memcpy(lo_s, colon + 1, lo_len);
    lo_s[lo_len] = '\0';
    snprintf(hi_s, sizeof hi_s, "%s", dash + 1);
    if (zf_parse_long(lo_s, 1, 65535, &lo) < 0 || zf_parse_long(hi_s, lo, 65535, &hi) < 0)
        return -EINVAL;
    for (long p = lo; p <= hi; p++) {
        char one[512];
        snprintf(one, sizeof one, "%.*s:%ld", (int)(colon - ep), ep, p);
        if (zmq_bind(s, one) == 0)
            return 0;
    }
    return -EADDRINUSE;
}

/* Blocks up to timeout_ms until one of the sockets may have input: their
 * ZMQ_EVENTS first (ZMQ_FD is edge-triggered, and sends since the last drain
 * may have taken its signal), then poll() on their ZMQ_FDs, as
 * sb_broker_wait does. */
static void zf_wait(void **socks, int n, int64_t timeout_us)
{
    struct pollfd fds[2];
    for (int i = 0; i < n && i < 2; i++) {
        int ev = 0;
        size_t len = sizeof ev;
        if (zmq_getsockopt(socks[i], ZMQ_EVENTS, &ev, &len) == 0 && (ev & ZMQ_POLLIN))
            return;
        int fd = -1;
        len = sizeof fd;
        if (zmq_getsockopt(socks[i], ZMQ_FD, &fd, &len) < 0)
            return;
        fds[i] = (struct pollfd){.fd = fd, .events = POLLIN};
    }
    if (timeout_us > 0) {
        /* ppoll: a paced client waits for less than a millisecond. */
        struct timespec ts = {.tv_sec = timeout_us / 1000000, .tv_nsec = (timeout_us % 1000000) * 1000};
        (void)ppoll(fds, (nfds_t)n, &ts, NULL); /* EINTR just ends the wait */
    }
}

/* Reads the next message's frames into f without blocking: the gateway's
 * own reader (sb_wire_recv_frames, common/sb_wire.c), so the floor measures
 * the same calls. */
static int zf_recv(void *s, zmq_msg_t *f)
{
    return sb_wire_recv_frames(s, f, ZF_MAX_FRAMES);
}

static void zf_close_frames(zmq_msg_t *f, int n)
{
    for (int i = 0; i < n; i++)
        zmq_msg_close(&f[i]);
}

static int zf_cmd_of(zmq_msg_t *m)
{
    return zmq_msg_size(m) == 1 ? ((const unsigned char *)zmq_msg_data(m))[0] : -1;
}

/* Sends frames f[from..n) after whatever was sent before (a routing id),
 * moving them (zmq_msg_send takes a frame's content without a copy). Once
 * the first frame of a message is taken, ZeroMQ takes the rest. */
static int zf_forward(void *s, zmq_msg_t *f, int from, int n)
{
    for (int i = from; i < n; i++)
        if (zmq_msg_send(&f[i], s, i + 1 < n ? ZMQ_SNDMORE : 0) < 0)
            return -zmq_errno();
    return 0;
}

/*
 * Broker.
 */

typedef struct {
    unsigned char id[ZF_ROUTING_ID_MAX];
    size_t len;
} zf_rid_t;

typedef struct {
    void *frontends, *workers;
    zf_rid_t worker[ZF_MAX_WORKERS];
    int nworkers, want_workers, next_worker;
    uint64_t jobs, replies, dropped;
} zf_broker_t;

/* A ROUTER like broker.c's sb_broker_bind: unroutable peers reported
 * (ROUTER_MANDATORY), sends never block (SNDTIMEO 0), the same HWMs. */
static void *zf_router(void *ctx, const char *ep, int sndhwm, const char *what)
{
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    if (!s)
        return NULL;
    int one = 1, zero = 0;
    zmq_setsockopt(s, ZMQ_ROUTER_MANDATORY, &one, sizeof one);
    zmq_setsockopt(s, ZMQ_SNDTIMEO, &zero, sizeof zero);
    zmq_setsockopt(s, ZMQ_SNDHWM, &sndhwm, sizeof sndhwm);
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    int rc = zf_bind(s, ep);
    if (rc < 0) {
        fprintf(stderr, "sb-zmq-floor broker: cannot bind %s (%s): %s\n", what, ep, strerror(-rc));
        zmq_close(s);
        return NULL;
    }
    return s;
}

/* [client id] PING | [client id] SUBMIT header body */
static void zf_broker_on_client(zf_broker_t *b, zmq_msg_t *f, int n)
{
    int cmd = n >= 2 ? zf_cmd_of(&f[1]) : -1;
    if (n == 2 && cmd == ZF_CMD_PING) {
        /* Answered only when the workers are there: the client starts then. */
        if (b->nworkers >= b->want_workers && zf_forward(b->frontends, f, 0, 2) < 0)
            b->dropped++;
        return;
    }
    if (n != 4 || cmd != ZF_CMD_SUBMIT || b->nworkers == 0) {
        b->dropped++;
        return;
    }
    zf_rid_t *w = &b->worker[b->next_worker];
    b->next_worker = (b->next_worker + 1) % b->nworkers;
    /* [worker id] [client id] SUBMIT header body */
    if (zmq_send(b->workers, w->id, w->len, ZMQ_SNDMORE) < 0 || zf_forward(b->workers, f, 0, 4) < 0) {
        b->dropped++;
        return;
    }
    b->jobs++;
}

/* [worker id] READY | [worker id] [client id] EVENT header body */
static void zf_broker_on_worker(zf_broker_t *b, zmq_msg_t *f, int n)
{
    if (n == 2 && zf_cmd_of(&f[1]) == ZF_CMD_READY) {
        size_t len = zmq_msg_size(&f[0]);
        if (len == 0 || len > ZF_ROUTING_ID_MAX || b->nworkers >= ZF_MAX_WORKERS)
            return;
        for (int i = 0; i < b->nworkers; i++)
            if (b->worker[i].len == len && !memcmp(b->worker[i].id, zmq_msg_data(&f[0]), len))
                return;
        memcpy(b->worker[b->nworkers].id, zmq_msg_data(&f[0]), len);
        b->worker[b->nworkers].len = len;
        b->nworkers++;
        return;
    }
    if (n != 5 || zf_cmd_of(&f[2]) != ZF_CMD_EVENT) {
        b->dropped++;
        return;
    }
    /* Strip the worker's id; the client's id now leads. */
    if (zf_forward(b->frontends, f, 1, 5) < 0) {
        b->dropped++;
        return;
    }
    b->replies++;
}

static void zf_broker_drain(zf_broker_t *b, void *s, void (*handle)(zf_broker_t *, zmq_msg_t *, int))
{
    for (int i = 0; i < ZF_RECV_BUDGET; i++) {
        zmq_msg_t f[ZF_MAX_FRAMES];
        int n = zf_recv(s, f);
        if (n == -EAGAIN)
            return;
        if (n < 0) {
            b->dropped++;
            continue;
        }
        handle(b, f, n);
        zf_close_frames(f, n);
    }
}

static int zf_broker_main(const zf_opts_t *o)
{
    if (!o->frontend || !o->backend) {
        zf_usage();
        return 2;
    }
    zf_broker_t b = {.want_workers = o->workers};
    void *ctx = zf_ctx_new(o->io_threads);
    if (!ctx)
        return 2;
    int rc = 2;
    /* broker.c: SB_BROKER_FRONTEND_SNDHWM 100000, SB_BROKER_WORKER_SNDHWM 0 */
    b.frontends = zf_router(ctx, o->frontend, 100000, "frontend");
    b.workers = b.frontends ? zf_router(ctx, o->backend, 0, "backend") : NULL;
    if (!b.workers)
        goto done;
    char fe[512], be[512];
    size_t len = sizeof fe;
    if (zmq_getsockopt(b.frontends, ZMQ_LAST_ENDPOINT, fe, &len) < 0)
        goto done;
    len = sizeof be;
    if (zmq_getsockopt(b.workers, ZMQ_LAST_ENDPOINT, be, &len) < 0)
        goto done;
    printf("bound frontend=%s backend=%s\n", fe, be);
    fflush(stdout);
    int64_t end = zf_now_ns() + (int64_t)o->max_seconds * 1000000000;
    void *socks[2] = {b.frontends, b.workers};
    while (!zf_stop && zf_now_ns() < end) {
        zf_wait(socks, 2, 100000);
        zf_broker_drain(&b, b.frontends, zf_broker_on_client);
        zf_broker_drain(&b, b.workers, zf_broker_on_worker);
    }
    fprintf(stderr, "broker: jobs=%" PRIu64 " replies=%" PRIu64 " dropped=%" PRIu64 " workers=%d\n", b.jobs, b.replies,
            b.dropped, b.nworkers);
    rc = 0;
done:
    zf_sock_close(&b.frontends);
    zf_sock_close(&b.workers);
    zmq_ctx_term(ctx);
    return rc;
}

/*
 * Worker.
 */

static int zf_worker_main(const zf_opts_t *o)
{
    if (!o->backend) {
        zf_usage();
        return 2;
    }
    void *ctx = zf_ctx_new(o->io_threads);
    if (!ctx)
        return 2;
    int rc = 2;
    uint64_t jobs = 0, bad = 0;
    unsigned char *reply = sb_xmalloc((size_t)o->reply_bytes);
    void *s = zmq_socket(ctx, ZMQ_DEALER);
    if (!s || zmq_connect(s, o->backend) < 0) {
        fprintf(stderr, "sb-zmq-floor worker: cannot connect %s: %s\n", o->backend, zmq_strerror(zmq_errno()));
        goto done;
    }
    unsigned char ready = ZF_CMD_READY;
    if (zmq_send(s, &ready, 1, 0) < 0)
        goto done;
    int64_t end = zf_now_ns() + (int64_t)o->max_seconds * 1000000000;
    while (!zf_stop && zf_now_ns() < end) {
        zf_wait(&s, 1, 100000);
        for (;;) {
            zmq_msg_t f[ZF_MAX_FRAMES];
            int n = zf_recv(s, f);
            if (n == -EAGAIN)
                break;
            if (n < 0) {
                bad++;
                continue;
            }
            /* [client id] SUBMIT header body -> [client id] EVENT header reply */
            if (n != 4 || zf_cmd_of(&f[1]) != ZF_CMD_SUBMIT) {
                bad++;
                zf_close_frames(f, n);
                continue;
            }
            size_t body = zmq_msg_size(&f[3]), head = body < (size_t)o->reply_bytes ? body : (size_t)o->reply_bytes;
            memcpy(reply, zmq_msg_data(&f[3]), head);
            memset(reply + head, 'r', (size_t)o->reply_bytes - head);
            unsigned char ev = ZF_CMD_EVENT;
            if (zmq_msg_send(&f[0], s, ZMQ_SNDMORE) < 0 || zmq_send(s, &ev, 1, ZMQ_SNDMORE) < 0 ||
                zmq_msg_send(&f[2], s, ZMQ_SNDMORE) < 0 || zmq_send(s, reply, (size_t)o->reply_bytes, 0) < 0)
                bad++;
            else
                jobs++;
            zf_close_frames(f, n);
        }
    }
    fprintf(stderr, "worker: jobs=%" PRIu64 " bad=%" PRIu64 "\n", jobs, bad);
    rc = 0;
done:
    free(reply);
    zf_sock_close(&s);
    zmq_ctx_term(ctx);
    return rc;
}

/*
 * Client.
 */

typedef struct {
    uint64_t seq;    /* of the job in flight on this slot */
    int64_t sent_ns; /* when it was sent */
    bool busy;
} zf_slot_t;

typedef struct {
    const zf_opts_t *o;
    void *s;
    zf_slot_t *slots;
    unsigned char *header, *body; /* the job's frames; the tag is patched in */
    uint64_t next_seq;
    uint32_t *idle; /* slots with nothing in flight (a stack) */
    uint32_t nidle;
    int64_t interval_ns, next_due_ns; /* --rate: the next job's send time */
    bool measuring, sending;
    uint64_t measured, mismatches;
    uint32_t *lat; /* round trips measured, ns (capped) */
    size_t nlat, caplat;
} zf_client_t;

static void zf_put_u64(unsigned char *p, uint64_t v)
{
    memcpy(p, &v, sizeof v);
}

static uint64_t zf_get_u64(const unsigned char *p)
{
    uint64_t v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* Sends slot i's next job: SUBMIT, header (seq, slot), body (seq). */
static int zf_client_send(zf_client_t *c, uint32_t i)
{
    zf_slot_t *sl = &c->slots[i];
    sl->seq = c->next_seq++;
    zf_put_u64(c->header, sl->seq);
    memcpy(c->header + 8, &i, sizeof i);
    zf_put_u64(c->body, sl->seq);
    unsigned char cmd = ZF_CMD_SUBMIT;
    sl->sent_ns = zf_now_ns();
    sl->busy = true;
    if (zmq_send(c->s, &cmd, 1, ZMQ_SNDMORE) < 0 ||
        zmq_send(c->s, c->header, (size_t)c->o->header_bytes, ZMQ_SNDMORE) < 0 ||
        zmq_send(c->s, c->body, (size_t)c->o->body_bytes, 0) < 0) {
        fprintf(stderr, "sb-zmq-floor client: send: %s\n", zmq_strerror(zmq_errno()));
        return -EIO;
    }
    return 0;
}

/* Checks a reply against the job its slot sent; returns the slot or -1. */
static int zf_client_match(zf_client_t *c, zmq_msg_t *f, int n)
{
    const zf_opts_t *o = c->o;
    if (n != 3 || zf_cmd_of(&f[0]) != ZF_CMD_EVENT || zmq_msg_size(&f[1]) != (size_t)o->header_bytes ||
        zmq_msg_size(&f[2]) != (size_t)o->reply_bytes)
        return -1;
    const unsigned char *h = zmq_msg_data(&f[1]), *r = zmq_msg_data(&f[2]);
    uint32_t i;
    memcpy(&i, h + 8, sizeof i);
    if (i >= (uint32_t)o->inflight || !c->slots[i].busy)
        return -1;
    uint64_t seq = c->slots[i].seq;
    if (zf_get_u64(h) != seq ||
        memcmp(h + ZF_TAG_BYTES, c->header + ZF_TAG_BYTES, (size_t)o->header_bytes - ZF_TAG_BYTES) != 0)
        return -1;
    size_t head = o->body_bytes < o->reply_bytes ? (size_t)o->body_bytes : (size_t)o->reply_bytes;
    if (zf_get_u64(r) != seq || memcmp(r + 8, c->body + 8, head - 8) != 0)
        return -1;
    for (size_t k = head; k < (size_t)o->reply_bytes; k++)
        if (r[k] != 'r')
            return -1;
    return (int)i;
}

/* Takes every reply waiting; returns the count taken, or -EIO on a failed
 * send. A pong (PING) is ignored: pings sent while waiting for the broker
 * may be answered late. */
static int zf_client_drain(zf_client_t *c)
{
    int taken = 0;
    for (;;) {
        zmq_msg_t f[ZF_MAX_FRAMES];
        int n = zf_recv(c->s, f);
        if (n == -EAGAIN)
            return taken;
        if (n < 0) {
            c->mismatches++;
            continue;
        }
        if (n == 1 && zf_cmd_of(&f[0]) == ZF_CMD_PING) {
            zf_close_frames(f, n);
            continue;
        }
        int i = zf_client_match(c, f, n);
        zf_close_frames(f, n);
        if (i < 0) {
            c->mismatches++;
            continue;
        }
        taken++;
        int64_t now = zf_now_ns();
        zf_slot_t *sl = &c->slots[i];
        sl->busy = false;
        if (c->measuring) {
            int64_t d = now - sl->sent_ns;
            if (c->nlat == c->caplat) {
                c->caplat = c->caplat ? c->caplat * 2 : 65536;
                c->lat = sb_xrealloc(c->lat, c->caplat * sizeof *c->lat);
            }
            c->lat[c->nlat++] = d > UINT32_MAX ? UINT32_MAX : (uint32_t)d;
            c->measured++;
        }
        c->idle[c->nidle++] = (uint32_t)i;
    }
}

/* Sends a job on each idle slot: at once in a closed loop, else when the
 * next is due (--rate). A client that fell behind its rate does not send
 * the backlog in one burst. Returns 0 or -EIO. */
static int zf_client_pump(zf_client_t *c)
{
    if (!c->sending)
        return 0;
    int64_t now = c->interval_ns ? zf_now_ns() : 0;
    if (c->interval_ns && c->next_due_ns < now - 10 * c->interval_ns)
        c->next_due_ns = now;
    while (c->nidle > 0 && (!c->interval_ns || now >= c->next_due_ns)) {
        if (zf_client_send(c, c->idle[--c->nidle]) < 0)
            return -EIO;
        c->next_due_ns += c->interval_ns;
    }
    return 0;
}

static int zf_cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* Nearest rank, in µs. */
static double zf_pct_us(const uint32_t *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    size_t k = (size_t)(p * (double)n);
    if (k >= n)
        k = n - 1;
    return v[k] / 1000.0;
}

/* Runs the loop until deadline_ns (or a failure); returns 0 or -EIO. */
static int zf_client_run_until(zf_client_t *c, int64_t deadline_ns)
{
    for (;;) {
        int64_t now = zf_now_ns();
        if (now >= deadline_ns || zf_stop)
            return 0;
        int64_t until = deadline_ns;
        if (c->interval_ns && c->nidle > 0 && c->next_due_ns < until)
            until = c->next_due_ns;
        int64_t wait_us = (until - now + 999) / 1000;
        zf_wait(&c->s, 1, wait_us > 100000 ? 100000 : wait_us);
        if (zf_client_drain(c) < 0 || zf_client_pump(c) < 0)
            return -EIO;
    }
}

static int zf_client_main(const zf_opts_t *o)
{
    if (!o->frontend) {
        zf_usage();
        return 2;
    }
    void *ctx = zf_ctx_new(o->io_threads);
    if (!ctx)
        return 2;
    int rc = 2;
    zf_client_t c = {.o = o};
    c.slots = sb_xcalloc((size_t)o->inflight, sizeof *c.slots);
    c.idle = sb_xcalloc((size_t)o->inflight, sizeof *c.idle);
    for (int i = o->inflight - 1; i >= 0; i--)
        c.idle[c.nidle++] = (uint32_t)i;
    c.interval_ns = o->rate > 0 ? (int64_t)(1e9 / o->rate) : 0;
    c.header = sb_xmalloc((size_t)o->header_bytes);
    c.body = sb_xmalloc((size_t)o->body_bytes);
    for (int k = 0; k < o->header_bytes; k++)
        c.header[k] = (unsigned char)('a' + k % 26);
    for (int k = 0; k < o->body_bytes; k++)
        c.body[k] = (unsigned char)('A' + k % 26);
    c.s = zmq_socket(ctx, ZMQ_DEALER);
    if (!c.s || zmq_connect(c.s, o->frontend) < 0) {
        fprintf(stderr, "sb-zmq-floor client: cannot connect %s: %s\n", o->frontend, zmq_strerror(zmq_errno()));
        goto done;
    }
    /* Wait for the broker and its workers: ping every 100 ms, up to 10 s. */
    bool up = false;
    int64_t give_up = zf_now_ns() + 10 * 1000000000LL;
    while (!up && !zf_stop && zf_now_ns() < give_up) {
        unsigned char ping = ZF_CMD_PING;
        if (zmq_send(c.s, &ping, 1, 0) < 0)
            goto done;
        int64_t next = zf_now_ns() + 100000000;
        while (!up && zf_now_ns() < next) {
            zf_wait(&c.s, 1, 20000);
            zmq_msg_t f[ZF_MAX_FRAMES];
            int n;
            while ((n = zf_recv(c.s, f)) != -EAGAIN) {
                if (n == 1 && zf_cmd_of(&f[0]) == ZF_CMD_PING)
                    up = true;
                if (n > 0)
                    zf_close_frames(f, n);
            }
        }
    }
    if (!up) {
        fprintf(stderr, "sb-zmq-floor client: no answer from the broker at %s\n", o->frontend);
        goto done;
    }
    c.sending = true;
    c.next_due_ns = zf_now_ns();
    if (zf_client_pump(&c) < 0)
        goto done;
    int64_t t0 = zf_now_ns() + (int64_t)(o->warmup * 1e9);
    if (zf_client_run_until(&c, t0) < 0)
        goto done;
    printf("measuring\n");
    fflush(stdout);
    c.measuring = true;
    t0 = zf_now_ns();
    if (zf_client_run_until(&c, t0 + (int64_t)(o->seconds * 1e9)) < 0)
        goto done;
    int64_t t1 = zf_now_ns();
    c.measuring = false;
    /* Collect what is still in flight: none may be lost. */
    c.sending = false;
    int64_t collect_end = zf_now_ns() + 2000000000LL;
    size_t busy = (size_t)o->inflight;
    while (busy > 0 && zf_now_ns() < collect_end && !zf_stop) {
        zf_wait(&c.s, 1, 50000);
        if (zf_client_drain(&c) < 0)
            goto done;
        busy = 0;
        for (int i = 0; i < o->inflight; i++)
            busy += c.slots[i].busy;
    }
    double secs = (double)(t1 - t0) / 1e9;
    qsort(c.lat, c.nlat, sizeof *c.lat, zf_cmp_u32);
    printf("result round_trips=%" PRIu64 " seconds=%.3f rps=%.0f p50_us=%.1f p99_us=%.1f mismatches=%" PRIu64
           " lost=%zu\n",
           c.measured, secs, (double)c.measured / secs, zf_pct_us(c.lat, c.nlat, 0.50), zf_pct_us(c.lat, c.nlat, 0.99),
           c.mismatches, busy);
    fflush(stdout);
    rc = c.mismatches || busy || c.measured == 0 ? 1 : 0;
done:
    zf_sock_close(&c.s);
    zmq_ctx_term(ctx);
    free(c.slots);
    free(c.idle);
    free(c.header);
    free(c.body);
    free(c.lat);
    return rc;
}

int main(int argc, char **argv)
{
    zf_opts_t o;
    if (zf_parse_opts(argc, argv, &o) < 0) {
        zf_usage();
        return 2;
    }
    zf_catch_signals();
    if (!strcmp(o.role, "broker"))
        return zf_broker_main(&o);
    if (!strcmp(o.role, "worker"))
        return zf_worker_main(&o);
    if (!strcmp(o.role, "client"))
        return zf_client_main(&o);
    zf_usage();
    return 2;
}
