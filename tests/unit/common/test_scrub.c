/*
 * test_scrub: the secret scrubber (common/sb_scrub.h): configured secrets
 * anywhere in a text, a clipped secret's head at the end, each key shape,
 * the extra secret, the environment scan, and ordinary text left alone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_scrub.h"
#include "sb_test.h"

/* Scrubs with s and extra and compares. */
static void expect(const sb_scrub_t *s, const char *extra, const char *in, const char *want)
{
    char *out = sb_scrub_text(s, in, extra);
    CHECK_STR(out, want);
    CHECK(sb_scrub_found(s, in, extra) == (strcmp(in, want) != 0));
    free(out);
}

static void test_secrets(void)
{
    sb_scrub_t *s = sb_scrub_new();
    CHECK(sb_scrub_add(s, "c4n4ry0f7h3g4t3w4y"));
    CHECK(!sb_scrub_add(s, "c4n4ry0f7h3g4t3w4y")); /* known */
    CHECK(!sb_scrub_add(s, "short"));              /* would mangle text */
    CHECK(!sb_scrub_add(s, NULL));
    CHECK_INT(sb_scrub_count(s), 1);
    /* Anywhere, every time, even glued to other text. */
    expect(s, NULL, "bad credential c4n4ry0f7h3g4t3w4y (c4n4ry0f7h3g4t3w4y)", "bad credential [redacted] ([redacted])");
    expect(s, NULL, "x=c4n4ry0f7h3g4t3w4y!", "x=[redacted]!");
    /* A message clipped in the middle of the secret keeps nothing of it. */
    expect(s, NULL, "you sent c4n4ry0f7h", "you sent [redacted]");
    /* Fewer than SB_SCRUB_MIN_SECRET characters of it is just text. */
    expect(s, NULL, "you sent c4n4r", "you sent c4n4r");
    /* The job's own credential, not yet known to the table. */
    expect(s, "pl41n-h3x-upstr34m", "got pl41n-h3x-upstr34m", "got [redacted]");
    expect(NULL, "pl41n-h3x-upstr34m", "got pl41n-h3x-upstr34m", "got [redacted]");
    /* A key glued to a secret is key-shaped once the secret is gone (one
     * pass left it: found by fuzzing). */
    expect(s, NULL, "c4n4ry0f7h3g4t3w4ysk-proj-AbC123dEf456GhI789jKl", "[redacted]");
    /* Part of the marker is no secret: it could never be removed. */
    CHECK(!sb_scrub_add(s, "edacted]"));
    CHECK(!sb_scrub_add(s, "[redacted]"));
    expect(NULL, "edacted]", "x-api-key: sk-ant-AAAA then edacted]", "x-api-key: [redacted] then edacted]");
    sb_scrub_destroy(&s);
    CHECK(s == NULL);
    sb_scrub_destroy(&s); /* NULL-safe */
    CHECK(sb_scrub_text(NULL, NULL, NULL) == NULL);
}

static void test_shapes(void)
{
    /* OpenAI project and legacy keys, Anthropic, OpenRouter, masked keys. */
    expect(NULL, NULL, "Incorrect API key provided: sk-proj-AbCdEf0123456789AbCdEf0123456789. You can find it",
           "Incorrect API key provided: [redacted]. You can find it");
    expect(NULL, NULL, "key sk-ant-api03-Zx9_Yy8-Ww7Vv6Uu5Tt4Ss3Rr2Qq1Pp0 is invalid", "key [redacted] is invalid");
    expect(NULL, NULL, "Incorrect API key provided: sk-proj-********************abcd.",
           "Incorrect API key provided: [redacted].");
    expect(NULL, NULL, "sk-or-v1-0123456789abcdef0123456789abcdef", "[redacted]");
    expect(NULL, NULL, "Incorrect API key provided: 0a1b2c3d************************wxyz. See docs",
           "Incorrect API key provided: [redacted]. See docs");
    expect(NULL, NULL, "a ******** line", "a ******** line"); /* stars alone are no key */
    /* Google keys, also in a URL. */
    expect(NULL, NULL, "GET /v1beta/models?key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&alt=sse",
           "GET /v1beta/models?key=[redacted]&alt=sse");
    /* Bearer tokens and credential headers. */
    expect(NULL, NULL, "sent Authorization: Bearer abcDEF123456.xyz", "sent Authorization: Bearer [redacted]");
    expect(NULL, NULL, "header 'x-goog-api-key: 9f8e7d6c5b4a' rejected",
           "header 'x-goog-api-key: [redacted]' rejected");
    expect(NULL, NULL, "{\"x-api-key\":\"plainvalue\"}", "{\"x-api-key\":\"[redacted]\"}");
    expect(NULL, NULL, "api_key=hunter2hunter2", "api_key=[redacted]");
    expect(NULL, NULL, "Authorization: Basic dXNlcjpwYXNzd29yZA==", "Authorization: Basic [redacted]");
    /* A long mixed token after key / token words. */
    expect(NULL, NULL, "Authentication Error, Received API Key = 0a1b2c3d4e5f60718293a4b5c6d7e8f9",
           "Authentication Error, Received API Key = [redacted]");
    expect(NULL, NULL, "invalid token: 'Zm9vYmFyYmF6MTIzNDU2Nzg5MA'", "invalid token: '[redacted]'");
    expect(NULL, NULL, "the api_token 1234567890abcdefXYZ expired", "the api_token [redacted] expired");
    /* JWTs. */
    expect(NULL, NULL, "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz here", "jwt [redacted] here");
    /* Several in one text. */
    expect(NULL, NULL, "a sk-0123456789abcdefABCD b AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW c",
           "a [redacted] b [redacted] c");
}

/* Error messages as providers write them stay readable. */
static void test_ordinary_text(void)
{
    static const char *const keep[] = {
        "API key not valid. Please pass a valid API key.",
        "x-api-key header is required",
        "invalid x-api-key",
        "Authorization header is missing",
        "max_tokens: 4096 is too large; the maximum is 8192",
        "This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.",
        "The input token count (1048577) exceeds the maximum number of tokens allowed (1048576).",
        "Bearer token required",
        "Your task-list-of-things is long",
        "prompt is too long: 210000 tokens > 200000 maximum",
        "emulated upstream error 503",
        "monkey0123456789abcdef0123 is a name",
        "request req_0123456789abcdef0123456789abcdef failed",
        "You exceeded your current quota, please check your plan and billing details.",
        "keyboard layouts differ; the secret sauce is patience",
        "",
    };
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        expect(NULL, NULL, keep[i], keep[i]);
    /* UTF-8 around a secret survives. */
    sb_scrub_t *s = sb_scrub_new();
    CHECK(sb_scrub_add(s, "s3cr3t-v4lu3-0001"));
    expect(s, NULL, "clé «s3cr3t-v4lu3-0001» refusée", "clé «[redacted]» refusée");
    sb_scrub_destroy(&s);
}

static void test_env(void)
{
    setenv("SB_TEST_SCRUB_UPSTREAM_KEY", "env-cr3d3nt14l-value", 1);
    setenv("SB_TEST_SCRUB_PLAIN", "not-a-secret-at-all", 1);
    setenv("SB_TEST_SCRUB_TOKEN", "tiny", 1);
    sb_scrub_t *s = sb_scrub_new();
    CHECK(sb_scrub_add_env(s) >= 1);
    expect(s, NULL, "got env-cr3d3nt14l-value", "got [redacted]");
    expect(s, NULL, "got not-a-secret-at-all", "got not-a-secret-at-all");
    expect(s, NULL, "tiny", "tiny");
    sb_scrub_destroy(&s);
}

/* The table is bounded. */
static void test_max(void)
{
    sb_scrub_t *s = sb_scrub_new();
    char buf[32];
    for (int i = 0; i < SB_SCRUB_MAX_SECRETS; i++) {
        snprintf(buf, sizeof buf, "secret-%08d", i);
        CHECK(sb_scrub_add(s, buf));
    }
    CHECK(!sb_scrub_add(s, "one-secret-too-many"));
    CHECK_INT(sb_scrub_count(s), SB_SCRUB_MAX_SECRETS);
    expect(s, NULL, "x secret-00000999 y", "x [redacted] y");
    sb_scrub_destroy(&s);
}

int main(void)
{
    test_secrets();
    test_shapes();
    test_ordinary_text();
    test_env();
    test_max();
    return sb_test_finish("scrub");
}
