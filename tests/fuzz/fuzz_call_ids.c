/*
 * fuzz_call_ids: libFuzzer harness for fe_call_ids_open, which opens the
 * "sbc_" call ids clients send back in function_call and
 * function_call_output items (fe_call_ids.h) and splices what they seal
 * (the upstream's call id, a thought signature, a reasoning item) into the
 * job's input.
 *
 * Input: a JSON array of canonical input items (anything else is ignored).
 * A call_id that is a string is used as sent: "sbc_" + garbage, a replayed
 * token from another account, or an ordinary id. A call_id that is an object
 * stands for a token the gateway sealed: the harness seals it (under the
 * caller's account, as fe_call_ids_seal_event does) and puts "sbc_" + token
 * in its place, so the fuzzer controls the plaintext of genuine tokens too.
 * An object under "foreign_call_id" is sealed for another account instead.
 *
 * Checked besides "no crash, no leak, no UB": the items stay an array with
 * no fewer members, and a foreign token is never opened (its call_id is left
 * as sent, in its place).
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_call_ids.h"
#include "fe_reasoning.h"
#include "fe_request.h"
#include "fuzz.h"
#include "sb_seal.h"

#define FUZZ_CALL_IDS_KEY "4242424242424242424242424242424242424242424242424242424242424242"

/* Replaces an object call_id by a sealed "sbc_" token of it, for the account
 * of r. Returns the new call_id (borrowed from item) or NULL. */
static const char *fuzz_call_ids_seal(const fe_request_t *r, json_t *item, const char *field)
{
    json_t *payload = json_object_get(item, field);
    if (!json_is_object(payload))
        return NULL;
    char *token = fe_reasoning_seal_item(r, payload);
    FUZZ_REQUIRE(token != NULL);
    json_t *id = json_sprintf(FE_CALL_ID_PREFIX "%s", token);
    free(token);
    json_object_set_new(item, "call_id", id);
    json_object_del(item, field);
    return json_string_value(id);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *items = json_loadb((const char *)data, size, 0, NULL);
    if (!json_is_array(items)) {
        json_decref(items);
        return 0;
    }
    static fe_server_t srv;
    if (!srv.seal_ready) {
        FUZZ_REQUIRE(sb_seal_key_parse(FUZZ_CALL_IDS_KEY, &srv.seal_key) == 0);
        srv.seal_ready = true;
    }
    fe_request_t r, other;
    memset(&r, 0, sizeof r);
    memset(&other, 0, sizeof other);
    r.srv = other.srv = &srv;
    r.key = json_pack("{s:i, s:i}", "key_id", 7, "account_id", 1);
    other.key = json_pack("{s:i, s:i}", "key_id", 8, "account_id", 2);

    size_t n = json_array_size(items);
    json_t *foreign = json_array(); /* the foreign tokens, in order */
    for (size_t i = 0; i < n; i++) {
        json_t *it = json_array_get(items, i);
        if (!json_is_object(it))
            continue;
        if (json_is_object(json_object_get(it, "call_id")))
            fuzz_call_ids_seal(&r, it, "call_id");
        else if (json_is_object(json_object_get(it, "foreign_call_id"))) {
            const char *id = fuzz_call_ids_seal(&other, it, "foreign_call_id");
            json_array_append_new(foreign, json_string(id));
        }
    }

    fe_call_ids_open(&r, items);

    FUZZ_REQUIRE(json_is_array(items) && json_array_size(items) >= n);
    /* every foreign token is still there, unopened */
    size_t fi = 0;
    for (size_t i = 0; i < json_array_size(items) && fi < json_array_size(foreign); i++) {
        const char *id = json_string_value(json_object_get(json_array_get(items, i), "call_id"));
        if (id && !strcmp(id, json_string_value(json_array_get(foreign, fi))))
            fi++;
    }
    FUZZ_REQUIRE(fi == json_array_size(foreign));

    json_decref(foreign);
    json_decref(r.key);
    json_decref(other.key);
    json_decref(items);
    return 0;
}
