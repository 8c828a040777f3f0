/*
 * provider_anthropic: the "anthropic" adapter, Anthropic's Messages API
 * (POST {base_url}/v1/messages, base_url being the bare origin), with
 * x-api-key and anthropic-version: 2023-06-01. No anthropic-beta header:
 * everything used here (thinking, strict tools, output_config) is GA.
 *
 * Canonical (Responses-shaped) job -> Messages request:
 *   instructions, system/developer   -> "system": one string, the pieces in
 *   messages                            order joined with "\n\n" (the parts of
 *                                       one message with "\n"); text only
 *   user/assistant messages          -> messages; consecutive turns of one
 *                                       role merge into one message (Anthropic
 *                                       wants user/assistant alternation)
 *   input_text/output_text parts     -> text blocks (empty ones are left out:
 *                                       Anthropic rejects empty text blocks)
 *   refusal parts (assistant)        -> text blocks
 *   input_image                      -> image, source url (http/https) or
 *                                       base64 (data URL; jpeg/png/gif/webp);
 *                                       "detail" has no Anthropic equivalent
 *   input_file (data URL)            -> document: PDFs as base64, text
 *                                       (text/..., application/json, or
 *                                       .txt/.md/.csv/.json as octet-stream)
 *                                       as a text source; title = filename
 *   function_call                    -> assistant tool_use {id: call_id, input}
 *   function_call_output             -> user tool_result {tool_use_id: call_id}
 *   reasoning with "signature"       -> assistant thinking block
 *   reasoning with "redacted"        -> assistant redacted_thinking block
 *   reasoning without either         -> DROPPED: it came from another
 *                                       provider, and Anthropic only takes
 *                                       back thinking it has signed. The one
 *                                       canonical input this adapter drops.
 *   tools (function)                 -> tools {name, description, input_schema,
 *                                       strict}
 *   tool_choice, parallel_tool_calls -> tool_choice {type auto|any|none|tool,
 *                                       disable_parallel_tool_use}
 *   text.format json_schema          -> output_config.format
 *   reasoning.effort                 -> thinking {type enabled, budget_tokens}
 *   max_output_tokens                -> max_tokens (else the route's, else 4096)
 *   temperature, top_p, stop, user   -> temperature, top_p, stop_sequences,
 *                                       metadata.user_id
 * Refused with 400 unsupported_parameter rather than dropped: input_audio,
 * other file types, built-in tools, text.format json_object, seed,
 * frequency/presence penalties, n > 1 (the worker fans n out: supports_n is
 * false). request.metadata is not sent (Messages metadata takes only user_id).
 *
 * Messages response -> canonical events, in content block order:
 *   thinking           -> reasoning item with content [reasoning_text] and the
 *                         private field "signature"
 *   redacted_thinking  -> reasoning item with empty content and the private
 *                         field "redacted" (the opaque data)
 *   text blocks        -> one message item; consecutive text blocks are its
 *                         output_text parts (content_index 0, 1, ...)
 *   tool_use           -> function_call item, arguments the compact JSON input
 * then usage (cache reads and writes count as input) and completed:
 * stop_reason max_tokens / model_context_window_exceeded is incomplete
 * (max_output_tokens); refusal is completed, the last message then carrying a
 * refusal part instead of its text. Private fields are stripped by the
 * frontend from plain output (fe_reasoning.h).
 *
 * Streaming (request.stream): the same translation fed by Anthropic's SSE
 * events (message_start, content_block_start/delta/stop, message_delta,
 * message_stop, ping, error), so both paths emit the same events.
 *
 * Token counting (a count job): POST {base_url}/v1/messages/count_tokens with
 * the same body minus max_tokens, stream, sampling and metadata (the
 * endpoint refuses them); {"input_tokens":N} -> usage + completed.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"

#define SB_ANTH_KIND "anthropic"
#define SB_ANTH_VERSION "2023-06-01"
/* max_tokens when neither the request nor the model record sets one (the
 * Messages API requires it). */
#define SB_ANTH_DEFAULT_MAX_TOKENS 4096
/* Anthropic's smallest thinking budget. */
#define SB_ANTH_MIN_BUDGET 1024
/* What a refusal part says when the model stopped with stop_reason
 * "refusal" before writing any text. */
#define SB_ANTH_REFUSAL_TEXT "The model declined to respond."

/*
 * Errors.
 */

/*
 * Request side.
 */

/* Adds a piece of system text, after sep when the buffer is not empty. */
static void sb_anth_buf_join(sb_buf_t *b, const char *sep, const json_t *s)
{
    if (json_string_length(s) == 0)
        return;
    if (b->len > 0)
        sb_buf_add(b, sep, strlen(sep));
    sb_buf_add(b, json_string_value(s), json_string_length(s));
}

/* Appends one block to messages in role's turn: onto the last message when it
 * has that role, else as a new message. Steals block. */
static void sb_anth_push(json_t *messages, const char *role, json_t *block)
{
    json_t *last = json_array_get(messages, json_array_size(messages) - 1);
    const char *last_role = json_string_value(json_object_get(last, "role"));
    if (last_role && !strcmp(last_role, role)) {
        json_array_append_new(json_object_get(last, "content"), block);
        return;
    }
    json_array_append_new(messages, json_pack("{s:s, s:[o]}", "role", role, "content", block));
}

/* input_image -> image block. */
static json_t *sb_anth_image(const json_t *part, size_t index, json_t **err)
{
    const char *url = json_string_value(json_object_get(part, "image_url"));
    if (!url) {
        *err = sb_provider_invalid("input_image (content part %zu) without image_url is not supported by provider "
                                   "anthropic",
                                   index);
        return NULL;
    }
    if (!strncasecmp(url, "http://", 7) || !strncasecmp(url, "https://", 8))
        return json_pack("{s:s, s:{s:s, s:s}}", "type", "image", "source", "type", "url", "url", url);
    char mime[128];
    const char *payload;
    if (sb_provider_data_url(url, mime, sizeof mime, &payload) < 0) {
        *err = sb_provider_invalid("input_image (content part %zu) needs an http(s) URL or a base64 data URL", index);
        return NULL;
    }
    static const char *const types[] = {"image/jpeg", "image/png", "image/gif", "image/webp"};
    bool ok = false;
    for (size_t k = 0; k < sizeof types / sizeof types[0] && !ok; k++)
        ok = !strcmp(mime, types[k]);
    if (!ok) {
        *err =
            sb_provider_unsupported("image type '%s' is not supported by Anthropic upstreams", *mime ? mime : "(none)");
        return NULL;
    }
    return json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "image", "source", "type", "base64", "media_type", mime,
                     "data", payload);
}

/* input_file -> document block: a PDF as base64, a text file as a text
 * source. Anthropic reads no other file types. */
static json_t *sb_anth_document(const json_t *part, size_t index, json_t **err)
{
    const char *data = json_string_value(json_object_get(part, "file_data"));
    const char *filename = json_string_value(json_object_get(part, "filename"));
    const char *name = filename && *filename ? filename : "file";
    char mime[128];
    const char *payload;
    if (!data) {
        *err = sb_provider_invalid("input_file '%s' (content part %zu) without file_data is not supported by provider "
                                   "anthropic",
                                   name, index);
        return NULL;
    }
    if (sb_provider_data_url(data, mime, sizeof mime, &payload) < 0) {
        *err = sb_provider_invalid("input_file '%s' (content part %zu) needs a base64 data URL", name, index);
        return NULL;
    }
    json_t *doc;
    if (!strcmp(mime, "application/pdf")) {
        doc = json_pack("{s:s, s:{s:s, s:s, s:s}}", "type", "document", "source", "type", "base64", "media_type",
                        "application/pdf", "data", payload);
    } else if (sb_provider_is_text_file(mime, filename)) {
        size_t n;
        char *bytes = (char *)sb_base64_decode(payload, strlen(payload), &n);
        if (!bytes) {
            *err =
                sb_provider_invalid("input_file '%s' (content part %zu) has malformed base64 file_data", name, index);
            return NULL;
        }
        json_t *text = json_stringn(bytes, n); /* NULL unless valid UTF-8 */
        free(bytes);
        if (!text) {
            *err = sb_provider_invalid("input_file '%s' (content part %zu) is not UTF-8 text", name, index);
            return NULL;
        }
        doc = json_pack("{s:s, s:{s:s, s:s, s:o}}", "type", "document", "source", "type", "text", "media_type",
                        "text/plain", "data", text);
    } else {
        *err = sb_provider_unsupported("input_file '%s' of type '%s' is not supported by Anthropic upstreams (PDF and "
                                       "text files only)",
                                       name, *mime ? mime : "(none)");
        return NULL;
    }
    if (filename && *filename)
        json_object_set_new(doc, "title", json_string(filename));
    return doc;
}

/* One canonical content part -> a content block. Returns 0 with *out the
 * block, or with *out NULL for an empty text part (left out); -EINVAL with
 * *err. Refusal parts are taken only in an assistant turn. */
static int sb_anth_part(const json_t *part, size_t index, bool assistant, json_t **out, json_t **err)
{
    *out = NULL;
    const char *t = json_string_value(json_object_get(part, "type"));
    if (t && (!strcmp(t, "input_text") || !strcmp(t, "output_text") || (assistant && !strcmp(t, "refusal")))) {
        const json_t *text = json_object_get(part, strcmp(t, "refusal") ? "text" : "refusal");
        if (!json_is_string(text)) {
            *err = sb_provider_invalid("content part %zu has no text", index);
            return -EINVAL;
        }
        if (json_string_length(text) > 0)
            *out = json_pack("{s:s, s:O}", "type", "text", "text", text);
        return 0;
    }
    if (t && !strcmp(t, "input_image"))
        return (*out = sb_anth_image(part, index, err)) ? 0 : -EINVAL;
    if (t && !strcmp(t, "input_file"))
        return (*out = sb_anth_document(part, index, err)) ? 0 : -EINVAL;
    if (t && !strcmp(t, "input_audio")) {
        *err = sb_provider_unsupported("audio input is not supported by Anthropic upstreams");
        return -EINVAL;
    }
    *err = sb_provider_invalid("content part type '%s' is not supported by provider " SB_ANTH_KIND, t ? t : "(none)");
    return -EINVAL;
}

/* A system or developer message's text parts, joined with "\n", onto system. */
static int sb_anth_system(sb_buf_t *system, const json_t *parts, json_t **err)
{
    sb_buf_t piece = {0};
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        const json_t *text = json_object_get(part, "text");
        if (!t || (strcmp(t, "input_text") && strcmp(t, "output_text")) || !json_is_string(text)) {
            sb_buf_free(&piece);
            *err =
                sb_provider_unsupported("content part type '%s' in a system or developer message is not supported by "
                                        "Anthropic upstreams (text only)",
                                        t ? t : "(none)");
            return -EINVAL;
        }
        if (json_string_length(text) == 0)
            continue;
        if (piece.len > 0)
            sb_buf_add(&piece, "\n", 1);
        sb_buf_add(&piece, json_string_value(text), json_string_length(text));
    }
    if (piece.len > 0) {
        if (system->len > 0)
            sb_buf_add(system, "\n\n", 2);
        sb_buf_add(system, piece.p, piece.len);
    }
    sb_buf_free(&piece);
    return 0;
}

/* A user or assistant message's parts -> blocks in that role's turn. */
static int sb_anth_message(json_t *messages, const char *role, const json_t *parts, json_t **err)
{
    bool assistant = !strcmp(role, "assistant");
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        json_t *block;
        if (sb_anth_part(part, i, assistant, &block, err) < 0)
            return -EINVAL;
        if (block)
            sb_anth_push(messages, role, block);
    }
    return 0;
}

/* function_call -> an assistant tool_use block. Anthropic takes the input as
 * an object, so the arguments string must parse to one. */
static int sb_anth_tool_use(json_t *messages, const json_t *item, json_t **err)
{
    const json_t *call_id = json_object_get(item, "call_id");
    const json_t *name = json_object_get(item, "name");
    const json_t *args = json_object_get(item, "arguments");
    if (!json_is_string(call_id) || !json_is_string(name)) {
        *err = sb_provider_invalid("function_call items need call_id and name");
        return -EINVAL;
    }
    json_t *input;
    if (json_is_object(args)) {
        input = json_incref((json_t *)args);
    } else if (!args || json_is_null(args) || (json_is_string(args) && json_string_length(args) == 0)) {
        input = json_object();
    } else {
        input = json_is_string(args) ? json_loadb(json_string_value(args), json_string_length(args), 0, NULL) : NULL;
        if (!json_is_object(input)) {
            json_decref(input);
            *err = sb_provider_invalid("function_call '%s' has arguments that are not a JSON object",
                                       json_string_value(call_id));
            return -EINVAL;
        }
    }
    sb_anth_push(messages, "assistant",
                 json_pack("{s:s, s:O, s:O, s:o}", "type", "tool_use", "id", call_id, "name", name, "input", input));
    return 0;
}

/* function_call_output -> a user tool_result block: a string output as is,
 * parts as text/image/document blocks, any other JSON as its text. */
static int sb_anth_tool_result(json_t *messages, const json_t *item, json_t **err)
{
    const json_t *call_id = json_object_get(item, "call_id");
    const json_t *output = json_object_get(item, "output");
    if (!json_is_string(call_id)) {
        *err = sb_provider_invalid("function_call_output items need call_id");
        return -EINVAL;
    }
    json_t *block = json_pack("{s:s, s:O}", "type", "tool_result", "tool_use_id", call_id);
    if (json_is_string(output)) {
        if (json_string_length(output) > 0)
            json_object_set(block, "content", (json_t *)output);
    } else if (json_is_array(output)) {
        json_t *content = json_array();
        size_t i;
        const json_t *part;
        json_array_foreach (output, i, part) {
            json_t *b;
            if (sb_anth_part(part, i, false, &b, err) < 0) {
                json_decref(content);
                json_decref(block);
                return -EINVAL;
            }
            if (b)
                json_array_append_new(content, b);
        }
        if (json_array_size(content) > 0)
            json_object_set_new(block, "content", content);
        else
            json_decref(content);
    } else if (output && !json_is_null(output)) {
        char *s = json_dumps(output, JSON_COMPACT | JSON_ENCODE_ANY);
        json_object_set_new(block, "content", json_string(s ? s : ""));
        free(s);
    }
    sb_anth_push(messages, "user", block);
    return 0;
}

/* A reasoning item -> a thinking or redacted_thinking block in the
 * assistant's turn, when it carries Anthropic's signature or redacted data;
 * otherwise nothing (see the file comment: the one dropped input). */
static void sb_anth_thinking(json_t *messages, const json_t *item)
{
    const json_t *redacted = json_object_get(item, "redacted");
    if (json_is_string(redacted)) {
        sb_anth_push(messages, "assistant", json_pack("{s:s, s:O}", "type", "redacted_thinking", "data", redacted));
        return;
    }
    const json_t *signature = json_object_get(item, "signature");
    if (!json_is_string(signature))
        return;
    sb_buf_t text = {0};
    size_t i;
    const json_t *part;
    json_array_foreach (json_object_get(item, "content"), i, part) {
        const json_t *t = json_object_get(part, "text");
        if (json_is_string(t))
            sb_buf_add(&text, json_string_value(t), json_string_length(t));
    }
    sb_anth_push(messages, "assistant",
                 json_pack("{s:s, s:s%, s:O}", "type", "thinking", "thinking", text.p ? text.p : "", text.len,
                           "signature", signature));
    sb_buf_free(&text);
}

/* request.instructions and input -> body.system and body.messages. */
static int sb_anth_messages(json_t *body, const json_t *request, json_t **err)
{
    json_t *messages = json_array();
    sb_buf_t system = {0};
    const json_t *instructions = json_object_get(request, "instructions");
    if (json_is_string(instructions))
        sb_anth_buf_join(&system, "\n\n", instructions);
    const json_t *input = json_object_get(request, "input");
    if (input && !json_is_null(input) && !json_is_array(input)) {
        *err = sb_provider_invalid("request.input must be an array of items");
        goto fail;
    }
    size_t i;
    const json_t *item;
    json_array_foreach (input, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type) {
            *err = sb_provider_invalid("input item %zu has no type", i);
            goto fail;
        }
        if (!strcmp(type, "message")) {
            const char *role = json_string_value(json_object_get(item, "role"));
            const json_t *content = json_object_get(item, "content");
            if (!role || (strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "user") &&
                          strcmp(role, "assistant"))) {
                *err = sb_provider_invalid("input item %zu has an unsupported role", i);
                goto fail;
            }
            if (!json_is_array(content)) {
                *err = sb_provider_invalid("message content must be an array of parts");
                goto fail;
            }
            int rc = (!strcmp(role, "system") || !strcmp(role, "developer"))
                         ? sb_anth_system(&system, content, err)
                         : sb_anth_message(messages, role, content, err);
            if (rc < 0)
                goto fail;
        } else if (!strcmp(type, "function_call")) {
            if (sb_anth_tool_use(messages, item, err) < 0)
                goto fail;
        } else if (!strcmp(type, "function_call_output")) {
            if (sb_anth_tool_result(messages, item, err) < 0)
                goto fail;
        } else if (!strcmp(type, "reasoning")) {
            sb_anth_thinking(messages, item);
        } else {
            *err = sb_provider_invalid("input item type '%s' is not supported by provider " SB_ANTH_KIND, type);
            goto fail;
        }
    }
    if (system.len > 0)
        json_object_set_new(body, "system", json_stringn(system.p, system.len));
    json_object_set_new(body, "messages", messages);
    sb_buf_free(&system);
    return 0;
fail:
    sb_buf_free(&system);
    json_decref(messages);
    return -EINVAL;
}

static json_t *sb_anth_tools(const json_t *tools, json_t **err)
{
    json_t *out = json_array();
    size_t i;
    const json_t *tool;
    json_array_foreach (tools, i, tool) {
        const char *type = json_string_value(json_object_get(tool, "type"));
        if (!type || strcmp(type, "function")) {
            *err = sb_provider_unsupported("tool type '%s' is not supported by Anthropic upstreams",
                                           type ? type : "(none)");
            goto fail;
        }
        const json_t *name = json_object_get(tool, "name");
        if (!json_is_string(name)) {
            *err = sb_provider_invalid("function tool %zu has no name", i);
            goto fail;
        }
        json_t *t = json_pack("{s:O}", "name", name);
        const json_t *v;
        if (json_is_string(v = json_object_get(tool, "description")))
            json_object_set(t, "description", (json_t *)v);
        if (json_is_object(v = json_object_get(tool, "parameters")))
            json_object_set(t, "input_schema", (json_t *)v);
        else /* Anthropic requires a schema; a tool without parameters takes none */
            json_object_set_new(t, "input_schema", json_pack("{s:s, s:{}}", "type", "object", "properties"));
        if (json_is_true(json_object_get(tool, "strict")))
            json_object_set_new(t, "strict", json_true());
        json_array_append_new(out, t);
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* tool_choice and parallel_tool_calls -> one Messages tool_choice object. */
static int sb_anth_tool_choice(json_t *body, const json_t *tc, const json_t *parallel, json_t **err)
{
    json_t *out = NULL;
    if (!tc || json_is_null(tc) || (json_is_string(tc) && !strcmp(json_string_value(tc), "auto"))) {
        out = json_pack("{s:s}", "type", "auto");
    } else if (json_is_string(tc) && !strcmp(json_string_value(tc), "required")) {
        out = json_pack("{s:s}", "type", "any");
    } else if (json_is_string(tc) && !strcmp(json_string_value(tc), "none")) {
        json_object_set_new(body, "tool_choice", json_pack("{s:s}", "type", "none"));
        return 0; /* no tool use at all: nothing to parallelize */
    } else {
        const char *type = json_string_value(json_object_get(tc, "type"));
        const json_t *name = json_object_get(tc, "name");
        if (!type || strcmp(type, "function") || !json_is_string(name)) {
            *err = sb_provider_unsupported("tool_choice '%s' is not supported by Anthropic upstreams",
                                           json_is_string(tc) ? json_string_value(tc)
                                           : type             ? type
                                                              : "(none)");
            return -EINVAL;
        }
        out = json_pack("{s:s, s:O}", "type", "tool", "name", name);
    }
    if (json_is_false(parallel))
        json_object_set_new(out, "disable_parallel_tool_use", json_true());
    /* The API default is auto with parallel use: say nothing unless asked. */
    bool given = tc && !json_is_null(tc);
    if (!given && json_object_size(out) == 1) {
        json_decref(out);
        return 0;
    }
    json_object_set_new(body, "tool_choice", out);
    return 0;
}

static int sb_anth_output_format(json_t *body, const json_t *text, json_t **err)
{
    const json_t *format = json_object_get(text, "format");
    if (!format || json_is_null(format))
        return 0;
    const char *type = json_string_value(json_object_get(format, "type"));
    if (type && !strcmp(type, "text"))
        return 0;
    if (type && !strcmp(type, "json_schema")) {
        const json_t *schema = json_object_get(format, "schema");
        if (!json_is_object(schema)) {
            *err = sb_provider_invalid("text.format json_schema needs a schema");
            return -EINVAL;
        }
        /* Anthropic always constrains JSON output to the schema; name and
         * strict have no counterpart (the worker still checks strict). */
        json_object_set_new(body, "output_config",
                            json_pack("{s:{s:s, s:O}}", "format", "type", "json_schema", "schema", schema));
        return 0;
    }
    if (type && !strcmp(type, "json_object")) {
        *err = sb_provider_unsupported("text.format json_object is not supported by Anthropic upstreams (no JSON mode "
                                       "without a schema; use json_schema)");
        return -EINVAL;
    }
    *err = sb_provider_invalid("text.format '%s' is not supported by provider " SB_ANTH_KIND, type ? type : "(none)");
    return -EINVAL;
}

/* max_tokens and thinking. max_tokens is the request's max_output_tokens,
 * else the model record's, else 4096. A thinking budget must be >= 1024 and
 * below max_tokens: a caller's (or the model's) limit is never raised, the
 * budget is cut to fit instead, and a limit too small for any budget is a
 * 400. Only the 4096 fallback, which nobody asked for, grows to leave the
 * answer its 4096 tokens next to the budget. */
static int sb_anth_limits(json_t *body, const json_t *job, const json_t *request, json_t **err)
{
    json_int_t max_tokens = SB_ANTH_DEFAULT_MAX_TOKENS;
    bool chosen = true;
    const json_t *v = json_object_get(request, "max_output_tokens");
    const json_t *route_max = json_object_get(sb_job_route(job), "max_output_tokens");
    if (v && !json_is_null(v)) {
        if (!json_is_integer(v)) {
            *err = sb_provider_invalid("request.max_output_tokens has the wrong type");
            return -EINVAL;
        }
        if (json_integer_value(v) < 1) {
            *err = sb_provider_invalid("request.max_output_tokens must be at least 1");
            return -EINVAL;
        }
        max_tokens = json_integer_value(v);
    } else if (json_is_integer(route_max) && json_integer_value(route_max) > 0) {
        max_tokens = json_integer_value(route_max);
    } else {
        chosen = false;
    }

    const json_t *effort = json_object_get(json_object_get(request, "reasoning"), "effort");
    json_int_t budget = 0;
    if (effort && !json_is_null(effort)) {
        static const struct {
            const char *effort;
            json_int_t budget;
        } budgets[] = {{"none", 0},     {"minimal", 1024}, {"low", 2048}, {"medium", 8192},
                       {"high", 16384}, {"xhigh", 32000},  {"max", 32000}};
        const char *e = json_string_value(effort);
        size_t k = 0;
        while (e && k < sizeof budgets / sizeof budgets[0] && strcmp(budgets[k].effort, e))
            k++;
        if (!e || k == sizeof budgets / sizeof budgets[0]) {
            *err = sb_provider_invalid("reasoning.effort '%s' is not supported by provider " SB_ANTH_KIND,
                                       e ? e : "(not a string)");
            return -EINVAL;
        }
        budget = budgets[k].budget;
        /* A Messages-style client asked for an exact budget: keep it. */
        const json_t *exact = json_object_get(json_object_get(request, "reasoning"), "budget_tokens");
        if (budget > 0 && json_is_integer(exact) && json_integer_value(exact) >= SB_ANTH_MIN_BUDGET)
            budget = json_integer_value(exact);
        if (budget > 0 && !chosen)
            max_tokens = budget + SB_ANTH_DEFAULT_MAX_TOKENS;
        if (budget > 0 && max_tokens <= budget) {
            if (max_tokens - 1 < SB_ANTH_MIN_BUDGET) {
                *err =
                    sb_provider_unsupported("max_output_tokens %lld is too small for reasoning effort '%s' on "
                                            "Anthropic upstreams (thinking needs more than %d; use effort 'none' or a "
                                            "larger max_output_tokens)",
                                            (long long)max_tokens, e, SB_ANTH_MIN_BUDGET);
                return -EINVAL;
            }
            budget = max_tokens - 1;
        }
    }
    json_object_set_new(body, "max_tokens", json_integer(max_tokens));
    if (budget > 0)
        json_object_set_new(body, "thinking", json_pack("{s:s, s:I}", "type", "enabled", "budget_tokens", budget));
    return 0;
}

/* Sampling and the rest: copied with a type check, renamed, or refused. */
static int sb_anth_params(json_t *body, const json_t *request, json_t **err)
{
    static const char *const numbers[] = {"temperature", "top_p", "top_k"};
    for (size_t k = 0; k < sizeof numbers / sizeof numbers[0]; k++) {
        const json_t *v = json_object_get(request, numbers[k]);
        if (!v || json_is_null(v))
            continue;
        if (!json_is_number(v) || (!strcmp(numbers[k], "top_k") && !json_is_integer(v))) {
            *err = sb_provider_invalid("request.%s has the wrong type", numbers[k]);
            return -EINVAL;
        }
        /* With thinking on, Anthropic takes no top_k: a sampling hint
         * (Gemini CLI sends one on every request), left out then. */
        if (!strcmp(numbers[k], "top_k") && json_object_get(body, "thinking"))
            continue;
        json_object_set(body, numbers[k], (json_t *)v);
    }
    const json_t *stop = json_object_get(request, "stop");
    if (stop && !json_is_null(stop)) {
        json_t *seqs = json_array();
        if (json_is_string(stop)) {
            json_array_append(seqs, (json_t *)stop);
        } else if (json_is_array(stop)) {
            size_t i;
            const json_t *s;
            json_array_foreach (stop, i, s) {
                if (!json_is_string(s))
                    break;
                json_array_append(seqs, (json_t *)s);
            }
        }
        if (json_array_size(seqs) != (json_is_array(stop) ? json_array_size(stop) : 1)) {
            json_decref(seqs);
            *err = sb_provider_invalid("request.stop has the wrong type");
            return -EINVAL;
        }
        if (json_array_size(seqs) > 0)
            json_object_set_new(body, "stop_sequences", seqs);
        else
            json_decref(seqs);
    }
    const json_t *user = json_object_get(request, "user");
    if (user && !json_is_null(user)) {
        if (!json_is_string(user)) {
            *err = sb_provider_invalid("request.user has the wrong type");
            return -EINVAL;
        }
        json_object_set_new(body, "metadata", json_pack("{s:O}", "user_id", user));
    }
    static const char *const refused[] = {"seed", "frequency_penalty", "presence_penalty"};
    for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
        const json_t *v = json_object_get(request, refused[k]);
        if (v && !json_is_null(v)) {
            *err = sb_provider_unsupported("%s is not supported by Anthropic upstreams", refused[k]);
            return -EINVAL;
        }
    }
    /* n > 1 never gets here (supports_n is false: the worker fans out). */
    const json_t *n = json_object_get(request, "n");
    if (n && !json_is_null(n)) {
        if (!json_is_integer(n)) {
            *err = sb_provider_invalid("request.n has the wrong type");
            return -EINVAL;
        }
        if (json_integer_value(n) != 1) {
            *err = json_integer_value(n) < 1 ? sb_provider_invalid("request.n must be at least 1")
                                             : sb_provider_unsupported("n > 1 is not supported by Anthropic upstreams");
            return -EINVAL;
        }
    }
    return 0;
}

static bool sb_anth_wants_stream(const json_t *job)
{
    return json_is_true(json_object_get(sb_job_request(job), "stream"));
}

/* The Messages request, or (count) the count_tokens request: the same body
 * without what only shapes the output, which count_tokens refuses. */
static int sb_anth_build(const json_t *job, sb_provider_request_t *req, json_t **err, bool count)
{
    *err = NULL;
    json_t *body = NULL;
    const json_t *request = sb_job_request(job);
    const char *upstream_model = sb_job_route_str(job, "upstream_model");
    if (!request) {
        *err = sb_provider_invalid("job has no request");
        goto fail;
    }
    if (!upstream_model || !*upstream_model) {
        *err = sb_provider_invalid("route has no upstream_model");
        goto fail;
    }
    req->url = sb_provider_url(job, count ? "/v1/messages/count_tokens" : "/v1/messages");
    if (!req->url) {
        *err = sb_provider_invalid("route has no base_url");
        goto fail;
    }
    const char *credential;
    if (sb_provider_credential(job, &credential, err) < 0)
        goto fail;

    body = json_pack("{s:s}", "model", upstream_model);
    if (sb_anth_limits(body, job, request, err) < 0 || sb_anth_messages(body, request, err) < 0)
        goto fail;
    /* Like chat, tool_choice goes only with tools (Anthropic rejects a
     * tool_choice without them). */
    const json_t *tools = json_object_get(request, "tools");
    if (tools && !json_is_null(tools) && !json_is_array(tools)) {
        *err = sb_provider_invalid("request.tools must be an array");
        goto fail;
    }
    if (json_array_size(tools) > 0) {
        json_t *t = sb_anth_tools(tools, err);
        if (!t)
            goto fail;
        json_object_set_new(body, "tools", t);
        if (sb_anth_tool_choice(body, json_object_get(request, "tool_choice"),
                                json_object_get(request, "parallel_tool_calls"), err) < 0)
            goto fail;
    }
    if (sb_anth_output_format(body, json_object_get(request, "text"), err) < 0 ||
        sb_anth_params(body, request, err) < 0)
        goto fail;
    bool stream = !count && sb_anth_wants_stream(job);
    if (count) {
        static const char *const output_only[] = {"max_tokens", "temperature",    "top_p",
                                                  "top_k",      "stop_sequences", "metadata"};
        for (size_t k = 0; k < sizeof output_only / sizeof output_only[0]; k++)
            json_object_del(body, output_only[k]);
    } else {
        json_object_set_new(body, "stream", json_boolean(stream));
    }

    if (sb_provider_request_set_json(req, body, stream, err) < 0)
        goto fail;
    sb_provider_request_add_header(req, "anthropic-version: " SB_ANTH_VERSION);
    if (credential)
        sb_provider_request_add_header(req, "x-api-key: %s", credential);
    json_decref(body);
    return 0;
fail:
    json_decref(body);
    return -EINVAL;
}

static int sb_anth_build_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_anth_build(job, req, err, false);
}

/* POST /v1/messages/count_tokens: the message request's model, system,
 * messages, tools, tool_choice, thinking and output_config. */
static int sb_anth_build_count_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_anth_build(job, req, err, true);
}

/*
 * Response side: one translator, fed content blocks either from a complete
 * message (parse_response) or from SSE events (the stream hooks).
 */

enum sb_anth_block {
    SB_ANTH_BLOCK_NONE,     /* between blocks */
    SB_ANTH_BLOCK_TEXT,     /* a text block: part of the open message */
    SB_ANTH_BLOCK_THINKING, /* a thinking block: its reasoning item is open */
    SB_ANTH_BLOCK_REDACTED, /* a redacted_thinking block: its reasoning item is open */
    SB_ANTH_BLOCK_TOOL,     /* a tool_use block: its function_call item is open */
    SB_ANTH_BLOCK_SKIP,     /* a block type this adapter does not translate */
};

typedef struct sb_anth_out {
    json_t *events; /* borrowed: where events go (the stream's is per feed) */
    int next_item;  /* the next item_index */
    /* The open message item (consecutive text blocks), or msg_item -1. */
    int msg_item;
    char msg_id[SB_ID_MAX];
    json_t *msg_parts;
    /* The block in progress. */
    enum sb_anth_block block;
    json_int_t block_index; /* the upstream's content block index */
    int block_item;
    char block_id[SB_ID_MAX];
    json_t *block_json; /* the block as it started (tool_use id/name/input, redacted data) */
    sb_buf_t text;      /* its text, thinking or partial_json so far */
    sb_buf_t sig;       /* a thinking block's signature */
    /* The message. */
    char stop_reason[48];
    bool have_usage;
    int64_t in, cache_read, cache_write, out;
} sb_anth_out_t;

static void sb_anth_out_init(sb_anth_out_t *o, json_t *events)
{
    memset(o, 0, sizeof *o);
    o->events = events;
    o->msg_item = -1;
}

static void sb_anth_out_clear(sb_anth_out_t *o)
{
    json_decref(o->msg_parts);
    json_decref(o->block_json);
    sb_buf_free(&o->text);
    sb_buf_free(&o->sig);
    memset(o, 0, sizeof *o);
    o->msg_item = -1;
}

static void sb_anth_emit(sb_anth_out_t *o, json_t *ev)
{
    json_array_append_new(o->events, ev);
}

static void sb_anth_open_message(sb_anth_out_t *o)
{
    o->msg_item = o->next_item++;
    sb_id_new(o->msg_id, sizeof o->msg_id, "msg_", 16);
    o->msg_parts = json_array();
    sb_anth_emit(
        o, sb_event_item_added(o->msg_item, json_pack("{s:s, s:s, s:s, s:s, s:[]}", "type", "message", "id", o->msg_id,
                                                      "role", "assistant", "status", "in_progress", "content")));
}

/* Ends the open message item. With refusal (stop_reason "refusal") the
 * message is the model declining: its text becomes one refusal part, and a
 * message is made for it when none is open. */
static void sb_anth_close_message(sb_anth_out_t *o, bool refusal)
{
    if (o->msg_item < 0 && !refusal)
        return;
    if (o->msg_item < 0)
        sb_anth_open_message(o);
    json_t *parts = o->msg_parts;
    o->msg_parts = NULL;
    if (refusal) {
        sb_buf_t text = {0};
        size_t i;
        const json_t *part;
        json_array_foreach (parts, i, part) {
            const json_t *t = json_object_get(part, "text");
            sb_buf_add(&text, json_string_value(t), json_string_length(t));
        }
        json_decref(parts);
        parts = json_pack("[{s:s, s:s}]", "type", "refusal", "refusal", text.len ? text.p : SB_ANTH_REFUSAL_TEXT);
        sb_buf_free(&text);
    }
    sb_anth_emit(
        o, sb_event_item_done(o->msg_item, json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", "message", "id", o->msg_id,
                                                     "role", "assistant", "status", "completed", "content", parts)));
    o->msg_item = -1;
}

static void sb_anth_block_delta_text(sb_anth_out_t *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (o->msg_item < 0)
        sb_anth_open_message(o);
    sb_anth_emit(o, sb_event_text_delta(o->msg_item, (int)json_array_size(o->msg_parts), s, n));
    sb_buf_add(&o->text, s, n);
}

static void sb_anth_block_delta_thinking(sb_anth_out_t *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    sb_anth_emit(o, sb_event_reasoning_delta(o->block_item, s, n));
    sb_buf_add(&o->text, s, n);
}

static void sb_anth_block_delta_args(sb_anth_out_t *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    sb_anth_emit(o, sb_event_args_delta(o->block_item, s, n));
    sb_buf_add(&o->text, s, n);
}

static void sb_anth_block_stop(sb_anth_out_t *o);

/* A content block starts: its item opens (a text block's message opens with
 * its first text). Whatever content the block already carries (all of it,
 * for a complete message) goes out as a delta. Returns 0, or -EINVAL for a
 * block that cannot be translated. */
static int sb_anth_block_start(sb_anth_out_t *o, json_int_t index, const json_t *block)
{
    if (o->block != SB_ANTH_BLOCK_NONE) /* a missing content_block_stop */
        sb_anth_block_stop(o);
    const char *type = json_string_value(json_object_get(block, "type"));
    o->block_index = index;
    o->text.len = 0;
    o->sig.len = 0;
    if (!type) {
        return -EINVAL;
    } else if (!strcmp(type, "text")) {
        o->block = SB_ANTH_BLOCK_TEXT;
        const json_t *t = json_object_get(block, "text");
        sb_anth_block_delta_text(o, json_string_value(t), json_string_length(t));
        return 0;
    } else if (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking")) {
        bool redacted = !strcmp(type, "redacted_thinking");
        if (redacted && !json_is_string(json_object_get(block, "data")))
            return -EINVAL;
        sb_anth_close_message(o, false);
        o->block = redacted ? SB_ANTH_BLOCK_REDACTED : SB_ANTH_BLOCK_THINKING;
        o->block_item = o->next_item++;
        sb_id_new(o->block_id, sizeof o->block_id, "rs_", 16);
        o->block_json = json_incref((json_t *)block);
        sb_anth_emit(o, sb_event_item_added(o->block_item, json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning",
                                                                     "id", o->block_id, "summary", "content")));
        if (!redacted) {
            const json_t *t = json_object_get(block, "thinking");
            const json_t *sig = json_object_get(block, "signature");
            sb_anth_block_delta_thinking(o, json_string_value(t), json_string_length(t));
            if (json_is_string(sig))
                sb_buf_add(&o->sig, json_string_value(sig), json_string_length(sig));
        }
        return 0;
    } else if (!strcmp(type, "tool_use")) {
        const json_t *id = json_object_get(block, "id");
        const json_t *name = json_object_get(block, "name");
        if (!json_is_string(id) || !json_is_string(name))
            return -EINVAL;
        sb_anth_close_message(o, false);
        o->block = SB_ANTH_BLOCK_TOOL;
        o->block_item = o->next_item++;
        sb_id_new(o->block_id, sizeof o->block_id, "fc_", 16);
        o->block_json = json_incref((json_t *)block);
        sb_anth_emit(
            o, sb_event_item_added(o->block_item, json_pack("{s:s, s:s, s:O, s:O, s:s, s:s}", "type", "function_call",
                                                            "id", o->block_id, "call_id", id, "name", name, "arguments",
                                                            "", "status", "in_progress")));
        return 0;
    }
    /* Server tool blocks and the like: this adapter sends no built-in tools,
     * so none should come; newer block types are skipped, not fatal. */
    o->block = SB_ANTH_BLOCK_SKIP;
    return 0;
}

/* A content_block_delta for the block in progress. */
static void sb_anth_block_delta(sb_anth_out_t *o, json_int_t index, const json_t *delta)
{
    if (o->block == SB_ANTH_BLOCK_NONE || index != o->block_index)
        return;
    const char *type = json_string_value(json_object_get(delta, "type"));
    if (!type)
        return;
    const json_t *v;
    if (o->block == SB_ANTH_BLOCK_TEXT && !strcmp(type, "text_delta")) {
        v = json_object_get(delta, "text");
        sb_anth_block_delta_text(o, json_string_value(v), json_string_length(v));
    } else if (o->block == SB_ANTH_BLOCK_THINKING && !strcmp(type, "thinking_delta")) {
        v = json_object_get(delta, "thinking");
        sb_anth_block_delta_thinking(o, json_string_value(v), json_string_length(v));
    } else if (o->block == SB_ANTH_BLOCK_THINKING && !strcmp(type, "signature_delta")) {
        v = json_object_get(delta, "signature");
        if (json_is_string(v))
            sb_buf_add(&o->sig, json_string_value(v), json_string_length(v));
    } else if (o->block == SB_ANTH_BLOCK_TOOL && !strcmp(type, "input_json_delta")) {
        v = json_object_get(delta, "partial_json");
        sb_anth_block_delta_args(o, json_string_value(v), json_string_length(v));
    }
    /* citations_delta and others: nothing canonical to carry them. */
}

/* The block in progress ends: its part joins the message, or its item is
 * done. */
static void sb_anth_block_stop(sb_anth_out_t *o)
{
    switch (o->block) {
    case SB_ANTH_BLOCK_NONE:
    case SB_ANTH_BLOCK_SKIP:
        break;
    case SB_ANTH_BLOCK_TEXT:
        if (o->text.len > 0)
            json_array_append_new(o->msg_parts, json_pack("{s:s, s:s%, s:[]}", "type", "output_text", "text", o->text.p,
                                                          o->text.len, "annotations"));
        break;
    case SB_ANTH_BLOCK_THINKING: {
        json_t *item =
            json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning", "id", o->block_id, "summary", "content");
        if (o->text.len > 0)
            json_array_append_new(json_object_get(item, "content"),
                                  json_pack("{s:s, s:s%}", "type", "reasoning_text", "text", o->text.p, o->text.len));
        if (o->sig.len > 0)
            json_object_set_new(item, "signature", json_stringn(o->sig.p, o->sig.len));
        sb_anth_emit(o, sb_event_item_done(o->block_item, item));
        break;
    }
    case SB_ANTH_BLOCK_REDACTED:
        sb_anth_emit(o, sb_event_item_done(o->block_item, json_pack("{s:s, s:s, s:[], s:[], s:O}", "type", "reasoning",
                                                                    "id", o->block_id, "summary", "content", "redacted",
                                                                    json_object_get(o->block_json, "data"))));
        break;
    case SB_ANTH_BLOCK_TOOL: {
        json_t *args;
        if (o->text.len > 0) { /* streamed: exactly the deltas sent */
            args = json_stringn(o->text.p, o->text.len);
        } else { /* a complete block: its input, compact */
            const json_t *input = json_object_get(o->block_json, "input");
            char *s = json_is_object(input) ? json_dumps(input, JSON_COMPACT) : NULL;
            args = json_string(s ? s : "{}");
            free(s);
            sb_anth_emit(o, sb_event_args_delta(o->block_item, json_string_value(args), json_string_length(args)));
        }
        if (!args) /* partial_json chunks that do not join into UTF-8 */
            args = json_string("{}");
        const json_t *b = o->block_json;
        sb_anth_emit(
            o, sb_event_item_done(o->block_item,
                                  json_pack("{s:s, s:s, s:O, s:O, s:o, s:s}", "type", "function_call", "id",
                                            o->block_id, "call_id", json_object_get(b, "id"), "name",
                                            json_object_get(b, "name"), "arguments", args, "status", "completed")));
        break;
    }
    }
    json_decref(o->block_json);
    o->block_json = NULL;
    o->block = SB_ANTH_BLOCK_NONE;
}

/* Takes the counters a usage object has (message_start's, message_delta's
 * cumulative ones, a complete message's). */
static void sb_anth_take_usage(sb_anth_out_t *o, const json_t *usage)
{
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"input_tokens", offsetof(sb_anth_out_t, in)},
        {"cache_read_input_tokens", offsetof(sb_anth_out_t, cache_read)},
        {"cache_creation_input_tokens", offsetof(sb_anth_out_t, cache_write)},
        {"output_tokens", offsetof(sb_anth_out_t, out)},
    };
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        const json_t *v = json_object_get(usage, fields[k].key);
        if (json_is_integer(v)) {
            *(int64_t *)((char *)o + fields[k].off) = json_integer_value(v);
            o->have_usage = true;
        }
    }
}

static void sb_anth_take_stop_reason(sb_anth_out_t *o, const json_t *v)
{
    if (json_is_string(v))
        snprintf(o->stop_reason, sizeof o->stop_reason, "%s", json_string_value(v));
}

/* The message is over: closes what is open and sends usage. Anthropic does
 * not report reasoning tokens apart (they are in output_tokens). */
static void sb_anth_end_items(sb_anth_out_t *o)
{
    sb_anth_block_stop(o);
    sb_anth_close_message(o, !strcmp(o->stop_reason, "refusal"));
    if (o->have_usage)
        sb_anth_emit(o, sb_event_usage(o->in + o->cache_read + o->cache_write, o->out, 0));
}

static json_t *sb_anth_completed(const sb_anth_out_t *o, const json_t *job, int64_t upstream_ms)
{
    bool cut = !strcmp(o->stop_reason, "max_tokens") || !strcmp(o->stop_reason, "model_context_window_exceeded");
    /* "model": the public model id, as every adapter reports it, not the
     * upstream's (dated) model name. */
    return sb_event_completed(cut ? "incomplete" : "completed", cut ? "max_output_tokens" : NULL,
                              json_string_value(json_object_get(job, "model")), upstream_ms);
}

/* An Anthropic error type (an SSE error event, a 200 error body) -> the HTTP
 * status the API uses for it. */
static long sb_anth_status_of_type(const char *type)
{
    static const struct {
        const char *type;
        long status;
    } types[] = {
        {"invalid_request_error", 400},
        {"authentication_error", 401},
        {"permission_error", 403},
        {"not_found_error", 404},
        {"request_too_large", 413},
        {"rate_limit_error", 429},
        {"api_error", 500},
        {"overloaded_error", 529},
        {"timeout_error", 504},
    };
    for (size_t k = 0; type && k < sizeof types / sizeof types[0]; k++)
        if (!strcmp(types[k].type, type))
            return types[k].status;
    return 502;
}

/* The error event for an Anthropic error: {"type":"error","error":{"type",
 * "message"}} (root may be NULL or anything else). 529 overloaded_error is
 * Anthropic's own status, a 503 to clients. */
static json_t *sb_anth_error_event(long status, const json_t *root, long retry_after)
{
    if (status == 529)
        status = 503;
    return sb_provider_upstream_error(status, root, sb_provider_error_message(root), false, retry_after);
}

static void sb_anth_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *out = json_array(); /* events of a good response; appended only at the end */
    json_t *final = NULL;
    sb_anth_out_t o;
    sb_anth_out_init(&o, out);
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    if (resp->status < 200 || resp->status >= 300) {
        final = sb_anth_error_event(resp->status, root, resp->retry_after);
        goto done;
    }
    if (!json_is_object(root)) {
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned malformed JSON");
        goto done;
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    if (type && !strcmp(type, "error")) { /* a proxy answering 200 with an error */
        const char *etype = json_string_value(json_object_get(json_object_get(root, "error"), "type"));
        final = sb_anth_error_event(sb_anth_status_of_type(etype), root, resp->retry_after);
        goto done;
    }
    const json_t *content = json_object_get(root, "content");
    if (!json_is_array(content)) {
        const char *m = sb_provider_error_message(root);
        final = sb_provider_error_for_status(502, m ? m : "upstream response has no content", false, -1);
        goto done;
    }
    sb_anth_take_stop_reason(&o, json_object_get(root, "stop_reason"));
    sb_anth_take_usage(&o, json_object_get(root, "usage"));
    size_t i;
    const json_t *block;
    json_array_foreach (content, i, block) {
        if (sb_anth_block_start(&o, (json_int_t)i, block) < 0) {
            final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed content block");
            goto done;
        }
        sb_anth_block_stop(&o);
    }
    sb_anth_end_items(&o);
    json_array_extend(events, out);
    json_array_append_new(events, sb_anth_completed(&o, job, resp->upstream_ms));
    goto out;
done:
    json_array_append_new(events, final);
out:
    sb_anth_out_clear(&o);
    json_decref(out);
    json_decref(root);
}

/* {"input_tokens": N} -> usage + completed; errors as for a message. */
static void sb_anth_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    const json_t *n = json_object_get(root, "input_tokens");
    const char *type = json_string_value(json_object_get(root, "type"));
    if (resp->status < 200 || resp->status >= 300) {
        json_array_append_new(events, sb_anth_error_event(resp->status, root, resp->retry_after));
    } else if (type && !strcmp(type, "error")) {
        const char *etype = json_string_value(json_object_get(json_object_get(root, "error"), "type"));
        json_array_append_new(events, sb_anth_error_event(sb_anth_status_of_type(etype), root, resp->retry_after));
    } else if (!json_is_integer(n) || json_integer_value(n) < 0) {
        json_array_append_new(
            events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream count response has no input_tokens"));
    } else {
        sb_provider_count_result(job, json_integer_value(n), resp->upstream_ms, events);
    }
    json_decref(root);
}

/*
 * Streaming: Server-Sent Events. Every Anthropic event's data carries its
 * own "type", so the event: lines are not needed.
 */

enum sb_anth_stream_state {
    SB_ANTH_STREAM_OPEN,    /* events still coming */
    SB_ANTH_STREAM_STOPPED, /* message_stop seen: items and usage sent, completed waits for finish */
    SB_ANTH_STREAM_FAILED,  /* a final error sent (an error event, a malformed one) */
};

typedef struct sb_anth_stream {
    const json_t *job; /* borrowed */
    enum sb_anth_stream_state state;
    sb_anth_out_t o;
    sb_buf_t line; /* the current line, not yet ended */
    sb_buf_t data; /* the current event's data lines */
    bool have_data;
} sb_anth_stream_t;

static void *sb_anth_stream_new(const json_t *job)
{
    sb_anth_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    sb_anth_out_init(&s->o, NULL);
    return s;
}

static void sb_anth_stream_destroy(void *state)
{
    sb_anth_stream_t *s = state;
    if (!s)
        return;
    sb_anth_out_clear(&s->o);
    sb_buf_free(&s->line);
    sb_buf_free(&s->data);
    free(s);
}

static void sb_anth_stream_fail(sb_anth_stream_t *s, json_t *final)
{
    sb_anth_emit(&s->o, final);
    s->state = SB_ANTH_STREAM_FAILED;
}

/* One SSE event's data. */
static void sb_anth_stream_event(sb_anth_stream_t *s, const char *data, size_t len)
{
    if (s->state != SB_ANTH_STREAM_OPEN)
        return; /* nothing comes after message_stop or an error */
    json_t *ev = json_loadb(data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    sb_anth_out_t *o = &s->o;
    if (!type) {
        sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream sent a malformed stream event"));
    } else if (!strcmp(type, "message_start")) {
        sb_anth_take_usage(o, json_object_get(json_object_get(ev, "message"), "usage"));
    } else if (!strcmp(type, "content_block_start")) {
        if (sb_anth_block_start(o, json_integer_value(json_object_get(ev, "index")),
                                json_object_get(ev, "content_block")) < 0)
            sb_anth_stream_fail(
                s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed content block"));
    } else if (!strcmp(type, "content_block_delta")) {
        sb_anth_block_delta(o, json_integer_value(json_object_get(ev, "index")), json_object_get(ev, "delta"));
    } else if (!strcmp(type, "content_block_stop")) {
        if (json_integer_value(json_object_get(ev, "index")) == o->block_index)
            sb_anth_block_stop(o);
    } else if (!strcmp(type, "message_delta")) {
        sb_anth_take_stop_reason(o, json_object_get(json_object_get(ev, "delta"), "stop_reason"));
        sb_anth_take_usage(o, json_object_get(ev, "usage"));
    } else if (!strcmp(type, "message_stop")) {
        sb_anth_end_items(o);
        s->state = SB_ANTH_STREAM_STOPPED;
    } else if (!strcmp(type, "error")) {
        const char *etype = json_string_value(json_object_get(json_object_get(ev, "error"), "type"));
        sb_anth_stream_fail(s, sb_anth_error_event(sb_anth_status_of_type(etype), ev, -1));
    }
    /* ping, and event types newer than this adapter: nothing to do. */
    json_decref(ev);
}

/* One complete line (without its line end). */
static int sb_anth_stream_line(sb_anth_stream_t *s, const char *line, size_t len)
{
    if (len == 0) { /* a blank line dispatches the event */
        if (s->have_data)
            sb_anth_stream_event(s, s->data.p, s->data.len);
        s->data.len = 0;
        s->have_data = false;
        return 0;
    }
    if (len >= 5 && !memcmp(line, "data:", 5)) {
        const char *v = line + 5;
        size_t n = len - 5;
        if (n > 0 && *v == ' ') {
            v++;
            n--;
        }
        if (s->data.len + n + 1 > SB_PROVIDER_MAX_BODY)
            return -E2BIG;
        if (s->have_data)
            sb_buf_add(&s->data, "\n", 1);
        sb_buf_add(&s->data, v, n);
        s->have_data = true;
    }
    /* event:, id:, retry: and ":" comments carry nothing needed here. */
    return 0;
}

static int sb_anth_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_anth_stream_t *s = state;
    s->o.events = events;
    size_t start = 0;
    for (size_t i = 0; i < len; i++) {
        if (data[i] != '\n')
            continue;
        const char *line = data + start;
        size_t n = i - start;
        if (s->line.len > 0) { /* the line began in an earlier chunk */
            sb_buf_add(&s->line, line, n);
            line = s->line.p;
            n = s->line.len;
        }
        if (n > 0 && line[n - 1] == '\r')
            n--;
        int rc = sb_anth_stream_line(s, line, n);
        s->line.len = 0;
        if (rc < 0)
            return rc;
        start = i + 1;
    }
    if (start < len) {
        if (s->line.len + (len - start) > SB_PROVIDER_MAX_BODY)
            return -E2BIG;
        sb_buf_add(&s->line, data + start, len - start);
    }
    return 0;
}

static void sb_anth_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_anth_stream_t *s = state;
    s->o.events = events;
    /* An unterminated last line or event still counts. */
    if (s->line.len > 0) {
        size_t n = s->line.len;
        if (s->line.p[n - 1] == '\r')
            n--;
        if (sb_anth_stream_line(s, s->line.p, n) < 0) {
            sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream response too large"));
            return;
        }
        s->line.len = 0;
    }
    (void)sb_anth_stream_line(s, "", 0);
    switch (s->state) {
    case SB_ANTH_STREAM_FAILED:
        break; /* its final event is out */
    case SB_ANTH_STREAM_OPEN:
        sb_anth_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream ended before message_stop"));
        break;
    case SB_ANTH_STREAM_STOPPED:
        sb_anth_emit(&s->o, sb_anth_completed(&s->o, s->job, resp->upstream_ms));
        break;
    }
}

const sb_provider_t sb_provider_anthropic = {
    .kind = SB_ANTH_KIND,
    .supports_n = false,
    .build_request = sb_anth_build_request,
    .parse_response = sb_anth_parse_response,
    .stream_new = sb_anth_stream_new,
    .stream_feed = sb_anth_stream_feed,
    .stream_finish = sb_anth_stream_finish,
    .stream_destroy = sb_anth_stream_destroy,
    .build_count_request = sb_anth_build_count_request,
    .parse_count_response = sb_anth_parse_count_response,
};
