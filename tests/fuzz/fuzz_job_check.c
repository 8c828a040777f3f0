/*
 * fuzz_job_check: libFuzzer harness for sb_job_check, which the worker runs on
 * every job it receives: a msgpack frame from the broker, decoded to JSON
 * (the broker never looks inside, so whatever a frontend or a confused peer
 * sent arrives as is).
 *
 * Input: a job as msgpack (decoded with sb_mpjson_decode, as the worker
 * does), or as JSON text when it starts with '{' (so seeds can be written by
 * hand). Checked besides "no crash, no leak, no UB": the check answers 0
 * with no event, or -EINVAL with a 400 invalid_request error event; it
 * refuses exactly the jobs an independent reading of sb_job.h's rules
 * refuses, with that reading's message; and sb_item's readings of every item
 * and part spell back to the type string they read.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_event.h"
#include "sb_item.h"
#include "sb_job.h"
#include "sb_mpjson.h"

static bool fuzz_str(const json_t *obj, const char *key)
{
    return json_is_string(json_object_get(obj, key));
}

static bool fuzz_is(const json_t *obj, const char *key, const char *value)
{
    const char *s = json_string_value(json_object_get(obj, key));
    return s && !strcmp(s, value);
}

/* The first problem sb_job.h's rules name, written out from the rules (not
 * from sb_job.c): into msg, false; or true when there is none. */
static bool fuzz_rules(const json_t *job, char *msg, size_t size)
{
    const json_t *req = json_is_object(job) ? json_object_get(job, "request") : NULL;
    if (!json_is_object(req)) {
        snprintf(msg, size, "job has no request");
        return false;
    }
    const json_t *input = json_object_get(req, "input");
    if (!(input == NULL || json_is_null(input) || json_is_array(input))) {
        snprintf(msg, size, "request.input must be an array of items");
        return false;
    }
    for (size_t i = 0; json_is_array(input) && i < json_array_size(input); i++) {
        const json_t *it = json_array_get(input, i);
        if (!json_is_object(it) || !fuzz_str(it, "type")) {
            snprintf(msg, size, "input item %zu has no type", i);
            return false;
        }
        bool role_ok = fuzz_is(it, "role", "system") || fuzz_is(it, "role", "developer") ||
                       fuzz_is(it, "role", "user") || fuzz_is(it, "role", "assistant");
        if (fuzz_is(it, "type", "message") && !role_ok) {
            snprintf(msg, size, "input item %zu has an unsupported role", i);
            return false;
        }
        if (fuzz_is(it, "type", "function_call") && !(fuzz_str(it, "call_id") && fuzz_str(it, "name"))) {
            snprintf(msg, size, "function_call items need call_id and name");
            return false;
        }
        if (fuzz_is(it, "type", "function_call_output") && !fuzz_str(it, "call_id")) {
            snprintf(msg, size, "function_call_output items need call_id");
            return false;
        }
    }
    const json_t *tools = json_object_get(req, "tools");
    if (!(tools == NULL || json_is_null(tools) || json_is_array(tools))) {
        snprintf(msg, size, "request.tools must be an array");
        return false;
    }
    for (size_t i = 0; json_is_array(tools) && i < json_array_size(tools); i++) {
        const json_t *t = json_array_get(tools, i);
        if (fuzz_is(t, "type", "function") && !fuzz_str(t, "name")) {
            snprintf(msg, size, "function tool %zu has no name", i);
            return false;
        }
    }
    return true;
}

/* An object's "type" read by sb_item spells back to the same string. */
static void fuzz_vocabulary(const json_t *job)
{
    const json_t *input = json_object_get(json_object_get(job, "request"), "input");
    size_t i, k;
    const json_t *it, *part;
    json_array_foreach (input, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        enum sb_item_type t = sb_item_type_of(it);
        FUZZ_REQUIRE(t == SB_ITEM_UNKNOWN || !strcmp(sb_item_type_name(t), type));
        FUZZ_REQUIRE(t == sb_item_type_named(type));
        enum sb_role r = sb_role_of(it);
        FUZZ_REQUIRE(r == SB_ROLE_UNKNOWN || !strcmp(sb_role_name(r), json_string_value(json_object_get(it, "role"))));
        json_array_foreach (json_object_get(it, "content"), k, part) {
            enum sb_part_type p = sb_part_type_of(part);
            FUZZ_REQUIRE(p == SB_PART_UNKNOWN ||
                         !strcmp(sb_part_type_name(p), json_string_value(json_object_get(part, "type"))));
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *job = NULL;
    if (size > 0 && data[0] == '{')
        job = json_loadb((const char *)data, size, 0, NULL);
    else if (sb_mpjson_decode(data, size, &job) != 0)
        return 0;
    if (!job)
        return 0;
    json_t *err = (json_t *)1;
    int rc = sb_job_check(job, &err);
    char want[128];
    bool ok = fuzz_rules(job, want, sizeof want);
    if (rc == 0) {
        FUZZ_REQUIRE(err == NULL && ok);
    } else {
        FUZZ_REQUIRE(rc == -EINVAL && err && !ok);
        FUZZ_REQUIRE(sb_event_type_of(err) == SB_EV_ERROR);
        FUZZ_REQUIRE(json_integer_value(json_object_get(err, "status")) == 400);
        FUZZ_REQUIRE(!strcmp(json_string_value(json_object_get(err, "kind")), SB_ERR_INVALID_REQUEST));
        FUZZ_REQUIRE(!strcmp(json_string_value(json_object_get(err, "message")), want));
        json_decref(err);
    }
    fuzz_vocabulary(job);
    json_decref(job);
    return 0;
}
