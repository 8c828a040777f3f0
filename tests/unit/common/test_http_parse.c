/* test_http_parse: the frontend's strict HTTP/1.1 framing (sb_http_parse.c):
 * each rule of sb_http_parse.h on a request that breaks it, and the requests
 * real clients send accepted with what they say. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_http_parse.h"
#include "sb_test.h"

/* The status a complete head gets: 0 when accepted (h filled), else the
 * refusal's status. */
static int head_status(const char *text, sb_http_head_t *h)
{
    size_t len = strlen(text), scanned = 0;
    sb_http_err_t err = {0};
    ssize_t n = sb_http_head_end(text, len, 4096, &scanned, &err);
    if (n < 0)
        return err.status;
    if (n == 0)
        return -1; /* incomplete */
    if (sb_http_head_parse(text, (size_t)n, h, &err) < 0)
        return err.status;
    return 0;
}

#define EXPECT_HEAD(text, want)                                                                                        \
    do {                                                                                                               \
        sb_http_head_t h_;                                                                                             \
        int got_ = head_status(text, &h_);                                                                             \
        if (got_ != (want))                                                                                            \
            fprintf(stderr, "  head: %s\n", text);                                                                     \
        CHECK_INT(got_, want);                                                                                         \
    } while (0)

static void test_accepted(void)
{
    sb_http_head_t h;
    CHECK_INT(head_status("POST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n"
                          "Authorization:   Bearer k  \r\nContent-Length: 12\r\nEXPECT: 100-Continue\r\n\r\n",
                          &h),
              0);
    CHECK(h.method == SB_HTTP_M_POST && h.minor == 1 && h.has_length && h.length == 12 && !h.chunked);
    CHECK(h.keep_alive && h.expect_continue);
    CHECK(h.target_len == 24 && memcmp(h.target, "/v1/chat/completions?x=1", 24) == 0);
    size_t n;
    const char *v = sb_http_head_field(&h, "authorization", &n);
    CHECK(v && n == 8 && memcmp(v, "Bearer k", 8) == 0); /* OWS trimmed both sides */
    /* Identical Content-Length values, repeated or as a list (RFC 9110 §8.6). */
    CHECK_INT(head_status("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5, 5\r\n\r\n", &h), 0);
    CHECK(h.length == 5);
    CHECK_INT(head_status("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n", &h), 0);
    CHECK(h.chunked && !h.has_length);
    /* HTTP/1.0: no Host needed, keep-alive only when asked. */
    CHECK_INT(head_status("GET /v1/models HTTP/1.0\r\n\r\n", &h), 0);
    CHECK(!h.keep_alive && h.minor == 0);
    CHECK_INT(head_status("GET /v1/models HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", &h), 0);
    CHECK(h.keep_alive);
    CHECK_INT(head_status("GET /v1/models HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n", &h), 0);
    CHECK(!h.keep_alive);
    /* absolute-form: reduced to the path. */
    CHECK_INT(head_status("GET http://gw.example:8080/v1/models?a=b HTTP/1.1\r\nHost: gw.example\r\n\r\n", &h), 0);
    CHECK(h.target_len == 14 && memcmp(h.target, "/v1/models?a=b", 14) == 0);
    /* An empty value, a value with obs-text (UTF-8), a tab inside. */
    CHECK_INT(head_status("GET / HTTP/1.1\r\nHost: a\r\nX-Empty:\r\nX-U: caf\xc3\xa9\tok\r\n\r\n", &h), 0);
}

static void test_refused(void)
{
    /* smuggling: conflicting lengths, length with chunked, chunked not last */
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 40\r\n\r\n", 400);
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,2\r\n\r\n", 400);
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n", 400);
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501);
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n", 400);
    EXPECT_HEAD("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400);
    /* malformed Content-Length */
    const char *bad_cl[] = {"-1", "abc", "1e3", "0x10", "+5", "", " ", "5 5"};
    for (size_t i = 0; i < sizeof bad_cl / sizeof bad_cl[0]; i++) {
        char head[128];
        snprintf(head, sizeof head, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: %s\r\n\r\n", bad_cl[i]);
        EXPECT_HEAD(head, 400);
    }
    /* lenient syntax */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\nX: a\r\n b\r\n\r\n", 400); /* obs-fold */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\nX Y: a\r\n\r\n", 400);     /* space in a name */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\nX : a\r\n\r\n", 400);      /* space before the colon */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\n: a\r\n\r\n", 400);        /* empty name */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\nX-No-Colon\r\n\r\n", 400);
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\nX: a\x7f\r\n\r\n", 400); /* DEL */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n", 400);  /* two Hosts */
    EXPECT_HEAD("GET / HTTP/1.1\r\n\r\n", 400);                        /* no Host */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400);
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n", 400); /* bare LF */
    EXPECT_HEAD("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", 400); /* bare CR */
    EXPECT_HEAD("GET  / HTTP/1.1\r\nHost: a\r\n\r\n", 400);      /* two spaces */
    EXPECT_HEAD("GET /a b HTTP/1.1\r\nHost: a\r\n\r\n", 400);
    EXPECT_HEAD("GET v1/models HTTP/1.1\r\nHost: a\r\n\r\n", 400); /* not origin-form */
    EXPECT_HEAD("GET / HTTP/1.1 \r\nHost: a\r\n\r\n", 400);
    EXPECT_HEAD("GET / http/1.1\r\nHost: a\r\n\r\n", 400);
    /* versions, methods, expectations */
    EXPECT_HEAD("GET / HTTP/9.9\r\nHost: a\r\n\r\n", 505);
    EXPECT_HEAD("GET / HTTP/1.2\r\nHost: a\r\n\r\n", 505);
    EXPECT_HEAD("GET / HTTP/2.0\r\nHost: a\r\n\r\n", 505);
    EXPECT_HEAD("BREW / HTTP/1.1\r\nHost: a\r\n\r\n", 501);
    EXPECT_HEAD("get / HTTP/1.1\r\nHost: a\r\n\r\n", 501); /* methods are case-sensitive */
    EXPECT_HEAD("POST / HTTP/1.1\r\nHost: a\r\nExpect: bogus\r\n\r\n", 417);
    /* too many fields */
    char *many = malloc(128 * 8 + 64);
    size_t at = (size_t)snprintf(many, 64, "GET / HTTP/1.1\r\nHost: a\r\n");
    for (int i = 0; i < 128; i++)
        at += (size_t)snprintf(many + at, 9, "X%02d: 1\r\n", i % 100);
    memcpy(many + at, "\r\n", 3);
    EXPECT_HEAD(many, 431);
    free(many);
}

static void test_head_end(void)
{
    sb_http_err_t err;
    size_t scanned = 0;
    const char *req = "GET / HTTP/1.1\r\nHost: a\r\n\r\nNEXT";
    /* Fed a byte at a time, the end is found once, at the same place. */
    ssize_t found = 0;
    for (size_t i = 1; i <= strlen(req) && found == 0; i++)
        found = sb_http_head_end(req, i, 4096, &scanned, &err);
    CHECK_INT(found, (ssize_t)strlen(req) - 4);
    /* Over the ceiling with no end in sight: 431 at once. */
    char big[600];
    memset(big, 'a', sizeof big);
    memcpy(big, "GET / HTTP/1.1\r\nX: ", 19);
    scanned = 0;
    CHECK_INT(sb_http_head_end(big, sizeof big, 512, &scanned, &err), -1);
    CHECK_INT(err.status, 431);
    /* The refused head's path is still known for the style of the answer. */
    sb_http_head_t h;
    CHECK_INT(sb_http_peek_target(big, sizeof big, &h), 0);
    CHECK(h.target_len == 1 && h.target[0] == '/');
    scanned = 0;
    CHECK_INT(sb_http_head_end("GET / HTTP/1.1\nHost: a\n\n", 24, 4096, &scanned, &err), -1);
    CHECK_INT(err.status, 400);
}

static void test_paths(void)
{
    char out[64];
    CHECK_INT(sb_http_target_path("/v1/chat/%63ompletions?x=%2f", 28, out, sizeof out), 0);
    CHECK_STR(out, "/v1/chat/completions");
    CHECK_INT(sb_http_target_path("/v1%2fchat%2Fcompletions", 24, out, sizeof out), 0);
    CHECK_STR(out, "/v1%2Fchat%2Fcompletions"); /* never a separator */
    CHECK_INT(sb_http_target_path("/a%00b", 6, out, sizeof out), -1);
    CHECK_INT(sb_http_target_path("/a%zz", 5, out, sizeof out), -1);
    CHECK_INT(sb_http_target_path("/a%2", 4, out, sizeof out), -1);
    CHECK_INT(sb_http_target_path("*", 1, out, sizeof out), -1);
    char q[32];
    CHECK_INT(sb_http_query_get("alt=sse&key=AIza%2Bx+y&z", "key", q, sizeof q), 0);
    CHECK_STR(q, "AIza+x y");
    CHECK_INT(sb_http_query_get("alt=sse&z", "key", q, sizeof q), -1);
    CHECK_INT(sb_http_query_get("k%65y=v", "key", q, sizeof q), 0);
    CHECK_STR(q, "v");
    CHECK_INT(sb_http_query_get("key=%zz", "key", q, sizeof q), -1);
}

typedef struct {
    char buf[256];
    size_t n;
} sink_t;

static void sink(void *arg, const char *d, size_t n)
{
    sink_t *s = arg;
    if (s->n + n <= sizeof s->buf) {
        memcpy(s->buf + s->n, d, n);
        s->n += n;
    }
}

/* Decodes a chunked body whole: 1 done (data in *s), else the status. */
static int chunked(const char *body, uint64_t max, sink_t *s, size_t *used)
{
    sb_http_chunked_t c;
    sb_http_chunked_init(&c, max, 64);
    sb_http_err_t err;
    memset(s, 0, sizeof *s);
    int rc = sb_http_chunked_feed(&c, body, strlen(body), used, sink, s, &err);
    return rc < 0 ? err.status : rc;
}

static void test_chunked(void)
{
    sink_t s;
    size_t used;
    const char *ok = "5;ext=1;q=\"a b\"\r\nhello\r\n6 ; x\r\n world\r\n0\r\nX-Trailer: 1\r\n\r\nGET";
    CHECK_INT(chunked(ok, 100, &s, &used), 1);
    CHECK(s.n == 11 && memcmp(s.buf, "hello world", 11) == 0);
    CHECK_INT(used, strlen(ok) - 3);                               /* the next request's bytes are left */
    CHECK_INT(chunked("3\r\nabcX0\r\n\r\n", 100, &s, &used), 400); /* data without its CRLF */
    CHECK_INT(chunked("xyz\r\n", 100, &s, &used), 400);            /* not hex */
    CHECK_INT(chunked(";x\r\n", 100, &s, &used), 400);             /* no size */
    CHECK_INT(chunked("5 5\r\n", 100, &s, &used), 400);            /* digits after whitespace */
    CHECK_INT(chunked("5\nhello\r\n", 100, &s, &used), 400);       /* bare LF */
    CHECK_INT(chunked("65\r\n", 100, &s, &used), 413);             /* 101 > 100, before any data */
    CHECK_INT(chunked("ffffffffffffffffff\r\n", 100, &s, &used), 413);
    CHECK_INT(chunked("32\r\n", 100, &s, &used), 0); /* 50: wants its data */
    CHECK_INT(chunked("0\r\n X: folded\r\n\r\n", 100, &s, &used), 400);
    /* trailers over their ceiling (64 here) */
    char t[200];
    snprintf(t, sizeof t, "0\r\nX: %0100d\r\n\r\n", 0);
    CHECK_INT(chunked(t, 100, &s, &used), 431);
}

int main(void)
{
    test_accepted();
    test_refused();
    test_head_end();
    test_paths();
    test_chunked();
    return sb_test_finish("http_parse");
}
