/*
 * fe_messages_render: a result as Anthropic's message object (reasoning ->
 * thinking blocks whose signature is the sealed item, message parts -> text
 * blocks, function_call -> tool_use blocks), the pieces the stream renderer
 * (fe_stream_messages.c) builds the same message from, and the count_tokens
 * reply.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_messages_render.h"
#include "fe_reasoning.h"
#include "sb_alloc.h"
#include "sb_log.h"

static bool fe_mr_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

/* The text of a reasoning item: its reasoning_text parts, else its summary. */
static json_t *fe_messages_reasoning_text(const json_t *item)
{
    const char *keys[2] = {"content", "summary"};
    for (int k = 0; k < 2; k++) {
        size_t total = 0, i;
        json_t *p;
        json_array_foreach (json_object_get(item, keys[k]), i, p)
            total += json_string_length(json_object_get(p, "text"));
        if (total == 0)
            continue;
        char *buf = sb_xmalloc(total);
        size_t off = 0;
        json_array_foreach (json_object_get(item, keys[k]), i, p) {
            json_t *t = json_object_get(p, "text");
            memcpy(buf + off, json_string_value(t), json_string_length(t));
            off += json_string_length(t);
        }
        json_t *out = json_stringn(buf, off);
        free(buf);
        return out;
    }
    return json_string("");
}

bool fe_messages_thinking_omitted(const fe_parsed_t *parsed)
{
    return json_is_true(json_object_get(parsed->style_state, "thinking_omitted"));
}

/* The sealed token of a reasoning item (caller frees), or NULL. Sealing draws
 * a random nonce, so each item is sealed once per request and the token kept
 * in style_state "sealed" (by item id, with the item it seals): the streamed
 * thinking block and the final message then carry the same signature. */
static char *fe_messages_seal(const fe_render_ctx_t *ctx, const json_t *item)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    json_t *state = ctx->parsed->style_state;
    json_t *cache = json_object_get(state, "sealed");
    json_t *hit = id ? json_object_get(cache, id) : NULL;
    json_t *sealed_item = json_object_get(hit, "item");
    if (sealed_item && (sealed_item == item || json_equal(sealed_item, (json_t *)item)))
        return sb_xstrdup(json_string_value(json_object_get(hit, "token")));
    char *token = fe_reasoning_seal(&ctx->seal, item);
    if (!token || !id || !json_is_object(state))
        return token;
    if (!json_is_object(cache)) {
        cache = json_object();
        json_object_set_new(state, "sealed", cache);
    }
    json_object_set_new(cache, id, json_pack("{s:s, s:O}", "token", token, "item", item));
    return token;
}

/* A reasoning item as a thinking block (redacted_thinking when the upstream
 * only gave an opaque blob), or NULL when sealing is not configured: the
 * client could not hand it back. */
json_t *fe_messages_thinking_block(const fe_render_ctx_t *ctx, const json_t *item)
{
    char *token = fe_messages_seal(ctx, item);
    if (!token)
        return NULL;
    json_t *text = fe_messages_reasoning_text(item);
    json_t *block;
    json_t *redacted = json_object_get(item, "redacted");
    if (json_string_length(text) == 0 && redacted && !json_is_false(redacted) && !json_is_null(redacted)) {
        block = json_pack("{s:s, s:s}", "type", "redacted_thinking", "data", token);
        json_decref(text);
    } else {
        if (fe_messages_thinking_omitted(ctx->parsed))
            json_string_set(text, "");
        block = json_pack("{s:s, s:o, s:s}", "type", "thinking", "thinking", text, "signature", token);
    }
    free(token);
    return block;
}

json_t *fe_messages_tool_input(const json_t *item)
{
    const char *args = json_string_value(json_object_get(item, "arguments"));
    json_t *input = args && *args ? json_loads(args, JSON_DECODE_ANY, NULL) : json_object();
    if (!json_is_object(input)) {
        json_decref(input);
        return NULL;
    }
    return input;
}

const json_t *fe_messages_part_text(const json_t *part, bool *refusal)
{
    json_t *pt = json_object_get(part, "type");
    json_t *text = NULL;
    *refusal = false;
    if (fe_mr_is(pt, "output_text"))
        text = json_object_get(part, "text");
    else if (fe_mr_is(pt, "refusal") && (text = json_object_get(part, "refusal")))
        *refusal = true;
    return json_is_string(text) ? text : NULL;
}

json_t *fe_messages_message(const fe_collect_t *res, const fe_render_ctx_t *ctx, json_t *content,
                            const char *stop_reason)
{
    const fe_parsed_t *p = ctx->parsed;
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?, s:n, s:{s:I, s:I, s:i, s:i}}", "id", p->response_id, "type",
                     "message", "role", "assistant", "model", p->model_id, "content", content, "stop_reason",
                     stop_reason, "stop_sequence", "usage", "input_tokens", (json_int_t)res->input_tokens,
                     "output_tokens", (json_int_t)res->output_tokens, "cache_creation_input_tokens", 0,
                     "cache_read_input_tokens", 0);
}

json_t *fe_messages_render(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    json_t *content = json_array();
    bool tool_use = false, refused = false;
    size_t i;
    json_t *it;
    json_array_foreach (res->items, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "reasoning")) {
            json_t *block = fe_messages_thinking_block(ctx, it);
            if (block)
                json_array_append_new(content, block);
        } else if (!strcmp(type, "message")) {
            size_t j;
            json_t *p;
            json_array_foreach (json_object_get(it, "content"), j, p) {
                bool refusal;
                const json_t *text = fe_messages_part_text(p, &refusal);
                refused |= refusal;
                if (text)
                    json_array_append_new(content, json_pack("{s:s, s:O}", "type", "text", "text", text));
            }
        } else if (!strcmp(type, "function_call")) {
            tool_use = true;
            json_t *input = fe_messages_tool_input(it);
            if (!input) {
                const char *call_id = json_string_value(json_object_get(it, "call_id"));
                sb_warn("messages: tool call %.64s has arguments that are not a JSON object; sent as {}",
                        call_id ? call_id : "(no call_id)");
                input = json_object();
            }
            json_array_append_new(content, json_pack("{s:s, s:O?, s:O?, s:o}", "type", "tool_use", "id",
                                                     json_object_get(it, "call_id"), "name",
                                                     json_object_get(it, "name"), "input", input));
        }
    }
    bool incomplete = !strcmp(res->status, "incomplete");
    const char *why = res->incomplete_reason;
    const char *stop = tool_use                                                       ? "tool_use"
                       : incomplete && (!why[0] || !strcmp(why, "max_output_tokens")) ? "max_tokens"
                       : refused || (incomplete && !strcmp(why, "content_filter"))    ? "refusal"
                                                                                      : "end_turn";
    return fe_messages_message(res, ctx, content, stop);
}

/* The count as Anthropic's count_tokens answers it. */
json_t *fe_messages_render_count(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    (void)ctx;
    return json_pack("{s:I}", "input_tokens", (json_int_t)res->input_tokens);
}
