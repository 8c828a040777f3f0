/*
 * fuzz_mpjson: libFuzzer harness for sb_mpjson_decode, the msgpack -> JSON
 * decoder every process runs on the frames its ZeroMQ peers send (job
 * headers and bodies, events). A peer is another process of the gateway,
 * but a frame that arrives corrupted or from a confused peer must be
 * refused, never trusted (CONVENTIONS.md: never assert on msgpack).
 *
 * Input: one msgpack value. Checked besides "no crash, no leak, no UB":
 * decode returns 0 with a value or -EINVAL/-E2BIG with none; a decoded value
 * re-encodes (sb_mpjson_encode) to bytes that decode to an equal value, and
 * encoding is then stable (the second encoding is byte-identical).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_mpjson.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *v = (json_t *)1;
    int rc = sb_mpjson_decode(data, size, &v);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EINVAL || rc == -E2BIG);
        FUZZ_REQUIRE(v == NULL);
        return 0;
    }
    FUZZ_REQUIRE(v != NULL);
    char *enc = NULL, *enc2 = NULL;
    size_t n = 0, n2 = 0;
    FUZZ_REQUIRE(sb_mpjson_encode(v, &enc, &n) == 0);
    json_t *again = NULL;
    FUZZ_REQUIRE(sb_mpjson_decode(enc, n, &again) == 0);
    FUZZ_REQUIRE(json_equal(v, again));
    FUZZ_REQUIRE(sb_mpjson_encode(again, &enc2, &n2) == 0);
    FUZZ_REQUIRE(n == n2 && memcmp(enc, enc2, n) == 0);
    free(enc);
    free(enc2);
    json_decref(again);
    json_decref(v);
    return 0;
}
