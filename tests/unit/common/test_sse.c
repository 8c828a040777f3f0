/*
 * Unit test of sb_sse: the event-stream reader (line ends of every kind and
 * split anywhere, fields, comments, the size limit, stop, the end-of-stream
 * flush, the LF-only reading) and the writer (the exact bytes the frontend and
 * the emulator send, and that the reader reads them back).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "sb_sse.h"
#include "sb_test.h"

/* ---- an event recorder ------------------------------------------------------------------ */

#define MAX_EVENTS 32

struct recorder {
    int n;
    char event[MAX_EVENTS][64];
    char data[MAX_EVENTS][256];
    size_t len[MAX_EVENTS];
    int at[MAX_EVENTS]; /* which feed call delivered the event */
    int call;
    int stop_at; /* > 0: answer `stop_rc` to that event (1-based) */
    int stop_rc;
};

static int record(void *arg, const char *event, const char *data, size_t len)
{
    struct recorder *r = arg;
    if (r->n < MAX_EVENTS) {
        snprintf(r->event[r->n], sizeof r->event[r->n], "%s", event);
        memcpy(r->data[r->n], data, len < sizeof r->data[r->n] ? len : sizeof r->data[r->n] - 1);
        r->data[r->n][len < sizeof r->data[r->n] ? len : sizeof r->data[r->n] - 1] = '\0';
        r->len[r->n] = len;
        r->at[r->n] = r->call;
    }
    r->n++;
    return r->stop_at > 0 && r->n == r->stop_at ? r->stop_rc : 0;
}

/* Feeds text in pieces of `step` bytes (0: all at once); the events delivered, or an error. */
static int feed_in_steps(sb_sse_reader_t *s, struct recorder *r, const char *text, size_t n, size_t step)
{
    size_t i = 0;
    int total = 0;
    if (step == 0)
        step = n ? n : 1;
    while (i < n) {
        size_t k = n - i < step ? n - i : step;
        int rc = sb_sse_feed(s, text + i, k, record, r);
        if (rc < 0)
            return rc;
        total += rc;
        i += k;
        r->call++;
    }
    return total;
}

static void test_split(void)
{
    /* LF, CRLF and CR line ends; event and data fields; comments; multi-line data. */
    static const char *const streams[] = {
        "data: one\n\ndata: two\n\n: comment\n\nevent: kind\ndata: three\n\n",
        "data: one\r\n\r\ndata: two\r\n\r\n: comment\r\n\r\nevent: kind\r\ndata: three\r\n\r\n",
        "data: one\r\rdata: two\r\r: comment\r\revent: kind\rdata: three\r\r",
    };
    for (size_t s = 0; s < sizeof streams / sizeof *streams; s++) {
        for (size_t step = 0; step <= 7; step++) {
            sb_sse_reader_t sse;
            struct recorder r = {0};
            sb_sse_init(&sse, 0, 0);
            CHECK_INT(feed_in_steps(&sse, &r, streams[s], strlen(streams[s]), step), 3);
            CHECK_INT(r.n, 3);
            CHECK_STR(r.data[0], "one");
            CHECK_STR(r.event[0], "");
            CHECK_STR(r.data[1], "two");
            CHECK_STR(r.data[2], "three");
            CHECK_STR(r.event[2], "kind");
            CHECK_INT(r.len[2], 5);
            CHECK_INT(sb_sse_finish(&sse, record, &r), 0);
            sb_sse_free(&sse);
        }
    }

    sb_sse_reader_t sse;
    struct recorder r = {0};
    sb_sse_init(&sse, 0, 0);
    /* Multi-line data joins with LF; "data" alone is an empty line; one space goes after the colon. */
    CHECK_INT(feed_in_steps(&sse, &r, "data:a\ndata\ndata:  b\n\n", 22, 0), 1);
    CHECK_STR(r.data[0], "a\n\n b");
    CHECK_INT(r.len[0], 5);
    /* An event without data is not dispatched, and its name does not leak into the next. */
    memset(&r, 0, sizeof r);
    const char *t = "event: ping\n\ndata: x\n\nid: 7\nretry: 5\ndata: y\n\n";
    CHECK_INT(feed_in_steps(&sse, &r, t, strlen(t), 0), 2);
    CHECK_STR(r.event[0], "");
    CHECK_STR(r.data[0], "x");
    CHECK_STR(r.data[1], "y");
    /* An empty data field is an event with empty data: the caller decides. */
    memset(&r, 0, sizeof r);
    CHECK_INT(feed_in_steps(&sse, &r, "data:\n\ndata\n\n", 13, 0), 2);
    CHECK_INT(r.len[0], 0);
    CHECK_INT(r.len[1], 0);
    /* Data may hold NUL bytes; field names are exact ("data " or "Data" is another field). */
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_sse_feed(&sse, "data: a\0b\nData: c\ndata : d\n\n", 28, record, &r), 1);
    CHECK_INT(r.len[0], 3);
    CHECK(!memcmp(r.data[0], "a\0b", 3));
    /* Partial events wait for the rest. */
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_sse_feed(&sse, "data: p", 7, record, &r), 0);
    CHECK_INT(sb_sse_feed(&sse, "art\n", 4, record, &r), 0);
    CHECK_INT(sb_sse_feed(&sse, "\ndata: q\n\ndata: r", 17, record, &r), 2);
    CHECK_STR(r.data[0], "part");
    CHECK_STR(r.data[1], "q");
    /* reset drops the partial "r" (a new stream on the same reader). */
    sb_sse_reset(&sse);
    CHECK_INT(sb_sse_feed(&sse, "\ndata: s\n\n", 10, record, &r), 1);
    CHECK_STR(r.data[2], "s");
    sb_sse_free(&sse);

    /* The event is delivered by the call that holds its blank line: a CRLF
     * split between two reads ends at the CR, the LF after it is nothing. */
    sb_sse_init(&sse, 0, 0);
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_sse_feed(&sse, "data: x\r\n\r", 10, record, &r), 1);
    CHECK_INT(sb_sse_feed(&sse, "\n", 1, record, &r), 0);
    CHECK_INT(sb_sse_feed(&sse, "data: y\r\n", 9, record, &r), 0);
    CHECK_INT(sb_sse_feed(&sse, "\r\n", 2, record, &r), 1);
    /* ... but a CR then CR is two line ends. */
    CHECK_INT(sb_sse_feed(&sse, "data: z\r", 8, record, &r), 0);
    CHECK_INT(sb_sse_feed(&sse, "\r", 1, record, &r), 1);
    CHECK_INT(r.n, 3);
    CHECK_STR(r.data[2], "z");
    sb_sse_free(&sse);

    /* Byte by byte, each event arrives exactly at its blank line's byte. */
    sb_sse_init(&sse, 0, 0);
    memset(&r, 0, sizeof r);
    const char *text = "data: a\n\nevent: e\ndata: bb\n\n";
    CHECK_INT(feed_in_steps(&sse, &r, text, strlen(text), 1), 2);
    CHECK_INT(r.at[0], 8);
    CHECK_INT(r.at[1], (int)strlen(text) - 1);
    CHECK_STR(r.event[1], "e");
    sb_sse_free(&sse);
}

static void test_limits_and_stop(void)
{
    sb_sse_reader_t sse;
    struct recorder r = {0};
    /* A line over the limit, in one chunk or growing over several. */
    sb_sse_init(&sse, 8, 0);
    CHECK_INT(sb_sse_feed(&sse, "data: 0123456789\n\n", 18, record, &r), -E2BIG);
    sb_sse_free(&sse);
    sb_sse_init(&sse, 8, 0);
    CHECK_INT(feed_in_steps(&sse, &r, "data: 0123456789", 16, 3), -E2BIG);
    sb_sse_free(&sse);
    /* A line exactly at the limit is fine. */
    sb_sse_init(&sse, 8, 0);
    CHECK_INT(feed_in_steps(&sse, &r, "data:123\n\n", 10, 2), 1);
    CHECK_STR(r.data[0], "123");
    sb_sse_free(&sse);
    /* Joined data over the limit: 5 + LF + 4 fits 10, one more byte does not. */
    memset(&r, 0, sizeof r);
    sb_sse_init(&sse, 10, 0);
    CHECK_INT(feed_in_steps(&sse, &r, "data:01234\ndata:5678\n\n", 22, 0), 1);
    CHECK_INT(r.len[0], 10);
    CHECK_INT(feed_in_steps(&sse, &r, "data:01234\ndata:5678\ndata:\n\n", 29, 0), -E2BIG);
    sb_sse_free(&sse);

    /* A negative answer comes back at once; SB_SSE_STOP ends the reading. */
    memset(&r, 0, sizeof r);
    sb_sse_init(&sse, 0, 0);
    r.stop_at = 1;
    r.stop_rc = -ECANCELED;
    CHECK_INT(sb_sse_feed(&sse, "data: a\n\ndata: b\n\n", 18, record, &r), -ECANCELED);
    CHECK_INT(r.n, 1);
    sb_sse_free(&sse);
    memset(&r, 0, sizeof r);
    sb_sse_init(&sse, 0, 0);
    r.stop_at = 1;
    r.stop_rc = SB_SSE_STOP;
    CHECK_INT(sb_sse_feed(&sse, "data: a\n\ndata: b\n\ndata: c", 25, record, &r), 1);
    CHECK_INT(sb_sse_feed(&sse, "\n\ndata: d\n\n", 11, record, &r), 0);
    CHECK_INT(sb_sse_finish(&sse, record, &r), 0);
    CHECK_INT(r.n, 1);
    /* finish leaves the reader as reset: it reads again. */
    CHECK_INT(sb_sse_feed(&sse, "data: e\n\n", 9, record, &r), 1);
    CHECK_STR(r.data[1], "e");
    sb_sse_free(&sse);
}

static void test_finish(void)
{
    sb_sse_reader_t sse;
    struct recorder r = {0};
    sb_sse_init(&sse, 0, 0);
    /* A last line without its end, a last event without its blank line, still count. */
    CHECK_INT(sb_sse_feed(&sse, "data: a\n\nevent: e\ndata: b", 25, record, &r), 1);
    CHECK_INT(sb_sse_finish(&sse, record, &r), 1);
    CHECK_INT(r.n, 2);
    CHECK_STR(r.event[1], "e");
    CHECK_STR(r.data[1], "b");
    /* Nothing pending: nothing happens. */
    CHECK_INT(sb_sse_finish(&sse, record, &r), 0);
    CHECK_INT(sb_sse_feed(&sse, "data: c\n", 8, record, &r), 0);
    CHECK_INT(sb_sse_finish(&sse, record, &r), 1);
    CHECK_STR(r.data[2], "c");
    /* A comment or a name alone is no event. */
    CHECK_INT(sb_sse_feed(&sse, ": hi\nevent: x", 13, record, &r), 0);
    CHECK_INT(sb_sse_finish(&sse, record, &r), 0);
    CHECK_INT(r.n, 3);
    /* The flushed line obeys the limit too, and the callback's answer comes back. */
    sb_sse_free(&sse);
    sb_sse_init(&sse, 4, 0);
    CHECK_INT(sb_sse_feed(&sse, "data", 4, record, &r), 0);
    CHECK_INT(sb_sse_finish(&sse, record, &r), 1);
    CHECK_INT(r.len[3], 0);
    r.stop_at = 5;
    r.stop_rc = -EBADMSG;
    CHECK_INT(sb_sse_feed(&sse, "data", 4, record, &r), 0);
    CHECK_INT(sb_sse_finish(&sse, record, &r), -EBADMSG);
    sb_sse_free(&sse);
}

static void test_lf_only(void)
{
    sb_sse_reader_t sse;
    struct recorder r = {0};
    sb_sse_init(&sse, 0, SB_SSE_LF_ONLY);
    /* A lone CR is line content; a CR before the LF is dropped, also across chunks and at the end. */
    CHECK_INT(feed_in_steps(&sse, &r, "data: a\rb\n\n", 11, 0), 1);
    CHECK_STR(r.data[0], "a\rb");
    for (size_t step = 1; step <= 4; step++) {
        memset(&r, 0, sizeof r);
        CHECK_INT(feed_in_steps(&sse, &r, "data: x\r\n\r\nevent: e\r\ndata: y\r\n\r\n", 32, step), 2);
        CHECK_STR(r.data[0], "x");
        CHECK_STR(r.data[1], "y");
        CHECK_STR(r.event[1], "e");
    }
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_sse_feed(&sse, "data: z\r", 8, record, &r), 0);
    CHECK_INT(sb_sse_finish(&sse, record, &r), 1);
    CHECK_STR(r.data[0], "z");
    /* "\r\r" then LF: only the last CR is dropped, so the line is "\r", not blank. */
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_sse_feed(&sse, "data: w\n\r\r\n\n", 12, record, &r), 1);
    CHECK_INT(r.n, 1);
    sb_sse_free(&sse);
}

/* ---- writing ------------------------------------------------------------------------------ */

/* The evbuffer's bytes as a new string. */
static char *ev_text(struct evbuffer *ev)
{
    size_t n = evbuffer_get_length(ev);
    char *s = malloc(n + 1);
    evbuffer_remove(ev, s, n);
    s[n] = '\0';
    return s;
}

static void test_write(void)
{
    sb_buf_t b = {0};
    struct evbuffer *ev = evbuffer_new();

    /* What fe_sse_data, fe_sse_json and fe_sse_comment wrote, and the emulator's sb_emu_reply_sse. */
    sb_sse_buf_event(&b, NULL, "[DONE]", 6, "\n");
    CHECK_STR(b.p, "data: [DONE]\n\n");
    b.len = 0;
    json_t *v = json_pack("{s:s, s:i, s:s}", "type", "message_start", "index", 0, "text", "a\nb");
    CHECK_INT(sb_sse_buf_json(&b, "message_start", v, JSON_COMPACT | JSON_PRESERVE_ORDER, "\n"), 0);
    CHECK_STR(b.p, "event: message_start\ndata: {\"type\":\"message_start\",\"index\":0,\"text\":\"a\\nb\"}\n\n");
    b.len = 0;
    CHECK_INT(sb_sse_buf_json(&b, NULL, v, JSON_COMPACT | JSON_PRESERVE_ORDER, "\r\n"), 0);
    CHECK_STR(b.p, "data: {\"type\":\"message_start\",\"index\":0,\"text\":\"a\\nb\"}\r\n\r\n");
    CHECK_INT(sb_sse_ev_json(ev, NULL, v, JSON_COMPACT | JSON_PRESERVE_ORDER, "\r\n"), 0);
    char *s = ev_text(ev);
    CHECK_STR(s, b.p);
    free(s);
    b.len = 0;
    sb_sse_buf_comment(&b, "keep-alive", "\n");
    CHECK_STR(b.p, ": keep-alive\n\n");
    sb_sse_ev_comment(ev, "keep-alive", "\r\n");
    s = ev_text(ev);
    CHECK_STR(s, ": keep-alive\r\n\r\n");
    free(s);
    sb_sse_ev_event(ev, "e", "x", 1, "\n");
    s = ev_text(ev);
    CHECK_STR(s, "event: e\ndata: x\n\n");
    free(s);

    /* Line ends in data become data lines; the reader gives them back as LF. */
    b.len = 0;
    sb_sse_buf_event(&b, "multi", "a\nb\r\nc\rd\n", 9, "\n");
    CHECK_STR(b.p, "event: multi\ndata: a\ndata: b\ndata: c\ndata: d\ndata: \n\n");
    sb_sse_reader_t sse;
    struct recorder r = {0};
    sb_sse_init(&sse, 0, 0);
    CHECK_INT(sb_sse_feed(&sse, b.p, b.len, record, &r), 1);
    CHECK_STR(r.event[0], "multi");
    CHECK_STR(r.data[0], "a\nb\nc\nd\n");
    /* Empty data is one empty data line: an event with empty data. */
    b.len = 0;
    sb_sse_buf_event(&b, NULL, "", 0, "\n");
    CHECK_STR(b.p, "data: \n\n");
    CHECK_INT(sb_sse_feed(&sse, b.p, b.len, record, &r), 1);
    CHECK_INT(r.len[1], 0);
    sb_sse_free(&sse);

    /* A value jansson cannot encode writes nothing. */
    b.len = 0;
    sb_buf_add(&b, "", 0);
    CHECK_INT(sb_sse_buf_json(&b, "x", NULL, JSON_COMPACT, "\n"), -ENOMEM);
    CHECK_INT(b.len, 0);

    json_decref(v);
    evbuffer_free(ev);
    sb_buf_free(&b);
}

int main(void)
{
    test_split();
    test_limits_and_stop();
    test_finish();
    test_lf_only();
    test_write();
    return sb_test_finish("test_sse");
}
