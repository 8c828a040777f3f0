/*
 * fe_messages_parse: what the Messages style's request parsing shares
 * between its files: errors in Anthropic's wording and the translation of
 * messages[] into canonical items (both fe_messages_content.c, which
 * fe_messages_parse.c builds on).
 */
#ifndef FE_MESSAGES_PARSE_H
#define FE_MESSAGES_PARSE_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"
#include "fe_style.h"

/* A 400 in Anthropic's wording, "<param>: <text>" (param may be NULL), code
 * its machine code. Always -1. */
int fe_messages_fail(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same, for functions returning a new value: always NULL. */
json_t *fe_messages_fail_null(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether v is the string s. */
bool fe_messages_is(const json_t *v, const char *s);

/* messages[] -> canonical input items (appended to items): 0, or -1 with
 * err. Thinking blocks' signatures are opened with seal (the caller's). */
int fe_messages_messages(const fe_sealer_t *seal, const json_t *messages, json_t *items, fe_error_t *err);

/* ---- built-in tools (fe_messages_tools.c) ---- */

/* Whether tool (a tools[] entry) is a web search server tool of a version
 * this gateway runs (web_search_20250305 and its successors). */
bool fe_messages_is_web_search_tool(const json_t *tool);

/* A web search server tool (param names it) -> the canonical web_search
 * tool (new reference), or NULL with err. *max_uses becomes its max_uses
 * when that is smaller (or *max_uses is -1). */
json_t *fe_messages_web_search_tool(const json_t *tool, const char *param, json_int_t *max_uses, fe_error_t *err);

/* An mcp_toolset entry (mcp-client-2025-11-20) recorded in toolsets by its
 * server's name: {"all":true} or {"allowed":[names]}. 0, or -1 with err
 * (a second toolset for a server, a denylist, a malformed entry). */
int fe_messages_mcp_toolset(const json_t *tool, const char *param, json_t *toolsets, fe_error_t *err);

/* body's mcp_servers -> canonical mcp tools appended to tools, configured
 * by their tool_configuration or their toolset in toolsets (from
 * fe_messages_mcp_toolset). 0, or -1 with err. */
int fe_messages_mcp_servers(const json_t *body, const json_t *toolsets, json_t *tools, fe_error_t *err);

/* Whether a content block type is a server tool's (server_tool_use,
 * web_search_tool_result, mcp_tool_use, mcp_tool_result,
 * code_execution_tool_result). */
bool fe_messages_server_block(const char *type);

/* One such block of an assistant turn -> canonical items: a use block
 * appends a web_search_call or mcp_call item, a result block completes the
 * item of its tool_use_id (a web_search_tool_result whose first result
 * holds a sealed item, see fe_messages_render.h, restores that item). 0, or
 * -1 with err. */
int fe_messages_server_item(const fe_sealer_t *seal, json_t *items, const json_t *block, const char *type,
                            const char *param, fe_error_t *err);

#endif
