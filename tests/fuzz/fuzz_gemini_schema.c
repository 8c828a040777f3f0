/*
 * fuzz_gemini_schema: libFuzzer harness for fe_gemini_schema, which converts
 * a client's Gemini Schema (Google's OpenAPI subset: functionDeclarations
 * parameters, generationConfig.responseSchema) into JSON Schema, and for the
 * proto3 JSON field readers of fe_gemini_json.
 *
 * Input: one JSON text, the schema. Checked besides "no crash, no leak, no
 * UB": the conversion gives a JSON object, or NULL with a 400 error and a
 * message; and what it gives is compiled with sb_jschema_new as the Gemini
 * style does next (either outcome is fine: the style answers a refusal as a
 * 400). The field readers (string, bool, int, number, array, known) are run
 * on the same object with the names the style uses.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_json.h"
#include "fuzz.h"
#include "sb_jschema.h"

/* An error the readers set: a 400 with a message, or none at all. */
static void fuzz_gemini_err_ok(int rc, const fe_error_t *err)
{
    if (rc < 0)
        FUZZ_REQUIRE(err->status == 400 && err->message[0] != '\0');
}

static void fuzz_gemini_readers(const json_t *o)
{
    fe_error_t err;
    const char *s = NULL;
    bool b = false;
    long long i = 0;
    double d = 0;
    memset(&err, 0, sizeof err);
    fuzz_gemini_err_ok(fe_gemini_string(o, "responseMimeType", "generation_config", &s, &err), &err);
    memset(&err, 0, sizeof err);
    fuzz_gemini_err_ok(fe_gemini_bool(o, "includeThoughts", "thinking_config", &b, &err), &err);
    memset(&err, 0, sizeof err);
    fuzz_gemini_err_ok(fe_gemini_int(o, "maxOutputTokens", "generation_config", 1, 1LL << 40, &i, &err), &err);
    memset(&err, 0, sizeof err);
    fuzz_gemini_err_ok(fe_gemini_number(o, "temperature", "generation_config", 0, 2, &d, &err), &err);
    memset(&err, 0, sizeof err);
    json_t *arr = fe_gemini_array(o, "stopSequences", "generation_config", &err);
    if (!arr && err.status)
        FUZZ_REQUIRE(err.status == 400 && err.message[0] != '\0');
    static const char *const known[] = {"type",       "format",           "description", "nullable", "enum",
                                        "properties", "required",         "items",       "anyOf",    "minimum",
                                        "maximum",    "propertyOrdering", NULL};
    memset(&err, 0, sizeof err);
    fuzz_gemini_err_ok(fe_gemini_known(o, known, "generation_config.response_schema", &err), &err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *in = json_loadb((const char *)data, size, JSON_DECODE_ANY, NULL);
    if (!in)
        return 0;
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *out = fe_gemini_schema(in, "generation_config.response_schema", 0, &err);
    if (!out) {
        FUZZ_REQUIRE(err.status == 400 && err.message[0] != '\0');
    } else {
        FUZZ_REQUIRE(json_is_object(out));
        char msg[256];
        sb_jschema_t *s = sb_jschema_new(out, msg, sizeof msg);
        sb_jschema_destroy(&s);
        json_decref(out);
    }
    if (json_is_object(in))
        fuzz_gemini_readers(in);
    json_decref(in);
    return 0;
}
