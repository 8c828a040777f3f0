/* fe_params: request parameter checks with OpenAI-style messages. */
#include "fe_params.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sb_event.h"

void fe_params_invalid(fe_error_t *err, const char *param, const char *fmt, ...)
{
    char msg[sizeof err->message];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_value", param, "%s", msg);
}

int fe_params_only(const json_t *body, const char *const *allowed, const char *fmt_unknown, fe_error_t *err)
{
    const char *key;
    json_t *val;
    json_object_foreach ((json_t *)body, key, val) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok) {
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unknown_parameter", k, fmt_unknown, k);
            return -1;
        }
    }
    return 0;
}

int fe_params_only_nested(const json_t *obj, const char *prefix, const char *const *allowed, fe_error_t *err)
{
    const char *key;
    json_t *val;
    json_object_foreach ((json_t *)obj, key, val) {
        bool ok = false;
        for (const char *const *a = allowed; *a && !ok; a++)
            ok = !strcmp(*a, key);
        if (!ok) {
            char param[64];
            snprintf(param, sizeof param, "%s.%.40s", prefix, key);
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unknown_parameter", param, "Unknown parameter: '%s'.",
                         param);
            return -1;
        }
    }
    return 0;
}

json_t *fe_params_require(const json_t *body, const char *key, fe_error_t *err)
{
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", key,
                     "Missing required parameter: '%s'.", key);
        return NULL;
    }
    return v;
}

const char *fe_params_required_string(const json_t *body, const char *key, fe_error_t *err)
{
    json_t *v = fe_params_require(body, key, err);
    if (!v)
        return NULL;
    if (!json_is_string(v) || json_string_length(v) == 0) {
        fe_params_invalid(err, key, "Invalid value for '%s': expected a non-empty string.", key);
        return NULL;
    }
    return json_string_value(v);
}

bool fe_params_is(const json_t *v, int types)
{
    return ((types & FE_P_STRING) && json_is_string(v)) || ((types & FE_P_BOOL) && json_is_boolean(v)) ||
           ((types & FE_P_INT) && json_is_integer(v)) || ((types & FE_P_NUMBER) && json_is_number(v)) ||
           ((types & FE_P_OBJECT) && json_is_object(v)) || ((types & FE_P_ARRAY) && json_is_array(v)) ||
           ((types & FE_P_NULL) && json_is_null(v));
}

static const char *fe_params_type_name(int types)
{
    if (types & FE_P_OBJECT)
        return "an object";
    if (types & FE_P_ARRAY)
        return types & FE_P_STRING ? "a string or an array" : "an array";
    if (types & FE_P_STRING)
        return "a string";
    if (types & FE_P_BOOL)
        return "a boolean";
    if (types & FE_P_INT)
        return "an integer";
    return "a number";
}

const char *fe_params_got(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "an unknown type";
}

json_t *fe_params_typed(const json_t *body, const char *key, int types, fe_error_t *err)
{
    json_t *v = json_object_get(body, key);
    if (!v)
        return NULL;
    if (!fe_params_is(v, types)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", key,
                     "Invalid type for '%s': expected %s, but got %s instead.", key, fe_params_type_name(types),
                     fe_params_got(v));
        return NULL;
    }
    return v;
}

int fe_params_copy(const json_t *body, const char *key, int types, double lo, double hi, json_t *dst,
                   const char *dst_key, fe_error_t *err)
{
    json_t *v = fe_params_typed(body, key, types | FE_P_NULL, err);
    if (!v)
        return err->status ? -1 : 0;
    if (json_is_null(v))
        return 0;
    if (lo < hi && json_is_number(v)) {
        double d = json_number_value(v);
        if (d < lo || d > hi) {
            fe_params_invalid(err, key, "Invalid value for '%s': %g is outside [%g, %g].", key, d, lo, hi);
            return -1;
        }
    }
    json_object_set(dst, dst_key, v);
    return 0;
}

/* OpenAI's metadata rules: at most 16 pairs, keys up to 64 and string
 * values up to 512 characters. */
int fe_params_metadata(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *md = fe_params_typed(body, "metadata", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (!json_is_object(md))
        return 0;
    if (json_object_size(md) > 16) {
        fe_params_invalid(err, "metadata", "Invalid 'metadata': too many properties, expected at most 16.");
        return -1;
    }
    const char *k;
    json_t *v;
    json_object_foreach (md, k, v) {
        if (strlen(k) > 64 || !json_is_string(v) || json_string_length(v) > 512) {
            fe_params_invalid(err, "metadata",
                              "Invalid 'metadata' entry '%.64s': keys are at most 64 characters, "
                              "values strings of at most 512.",
                              k);
            return -1;
        }
    }
    json_object_set(c, "metadata", md);
    return 0;
}
