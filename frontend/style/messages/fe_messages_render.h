/*
 * fe_messages_render: the Messages style's rendering (fe_messages_render.c),
 * and what it shares with its stream renderer (fe_stream_messages.c), so
 * that a streamed message is built from the same pieces as the non-streamed
 * one.
 */
#ifndef FE_MESSAGES_RENDER_H
#define FE_MESSAGES_RENDER_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_style.h"

/* The message object for res (the style's render; new reference). */
json_t *fe_messages_render(const fe_collect_t *res, const fe_render_ctx_t *ctx);

/* The count_tokens reply, {"input_tokens": N} (the style's render_count;
 * new reference). */
json_t *fe_messages_render_count(const fe_collect_t *res, const fe_render_ctx_t *ctx);

/* The message object around content (stolen): id, type, role, model,
 * content, stop_reason (NULL: null, as a stream's message_start has it),
 * stop_sequence and usage from res as it stands (with server_tool_use
 * {web_search_requests} when content has web search blocks). New
 * reference. */
json_t *fe_messages_message(const fe_collect_t *res, const fe_render_ctx_t *ctx, json_t *content,
                            const char *stop_reason);

/* The text a canonical message content part shows as a text block (borrowed
 * string), or NULL when the part makes no block. *refusal tells a refusal
 * part (the message's stop_reason is then "refusal"). */
const json_t *fe_messages_part_text(const json_t *part, bool *refusal);

/* A reasoning item as a thinking block (signature: the sealed item) or a
 * redacted_thinking block (data: the sealed item), or NULL when sealing is
 * not configured: the client could not hand it back. An item is sealed once
 * per request (the token is kept in parsed->style_state "sealed"), so the
 * stream and the final message carry the same token.
 * New reference. */
json_t *fe_messages_thinking_block(const fe_render_ctx_t *ctx, const json_t *item);

/* Whether thinking text is left out (thinking.display "omitted"): thinking
 * blocks then carry "" and only their signature. */
bool fe_messages_thinking_omitted(const fe_parsed_t *parsed);

/* A function_call's arguments as tool_use input: an object ({} for no
 * arguments; new reference), or NULL when they are not a JSON object. */
json_t *fe_messages_tool_input(const json_t *item);

/* ---- built-in tool items (docs/tools.md, "Other styles") ---- */

/* Block ids of built-in items: the item id with its canonical prefix
 * ("ws_", "mcp_") replaced by Anthropic's. */
#define FE_MESSAGES_SEARCH_PREFIX "srvtoolu_"
#define FE_MESSAGES_MCP_PREFIX "mcptoolu_"

/* Whether a web_search_call shows as blocks: a search (page openings and
 * finds are the gateway's own steps, which Anthropic's tool has no block
 * for). */
bool fe_messages_shows_search(const json_t *item);

/* A web_search_call's server_tool_use block {id, name "web_search", input
 * {query}} (new reference); with_input false: input {} (a stream's start). */
json_t *fe_messages_search_use(const json_t *item, bool with_input);

/* Its web_search_tool_result block: the sources as web_search_result
 * blocks, or a web_search_tool_result_error "unavailable" when the search
 * failed. Every encrypted_content is opaque to the client: the first
 * result's is the item sealed for the caller (so a later turn replays what
 * the model was given exactly; sealed once per request as thinking blocks
 * are), the others' (and the first's without a key) the base64 of the URL.
 * New reference. */
json_t *fe_messages_search_result(const fe_render_ctx_t *ctx, const json_t *item);

/* An mcp_call's mcp_tool_use block {id, name, server_name, input} (with_input
 * false: input {}) and its mcp_tool_result block {tool_use_id, is_error,
 * content [text]}. New references. */
json_t *fe_messages_mcp_use(const json_t *item, bool with_input);
json_t *fe_messages_mcp_result(const json_t *item);

/* A message part's url_citation annotations as Anthropic's
 * web_search_result_location citations (text: the part's text): new array,
 * empty when it has none. Annotations whose span is not in text are left
 * out. */
json_t *fe_messages_citations(const json_t *part, const json_t *text);

/* One citation from an annotation (see fe_messages_citations), or NULL. */
json_t *fe_messages_citation(const json_t *annotation, const json_t *text);

#endif
