/*
 * fe_messages_content: a Messages request's conversation as canonical
 * items: messages[] and their content blocks (text, image, document,
 * tool_use, tool_result, thinking and redacted_thinking opened back into the
 * reasoning items the gateway sealed, server tool blocks through
 * fe_messages_tools.c), system messages between turns. The 400s in
 * Anthropic's wording are fe_messages_fail.c's; the style's translation
 * table is in fe_messages_parse.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_items.h"
#include "fe_messages_parse.h"
#include "fe_reasoning.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_event.h"

/* ---- content blocks ------------------------------------------------------------ */

/* Where canonical items are assembled: consecutive text and media blocks of
 * one message share a message item; tool and thinking blocks stand alone. */
typedef struct {
    json_t *items; /* canonical input (borrowed) */
    json_t *parts; /* the open message's parts, or NULL */
    const char *role;
} fe_messages_out_t;

static void fe_messages_flush(fe_messages_out_t *o)
{
    if (o->parts && json_array_size(o->parts) > 0)
        json_array_append_new(o->items,
                              json_pack("{s:s, s:s, s:O}", "type", "message", "role", o->role, "content", o->parts));
    json_decref(o->parts);
    o->parts = NULL;
}

static void fe_messages_add_part(fe_messages_out_t *o, json_t *part)
{
    if (!o->parts)
        o->parts = json_array();
    json_array_append_new(o->parts, part);
}

static void fe_messages_add_item(fe_messages_out_t *o, json_t *item)
{
    fe_messages_flush(o);
    json_array_append_new(o->items, item);
}

/* "data:<mime>;base64,<data>" (caller frees). */
static char *fe_messages_data_url(const char *mime, const char *b64)
{
    return sb_xasprintf("data:%s;base64,%s", mime, b64);
}

/* An image block's source as an input_image part, or NULL with err. */
static json_t *fe_messages_image(const json_t *block, const char *param, fe_error_t *err)
{
    json_t *src = json_object_get(block, "source");
    const char *type = json_string_value(json_object_get(src, "type"));
    char p[128];
    snprintf(p, sizeof p, "%s.source", param);
    if (!json_is_object(src) || !type)
        return fe_messages_fail_null(err, "missing_required_parameter", p, "Field required");
    json_t *conv = NULL;
    if (!strcmp(type, "base64")) {
        static const char *const mimes[] = {"image/jpeg", "image/png", "image/gif", "image/webp"};
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        bool ok = false;
        for (size_t i = 0; mt && i < sizeof mimes / sizeof mimes[0]; i++)
            ok |= !strcmp(mt, mimes[i]);
        if (!ok)
            return fe_messages_fail_null(err, "invalid_value", p,
                                         "media_type should be 'image/jpeg', 'image/png', 'image/gif' or "
                                         "'image/webp'");
        const char *data = json_string_value(json_object_get(src, "data"));
        if (!data)
            return fe_messages_fail_null(err, "missing_required_parameter", p, "data: Field required");
        char *url = fe_messages_data_url(mt, data);
        conv = json_pack("{s:s, s:s}", "type", "input_image", "image_url", url);
        free(url);
    } else if (!strcmp(type, "url")) {
        if (!json_is_string(json_object_get(src, "url")))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "url: Field required");
        conv = json_pack("{s:s, s:O}", "type", "input_image", "image_url", json_object_get(src, "url"));
    } else if (!strcmp(type, "file")) {
        if (!json_is_string(json_object_get(src, "file_id")))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "file_id: Field required");
        conv = json_pack("{s:s, s:O}", "type", "input_image", "file_id", json_object_get(src, "file_id"));
    } else {
        return fe_messages_fail_null(err, "invalid_value", p, "type should be 'base64', 'url' or 'file'");
    }
    json_t *part = fe_items_normalize_part(conv, param, err);
    json_decref(conv);
    return part;
}

/* A document block's source as an input_file part, or NULL with err. */
static json_t *fe_messages_document(const json_t *block, const char *param, fe_error_t *err)
{
    json_t *src = json_object_get(block, "source");
    const char *type = json_string_value(json_object_get(src, "type"));
    const char *title = json_string_value(json_object_get(block, "title"));
    char p[128];
    snprintf(p, sizeof p, "%s.source", param);
    if (!json_is_object(src) || !type)
        return fe_messages_fail_null(err, "missing_required_parameter", p, "Field required");
    const char *mt = json_string_value(json_object_get(src, "media_type"));
    const char *data = json_string_value(json_object_get(src, "data"));
    json_t *conv = NULL;
    if (!strcmp(type, "base64")) {
        if (!mt || strcmp(mt, "application/pdf") != 0)
            return fe_messages_fail_null(err, "invalid_value", p, "media_type should be 'application/pdf'");
        if (!data)
            return fe_messages_fail_null(err, "missing_required_parameter", p, "data: Field required");
        char *url = fe_messages_data_url(mt, data);
        conv = json_pack("{s:s, s:s, s:s}", "type", "input_file", "file_data", url, "filename",
                         title && *title ? title : "document.pdf");
        free(url);
    } else if (!strcmp(type, "text")) {
        if (!mt || strcmp(mt, "text/plain") != 0)
            return fe_messages_fail_null(err, "invalid_value", p, "media_type should be 'text/plain'");
        json_t *d = json_object_get(src, "data");
        if (!json_is_string(d))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "data: Field required");
        size_t n = 0;
        char *b64 = sb_base64_encode(json_string_value(d), json_string_length(d), &n);
        char *url = fe_messages_data_url(mt, b64 ? b64 : "");
        conv = json_pack("{s:s, s:s, s:s}", "type", "input_file", "file_data", url, "filename",
                         title && *title ? title : "document.txt");
        free(url);
        free(b64);
    } else if (!strcmp(type, "file")) {
        if (!json_is_string(json_object_get(src, "file_id")))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "file_id: Field required");
        conv = json_pack("{s:s, s:O}", "type", "input_file", "file_id", json_object_get(src, "file_id"));
    } else if (!strcmp(type, "url") || !strcmp(type, "content")) {
        return fe_messages_fail_null(err, "unsupported_parameter", p,
                                     "unsupported parameter: document source type '%s' is not supported on this "
                                     "gateway; send the document as base64 or text.",
                                     type);
    } else {
        return fe_messages_fail_null(err, "invalid_value", p, "type should be 'base64', 'text' or 'file'");
    }
    json_t *part = fe_items_normalize_part(conv, param, err);
    json_decref(conv);
    return part;
}

/* A tool_result's content: a string, or parts when it holds media. */
static json_t *fe_messages_tool_output(const json_t *block, const char *param, fe_error_t *err)
{
    json_t *content = json_object_get(block, "content");
    bool is_error = json_is_true(json_object_get(block, "is_error"));
    const char *prefix = is_error ? "Error: " : "";
    if (!content || json_is_null(content) || json_is_string(content)) {
        char *s = sb_xasprintf("%s%s", prefix, json_is_string(content) ? json_string_value(content) : "");
        json_t *out = json_string(s);
        free(s);
        return out;
    }
    char p[128];
    snprintf(p, sizeof p, "%s.content", param);
    if (!json_is_array(content))
        return fe_messages_fail_null(err, "invalid_type", p, "Input should be a valid string or list");
    json_t *parts = json_array();
    bool media = false;
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        char bp[160];
        snprintf(bp, sizeof bp, "%s.%zu", p, i);
        json_t *type = json_object_get(b, "type");
        json_t *part = NULL;
        if (fe_messages_is(type, "text") && json_is_string(json_object_get(b, "text"))) {
            part = json_pack("{s:s, s:O}", "type", "input_text", "text", json_object_get(b, "text"));
        } else if (fe_messages_is(type, "image")) {
            part = fe_messages_image(b, bp, err);
            media = true;
        } else if (fe_messages_is(type, "document")) {
            part = fe_messages_document(b, bp, err);
            media = true;
        } else if (fe_messages_is(type, "tool_reference") && json_is_string(json_object_get(b, "tool_name"))) {
            /* A client's tool search loading a deferred tool (Claude Code's
             * ToolSearch). Deferred tools are offered in full here
             * (defer_loading is a hint), so the model is told it is there. */
            char *text = sb_xasprintf("Tool '%.200s' is loaded and can be called.",
                                      json_string_value(json_object_get(b, "tool_name")));
            part = json_pack("{s:s, s:s}", "type", "input_text", "text", text);
            free(text);
        } else {
            fe_messages_fail(err, "invalid_value", bp,
                             "tool_result content blocks must be text, image, document or tool_reference");
        }
        if (!part) {
            json_decref(parts);
            return NULL;
        }
        json_array_append_new(parts, part);
    }
    if (media) {
        if (is_error)
            json_array_insert_new(parts, 0, json_pack("{s:s, s:s}", "type", "input_text", "text", "Error:"));
        return parts;
    }
    /* Text only: one string, the blocks joined by newlines. */
    size_t total = strlen(prefix) + 1;
    json_array_foreach (parts, i, b)
        total += json_string_length(json_object_get(b, "text")) + 1;
    char *buf = sb_xmalloc(total);
    size_t off = strlen(prefix);
    memcpy(buf, prefix, off);
    json_array_foreach (parts, i, b) {
        json_t *t = json_object_get(b, "text");
        if (i > 0)
            buf[off++] = '\n';
        memcpy(buf + off, json_string_value(t), json_string_length(t));
        off += json_string_length(t);
    }
    json_t *out = json_stringn(buf, off);
    free(buf);
    json_decref(parts);
    return out;
}

/* A thinking block's signature (or a redacted_thinking block's data): the
 * reasoning item this gateway sealed into it. */
static json_t *fe_messages_open_thinking(const fe_sealer_t *seal, const json_t *block, bool redacted, const char *param,
                                         fe_error_t *err)
{
    const char *field = redacted ? "data" : "signature";
    const char *token = json_string_value(json_object_get(block, field));
    if (!token || !*token)
        return fe_messages_fail_null(err, "missing_required_parameter", param, "%s: Field required", field);
    if (!redacted && !json_is_string(json_object_get(block, "thinking")))
        return fe_messages_fail_null(err, "missing_required_parameter", param, "thinking: Field required");
    json_t *item = fe_reasoning_open(seal, token, param, err);
    if (item && fe_messages_is(json_object_get(item, "type"), "reasoning"))
        return item;
    json_decref(item);
    /* Not configured keeps its own message; anything else is a bad token. */
    if (!item && strcmp(err->code, "invalid_encrypted_content") != 0)
        return NULL;
    fe_messages_fail(err, "invalid_encrypted_content", param, "Invalid `%s` in `%s` block", field,
                     redacted ? "redacted_thinking" : "thinking");
    return NULL;
}

/* Blocks only one role may send. */
static int fe_messages_role_only(const char *type, const char *role, bool assistant, const char *param, fe_error_t *err)
{
    if (assistant == !strcmp(role, "assistant"))
        return 0;
    return fe_messages_fail(err, "invalid_value", param, "`%s` blocks are only allowed in %s messages", type,
                            assistant ? "assistant" : "user");
}

static int fe_messages_block(const fe_sealer_t *seal, fe_messages_out_t *o, const json_t *block, const char *param,
                             fe_error_t *err)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    if (!json_is_object(block))
        return fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
    if (!type)
        return fe_messages_fail(err, "missing_required_parameter", param, "type: Field required");
    bool assistant = !strcmp(o->role, "assistant");
    if (!strcmp(type, "text")) {
        json_t *text = json_object_get(block, "text");
        if (!json_is_string(text))
            return fe_messages_fail(err, "missing_required_parameter", param, "text: Field required");
        fe_messages_add_part(o,
                             json_pack("{s:s, s:O}", "type", assistant ? "output_text" : "input_text", "text", text));
        return 0;
    }
    if (!strcmp(type, "image") || !strcmp(type, "document")) {
        if (fe_messages_role_only(type, o->role, false, param, err) < 0)
            return -1;
        json_t *part =
            !strcmp(type, "image") ? fe_messages_image(block, param, err) : fe_messages_document(block, param, err);
        if (!part)
            return -1;
        fe_messages_add_part(o, part);
        return 0;
    }
    if (!strcmp(type, "tool_use")) {
        if (fe_messages_role_only(type, o->role, true, param, err) < 0)
            return -1;
        json_t *id = json_object_get(block, "id"), *name = json_object_get(block, "name");
        json_t *input = json_object_get(block, "input");
        if (!json_is_string(id) || !json_is_string(name) || !json_is_object(input))
            return fe_messages_fail(err, "invalid_value", param,
                                    "tool_use blocks need a string id and name and an "
                                    "object input");
        char *args = json_dumps(input, JSON_COMPACT);
        fe_messages_add_item(o, json_pack("{s:s, s:O, s:O, s:s}", "type", "function_call", "call_id", id, "name", name,
                                          "arguments", args ? args : "{}"));
        free(args);
        return 0;
    }
    if (!strcmp(type, "tool_result")) {
        if (fe_messages_role_only(type, o->role, false, param, err) < 0)
            return -1;
        json_t *id = json_object_get(block, "tool_use_id");
        json_t *is_error = json_object_get(block, "is_error");
        if (!json_is_string(id) || json_string_length(id) == 0)
            return fe_messages_fail(err, "missing_required_parameter", param, "tool_use_id: Field required");
        if (is_error && !json_is_boolean(is_error) && !json_is_null(is_error))
            return fe_messages_fail(err, "invalid_type", param, "is_error: Input should be a valid boolean");
        json_t *output = fe_messages_tool_output(block, param, err);
        if (!output)
            return -1;
        fe_messages_add_item(
            o, json_pack("{s:s, s:O, s:o}", "type", "function_call_output", "call_id", id, "output", output));
        return 0;
    }
    if (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking")) {
        if (fe_messages_role_only(type, o->role, true, param, err) < 0)
            return -1;
        json_t *item = fe_messages_open_thinking(seal, block, !strcmp(type, "redacted_thinking"), param, err);
        if (!item)
            return -1;
        fe_messages_add_item(o, item);
        return 0;
    }
    if (fe_messages_server_block(type)) {
        /* What a server tool did in an earlier assistant turn, sent back as
         * the response had it: the built-in items, in their order. */
        if (fe_messages_role_only(type, o->role, true, param, err) < 0)
            return -1;
        fe_messages_flush(o);
        return fe_messages_server_item(seal, o->items, block, type, param, err);
    }
    return fe_messages_fail(err, "unsupported_parameter", param,
                            "unsupported parameter: content block type '%.40s' is not supported on this gateway.",
                            type);
}

/* {"role":"system","content": string | text blocks} -> a canonical system
 * message with input_text parts (cache_control on a block is a hint). */
static int fe_messages_system_message(const json_t *m, json_t *items, const char *param, fe_error_t *err)
{
    json_t *content = json_object_get(m, "content");
    json_t *parts = json_array();
    if (json_is_string(content) && json_string_length(content) > 0) {
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "input_text", "text", content));
    } else if (json_is_array(content)) {
        size_t j;
        json_t *b;
        json_array_foreach (content, j, b) {
            json_t *text = json_object_get(b, "text");
            if (!fe_messages_is(json_object_get(b, "type"), "text") || !json_is_string(text)) {
                char bp[80];
                snprintf(bp, sizeof bp, "%s.content.%zu", param, j);
                json_decref(parts);
                return fe_messages_fail(err, "invalid_value", bp, "system messages take text blocks only");
            }
            json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "input_text", "text", text));
        }
    }
    if (json_array_size(parts) == 0) {
        json_decref(parts);
        return fe_messages_fail(err, "invalid_value", param,
                                "all messages must have non-empty content except for the optional final "
                                "assistant message");
    }
    json_array_append_new(items, json_pack("{s:s, s:s, s:o}", "type", "message", "role", "system", "content", parts));
    return 0;
}

int fe_messages_messages(const fe_sealer_t *seal, const json_t *messages, json_t *items, fe_error_t *err)
{
    size_t n = json_array_size(messages), i, turns = 0;
    json_t *m;
    json_array_foreach (messages, i, m) {
        char param[48];
        snprintf(param, sizeof param, "messages.%zu", i);
        if (!json_is_object(m))
            return fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
        json_t *rolev = json_object_get(m, "role");
        const char *role = json_string_value(rolev);
        if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0 && strcmp(role, "system") != 0)) {
            snprintf(param, sizeof param, "messages.%zu.role", i);
            return fe_messages_fail(err, "invalid_value", param, "Input should be 'user', 'assistant' or 'system'");
        }
        if (!strcmp(role, "system")) {
            /* A system message between turns (Anthropic takes these today):
             * instructions at that point of the conversation. */
            if (fe_messages_system_message(m, items, param, err) < 0)
                return -1;
            continue;
        }
        json_t *content = json_object_get(m, "content");
        bool last_assistant = i == n - 1 && !strcmp(role, "assistant");
        bool empty = (json_is_string(content) && json_string_length(content) == 0) ||
                     (json_is_array(content) && json_array_size(content) == 0);
        if (empty && !last_assistant)
            return fe_messages_fail(err, "invalid_value", param,
                                    "all messages must have non-empty content except for the optional final "
                                    "assistant message");
        fe_messages_out_t o = {.items = items, .parts = NULL, .role = role};
        if (json_is_string(content)) {
            if (!empty)
                fe_messages_add_part(&o, json_pack("{s:s, s:O}", "type",
                                                   !strcmp(role, "assistant") ? "output_text" : "input_text", "text",
                                                   content));
        } else if (json_is_array(content)) {
            size_t j;
            json_t *b;
            json_array_foreach (content, j, b) {
                char bp[80];
                snprintf(bp, sizeof bp, "messages.%zu.content.%zu", i, j);
                if (fe_messages_block(seal, &o, b, bp, err) < 0) {
                    json_decref(o.parts);
                    return -1;
                }
            }
        } else {
            snprintf(param, sizeof param, "messages.%zu.content", i);
            return fe_messages_fail(err, content ? "invalid_type" : "missing_required_parameter", param,
                                    content ? "Input should be a valid string or list" : "Field required");
        }
        fe_messages_flush(&o);
        turns++;
    }
    if (turns == 0)
        return fe_messages_fail(err, "invalid_value", "messages",
                                "messages: at least one message with role 'user' or 'assistant' is required");
    return 0;
}
