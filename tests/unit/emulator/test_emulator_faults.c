/*
 * Unit test of the upstream emulator's fault modes, with their delivery seen
 * from a raw socket: status and Retry-After, latency before the status line,
 * trickled pieces, a TCP reset mid-body, endless streams, context errors,
 * route faults (/_emu/faults) and the per-model counters of /_emu/stats. The
 * emulator runs in-process (sb_emu_test.h).
 */
#include "sb_emu_test.h"

/* ---- fault modes, route faults and per-model counters ------------------------------- */

/* A raw client: one HTTP/1.1 request (Connection: close) on a new socket; returns the socket or -1. */
static int raw_request(struct sb_emu *emu, const char *path, const char *body)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port_of(emu))};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    char head[512];
    int hl = snprintf(head, sizeof head,
                      "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                      path, strlen(body));
    if (connect(fd, (struct sockaddr *)&a, sizeof a) < 0 || send(fd, head, (size_t)hl, 0) != hl ||
        send(fd, body, strlen(body), 0) != (ssize_t)strlen(body)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* What a raw client read, read by read, until EOF, an error or its timeout. */
struct raw_read {
    char *data; /* NUL-terminated */
    size_t len;
    bool eof; /* the server closed cleanly (a read returned 0) */
    int err;  /* errno of the read that failed (ECONNRESET), or 0 */
    bool timed_out;
    size_t reads;       /* reads that returned data */
    size_t small_reads; /* of those after the first, the ones of at most SB_EMU_TRICKLE_BYTES (16) bytes */
    long long first_ms; /* first byte, from the call */
    long long max_gap_ms;
    long long total_ms;
};

static void raw_read_all(int fd, long timeout_ms, struct raw_read *out)
{
    memset(out, 0, sizeof *out);
    out->data = calloc(1, 1);
    out->first_ms = -1;
    int64_t t0 = sb_mono_ms(), last = t0;
    for (;;) {
        long left = timeout_ms - (long)(sb_mono_ms() - t0);
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            out->timed_out = true;
            break;
        }
        char buf[4096];
        ssize_t n = recv(fd, buf, sizeof buf, 0);
        int64_t now = sb_mono_ms();
        if (n < 0) {
            if (errno == EINTR)
                continue;
            out->err = errno;
            break;
        }
        if (n == 0) {
            out->eof = true;
            break;
        }
        if (out->reads == 0)
            out->first_ms = now - t0;
        else if (now - last > out->max_gap_ms)
            out->max_gap_ms = now - last;
        if (out->reads > 0 && n <= 16)
            out->small_reads++;
        out->reads++;
        last = now;
        append(&out->data, &out->len, buf, (size_t)n);
    }
    out->total_ms = sb_mono_ms() - t0;
}

/* The Content-Length of a raw response, or -1. */
static long long raw_content_length(const char *data)
{
    const char *h = strstr(data, "Content-Length: ");
    return h ? strtoll(h + 16, NULL, 10) : -1;
}

static const char *raw_body(const char *data)
{
    const char *b = strstr(data, "\r\n\r\n");
    return b ? b + 4 : NULL;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;
    for (const char *p = strstr(hay, needle); p; p = strstr(p + strlen(needle), needle))
        n++;
    return n;
}

/* Waits until no /v1 request is open any more (a client that left is reaped on the next loop turn). */
static long long wait_open_requests_zero(struct sb_emu *emu)
{
    long long open = -1;
    for (int i = 0; i < 200; i++) {
        open = stat_of(emu, "open_requests");
        if (open == 0)
            break;
        usleep(10000);
    }
    return open;
}

static void test_fault_status_retry_after(struct sb_emu *emu)
{
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x [[emu:status=503]] "
                         "[[emu:retry_after=7]]\"}]}",
                         NULL, NULL, 0);
    CHECK_INT(r.status, 503);
    CHECK(strstr(r.headers, "Retry-After: 7\r\n") != NULL);
    json_t *j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(json_object_get(j, "error"), "type"), "server_error");
    CHECK_STR(jstr(json_object_get(j, "error"), "message"), "emulated upstream error 503");
    CHECK(json_is_null(json_object_get(json_object_get(j, "error"), "code")));
    json_decref(j);
    resp_free(&r);

    /* 500 and 502 without retry_after: no Retry-After. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x [[emu:status=502]]\"}]}", NULL, NULL,
             0);
    CHECK_INT(r.status, 502);
    CHECK(strstr(r.headers, "Retry-After") == NULL);
    CHECK(strstr(r.headers, "HTTP/1.1 502 Bad Gateway") != NULL);
    resp_free(&r);

    /* 429: rate_limit_exceeded with Retry-After: 1. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:status=429]]\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 429);
    CHECK(strstr(r.headers, "Retry-After: 1\r\n") != NULL);
    j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(json_object_get(j, "error"), "type"), "requests");
    CHECK_STR(jstr(json_object_get(j, "error"), "code"), "rate_limit_exceeded");
    json_decref(j);
    resp_free(&r);

    /* quota: 429 insufficient_quota, no Retry-After unless asked. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:quota]]\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 429);
    CHECK(strstr(r.headers, "Retry-After") == NULL);
    j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(json_object_get(j, "error"), "type"), "insufficient_quota");
    CHECK_STR(jstr(json_object_get(j, "error"), "code"), "insufficient_quota");
    CHECK_STR(jstr(json_object_get(j, "error"), "message"),
              "You exceeded your current quota, please check your plan and billing details. For more information on "
              "this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.");
    json_decref(j);
    resp_free(&r);
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:status=429]] [[emu:quota]] "
             "[[emu:retry_after=30]]\"}]}",
             NULL, NULL, 0);
    CHECK_INT(r.status, 429);
    CHECK(strstr(r.headers, "Retry-After: 30\r\n") != NULL);
    CHECK(strstr(r.body, "\"insufficient_quota\"") != NULL);
    resp_free(&r);

    /* Bad values are refused, naming the directive. */
    long st;
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:retry_after=-1]]\"}]}", &st);
    CHECK_INT(st, 400);
    CHECK(strstr(jstr(json_object_get(j, "error"), "message"), "retry_after=-1") != NULL);
    json_decref(j);
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:trickle]]\"}]}", &st);
    CHECK_INT(st, 400);
    json_decref(j);
}

static void test_fault_latency_first_byte(struct sb_emu *emu)
{
    int fd =
        raw_request(emu, "/v1/chat/completions",
                    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"slow [[emu:latency=400]]\"}]}");
    CHECK(fd >= 0);
    /* Not even the status line before the delay is over. */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    int64_t t0 = sb_mono_ms();
    CHECK_INT(poll(&p, 1, 300), 0);
    struct raw_read rr;
    raw_read_all(fd, 3000, &rr);
    CHECK(sb_mono_ms() - t0 >= 400);
    CHECK(!strncmp(rr.data, "HTTP/1.1 200 OK\r\n", 17));
    CHECK(rr.eof);
    CHECK(strstr(rr.data, "You said: slow") != NULL);
    free(rr.data);
    close(fd);
}

static void test_fault_trickle(struct sb_emu *emu)
{
    /* A plain reply: its real Content-Length, then 16-byte pieces 20 ms apart. */
    int fd =
        raw_request(emu, "/v1/chat/completions",
                    "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"drip [[emu:trickle=20]]\"}]}");
    CHECK(fd >= 0);
    struct raw_read rr;
    raw_read_all(fd, 10000, &rr);
    close(fd);
    CHECK(rr.eof);
    const char *body = raw_body(rr.data);
    CHECK(body != NULL);
    long long cl = raw_content_length(rr.data);
    CHECK(cl > 100);
    CHECK_INT((long long)strlen(body ? body : ""), cl);
    CHECK(strstr(rr.data, "Transfer-Encoding") == NULL);
    json_t *j = json_loads(body ? body : "", 0, NULL);
    CHECK_STR(jstr(first_message(j), "content"), "You said: drip");
    json_decref(j);
    long long pieces = (cl + 15) / 16;
    /* The server cannot be faster than (pieces - 1) pauses; the client sees many small reads, never a long silence. */
    CHECK(rr.total_ms >= (pieces - 1) * 20);
    CHECK(rr.small_reads * 4 >= (size_t)pieces);
    CHECK(rr.max_gap_ms < 1000);
    free(rr.data);

    /* A stream: the SSE bytes in 16-byte pieces (one HTTP chunk each), still complete at the end. */
    int64_t t0 = sb_mono_ms();
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b "
                         "[[emu:trickle=5]]\"}]}",
                         NULL, NULL, 10000);
    long long took = sb_mono_ms() - t0;
    CHECK_INT(r.status, 200);
    CHECK(r.rc == CURLE_OK);
    CHECK(took >= (long long)(r.len / 16 - 1) * 5);
    CHECK(strstr(r.headers, "Transfer-Encoding: chunked") != NULL);
    struct streamed s;
    parse_stream(r.body, &s);
    CHECK_STR(s.content[0], "You said: a b");
    CHECK(s.done);
    json_decref(s.finish_keep);
    resp_free(&r);
}

static void test_fault_reset(struct sb_emu *emu)
{
    /* Plain: status line, headers and half the body, then a RST: ECONNRESET, never a clean EOF. */
    int fd = raw_request(emu, "/v1/chat/completions",
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"cut me [[emu:reset]]\"}]}");
    CHECK(fd >= 0);
    struct raw_read rr;
    raw_read_all(fd, 3000, &rr);
    close(fd);
    CHECK_INT(rr.err, ECONNRESET);
    CHECK(!rr.eof);
    CHECK(!strncmp(rr.data, "HTTP/1.1 200 OK\r\n", 17));
    long long cl = raw_content_length(rr.data);
    const char *body = raw_body(rr.data);
    CHECK(cl > 0 && body != NULL);
    CHECK_INT((long long)strlen(body ? body : ""), cl / 2);
    free(rr.data);

    /* With curl: a receive error, not a short-but-clean transfer. */
    struct resp r =
        http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:reset]]\"}]}", NULL, NULL, 0);
    CHECK(r.rc == CURLE_RECV_ERROR);
    resp_free(&r);

    /* Streamed: exactly N events, then the reset. */
    fd = raw_request(emu, "/v1/chat/completions",
                     "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b c d e "
                     "[[emu:reset_after=3]]\"}]}");
    CHECK(fd >= 0);
    raw_read_all(fd, 3000, &rr);
    close(fd);
    CHECK_INT(rr.err, ECONNRESET);
    CHECK_INT(count_of(rr.data, "data: "), 3);
    CHECK(strstr(rr.data, "[DONE]") == NULL);
    free(rr.data);

    /* A reset stream with chunk_delay: the events before it are paced, and the reset still comes. */
    fd = raw_request(emu, "/v1/chat/completions",
                     "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b c d e "
                     "[[emu:reset_after=4]] [[emu:chunk_delay=30]]\"}]}");
    raw_read_all(fd, 3000, &rr);
    close(fd);
    CHECK_INT(rr.err, ECONNRESET);
    CHECK_INT(count_of(rr.data, "data: "), 4);
    CHECK(rr.total_ms >= 90);
    free(rr.data);

    /* reset on a stream without reset_after: half of its events. */
    fd = raw_request(emu, "/v1/chat/completions",
                     "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b c d "
                     "[[emu:reset]]\"}]}");
    raw_read_all(fd, 3000, &rr);
    close(fd);
    CHECK_INT(rr.err, ECONNRESET);
    /* role + "You" " said:" " a" " b" " c" " d" + finish + [DONE] = 9 events: 4 before the reset. */
    CHECK_INT(count_of(rr.data, "data: "), 4);
    free(rr.data);
    CHECK_INT(wait_open_requests_zero(emu), 0);
}

static void test_fault_endless(struct sb_emu *emu)
{
    long long closed_before = stat_of(emu, "closed_by_client");
    /* chunk_delay=10: many deltas within 700 ms, and still no end when the client gives up. */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"go "
                         "[[emu:endless]] [[emu:chunk_delay=10]]\"}]}",
                         NULL, NULL, 700);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "[DONE]") == NULL);
    CHECK(strstr(r.body, "\"finish_reason\":\"") == NULL);
    CHECK(count_of(r.body, "{\"content\":\" more\"}") >= 15);
    /* The answer itself comes first: "You said: go" then " more" forever. */
    CHECK(strstr(r.body, "{\"content\":\" go\"}") != NULL);
    resp_free(&r);
    CHECK_INT(wait_open_requests_zero(emu), 0);
    CHECK_INT(stat_of(emu, "closed_by_client"), closed_before + 1);

    /* Default pacing: one delta every 50 ms, not a flood. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:endless]]\"}]}",
             NULL, NULL, 600);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    size_t more = count_of(r.body, "{\"content\":\" more\"}");
    CHECK(more >= 3 && more <= 14);
    resp_free(&r);

    /* An endless stream that the client reads for a while with a raw socket, then closes: reaped, nothing left. */
    int fd = raw_request(emu, "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"x "
                         "[[emu:endless]] [[emu:chunk_delay=0]]\"}]}");
    struct raw_read rr;
    raw_read_all(fd, 300, &rr);
    CHECK(rr.timed_out);
    CHECK(count_of(rr.data, " more") >= 20);
    free(rr.data);
    close(fd);
    CHECK_INT(wait_open_requests_zero(emu), 0);

    /* endless on a request that is not streamed: a plain reply. */
    long st;
    json_t *j =
        chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x [[emu:endless]]\"}]}", &st);
    CHECK_INT(st, 200);
    CHECK_STR(jstr(first_message(j), "content"), "You said: x");
    json_decref(j);
}

static void test_fault_context(struct sb_emu *emu)
{
    long st;
    /* 1 user message of 2 words: 4 + 2 = 6 tokens; forced, the count reads 128000 + 6. */
    json_t *j = chat(
        emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"long [[emu:context_exceeded]]\"}]}", &st);
    CHECK_INT(st, 400);
    json_t *e = json_object_get(j, "error");
    CHECK_STR(jstr(e, "message"), "This model's maximum context length is 128000 tokens. However, your messages "
                                  "resulted in 128006 tokens. Please reduce the length of the messages.");
    CHECK_STR(jstr(e, "type"), "invalid_request_error");
    CHECK_STR(jstr(e, "param"), "messages");
    CHECK_STR(jstr(e, "code"), "context_length_exceeded");
    json_decref(j);

    /* context=N in-band: an input over N tokens is refused with the real count, one within N is answered. */
    j = chat(emu,
             "{\"model\":\"m\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\","
             "\"content\":\"one two three [[emu:context=10]]\"}]}",
             &st);
    CHECK_INT(st, 400);
    CHECK_STR(jstr(json_object_get(j, "error"), "message"),
              "This model's maximum context length is 10 tokens. However, your messages resulted in 14 tokens. "
              "Please reduce the length of the messages.");
    json_decref(j);
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"one two [[emu:context=10]]\"}]}",
             &st);
    CHECK_INT(st, 200);
    CHECK_INT(usage_of(j, "prompt_tokens"), 7);
    json_decref(j);
}

/* PUT /_emu/faults/{model} with a JSON body. */
static struct resp put_fault(struct sb_emu *emu, const char *model_path, const char *body)
{
    char path[256];
    snprintf(path, sizeof path, "/_emu/faults/%s", model_path);
    return http(emu, "PUT", path, body, NULL, NULL, 0);
}

static long long model_stat(struct sb_emu *emu, const char *model, const char *field)
{
    json_t *s = get_stats(emu);
    json_t *m = json_object_get(json_object_get(s, "by_model"), model);
    long long v = m ? json_integer_value(json_object_get(m, field)) : -1;
    json_decref(s);
    return v;
}

/* One chat request for model with text; returns the status. */
static long chat_model(struct sb_emu *emu, const char *model, const char *text, char *retry_after, size_t ralen)
{
    char body[512];
    snprintf(body, sizeof body, "{\"model\":\"%s\",\"messages\":[{\"role\":\"user\",\"content\":\"%s\"}]}", model,
             text);
    struct resp r = http(emu, "POST", "/v1/chat/completions", body, NULL, NULL, 0);
    if (retry_after) {
        retry_after[0] = '\0';
        const char *h = strstr(r.headers, "Retry-After: ");
        if (h)
            snprintf(retry_after, ralen, "%.*s", (int)strcspn(h + 13, "\r\n"), h + 13);
    }
    long st = r.status;
    resp_free(&r);
    return st;
}

static void test_fault_routes(struct sb_emu *emu)
{
    struct resp r = http(emu, "DELETE", "/_emu/stats", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "GET", "/_emu/stats", NULL, NULL, NULL, 0);
    json_t *j = json_loads(r.body, 0, NULL);
    CHECK(json_is_object(json_object_get(j, "by_model")));
    CHECK_INT(json_object_size(json_object_get(j, "by_model")), 0);
    json_decref(j);
    resp_free(&r);

    /* The next 3 requests for route-a fail with 503 and Retry-After: 2, the 4th is answered. */
    r = put_fault(emu, "route-a", "{\"directives\":\"status=503 retry_after=2\",\"count\":3}");
    CHECK_INT(r.status, 200);
    j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(j, "model"), "route-a");
    CHECK_STR(jstr(j, "directives"), "status=503 retry_after=2");
    CHECK_INT(json_integer_value(json_object_get(j, "remaining")), 3);
    json_decref(j);
    resp_free(&r);
    char ra[16];
    for (int i = 0; i < 3; i++) {
        CHECK_INT(chat_model(emu, "route-a", "hi", ra, sizeof ra), 503);
        CHECK_STR(ra, "2");
        if (i == 0) {
            r = http(emu, "GET", "/_emu/faults", NULL, NULL, NULL, 0);
            j = json_loads(r.body, 0, NULL);
            json_t *f = json_object_get(json_object_get(j, "faults"), "route-a");
            CHECK_INT(json_integer_value(json_object_get(f, "remaining")), 2);
            CHECK_INT(json_integer_value(json_object_get(f, "count")), 3);
            CHECK_STR(jstr(f, "directives"), "status=503 retry_after=2");
            json_decref(j);
            resp_free(&r);
        }
    }
    CHECK_INT(chat_model(emu, "route-a", "hi", ra, sizeof ra), 200);
    CHECK_STR(ra, "");
    /* Used up: the route is gone. */
    r = http(emu, "GET", "/_emu/faults", NULL, NULL, NULL, 0);
    j = json_loads(r.body, 0, NULL);
    CHECK(json_object_get(json_object_get(j, "faults"), "route-a") == NULL);
    json_decref(j);
    resp_free(&r);
    /* Another model is untouched; the counters are exact. */
    CHECK_INT(chat_model(emu, "route-b", "hi", NULL, 0), 200);
    CHECK_INT(model_stat(emu, "route-a", "requests"), 4);
    CHECK_INT(model_stat(emu, "route-a", "faults"), 3);
    CHECK_INT(model_stat(emu, "route-b", "requests"), 1);
    CHECK_INT(model_stat(emu, "route-b", "faults"), 0);

    /* Without count: every request until cleared. */
    r = put_fault(emu, "route-c", "{\"directives\":\"status=502\"}");
    CHECK_INT(r.status, 200);
    j = json_loads(r.body, 0, NULL);
    CHECK(json_is_null(json_object_get(j, "remaining")));
    CHECK_INT(json_integer_value(json_object_get(j, "count")), 0);
    json_decref(j);
    resp_free(&r);
    for (int i = 0; i < 5; i++)
        CHECK_INT(chat_model(emu, "route-c", "hi", NULL, 0), 502);
    r = http(emu, "DELETE", "/_emu/faults/route-c", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"removed\":1") != NULL);
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-c", "hi", NULL, 0), 200);
    CHECK_INT(model_stat(emu, "route-c", "requests"), 6);
    CHECK_INT(model_stat(emu, "route-c", "faults"), 5);

    /* The request's own directives win on conflicts, and combine with the route's. */
    r = put_fault(emu, "route-d", "{\"directives\":\"status=503 latency=150\",\"count\":0}");
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-d", "[[emu:status=429]]", ra, sizeof ra), 429);
    CHECK_STR(ra, "1");
    int64_t t0 = sb_mono_ms();
    CHECK_INT(chat_model(emu, "route-d", "x", NULL, 0), 503);
    CHECK(sb_mono_ms() - t0 >= 150);
    /* PUT again replaces the route's directives. */
    r = put_fault(emu, "route-d", "{\"directives\":\"[[emu:quota]]\",\"count\":1}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"route-d\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 429);
    CHECK(strstr(r.body, "insufficient_quota") != NULL);
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-d", "x", NULL, 0), 200);

    /* A route fault that only paces or breaks the stream, and one with context=N. */
    r = put_fault(emu, "route-e", "{\"directives\":\"reset_after=2, chunk_delay=5\",\"count\":1}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    int fd =
        raw_request(emu, "/v1/chat/completions",
                    "{\"model\":\"route-e\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"}]}");
    struct raw_read rr;
    raw_read_all(fd, 3000, &rr);
    close(fd);
    CHECK_INT(rr.err, ECONNRESET);
    CHECK_INT(count_of(rr.data, "data: "), 2);
    free(rr.data);
    r = put_fault(emu, "route-f", "{\"directives\":\"context=8\"}");
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-f", "one two three four", NULL, 0), 200); /* 8 tokens */
    CHECK_INT(chat_model(emu, "route-f", "one two three four five", NULL, 0), 400);
    CHECK_INT(model_stat(emu, "route-f", "requests"), 2);
    CHECK_INT(model_stat(emu, "route-f", "faults"), 1);

    /* In-band faults count too; a request refused as invalid consumes no route fault. */
    CHECK_INT(chat_model(emu, "route-g", "[[emu:latency=1]]", NULL, 0), 200);
    CHECK_INT(model_stat(emu, "route-g", "faults"), 1);
    r = put_fault(emu, "route-h", "{\"directives\":\"status=500\",\"count\":1}");
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-h", "[[emu:bogus]]", NULL, 0), 400);
    CHECK_INT(chat_model(emu, "route-h", "x", NULL, 0), 500);
    CHECK_INT(chat_model(emu, "route-h", "x", NULL, 0), 200);
    CHECK_INT(model_stat(emu, "route-h", "requests"), 3);
    CHECK_INT(model_stat(emu, "route-h", "faults"), 1);

    /* A model name with a slash, percent-encoded or not. */
    r = put_fault(emu, "org%2Fmodel-1", "{\"directives\":\"status=504\",\"count\":1}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = put_fault(emu, "org/model-2", "{\"directives\":\"status=504\",\"count\":1}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    CHECK_INT(chat_model(emu, "org/model-1", "x", NULL, 0), 504);
    CHECK_INT(chat_model(emu, "org/model-2", "x", NULL, 0), 504);

    /* Bad requests: 400 naming the problem. */
    r = put_fault(emu, "route-x", "{\"directives\":\"status=503 bogus\"}");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "bogus") != NULL);
    resp_free(&r);
    r = put_fault(emu, "route-x", "{\"directives\":\"status=999\"}");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "status=999") != NULL);
    resp_free(&r);
    r = put_fault(emu, "route-x", "{\"directives\":\"\"}");
    CHECK_INT(r.status, 400);
    resp_free(&r);
    r = put_fault(emu, "route-x", "{\"count\":2}");
    CHECK_INT(r.status, 400);
    resp_free(&r);
    r = put_fault(emu, "route-x", "{\"directives\":\"status=503\",\"count\":-1}");
    CHECK_INT(r.status, 400);
    resp_free(&r);
    r = put_fault(emu, "route-x", "not json");
    CHECK_INT(r.status, 400);
    resp_free(&r);
    r = http(emu, "POST", "/_emu/faults/route-x", "{}", NULL, NULL, 0);
    CHECK_INT(r.status, 405);
    resp_free(&r);
    r = http(emu, "GET", "/_emu/faults/route-x", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 404);
    resp_free(&r);

    /* DELETE /_emu/faults clears every route; DELETE /_emu/stats every counter. */
    r = put_fault(emu, "route-y", "{\"directives\":\"hang\"}");
    resp_free(&r);
    r = put_fault(emu, "route-z", "{\"directives\":\"drop\"}");
    resp_free(&r);
    r = http(emu, "GET", "/_emu/faults/route-y", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"directives\":\"hang\"") != NULL);
    resp_free(&r);
    r = http(emu, "DELETE", "/_emu/faults", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "GET", "/_emu/faults", NULL, NULL, NULL, 0);
    CHECK_STR(r.body, "{\"faults\":{}}");
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-y", "x", NULL, 0), 200);
    r = http(emu, "DELETE", "/_emu/stats", NULL, NULL, NULL, 0);
    resp_free(&r);
    CHECK_INT(model_stat(emu, "route-a", "requests"), -1);

    /* The journal says which model and whether a fault was injected. */
    r = put_fault(emu, "route-j", "{\"directives\":\"status=503\",\"count\":1}");
    resp_free(&r);
    CHECK_INT(chat_model(emu, "route-j", "x", NULL, 0), 503);
    r = http(emu, "GET", "/_emu/requests?limit=1", NULL, NULL, NULL, 0);
    j = json_loads(r.body, 0, NULL);
    json_t *e = json_array_get(json_object_get(j, "requests"), 0);
    CHECK_STR(jstr(e, "model"), "route-j");
    CHECK(json_is_true(json_object_get(e, "fault")));
    CHECK_INT(json_integer_value(json_object_get(e, "status")), 503);
    json_decref(j);
    resp_free(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* the emulator may write to a client that already left */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    CHECK(port_of(s.open_emu) > 0);
    test_fault_status_retry_after(s.open_emu);
    test_fault_latency_first_byte(s.open_emu);
    test_fault_trickle(s.open_emu);
    test_fault_reset(s.open_emu);
    test_fault_endless(s.open_emu);
    test_fault_context(s.open_emu);
    test_fault_routes(s.open_emu);
    /* An endless stream still running when the emulator is destroyed: freed with it (ASan builds check). */
    int lingering = raw_request(s.open_emu, "/v1/chat/completions",
                                "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":"
                                "\"[[emu:endless]] [[emu:chunk_delay=1]]\"}]}");
    struct raw_read rr;
    raw_read_all(lingering, 100, &rr);
    CHECK(count_of(rr.data, " more") > 0);
    free(rr.data);
    server_stop(&s);
    close(lingering);
    curl_global_cleanup();
    return sb_test_finish("emulator_faults");
}
