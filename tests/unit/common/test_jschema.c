/*
 * Unit tests for sb_jschema: the official JSON Schema Test Suite (draft 7,
 * Debian package json-schema-test-suite) for the supported keywords, then our
 * own cases: error paths, strict mode, $ref cycles, limits, Unicode. The
 * pattern language itself (sb_regex) is tested in test_regex.c; here only how
 * "pattern" is compiled, reported and applied.
 *
 * The suite directory is $SB_JSCHEMA_SUITE_DIR, else the SB_JSCHEMA_SUITE_DIR
 * compile definition, else the Debian path. A missing suite fails the test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_jschema.h"
#include "sb_test.h"

#ifndef SB_JSCHEMA_SUITE_DIR
#define SB_JSCHEMA_SUITE_DIR "/usr/share/json-schema-test-suite/tests/draft7"
#endif

static const char *const suite_files[] = {
    "type",
    "properties",
    "required",
    "additionalProperties",
    "enum",
    "const",
    "anyOf",
    "items",
    "ref",
    "definitions",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
    "boolean_schema",
};

/* Cases the suite runs that need features outside the supported subset. A
 * NULL test skips the whole group (its schema is not even compiled). Every
 * entry must match a case in the suite: a stale entry fails the test. */
static const struct skip {
    const char *file, *group, *test, *reason;
} skips[] = {
    /* Remote references (http://...), here to the draft-07 metaschema. */
    {"ref.json", "remote ref, containing refs itself", NULL, "remote $ref"},
    {"definitions.json", "valid definition", NULL, "remote $ref to the draft-07 metaschema"},
    {"definitions.json", "invalid definition", NULL, "remote $ref to the draft-07 metaschema"},
    /* $id changing the base URI, with refs relative to it ("node", "tree"). */
    {"ref.json", "Recursive references between schemas", NULL, "$id base URI changes"},
    /* Array-form items (tuple validation); sb_jschema_new() rejects it. */
    {"items.json", "an array of schemas for items", NULL, "array-form items"},
    {"items.json", "items with boolean schemas", NULL, "array-form items"},
    {"ref.json", "relative pointer ref to array", NULL, "array-form items"},
    /* patternProperties is not a supported keyword, so it is ignored and
     * additionalProperties sees those keys as additional. The interaction case
     * "patternProperty invalidates nonproperty" would pass, but for the wrong
     * reason (additionalProperties, not minItems), so it is skipped too. */
    {"additionalProperties.json", "additionalProperties being false does not allow other properties",
     "patternProperties are not additional properties", "patternProperties"},
    {"additionalProperties.json", "non-ASCII pattern with additionalProperties", "matching the pattern is valid",
     "patternProperties"},
    {"properties.json", "properties, patternProperties, additionalProperties interaction",
     "patternProperty invalidates property", "patternProperties"},
    {"properties.json", "properties, patternProperties, additionalProperties interaction",
     "patternProperty validates nonproperty", "patternProperties"},
    {"properties.json", "properties, patternProperties, additionalProperties interaction",
     "patternProperty invalidates nonproperty", "patternProperties (passes only by accident)"},
    /* Draft 7 ignores keywords next to $ref; we follow 2020-12 (and what
     * OpenAI schemas mean), where they apply. Only this case differs. */
    {"ref.json", "ref overrides any sibling keywords", "ref valid, maxItems ignored", "2020-12 $ref sibling semantics"},
};

#define NSKIPS (sizeof skips / sizeof *skips)
static int skip_used[NSKIPS];

/* Marks and returns 1 if (file, group, test) is skip-listed; test NULL asks
 * about the whole group. */
static int skipped_case(const char *file, const char *group, const char *test)
{
    for (size_t i = 0; i < NSKIPS; i++) {
        if (strcmp(skips[i].file, file) || strcmp(skips[i].group, group))
            continue;
        if (!skips[i].test ? !test : (test && !strcmp(skips[i].test, test))) {
            skip_used[i] = 1;
            return 1;
        }
    }
    return 0;
}

static void run_suite(void)
{
    const char *dir = getenv("SB_JSCHEMA_SUITE_DIR");
    if (!dir || !*dir)
        dir = SB_JSCHEMA_SUITE_DIR;
    int passed = 0, skipped = 0;
    for (size_t f = 0; f < sizeof suite_files / sizeof *suite_files; f++) {
        char path[1024], file[64];
        snprintf(file, sizeof file, "%s.json", suite_files[f]);
        snprintf(path, sizeof path, "%s/%s", dir, file);
        json_error_t jerr;
        json_t *groups = json_load_file(path, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        if (!groups)
            fprintf(stderr, "cannot load %s: %s (install json-schema-test-suite or set SB_JSCHEMA_SUITE_DIR)\n", path,
                    jerr.text);
        CHECK(json_is_array(groups));
        size_t gi;
        json_t *g;
        json_array_foreach (groups, gi, g) {
            const char *gdesc = json_string_value(json_object_get(g, "description"));
            json_t *tests = json_object_get(g, "tests");
            CHECK(gdesc && json_is_array(tests));
            if (!gdesc || !json_is_array(tests))
                continue;
            if (skipped_case(file, gdesc, NULL)) {
                skipped += (int)json_array_size(tests);
                continue;
            }
            char err[512];
            sb_jschema_t *s = sb_jschema_new(json_object_get(g, "schema"), err, sizeof err);
            if (!s) {
                fprintf(stderr, "%s / %s: schema rejected: %s\n", file, gdesc, err);
                CHECK(s != NULL);
                continue;
            }
            size_t ti;
            json_t *t;
            json_array_foreach (tests, ti, t) {
                const char *tdesc = json_string_value(json_object_get(t, "description"));
                if (!tdesc)
                    tdesc = "";
                if (skipped_case(file, gdesc, tdesc)) {
                    skipped++;
                    continue;
                }
                int want = json_is_true(json_object_get(t, "valid"));
                int rc = sb_jschema_validate(s, json_object_get(t, "data"), err, sizeof err);
                CHECK(rc == 0 || rc == -1);
                if ((rc == 0) != want) {
                    fprintf(stderr, "%s / %s / %s: expected %s, got rc=%d (%s)\n", file, gdesc, tdesc,
                            want ? "valid" : "invalid", rc, err);
                    CHECK((rc == 0) == want);
                } else {
                    passed++;
                }
                if (rc == 0)
                    CHECK_STR(err, "");
                else
                    CHECK(err[0] == '$');
            }
            sb_jschema_destroy(&s);
        }
        json_decref(groups);
    }
    for (size_t i = 0; i < NSKIPS; i++) {
        if (!skip_used[i]) {
            fprintf(stderr, "stale skip entry: %s / %s / %s\n", skips[i].file, skips[i].group,
                    skips[i].test ? skips[i].test : "(whole group)");
            CHECK(skip_used[i]);
        }
    }
    printf("JSON Schema Test Suite (draft7): %d passed, %d skipped\n", passed, skipped);
    CHECK(passed > 0);
}

/* ---- helpers for our own cases ---- */

static json_t *js(const char *text)
{
    json_error_t e;
    json_t *j = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &e);
    if (!j)
        fprintf(stderr, "bad JSON in test: %s: %s\n", text, e.text);
    return j;
}

/* Compiles schema text; NULL with the error printed if it does not compile. */
static sb_jschema_t *compile(const char *schema, char *err, size_t errsz)
{
    json_t *j = js(schema);
    sb_jschema_t *s = sb_jschema_new(j, err, errsz);
    json_decref(j);
    return s;
}

/* Validates instance text; returns rc and leaves the reason in err. */
static int check(const sb_jschema_t *s, const char *inst, char *err, size_t errsz)
{
    json_t *j = js(inst);
    int rc = sb_jschema_validate(s, j, err, errsz);
    json_decref(j);
    return rc;
}

/* 0/-1 for one schema and one instance, or 99 if the schema is rejected. */
static int valid(const char *schema, const char *inst)
{
    char err[512];
    sb_jschema_t *s = compile(schema, err, sizeof err);
    if (!s) {
        fprintf(stderr, "schema %s rejected: %s\n", schema, err);
        return 99;
    }
    int rc = check(s, inst, err, sizeof err);
    sb_jschema_destroy(&s);
    return rc;
}

static int strict(const char *schema, char *err, size_t errsz)
{
    json_t *j = js(schema);
    int rc = sb_jschema_check_strict(j, err, errsz);
    json_decref(j);
    return rc;
}

static void test_messages(void)
{
    char err[512];
    sb_jschema_t *s = compile("{\"type\":\"object\",\"properties\":{\"items\":{\"type\":\"array\",\"items\":"
                              "{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"}},"
                              "\"required\":[\"name\"]}}}}",
                              err, sizeof err);
    CHECK(s != NULL);
    CHECK_INT(check(s, "{\"items\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":3}]}", err, sizeof err), -1);
    CHECK_STR(err, "$.items[2].name: expected string, got integer");
    CHECK_INT(check(s, "{\"items\":[{\"name\":\"a\"},{}]}", err, sizeof err), -1);
    CHECK_STR(err, "$.items[1]: missing required property \"name\"");
    CHECK_INT(check(s, "[]", err, sizeof err), -1);
    CHECK_STR(err, "$: expected object, got array");
    CHECK_INT(check(s, "{\"items\":[{\"name\":\"a\"}]}", err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(sb_jschema_validate(s, json_null(), NULL, 0), -1); /* err may be NULL */
    sb_jschema_destroy(&s);
    CHECK(s == NULL);
    sb_jschema_destroy(&s); /* NULL-safe */
    sb_jschema_destroy(NULL);

    s = compile("{\"properties\":{\"a b\":{\"type\":[\"integer\",\"null\"]},\"c\":{\"minimum\":1.5,"
                "\"exclusiveMaximum\":10},\"s\":{\"minLength\":2,\"pattern\":\"^x\"},\"l\":{\"maxItems\":1},"
                "\"e\":{\"enum\":[\"x\",\"y\"]},\"k\":{\"const\":1}},\"additionalProperties\":false}",
                err, sizeof err);
    CHECK(s != NULL);
    CHECK_INT(check(s, "{\"a b\":\"x\"}", err, sizeof err), -1);
    CHECK_STR(err, "$[\"a b\"]: expected integer or null, got string");
    CHECK_INT(check(s, "{\"c\":1}", err, sizeof err), -1);
    CHECK_STR(err, "$.c: 1 is less than minimum 1.5");
    CHECK_INT(check(s, "{\"c\":10.0}", err, sizeof err), -1);
    CHECK_STR(err, "$.c: 10 is not less than exclusiveMaximum 10");
    CHECK_INT(check(s, "{\"s\":\"x\"}", err, sizeof err), -1);
    CHECK_STR(err, "$.s: string length 1 is less than minLength 2");
    CHECK_INT(check(s, "{\"s\":\"yy\"}", err, sizeof err), -1);
    CHECK_STR(err, "$.s: string does not match pattern \"^x\"");
    CHECK_INT(check(s, "{\"l\":[1,2]}", err, sizeof err), -1);
    CHECK_STR(err, "$.l: array has 2 items, more than maxItems 1");
    CHECK_INT(check(s, "{\"e\":\"z\"}", err, sizeof err), -1);
    CHECK_STR(err, "$.e: value is not one of the enum values");
    CHECK_INT(check(s, "{\"k\":2}", err, sizeof err), -1);
    CHECK_STR(err, "$.k: value does not equal the const value");
    CHECK_INT(check(s, "{\"zz\":2}", err, sizeof err), -1);
    CHECK_STR(err, "$.zz: additional property not allowed (additionalProperties is false)");
    sb_jschema_destroy(&s);

    /* anyOf reports the branch that got furthest into the value */
    s = compile("{\"anyOf\":[{\"type\":\"null\"},{\"type\":\"object\",\"properties\":{\"n\":{\"type\":\"string\"}}}]}",
                err, sizeof err);
    CHECK(s != NULL);
    CHECK_INT(check(s, "{\"n\":1}", err, sizeof err), -1);
    CHECK_STR(err, "$: value matches no anyOf branch (branch 1: $.n: expected string, got integer)");
    CHECK_INT(check(s, "null", err, sizeof err), 0);
    sb_jschema_destroy(&s);

    /* a tiny err buffer truncates but stays terminated */
    s = compile("{\"type\":\"string\"}", err, sizeof err);
    char tiny[8];
    CHECK_INT(check(s, "1", tiny, sizeof tiny), -1);
    CHECK_STR(tiny, "$: expe");
    sb_jschema_destroy(&s);
}

static void test_compile_errors(void)
{
    char err[512];
    static const struct {
        const char *schema, *msg;
    } bad[] = {
        {"{\"type\":\"float\"}", "schema at #: 'type' must be a type name or an array of type names"},
        {"{\"properties\":{\"a\":{\"minLength\":-1}}}",
         "schema at #/properties/a: 'minLength' must be a non-negative integer"},
        {"{\"maxItems\":1.5}", "schema at #: 'maxItems' must be a non-negative integer"},
        {"{\"required\":[\"a\",1]}", "schema at #: 'required' must be an array of strings"},
        {"{\"$ref\":\"#/$defs/missing\"}", "schema at #: $ref \"#/$defs/missing\": target not found"},
        {"{\"$ref\":\"http://example.com/s.json\"}",
         "schema at #: $ref \"http://example.com/s.json\": only local references (\"#...\") are supported"},
        {"{\"$ref\":\"#foo\"}", "schema at #: $ref \"#foo\": anchors / $id fragments are not supported"},
        {"{\"items\":[{}]}", "schema at #: array-form 'items' (tuple validation) is not supported"},
        {"{\"anyOf\":[]}", "schema at #: 'anyOf' must be a non-empty array"},
        {"{\"exclusiveMinimum\":true}",
         "schema at #: 'exclusiveMinimum' must be a number (the draft-4 boolean form is not supported)"},
        /* a rejected pattern (more in test_regex.c) names the schema location */
        {"{\"pattern\":\"a(\"}", "schema at #: pattern \"a(\": missing ')'"},
        {"{\"properties\":{\"x\":{\"$id\":\"http://a/b\"}}}",
         "schema at #/properties/x: '$id' in a subschema (a base URI change) is not supported"},
        {"[1]", "schema at #: a schema must be an object or a boolean"},
        {"{\"properties\":{\"p\":3}}", "schema at #/properties/p: a schema must be an object or a boolean"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sb_jschema_t *s = compile(bad[i].schema, err, sizeof err);
        CHECK(s == NULL);
        CHECK_STR(err, bad[i].msg);
        sb_jschema_destroy(&s);
    }
    /* NULL err is allowed */
    json_t *j = js("{\"type\":1}");
    CHECK(sb_jschema_new(j, NULL, 0) == NULL);
    CHECK(sb_jschema_new(NULL, err, sizeof err) == NULL);
    json_decref(j);
    /* unknown keywords are ignored */
    CHECK_INT(valid("{\"allOf\":[false],\"format\":\"email\",\"x-vendor\":{\"type\":1}}", "\"a\""), 0);
}

/* The schema is deep-copied: changing or freeing the caller's JSON after
 * compiling must not affect the compiled validator. */
static void test_ownership(void)
{
    char err[256];
    json_t *j = js("{\"$defs\":{\"n\":{\"type\":\"integer\"}},\"properties\":{\"a\":{\"$ref\":\"#/$defs/n\"},"
                   "\"b\":{\"pattern\":\"^b+$\"}}}");
    sb_jschema_t *s = sb_jschema_new(j, err, sizeof err);
    CHECK(s != NULL);
    json_object_clear(j);
    json_decref(j);
    CHECK_INT(check(s, "{\"a\":1,\"b\":\"bbb\"}", err, sizeof err), 0);
    CHECK_INT(check(s, "{\"a\":\"x\"}", err, sizeof err), -1);
    CHECK_INT(check(s, "{\"b\":\"ab\"}", err, sizeof err), -1);
    sb_jschema_destroy(&s);
}

static void test_refs(void)
{
    char err[512];
    /* self-cycles without consuming input are rejected, not run forever */
    sb_jschema_t *s = compile("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", err, sizeof err);
    CHECK(s == NULL);
    CHECK_STR(err, "schema at #/$defs/a: $ref cycle: \"#/$defs/a\" leads back to a schema being applied, without "
                   "consuming input");
    s = compile("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"type\":\"string\",\"$ref\":\"#/$defs/a\"}},"
                "\"properties\":{\"x\":{\"$ref\":\"#/$defs/a\"}}}",
                err, sizeof err);
    CHECK(s == NULL);
    CHECK(strstr(err, "$ref cycle") != NULL);
    s = compile("{\"anyOf\":[{\"type\":\"string\"},{\"$ref\":\"#\"}]}", err, sizeof err);
    CHECK(s == NULL);
    CHECK(strstr(err, "$ref cycle") != NULL);
    s = compile("{\"$ref\":\"#\"}", err, sizeof err);
    CHECK(s == NULL);

    /* recursion through properties/items consumes input and is fine */
    const char *tree = "{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"kids\":{\"type\":\"array\","
                       "\"items\":{\"$ref\":\"#\"}}},\"required\":[\"v\"],\"additionalProperties\":false}";
    CHECK_INT(valid(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[]},{\"v\":3}]}"), 0);
    CHECK_INT(valid(tree, "{\"v\":1,\"kids\":[{\"v\":2,\"kids\":[{\"v\":\"x\"}]}]}"), -1);

    /* pointer escapes and %-decoding; "definitions" as well as "$defs" */
    const char *esc = "{\"definitions\":{\"a/b\":{\"type\":\"integer\"},\"c~d\":{\"type\":\"string\"},"
                      "\"e f\":{\"type\":\"null\"}},\"x-list\":[{\"type\":\"boolean\"}],"
                      "\"properties\":{\"x\":{\"$ref\":\"#/definitions/a~1b\"},\"y\":{\"$ref\":\"#/definitions/c~0d\"},"
                      "\"z\":{\"$ref\":\"#/definitions/e%20f\"},\"w\":{\"$ref\":\"#/x-list/0\"}}}";
    CHECK_INT(valid(esc, "{\"x\":1,\"y\":\"s\",\"z\":null,\"w\":true}"), 0);
    CHECK_INT(valid(esc, "{\"x\":\"1\"}"), -1);
    CHECK_INT(valid(esc, "{\"y\":1}"), -1);
    CHECK_INT(valid(esc, "{\"z\":0}"), -1);
    CHECK_INT(valid(esc, "{\"w\":0}"), -1);
    s = compile("{\"$ref\":\"#/definitions/x%2\"}", err, sizeof err);
    CHECK(s == NULL);
    /* members of $defs must be schemas */
    s = compile("{\"$defs\":{\"list\":[{\"type\":\"boolean\"}]}}", err, sizeof err);
    CHECK(s == NULL);
    CHECK_STR(err, "schema at #/$defs/list: a schema must be an object or a boolean");
    /* siblings of $ref apply (2020-12) */
    CHECK_INT(valid("{\"$defs\":{\"a\":{\"type\":\"array\"}},\"$ref\":\"#/$defs/a\",\"maxItems\":1}", "[1,2]"), -1);
    /* a $ref into a place the walk does not visit (an unknown keyword) still compiles its pattern */
    CHECK_INT(valid("{\"x-lib\":{\"p\":{\"pattern\":\"^q\"}},\"$ref\":\"#/x-lib/p\"}", "\"qq\""), 0);
    CHECK_INT(valid("{\"x-lib\":{\"p\":{\"pattern\":\"^q\"}},\"$ref\":\"#/x-lib/p\"}", "\"aq\""), -1);
}

static void test_depth(void)
{
    char err[512];
    /* a recursive schema and an instance nested far past the limit */
    sb_jschema_t *s = compile("{\"$defs\":{\"n\":{\"type\":\"array\",\"items\":{\"$ref\":\"#/$defs/n\"}}},"
                              "\"$ref\":\"#/$defs/n\"}",
                              err, sizeof err);
    CHECK(s != NULL);
    json_t *deep = json_array(), *cur = deep;
    for (int i = 0; i < 1000; i++) {
        json_t *next = json_array();
        json_array_append_new(cur, next);
        cur = next;
    }
    CHECK_INT(sb_jschema_validate(s, deep, err, sizeof err), -ELOOP);
    CHECK(strstr(err, "nesting deeper than") != NULL);
    CHECK(strncmp(err, "$[0][0][0]", 10) == 0);
    json_decref(deep);
    CHECK_INT(check(s, "[[[],[]],[]]", err, sizeof err), 0);
    sb_jschema_destroy(&s);

    /* a schema nested past the limit does not compile */
    size_t cap = 20 * (SB_JSCHEMA_MAX_DEPTH + 2) + 16, n = 0;
    char *text = malloc(cap);
    for (int i = 0; i < SB_JSCHEMA_MAX_DEPTH + 2; i++)
        n += (size_t)snprintf(text + n, cap - n, "{\"items\":");
    n += (size_t)snprintf(text + n, cap - n, "true");
    for (int i = 0; i < SB_JSCHEMA_MAX_DEPTH + 2; i++)
        text[n++] = '}';
    text[n] = '\0';
    s = compile(text, err, sizeof err);
    CHECK(s == NULL);
    CHECK(strstr(err, "schema nested deeper than 128 levels") != NULL);
    CHECK(strstr(err, "/items/items...") != NULL);
    free(text);

    /* exponential anyOf backtracking (both branches recurse, both fail at
     * the bottom: 2^30 paths) stops at the step limit */
    s = compile("{\"anyOf\":[{\"type\":\"array\",\"items\":{\"$ref\":\"#\"}},"
                "{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"minItems\":1}]}",
                err, sizeof err);
    CHECK(s != NULL);
    deep = json_array();
    cur = deep;
    for (int i = 0; i < 30; i++) {
        json_t *next = json_array();
        json_array_append_new(cur, next);
        cur = next;
    }
    json_array_append_new(cur, json_string("x"));
    CHECK_INT(sb_jschema_validate(s, deep, err, sizeof err), -E2BIG);
    CHECK(strstr(err, "steps") != NULL);
    json_decref(deep);
    sb_jschema_destroy(&s);
}

static void test_numbers(void)
{
    CHECK_INT(valid("{\"type\":\"integer\"}", "1"), 0);
    CHECK_INT(valid("{\"type\":\"integer\"}", "1.0"), 0);
    CHECK_INT(valid("{\"type\":\"integer\"}", "-0.0"), 0);
    CHECK_INT(valid("{\"type\":\"integer\"}", "1e300"), 0);
    CHECK_INT(valid("{\"type\":\"integer\"}", "1.5"), -1);
    CHECK_INT(valid("{\"type\":\"number\"}", "1"), 0);
    CHECK_INT(valid("{\"type\":\"number\"}", "1.5"), 0);
    CHECK_INT(valid("{\"type\":\"number\"}", "\"1\""), -1);
    CHECK_INT(valid("{\"type\":[\"integer\",\"string\"]}", "2.0"), 0);
    /* 1 == 1.0 in enum and const, also nested; booleans are not numbers */
    CHECK_INT(valid("{\"enum\":[1.0]}", "1"), 0);
    CHECK_INT(valid("{\"enum\":[1]}", "1.0"), 0);
    CHECK_INT(valid("{\"const\":{\"a\":[1,{\"b\":2.0}]}}", "{\"a\":[1.0,{\"b\":2}]}"), 0);
    CHECK_INT(valid("{\"const\":{\"a\":1}}", "{\"a\":1,\"b\":1}"), -1);
    CHECK_INT(valid("{\"enum\":[false]}", "0"), -1);
    CHECK_INT(valid("{\"enum\":[1]}", "true"), -1);
    CHECK_INT(valid("{\"enum\":[[false]]}", "[0]"), -1);
    CHECK_INT(valid("{\"const\":\"a\\u0000b\"}", "\"a\\u0000b\""), 0);
    CHECK_INT(valid("{\"const\":\"a\\u0000b\"}", "\"a\\u0000c\""), -1);
    /* exact integer/real comparison, no rounding through double */
    CHECK_INT(valid("{\"maximum\":9007199254740992.0}", "9007199254740993"), -1);
    CHECK_INT(valid("{\"maximum\":9007199254740993}", "9007199254740992.0"), 0);
    CHECK_INT(valid("{\"exclusiveMinimum\":9223372036854775807}", "9.3e18"), 0);
    CHECK_INT(valid("{\"minimum\":-1.5}", "-2"), -1);
    CHECK_INT(valid("{\"minimum\":-1.5}", "-1"), 0);
    CHECK_INT(valid("{\"exclusiveMaximum\":0}", "-0.0"), -1);
    CHECK_INT(valid("{\"maxLength\":2.0,\"minItems\":1.0}", "\"ab\""), 0);
}

static void test_unicode(void)
{
    CHECK_INT(valid("{\"minLength\":5,\"maxLength\":5}", "\"h\\u00e9llo\""), 0); /* "héllo" is 5, not 6 bytes */
    CHECK_INT(valid("{\"maxLength\":4}", "\"h\\u00e9llo\""), -1);
    CHECK_INT(valid("{\"maxLength\":1}", "\"\\ud83d\\udca9\""), 0); /* one code point, two UTF-16 units */
    CHECK_INT(valid("{\"minLength\":2}", "\"\\ud83d\\udca9\""), -1);
    CHECK_INT(valid("{\"maxLength\":3}", "\"a\\u0000b\""), 0);
}

static void test_patterns(void)
{
    /* one compiled regex per distinct pattern; non-strings are ignored */
    CHECK_INT(valid("{\"items\":{\"pattern\":\"^a\"},\"properties\":{\"x\":{\"pattern\":\"^a\"}}}", "[\"ab\",1,null]"),
              0);
}

static void test_strict(void)
{
    char err[512];
    const char *good =
        "{\"type\":\"object\",\"description\":\"d\",\"properties\":{"
        "\"name\":{\"type\":\"string\",\"description\":\"n\",\"minLength\":1},"
        "\"age\":{\"type\":[\"integer\",\"null\"],\"minimum\":0},"
        "\"tags\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"enum\":[\"a\",\"b\"]},\"maxItems\":3},"
        "\"addr\":{\"anyOf\":[{\"$ref\":\"#/$defs/addr\"},{\"type\":\"null\"}]}},"
        "\"required\":[\"name\",\"age\",\"tags\",\"addr\"],\"additionalProperties\":false,"
        "\"$defs\":{\"addr\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\"},"
        "\"next\":{\"anyOf\":[{\"$ref\":\"#/$defs/addr\"},{\"type\":\"null\"}]}},"
        "\"required\":[\"city\",\"next\"],\"additionalProperties\":false}}}";
    CHECK_INT(strict(good, err, sizeof err), 0);
    CHECK_STR(err, "");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{},\"required\":[],\"additionalProperties\":false}", err,
                     sizeof err),
              0);
    /* a strict schema also validates */
    CHECK_INT(valid(good, "{\"name\":\"x\",\"age\":null,\"tags\":[\"a\"],\"addr\":{\"city\":\"c\",\"next\":null}}"), 0);
    CHECK_INT(valid(good, "{\"name\":\"x\",\"age\":1,\"tags\":[],\"addr\":{\"city\":\"c\",\"next\":{\"city\":1,"
                          "\"next\":null}}}"),
              -1);

    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"object\",\"properties\":{"
                     "\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}},\"required\":[\"name\"],"
                     "\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=('properties', 'name'), 'additionalProperties' is required to be "
                   "supplied and to be false.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[],"
                     "\"additionalProperties\":true}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=(), 'additionalProperties' is required to be supplied and to be false.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},"
                     "\"required\":[\"a\"],\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=(), 'required' is required to be supplied and to be an array including "
                   "every key in properties. Missing 'b'.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},"
                     "\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK(strstr(err, "Missing 'a'.") != NULL);
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{},\"required\":[\"x\"],\"additionalProperties\":false}", err,
                     sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=(), Extra required key 'x' supplied.");
    CHECK_INT(strict("{\"type\":\"array\",\"items\":{\"type\":\"string\"}}", err, sizeof err), -EINVAL);
    CHECK_STR(err, "Invalid schema: schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.");
    CHECK_INT(strict("{\"anyOf\":[{\"type\":\"object\"}]}", err, sizeof err), -EINVAL);
    CHECK_STR(err, "Invalid schema: schema must be a JSON Schema of 'type: \"object\"', got 'type: \"None\"'.");
    CHECK_INT(strict("[]", err, sizeof err), -EINVAL);
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
                     "\"format\":\"email\"}}},\"required\":[\"a\"],\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=('properties', 'a', 'items'), 'format' is not permitted.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"anyOf\":[{\"type\":\"string\"},{\"allOf\":[]}]}},"
                     "\"required\":[\"a\"],\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=('properties', 'a', 'anyOf', 1), 'allOf' is not permitted.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"description\":\"no type\"}},\"required\":[\"a\"],"
                     "\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=('properties', 'a'), schema must have a 'type' key.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"array\",\"items\":true}},"
                     "\"required\":[\"a\"],\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=('properties', 'a', 'items'), schema must be a JSON Schema object, got "
                   "a boolean schema.");
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{},\"required\":[],\"additionalProperties\":false,"
                     "\"$defs\":{\"it's\":{\"type\":\"object\",\"properties\":{}}}}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: In context=('$defs', \"it's\"), 'additionalProperties' is required to be supplied "
                   "and to be false.");
    /* strict-shaped but not compilable: the compile error is passed on */
    CHECK_INT(strict("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#/$defs/none\"}},\"required\":[\"a\"],"
                     "\"additionalProperties\":false}",
                     err, sizeof err),
              -EINVAL);
    CHECK_STR(err, "Invalid schema: schema at #/properties/a: $ref \"#/$defs/none\": target not found");
}

/* sb_jschema_close_objects(text) equals want (both JSON text), and the input
 * is left as it was. */
static void close_is(const char *text, const char *want)
{
    json_t *in = js(text), *orig = json_deep_copy(in), *w = js(want);
    json_t *got = sb_jschema_close_objects(in);
    CHECK(got != NULL && json_equal(got, w));
    if (got && !json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
        fprintf(stderr, "close_objects(%s) = %s\n", text, g);
        free(g);
    }
    CHECK(json_equal(in, orig));
    json_decref(in);
    json_decref(orig);
    json_decref(w);
    json_decref(got);
}

/* The normalisation OpenAI applies to a Responses function tool whose
 * "strict" is omitted: every object schema the strict checker visits is
 * closed; an explicit additionalProperties (true, or a schema) is kept;
 * nothing else changes. */
static void test_close_objects(void)
{
    char err[512];
    /* root, a nested property, array items, anyOf branches and $defs/definitions */
    const char *loose =
        "{\"type\":\"object\",\"properties\":{"
        "\"o\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}},\"required\":[\"x\"]},"
        "\"l\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{},\"required\":[]}},"
        "\"u\":{\"anyOf\":[{\"type\":[\"object\",\"null\"],\"properties\":{}},{\"$ref\":\"#/$defs/d\"}]},"
        "\"v\":{\"$ref\":\"#/definitions/e\"}},"
        "\"required\":[\"o\",\"l\",\"u\",\"v\"],"
        "\"$defs\":{\"d\":{\"type\":\"object\",\"properties\":{\"y\":{\"type\":\"integer\"}},\"required\":[\"y\"]}},"
        "\"definitions\":{\"e\":{\"type\":\"object\"}}}";
    const char *closed =
        "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
        "\"o\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"string\"}},\"required\":[\"x\"],"
        "\"additionalProperties\":false},"
        "\"l\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{},\"required\":[],"
        "\"additionalProperties\":false}},"
        "\"u\":{\"anyOf\":[{\"type\":[\"object\",\"null\"],\"properties\":{},"
        "\"additionalProperties\":false},{\"$ref\":\"#/$defs/d\"}]},"
        "\"v\":{\"$ref\":\"#/definitions/e\"}},"
        "\"required\":[\"o\",\"l\",\"u\",\"v\"],"
        "\"$defs\":{\"d\":{\"type\":\"object\",\"properties\":{\"y\":{\"type\":\"integer\"}},\"required\":[\"y\"],"
        "\"additionalProperties\":false}},"
        "\"definitions\":{\"e\":{\"type\":\"object\",\"additionalProperties\":false}}}";
    CHECK_INT(strict(loose, err, sizeof err), -EINVAL);
    close_is(loose, closed);
    /* the closed form is what strict mode asks for */
    CHECK_INT(strict(closed, err, sizeof err), 0);
    CHECK_STR(err, "");
    /* already conforming: unchanged */
    const char *good = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"],"
                       "\"additionalProperties\":false}";
    close_is(good, good);
    /* an explicit additionalProperties is the schema's choice, not ours; "required" is never added */
    close_is("{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\",\"additionalProperties\":"
             "{\"type\":\"string\"}}},\"additionalProperties\":true}",
             "{\"type\":\"object\",\"properties\":{\"m\":{\"type\":\"object\",\"additionalProperties\":"
             "{\"type\":\"string\"}}},\"additionalProperties\":true}");
    close_is("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
             "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}");
    CHECK_INT(
        strict("{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}", err,
               sizeof err),
        -EINVAL);
    /* not under a keyword the checker visits (oneOf, not): left alone */
    close_is("{\"type\":\"object\",\"oneOf\":[{\"type\":\"object\"}],\"not\":{\"type\":\"object\"}}",
             "{\"type\":\"object\",\"oneOf\":[{\"type\":\"object\"}],\"not\":{\"type\":\"object\"},"
             "\"additionalProperties\":false}");
    /* "properties" without "type" is an object schema too, as for the checker */
    close_is("{\"properties\":{}}", "{\"properties\":{},\"additionalProperties\":false}");
    /* non-object schemas come back as they were */
    close_is("{\"type\":\"string\"}", "{\"type\":\"string\"}");
    close_is("true", "true");
    close_is("[1]", "[1]");
    CHECK(sb_jschema_close_objects(NULL) == NULL);
    /* an object 10 arrays down is closed; one past the depth limit is not
     * reached (the strict checker refuses such nesting anyway) */
    for (int levels = 10; levels <= SB_JSCHEMA_MAX_DEPTH + 10; levels += SB_JSCHEMA_MAX_DEPTH) {
        json_t *deep = json_pack("{s:s}", "type", "object");
        for (int i = 0; i < levels; i++)
            deep = json_pack("{s:s, s:o}", "type", "array", "items", deep);
        json_t *got = sb_jschema_close_objects(deep);
        const json_t *in = got;
        for (int i = 0; i < levels; i++)
            in = json_object_get(in, "items");
        CHECK_INT(json_is_false(json_object_get(in, "additionalProperties")), levels < SB_JSCHEMA_MAX_DEPTH);
        json_decref(got);
        json_decref(deep);
    }
}

int main(void)
{
    run_suite();
    test_messages();
    test_compile_errors();
    test_ownership();
    test_refs();
    test_depth();
    test_numbers();
    test_unicode();
    test_patterns();
    test_strict();
    test_close_objects();
    return sb_test_finish("jschema");
}
