/*
 * fuzz_sse: libFuzzer harness for sb_sse's reader, which reads every
 * upstream's event stream in the worker (and the gateway's in the stream
 * benchmark): bytes from a network peer.
 *
 * Input: one byte of settings, then the stream. The settings byte picks
 * SB_SSE_LF_ONLY (bit 0) and the size limit (bits 1-3, from 1 byte to the
 * default). Checked besides "no crash, no leak, no UB": the stream read in one
 * chunk, in chunks of a size taken from the input, and byte by byte gives the
 * same events and the same outcome (an error at the same point); no event's
 * data passes the limit, and without SB_SSE_LF_ONLY no data holds a CR; and
 * each event, written back with sb_sse_buf_event, reads back as itself (line
 * ends in data as LF).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_sse.h"

struct fuzz_ev {
    char *name;
    char *data;
    size_t len;
};

struct fuzz_log {
    struct fuzz_ev *ev;
    size_t n, cap;
    size_t max;
    bool lf_only;
};

static int fuzz_sse_record(void *arg, const char *event, const char *data, size_t len)
{
    struct fuzz_log *log = arg;
    FUZZ_REQUIRE(len <= log->max && strlen(event) <= log->max && data[len] == '\0');
    if (!log->lf_only)
        FUZZ_REQUIRE(!memchr(data, '\r', len) && !strchr(event, '\r') && !strchr(event, '\n'));
    if (log->n == log->cap) {
        log->cap = log->cap ? log->cap * 2 : 16;
        log->ev = sb_xrealloc(log->ev, log->cap * sizeof *log->ev);
    }
    struct fuzz_ev *e = &log->ev[log->n++];
    e->name = sb_xstrdup(event);
    e->data = sb_xmalloc(len + 1);
    memcpy(e->data, data, len + 1);
    e->len = len;
    return 0;
}

static void fuzz_log_free(struct fuzz_log *log)
{
    for (size_t i = 0; i < log->n; i++) {
        free(log->ev[i].name);
        free(log->ev[i].data);
    }
    free(log->ev);
}

/* Reads p[0..n) in chunks of `step` bytes (0: one chunk), then finishes.
 * Returns the first error, or 0. */
static int fuzz_sse_read(const char *p, size_t n, size_t step, size_t max, unsigned flags, struct fuzz_log *log)
{
    sb_sse_reader_t r;
    sb_sse_init(&r, max, flags);
    memset(log, 0, sizeof *log);
    log->max = r.max;
    log->lf_only = flags & SB_SSE_LF_ONLY;
    if (step == 0)
        step = n ? n : 1;
    int rc = 0;
    size_t delivered = 0;
    for (size_t i = 0; i < n && rc >= 0; i += step) {
        size_t k = n - i < step ? n - i : step;
        rc = sb_sse_feed(&r, p + i, k, fuzz_sse_record, log);
        if (rc >= 0)
            delivered += (size_t)rc;
    }
    if (rc >= 0) {
        rc = sb_sse_finish(&r, fuzz_sse_record, log);
        if (rc >= 0)
            delivered += (size_t)rc;
    }
    FUZZ_REQUIRE(rc >= 0 ? delivered == log->n : rc == -E2BIG);
    sb_sse_free(&r);
    return rc < 0 ? rc : 0;
}

static bool fuzz_log_same(const struct fuzz_log *a, const struct fuzz_log *b)
{
    if (a->n != b->n)
        return false;
    for (size_t i = 0; i < a->n; i++)
        if (strcmp(a->ev[i].name, b->ev[i].name) || a->ev[i].len != b->ev[i].len ||
            memcmp(a->ev[i].data, b->ev[i].data, a->ev[i].len))
            return false;
    return true;
}

/* data with CRLF and CR as LF: what a reader gets back from the writer. */
static size_t fuzz_lf(const char *data, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] == '\r') {
            out[o++] = '\n';
            if (i + 1 < len && data[i + 1] == '\n')
                i++;
        } else {
            out[o++] = data[i];
        }
    }
    return o;
}

/* Writes e back and reads it: one event, the same. */
static void fuzz_sse_round_trip(const struct fuzz_ev *e, bool crlf)
{
    bool name_ok = !strchr(e->name, '\r') && !strchr(e->name, '\n');
    sb_buf_t b = {0};
    sb_sse_buf_event(&b, name_ok && *e->name ? e->name : NULL, e->data, e->len, crlf ? "\r\n" : "\n");
    struct fuzz_log back;
    FUZZ_REQUIRE(fuzz_sse_read(b.p, b.len, 0, 0, 0, &back) == 0);
    FUZZ_REQUIRE(back.n == 1);
    if (name_ok)
        FUZZ_REQUIRE(!strcmp(back.ev[0].name, e->name));
    char *want = sb_xmalloc(e->len + 1);
    size_t wlen = fuzz_lf(e->data, e->len, want);
    FUZZ_REQUIRE(back.ev[0].len == wlen && !memcmp(back.ev[0].data, want, wlen));
    free(want);
    fuzz_log_free(&back);
    sb_buf_free(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const size_t limits[] = {0, 1, 2, 7, 16, 64, 300, 4096};
    unsigned flags = data[0] & 1 ? SB_SSE_LF_ONLY : 0;
    size_t max = limits[(data[0] >> 1) & 7];
    const char *p = (const char *)data + 1;
    size_t n = size - 1;
    /* A chunk size from the input's last byte, so it varies with it. */
    size_t step = n ? (size_t)(unsigned char)p[n - 1] % 13 + 2 : 1;

    struct fuzz_log whole, chunked, bytes;
    int rc = fuzz_sse_read(p, n, 0, max, flags, &whole);
    FUZZ_REQUIRE(fuzz_sse_read(p, n, step, max, flags, &chunked) == rc);
    FUZZ_REQUIRE(fuzz_sse_read(p, n, 1, max, flags, &bytes) == rc);
    FUZZ_REQUIRE(fuzz_log_same(&whole, &chunked));
    FUZZ_REQUIRE(fuzz_log_same(&whole, &bytes));
    for (size_t i = 0; i < whole.n && i < 64; i++)
        fuzz_sse_round_trip(&whole.ev[i], (data[0] >> 4) & 1);
    fuzz_log_free(&whole);
    fuzz_log_free(&chunked);
    fuzz_log_free(&bytes);
    return 0;
}
