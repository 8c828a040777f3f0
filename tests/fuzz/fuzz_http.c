/*
 * fuzz_http: libFuzzer harness for sb_http_parse, the frontend's strict
 * HTTP/1.1 framing: where a request head ends, what it says, the chunked
 * body decoder, path decoding and query parameters. The bytes come straight
 * from any client that can reach a frontend.
 *
 * Input: a byte stream as a connection would deliver it; its first byte picks
 * where the stream is split in two reads. Checked besides "no crash, no UB":
 *   - finding the head's end gives the same answer fed whole or in two parts
 *     (the scanner is incremental: a split must never change a verdict, or a
 *     client could frame a request differently by timing its writes);
 *   - a parsed head never has both a Content-Length and chunked, every field
 *     points inside the head, its target starts with '/' (or is "*");
 *   - the decoded path never holds a '/' that the target did not have as a
 *     literal '/' (an encoded slash stays encoded);
 *   - the chunked decoder gives the same data, verdict and length fed whole
 *     or split, and never hands out more data than the stream holds or than
 *     its limit.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_http_parse.h"

#define FUZZ_MAX_HEAD 4096
#define FUZZ_MAX_BODY 8192

typedef struct {
    char data[FUZZ_MAX_BODY];
    size_t n;
} fuzz_sink_t;

static void fuzz_sink(void *arg, const char *d, size_t n)
{
    fuzz_sink_t *s = arg;
    FUZZ_REQUIRE(s->n + n <= sizeof s->data);
    memcpy(s->data + s->n, d, n);
    s->n += n;
}

/* Decodes in[0..len) as a chunked body, split at cut: verdict, bytes used. */
static int fuzz_chunked(const char *in, size_t len, size_t cut, fuzz_sink_t *out, size_t *used, int *status)
{
    sb_http_chunked_t c;
    sb_http_chunked_init(&c, FUZZ_MAX_BODY, 1024);
    sb_http_err_t err = {0};
    out->n = 0;
    size_t u1 = 0;
    int rc = sb_http_chunked_feed(&c, in, cut, &u1, fuzz_sink, out, &err);
    *used = u1;
    if (rc == 0 && cut < len) {
        FUZZ_REQUIRE(u1 == cut);
        size_t u2 = 0;
        rc = sb_http_chunked_feed(&c, in + cut, len - cut, &u2, fuzz_sink, out, &err);
        *used += u2;
    }
    *status = rc < 0 ? err.status : 0;
    FUZZ_REQUIRE(out->n <= len && out->n <= FUZZ_MAX_BODY);
    FUZZ_REQUIRE(*used <= len);
    return rc;
}

static void fuzz_path(const char *target, size_t len)
{
    char out[FUZZ_MAX_HEAD + 8];
    if (sb_http_target_path(target, len, out, sizeof out) < 0)
        return;
    size_t slashes_in = 0, slashes_out = 0;
    for (size_t i = 0; i < len && target[i] != '?'; i++)
        slashes_in += target[i] == '/';
    for (size_t i = 0; out[i]; i++)
        slashes_out += out[i] == '/';
    FUZZ_REQUIRE(slashes_out == slashes_in);
    FUZZ_REQUIRE(out[0] == '/');
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t cut = data[0];
    const char *buf = (const char *)data + 1;
    size_t len = size - 1;
    if (cut > len)
        cut = len;

    /* The head's end, whole and in two reads. */
    sb_http_err_t e1 = {0}, e2 = {0};
    size_t s1 = 0, s2 = 0;
    ssize_t whole = sb_http_head_end(buf, len, FUZZ_MAX_HEAD, &s1, &e1);
    ssize_t split = sb_http_head_end(buf, cut, FUZZ_MAX_HEAD, &s2, &e2);
    if (split == 0)
        split = sb_http_head_end(buf, len, FUZZ_MAX_HEAD, &s2, &e2);
    FUZZ_REQUIRE(whole == split);
    if (whole < 0)
        FUZZ_REQUIRE(e1.status == e2.status);

    size_t body_at = 0;
    if (whole > 0) {
        sb_http_head_t h;
        sb_http_err_t err = {0};
        if (sb_http_head_parse(buf, (size_t)whole, &h, &err) == 0) {
            FUZZ_REQUIRE(!(h.has_length && h.chunked));
            FUZZ_REQUIRE(h.minor == 0 || h.minor == 1);
            /* inside the head, or "/" for an absolute-form target without a path */
            FUZZ_REQUIRE(h.target && h.target_len > 0);
            FUZZ_REQUIRE((h.target >= buf && h.target + h.target_len <= buf + whole) ||
                         (h.target_len == 1 && h.target[0] == '/'));
            FUZZ_REQUIRE(h.target[0] == '/' || (h.target[0] == '*' && h.target_len == 1));
            for (size_t k = 0; k < h.nfields; k++) {
                const sb_http_field_t *f = &h.fields[k];
                FUZZ_REQUIRE(f->name >= buf && f->name + f->name_len <= buf + whole && f->name_len > 0);
                FUZZ_REQUIRE(f->value >= buf && f->value + f->value_len <= buf + whole);
                FUZZ_REQUIRE(memchr(f->value, '\r', f->value_len) == NULL);
                FUZZ_REQUIRE(memchr(f->value, '\n', f->value_len) == NULL);
                FUZZ_REQUIRE(memchr(f->value, '\0', f->value_len) == NULL);
            }
            size_t n;
            (void)sb_http_head_field(&h, "host", &n);
            fuzz_path(h.target, h.target_len);
            char q[256];
            const char *qm = memchr(h.target, '?', h.target_len);
            if (qm) {
                char query[FUZZ_MAX_HEAD + 1];
                size_t ql = h.target_len - (size_t)(qm + 1 - h.target);
                memcpy(query, qm + 1, ql);
                query[ql] = '\0';
                if (sb_http_query_get(query, "key", q, sizeof q) == 0)
                    FUZZ_REQUIRE(strlen(q) < sizeof q);
            }
        } else {
            FUZZ_REQUIRE(err.status >= 400 && err.status <= 505 && err.message);
        }
        body_at = (size_t)whole;
    } else if (whole < 0) {
        FUZZ_REQUIRE(e1.status == 400 || e1.status == 431);
        sb_http_head_t h;
        (void)sb_http_peek_target(buf, len, &h);
    }

    /* What follows (or the whole input) as a chunked body, whole and split. */
    const char *body = buf + body_at;
    size_t blen = len - body_at;
    size_t bcut = cut < blen ? cut : blen;
    static fuzz_sink_t a, b;
    size_t ua, ub;
    int sa, sb;
    int ra = fuzz_chunked(body, blen, blen, &a, &ua, &sa);
    int rb = fuzz_chunked(body, blen, bcut, &b, &ub, &sb);
    FUZZ_REQUIRE(ra == rb);
    FUZZ_REQUIRE(a.n == b.n && memcmp(a.data, b.data, a.n) == 0);
    if (ra == 1)
        FUZZ_REQUIRE(ua == ub);
    if (ra < 0)
        FUZZ_REQUIRE(sa == sb && (sa == 400 || sa == 413 || sa == 431));
    return 0;
}
