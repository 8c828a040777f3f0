/* Unit tests for sb_trace: W3C traceparent parsing (the spec's accept and
 * refuse rules), new traces and spans, formatting, tracestate. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sb_test.h"
#include "sb_trace.h"

int main(void)
{
    sb_trace_t t;
    CHECK(sb_trace_parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", &t) == 0);
    CHECK_STR(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
    CHECK_STR(t.span_id, "00f067aa0ba902b7");
    CHECK_STR(t.flags, "01");
    /* A later version: its version-00 prefix, and more after a dash. */
    CHECK(sb_trace_parse("cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-what-the-future-holds", &t) == 0);
    CHECK(sb_trace_parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00", &t) == 0);
    CHECK_STR(t.flags, "00");
    static const char *const bad[] = {
        "",
        "00",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",  /* version ff */
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",  /* uppercase */
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",  /* zero trace id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",  /* zero parent id */
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-", /* v00 with more */
        "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",  /* dashes moved */
        "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0g",
        "cc-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x", /* later version, no dash */
        "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK(sb_trace_parse(bad[i], &t) == -1);
    CHECK(sb_trace_parse(NULL, &t) == -1);

    sb_trace_t a, b;
    sb_trace_start(&a);
    sb_trace_span(&a);
    sb_trace_start(&b);
    CHECK(strlen(a.trace_id) == 32 && strlen(a.span_id) == 16);
    CHECK(strcmp(a.trace_id, b.trace_id) != 0);
    char tp[SB_TRACEPARENT_LEN + 1];
    sb_trace_format(&a, tp, sizeof tp);
    CHECK(strlen(tp) == SB_TRACEPARENT_LEN);
    sb_trace_t back;
    CHECK(sb_trace_parse(tp, &back) == 0);
    CHECK_STR(back.trace_id, a.trace_id);
    CHECK_STR(back.span_id, a.span_id);
    /* Time-ordered: the first 12 hex digits are the epoch milliseconds, so a
     * later trace sorts after an earlier one; the rest stays random. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    long long now_ms = (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    char head[13];
    memcpy(head, b.trace_id, 12);
    head[12] = '\0';
    long long id_ms = strtoll(head, NULL, 16);
    CHECK(id_ms <= now_ms && now_ms - id_ms < 5000);
    struct timespec two_ms = {0, 2000000};
    nanosleep(&two_ms, NULL);
    sb_trace_t c;
    sb_trace_start(&c);
    CHECK(strcmp(b.trace_id, c.trace_id) < 0);
    CHECK(strcmp(b.trace_id + 12, c.trace_id + 12) != 0);
    char old[17];
    memcpy(old, a.span_id, sizeof old);
    sb_trace_span(&a);
    CHECK(strcmp(old, a.span_id) != 0);

    CHECK(sb_tracestate_ok("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"));
    CHECK(!sb_tracestate_ok(""));
    CHECK(!sb_tracestate_ok("a=b\r\nx-injected: 1"));
    char big[600];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK(!sb_tracestate_ok(big));
    return sb_test_finish("trace");
}
