/*
 * fe_params: validation helpers shared by the inbound styles: allowed key
 * sets, typed optional fields, and the standard 400 texts.
 */
#ifndef FE_PARAMS_H
#define FE_PARAMS_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"

/* Fails with "Unknown parameter: 'x'." (or fmt_unknown) for a key of body not in allowed (NULL-terminated). */
int fe_params_only(const json_t *body, const char *const *allowed, const char *fmt_unknown, fe_error_t *err);

/* Same for a nested object: a key of obj not in allowed fails with OpenAI's
 * "Unknown parameter: '<prefix>.<key>'." (param "<prefix>.<key>"), so a
 * misspelt option is refused rather than silently dropped. */
int fe_params_only_nested(const json_t *obj, const char *prefix, const char *const *allowed, fe_error_t *err);

/* Required field of any type: NULL with "Missing required parameter" when absent. */
json_t *fe_params_require(const json_t *body, const char *key, fe_error_t *err);

/* Required non-empty string. */
const char *fe_params_required_string(const json_t *body, const char *key, fe_error_t *err);

enum fe_param_type {
    FE_P_STRING = 1,
    FE_P_BOOL = 2,
    FE_P_INT = 4,
    FE_P_NUMBER = 8,
    FE_P_OBJECT = 16,
    FE_P_ARRAY = 32,
    FE_P_NULL = 64
};

/* Whether v is of one of types (FE_P_*). */
bool fe_params_is(const json_t *v, int types);
/* What a JSON value is, in OpenAI's words ("but got an object instead"). */
const char *fe_params_got(const json_t *v);

/* When key is present it must match one of the types; returns it (borrowed) or NULL. On a type
 * mismatch returns NULL and fills err. */
json_t *fe_params_typed(const json_t *body, const char *key, int types, fe_error_t *err);

/* Copies body[key] into dst[dst_key] when present (and not null) after a type check; number
 * ranges checked when lo < hi. Returns 0 or -1 with err. */
int fe_params_copy(const json_t *body, const char *key, int types, double lo, double hi, json_t *dst,
                   const char *dst_key, fe_error_t *err);

/* Copies metadata (OpenAI's rules: at most 16 pairs, keys up to 64 and
 * string values up to 512 characters) into dst. 0 or -1 with err. */
int fe_params_metadata(const json_t *body, json_t *dst, fe_error_t *err);

/* "Invalid type for 'x': expected ..." */
void fe_params_invalid(fe_error_t *err, const char *param, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif
