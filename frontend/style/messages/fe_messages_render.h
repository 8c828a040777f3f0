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
 * stop_sequence and usage from res as it stands. New reference. */
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

#endif
