/*
 * provider_anthropic_build: the "anthropic" adapter, Anthropic's Messages API
 * (POST {base_url}/v1/messages, base_url being the bare origin), with
 * x-api-key and anthropic-version: 2023-06-01. No anthropic-beta header:
 * everything used here (thinking, strict tools, output_config) is GA.
 * This file is the request side and the adapter's vtable; the response side
 * is provider_anthropic_parse.c, the stream provider_anthropic_stream.c
 * (provider_anthropic.h).
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
 * The job's shape (sb_job.h: items with a type, messages with a known role,
 * calls with their ids, tools an array, function tools named) is checked
 * once by the worker on receipt (sb_job_check); this file takes it as given
 * and judges only what is this upstream's to refuse.
 *
 * Token counting (a count job): POST {base_url}/v1/messages/count_tokens with
 * the same body minus max_tokens, stream, sampling and metadata (the
 * endpoint refuses them); the reply is read by provider_anthropic_parse.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider.h" /* sb_provider_t, for the vtable */
#include "provider_anthropic.h"
#include "provider_util.h"
#include "sb_base64.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_item.h"
#include "sb_job.h"

#define SB_ANTH_VERSION "2023-06-01"
/* max_tokens when neither the request nor the model record sets one (the
 * Messages API requires it). */
#define SB_ANTH_DEFAULT_MAX_TOKENS 4096
/* Anthropic's smallest thinking budget. */
#define SB_ANTH_MIN_BUDGET 1024

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
    enum sb_part_type type = sb_part_type_of(part);
    bool refusal = assistant && type == SB_PART_REFUSAL;
    if (type == SB_PART_INPUT_TEXT || type == SB_PART_OUTPUT_TEXT || refusal) {
        const json_t *text = json_object_get(part, refusal ? "refusal" : "text");
        if (!json_is_string(text)) {
            *err = sb_provider_invalid("content part %zu has no text", index);
            return -EINVAL;
        }
        if (json_string_length(text) > 0)
            *out = json_pack("{s:s, s:O}", "type", "text", "text", text);
        return 0;
    }
    switch (type) {
    case SB_PART_INPUT_IMAGE:
        return (*out = sb_anth_image(part, index, err)) ? 0 : -EINVAL;
    case SB_PART_INPUT_FILE:
        return (*out = sb_anth_document(part, index, err)) ? 0 : -EINVAL;
    case SB_PART_INPUT_AUDIO:
        *err = sb_provider_unsupported("audio input is not supported by Anthropic upstreams");
        return -EINVAL;
    default: /* a refusal outside an assistant turn, reasoning parts, unknown types */
        break;
    }
    const char *t = json_string_value(json_object_get(part, "type"));
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
        enum sb_part_type type = sb_part_type_of(part);
        const json_t *text = json_object_get(part, "text");
        if ((type != SB_PART_INPUT_TEXT && type != SB_PART_OUTPUT_TEXT) || !json_is_string(text)) {
            const char *t = json_string_value(json_object_get(part, "type"));
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
static int sb_anth_message(json_t *messages, enum sb_role role, const json_t *parts, json_t **err)
{
    bool assistant = role == SB_ROLE_ASSISTANT;
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        json_t *block;
        if (sb_anth_part(part, i, assistant, &block, err) < 0)
            return -EINVAL;
        if (block)
            sb_anth_push(messages, sb_role_name(role), block);
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
    /* input's shape (an array of typed items; messages with a known role,
     * calls with their ids) is sb_job_check's, run by the worker on receipt. */
    size_t i;
    const json_t *item;
    json_array_foreach (json_object_get(request, "input"), i, item) {
        int rc = 0;
        switch (sb_item_type_of(item)) {
        case SB_ITEM_MESSAGE: {
            enum sb_role role = sb_role_of(item);
            const json_t *content = json_object_get(item, "content");
            if (!json_is_array(content)) {
                *err = sb_provider_invalid("message content must be an array of parts");
                goto fail;
            }
            rc = role == SB_ROLE_SYSTEM || role == SB_ROLE_DEVELOPER ? sb_anth_system(&system, content, err)
                                                                     : sb_anth_message(messages, role, content, err);
            break;
        }
        case SB_ITEM_FUNCTION_CALL:
            rc = sb_anth_tool_use(messages, item, err);
            break;
        case SB_ITEM_FUNCTION_CALL_OUTPUT:
            rc = sb_anth_tool_result(messages, item, err);
            break;
        case SB_ITEM_REASONING:
            sb_anth_thinking(messages, item);
            break;
        case SB_ITEM_UNKNOWN: {
            const char *type = json_string_value(json_object_get(item, "type"));
            *err = sb_provider_invalid("input item type '%s' is not supported by provider " SB_ANTH_KIND,
                                       type ? type : "(none)");
            goto fail;
        }
        }
        if (rc < 0)
            goto fail;
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
        json_t *t = json_pack("{s:O}", "name", json_object_get(tool, "name")); /* a string (sb_job_check) */
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
    const json_t *request = sb_job_request(job); /* an object: sb_job_check */
    const char *upstream_model = sb_job_route_str(job, "upstream_model");
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
    const json_t *tools = json_object_get(request, "tools"); /* absent, null or an array: sb_job_check */
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

/* The adapter: the request side here, the response side in
 * provider_anthropic_parse.c, the stream in provider_anthropic_stream.c. */
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
