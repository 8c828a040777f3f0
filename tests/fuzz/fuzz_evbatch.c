/*
 * fuzz_evbatch: libFuzzer harness for sb_evbatch_decode, which the frontend
 * runs on every EVENT body a worker sends through the broker (one event, or
 * a batch of them). A frame that arrives corrupted or from a confused peer
 * must be refused, never trusted.
 *
 * Input: one EVENT body. Checked besides "no crash, no leak, no UB": decode
 * returns 0 with an array of 1..SB_EVBATCH_MAX_EVENTS objects, or -EINVAL
 * with nothing; the events re-encode with sb_evbatch_encode into batches
 * that decode, in order, to the same events, and each batch but a single
 * event is an array.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_evbatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Collects what each re-encoded batch decodes to. */
static int fuzz_evbatch_collect(const char *body, size_t len, size_t from, size_t to, void *arg)
{
    json_t *got = NULL;
    FUZZ_REQUIRE(sb_evbatch_decode(body, len, &got) == 0);
    FUZZ_REQUIRE(json_array_size(got) == to - from);
    json_array_extend(arg, got);
    json_decref(got);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *evs = (json_t *)1;
    int rc = sb_evbatch_decode(data, size, &evs);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EINVAL);
        FUZZ_REQUIRE(evs == NULL);
        return 0;
    }
    size_t n = json_array_size(evs);
    FUZZ_REQUIRE(json_is_array(evs) && n >= 1 && n <= SB_EVBATCH_MAX_EVENTS);
    for (size_t i = 0; i < n; i++)
        FUZZ_REQUIRE(json_is_object(json_array_get(evs, i)));
    json_t *again = json_array();
    FUZZ_REQUIRE(sb_evbatch_encode(evs, 0, n, fuzz_evbatch_collect, again) == 0);
    FUZZ_REQUIRE(json_equal(evs, again));
    json_decref(again);
    json_decref(evs);
    return 0;
}
