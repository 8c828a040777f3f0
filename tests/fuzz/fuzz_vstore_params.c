/*
 * fuzz_vstore_params: libFuzzer harness for fe_vstore_params, the checks of
 * the Vector Stores API's client JSON (chunking strategies, attributes,
 * expiry policies, the files a request attaches, search filters, the search
 * request).
 *
 * Input: one JSON object, read as every endpoint's body at once: attach
 * with each of the three modes, search, and each field check on its own
 * key ("chunking_strategy", "attributes", "expires_after", "filters").
 * Checked besides "no crash, no leak, no UB": each check gives its result
 * or a 400 with a message and the field's name; an attach list is an array
 * of {file_id: a non-empty string, attributes: an object, chunking_strategy:
 * static with 100..4096 tokens and an overlap of at most half}; a search
 * request has op "vs_search", the store's id, and 1..50 results.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_vstore_params.h"
#include "fuzz.h"

static void fuzz_vstore_refused(const fe_error_t *err)
{
    FUZZ_REQUIRE(err->status == 400);
    FUZZ_REQUIRE(err->message[0] != '\0');
    /* Every refusal names its field; only an unknown key may be named "". */
    FUZZ_REQUIRE(err->param[0] != '\0' || !strcmp(err->code, "unknown_parameter"));
}

static void fuzz_vstore_strategy(const json_t *cs)
{
    FUZZ_REQUIRE(json_is_object(cs));
    FUZZ_REQUIRE(!strcmp(json_string_value(json_object_get(cs, "type")), "static"));
    const json_t *st = json_object_get(cs, "static");
    json_int_t max = json_integer_value(json_object_get(st, "max_chunk_size_tokens"));
    json_int_t overlap = json_integer_value(json_object_get(st, "chunk_overlap_tokens"));
    FUZZ_REQUIRE(max >= FE_VSTORE_CHUNK_MIN && max <= FE_VSTORE_CHUNK_MAX);
    FUZZ_REQUIRE(overlap >= 0 && overlap <= max / 2);
}

static void fuzz_vstore_attach(const json_t *body, enum fe_vstore_attach mode)
{
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *files = fe_vstore_params_attach(body, mode, &err);
    if (!files) {
        fuzz_vstore_refused(&err);
        return;
    }
    FUZZ_REQUIRE(json_is_array(files) && json_array_size(files) <= FE_VSTORE_MAX_FILES);
    FUZZ_REQUIRE(mode != FE_VSTORE_ATTACH_ONE || json_array_size(files) == 1);
    FUZZ_REQUIRE(mode != FE_VSTORE_ATTACH_BATCH || json_array_size(files) >= 1);
    size_t i;
    const json_t *f;
    json_array_foreach (files, i, f) {
        const char *id = json_string_value(json_object_get(f, "file_id"));
        FUZZ_REQUIRE(id && *id);
        const json_t *attrs = json_object_get(f, "attributes");
        FUZZ_REQUIRE(json_is_object(attrs) && json_object_size(attrs) <= 16);
        fuzz_vstore_strategy(json_object_get(f, "chunking_strategy"));
    }
    json_decref(files);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    fe_error_t err;
    fuzz_vstore_attach(body, FE_VSTORE_ATTACH_ONE);
    fuzz_vstore_attach(body, FE_VSTORE_ATTACH_STORE);
    fuzz_vstore_attach(body, FE_VSTORE_ATTACH_BATCH);

    memset(&err, 0, sizeof err);
    json_t *search = fe_vstore_params_search(body, "vs_fuzz", &err);
    if (search) {
        FUZZ_REQUIRE(!strcmp(json_string_value(json_object_get(search, "op")), "vs_search"));
        FUZZ_REQUIRE(
            !strcmp(json_string_value(json_array_get(json_object_get(search, "vector_store_ids"), 0)), "vs_fuzz"));
        json_int_t n = json_integer_value(json_object_get(search, "max_num_results"));
        FUZZ_REQUIRE(n >= 1 && n <= FE_VSTORE_MAX_RESULTS);
        FUZZ_REQUIRE(json_is_boolean(json_object_get(search, "rewrite_query")));
        json_decref(search);
    } else {
        fuzz_vstore_refused(&err);
    }

    memset(&err, 0, sizeof err);
    json_t *cs = fe_vstore_params_chunking(json_object_get(body, "chunking_strategy"), "chunking_strategy", &err);
    if (cs)
        fuzz_vstore_strategy(cs);
    else
        fuzz_vstore_refused(&err);
    json_decref(cs);

    memset(&err, 0, sizeof err);
    if (fe_vstore_params_attributes(json_object_get(body, "attributes"), "attributes", &err) < 0)
        fuzz_vstore_refused(&err);
    memset(&err, 0, sizeof err);
    if (fe_vstore_params_expires_after(json_object_get(body, "expires_after"), "expires_after", true, &err) < 0)
        fuzz_vstore_refused(&err);
    memset(&err, 0, sizeof err);
    if (fe_vstore_params_filters(json_object_get(body, "filters"), "filters", &err) < 0)
        fuzz_vstore_refused(&err);
    json_decref(body);
    return 0;
}
