/*
 * fe_features: what a request may use, given the model's capabilities
 * (models.capabilities, set with `sbctl model set --capabilities`).
 *
 * Capability keys (a key that is absent means "allowed", except built-in
 * tools, which must be listed as true):
 *   tools             function tools
 *   structured_output text.format / response_format json_schema, json_object
 *   vision            input_image parts
 *   files             input_file parts
 *   audio             input_audio parts (Chat Completions only)
 *   reasoning         reasoning.effort / reasoning_effort
 *   reasoning_family_version  a number; from 5.4 on, tools with reasoning
 *                     effort "none" are refused (as the real API does)
 *   n                 false: the upstream cannot return several choices (the
 *                     worker fans out instead)
 *   web_search, file_search, code_interpreter, image_generation, mcp,
 *   computer_use      built-in Responses tools the upstream runs itself
 * A request using something its model does not allow gets 400
 * "unsupported parameter".
 */
#ifndef FE_FEATURES_H
#define FE_FEATURES_H

#include <jansson.h>

#include "fe_request.h"

/* Checks r->parsed.canonical and the full job input against r->model. */
int fe_features_check(const fe_request_t *r, json_t *input, fe_error_t *err);

/* True for the built-in tool types only the Responses style offers. */
bool fe_features_builtin_tool(const char *type);

#endif
