/*
 * Unit tests for fe_fallback, the pure half of a model's fallback chain:
 * which failures may fall back (429, 500, 502, 503, 529, before the client
 * has seen a byte), the chain's head (entries that are not ids dropped),
 * and which models are unusable (registry error, missing, disabled, not
 * allowed to the key's token group).
 */
#include <stdlib.h>
#include <string.h>

#include "fe_fallback.h"
#include "sb_test.h"

static void failed(fe_request_t *r, int status)
{
    r->result.done = true;
    r->result.failed = true;
    r->result.error.status = status;
}

static void test_next(void)
{
    fe_request_t r;
    memset(&r, 0, sizeof r);
    r.fallbacks = json_pack("[i, s, s]", 5, "m2", "m3");
    CHECK(fe_fallback_next(&r) == NULL); /* the job did not fail */
    failed(&r, 400);
    CHECK(fe_fallback_next(&r) == NULL); /* another model would refuse it too */
    CHECK_INT(json_array_size(r.fallbacks), 3);
    failed(&r, 503);
    CHECK_STR(fe_fallback_next(&r), "m2"); /* the 5 is dropped */
    CHECK_INT(json_array_size(r.fallbacks), 2);
    CHECK_STR(fe_fallback_next(&r), "m2"); /* naming it takes nothing off */
    char *id = fe_fallback_pop(&r);
    CHECK_STR(id, "m2");
    free(id);
    r.stream_started = true;
    CHECK(fe_fallback_next(&r) == NULL); /* the client has seen bytes */
    r.stream_started = false;
    failed(&r, 529);
    id = fe_fallback_pop(&r);
    CHECK_STR(id, "m3");
    free(id);
    CHECK(fe_fallback_next(&r) == NULL); /* used up */
    static const int retryable[] = {429, 500, 502, 503, 529};
    for (size_t i = 0; i < sizeof retryable / sizeof retryable[0]; i++) {
        json_array_append_new(r.fallbacks, json_string("m4"));
        failed(&r, retryable[i]);
        CHECK_STR(fe_fallback_next(&r), "m4");
        json_array_clear(r.fallbacks);
    }
    json_decref(r.fallbacks);
}

static void test_unusable(void)
{
    fe_request_t r;
    memset(&r, 0, sizeof r);
    r.key = json_pack("{s:[s]}", "models", "m2");
    json_t *ok = json_pack("{s:s, s:b}", "id", "m2", "enabled", 1);
    json_t *off = json_pack("{s:s, s:b}", "id", "m2", "enabled", 0);
    json_t *missing = json_pack("{s:b}", "missing", 1);
    CHECK(fe_fallback_unusable(&r, "m2", ok, NULL) == NULL);
    CHECK_STR(fe_fallback_unusable(&r, "m2", NULL, "db down"), "model registry unavailable");
    CHECK_STR(fe_fallback_unusable(&r, "m2", off, NULL), "not found or disabled");
    CHECK_STR(fe_fallback_unusable(&r, "m2", missing, NULL), "not found or disabled");
    CHECK_STR(fe_fallback_unusable(&r, "m9", ok, NULL), "not allowed to the key's token group");
    json_decref(ok);
    json_decref(off);
    json_decref(missing);
    json_decref(r.key);
}

int main(void)
{
    test_next();
    test_unusable();
    return sb_test_finish("fallback");
}
