/* Unit tests for provider.c and provider_util.c: registry, per-job parser
 * (buffering, size cap, streaming dispatch), status mapping, credentials,
 * URLs, data URLs, and the scrubbing of upstream error text through every
 * adapter. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_test.h"

static json_t *job_stream(bool stream)
{
    return json_pack("{s:s, s:{s:s, s:s}, s:{s:b}}", "model", "m", "route", "provider", "fake", "base_url",
                     "http://h:1/v1///", "request", "stream", stream);
}

/* A fake adapter that records how the parser drove it. */
static int fake_parsed, fake_fed, fake_finished, fake_destroyed;
static size_t fake_body_len;

static void fake_parse(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    fake_parsed++;
    fake_body_len = resp->body_len;
    json_array_append_new(events, sb_event_completed("completed", NULL, "m", resp->upstream_us));
}
static void *fake_stream_new(const json_t *job)
{
    return malloc(1);
}
static int fake_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    fake_fed++;
    json_array_append_new(events, sb_event_text_delta(0, 0, data, len));
    return 0;
}
static void fake_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    fake_finished++;
    json_array_append_new(events, sb_event_completed("completed", NULL, "m", resp->upstream_us));
}
static void fake_stream_destroy(void *state)
{
    fake_destroyed++;
    free(state);
}

static const sb_provider_t fake = {
    .kind = "fake",
    .parse_response = fake_parse,
    .stream_new = fake_stream_new,
    .stream_feed = fake_stream_feed,
    .stream_finish = fake_stream_finish,
    .stream_destroy = fake_stream_destroy,
};

static void test_registry(void)
{
    CHECK(sb_provider_lookup("openai-chat") == &sb_provider_openai_chat);
    CHECK(sb_provider_lookup("carrier-pigeon") == NULL);
    CHECK(sb_provider_lookup(NULL) == NULL);
}

static void test_parser(void)
{
    /* Not streaming: bytes are buffered, parse_response sees them whole. */
    json_t *job = job_stream(false);
    json_t *events = json_array();
    sb_provider_parser_t *p = sb_provider_parser_new(&fake, job);
    CHECK_INT(sb_provider_parser_feed(p, 200, "{\"a\":", 5, events), 0);
    CHECK_INT(sb_provider_parser_feed(p, 200, "1}", 2, events), 0);
    CHECK_INT(json_array_size(events), 0);
    sb_provider_response_t resp = {.status = 200, .retry_after = -1, .upstream_us = 5};
    sb_provider_parser_finish(p, &resp, events);
    CHECK_INT(fake_parsed, 1);
    CHECK_INT(fake_body_len, 7);
    CHECK_INT(json_array_size(events), 1);
    sb_provider_parser_destroy(&p);
    CHECK(p == NULL);
    json_decref(events);
    json_decref(job);

    /* Streaming job, 2xx: chunks go to stream_feed, the end to stream_finish. */
    job = job_stream(true);
    events = json_array();
    p = sb_provider_parser_new(&fake, job);
    CHECK_INT(sb_provider_parser_feed(p, 200, "ab", 2, events), 0);
    CHECK_INT(sb_provider_parser_feed(p, 200, "cd", 2, events), 0);
    CHECK_INT(fake_fed, 2);
    CHECK_INT(json_array_size(events), 2);
    sb_provider_parser_finish(p, &resp, events);
    CHECK_INT(fake_finished, 1);
    CHECK_INT(json_array_size(events), 3);
    sb_provider_parser_destroy(&p);
    CHECK_INT(fake_destroyed, 1);
    json_decref(events);

    /* Streaming job, error status: buffered and parsed whole. */
    events = json_array();
    p = sb_provider_parser_new(&fake, job);
    CHECK_INT(sb_provider_parser_feed(p, 429, "{}", 2, events), 0);
    resp.status = 429;
    sb_provider_parser_finish(p, &resp, events);
    CHECK_INT(fake_fed, 2);
    CHECK_INT(fake_parsed, 2);
    sb_provider_parser_destroy(&p);
    json_decref(events);

    /* The body cap. */
    events = json_array();
    p = sb_provider_parser_new(&sb_provider_openai_chat, job);
    size_t chunk = 1u << 20;
    char *big = calloc(1, chunk);
    int rc = 0;
    for (size_t fed = 0; fed <= SB_PROVIDER_MAX_BODY && rc == 0; fed += chunk)
        rc = sb_provider_parser_feed(p, 200, big, chunk, events);
    CHECK_INT(rc, -E2BIG);
    free(big);
    sb_provider_parser_destroy(&p);
    json_decref(events);
    json_decref(job);
    sb_provider_parser_destroy(&p); /* NULL-safe */
}

static void check_status(long upstream, const char *msg, bool quota, int status, const char *kind, const char *message)
{
    json_t *ev = sb_provider_error_for_status(upstream, msg, quota, -1);
    CHECK(sb_event_type_of(ev) == SB_EV_ERROR);
    CHECK_INT(json_integer_value(json_object_get(ev, "status")), status);
    CHECK_STR(json_string_value(json_object_get(ev, "kind")), kind);
    CHECK_STR(json_string_value(json_object_get(ev, "message")), message);
    CHECK(json_object_get(ev, "retry_after") == NULL);
    json_decref(ev);
}

static void test_status_mapping(void)
{
    check_status(400, "bad", false, 400, "invalid_request", "bad");
    /* The route's credential failing is the operator's problem: a 502 with a
     * generic text (the upstream's goes to the log), never a 401. */
    check_status(401, "who", false, 502, "upstream_error", "upstream authentication failed");
    check_status(403, NULL, false, 502, "upstream_error", "upstream authentication failed");
    check_status(404, "", false, 404, "not_found", "upstream returned HTTP 404");
    check_status(429, "slow", false, 429, "rate_limit", "slow");
    check_status(429, "pay", true, 429, "insufficient_quota", "pay");
    check_status(500, "oops", false, 500, "upstream_error", "oops");
    check_status(502, "bad gw", false, 502, "upstream_error", "bad gw");
    check_status(503, "busy", false, 503, "overloaded", "busy");
    check_status(504, "slow gw", false, 502, "upstream_error", "upstream returned HTTP 504");
    check_status(529, "x", false, 502, "upstream_error", "upstream returned HTTP 529");
    check_status(302, "moved", false, 502, "upstream_error", "upstream returned HTTP 302");
    check_status(418, "teapot", false, 502, "upstream_error", "upstream returned HTTP 418");

    json_t *ev = sb_provider_error_for_status(429, "x", false, 7);
    CHECK_INT(json_integer_value(json_object_get(ev, "retry_after")), 7);
    json_decref(ev);

    /* Long messages are clipped on a UTF-8 boundary. */
    char *long_msg = malloc(3000 + 1);
    for (int i = 0; i < 1000; i++)
        memcpy(long_msg + 3 * i, "\xe2\x82\xac", 3); /* € */
    long_msg[3000] = '\0';
    ev = sb_provider_error_for_status(400, long_msg, false, -1);
    CHECK(ev != NULL);
    CHECK(json_string_length(json_object_get(ev, "message")) == 1023);
    json_decref(ev);
    free(long_msg);
}

static void test_helpers(void)
{
    json_t *job = job_stream(false);
    char *url = sb_provider_url(job, "/chat/completions");
    CHECK_STR(url, "http://h:1/v1/chat/completions");
    free(url);

    const char *value;
    json_t *err;
    CHECK_INT(sb_provider_credential(job, &value, &err), 0); /* no credential_ref */
    CHECK(value == NULL && err == NULL);
    json_object_set_new((json_t *)json_object_get(job, "route"), "credential_ref", json_string("SB_TEST_PROVIDER_KEY"));
    unsetenv("SB_TEST_PROVIDER_KEY");
    CHECK(sb_provider_credential(job, &value, &err) < 0);
    CHECK_STR(json_string_value(json_object_get(err, "message")),
              "upstream credential 'SB_TEST_PROVIDER_KEY' is not configured");
    json_decref(err);
    setenv("SB_TEST_PROVIDER_KEY", "sk-1\r\nX-Evil: 1", 1);
    CHECK(sb_provider_credential(job, &value, &err) < 0);
    json_decref(err);
    setenv("SB_TEST_PROVIDER_KEY", "sk-1", 1);
    CHECK_INT(sb_provider_credential(job, &value, &err), 0);
    CHECK_STR(value, "sk-1");
    json_object_del((json_t *)json_object_get(job, "route"), "base_url");
    CHECK(sb_provider_url(job, "/x") == NULL);
    json_decref(job);

    json_t *b = json_loads("{\"error\":{\"message\":\"m1\"}}", 0, NULL);
    CHECK_STR(sb_provider_error_message(b), "m1");
    json_decref(b);
    b = json_loads("{\"error\":\"m2\"}", 0, NULL);
    CHECK_STR(sb_provider_error_message(b), "m2");
    json_decref(b);
    b = json_loads("{\"object\":\"error\",\"message\":\"m3\"}", 0, NULL);
    CHECK_STR(sb_provider_error_message(b), "m3");
    json_decref(b);
    CHECK(sb_provider_error_message(NULL) == NULL);

    sb_provider_request_t req = {0};
    sb_provider_request_add_header(&req, "A: %d", 1);
    sb_provider_request_add_header(&req, "B: %s", "two");
    CHECK_INT(req.n_headers, 2);
    CHECK_STR(req.headers[1], "B: two");
    sb_provider_request_clear(&req);
    CHECK(req.headers == NULL && req.n_headers == 0);
    sb_provider_request_clear(&req);
}

/* Runs one upstream response through a real adapter's parser (streamed when
 * stream) and returns the final event's message (owned); checks that the
 * whole event list holds no trace of the secret. */
static char *scrubbed_final(const char *kind, bool stream, long status, const char *body, const char *secret)
{
    json_t *job = json_pack("{s:s, s:s, s:{s:s, s:s, s:s, s:s}, s:{s:[], s:b}}", "model", "m", "request_id", "req_t",
                            "route", "provider", kind, "base_url", "http://h:1/v1", "upstream_model", "um",
                            "credential_ref", "SB_TEST_SCRUB_ROUTE_CRED", "request", "input", "stream", stream);
    const sb_provider_t *prov = sb_provider_lookup(kind);
    json_t *events = json_array();
    sb_provider_parser_t *p = sb_provider_parser_new(prov, job);
    CHECK_INT(sb_provider_parser_feed(p, status, body, strlen(body), events), 0);
    sb_provider_response_t resp = {.status = status, .retry_after = -1, .upstream_us = 1};
    sb_provider_parser_finish(p, &resp, events);
    char *all = json_dumps(events, 0);
    CHECK(all && !strstr(all, secret));
    free(all);
    const json_t *last = json_array_get(events, json_array_size(events) - 1);
    CHECK(sb_event_type_of(last) == SB_EV_ERROR);
    char *msg = sb_xstrdup(json_string_value(json_object_get(last, "message")));
    sb_provider_parser_destroy(&p);
    json_decref(events);
    json_decref(job);
    return msg;
}

/* An upstream that quotes the route's credential: every adapter, plain and
 * streamed, hands on the message with the credential taken out; a 401/403
 * becomes a 502 with a generic text. */
static void test_scrubbed_errors(void)
{
    const char *secret = "0f1e2d3c4b5a69788796a5b4c3d2e1f0aabbccdd"; /* no key shape: found only as configured */
    setenv("SB_TEST_SCRUB_ROUTE_CRED", secret, 1);
    char quoted[256];
    snprintf(quoted, sizeof quoted, "not allowed: got %s (Bearer %s)", secret, secret);
    char body[512];

    snprintf(body, sizeof body, "{\"error\":{\"message\":\"%s\",\"type\":\"invalid_request_error\"}}", quoted);
    char *m = scrubbed_final("openai-chat", false, 400, body, secret);
    CHECK_STR(m, "not allowed: got [redacted] (Bearer [redacted])");
    free(m);
    m = scrubbed_final("openai-responses", false, 400, body, secret);
    CHECK(m && !strstr(m, secret));
    free(m);
    snprintf(body, sizeof body,
             "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"%s\"}}", quoted);
    m = scrubbed_final("anthropic", false, 400, body, secret);
    CHECK_STR(m, "not allowed: got [redacted] (Bearer [redacted])");
    free(m);
    snprintf(body, sizeof body, "{\"error\":{\"code\":400,\"message\":\"%s\",\"status\":\"INVALID_ARGUMENT\"}}",
             quoted);
    m = scrubbed_final("gemini", false, 400, body, secret);
    CHECK_STR(m, "not allowed: got [redacted] (Bearer [redacted])");
    free(m);

    /* Errors in the middle of a stream. */
    snprintf(body, sizeof body, "data: {\"error\":{\"message\":\"%s\",\"type\":\"server_error\"}}\n\n", quoted);
    m = scrubbed_final("openai-chat", true, 200, body, secret);
    CHECK_STR(m, "not allowed: got [redacted] (Bearer [redacted])");
    free(m);
    snprintf(body, sizeof body,
             "event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"%s\"}\n\n", quoted);
    m = scrubbed_final("openai-responses", true, 200, body, secret);
    CHECK(m && !strstr(m, secret));
    free(m);
    snprintf(body, sizeof body,
             "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"api_error\",\"message\":\"%s\"}}\n\n",
             quoted);
    m = scrubbed_final("anthropic", true, 200, body, secret);
    CHECK_STR(m, "not allowed: got [redacted] (Bearer [redacted])");
    free(m);
    snprintf(body, sizeof body, "data: {\"error\":{\"code\":500,\"message\":\"%s\",\"status\":\"INTERNAL\"}}\r\n\r\n",
             quoted);
    m = scrubbed_final("gemini", true, 200, body, secret);
    CHECK_STR(m, "not allowed: got [redacted] (Bearer [redacted])");
    free(m);

    /* The credential refused: 502, generic, however the upstream put it. */
    snprintf(body, sizeof body, "{\"error\":{\"message\":\"Incorrect API key provided: %s\"}}", secret);
    m = scrubbed_final("openai-chat", false, 401, body, secret);
    CHECK_STR(m, "upstream authentication failed");
    free(m);
    m = scrubbed_final("openai-responses", true, 403, body, secret);
    CHECK_STR(m, "upstream authentication failed");
    free(m);

    /* A long message is scrubbed before it is clipped: no half key survives. */
    char *longmsg = sb_xmalloc(2048);
    memset(longmsg, 'x', 2048);
    memcpy(longmsg + 1000, secret, strlen(secret));
    longmsg[2047] = '\0';
    char *longbody = sb_xasprintf("{\"error\":{\"message\":\"%s\"}}", longmsg);
    m = scrubbed_final("openai-chat", false, 400, longbody, secret);
    CHECK(m && !strstr(m, "0f1e2d3c4b5a") && strstr(m, "[redacted]"));
    free(m);
    free(longbody);
    free(longmsg);
    unsetenv("SB_TEST_SCRUB_ROUTE_CRED");
}

/* sb_provider_data_url: what the adapters take from an inline image or
 * file (the split itself is common/sb_dataurl's, tested in test_dataurl). */
static void test_data_url(void)
{
    char mime[16];
    const char *payload = NULL;
    CHECK(sb_provider_data_url("DATA:Image/PNG;name=a.png;BASE64,iVBO", mime, sizeof mime, &payload) == 0);
    CHECK_STR(mime, "image/png");
    CHECK_STR(payload, "iVBO");
    CHECK(sb_provider_data_url("data:;base64,eA==", mime, sizeof mime, &payload) == 0);
    CHECK_STR(mime, "");
    CHECK_STR(payload, "eA==");
    /* A type too long to be one an adapter knows reads as none. */
    CHECK(sb_provider_data_url("data:application/vnd.very-long-type;base64,eA==", mime, sizeof mime, &payload) == 0);
    CHECK_STR(mime, "");
    CHECK_STR(payload, "eA==");
    /* Only base64 payloads are sent on. */
    CHECK(sb_provider_data_url("data:text/plain,hello", mime, sizeof mime, &payload) == -EINVAL);
    CHECK(sb_provider_data_url("data:text/plain;base64", mime, sizeof mime, &payload) == -EINVAL);
    CHECK(sb_provider_data_url("https://example.com/a.png", mime, sizeof mime, &payload) == -EINVAL);
}

int main(void)
{
    test_registry();
    test_parser();
    test_status_mapping();
    test_helpers();
    test_data_url();
    test_scrubbed_errors();
    return sb_test_finish("provider");
}
