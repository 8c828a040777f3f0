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

/* What a function tool's omitted (or null) "strict" means; each style passes
 * what its real API does. An explicit true is always checked against strict
 * mode (400 if the schema does not conform), an explicit false never is. */
typedef enum {
    /* Not strict: Chat Completions, Messages, Generate Content. */
    FE_STRICT_OFF,
    /* As OpenAI's Responses API: strict if the schema conforms as given, or
     * once every object schema lacking "additionalProperties" gets false
     * (sb_jschema_close_objects), and then the tool carries that schema;
     * otherwise (an optional property, an unsupported keyword...) the tool is
     * non-strict and keeps its schema as given. */
    FE_STRICT_AUTO,
} fe_strict_default_t;

/* Canonical function tool {"type":"function","name","description"?,
 * "parameters","strict"} from its fields (fn: name, description, parameters,
 * strict); strict_default applies when strict is absent or null. The
 * canonical "strict" is always a boolean: the worker validates the model's
 * arguments only for a strict tool. NULL with err. */
json_t *fe_structured_function(const json_t *fn, fe_strict_default_t strict_default, const char *param,
                               fe_error_t *err);

/* Canonical tool_choice from a request's value (string "none" | "auto" |
 * "required", or an object naming a function as {"type":"function","name"}
 * (Responses), {"type":"function","function":{"name"}} (Chat) or {"name"}
 * (legacy function_call), or a built-in tool type) checked against the
 * canonical tools. NULL choice: nothing set. 0, or -1 with err. */
int fe_structured_tool_choice(const json_t *choice, const json_t *tools, json_t *c, fe_error_t *err);

#endif
