/*
 * fe_messages_render: a result as Anthropic's message object (reasoning ->
 * thinking blocks whose signature is the sealed item, message parts -> text
 * blocks with their url_citation annotations as citations, function_call ->
 * tool_use blocks, web_search_call -> server_tool_use +
 * web_search_tool_result, mcp_call -> mcp_tool_use + mcp_tool_result,
 * code_interpreter_call -> server_tool_use + code_execution_tool_result and
 * the message's container, fe_messages_code.c), the pieces the stream
 * renderer
 * (fe_stream_messages.c) builds the same message from, and the count_tokens
 * reply.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_messages_code.h"
#include "fe_messages_render.h"
#include "fe_reasoning.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_log.h"
#include "sb_time.h"
#include "sb_utf8.h"

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

/* ---- built-in tool items ------------------------------------------------------ */

bool fe_messages_shows_search(const json_t *item)
{
    return fe_mr_is(json_object_get(json_object_get(item, "action"), "type"), "search");
}

/* The block id for an item: its id with prefix `from` replaced by `to`. */
static json_t *fe_mr_block_id(const json_t *item, const char *from, const char *to)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    size_t n = strlen(from);
    if (!id)
        id = "";
    char *s = sb_xasprintf("%s%s", to, strncmp(id, from, n) == 0 ? id + n : id);
    json_t *out = json_string(s);
    free(s);
    return out ? out : json_string(to);
}

json_t *fe_messages_search_use(const json_t *item, bool with_input)
{
    json_t *query = json_object_get(json_object_get(item, "action"), "query");
    json_t *input = json_object();
    if (with_input)
        json_object_set_new(input, "query", json_is_string(query) ? json_incref(query) : json_string(""));
    return json_pack("{s:s, s:o, s:s, s:o}", "type", "server_tool_use", "id",
                     fe_mr_block_id(item, "ws_", FE_MESSAGES_SEARCH_PREFIX), "name", "web_search", "input", input);
}

/* base64 of s: an opaque field's content that only has to come back. */
static json_t *fe_mr_opaque(const char *s)
{
    size_t n = 0;
    char *b64 = sb_base64_encode(s, strlen(s), &n);
    json_t *out = json_stringn(b64 ? b64 : "", b64 ? n : 0);
    free(b64);
    return out;
}

json_t *fe_messages_search_result(const fe_render_ctx_t *ctx, const json_t *item)
{
    json_t *id = fe_mr_block_id(item, "ws_", FE_MESSAGES_SEARCH_PREFIX);
    json_t *content;
    if (fe_mr_is(json_object_get(item, "status"), "failed")) {
        content = json_pack("{s:s, s:s}", "type", "web_search_tool_result_error", "error_code", "unavailable");
    } else {
        content = json_array();
        size_t i;
        json_t *src;
        json_array_foreach (json_object_get(json_object_get(item, "action"), "sources"), i, src) {
            const char *url = json_string_value(json_object_get(src, "url"));
            if (!url)
                continue;
            const char *title = json_string_value(json_object_get(src, "title"));
            char *sealed = json_array_size(content) == 0 ? fe_messages_seal(ctx, item) : NULL;
            json_array_append_new(content, json_pack("{s:s, s:s, s:s, s:o, s:n}", "type", "web_search_result", "url",
                                                     url, "title", title ? title : url, "encrypted_content",
                                                     sealed ? json_string(sealed) : fe_mr_opaque(url), "page_age"));
            free(sealed);
        }
    }
    return json_pack("{s:s, s:o, s:o}", "type", "web_search_tool_result", "tool_use_id", id, "content", content);
}

json_t *fe_messages_mcp_use(const json_t *item, bool with_input)
{
    json_t *input = with_input ? fe_messages_tool_input(item) : NULL;
    if (!input)
        input = json_object();
    return json_pack("{s:s, s:o, s:O?, s:O?, s:o}", "type", "mcp_tool_use", "id",
                     fe_mr_block_id(item, "mcp_", FE_MESSAGES_MCP_PREFIX), "name", json_object_get(item, "name"),
                     "server_name", json_object_get(item, "server_label"), "input", input);
}

json_t *fe_messages_mcp_result(const json_t *item)
{
    json_t *error = json_object_get(item, "error");
    json_t *text = json_is_string(error) ? error : json_object_get(item, "output");
    json_t *content = json_array();
    if (json_is_string(text) && json_string_length(text) > 0)
        json_array_append_new(content, json_pack("{s:s, s:O}", "type", "text", "text", text));
    return json_pack("{s:s, s:o, s:b, s:o}", "type", "mcp_tool_result", "tool_use_id",
                     fe_mr_block_id(item, "mcp_", FE_MESSAGES_MCP_PREFIX), "is_error", json_is_string(error), "content",
                     content);
}

/* Anthropic's cited_text is at most 150 characters. */
#define FE_MR_CITED_MAX 150

json_t *fe_messages_citation(const json_t *a, const json_t *text)
{
    json_t *url = json_object_get(a, "url"), *title = json_object_get(a, "title");
    json_t *start = json_object_get(a, "start_index"), *end = json_object_get(a, "end_index");
    if (!fe_mr_is(json_object_get(a, "type"), "url_citation") || !json_is_string(url) || !json_is_integer(start) ||
        !json_is_integer(end) || json_integer_value(start) < 0 || json_integer_value(end) < json_integer_value(start))
        return NULL;
    const char *s = json_string_value(text);
    size_t n = json_string_length(text);
    json_int_t last = json_integer_value(end);
    if (last - json_integer_value(start) > FE_MR_CITED_MAX)
        last = json_integer_value(start) + FE_MR_CITED_MAX;
    long from = sb_utf8_offset(s, n, json_integer_value(start));
    long to = sb_utf8_offset(s, n, last);
    if (from < 0 || to < 0 || sb_utf8_offset(s, n, json_integer_value(end)) < 0)
        return NULL;
    return json_pack("{s:s, s:O, s:O?, s:o, s:s%}", "type", "web_search_result_location", "url", url, "title",
                     json_is_string(title) ? title : NULL, "encrypted_index", fe_mr_opaque(json_string_value(url)),
                     "cited_text", s + from, (size_t)(to - from));
}

json_t *fe_messages_citations(const json_t *part, const json_t *text)
{
    json_t *out = json_array();
    size_t i;
    json_t *a;
    json_array_foreach (json_object_get(part, "annotations"), i, a) {
        json_t *c = fe_messages_citation(a, text);
        if (c)
            json_array_append_new(out, c);
    }
    return out;
}

/* A message part's text block, with its citations when it has some. */
static json_t *fe_mr_text_block(const json_t *part, const json_t *text)
{
    json_t *block = json_pack("{s:s, s:O}", "type", "text", "text", text);
    json_t *cites = fe_messages_citations(part, text);
    if (json_array_size(cites) > 0)
        json_object_set(block, "citations", cites);
    json_decref(cites);
    return block;
}

/* The web searches content shows (usage.server_tool_use). */
static json_int_t fe_mr_searches(const json_t *content)
{
    json_int_t n = 0;
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b)
        n += fe_mr_is(json_object_get(b, "type"), "server_tool_use") &&
             fe_mr_is(json_object_get(b, "name"), "web_search");
    return n;
}

json_t *fe_messages_message(const fe_collect_t *res, const fe_render_ctx_t *ctx, json_t *content,
                            const char *stop_reason)
{
    const fe_parsed_t *p = ctx->parsed;
    json_int_t searches = fe_mr_searches(content);
    json_t *msg =
        json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?, s:n, s:{s:I, s:I, s:i, s:i}}", "id", p->response_id, "type",
                  "message", "role", "assistant", "model", p->model_id, "content", content, "stop_reason", stop_reason,
                  "stop_sequence", "usage", "input_tokens", (json_int_t)res->input_tokens, "output_tokens",
                  (json_int_t)res->output_tokens, "cache_creation_input_tokens", 0, "cache_read_input_tokens", 0);
    if (searches > 0)
        json_object_set_new(json_object_get(msg, "usage"), "server_tool_use",
                            json_pack("{s:I}", "web_search_requests", searches));
    return msg;
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
                    json_array_append_new(content, fe_mr_text_block(p, text));
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
        } else if (!strcmp(type, "web_search_call") && fe_messages_shows_search(it)) {
            json_array_append_new(content, fe_messages_search_use(it, true));
            json_array_append_new(content, fe_messages_search_result(ctx, it));
        } else if (!strcmp(type, "mcp_call")) {
            json_array_append_new(content, fe_messages_mcp_use(it, true));
            json_array_append_new(content, fe_messages_mcp_result(it));
        } else if (!strcmp(type, "code_interpreter_call")) {
            json_array_append_new(content, fe_messages_code_use_block(it, true));
            json_array_append_new(content, fe_messages_code_result_block(it));
        }
        /* mcp_list_tools, mcp_approval_request: no block (the connector
         * lists tools silently and asks no approvals). */
    }
    bool incomplete = !strcmp(res->status, "incomplete");
    const char *why = res->incomplete_reason;
    const char *stop = tool_use                                                       ? "tool_use"
                       : incomplete && (!why[0] || !strcmp(why, "max_output_tokens")) ? "max_tokens"
                       : refused || (incomplete && !strcmp(why, "content_filter"))    ? "refusal"
                                                                                      : "end_turn";
    json_t *msg = fe_messages_message(res, ctx, content, stop);
    /* The container the code ran in, so the next request can name it. */
    json_t *container = fe_messages_code_container_info(res->items, sb_now_ms());
    if (container)
        json_object_set_new(msg, "container", container);
    return msg;
}

/* The count as Anthropic's count_tokens answers it. */
json_t *fe_messages_render_count(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    (void)ctx;
    return json_pack("{s:I}", "input_tokens", (json_int_t)res->input_tokens);
}
