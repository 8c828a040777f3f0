/*
 * fe_features: what a request may use, given the model's capabilities
 * (models.capabilities, set with `sbctl model set --capabilities`).
 *
 * Capability keys (a key that is absent means "allowed", except the built-in
 * tools that only the upstream can run, which must be listed):
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
 *   web_search, mcp   the built-in tools the gateway can run (docs/tools.md):
 *                     absent or true, the gateway runs them (its worker's tool
 *                     loop); "native", the upstream runs its own (pass-through:
 *                     openai-responses as is, gemini googleSearch); false,
 *                     refused. web_search covers the four type names
 *                     (web_search, web_search_2025_08_26, web_search_preview,
 *                     web_search_preview_2025_03_11). Gateway web search also
 *                     needs the deployment's default search backend (the model
 *                     record's tools_config.web_search, fe_sql.c): without
 *                     one it is refused, as false.
 *   file_search, code_interpreter, image_generation, computer_use,
 *   computer_use_preview, local_shell
 *                     built-in tools only the upstream runs: allowed when the
 *                     capability of that name is true (or "native")
 * A request using something its model does not allow gets 400
 * "unsupported parameter"; a refused built-in tool merely offered beside
 * function tools (not forced by tool_choice) is left out instead.
 */
#ifndef FE_FEATURES_H
#define FE_FEATURES_H

#include <jansson.h>

#include "fe_request.h"

/* Checks r->parsed.canonical and the full job input against r->model. */
int fe_features_check(const fe_request_t *r, json_t *input, fe_error_t *err);

/* True for the built-in tool types only the Responses style offers. */
bool fe_features_builtin_tool(const char *type);

/* True for the four web search type names. */
bool fe_features_web_search_tool(const char *type);

/* Who runs a built-in tool of this type for the model record (fe_auth.h). */
enum fe_tool_runner {
    FE_TOOL_REFUSED, /* the model may not use it (or type is not a built-in tool) */
    FE_TOOL_NATIVE,  /* the upstream runs it: it goes to the upstream as is */
    FE_TOOL_GATEWAY, /* the worker's tool loop runs it */
};
enum fe_tool_runner fe_features_tool_runner(const json_t *model, const char *type);

/* The job's tools_config (sb_job.h) for a request with these (checked)
 * tools: {"web_search":{kind, base_url, credential_ref}} when one of them is
 * a gateway-run web search, as a new reference; NULL otherwise. */
json_t *fe_features_tools_config(const json_t *model, const json_t *tools);

#endif
