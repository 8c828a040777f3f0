/*
 * fuzz_vsearch_params: libFuzzer harness for file search's request checker
 * and attribute filters (wtool_vsfilter.c): a client's search request (the
 * Vector Stores API's, or a file_search tool's fields and a model's
 * queries), filters nested at will.
 *
 * Input: JSON text. Checked besides "no crash, no leak, no UB" (filters
 * nested thousands deep must be refused, not recursed into): 0 with a
 * request inside OpenAI's bounds (1 to 10 non-empty queries, 1 to 50
 * results, a threshold in [0, 1], weights >= 0 not both 0, a filter that
 * sb_vs_filter_check accepts), or -EINVAL with a 400 error event and
 * nothing kept. An accepted filter is applied to the request itself and to
 * a few attribute sets, and "and"/"or" of it agree with its own answer.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>

#include "fuzz.h"
#include "wtool_vsearch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *j = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!j)
        return 0;
    sb_vs_params_t p;
    json_t *err = NULL;
    int rc = sb_vs_params_parse(j, &p, &err);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
        FUZZ_REQUIRE(err && json_integer_value(json_object_get(err, "status")) == 400);
        FUZZ_REQUIRE(!p.queries && !p.store_ids && !p.filter);
        json_decref(err);
        json_decref(j);
        return 0;
    }
    FUZZ_REQUIRE(err == NULL);
    size_t nq = json_array_size(p.queries);
    FUZZ_REQUIRE(nq >= 1 && nq <= SB_VS_MAX_QUERIES);
    for (size_t i = 0; i < nq; i++)
        FUZZ_REQUIRE(json_string_length(json_array_get(p.queries, i)) > 0);
    FUZZ_REQUIRE(p.max_results >= 1 && p.max_results <= SB_VS_MAX_RESULTS);
    FUZZ_REQUIRE(p.threshold >= 0 && p.threshold <= 1);
    FUZZ_REQUIRE(p.ew >= 0 && p.tw >= 0 && p.ew + p.tw > 0);
    if (p.filter) {
        char why[200];
        FUZZ_REQUIRE(sb_vs_filter_check(p.filter, why, sizeof why) == 0);
        json_t *attrs[] = {json_object(), json_pack("{s:s, s:i, s:f, s:b}", "a", "x", "b", 2, "c", 1.5, "d", 1), j};
        for (size_t i = 0; i < 3; i++) {
            bool m = sb_vs_filter_match(p.filter, attrs[i]);
            json_t *and = json_pack("{s:s, s:[O]}", "type", "and", "filters", p.filter);
            json_t * or = json_pack("{s:s, s:[O, O]}", "type", "or", "filters", p.filter, p.filter);
            FUZZ_REQUIRE(sb_vs_filter_match(and, attrs[i]) == m);
            FUZZ_REQUIRE(sb_vs_filter_match(or, attrs[i]) == m);
            json_decref(and);
            json_decref(or);
        }
        json_decref(attrs[0]);
        json_decref(attrs[1]);
    }
    sb_vs_params_clear(&p);
    json_decref(j);
    return 0;
}
