/*
 * sb_provider_test: the harness the upstream-adapter unit tests
 * (test_provider_*.c) share. A test points it at its adapter and route at the
 * start of main (sb_ptest = (sb_ptest_t){...}); the helpers then wrap request
 * texts in jobs, run the adapter's build_request and parse_response, and
 * compare what comes out with JSON texts, counting each comparison as one
 * sb_test check.
 *
 * A test may write its JSON with ' for " (single_quotes) so that literals need
 * no escaping; such a test has no apostrophe in any JSON string. Upstream
 * bodies go through the test's upstream_body hook, since a test may write
 * those in its own way too.
 */
#ifndef SB_PROVIDER_TEST_H
#define SB_PROVIDER_TEST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "sb_job.h"
#include "sb_test.h"

/* What a test sets before its first check. */
typedef struct {
    const sb_provider_t *provider; /* the adapter under test */
    const char *route;             /* every job's route: a JSON text, read by J() */
    bool single_quotes;            /* J() reads ' as " */
    /* The bytes an upstream sends for a body as the test writes it (owned,
     * freed with free()); NULL: the body as written. */
    char *(*upstream_body)(const char *text);
    /* Makes generated ids comparable in the events parse_raw returns; NULL:
     * ids stay as they are. */
    void (*normalize_ids)(json_t *events);
} sb_ptest_t;

static sb_ptest_t sb_ptest;

/* The text with every ' turned into " (owned). */
static inline char *Q(const char *text)
{
    char *s = strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

/* Parses a JSON literal, written with ' for " in a single_quotes test (tests
 * only: aborts on a typo). */
static inline json_t *J(const char *text)
{
    char *s = sb_ptest.single_quotes ? Q(text) : NULL;
    json_error_t e;
    json_t *v = json_loads(s ? s : text, JSON_DECODE_ANY, &e);
    if (!v) {
        fprintf(stderr, "bad JSON in test: %s: %s\n", e.text, s ? s : text);
        abort();
    }
    free(s);
    return v;
}

#define CHECK_JSON(actual, expected_text) check_json((actual), (expected_text), __FILE__, __LINE__)
static inline void check_json(const json_t *actual, const char *expected_text, const char *file, int line)
{
    json_t *expected = J(expected_text);
    sb_test_checks++;
    if (!actual || !json_equal((json_t *)actual, expected)) {
        sb_test_failures++;
        char *a = actual ? json_dumps(actual, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : NULL;
        char *b = json_dumps(expected, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
        fprintf(stderr, "%s:%d: CHECK_JSON failed\n  actual:   %s\n  expected: %s\n", file, line, a ? a : "(null)", b);
        free(a);
        free(b);
    }
    json_decref(expected);
}

/* An expected sequence: JSON texts joined into one array text "[a,b,...]",
 * in a static buffer (use it at once). */
#define EVENTS(...) sb_ptest_join((const char *const[]){__VA_ARGS__, NULL})
static inline const char *sb_ptest_join(const char *const *texts)
{
    static char buf[16384];
    size_t pos = 0;
    buf[pos++] = '[';
    for (size_t i = 0; texts[i]; i++) {
        size_t n = strlen(texts[i]);
        if (pos + n + 3 > sizeof buf)
            abort(); /* a test too long for the buffer */
        if (i)
            buf[pos++] = ',';
        memcpy(buf + pos, texts[i], n);
        pos += n;
    }
    buf[pos++] = ']';
    buf[pos] = '\0';
    return buf;
}

/*
 * Request side.
 */

/* A job around `request` (a JSON text) with the test's route, `route_extra`
 * (a JSON object text, or NULL) merged into the route. */
static inline json_t *job_with_route(const char *request, const char *route_extra)
{
    if (!sb_ptest.provider || !sb_ptest.route) {
        fprintf(stderr, "sb_provider_test: set sb_ptest before the first check\n");
        abort();
    }
    json_t *job = J("{\"request_id\":\"req_1\",\"model\":\"public-model\",\"account_id\":1}");
    json_object_set_new(job, "route", J(sb_ptest.route));
    json_object_set_new(job, "request", J(request));
    if (route_extra) {
        json_t *extra = J(route_extra);
        json_object_update((json_t *)json_object_get(job, "route"), extra);
        json_decref(extra);
    }
    return job;
}

static inline json_t *job_with(const char *request)
{
    return job_with_route(request, NULL);
}

/* Builds the request for job as the worker does: the job's shape checked
 * first (sb_job_check, run by the worker on receipt), then the adapter's
 * build_request, which takes that shape as given. Returns the parsed body
 * (NULL on error, with *err set). */
static inline json_t *build(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    memset(req, 0, sizeof *req);
    *err = NULL;
    if (sb_job_check(job, err) < 0)
        return NULL;
    if (sb_ptest.provider->build_request(job, req, err) < 0)
        return NULL;
    return json_loadb(req->body, req->body_len, 0, NULL);
}

/* The body sent for `request`; with route.capabilities set to `caps`, or
 * `route_extra` merged into the route (JSON texts, or NULL). */
#define CHECK_BODY(request, expected) check_body((request), NULL, NULL, (expected), __FILE__, __LINE__)
#define CHECK_BODY_CAPS(request, caps, expected) check_body((request), (caps), NULL, (expected), __FILE__, __LINE__)
#define CHECK_BODY_ROUTE(request, route_extra, expected)                                                               \
    check_body((request), NULL, (route_extra), (expected), __FILE__, __LINE__)
static inline void check_body(const char *request, const char *caps, const char *route_extra, const char *expected,
                              const char *file, int line)
{
    json_t *job = job_with_route(request, route_extra);
    if (caps)
        json_object_set_new((json_t *)json_object_get(job, "route"), "capabilities", J(caps));
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    if (!body) {
        char *e = json_dumps(err, JSON_COMPACT);
        fprintf(stderr, "%s:%d: build failed: %s\n", file, line, e ? e : "(null)");
        free(e);
    }
    check_json(body, expected, file, line);
    json_decref(body);
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);
}

/* The error a request is refused with. CHECK_REFUSED looks at its status and
 * message only; CHECK_INVALID at all of a 400 invalid_request error, code
 * (NULL: none) included; CHECK_UNSUPPORTED is CHECK_INVALID for a parameter
 * the upstream cannot take. */
#define CHECK_REFUSED(request, status, msg) check_refused((request), (status), NULL, NULL, (msg), __FILE__, __LINE__)
#define CHECK_INVALID(request, code, msg)                                                                              \
    check_refused((request), 400, "invalid_request", (code), (msg), __FILE__, __LINE__)
#define CHECK_UNSUPPORTED(request, msg) CHECK_INVALID((request), "unsupported_parameter", "unsupported parameter: " msg)

/* kind NULL: status and message are checked; otherwise kind and code too. */
static inline void check_refused(const char *request, int status, const char *kind, const char *code, const char *msg,
                                 const char *file, int line)
{
    json_t *job = job_with(request);
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    const char *got_kind = json_string_value(json_object_get(err, "kind"));
    const char *got_code = json_string_value(json_object_get(err, "code"));
    const char *got_msg = json_string_value(json_object_get(err, "message"));
    bool ok = !body && err && json_integer_value(json_object_get(err, "status")) == status && got_msg &&
              !strcmp(got_msg, msg);
    if (ok && kind)
        ok = got_kind && !strcmp(got_kind, kind) && (code ? got_code && !strcmp(got_code, code) : !got_code);
    sb_test_checks++;
    if (!ok) {
        sb_test_failures++;
        char *e = err ? json_dumps(err, JSON_COMPACT) : NULL;
        fprintf(stderr, "%s:%d: expected refusal %d", file, line, status);
        if (kind)
            fprintf(stderr, " %s %s", kind, code ? code : "(no code)");
        fprintf(stderr, " \"%s\", got %s\n", msg, e ? e : "a body");
        free(e);
    }
    json_decref(body);
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);
}

/*
 * Response side.
 */

/* The events for a whole upstream response, `body` sent as is, to a job with
 * this request; ids normalized. */
static inline json_t *parse_raw(const char *request, long status, const char *body, long retry_after)
{
    json_t *job = job_with(request);
    json_t *events = json_array();
    sb_provider_response_t resp = {
        .status = status, .body = body, .body_len = strlen(body), .retry_after = retry_after, .upstream_us = 42};
    sb_ptest.provider->parse_response(job, &resp, events);
    json_decref(job);
    if (sb_ptest.normalize_ids)
        sb_ptest.normalize_ids(events);
    return events;
}

/* The bytes sent for a body as the test writes it (owned). */
static inline char *sb_ptest_body(const char *text)
{
    return sb_ptest.upstream_body ? sb_ptest.upstream_body(text) : strdup(text);
}

/* The same for a body as the test writes it. */
static inline json_t *parse_for(const char *request, long status, const char *body, long retry_after)
{
    char *sent = sb_ptest_body(body);
    json_t *events = parse_raw(request, status, sent, retry_after);
    free(sent);
    return events;
}

/* The events for a response to {"input":[]} (with Retry-After: retry_after
 * when not -1), or to `request` with status 200, against `expected`;
 * CHECK_EVENTS_RAW sends the body as is. */
#define CHECK_EVENTS(status, body, expected)                                                                           \
    check_events("{\"input\":[]}", (status), (body), -1, (expected), __FILE__, __LINE__)
#define CHECK_EVENTS_RETRY(status, body, retry_after, expected)                                                        \
    check_events("{\"input\":[]}", (status), (body), (retry_after), (expected), __FILE__, __LINE__)
#define CHECK_EVENTS_FOR(request, body, expected)                                                                      \
    check_events((request), 200, (body), -1, (expected), __FILE__, __LINE__)
#define CHECK_EVENTS_RAW(status, body, expected) check_events_raw((status), (body), (expected), __FILE__, __LINE__)
static inline void check_events(const char *request, long status, const char *body, long retry_after,
                                const char *expected, const char *file, int line)
{
    json_t *events = parse_for(request, status, body, retry_after);
    check_json(events, expected, file, line);
    json_decref(events);
}

static inline void check_events_raw(long status, const char *body, const char *expected, const char *file, int line)
{
    json_t *events = parse_raw("{\"input\":[]}", status, body, -1);
    check_json(events, expected, file, line);
    json_decref(events);
}

/* The events parse_count_response makes of a body (as the test writes it)
 * for a count job. */
static inline json_t *parse_count(long status, const char *body)
{
    json_t *job = job_with("{\"op\":\"count_tokens\",\"input\":[]}");
    char *sent = sb_ptest_body(body);
    json_t *events = json_array();
    sb_provider_response_t resp = {
        .status = status, .body = sent, .body_len = strlen(sent), .retry_after = -1, .upstream_us = 42};
    sb_ptest.provider->parse_count_response(job, &resp, events);
    free(sent);
    json_decref(job);
    return events;
}

#endif
