/*
 * fe_gemini_json: reading Google's proto3 JSON request bodies for the
 * Generate Content style (fe_gemini_parse.c): camelCase/snake_case field
 * access with Google-style error texts, and the Schema (Google's OpenAPI
 * subset) -> JSON Schema conversion.
 *
 * Ownership: every json_t argument is borrowed. fe_gemini_get and
 * fe_gemini_array return borrowed references into their argument;
 * fe_gemini_string's *out points into o. fe_gemini_schema returns a new
 * reference the caller owns. Field paths ("at", "parent") are borrowed
 * strings in Google's snake_case spelling, "" or NULL for the request itself.
 * Errors are written to err (400 INVALID_ARGUMENT, Google's wording).
 */
#ifndef FE_GEMINI_JSON_H
#define FE_GEMINI_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "fe_error.h"

/* Longest field path in an error message ("contents[3].parts[0].inline_data"). */
#define FE_GEMINI_AT 192

/* A 400 invalid_argument with the formatted message. Always -1. */
int fe_gemini_fail(fe_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A parameter the gateway knows but cannot honour: a 400
 * unsupported_parameter. Always -1. */
int fe_gemini_unsupported(fe_error_t *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Writes a field path for an error message into buf; a path too long for
 * buf is cut (it only names the field in the text). */
void fe_gemini_path(char *buf, size_t len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* The field by its JSON name (camel) or its proto name; NULL when absent or
 * null (proto3 JSON: null means the default). Borrowed. */
json_t *fe_gemini_get(const json_t *o, const char *camel);

/* parent.field as Google writes it (snake_case) into buf. */
void fe_gemini_at(char *buf, size_t len, const char *parent, const char *camel);

/* "Invalid value at 'x' (TYPE), <value>", Google's text for a value of the
 * wrong type. Always -1. */
int fe_gemini_bad_value(fe_error_t *err, const char *at, const char *type, const json_t *v);

/* Every key of o must be in the NULL-terminated camelCase list known (either
 * spelling accepted); o must be an object. at is o's own path ("" for the
 * request). 0, or -1 with err. */
int fe_gemini_known(const json_t *o, const char *const *known, const char *at, fe_error_t *err);

/* Optional typed fields: 1 when present (value in *out), 0 when absent, -1
 * with err when of the wrong type or out of range [lo, hi]. Integers accept
 * proto3 JSON's forms: a number with no fraction or a decimal string. */
int fe_gemini_string(const json_t *o, const char *camel, const char *parent, const char **out, fe_error_t *err);
int fe_gemini_bool(const json_t *o, const char *camel, const char *parent, bool *out, fe_error_t *err);
int fe_gemini_int(const json_t *o, const char *camel, const char *parent, long long lo, long long hi, long long *out,
                  fe_error_t *err);
int fe_gemini_number(const json_t *o, const char *camel, const char *parent, double lo, double hi, double *out,
                     fe_error_t *err);

/* An optional repeated field: the array (borrowed), NULL when absent, or
 * NULL with err when not an array (check err->status). */
json_t *fe_gemini_array(const json_t *o, const char *camel, const char *parent, fe_error_t *err);

/* Case-insensitive equality; false when either is NULL. */
bool fe_gemini_ieq(const char *a, const char *b);

/* Converts one Schema s (at its path at, nested depth levels down) to a JSON
 * Schema: type names lowercased, nullable -> a "null" type (or a null branch
 * of anyOf, or null among the enum values), int64 limits sent as strings ->
 * integers; properties, items and anyOf converted in turn; example and
 * propertyOrdering dropped. New reference, or NULL with err. */
json_t *fe_gemini_schema(const json_t *s, const char *at, int depth, fe_error_t *err);

#endif
