/*
 * Unit test of sb-stream's pieces that need no network (tests/bench/
 * sb_stream.h): SSE event splitting across arbitrary read boundaries, what
 * counts as a content delta in each API style, the HTTP response decoder, and
 * the timing maths (TTFT from the read that completes the first delta, gaps
 * between deltas, percentiles).
 */
#include <errno.h>
#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "sb_stream.h"
#include "sb_test.h"

/* ---- an event recorder ------------------------------------------------------------------ */

#define MAX_EVENTS 32

struct recorder {
    int n;
    char type[MAX_EVENTS][64];
    char data[MAX_EVENTS][256];
    size_t len[MAX_EVENTS];
    int at[MAX_EVENTS]; /* which feed call delivered the event */
    int call;
    int stop_after; /* > 0: return -ECANCELED from that event on */
};

static int record(void *arg, const char *type, const char *data, size_t len)
{
    struct recorder *r = arg;
    if (r->n < MAX_EVENTS) {
        snprintf(r->type[r->n], sizeof r->type[r->n], "%s", type);
        snprintf(r->data[r->n], sizeof r->data[r->n], "%s", data);
        r->len[r->n] = len;
        r->at[r->n] = r->call;
    }
    r->n++;
    return r->stop_after > 0 && r->n >= r->stop_after ? -ECANCELED : 0;
}

/* Feeds text in pieces of `step` bytes (0: all at once); returns the events delivered, or an error. */
static int feed_in_steps(struct sb_stream_sse *s, struct recorder *r, const char *text, size_t step)
{
    size_t n = strlen(text), i = 0;
    int total = 0;
    if (step == 0)
        step = n ? n : 1;
    while (i < n) {
        size_t k = n - i < step ? n - i : step;
        int rc = sb_stream_sse_feed(s, text + i, k, record, r);
        if (rc < 0)
            return rc;
        total += rc;
        i += k;
        r->call++;
    }
    return total;
}

static void test_sse_split(void)
{
    /* LF, CRLF and CR line ends; event and data fields; comments; multi-line data. */
    static const char *const streams[] = {
        "data: one\n\ndata: two\n\n: comment\n\nevent: kind\ndata: three\n\n",
        "data: one\r\n\r\ndata: two\r\n\r\n: comment\r\n\r\nevent: kind\r\ndata: three\r\n\r\n",
        "data: one\r\rdata: two\r\r: comment\r\revent: kind\rdata: three\r\r",
    };
    for (size_t s = 0; s < sizeof streams / sizeof *streams; s++) {
        for (size_t step = 0; step <= 7; step++) {
            struct sb_stream_sse sse;
            struct recorder r = {0};
            sb_stream_sse_init(&sse);
            CHECK_INT(feed_in_steps(&sse, &r, streams[s], step), 3);
            CHECK_INT(r.n, 3);
            CHECK_STR(r.data[0], "one");
            CHECK_STR(r.type[0], "");
            CHECK_STR(r.data[1], "two");
            CHECK_STR(r.data[2], "three");
            CHECK_STR(r.type[2], "kind");
            CHECK_INT(r.len[2], 5);
            sb_stream_sse_free(&sse);
        }
    }

    /* Multi-line data joins with LF; "data" alone is an empty line; no space after the colon. */
    struct sb_stream_sse sse;
    struct recorder r = {0};
    sb_stream_sse_init(&sse);
    CHECK_INT(feed_in_steps(&sse, &r, "data:a\ndata\ndata:  b\n\n", 0), 1);
    CHECK_STR(r.data[0], "a\n\n b");
    CHECK_INT(r.len[0], 5);
    /* An event with no data is not dispatched, and its type does not leak into the next. */
    memset(&r, 0, sizeof r);
    CHECK_INT(feed_in_steps(&sse, &r, "event: ping\n\ndata: x\n\nid: 7\nretry: 5\ndata: y\n\n", 0), 2);
    CHECK_STR(r.type[0], "");
    CHECK_STR(r.data[0], "x");
    CHECK_STR(r.data[1], "y");
    /* Partial events wait for the rest. */
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_stream_sse_feed(&sse, "data: p", 7, record, &r), 0);
    CHECK_INT(sb_stream_sse_feed(&sse, "art\n", 4, record, &r), 0);
    CHECK_INT(sb_stream_sse_feed(&sse, "\ndata: q\n\ndata: r", 17, record, &r), 2);
    CHECK_STR(r.data[0], "part");
    CHECK_STR(r.data[1], "q");
    /* reset drops the partial "r" (a new response on the connection). */
    sb_stream_sse_reset(&sse);
    CHECK_INT(sb_stream_sse_feed(&sse, "\ndata: s\n\n", 10, record, &r), 1);
    CHECK_STR(r.data[2], "s");
    sb_stream_sse_free(&sse);

    /* The event is delivered by the call that holds its terminating blank line: a
     * CRLF split between two reads completes at the CR, the LF after it is nothing. */
    sb_stream_sse_init(&sse);
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_stream_sse_feed(&sse, "data: x\r\n\r", 10, record, &r), 1);
    CHECK_INT(sb_stream_sse_feed(&sse, "\n", 1, record, &r), 0);
    CHECK_INT(sb_stream_sse_feed(&sse, "data: y\r\n", 9, record, &r), 0);
    CHECK_INT(sb_stream_sse_feed(&sse, "\r\n", 2, record, &r), 1);
    CHECK_INT(r.n, 2);
    sb_stream_sse_free(&sse);

    /* Byte by byte, each event arrives exactly at its blank line's byte. */
    sb_stream_sse_init(&sse);
    memset(&r, 0, sizeof r);
    const char *text = "data: a\n\nevent: e\ndata: bb\n\n";
    CHECK_INT(feed_in_steps(&sse, &r, text, 1), 2);
    CHECK_INT(r.at[0], 8);
    CHECK_INT(r.at[1], (int)strlen(text) - 1);
    sb_stream_sse_free(&sse);

    /* Limits and a callback that stops. */
    sb_stream_sse_init(&sse);
    sse.max_line = 8;
    memset(&r, 0, sizeof r);
    CHECK_INT(sb_stream_sse_feed(&sse, "data: 0123456789\n\n", 18, record, &r), -EMSGSIZE);
    sb_stream_sse_free(&sse);
    sb_stream_sse_init(&sse);
    sse.max_line = 8;
    memset(&r, 0, sizeof r);
    CHECK_INT(feed_in_steps(&sse, &r, "data: 0123\ndata: 4567\n\n", 0), -EMSGSIZE);
    sb_stream_sse_free(&sse);
    sb_stream_sse_init(&sse);
    memset(&r, 0, sizeof r);
    r.stop_after = 1;
    CHECK_INT(sb_stream_sse_feed(&sse, "data: a\n\ndata: b\n\n", 18, record, &r), -ECANCELED);
    CHECK_INT(r.n, 1);
    sb_stream_sse_free(&sse);
}

static enum sb_stream_event_kind cls(enum sb_stream_style st, const char *type, const char *data)
{
    return sb_stream_classify(st, type, data, strlen(data));
}

static void test_classify(void)
{
    enum sb_stream_style st;
    CHECK_INT(sb_stream_style_parse("chat", &st), 0);
    CHECK_INT(st, SB_STREAM_CHAT);
    CHECK_INT(sb_stream_style_parse("gemini", &st), 0);
    CHECK_INT(st, SB_STREAM_GEMINI);
    CHECK_INT(sb_stream_style_parse("claude", &st), -EINVAL);
    CHECK_STR(sb_stream_style_name(SB_STREAM_MESSAGES), "messages");

    const enum sb_stream_style C = SB_STREAM_CHAT, R = SB_STREAM_RESPONSES, M = SB_STREAM_MESSAGES,
                               G = SB_STREAM_GEMINI;
    /* Chat: the role delta carries content "" and is not a token. */
    CHECK_INT(cls(C, "", "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"),
              SB_STREAM_EV_OTHER);
    CHECK_INT(cls(C, "", "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"You\"}}]}"), SB_STREAM_EV_DELTA);
    CHECK_INT(cls(C, "", "{\"choices\":[{\"index\":0,\"delta\":{\"content\":null}}]}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(C, "", "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(C, "", "{\"choices\":[],\"usage\":{\"total_tokens\":3}}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(C, "", "[DONE]"), SB_STREAM_EV_END);
    CHECK_INT(cls(C, "", "{\"error\":{\"message\":\"boom\"}}"), SB_STREAM_EV_ERROR);
    CHECK_INT(cls(C, "", "not json"), SB_STREAM_EV_ERROR);
    CHECK_INT(cls(C, "", "[1]"), SB_STREAM_EV_ERROR);

    /* Responses: the JSON type decides; the event field stands in when it is absent. */
    CHECK_INT(cls(R, "response.output_text.delta", "{\"type\":\"response.output_text.delta\",\"delta\":\" a\"}"),
              SB_STREAM_EV_DELTA);
    CHECK_INT(cls(R, "response.output_text.delta", "{\"delta\":\" a\"}"), SB_STREAM_EV_DELTA);
    CHECK_INT(cls(R, "", "{\"type\":\"response.output_text.delta\",\"delta\":\"\"}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(R, "", "{\"type\":\"response.reasoning_text.delta\",\"delta\":\"x\"}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(R, "", "{\"type\":\"response.created\",\"response\":{}}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(R, "", "{\"type\":\"response.completed\",\"response\":{}}"), SB_STREAM_EV_END);
    CHECK_INT(cls(R, "", "{\"type\":\"response.incomplete\",\"response\":{}}"), SB_STREAM_EV_END);
    CHECK_INT(cls(R, "", "{\"type\":\"response.failed\",\"response\":{}}"), SB_STREAM_EV_ERROR);
    CHECK_INT(cls(R, "error", "{\"type\":\"error\",\"message\":\"x\"}"), SB_STREAM_EV_ERROR);

    /* Messages: text deltas only. */
    CHECK_INT(
        cls(M, "content_block_delta",
            "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"You\"}}"),
        SB_STREAM_EV_DELTA);
    CHECK_INT(
        cls(M, "", "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"x\"}}"),
        SB_STREAM_EV_OTHER);
    CHECK_INT(cls(M, "",
                  "{\"type\":\"content_block_delta\",\"delta\":{\"type\":\"input_json_delta\","
                  "\"partial_json\":\"{\"}}"),
              SB_STREAM_EV_OTHER);
    CHECK_INT(cls(M, "ping", "{\"type\":\"ping\"}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(M, "", "{\"type\":\"message_stop\"}"), SB_STREAM_EV_END);
    CHECK_INT(cls(M, "error", "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}"), SB_STREAM_EV_ERROR);

    /* Gemini: any non-thought part with text in the first candidate. */
    CHECK_INT(cls(G, "", "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"You\"}],\"role\":\"model\"}}]}"),
              SB_STREAM_EV_DELTA);
    CHECK_INT(
        cls(G, "", "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"hm\",\"thought\":true},{\"text\":\"\"}]}}]}"),
        SB_STREAM_EV_OTHER);
    CHECK_INT(cls(G, "",
                  "{\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\"}},"
                  "{\"text\":\"x\"}]}}]}"),
              SB_STREAM_EV_DELTA);
    CHECK_INT(cls(G, "", "{\"candidates\":[{\"finishReason\":\"STOP\"}],\"usageMetadata\":{}}"), SB_STREAM_EV_OTHER);
    CHECK_INT(cls(G, "", "{\"error\":{\"code\":429}}"), SB_STREAM_EV_ERROR);
}

static enum sb_stream_parse http_feed(struct sb_stream_resp *r, const char *text, size_t step, struct evbuffer *body,
                                      size_t *left)
{
    struct evbuffer *in = evbuffer_new();
    enum sb_stream_parse p = SB_STREAM_AGAIN;
    size_t n = strlen(text);
    if (step == 0)
        step = n;
    for (size_t i = 0; i < n && p == SB_STREAM_AGAIN; i += step) {
        evbuffer_add(in, text + i, n - i < step ? n - i : step);
        p = sb_stream_resp_feed(r, in, body);
    }
    *left = evbuffer_get_length(in);
    evbuffer_free(in);
    return p;
}

static void test_http(void)
{
    static const struct {
        const char *text;
        enum sb_stream_parse want;
        int status;
        bool keep_alive, event_stream;
        const char *body;
    } cases[] = {
        {"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nTransfer-Encoding: chunked\r\n\r\n"
         "9\r\ndata: a\n\n\r\n9;x=y\r\ndata: b\n\n\r\n0\r\nT: 1\r\n\r\n",
         SB_STREAM_DONE, 200, true, true, "data: a\n\ndata: b\n\n"},
        {"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", SB_STREAM_DONE,
         400, true, false, "{}"},
        {"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 3\r\nConnection: close\r\n\r\nabc",
         SB_STREAM_DONE, 200, false, false, "abc"},
        {"HTTP/1.0 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n", SB_STREAM_AGAIN, 200, false, true,
         "data: x\n\n"},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\nabc\n0\n\n", SB_STREAM_DONE, 200, true, false, "abc"},
        {"HTTP/2 200\r\n\r\n", SB_STREAM_ERROR, 0, false, false, ""},
        {"HTTP/1.1 20 OK\r\n\r\n", SB_STREAM_ERROR, 0, false, false, ""},
        {"HTTP/1.1 200 OK\r\nContent-Length: x\r\n\r\n", SB_STREAM_ERROR, 200, true, false, ""},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", SB_STREAM_ERROR, 200, true, false, ""},
        {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabXY", SB_STREAM_ERROR, 200, true, false, "ab"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        for (size_t step = 0; step <= 3; step++) {
            struct sb_stream_resp r;
            struct evbuffer *body = evbuffer_new();
            size_t left = 0;
            sb_stream_resp_reset(&r);
            enum sb_stream_parse p = http_feed(&r, cases[i].text, step, body, &left);
            CHECK_INT(p, cases[i].want);
            if (p != cases[i].want)
                fprintf(stderr, "  http case %zu, step %zu\n", i, step);
            if (cases[i].want != SB_STREAM_ERROR) {
                CHECK_INT(r.status, cases[i].status);
                CHECK_INT(r.keep_alive, cases[i].keep_alive);
                CHECK_INT(r.event_stream, cases[i].event_stream);
                size_t n = evbuffer_get_length(body);
                char *got = calloc(1, n + 1);
                evbuffer_copyout(body, got, n);
                CHECK_STR(got, cases[i].body);
                free(got);
            }
            if (p == SB_STREAM_DONE)
                CHECK_INT(left, 0);
            evbuffer_free(body);
        }
    }
    /* A body that runs to close ends at EOF; a cut Content-Length body does not. */
    struct sb_stream_resp r;
    struct evbuffer *body = evbuffer_new();
    size_t left;
    sb_stream_resp_reset(&r);
    CHECK_INT(http_feed(&r, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nabc", 0, body, &left), SB_STREAM_AGAIN);
    CHECK_INT(sb_stream_resp_eof(&r), SB_STREAM_DONE);
    sb_stream_resp_reset(&r);
    CHECK_INT(http_feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\nabc", 0, body, &left), SB_STREAM_AGAIN);
    CHECK_INT(sb_stream_resp_eof(&r), SB_STREAM_ERROR);
    /* The next response on a keep-alive connection stays in the input. */
    sb_stream_resp_reset(&r);
    CHECK_INT(http_feed(&r, "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1", 0, body, &left), SB_STREAM_DONE);
    CHECK_INT(left, 8);
    evbuffer_free(body);
}

static void test_summary(void)
{
    struct sb_stream_samples s = {0};
    struct sb_stream_summary sum;
    sb_stream_summarise(&s, &sum);
    CHECK_INT(sum.n, 0);
    CHECK_INT(sum.p99, 0);
    for (int i = 100; i >= 1; i--)
        sb_stream_samples_push(&s, (uint64_t)i * 10);
    sb_stream_summarise(&s, &sum);
    CHECK_INT(sum.n, 100);
    CHECK_INT(sum.min, 10);
    CHECK_INT(sum.p50, 500);
    CHECK_INT(sum.p90, 900);
    CHECK_INT(sum.p99, 990);
    CHECK_INT(sum.max, 1000);
    CHECK(sum.mean > 504.9 && sum.mean < 505.1);
    struct sb_stream_samples t = {0};
    sb_stream_samples_push(&t, 7);
    sb_stream_samples_append(&t, &s);
    CHECK_INT(t.n, 101);
    sb_stream_summarise(&t, &sum);
    CHECK_INT(sum.min, 7);
    CHECK_INT(sum.p50, 500);
    sb_stream_samples_free(&s);
    sb_stream_samples_free(&t);
    CHECK(s.v == NULL && s.n == 0);

    struct sb_stream_timing tm = {0};
    sb_stream_timing_start(&tm, 1000);
    CHECK_INT(sb_stream_timing_ttft(&tm), 0);
    sb_stream_timing_delta(&tm, 21000);
    sb_stream_timing_delta(&tm, 41000);
    sb_stream_timing_delta(&tm, 61500);
    CHECK_INT(sb_stream_timing_ttft(&tm), 20000);
    CHECK_INT(tm.deltas, 3);
    CHECK_INT(tm.gaps.n, 2);
    CHECK_INT(tm.gaps.v[0], 20000);
    CHECK_INT(tm.gaps.v[1], 20500);
    /* Two deltas in one read: a zero gap. A clock that went backwards: clamped to 0. */
    sb_stream_timing_delta(&tm, 61500);
    sb_stream_timing_delta(&tm, 61000);
    CHECK_INT(tm.gaps.v[2], 0);
    CHECK_INT(tm.gaps.v[3], 0);
    /* A new response on the connection starts afresh. */
    sb_stream_timing_start(&tm, 100000);
    CHECK_INT(tm.deltas, 0);
    CHECK_INT(tm.gaps.n, 0);
    sb_stream_timing_delta(&tm, 100250);
    CHECK_INT(sb_stream_timing_ttft(&tm), 250);
    sb_stream_timing_free(&tm);
}

/* ---- end to end: reads -> HTTP -> SSE -> deltas -> timing, as the engine does -------------------------- */

struct pipe_state {
    enum sb_stream_style style;
    struct sb_stream_timing timing;
    int64_t now;
    bool saw_end;
};

static int pipe_event(void *arg, const char *type, const char *data, size_t len)
{
    struct pipe_state *ps = arg;
    enum sb_stream_event_kind k = sb_stream_classify(ps->style, type, data, len);
    if (k == SB_STREAM_EV_DELTA)
        sb_stream_timing_delta(&ps->timing, ps->now);
    else if (k == SB_STREAM_EV_END)
        ps->saw_end = true;
    return 0;
}

/* Each read: its time and its bytes. */
struct read_at {
    int64_t t;
    const char *bytes;
};

static enum sb_stream_parse run_reads(struct pipe_state *ps, const struct read_at *reads, size_t n)
{
    struct sb_stream_resp resp;
    struct sb_stream_sse sse;
    struct evbuffer *in = evbuffer_new(), *body = evbuffer_new();
    sb_stream_resp_reset(&resp);
    sb_stream_sse_init(&sse);
    sb_stream_timing_start(&ps->timing, 0);
    enum sb_stream_parse p = SB_STREAM_AGAIN;
    for (size_t i = 0; i < n && p == SB_STREAM_AGAIN; i++) {
        ps->now = reads[i].t;
        evbuffer_add(in, reads[i].bytes, strlen(reads[i].bytes));
        p = sb_stream_resp_feed(&resp, in, body);
        size_t len = evbuffer_get_length(body);
        char *flat = malloc(len + 1);
        evbuffer_remove(body, flat, len);
        if (sb_stream_sse_feed(&sse, flat, len, pipe_event, ps) < 0)
            p = SB_STREAM_ERROR;
        free(flat);
    }
    sb_stream_sse_free(&sse);
    evbuffer_free(in);
    evbuffer_free(body);
    return p;
}

static void test_pipeline(void)
{
    /* A chat stream: role delta, three words, finish, [DONE]; the reads cut
     * events, chunks and lines at awkward places. */
    const struct read_at chat[] = {
        {100, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"},
        {150, "41\r\ndata: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n\r\n"},
        /* first word: the whole event but its blank line */
        {20000, "31\r\ndata: {\"choices\":[{\"delta\":{\"content\":\"You\"}}]}\n"},
        /* its blank line ends the chunk: TTFT is this read's time */
        {20400, "\n\r\n"},
        /* two words in one read */
        {40000, "34\r\ndata: {\"choices\":[{\"delta\":{\"content\":\" said:\"}}]}\n\n\r\n"
                "31\r\ndata: {\"choices\":[{\"delta\":{\"content\":\" hi\"}}]}\n\n\r\n"},
        {60000, "39\r\ndata: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n\r\n"},
        {60100, "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n"},
    };
    struct pipe_state ps = {.style = SB_STREAM_CHAT};
    CHECK_INT(run_reads(&ps, chat, sizeof chat / sizeof *chat), SB_STREAM_DONE);
    CHECK_INT(ps.timing.deltas, 3);
    CHECK_INT(sb_stream_timing_ttft(&ps.timing), 20400);
    CHECK_INT(ps.timing.gaps.n, 2);
    CHECK_INT(ps.timing.gaps.v[0], 40000 - 20400);
    CHECK_INT(ps.timing.gaps.v[1], 0);
    CHECK(ps.saw_end);
    sb_stream_timing_free(&ps.timing);

    /* Gemini's CRLF CRLF separator, a read that ends between CR and LF, Content-Length body. */
    const struct read_at gem[] = {
        {0, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: 129\r\n\r\n"
            "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"You\"}]}}]}\r\n\r"},
        {5000, "\ndata: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\" a\"}]}}]}\r\n\r\n"},
    };
    ps = (struct pipe_state){.style = SB_STREAM_GEMINI};
    CHECK_INT(run_reads(&ps, gem, sizeof gem / sizeof *gem), SB_STREAM_DONE);
    CHECK_INT(ps.timing.deltas, 2);
    CHECK_INT(sb_stream_timing_ttft(&ps.timing), 0);
    CHECK_INT(ps.timing.gaps.v[0], 5000);
    CHECK(!ps.saw_end);
    sb_stream_timing_free(&ps.timing);

    /* Responses: event lines before data, the delta cut inside its JSON. */
    const struct read_at resp[] = {
        {0, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            "event: response.created\ndata: {\"type\":\"response.created\"}\n\n"
            "event: response.output_text.delta\ndata: {\"type\":\"response.output_"},
        {700, "text.delta\",\"delta\":\"You\"}\n\nevent: response.completed\n"},
        {900, "data: {\"type\":\"response.completed\"}\n\n"},
    };
    ps = (struct pipe_state){.style = SB_STREAM_RESPONSES};
    CHECK_INT(run_reads(&ps, resp, sizeof resp / sizeof *resp), SB_STREAM_AGAIN); /* runs to close */
    CHECK_INT(ps.timing.deltas, 1);
    CHECK_INT(sb_stream_timing_ttft(&ps.timing), 700);
    CHECK(ps.saw_end);
    sb_stream_timing_free(&ps.timing);
}

int main(void)
{
    test_sse_split();
    test_classify();
    test_http();
    test_summary();
    test_pipeline();
    return sb_test_finish("bench_stream");
}
