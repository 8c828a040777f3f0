/*
 * fuzz_strict: libFuzzer harness for worker/strict.c, which parses a model's
 * output (upstream bytes, untrusted) as JSON and checks it against the
 * strict schemas of the client's request (client bytes, untrusted).
 *
 * Input: a JSON schema, then the model's output text (the rest of the input,
 * when valid UTF-8). The schema becomes both a strict text.format and a strict
 * function tool's parameters; the output is both a message's output_text and
 * the tool call's arguments. Checked besides "no crash, no leak, no UB":
 * sb_strict_new gives a checker or a 400 error event; sb_strict_check
 * answers 0 exactly when the output parses as JSON and sb_jschema_validate
 * accepts it, and -1 with both messages set otherwise.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_event.h"
#include "sb_jschema.h"
#include "strict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *schema = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &jerr);
    if (!schema)
        return 0;
    size_t used = (size_t)jerr.position;
    json_t *text = json_stringn((const char *)data + used, size - used);
    if (!text) { /* not UTF-8: no upstream reply decodes to that */
        json_decref(schema);
        return 0;
    }
    json_t *request = json_pack("{s:{s:{s:s, s:s, s:b, s:O}}, s:[{s:s, s:s, s:b, s:O}]}", "text", "format", "type",
                                "json_schema", "name", "answer", "strict", 1, "schema", schema, "tools", "type",
                                "function", "name", "f", "strict", 1, "parameters", schema);
    FUZZ_REQUIRE(request != NULL);
    sb_strict_t *s = NULL;
    json_t *err = NULL;
    int rc = sb_strict_new(request, &s, &err);
    if (rc != 0) {
        FUZZ_REQUIRE(rc == -EINVAL && s == NULL);
        FUZZ_REQUIRE(sb_event_type_of(err) == SB_EV_ERROR);
        json_decref(err);
    } else {
        FUZZ_REQUIRE(s != NULL && err == NULL);
        json_t *message = json_pack("{s:s, s:s, s:s, s:[{s:s, s:O, s:[]}]}", "type", "message", "id", "msg_1", "role",
                                    "assistant", "content", "type", "output_text", "text", text, "annotations");
        json_t *call = json_pack("{s:s, s:s, s:s, s:s, s:O}", "type", "function_call", "id", "fc_1", "call_id",
                                 "call_1", "name", "f", "arguments", text);
        json_t *events = json_pack("[o, o]", sb_event_item_done(0, message), sb_event_item_done(1, call));
        json_t *final = sb_event_completed("completed", NULL, "m", 1);
        char what[256] = "", why[512] = "";
        int got = sb_strict_check(s, events, final, what, sizeof what, why, sizeof why);

        /* what the check should say */
        int want = -1;
        json_t *v = json_loadb(json_string_value(text), json_string_length(text), JSON_DECODE_ANY, NULL);
        if (v) {
            sb_jschema_t *js = sb_jschema_new(schema, NULL, 0);
            FUZZ_REQUIRE(js != NULL);
            want = sb_jschema_validate(js, v, NULL, 0) == 0 ? 0 : -1;
            sb_jschema_destroy(&js);
            json_decref(v);
        }
        FUZZ_REQUIRE(got == want);
        if (got != 0)
            FUZZ_REQUIRE(what[0] != '\0' && why[0] != '\0');
        json_decref(events);
        json_decref(final);
        sb_strict_destroy(&s);
        FUZZ_REQUIRE(s == NULL);
    }
    json_decref(request);
    json_decref(text);
    json_decref(schema);
    return 0;
}
