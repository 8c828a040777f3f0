/* Unit tests for provider.c: registry, per-job parser (buffering, size cap,
 * streaming dispatch), status mapping, credentials, URLs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
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
    json_array_append_new(events, sb_event_completed("completed", NULL, "m", resp->upstream_ms));
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
    json_array_append_new(events, sb_event_completed("completed", NULL, "m", resp->upstream_ms));
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
    sb_provider_response_t resp = {.status = 200, .retry_after = -1, .upstream_ms = 5};
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
    check_status(401, "who", false, 401, "authentication", "who");
    check_status(403, NULL, false, 403, "permission", "upstream returned HTTP 403");
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

int main(void)
{
    test_registry();
    test_parser();
    test_status_mapping();
    test_helpers();
    return sb_test_finish("provider");
}
