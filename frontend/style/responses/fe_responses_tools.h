/*
 * fe_responses_tools: the Responses style's built-in tools that the gateway
 * runs itself (docs/tools.md): web search in its four type names and remote
 * MCP. Their shapes are checked here as OpenAI checks them (openai-python's
 * tool_param.py, web_search_tool_param.py, web_search_preview_tool_param.py),
 * the function names the gateway reserves for them are refused, and what a
 * client may see again of a tool (the Response object's `tools`) is made
 * free of the MCP secrets.
 */
#ifndef FE_RESPONSES_TOOLS_H
#define FE_RESPONSES_TOOLS_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"

/* The prefix of the function names the worker offers built-in tools under
 * (sb__web_search, sb__mcp0__T, ...): a client's tool may not start with it. */
#define FE_RESPONSES_RESERVED_PREFIX "sb__"

/* True for the built-in types this file checks: web_search,
 * web_search_2025_08_26, web_search_preview, web_search_preview_2025_03_11
 * and mcp. */
bool fe_responses_tool_checked(const char *type);

/* Checks one such tool (param names it, "tools[3]"). Returns it unchanged as
 * a new reference, `headers` and `authorization` included (the worker needs
 * them), or NULL with err: 400 for a bad shape, unsupported_parameter for
 * what the gateway cannot do (connector_id, tunnel_id, defer_loading). */
json_t *fe_responses_tool_check(const json_t *tool, const char *param, fe_error_t *err);

/* A client function tool's name: -1 with err (param "<param>.name") when it
 * starts with the reserved prefix, else 0. */
int fe_responses_tool_name_check(const char *name, const char *param, fe_error_t *err);

/* Every mcp tool of the request's tools array (as sent) has its own
 * server_label: -1 with err naming the second of two alike, else 0. */
int fe_responses_tools_check_labels(const json_t *tools, fe_error_t *err);

/* A copy of tools without the secrets (each tool's `headers` and
 * `authorization`), as the Response object echoes them. New reference; an
 * empty array for anything but an array. */
json_t *fe_responses_tools_public(const json_t *tools);

#endif
