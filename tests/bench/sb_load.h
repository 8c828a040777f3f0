/*
 * sb_load: a small single-threaded HTTP/1.1 keep-alive load generator on
 * libevent bufferevents, used by the overhead benchmark (tests/bench/overhead).
 *
 * Two modes:
 *  - closed loop (concurrency N): N connections, each sends its next request
 *    as soon as the previous response arrives; latency = response end - send.
 *  - open loop (rate R over a pool of connections): request i is due at
 *    t0 + i/R whatever happens; latency = response end - due time, so time
 *    spent waiting for a free connection counts (coordinated omission
 *    corrected, as wrk2 does).
 * Every latency sample is kept, so percentiles are exact.
 */
#ifndef SB_LOAD_H
#define SB_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct evbuffer;

/* ---- response parser (sb_load_http.c) --------------------------------------------- */

enum sb_load_parse { SB_LOAD_AGAIN = 0, SB_LOAD_DONE = 1, SB_LOAD_ERROR = -1 };

/* Parser state for one HTTP/1.x response (what is being read next). */
enum sb_load_resp_state {
    SB_LOAD_RESP_STATUS,     /* the status line */
    SB_LOAD_RESP_HEADERS,    /* header lines up to the empty line */
    SB_LOAD_RESP_BODY,       /* content_length - body_read more bytes */
    SB_LOAD_RESP_CHUNK_SIZE, /* a chunk-size line */
    SB_LOAD_RESP_CHUNK_DATA, /* chunk_left more bytes of chunk data */
    SB_LOAD_RESP_CHUNK_END,  /* the CRLF after chunk data */
    SB_LOAD_RESP_TRAILERS,   /* trailer lines up to the empty line */
    SB_LOAD_RESP_UNTIL_EOF,  /* no length given: body runs to connection close */
    SB_LOAD_RESP_COMPLETE,   /* a whole response has been consumed */
};

struct sb_load_resp {
    enum sb_load_resp_state state;
    int status;
    bool http10;
    bool keep_alive; /* connection may carry another request afterwards */
    bool chunked;
    int64_t content_length; /* -1 if absent */
    uint64_t chunk_left;
    uint64_t body_bytes;
    bool head; /* response to HEAD: no body whatever the headers say */
};

void sb_load_resp_reset(struct sb_load_resp *r, bool head_request);
/* Consumes what it can from in. DONE when a whole response was consumed (bytes
 * after it stay in `in`), AGAIN when it needs more, ERROR on a malformed one. */
enum sb_load_parse sb_load_resp_feed(struct sb_load_resp *r, struct evbuffer *in);
/* The peer closed: DONE if that ends a read-until-close body, else ERROR. */
enum sb_load_parse sb_load_resp_eof(struct sb_load_resp *r);

/* ---- the load run (sb_load.c) ------------------------------------------------------- */

struct sb_load_config {
    char host[256]; /* numeric address or name, from the URL */
    int port;
    char path[2048];
    const char *method; /* borrowed; default POST with a body, else GET */
    const char *body;   /* borrowed; may be NULL */
    size_t body_len;
    const char *const *headers; /* borrowed "Name: value" lines */
    size_t nheaders;
    int concurrency;   /* > 0: closed loop */
    double rate;       /* > 0: open loop, requests per second */
    int connections;   /* open loop pool size */
    double duration_s; /* measured window */
    double warmup_s;   /* before the window, not recorded */
    double timeout_s;  /* per request; also how long to drain at the end */
};

struct sb_load_result {
    uint64_t count; /* responses (any status) to requests started in the window */
    uint64_t ok;    /* of which 2xx */
    uint64_t non2xx;
    uint64_t errors;  /* requests in the window that got no response, plus connect failures */
    double elapsed_s; /* the window */
    double rps;       /* count / elapsed_s */
    uint64_t min_us, p50_us, p90_us, p99_us, p999_us, max_us;
    double mean_us;
    uint64_t status[6]; /* responses by class: [1]=1xx ... [5]=5xx */
};

/* "http://host:port/path" into cfg->host/port/path. Returns 0 or -EINVAL. */
int sb_load_parse_url(const char *url, struct sb_load_config *cfg) __attribute__((warn_unused_result));

/* Runs the load (its own event loop); 0 or a negative errno. */
int sb_load_run(const struct sb_load_config *cfg, struct sb_load_result *out) __attribute__((warn_unused_result));

/* Exact nearest-rank percentile of sorted samples (p in 0..100). */
uint64_t sb_load_percentile(const uint64_t *sorted, size_t n, double p);

#endif
