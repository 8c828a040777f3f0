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

#include "fe_request.h"

/* The message object for r's result (new reference). */
json_t *fe_messages_render(fe_request_t *r);

/* The count_tokens reply, {"input_tokens": N} (new reference). */
json_t *fe_messages_render_count(fe_request_t *r);

/* The message object for r around content (stolen): id, type, role, model,
 * content, stop_reason (NULL: null, as a stream's message_start has it),
 * stop_sequence and usage from r->result. New reference. */
json_t *fe_messages_message(const fe_request_t *r, json_t *content, const char *stop_reason);

/* The text a canonical message content part shows as a text block (borrowed
 * string), or NULL when the part makes no block. *refusal tells a refusal
 * part (the message's stop_reason is then "refusal"). */
const json_t *fe_messages_part_text(const json_t *part, bool *refusal);

/* A reasoning item as a thinking block (signature: the sealed item) or a
 * redacted_thinking block (data: the sealed item), or NULL when sealing is
 * not configured: the client could not hand it back. An item is sealed once
 * per request, so the stream and the final message carry the same token.
 * New reference. */
json_t *fe_messages_thinking_block(const fe_request_t *r, const json_t *item);

/* Whether thinking text is left out (thinking.display "omitted"): thinking
 * blocks then carry "" and only their signature. */
bool fe_messages_thinking_omitted(const fe_request_t *r);

/* A function_call's arguments as tool_use input: an object ({} for no
 * arguments; new reference), or NULL when they are not a JSON object. */
json_t *fe_messages_tool_input(const json_t *item);

#endif
