/*
 * Unit test of sb-load's pieces that do not need a network: the HTTP response
 * parser (fed byte by byte and in one piece), the URL parser and percentiles.
 */
#include <event2/buffer.h>
#include <string.h>

#include "sb_load.h"
#include "sb_test.h"

/* Feeds text to a fresh parser, one byte at a time if bytewise; returns the last result. */
static enum sb_load_parse feed(struct sb_load_resp *r, const char *text, bool bytewise, size_t *left)
{
    struct evbuffer *in = evbuffer_new();
    enum sb_load_parse p = SB_LOAD_AGAIN;
    size_t n = strlen(text);
    if (bytewise) {
        for (size_t i = 0; i < n && p == SB_LOAD_AGAIN; i++) {
            evbuffer_add(in, text + i, 1);
            p = sb_load_resp_feed(r, in);
        }
    } else {
        evbuffer_add(in, text, n);
        p = sb_load_resp_feed(r, in);
    }
    *left = evbuffer_get_length(in);
    evbuffer_free(in);
    return p;
}

int main(void)
{
    static const struct {
        const char *text;
        enum sb_load_parse want;
        int status;
        bool keep_alive;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", SB_LOAD_DONE, 200, true},
        {"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\nConnection: close\r\n\r\n", SB_LOAD_DONE, 503,
         false},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\nX: y\r\n\r\n",
         SB_LOAD_DONE, 200, true},
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", SB_LOAD_DONE, 204, true},
        {"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", SB_LOAD_DONE, 200, false},
        {"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", SB_LOAD_AGAIN, 200, true},
        {"HTTP/1.1 200 OK\r\n\r\nuntil close", SB_LOAD_AGAIN, 200, false},
        {"HTTP/2 200\r\n\r\n", SB_LOAD_ERROR, 0, false},
        {"HTTP/1.1 2x0 OK\r\n\r\n", SB_LOAD_ERROR, 0, false},
        {"HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", SB_LOAD_ERROR, 200, true},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", SB_LOAD_ERROR, 200, true},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXX", SB_LOAD_ERROR, 200, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (int bytewise = 0; bytewise < 2; bytewise++) {
            struct sb_load_resp r;
            sb_load_resp_reset(&r, false);
            size_t left = 0;
            enum sb_load_parse p = feed(&r, cases[i].text, bytewise, &left);
            CHECK_INT(p, cases[i].want);
            if (p != cases[i].want)
                fprintf(stderr, "  case %zu (bytewise %d)\n", i, bytewise);
            if (cases[i].want != SB_LOAD_ERROR) {
                CHECK_INT(r.status, cases[i].status);
                CHECK_INT(r.keep_alive, cases[i].keep_alive);
            }
            if (p == SB_LOAD_DONE)
                CHECK_INT(left, 0);
        }
    }

    /* Read-until-close body ends at EOF; a cut Content-Length body is an error. */
    struct sb_load_resp r;
    size_t left;
    sb_load_resp_reset(&r, false);
    CHECK_INT(feed(&r, "HTTP/1.1 200 OK\r\n\r\nabc", false, &left), SB_LOAD_AGAIN);
    CHECK_INT(sb_load_resp_eof(&r), SB_LOAD_DONE);
    CHECK_INT(r.body_bytes, 3);
    sb_load_resp_reset(&r, false);
    CHECK_INT(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", false, &left), SB_LOAD_AGAIN);
    CHECK_INT(sb_load_resp_eof(&r), SB_LOAD_ERROR);
    /* HEAD: no body whatever Content-Length says. */
    sb_load_resp_reset(&r, true);
    CHECK_INT(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", false, &left), SB_LOAD_DONE);
    /* A second response after the first stays in the buffer. */
    sb_load_resp_reset(&r, false);
    CHECK_INT(feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1", false, &left), SB_LOAD_DONE);
    CHECK_INT(left, 8);

    struct sb_load_config cfg;
    memset(&cfg, 0, sizeof cfg);
    CHECK_INT(sb_load_parse_url("http://127.0.0.1:8080/v1/chat/completions", &cfg), 0);
    CHECK_STR(cfg.host, "127.0.0.1");
    CHECK_INT(cfg.port, 8080);
    CHECK_STR(cfg.path, "/v1/chat/completions");
    CHECK_INT(sb_load_parse_url("http://[::1]:9/x", &cfg), 0);
    CHECK_STR(cfg.host, "::1");
    CHECK_INT(cfg.port, 9);
    CHECK_INT(sb_load_parse_url("http://localhost", &cfg), 0);
    CHECK_INT(cfg.port, 80);
    CHECK_STR(cfg.path, "/");
    CHECK(sb_load_parse_url("https://x/", &cfg) < 0);
    CHECK(sb_load_parse_url("http://h:0/", &cfg) < 0);
    CHECK(sb_load_parse_url("http://h:99999/", &cfg) < 0);
    CHECK(sb_load_parse_url("http://:80/", &cfg) < 0);

    uint64_t s[1000];
    for (int i = 0; i < 1000; i++)
        s[i] = (uint64_t)i + 1;
    CHECK_INT(sb_load_percentile(s, 1000, 50), 500);
    CHECK_INT(sb_load_percentile(s, 1000, 99), 990);
    CHECK_INT(sb_load_percentile(s, 1000, 99.9), 999);
    CHECK_INT(sb_load_percentile(s, 1000, 100), 1000);
    CHECK_INT(sb_load_percentile(s, 1, 99), 1);
    CHECK_INT(sb_load_percentile(s, 0, 50), 0);
    return sb_test_finish("load");
}
