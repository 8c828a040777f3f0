/*
 * sb_trace: W3C Trace Context (https://www.w3.org/TR/trace-context/). The
 * frontend takes a client's traceparent (or starts a trace when there is
 * none or it is malformed), makes its own span, and carries
 * "00-<trace-id>-<its span>-<flags>" in the job (job.trace); the worker
 * makes a span of its own for the job and sends it as the traceparent of
 * every upstream call, with the client's tracestate. The trace id goes into
 * request_log and onto the request's log lines.
 */
#ifndef SB_TRACE_H
#define SB_TRACE_H

#include <stdbool.h>
#include <stddef.h>

#define SB_TRACEPARENT_LEN 55 /* "00-" 32 "-" 16 "-" 2 */
#define SB_TRACESTATE_MAX 512 /* the spec's: 32 members of up to 256 bytes would be 8 KiB; we keep 512 */

typedef struct {
    char trace_id[33]; /* 32 lowercase hex */
    char span_id[17];  /* 16 lowercase hex: the parent's span as parsed; ours once made */
    char flags[3];     /* 2 lowercase hex */
} sb_trace_t;

/* Parses a traceparent header value: 0, or -1 when it is not one a vendor
 * may accept (version ff, wrong lengths, uppercase or non-hex, an all-zero
 * trace or parent id, a version-00 header with anything after the flags).
 * A later version is read by its version-00 prefix. */
int sb_trace_parse(const char *value, sb_trace_t *t);
/* Whether a tracestate value may be passed on: at most SB_TRACESTATE_MAX
 * bytes of printable ASCII. */
bool sb_tracestate_ok(const char *value);
/* A new trace, flags "00" (span id left to sb_trace_span). The trace id is
 * time-ordered (sb_id_new_ordered: 12 hex digits of epoch milliseconds, then
 * 80 random bits), as AWS X-Ray's are: request_log's index on trace_id then
 * takes the gateway's own traces at its right edge instead of on a random
 * leaf page per row (a page read and, after each checkpoint, a full-page
 * image in the WAL). A client's traceparent is kept as it came. */
void sb_trace_start(sb_trace_t *t);
/* A new span of t's trace: a random span id in t->span_id. */
void sb_trace_span(sb_trace_t *t);
/* "00-<trace>-<span>-<flags>" into out (at least SB_TRACEPARENT_LEN + 1). */
void sb_trace_format(const sb_trace_t *t, char *out, size_t len);

#endif
