/*
 * test_structured: fe_structured_function() and what an omitted "strict"
 * means per style. FE_STRICT_AUTO is OpenAI's Responses behaviour: a tool
 * whose schema conforms to strict mode, or does once its objects are closed
 * with additionalProperties:false, becomes strict with that schema; any other
 * becomes non-strict as given. An explicit true is checked (400 if it does
 * not conform) and an explicit false is taken as given, whatever the style.
 */
#include <jansson.h>
#include <stdlib.h>

#include "fe_structured.h"
#include "sb_test.h"

/* fe_structured_function() on the tool text; NULL with err filled. */
static json_t *fn(const char *text, fe_strict_default_t dflt, fe_error_t *err)
{
    json_error_t je;
    json_t *t = json_loads(text, 0, &je);
    if (!t) {
        fprintf(stderr, "bad test JSON: %s: %s\n", text, je.text);
        return NULL;
    }
    memset(err, 0, sizeof *err);
    json_t *out = fe_structured_function(t, dflt, "tools[0]", err);
    json_decref(t);
    return out;
}

/* The canonical tool's parameters equal want (JSON text). */
static int params_are(const json_t *tool, const char *want)
{
    json_t *w = json_loads(want, 0, NULL);
    int eq = w && json_equal(json_object_get(tool, "parameters"), w);
    if (!eq) {
        char *g = json_dumps(json_object_get(tool, "parameters"), JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "parameters: %s\n    wanted: %s\n", g ? g : "(none)", want);
        free(g);
    }
    json_decref(w);
    return eq;
}

#define CONFORMING                                                                                                     \
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"}},\"required\":[\"city\"],"                    \
    "\"additionalProperties\":false}"
/* Fixable: no additionalProperties anywhere, every property required, at the
 * root and inside items, anyOf and $defs. */
#define FIXABLE                                                                                                        \
    "{\"type\":\"object\",\"properties\":{"                                                                            \
    "\"stops\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"at\":{\"type\":\"string\"}},"      \
    "\"required\":[\"at\"]}},"                                                                                         \
    "\"via\":{\"anyOf\":[{\"$ref\":\"#/$defs/place\"},{\"type\":\"null\"}]}},"                                         \
    "\"required\":[\"stops\",\"via\"],"                                                                                \
    "\"$defs\":{\"place\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"                       \
    "\"required\":[\"name\"]}}}"
#define FIXED                                                                                                          \
    "{\"type\":\"object\",\"properties\":{"                                                                            \
    "\"stops\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{\"at\":{\"type\":\"string\"}},"      \
    "\"required\":[\"at\"],\"additionalProperties\":false}},"                                                          \
    "\"via\":{\"anyOf\":[{\"$ref\":\"#/$defs/place\"},{\"type\":\"null\"}]}},"                                         \
    "\"required\":[\"stops\",\"via\"],\"additionalProperties\":false,"                                                 \
    "\"$defs\":{\"place\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"                       \
    "\"required\":[\"name\"],\"additionalProperties\":false}}}"
/* An optional property: closing objects is not enough. */
#define OPTIONAL                                                                                                       \
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},\"unit\":{\"type\":\"string\"}},"             \
    "\"required\":[\"city\"]}"
/* A keyword strict mode does not support. */
#define UNSUPPORTED                                                                                                    \
    "{\"type\":\"object\",\"properties\":{\"mail\":{\"type\":\"string\",\"format\":\"email\"}},"                       \
    "\"required\":[\"mail\"]}"

static void test_auto(void)
{
    fe_error_t err;
    json_t *t;

    t = fn("{\"name\":\"w\",\"parameters\":" CONFORMING "}", FE_STRICT_AUTO, &err);
    CHECK(t != NULL);
    CHECK(json_is_true(json_object_get(t, "strict")));
    CHECK(params_are(t, CONFORMING));
    json_decref(t);

    /* fixable at every level: strict, with the closed schema carried (and echoed) */
    t = fn("{\"name\":\"route\",\"description\":\"d\",\"parameters\":" FIXABLE "}", FE_STRICT_AUTO, &err);
    CHECK(t != NULL);
    CHECK(json_is_true(json_object_get(t, "strict")));
    CHECK(params_are(t, FIXED));
    CHECK_STR(json_string_value(json_object_get(t, "description")), "d");
    json_decref(t);

    /* null strict counts as omitted */
    t = fn("{\"name\":\"route\",\"strict\":null,\"parameters\":" FIXABLE "}", FE_STRICT_AUTO, &err);
    CHECK(t != NULL && json_is_true(json_object_get(t, "strict")));
    json_decref(t);

    /* optional property, unsupported keyword, explicit additionalProperties:true, non-object root:
     * non-strict, schema untouched */
    const char *loose[] = {OPTIONAL, UNSUPPORTED,
                           ("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],"
                            "\"additionalProperties\":true}"),
                           "{\"properties\":{\"a\":{\"type\":\"string\"}}}"};
    for (size_t i = 0; i < sizeof loose / sizeof *loose; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"name\":\"w\",\"parameters\":%s}", loose[i]);
        t = fn(text, FE_STRICT_AUTO, &err);
        CHECK(t != NULL);
        CHECK(json_is_false(json_object_get(t, "strict")));
        CHECK(params_are(t, loose[i]));
        CHECK_INT(err.status, 0);
        json_decref(t);
    }

    /* no parameters: the empty object schema, which is strict */
    t = fn("{\"name\":\"ping\"}", FE_STRICT_AUTO, &err);
    CHECK(t != NULL && json_is_true(json_object_get(t, "strict")));
    CHECK(params_are(t, "{\"type\":\"object\",\"properties\":{},\"required\":[],\"additionalProperties\":false}"));
    json_decref(t);

    /* a schema that does not compile is still a 400, strict or not */
    t = fn("{\"name\":\"w\",\"parameters\":{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/none\"}}}}",
           FE_STRICT_AUTO, &err);
    CHECK(t == NULL);
    CHECK_INT(err.status, 400);
    json_decref(t);
}

static void test_explicit(void)
{
    fe_error_t err;
    json_t *t;
    for (int d = FE_STRICT_OFF; d <= FE_STRICT_AUTO; d++) {
        /* explicit true, non-conforming: today's 400, not normalised */
        t = fn("{\"name\":\"route\",\"strict\":true,\"parameters\":" FIXABLE "}", (fe_strict_default_t)d, &err);
        CHECK(t == NULL);
        CHECK_INT(err.status, 400);
        CHECK_STR(err.param, "tools[0].parameters");
        CHECK_STR(err.message, "Invalid schema for function 'route': In context=(), 'additionalProperties' is "
                               "required to be supplied and to be false.");
        t = fn("{\"name\":\"w\",\"strict\":true,\"parameters\":" OPTIONAL "}", (fe_strict_default_t)d, &err);
        CHECK(t == NULL);
        CHECK_INT(err.status, 400);
        /* explicit true, conforming */
        t = fn("{\"name\":\"w\",\"strict\":true,\"parameters\":" CONFORMING "}", (fe_strict_default_t)d, &err);
        CHECK(t != NULL && json_is_true(json_object_get(t, "strict")));
        json_decref(t);
        /* explicit false: as given, even when it could be made strict */
        t = fn("{\"name\":\"route\",\"strict\":false,\"parameters\":" FIXABLE "}", (fe_strict_default_t)d, &err);
        CHECK(t != NULL && json_is_false(json_object_get(t, "strict")));
        CHECK(params_are(t, FIXABLE));
        json_decref(t);
        /* not a boolean */
        t = fn("{\"name\":\"w\",\"strict\":\"yes\",\"parameters\":" CONFORMING "}", (fe_strict_default_t)d, &err);
        CHECK(t == NULL);
        CHECK_INT(err.status, 400);
    }
}

/* Chat Completions, Messages and Generate Content: omitted means non-strict,
 * and the schema is never rewritten. */
static void test_off(void)
{
    fe_error_t err;
    const char *schemas[] = {CONFORMING, FIXABLE, OPTIONAL};
    for (size_t i = 0; i < sizeof schemas / sizeof *schemas; i++) {
        char text[1024];
        snprintf(text, sizeof text, "{\"name\":\"w\",\"parameters\":%s}", schemas[i]);
        json_t *t = fn(text, FE_STRICT_OFF, &err);
        CHECK(t != NULL && json_is_false(json_object_get(t, "strict")));
        CHECK(params_are(t, schemas[i]));
        json_decref(t);
    }
}

int main(void)
{
    test_auto();
    test_explicit();
    test_off();
    return sb_test_finish("structured");
}
