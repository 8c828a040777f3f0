/*
 * sb_stream: a streaming (Server-Sent Events) benchmark client on libevent
 * bufferevents, used by tests/bench/stream to compare the gateway with the
 * upstream emulator called directly.
 *
 * Two runs:
 *  - latency: R requests over K keep-alive connections (each connection sends
 *    its next request when the previous stream ends). Per request it records
 *    the time to first token (request written -> first event carrying
 *    non-empty text) and the gaps between successive content-delta events.
 *    Every event is timestamped when the read that holds its terminating
 *    blank line is taken from the socket.
 *  - hold: N long-lived streams opened at a fixed rate; once every stream has
 *    delivered its first content delta (or failed, or missed its deadline),
 *    VmRSS of the given processes is read, then every stream is closed.
 *
 * What a "content delta" is depends on the API style (sb_stream_classify).
 * Pure pieces (SSE splitting, classification, timing maths, the HTTP
 * response decoder) have no I/O and are unit-tested.
 */
#ifndef SB_STREAM_H
#define SB_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sb_sse.h"

struct evbuffer;

/* ---- API styles and content deltas (sb_stream_sse.c) ---------------------------------- */

enum sb_stream_style {
    SB_STREAM_CHAT,      /* chat.completion.chunk: choices[].delta.content */
    SB_STREAM_RESPONSES, /* response.output_text.delta: delta */
    SB_STREAM_MESSAGES,  /* content_block_delta with a text_delta: delta.text */
    SB_STREAM_GEMINI,    /* GenerateContentResponse: candidates[0].content.parts[].text */
};

/* "chat", "responses", "messages", "gemini" -> *out; 0 or -EINVAL. */
int sb_stream_style_parse(const char *name, enum sb_stream_style *out) __attribute__((warn_unused_result));
const char *sb_stream_style_name(enum sb_stream_style style);

enum sb_stream_event_kind {
    SB_STREAM_EV_OTHER, /* anything else: role delta, ping, lifecycle events, empty text */
    SB_STREAM_EV_DELTA, /* a content delta carrying non-empty text */
    SB_STREAM_EV_END,   /* the style's end marker: [DONE], response.completed/.incomplete, message_stop */
    SB_STREAM_EV_ERROR, /* an error event, or data that is not the JSON the style sends */
};

/*
 * Classifies one SSE event. type is its "event:" field ("" when absent), data
 * its data (len bytes, NUL-terminated). For responses and messages the JSON
 * "type" member decides, the event field only when the JSON has none. Gemini
 * has no end marker (the HTTP body ends); thought parts are not content.
 */
enum sb_stream_event_kind sb_stream_classify(enum sb_stream_style style, const char *type, const char *data,
                                             size_t len);

/* ---- SSE splitting (sb_stream_sse.c) --------------------------------------------------- */

/* Incremental parser of a text/event-stream body, per the WHATWG rules: lines
 * end in CRLF, LF or CR; "data:" lines accumulate (joined by LF); "event:"
 * names the event; ":" lines are comments; a blank line dispatches the event
 * if it has data. The reading is common/sb_sse's; all buffers are owned by
 * the parser. */
struct sb_stream_sse {
    sb_sse_reader_t reader; /* the event-stream reader */
    size_t max_line;        /* limit on one line and on one event's data */
};

/* One complete event. Return 0 to go on, a negative errno to stop feeding. */
typedef int (*sb_stream_sse_fn)(void *arg, const char *type, const char *data, size_t len);

void sb_stream_sse_init(struct sb_stream_sse *s);
/* Forgets a partial event (next response on the same connection); keeps buffers. */
void sb_stream_sse_reset(struct sb_stream_sse *s);
void sb_stream_sse_free(struct sb_stream_sse *s);

/*
 * Splits len bytes into events: fn runs once per event, when its terminating
 * blank line is read. A buffer may hold several events, or part of one (the
 * rest is kept for the next call). Returns the number of events delivered,
 * -EMSGSIZE when a line or an event's data exceeds max_line, or fn's negative
 * return value.
 */
int sb_stream_sse_feed(struct sb_stream_sse *s, const char *buf, size_t len, sb_stream_sse_fn fn, void *arg)
    __attribute__((warn_unused_result));

/* ---- timing maths (sb_stream_sse.c) --------------------------------------------------- */

/* A growable list of samples in microseconds (owned). */
struct sb_stream_samples {
    uint64_t *v;
    size_t n, cap;
};

void sb_stream_samples_push(struct sb_stream_samples *s, uint64_t us);
void sb_stream_samples_append(struct sb_stream_samples *dst, const struct sb_stream_samples *src);
void sb_stream_samples_free(struct sb_stream_samples *s);

struct sb_stream_summary {
    size_t n;
    uint64_t min, p50, p90, p99, max;
    double mean;
};

/* Sorts s in place and summarises it (exact nearest-rank percentiles, as
 * sb-load); all zero when s is empty. */
void sb_stream_summarise(struct sb_stream_samples *s, struct sb_stream_summary *out);

/* The timing of one streamed response. */
struct sb_stream_timing {
    int64_t start_us;              /* the request was written (latency) or the connect began (hold) */
    int64_t first_us;              /* the first content delta arrived; 0 until then */
    int64_t last_us;               /* the latest content delta arrived */
    size_t deltas;                 /* content deltas so far */
    struct sb_stream_samples gaps; /* between successive content deltas (owned) */
};

/* Starts a new response at now_us (keeps the gap buffer). */
void sb_stream_timing_start(struct sb_stream_timing *t, int64_t now_us);
/* A content delta was read at now_us: the first sets TTFT, later ones add a gap. */
void sb_stream_timing_delta(struct sb_stream_timing *t, int64_t now_us);
/* first_us - start_us (0 before the first delta; never negative). */
uint64_t sb_stream_timing_ttft(const struct sb_stream_timing *t);
void sb_stream_timing_free(struct sb_stream_timing *t);

/* ---- HTTP/1.1 response decoder (sb_stream_http.c) ---------------------------------------- */

enum sb_stream_parse { SB_STREAM_AGAIN = 0, SB_STREAM_DONE = 1, SB_STREAM_ERROR = -1 };

/* What the decoder reads next. */
enum sb_stream_resp_state {
    SB_STREAM_RESP_STATUS,     /* the status line */
    SB_STREAM_RESP_HEADERS,    /* header lines up to the empty line */
    SB_STREAM_RESP_BODY,       /* `left` more bytes of a Content-Length body */
    SB_STREAM_RESP_CHUNK_SIZE, /* a chunk-size line */
    SB_STREAM_RESP_CHUNK_DATA, /* `left` more bytes of chunk data */
    SB_STREAM_RESP_CHUNK_END,  /* the CRLF after chunk data */
    SB_STREAM_RESP_TRAILERS,   /* trailer lines up to the empty line */
    SB_STREAM_RESP_UNTIL_EOF,  /* no length given: the body runs to connection close */
    SB_STREAM_RESP_COMPLETE,   /* the whole response has been read */
};

struct sb_stream_resp {
    enum sb_stream_resp_state state;
    int status;
    bool keep_alive; /* the connection may carry another request afterwards */
    bool chunked;
    bool event_stream;      /* Content-Type text/event-stream */
    int64_t content_length; /* -1 if absent */
    uint64_t left;          /* body or chunk bytes still to come */
    uint64_t body_bytes;
};

void sb_stream_resp_reset(struct sb_stream_resp *r);
/*
 * Consumes what it can from in, appending the (de-chunked) body bytes to
 * body. DONE when the response ended (bytes after it stay in in), AGAIN when
 * it needs more, ERROR on a malformed response.
 */
enum sb_stream_parse sb_stream_resp_feed(struct sb_stream_resp *r, struct evbuffer *in, struct evbuffer *body);
/* The peer closed: DONE if that ends a read-until-close body, else ERROR. */
enum sb_stream_parse sb_stream_resp_eof(struct sb_stream_resp *r);

/* ---- the runs (sb_stream.c) ------------------------------------------------------------ */

#define SB_STREAM_MAX_RSS 8

struct sb_stream_config {
    const char *url;  /* http://HOST:PORT/PATH (borrowed) */
    const char *body; /* borrowed JSON request body */
    size_t body_len;
    const char *const *headers; /* borrowed "Name: value" lines */
    size_t nheaders;
    enum sb_stream_style style;
    double timeout_s; /* a stream that sends nothing for this long fails */

    /* latency run */
    int requests;      /* recorded requests */
    int warmup;        /* unrecorded requests before them */
    int concurrency;   /* connections, each running requests one after another */
    int expect_deltas; /* > 0: a stream with another count of content deltas fails */

    /* hold run (streams > 0 selects it) */
    int streams;
    double open_rate;                         /* streams opened per second */
    double first_timeout_s;                   /* each stream's first content delta is due this long after its connect */
    double hold_s;                            /* keep the streams open this long after RSS is read */
    const char *rss_names[SB_STREAM_MAX_RSS]; /* processes whose VmRSS is read (borrowed) */
    int rss_pids[SB_STREAM_MAX_RSS];
    size_t nrss;
};

struct sb_stream_result {
    uint64_t started;      /* recorded requests begun (latency) or streams opened (hold) */
    uint64_t ok;           /* latency: complete 200 streams with the expected deltas; hold: first delta in time */
    uint64_t failed;       /* the rest, counted once each under one of the reasons below */
    uint64_t non200;       /* answered with another status */
    uint64_t errors;       /* connect failure, reset, timeout or malformed HTTP */
    uint64_t bad_deltas;   /* complete, but another number of content deltas (or none) */
    uint64_t error_events; /* an error event in the stream */
    uint64_t late;         /* hold: first delta after the deadline (or never) */
    uint64_t unterminated; /* ok streams that ended without the style's end marker */
    uint64_t not_sse;      /* 200 responses without Content-Type text/event-stream */
    int last_bad_status;   /* the latest non-200 status seen (0 if none) */
    size_t deltas_min, deltas_max;   /* content deltas per ok stream */
    double elapsed_s;                /* latency: whole recorded run; hold: until RSS was read */
    double open_s;                   /* hold: time to open every stream */
    uint64_t alive;                  /* hold: streams still open when RSS was read */
    struct sb_stream_summary ttft;   /* latency: TTFT of ok streams; hold: first-delta time of ok streams */
    struct sb_stream_summary gap;    /* latency: gaps between content deltas of ok streams */
    struct sb_stream_summary total;  /* latency: request written -> stream end, ok streams */
    struct sb_stream_summary tail;   /* latency: last content delta -> stream end, ok streams */
    long rss_kib[SB_STREAM_MAX_RSS]; /* hold: VmRSS of cfg->rss_pids when read (-1 if unreadable) */
};

/* Runs the latency run or, when cfg->streams > 0, the hold run (its own event
 * loop). 0 (even when requests failed: see out) or a negative errno. */
int sb_stream_run(const struct sb_stream_config *cfg, struct sb_stream_result *out) __attribute__((warn_unused_result));

/* VmRSS of pid in KiB from /proc/PID/status, or -1. */
long sb_stream_rss_kib(int pid);

#endif
