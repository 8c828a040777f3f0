/*
 * fe_messages_code: Anthropic's code execution server tool in the Messages
 * style, on the gateway's code interpreter (docs/tools.md), both ways:
 *   request   tools[] code_execution_20250522 -> the canonical
 *             code_interpreter tool (container {"type":"auto"}, or the request's
 *             top-level container id); the later versions (bash and file
 *             editing) are refused; tool_choice is fe_messages_parse.c's
 *   history   server_tool_use {name "code_execution", input {code}} +
 *             code_execution_tool_result -> a code_interpreter_call item
 *   response  a code_interpreter_call -> server_tool_use +
 *             code_execution_tool_result blocks, and the message's
 *             container {id, expires_at}
 * The stream's side is fe_stream_messages.c, built from these blocks.
 */
#ifndef FE_MESSAGES_CODE_H
#define FE_MESSAGES_CODE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "fe_error.h"

/* Block ids of a code_interpreter_call: "srvtoolu_" + its id without "ci_"
 * (the same prefix as a web search's: names tell the blocks apart). */
#define FE_MESSAGES_CODE_PREFIX "srvtoolu_"
#define FE_MESSAGES_CODE_ITEM_PREFIX "ci_"

/* How long a container lasts idle unless it was made with another
 * expires_after (schema/005_containers.sql's default, OpenAI's 20 minutes):
 * the message's container.expires_at is the render time plus this. */
#define FE_MESSAGES_CODE_IDLE_MS (20LL * 60 * 1000)

/* Whether a tools[] entry is a code execution tool (any version). */
bool fe_messages_is_code_tool(const json_t *tool);

/* A code execution tool (param names it) -> the canonical code_interpreter
 * tool {"type":"code_interpreter","container":{"type":"auto"}} (new
 * reference), or
 * NULL with err: code_execution_20250825 and later run bash commands and
 * edit files through their own blocks, which a Python sandbox cannot
 * answer faithfully (refused, 400 unsupported_parameter). */
json_t *fe_messages_code_tool(const json_t *tool, const char *param, fe_error_t *err);

/* The request's top-level container (a container id, or {id, skills}) ->
 * the container of the code_interpreter tool in tools (canonical, borrowed)
 * when there is one; skills are refused (the sandbox loads none). 0, or -1
 * with err. */
int fe_messages_code_container(const json_t *body, json_t *tools, fe_error_t *err);

/* History: a server_tool_use block named "code_execution" appends a
 * code_interpreter_call item {id "ci_"+X, status "completed", code,
 * outputs []}; a code_execution_tool_result block completes the item its
 * tool_use_id names (stdout and stderr become its logs; an error
 * "unavailable" or the like makes it failed, "execution_time_exceeded" a
 * completed run with a note). 0, or -1 with err. */
int fe_messages_code_use(json_t *items, const json_t *block, const char *param, fe_error_t *err);
int fe_messages_code_result(json_t *items, const json_t *block, const char *param, fe_error_t *err);

/* The item's server_tool_use block {id, name "code_execution", input
 * {code}} (with_input false: input {}, a stream's start). New reference. */
json_t *fe_messages_code_use_block(const json_t *item, bool with_input);

/* Its code_execution_tool_result block: content code_execution_result
 * {stdout: the logs, stderr "", return_code 0, or 1 when the run raised
 * (fe_code_outcome.h), content []}, or code_execution_tool_result_error
 * {error_code "execution_time_exceeded"} for a run stopped at its time
 * limit and "unavailable" for a failed item. Images have no place in it
 * (Anthropic returns files by id) and are left out. New reference. */
json_t *fe_messages_code_result_block(const json_t *item);

/* The message's container for items (the last code_interpreter_call's
 * container_id): {id, expires_at (RFC 3339, now_ms plus
 * FE_MESSAGES_CODE_IDLE_MS), skills null}, or NULL when no code ran. New
 * reference. */
json_t *fe_messages_code_container_info(const json_t *items, int64_t now_ms);

/* code (n bytes of UTF-8) escaped as the inside of a JSON string, for a
 * stream's input_json_delta pieces (malloc'd, NUL-terminated; *len its
 * length), or NULL when code is not UTF-8. */
char *fe_messages_code_json(const char *code, size_t n, size_t *len);

#endif
