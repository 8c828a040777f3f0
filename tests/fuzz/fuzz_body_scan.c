/*
 * fuzz_body_scan: libFuzzer harness for fe_body_scan, the pass over a request
 * body that enforces the JSON depth and element limits before jansson parses
 * it (fe_body.h), so a hostile body can drive neither the parser's recursion
 * nor its allocations. fe_body_json itself takes an evhttp request and is
 * being rewritten with the frontend's own HTTP layer; its limit checks are
 * exactly this scan compared with the configured limits.
 *
 * Input: a request body. Checked besides "no crash, no UB": fe_body_depth
 * agrees with the scan; and whenever jansson accepts the body (as fe_body_json
 * would parse it), the scan's depth and element count are exactly the
 * parsed value's nesting depth and its number of array elements plus object
 * members. So a body within the limits can never parse into more than they
 * allow, and a body refused by them never parses within them.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "fuzz.h"

/* The depth and element count of a parsed value, as fe_body_stats_t. */
static void fuzz_body_measure(const json_t *v, int level, int *depth, size_t *elements)
{
    if (!json_is_object(v) && !json_is_array(v))
        return;
    if (level + 1 > *depth)
        *depth = level + 1;
    if (json_is_array(v)) {
        *elements += json_array_size(v);
        for (size_t i = 0; i < json_array_size(v); i++)
            fuzz_body_measure(json_array_get(v, i), level + 1, depth, elements);
    } else {
        *elements += json_object_size(v);
        const char *k;
        json_t *m;
        json_object_foreach ((json_t *)v, k, m)
            fuzz_body_measure(m, level + 1, depth, elements);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    fe_body_stats_t st;
    fe_body_scan(buf, size, &st);
    FUZZ_REQUIRE(st.depth >= 0);
    FUZZ_REQUIRE(fe_body_depth(buf, size) == st.depth);
    /* at most one element per byte */
    FUZZ_REQUIRE(st.elements <= size);
    json_t *v = json_loadb(buf, size, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, NULL);
    if (v) {
        int depth = 0;
        size_t elements = 0;
        fuzz_body_measure(v, 0, &depth, &elements);
        if (depth != st.depth || elements != st.elements)
            fprintf(stderr, "scan: depth %d elements %zu; parsed: depth %d elements %zu\n", st.depth, st.elements,
                    depth, elements);
        FUZZ_REQUIRE(depth == st.depth);
        FUZZ_REQUIRE(elements == st.elements);
        json_decref(v);
    }
    return 0;
}
