/*
 * fuzz_jschema: libFuzzer harness for sb_jschema, which compiles JSON schemas
 * from client requests (response_format, tool parameters) and validates
 * model output and request values against them.
 *
 * Input: two JSON texts one after the other, the schema then the instance
 * (whitespace between them; a missing or broken instance is just not
 * validated). Checked besides "no crash, no leak, no UB": compiling either
 * gives a schema or a message; validation answers 0, or -1/-ELOOP/-E2BIG with
 * a message; validating twice gives the same answer (the compiled schema is
 * not changed by use); sb_jschema_check_strict answers 0 or -EINVAL with a
 * message, and passes only schemas that compile; sb_jschema_close_objects
 * copies any schema, and its copy still compiles when the original did.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_jschema.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *schema = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK, &jerr);
    if (!schema)
        return 0;
    size_t used = (size_t)jerr.position;
    json_t *instance = NULL;
    if (used < size)
        instance = json_loadb((const char *)data + used, size - used, JSON_DECODE_ANY, NULL);

    char err[512] = "";
    sb_jschema_t *s = sb_jschema_new(schema, err, sizeof err);
    if (!s)
        FUZZ_REQUIRE(err[0] != '\0');
    if (s && instance) {
        char why[512] = "", why2[512] = "";
        int rc = sb_jschema_validate(s, instance, why, sizeof why);
        FUZZ_REQUIRE(rc == 0 || rc == -1 || rc == -ELOOP || rc == -E2BIG);
        if (rc != 0)
            FUZZ_REQUIRE(why[0] != '\0');
        FUZZ_REQUIRE(sb_jschema_validate(s, instance, why2, sizeof why2) == rc);
        FUZZ_REQUIRE(strcmp(why, why2) == 0);
        /* the schema validates itself as a value too (schemas are instances) */
        rc = sb_jschema_validate(s, schema, NULL, 0);
        FUZZ_REQUIRE(rc == 0 || rc == -1 || rc == -ELOOP || rc == -E2BIG);
    }

    err[0] = '\0';
    int rc = sb_jschema_check_strict(schema, err, sizeof err);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc != 0)
        FUZZ_REQUIRE(err[0] != '\0');
    else
        FUZZ_REQUIRE(s != NULL);

    json_t *closed = sb_jschema_close_objects(schema);
    FUZZ_REQUIRE(closed != NULL);
    sb_jschema_t *cs = sb_jschema_new(closed, NULL, 0);
    /* closing adds additionalProperties:false only: it cannot break a schema */
    if (s)
        FUZZ_REQUIRE(cs != NULL);
    sb_jschema_destroy(&cs);
    json_decref(closed);

    sb_jschema_destroy(&s);
    FUZZ_REQUIRE(s == NULL);
    json_decref(instance);
    json_decref(schema);
    return 0;
}
