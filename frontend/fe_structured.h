/*
 * fe_structured: checks shared by both OpenAI styles for the parts of a
 * request that carry JSON Schemas: structured-output formats (Responses
 * text.format, Chat response_format) and function tool definitions. A strict
 * schema must follow OpenAI's strict-mode rules (sb_jschema_check_strict) and
 * every schema must compile, so the worker can validate the model's output.
 */
#ifndef FE_STRUCTURED_H
#define FE_STRUCTURED_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"

/* Canonical format {"type":"text"|"json_object"} or {"type":"json_schema",
 * "name","schema","strict","description"?} from fields of fmt; param names
 * it in errors. New reference, or NULL with err. */
json_t *fe_structured_format(const json_t *fmt, const char *param, fe_error_t *err);

/* Canonical function tool {"type":"function","name","description"?,
 * "parameters","strict"} from its fields (fn: name, description, parameters,
 * strict); strict_default applies when strict is absent. NULL with err. */
json_t *fe_structured_function(const json_t *fn, bool strict_default, const char *param, fe_error_t *err);

#endif
