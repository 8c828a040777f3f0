/*
 * fe_gemini_json: reading Google's proto3 JSON request bodies for the
 * Generate Content style: field access in both spellings (lowerCamelCase and
 * snake_case) with Google-style error texts, and the Schema (Google's
 * OpenAPI subset) -> JSON Schema conversion.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_json.h"
#include "sb_event.h"

/* Deepest responseSchema / parameters schema converted (the body's own depth
 * limit is usually lower; this only guards the recursion). */
#define FE_GEMINI_SCHEMA_DEPTH 64

/* ---- proto3 JSON helpers ----------------------------------------------- */

int fe_gemini_fail(fe_error_t *err, const char *fmt, ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_argument", NULL, "%s", msg);
    return -1;
}

/* A parameter the gateway knows but cannot honour. */
int fe_gemini_unsupported(fe_error_t *err, const char *fmt, ...)
{
    char msg[sizeof err->message - 32];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", NULL, "unsupported parameter: %s", msg);
    return -1;
}

/* Writes a field path for an error message; a path too long for buf is
 * cut (it only names the field in the text). */
void fe_gemini_path(char *buf, size_t len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, len, fmt, ap);
    va_end(ap);
}

/* lowerCamelCase -> snake_case, proto field names as Google's paths show them. */
static void fe_gemini_snake(const char *camel, char *buf, size_t len)
{
    size_t o = 0;
    for (const char *c = camel; *c && o + 2 < len; c++) {
        if (isupper((unsigned char)*c)) {
            buf[o++] = '_';
            buf[o++] = (char)tolower((unsigned char)*c);
        } else {
            buf[o++] = *c;
        }
    }
    buf[o] = '\0';
}

/* snake_case (or camelCase) -> lowerCamelCase: proto3 JSON parsers accept both. */
static void fe_gemini_camel(const char *key, char *buf, size_t len)
{
    size_t o = 0;
    bool up = false;
    for (const char *k = key; *k && o + 1 < len; k++) {
        if (*k == '_' && o > 0) {
            up = true;
            continue;
        }
        buf[o++] = up ? (char)toupper((unsigned char)*k) : *k;
        up = false;
    }
    buf[o] = '\0';
}

/* The field by its JSON name or its proto name; NULL when absent or null
 * (proto3 JSON: null means the default). */
json_t *fe_gemini_get(const json_t *o, const char *camel)
{
    json_t *v = json_object_get(o, camel);
    if (!v) {
        char snake[64];
        fe_gemini_snake(camel, snake, sizeof snake);
        v = json_object_get(o, snake);
    }
    return json_is_null(v) ? NULL : v;
}

/* parent.field as Google writes it (snake_case). */
void fe_gemini_at(char *buf, size_t len, const char *parent, const char *camel)
{
    char snake[64];
    fe_gemini_snake(camel, snake, sizeof snake);
    if (parent && *parent)
        fe_gemini_path(buf, len, "%s.%s", parent, snake);
    else
        fe_gemini_path(buf, len, "%s", snake);
}

/* "Invalid value at 'x' (TYPE), <value>", Google's text for a value of the
 * wrong type. */
int fe_gemini_bad_value(fe_error_t *err, const char *at, const char *type, const json_t *v)
{
    char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    fe_gemini_fail(err, "Invalid value at '%s' (%s), %.200s", at, type, text ? text : "?");
    free(text);
    return -1;
}

/* Every key of o must be a known field (either spelling); o must be an
 * object. at is o's own path ("" for the request). */
int fe_gemini_known(const json_t *o, const char *const *known, const char *at, fe_error_t *err)
{
    if (!json_is_object(o)) {
        if (!*at)
            return fe_gemini_fail(err, "Invalid JSON payload received. Expected an object.");
        return fe_gemini_bad_value(err, at, "TYPE_MESSAGE", o);
    }
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)o, key, v) {
        char camel[64];
        fe_gemini_camel(key, camel, sizeof camel);
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = !strcmp(*k, camel);
        if (ok)
            continue;
        if (*at)
            return fe_gemini_fail(
                err, "Invalid JSON payload received. Unknown name \"%.64s\" at '%s': Cannot find field.", key, at);
        return fe_gemini_fail(err, "Invalid JSON payload received. Unknown name \"%.64s\": Cannot find field.", key);
    }
    return 0;
}

/* Optional typed fields: 1 when present (value in *out), 0 when absent, -1
 * with err when of the wrong type or out of range. */
int fe_gemini_string(const json_t *o, const char *camel, const char *parent, const char **out, fe_error_t *err)
{
    json_t *v = fe_gemini_get(o, camel);
    if (!v)
        return 0;
    if (!json_is_string(v)) {
        char at[FE_GEMINI_AT];
        fe_gemini_at(at, sizeof at, parent, camel);
        return fe_gemini_bad_value(err, at, "TYPE_STRING", v);
    }
    *out = json_string_value(v);
    return 1;
}

int fe_gemini_bool(const json_t *o, const char *camel, const char *parent, bool *out, fe_error_t *err)
{
    json_t *v = fe_gemini_get(o, camel);
    if (!v)
        return 0;
    if (!json_is_boolean(v)) {
        char at[FE_GEMINI_AT];
        fe_gemini_at(at, sizeof at, parent, camel);
        return fe_gemini_bad_value(err, at, "TYPE_BOOL", v);
    }
    *out = json_is_true(v);
    return 1;
}

/* An integer as proto3 JSON writes one: a number with no fraction, or a
 * decimal string (how int64 values travel). */
static bool fe_gemini_as_int(const json_t *v, long long *out)
{
    if (json_is_integer(v)) {
        *out = (long long)json_integer_value(v);
        return true;
    }
    if (json_is_real(v)) {
        double d = json_real_value(v);
        if (d != (double)(long long)d)
            return false;
        *out = (long long)d;
        return true;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        char *end = NULL;
        if (!*s)
            return false;
        long long n = strtoll(s, &end, 10);
        if (*end)
            return false;
        *out = n;
        return true;
    }
    return false;
}

int fe_gemini_int(const json_t *o, const char *camel, const char *parent, long long lo, long long hi, long long *out,
                  fe_error_t *err)
{
    json_t *v = fe_gemini_get(o, camel);
    if (!v)
        return 0;
    char at[FE_GEMINI_AT];
    fe_gemini_at(at, sizeof at, parent, camel);
    if (!fe_gemini_as_int(v, out))
        return fe_gemini_bad_value(err, at, "TYPE_INT32", v);
    if (*out < lo || *out > hi)
        return fe_gemini_fail(err, "Invalid value at '%s': %lld is out of range [%lld, %lld].", at, *out, lo, hi);
    return 1;
}

int fe_gemini_number(const json_t *o, const char *camel, const char *parent, double lo, double hi, double *out,
                     fe_error_t *err)
{
    json_t *v = fe_gemini_get(o, camel);
    if (!v)
        return 0;
    char at[FE_GEMINI_AT];
    fe_gemini_at(at, sizeof at, parent, camel);
    if (!json_is_number(v))
        return fe_gemini_bad_value(err, at, "TYPE_FLOAT", v);
    *out = json_number_value(v);
    if (*out < lo || *out > hi)
        return fe_gemini_fail(err, "Invalid value at '%s': %g is out of range [%g, %g].", at, *out, lo, hi);
    return 1;
}

/* An optional repeated field: the array (borrowed), NULL when absent, or
 * NULL with err when not an array. */
json_t *fe_gemini_array(const json_t *o, const char *camel, const char *parent, fe_error_t *err)
{
    json_t *v = fe_gemini_get(o, camel);
    if (v && !json_is_array(v)) {
        char at[FE_GEMINI_AT];
        fe_gemini_at(at, sizeof at, parent, camel);
        fe_gemini_fail(err, "Invalid value at '%s': expected a list.", at);
        return NULL;
    }
    return v;
}

bool fe_gemini_ieq(const char *a, const char *b)
{
    return a && b && strcasecmp(a, b) == 0;
}

/* ---- Schema (Google's OpenAPI subset) -> JSON Schema --------------------- */

static const char *const fe_gemini_schema_fields[] = {
    "type",     "format",     "title",    "description",      "nullable",      "enum",      "maxItems",
    "minItems", "properties", "required", "minProperties",    "maxProperties", "minLength", "maxLength",
    "pattern",  "example",    "anyOf",    "propertyOrdering", "default",       "items",     "minimum",
    "maximum",  NULL};

static int fe_gemini_schema_type(const json_t *t, const char *at, const char **out, fe_error_t *err)
{
    static const char *const types[] = {"string", "number", "integer", "boolean", "array", "object", "null", NULL};
    const char *s = json_string_value(t);
    *out = NULL;
    if (s && fe_gemini_ieq(s, "TYPE_UNSPECIFIED"))
        return 0;
    for (size_t i = 0; s && types[i]; i++) {
        if (fe_gemini_ieq(s, types[i])) {
            *out = types[i];
            return 0;
        }
    }
    char tat[FE_GEMINI_AT + 8];
    fe_gemini_path(tat, sizeof tat, "%s.type", at);
    return fe_gemini_bad_value(err, tat, "type.googleapis.com/google.ai.generativelanguage.v1beta.Type", t);
}

/* Converts one Schema: type names lowercased, nullable -> a "null" type (or
 * a null branch of anyOf, or null among the enum values), int64 limits sent
 * as strings -> integers; properties, items and anyOf converted in turn;
 * example and propertyOrdering (no JSON Schema meaning) dropped. */
json_t *fe_gemini_schema(const json_t *s, const char *at, int depth, fe_error_t *err)
{
    if (depth > FE_GEMINI_SCHEMA_DEPTH) {
        fe_gemini_fail(err, "Invalid value at '%s': the schema is nested too deeply.", at);
        return NULL;
    }
    if (fe_gemini_known(s, fe_gemini_schema_fields, at, err) < 0)
        return NULL;
    json_t *out = json_object();
    char sub[FE_GEMINI_AT];
    const char *type = NULL;
    json_t *t = fe_gemini_get(s, "type");
    if (t && fe_gemini_schema_type(t, at, &type, err) < 0)
        goto fail;
    bool nullable = false;
    if (fe_gemini_bool(s, "nullable", at, &nullable, err) < 0)
        goto fail;
    if (type)
        json_object_set_new(
            out, "type", nullable && strcmp(type, "null") != 0 ? json_pack("[s, s]", type, "null") : json_string(type));
    static const char *const copied[] = {"format", "title", "description", "pattern", "default", NULL};
    for (size_t i = 0; copied[i]; i++) {
        json_t *v = fe_gemini_get(s, copied[i]);
        if (!v)
            continue;
        if (strcmp(copied[i], "default") != 0 && !json_is_string(v)) {
            fe_gemini_at(sub, sizeof sub, at, copied[i]);
            fe_gemini_bad_value(err, sub, "TYPE_STRING", v);
            goto fail;
        }
        /* format "enum" is Google's marker for string enums, not a JSON Schema format. */
        if (!strcmp(copied[i], "format") && !strcmp(json_string_value(v), "enum"))
            continue;
        json_object_set(out, copied[i], v);
    }
    static const char *const counts[] = {"maxItems",  "minItems", "minProperties", "maxProperties", "minLength",
                                         "maxLength", NULL};
    for (size_t i = 0; counts[i]; i++) {
        long long n = 0;
        int rc = fe_gemini_int(s, counts[i], at, 0, (long long)1 << 53, &n, err);
        if (rc < 0)
            goto fail;
        if (rc > 0)
            json_object_set_new(out, counts[i], json_integer(n));
    }
    static const char *const bounds[] = {"minimum", "maximum", NULL};
    for (size_t i = 0; bounds[i]; i++) {
        double d = 0;
        int rc = fe_gemini_number(s, bounds[i], at, -1e308, 1e308, &d, err);
        if (rc < 0)
            goto fail;
        if (rc > 0)
            json_object_set(out, bounds[i], fe_gemini_get(s, bounds[i]));
    }
    json_t *en = fe_gemini_array(s, "enum", at, err);
    json_t *req = fe_gemini_array(s, "required", at, err);
    json_t *any = fe_gemini_array(s, "anyOf", at, err);
    if (err->status)
        goto fail;
    if (en) {
        json_t *values = json_deep_copy(en);
        if (nullable)
            json_array_append_new(values, json_null());
        json_object_set_new(out, "enum", values);
    }
    if (req)
        json_object_set(out, "required", req);
    json_t *props = fe_gemini_get(s, "properties");
    if (props) {
        fe_gemini_at(sub, sizeof sub, at, "properties");
        if (!json_is_object(props)) {
            fe_gemini_bad_value(err, sub, "TYPE_MESSAGE", props);
            goto fail;
        }
        json_t *cp = json_object();
        json_object_set_new(out, "properties", cp);
        const char *name;
        json_t *ps;
        size_t i = 0;
        json_object_foreach (props, name, ps) {
            char pat[FE_GEMINI_AT];
            fe_gemini_path(pat, sizeof pat, "%s[%zu].value", sub, i++);
            json_t *c = fe_gemini_schema(ps, pat, depth + 1, err);
            if (!c)
                goto fail;
            json_object_set_new(cp, name, c);
        }
    }
    json_t *items = fe_gemini_get(s, "items");
    if (items) {
        fe_gemini_at(sub, sizeof sub, at, "items");
        json_t *c = fe_gemini_schema(items, sub, depth + 1, err);
        if (!c)
            goto fail;
        json_object_set_new(out, "items", c);
    }
    if (any) {
        json_t *branches = json_array();
        json_object_set_new(out, "anyOf", branches);
        size_t i;
        json_t *b;
        json_array_foreach (any, i, b) {
            char bat[FE_GEMINI_AT];
            fe_gemini_path(bat, sizeof bat, "%s.any_of[%zu]", at, i);
            json_t *c = fe_gemini_schema(b, bat, depth + 1, err);
            if (!c)
                goto fail;
            json_array_append_new(branches, c);
        }
        if (nullable && !type)
            json_array_append_new(branches, json_pack("{s:s}", "type", "null"));
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}
