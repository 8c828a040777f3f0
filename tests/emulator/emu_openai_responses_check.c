/*
 * emu_openai_responses_check: validation of an OpenAI Responses request
 * (POST /v1/responses) the way the real API does it: unknown parameters at
 * any depth ("Unknown parameter: 'input[0].foo'."), types and ranges, input
 * items (messages and their parts, function calls and outputs, reasoning
 * items), tools, tool_choice, text.format, reasoning, include, and the
 * statelessness rules that matter to a gateway sending store:false: nothing
 * is stored, so previous_response_id and bare reasoning items are refused,
 * and reasoning items must carry encrypted content this emulator issued.
 * Errors use OpenAI's body {"error":{message,type,param,code}}. The reply is
 * built by emu_openai_responses.c once this file accepts the request.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_internal.h"
#include "emu_openai_check.h"
#include "sb_alloc.h"

#define PARAM_MAX 160
#define MSG_MAX 640
#define ENC_PREFIX "emu-enc:"

static bool not_found(struct sb_emu_call *call, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static bool not_found(struct sb_emu_call *call, const char *param, const char *fmt, ...)
{
    char msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sb_emu_openai_error(&call->reply, 404, msg, "invalid_request_error", param, NULL);
    return false;
}

/* Every key of obj must be in allowed: "Unknown parameter: '<prefix>.<key>'." */
static bool check_keys(struct sb_emu_call *call, const json_t *obj, const char *prefix, const char *const *allowed)
{
    const char *key = sb_emu_extra_key(obj, allowed);
    if (!key)
        return true;
    char param[PARAM_MAX];
    if (*prefix)
        sb_emu_pathf(param, sizeof param, "%s.%.64s", prefix, key);
    else
        sb_emu_pathf(param, sizeof param, "%.64s", key);
    return sb_emu_openai_invalid(call, param, "unknown_parameter", "Unknown parameter: '%s'.", param);
}

/* obj.name: absent or null is fine when !required; otherwise of type w. */
static bool check_field(struct sb_emu_call *call, const json_t *obj, const char *prefix, const char *name,
                        enum sb_emu_want w, bool required)
{
    return sb_emu_check_field(call, &sb_emu_openai_words, obj, prefix, name, w, required);
}

/* ---- content parts ----------------------------------------------------------------- */

/* One part of a user/system/developer message or of a function_call_output. */
static bool check_input_part(struct sb_emu_call *call, const json_t *part, const char *prefix, bool text_only)
{
    if (!sb_emu_openai_check_type(call, part, prefix, SB_EMU_W_OBJECT))
        return false;
    char param[PARAM_MAX];
    if (!check_field(call, part, prefix, "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(part, "type"));
    sb_emu_pathf(param, sizeof param, "%s.type", prefix);
    if (!strcmp(t, "input_text")) {
        static const char *const keys[] = {"type", "text", NULL};
        return check_keys(call, part, prefix, keys) && check_field(call, part, prefix, "text", SB_EMU_W_STRING, true);
    }
    if (text_only || (strcmp(t, "input_image") && strcmp(t, "input_file"))) {
        if (text_only)
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid value: '%.64s'. Supported values are: 'input_text'.", t);
        return sb_emu_openai_invalid(
            call, param, "invalid_value",
            "Invalid value: '%.64s'. Supported values are: 'input_text', 'input_image', and 'input_file'.", t);
    }
    if (!strcmp(t, "input_image")) {
        static const char *const keys[] = {"type", "image_url", "file_id", "detail", NULL};
        static const char *const details[] = {"auto", "low", "high", NULL};
        if (!check_keys(call, part, prefix, keys) ||
            !check_field(call, part, prefix, "image_url", SB_EMU_W_STRING, false) ||
            !check_field(call, part, prefix, "file_id", SB_EMU_W_STRING, false))
            return false;
        sb_emu_pathf(param, sizeof param, "%s.detail", prefix);
        if (!sb_emu_openai_check_enum(call, json_object_get(part, "detail"), param, details,
                                      "'auto', 'low', and 'high'"))
            return false;
        const char *url = json_string_value(json_object_get(part, "image_url"));
        if (!url && !json_string_value(json_object_get(part, "file_id")))
            return sb_emu_openai_invalid(call, prefix, "invalid_value",
                                         "Invalid '%s': one of 'image_url' or 'file_id' must be provided.", prefix);
        sb_emu_pathf(param, sizeof param, "%s.image_url", prefix);
        return !url || sb_emu_openai_check_image_url(call, url, param);
    }
    static const char *const keys[] = {"type", "file_id", "file_data", "filename", "file_url", NULL};
    if (!check_keys(call, part, prefix, keys) || !check_field(call, part, prefix, "file_id", SB_EMU_W_STRING, false) ||
        !check_field(call, part, prefix, "file_data", SB_EMU_W_STRING, false) ||
        !check_field(call, part, prefix, "filename", SB_EMU_W_STRING, false) ||
        !check_field(call, part, prefix, "file_url", SB_EMU_W_STRING, false))
        return false;
    const char *data = json_string_value(json_object_get(part, "file_data"));
    if (!data) {
        if (json_string_value(json_object_get(part, "file_id")) || json_string_value(json_object_get(part, "file_url")))
            return true;
        return sb_emu_openai_invalid(call, prefix, "invalid_value",
                                     "Invalid '%s': one of 'file_id', 'file_url' or 'file_data' must be provided.",
                                     prefix);
    }
    sb_emu_pathf(param, sizeof param, "%s.file_data", prefix);
    return sb_emu_openai_check_file_data(call, data, param);
}

static bool check_output_part(struct sb_emu_call *call, const json_t *part, const char *prefix)
{
    if (!sb_emu_openai_check_type(call, part, prefix, SB_EMU_W_OBJECT) ||
        !check_field(call, part, prefix, "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(part, "type"));
    if (!strcmp(t, "output_text")) {
        static const char *const keys[] = {"type", "text", "annotations", "logprobs", NULL};
        return check_keys(call, part, prefix, keys) && check_field(call, part, prefix, "text", SB_EMU_W_STRING, true) &&
               check_field(call, part, prefix, "annotations", SB_EMU_W_ARRAY, false) &&
               check_field(call, part, prefix, "logprobs", SB_EMU_W_ARRAY, false);
    }
    if (!strcmp(t, "refusal")) {
        static const char *const keys[] = {"type", "refusal", NULL};
        return check_keys(call, part, prefix, keys) &&
               check_field(call, part, prefix, "refusal", SB_EMU_W_STRING, true);
    }
    char param[PARAM_MAX];
    sb_emu_pathf(param, sizeof param, "%s.type", prefix);
    return sb_emu_openai_invalid(call, param, "invalid_value",
                                 "Invalid value: '%.64s'. Supported values are: 'output_text' and 'refusal'.", t);
}

/* ---- input items ------------------------------------------------------------------- */

static bool check_message(struct sb_emu_call *call, const json_t *item, const char *prefix)
{
    static const char *const keys[] = {"type", "role", "content", "id", "status", NULL};
    static const char *const roles[] = {"user", "assistant", "system", "developer", NULL};
    static const char *const statuses[] = {"in_progress", "completed", "incomplete", NULL};
    char param[PARAM_MAX];
    if (!check_keys(call, item, prefix, keys) || !check_field(call, item, prefix, "role", SB_EMU_W_STRING, true) ||
        !check_field(call, item, prefix, "id", SB_EMU_W_STRING, false))
        return false;
    sb_emu_pathf(param, sizeof param, "%s.role", prefix);
    if (!sb_emu_openai_check_enum(call, json_object_get(item, "role"), param, roles,
                                  "'user', 'assistant', 'system', and 'developer'"))
        return false;
    sb_emu_pathf(param, sizeof param, "%s.status", prefix);
    if (!sb_emu_openai_check_enum(call, json_object_get(item, "status"), param, statuses,
                                  "'in_progress', 'completed', and 'incomplete'"))
        return false;
    const char *role = json_string_value(json_object_get(item, "role"));
    json_t *content = json_object_get(item, "content");
    sb_emu_pathf(param, sizeof param, "%s.content", prefix);
    if (!content)
        return sb_emu_openai_missing(call, param);
    if (json_is_string(content))
        return true;
    if (!json_is_array(content))
        return sb_emu_openai_invalid(
            call, param, "invalid_type",
            "Invalid type for '%s': expected one of a string or array of input items, but got %s instead.", param,
            sb_emu_openai_type_phrase(content));
    bool assistant = !strcmp(role, "assistant");
    bool text_only = !strcmp(role, "system") || !strcmp(role, "developer");
    size_t i;
    json_t *part;
    json_array_foreach (content, i, part) {
        char pp[PARAM_MAX];
        sb_emu_pathf(pp, sizeof pp, "%s.content[%zu]", prefix, i);
        if (!(assistant ? check_output_part(call, part, pp) : check_input_part(call, part, pp, text_only)))
            return false;
    }
    return true;
}

/* "gAAA...DQ==": the first and last four characters, as OpenAI abbreviates encrypted content. */
static void abbreviate(const char *s, char *out, size_t outlen)
{
    size_t n = strlen(s);
    if (n <= 12)
        sb_emu_pathf(out, outlen, "%s", s);
    else
        sb_emu_pathf(out, outlen, "%.4s...%s", s, s + n - 4);
}

/* Encrypted reasoning must be "emu-enc:" + base64 of the reasoning text, as this emulator issues it. */
static bool check_encrypted(struct sb_emu_call *call, const char *enc)
{
    size_t plen = strlen(ENC_PREFIX);
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (!strncmp(enc, ENC_PREFIX, plen) && sb_emu_base64_decode(enc + plen, strlen(enc + plen), &bytes, &n) == 0) {
        free(bytes);
        return true;
    }
    char abbr[32];
    abbreviate(enc, abbr, sizeof abbr);
    return sb_emu_openai_invalid(call, NULL, "invalid_encrypted_content",
                                 "The encrypted content %s could not be verified.", abbr);
}

static bool check_reasoning_item(struct sb_emu_call *call, const json_t *item, const char *prefix, bool store)
{
    static const char *const keys[] = {"type", "id", "summary", "content", "encrypted_content", "status", NULL};
    if (!check_keys(call, item, prefix, keys) || !check_field(call, item, prefix, "id", SB_EMU_W_STRING, false) ||
        !check_field(call, item, prefix, "summary", SB_EMU_W_ARRAY, true) ||
        !check_field(call, item, prefix, "content", SB_EMU_W_ARRAY, false) ||
        !check_field(call, item, prefix, "encrypted_content", SB_EMU_W_STRING, false))
        return false;
    size_t i;
    json_t *s;
    json_array_foreach (json_object_get(item, "summary"), i, s) {
        char pp[PARAM_MAX];
        sb_emu_pathf(pp, sizeof pp, "%s.summary[%zu]", prefix, i);
        static const char *const skeys[] = {"type", "text", NULL};
        if (!sb_emu_openai_check_type(call, s, pp, SB_EMU_W_OBJECT) || !check_keys(call, s, pp, skeys) ||
            !check_field(call, s, pp, "type", SB_EMU_W_STRING, true) ||
            !check_field(call, s, pp, "text", SB_EMU_W_STRING, true))
            return false;
    }
    const char *enc = json_string_value(json_object_get(item, "encrypted_content"));
    if (enc)
        return check_encrypted(call, enc);
    /* Nothing is ever stored here, so a reasoning item is only usable with its encrypted content. */
    const char *id = json_string_value(json_object_get(item, "id"));
    if (!store)
        return not_found(call, "input",
                         "Item with id '%.64s' not found. Items are not persisted when `store` is set to false. Try "
                         "again with `store` set to true, or remove this item from your input.",
                         id ? id : "");
    return not_found(call, "input", "Item with id '%.64s' not found.", id ? id : "");
}

static bool check_item(struct sb_emu_call *call, const json_t *item, size_t i, bool store)
{
    char prefix[48], param[PARAM_MAX];
    sb_emu_pathf(prefix, sizeof prefix, "input[%zu]", i);
    if (!sb_emu_openai_check_type(call, item, prefix, SB_EMU_W_OBJECT))
        return false;
    json_t *type = json_object_get(item, "type");
    if (!type || json_is_null(type))
        return check_message(call, item, prefix);
    sb_emu_pathf(param, sizeof param, "%s.type", prefix);
    if (!sb_emu_openai_check_type(call, type, param, SB_EMU_W_STRING))
        return false;
    const char *t = json_string_value(type);
    if (!strcmp(t, "message"))
        return check_message(call, item, prefix);
    if (!strcmp(t, "function_call")) {
        static const char *const keys[] = {"type", "call_id", "name", "arguments", "id", "status", NULL};
        return check_keys(call, item, prefix, keys) &&
               check_field(call, item, prefix, "call_id", SB_EMU_W_STRING, true) &&
               check_field(call, item, prefix, "name", SB_EMU_W_STRING, true) &&
               check_field(call, item, prefix, "arguments", SB_EMU_W_STRING, true) &&
               check_field(call, item, prefix, "id", SB_EMU_W_STRING, false);
    }
    if (!strcmp(t, "function_call_output")) {
        static const char *const keys[] = {"type", "call_id", "output", "id", "status", NULL};
        if (!check_keys(call, item, prefix, keys) ||
            !check_field(call, item, prefix, "call_id", SB_EMU_W_STRING, true) ||
            !check_field(call, item, prefix, "id", SB_EMU_W_STRING, false))
            return false;
        json_t *out = json_object_get(item, "output");
        sb_emu_pathf(param, sizeof param, "%s.output", prefix);
        if (!out)
            return sb_emu_openai_missing(call, param);
        if (json_is_string(out))
            return true;
        if (!json_is_array(out))
            return sb_emu_openai_invalid(
                call, param, "invalid_type",
                "Invalid type for '%s': expected one of a string or array of input items, but got %s "
                "instead.",
                param, sb_emu_openai_type_phrase(out));
        size_t k;
        json_t *part;
        json_array_foreach (out, k, part) {
            char pp[PARAM_MAX];
            sb_emu_pathf(pp, sizeof pp, "%s.output[%zu]", prefix, k);
            if (!check_input_part(call, part, pp, false))
                return false;
        }
        return true;
    }
    if (!strcmp(t, "reasoning"))
        return check_reasoning_item(call, item, prefix, store);
    if (!strcmp(t, "web_search_call")) {
        static const char *const keys[] = {"type", "id", "status", "action", NULL};
        return check_keys(call, item, prefix, keys) && check_field(call, item, prefix, "id", SB_EMU_W_STRING, true) &&
               check_field(call, item, prefix, "status", SB_EMU_W_STRING, true) &&
               check_field(call, item, prefix, "action", SB_EMU_W_OBJECT, false);
    }
    if (!strcmp(t, "item_reference")) {
        static const char *const keys[] = {"type", "id", NULL};
        if (!check_keys(call, item, prefix, keys) || !check_field(call, item, prefix, "id", SB_EMU_W_STRING, true))
            return false;
        const char *id = json_string_value(json_object_get(item, "id"));
        if (!store)
            return not_found(call, "input",
                             "Item with id '%.64s' not found. Items are not persisted when `store` is set to false. "
                             "Try again with `store` set to true, or remove this item from your input.",
                             id);
        return not_found(call, "input", "Item with id '%.64s' not found.", id);
    }
    return sb_emu_openai_invalid(
        call, param, "invalid_value",
        "Invalid value: '%.64s'. Supported values are: 'message', 'function_call', 'function_call_output', "
        "'reasoning', 'web_search_call', and 'item_reference'.",
        t);
}

/* Calls and outputs pair up by call_id; a reasoning item needs an item after it. */
static bool check_item_sequence(struct sb_emu_call *call, const json_t *input)
{
    size_t n = json_array_size(input);
    for (size_t i = 0; i < n; i++) {
        json_t *item = json_array_get(input, i);
        const char *t = json_string_value(json_object_get(item, "type"));
        if (!t)
            continue;
        const char *cid = json_string_value(json_object_get(item, "call_id"));
        if (!strcmp(t, "function_call_output")) {
            bool found = false;
            for (size_t j = 0; j < i && !found; j++) {
                json_t *o = json_array_get(input, j);
                const char *ot = json_string_value(json_object_get(o, "type"));
                const char *ocid = json_string_value(json_object_get(o, "call_id"));
                found = ot && !strcmp(ot, "function_call") && ocid && !strcmp(ocid, cid);
            }
            if (!found)
                return sb_emu_openai_invalid(call, "input", NULL,
                                             "No tool call found for function call output with call_id %.64s.", cid);
        } else if (!strcmp(t, "function_call")) {
            bool found = false;
            for (size_t j = i + 1; j < n && !found; j++) {
                json_t *o = json_array_get(input, j);
                const char *ot = json_string_value(json_object_get(o, "type"));
                const char *ocid = json_string_value(json_object_get(o, "call_id"));
                found = ot && !strcmp(ot, "function_call_output") && ocid && !strcmp(ocid, cid);
            }
            if (!found)
                return sb_emu_openai_invalid(call, "input", NULL, "No tool output found for function call %.64s.", cid);
        } else if (!strcmp(t, "reasoning") && i + 1 == n) {
            const char *id = json_string_value(json_object_get(item, "id"));
            return sb_emu_openai_invalid(
                call, "input", NULL,
                "Item '%.64s' of type 'reasoning' was provided without its required following item.", id ? id : "");
        }
    }
    return true;
}

/* ---- tools and formats ------------------------------------------------------------------ */

static bool is_web_search(const char *t)
{
    return !strcmp(t, "web_search") || !strcmp(t, "web_search_preview") || !strcmp(t, "web_search_2025_08_26") ||
           !strcmp(t, "web_search_preview_2025_03_11");
}

static bool check_tools(struct sb_emu_call *call)
{
    json_t *tools = json_object_get(call->json, "tools");
    if (!tools || json_is_null(tools))
        return true;
    if (!sb_emu_openai_check_type(call, tools, "tools", SB_EMU_W_ARRAY))
        return false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char prefix[48], param[PARAM_MAX];
        sb_emu_pathf(prefix, sizeof prefix, "tools[%zu]", i);
        if (!sb_emu_openai_check_type(call, t, prefix, SB_EMU_W_OBJECT) ||
            !check_field(call, t, prefix, "type", SB_EMU_W_STRING, true))
            return false;
        const char *type = json_string_value(json_object_get(t, "type"));
        if (is_web_search(type)) {
            static const char *const keys[] = {"type", "search_context_size", "user_location", "filters", NULL};
            static const char *const sizes[] = {"low", "medium", "high", NULL};
            sb_emu_pathf(param, sizeof param, "%s.search_context_size", prefix);
            if (!check_keys(call, t, prefix, keys) ||
                !sb_emu_openai_check_enum(call, json_object_get(t, "search_context_size"), param, sizes,
                                          "'low', 'medium', and 'high'") ||
                !check_field(call, t, prefix, "user_location", SB_EMU_W_OBJECT, false) ||
                !check_field(call, t, prefix, "filters", SB_EMU_W_OBJECT, false))
                return false;
            continue;
        }
        sb_emu_pathf(param, sizeof param, "%s.type", prefix);
        if (strcmp(type, "function"))
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid value: '%.64s'. Supported values are: 'function', 'web_search', and "
                                         "'web_search_preview'.",
                                         type);
        /* A Chat Completions tool ({"type":"function","function":{...}}) fails here, as upstream. */
        static const char *const keys[] = {"type", "name", "description", "parameters", "strict", NULL};
        if (!check_field(call, t, prefix, "name", SB_EMU_W_STRING, true) || !check_keys(call, t, prefix, keys) ||
            !check_field(call, t, prefix, "description", SB_EMU_W_STRING, false) ||
            !check_field(call, t, prefix, "parameters", SB_EMU_W_OBJECT, false) ||
            !check_field(call, t, prefix, "strict", SB_EMU_W_BOOL, false))
            return false;
        const char *name = json_string_value(json_object_get(t, "name"));
        sb_emu_pathf(param, sizeof param, "%s.name", prefix);
        if (!sb_emu_openai_valid_name(name))
            return sb_emu_openai_invalid(
                call, param, "invalid_value",
                "Invalid '%s': string does not match pattern. Expected a string that matches the pattern "
                "'^[a-zA-Z0-9_-]{1,64}$'.",
                param);
        json_t *params = json_object_get(t, "parameters");
        char err[MSG_MAX / 2];
        sb_emu_pathf(param, sizeof param, "%s.parameters", prefix);
        if (json_is_true(json_object_get(t, "strict")) && json_is_object(params) &&
            sb_emu_schema_strict_check(params, err, sizeof err) < 0)
            return sb_emu_openai_invalid(call, param, "invalid_function_parameters",
                                         "Invalid schema for function '%s': %s", name, err);
    }
    return true;
}

static bool has_function(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *n = json_string_value(json_object_get(t, "name"));
        if (type && !strcmp(type, "function") && n && !strcmp(n, name))
            return true;
    }
    return false;
}

static bool check_tool_choice(struct sb_emu_call *call)
{
    json_t *choice = json_object_get(call->json, "tool_choice");
    json_t *tools = json_object_get(call->json, "tools");
    if (!choice || json_is_null(choice))
        return true;
    if (json_is_string(choice)) {
        static const char *const modes[] = {"none", "auto", "required", NULL};
        return sb_emu_openai_check_enum(call, choice, "tool_choice", modes, "'none', 'auto', and 'required'");
    }
    if (!sb_emu_openai_check_type(call, choice, "tool_choice", SB_EMU_W_OBJECT) ||
        !check_field(call, choice, "tool_choice", "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(choice, "type"));
    if (!strcmp(t, "function")) {
        static const char *const keys[] = {"type", "name", NULL};
        if (!check_keys(call, choice, "tool_choice", keys) ||
            !check_field(call, choice, "tool_choice", "name", SB_EMU_W_STRING, true))
            return false;
        if (!has_function(tools, json_string_value(json_object_get(choice, "name"))))
            return sb_emu_openai_invalid(call, "tool_choice", NULL,
                                         "Tool choice 'function' not found in 'tools' parameter.");
        return true;
    }
    if (!strcmp(t, "allowed_tools"))
        return true;
    if (is_web_search(t)) {
        size_t i;
        json_t *tool;
        json_array_foreach (tools, i, tool) {
            const char *tt = json_string_value(json_object_get(tool, "type"));
            if (tt && is_web_search(tt))
                return true;
        }
        return sb_emu_openai_invalid(call, "tool_choice", NULL, "Tool choice '%.64s' not found in 'tools' parameter.",
                                     t);
    }
    return sb_emu_openai_invalid(
        call, "tool_choice.type", "invalid_value",
        "Invalid value: '%.64s'. Supported values are: 'function', 'allowed_tools', 'web_search', and "
        "'web_search_preview'.",
        t);
}

static bool check_text(struct sb_emu_call *call)
{
    json_t *text = json_object_get(call->json, "text");
    if (!text || json_is_null(text))
        return true;
    static const char *const keys[] = {"format", "verbosity", NULL};
    static const char *const verbosities[] = {"low", "medium", "high", NULL};
    if (!sb_emu_openai_check_type(call, text, "text", SB_EMU_W_OBJECT) || !check_keys(call, text, "text", keys) ||
        !sb_emu_openai_check_enum(call, json_object_get(text, "verbosity"), "text.verbosity", verbosities,
                                  "'low', 'medium', and 'high'"))
        return false;
    json_t *f = json_object_get(text, "format");
    if (!f || json_is_null(f))
        return true;
    if (!sb_emu_openai_check_type(call, f, "text.format", SB_EMU_W_OBJECT) ||
        !check_field(call, f, "text.format", "type", SB_EMU_W_STRING, true))
        return false;
    const char *t = json_string_value(json_object_get(f, "type"));
    if (!strcmp(t, "text") || !strcmp(t, "json_object")) {
        static const char *const fkeys[] = {"type", NULL};
        return check_keys(call, f, "text.format", fkeys);
    }
    if (strcmp(t, "json_schema"))
        return sb_emu_openai_invalid(
            call, "text.format.type", "invalid_value",
            "Invalid value: '%.64s'. Supported values are: 'text', 'json_object', and 'json_schema'.", t);
    /* The Chat shape {"type":"json_schema","json_schema":{...}} fails here, as upstream. */
    static const char *const skeys[] = {"type", "name", "schema", "strict", "description", NULL};
    if (!check_field(call, f, "text.format", "name", SB_EMU_W_STRING, true) ||
        !check_keys(call, f, "text.format", skeys) ||
        !check_field(call, f, "text.format", "schema", SB_EMU_W_OBJECT, true) ||
        !check_field(call, f, "text.format", "strict", SB_EMU_W_BOOL, false) ||
        !check_field(call, f, "text.format", "description", SB_EMU_W_STRING, false))
        return false;
    const char *name = json_string_value(json_object_get(f, "name"));
    if (!sb_emu_openai_valid_name(name))
        return sb_emu_openai_invalid(
            call, "text.format.name", "invalid_value",
            "Invalid 'text.format.name': string does not match pattern. Expected a string that matches the "
            "pattern '^[a-zA-Z0-9_-]{1,64}$'.");
    char err[MSG_MAX / 2];
    if (json_is_true(json_object_get(f, "strict")) &&
        sb_emu_schema_strict_check(json_object_get(f, "schema"), err, sizeof err) < 0)
        return sb_emu_openai_invalid(call, "text.format.schema", "invalid_json_schema",
                                     "Invalid schema for response_format '%s': %s", name, err);
    return true;
}

static bool check_reasoning(struct sb_emu_call *call)
{
    json_t *r = json_object_get(call->json, "reasoning");
    if (!r || json_is_null(r))
        return true;
    static const char *const keys[] = {"effort", "summary", "generate_summary", NULL};
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max", NULL};
    static const char *const summaries[] = {"auto", "concise", "detailed", NULL};
    return sb_emu_openai_check_type(call, r, "reasoning", SB_EMU_W_OBJECT) && check_keys(call, r, "reasoning", keys) &&
           sb_emu_openai_check_enum(call, json_object_get(r, "effort"), "reasoning.effort", efforts,
                                    "'none', 'minimal', 'low', 'medium', 'high', 'xhigh', and 'max'") &&
           sb_emu_openai_check_enum(call, json_object_get(r, "summary"), "reasoning.summary", summaries,
                                    "'auto', 'concise', and 'detailed'") &&
           sb_emu_openai_check_enum(call, json_object_get(r, "generate_summary"), "reasoning.generate_summary",
                                    summaries, "'auto', 'concise', and 'detailed'");
}

static bool check_include(struct sb_emu_call *call)
{
    json_t *inc = json_object_get(call->json, "include");
    if (!inc || json_is_null(inc))
        return true;
    static const char *const values[] = {
        "reasoning.encrypted_content",   "message.output_text.logprobs",          "web_search_call.action.sources",
        "web_search_call.results",       "message.input_image.image_url",         "file_search_call.results",
        "code_interpreter_call.outputs", "computer_call_output.output.image_url", NULL};
    if (!sb_emu_openai_check_type(call, inc, "include", SB_EMU_W_ARRAY))
        return false;
    size_t i;
    json_t *v;
    json_array_foreach (inc, i, v) {
        char param[PARAM_MAX];
        sb_emu_pathf(param, sizeof param, "include[%zu]", i);
        if (!sb_emu_openai_check_enum(call, v, param, values,
                                      "'reasoning.encrypted_content', 'message.output_text.logprobs', "
                                      "'web_search_call.action.sources', 'web_search_call.results', "
                                      "'message.input_image.image_url', 'file_search_call.results', "
                                      "'code_interpreter_call.outputs', and 'computer_call_output.output.image_url'"))
            return false;
    }
    return true;
}

static bool metadata_key_too_long(struct sb_emu_call *call, const char *k)
{
    return sb_emu_openai_invalid(call, "metadata", "invalid_value",
                                 "Invalid 'metadata': key '%.64s...' is too long. Expected a key with maximum length "
                                 "64.",
                                 k);
}

static bool check_metadata(struct sb_emu_call *call)
{
    json_t *md = json_object_get(call->json, "metadata");
    if (!md || json_is_null(md))
        return true;
    if (!sb_emu_openai_check_type(call, md, "metadata", SB_EMU_W_OBJECT))
        return false;
    return sb_emu_openai_check_metadata(call, md, metadata_key_too_long);
}

/* Does any input text mention "json" (any case)? json_object needs it, as in Chat Completions. */
static bool input_mentions_json(const json_t *body)
{
    const char *instr = json_string_value(json_object_get(body, "instructions"));
    if (instr && strcasestr(instr, "json"))
        return true;
    json_t *input = json_object_get(body, "input");
    if (json_is_string(input))
        return strcasestr(json_string_value(input), "json") != NULL;
    return sb_emu_openai_mention_json(input);
}

bool sb_emu_openai_responses_check(struct sb_emu_call *call, bool count)
{
    static const char *const params[] = {"model",
                                         "input",
                                         "instructions",
                                         "tools",
                                         "tool_choice",
                                         "text",
                                         "reasoning",
                                         "include",
                                         "store",
                                         "previous_response_id",
                                         "max_output_tokens",
                                         "max_tool_calls",
                                         "temperature",
                                         "top_p",
                                         "top_logprobs",
                                         "parallel_tool_calls",
                                         "metadata",
                                         "user",
                                         "truncation",
                                         "stream",
                                         "stream_options",
                                         "service_tier",
                                         "background",
                                         "prompt_cache_key",
                                         "prompt_cache_retention",
                                         "safety_identifier",
                                         "conversation",
                                         "prompt",
                                         NULL};
    /* POST /v1/responses/input_tokens: the input and what adds to it; model
     * and input are optional there. */
    static const char *const count_params[] = {
        "model",       "input",        "instructions",        "tools",
        "tool_choice", "text",         "reasoning",           "previous_response_id",
        "truncation",  "conversation", "parallel_tool_calls", NULL};
    if (!sb_emu_openai_check_body(call) || !check_keys(call, call->json, "", count ? count_params : params))
        return false;
    json_t *body = call->json;
    if (!check_field(call, body, "", "model", SB_EMU_W_STRING, !count))
        return false;
    if (json_object_get(body, "model") && json_string_length(json_object_get(body, "model")) == 0)
        return sb_emu_openai_invalid(call, "model", "invalid_value",
                                     "Invalid 'model': empty string. Expected a non-empty model id.");
    static const char *const truncations[] = {"auto", "disabled", NULL};
    static const char *const tiers[] = {"auto", "default", "flex", "scale", "priority", NULL};
    static const char *const retentions[] = {"in-memory", "24h", NULL};
    if (!check_field(call, body, "", "store", SB_EMU_W_BOOL, false) ||
        !check_field(call, body, "", "stream", SB_EMU_W_BOOL, false) ||
        !check_field(call, body, "", "background", SB_EMU_W_BOOL, false) ||
        !check_field(call, body, "", "instructions", SB_EMU_W_STRING, false) ||
        !check_field(call, body, "", "previous_response_id", SB_EMU_W_STRING, false) ||
        !check_field(call, body, "", "parallel_tool_calls", SB_EMU_W_BOOL, false) ||
        !check_field(call, body, "", "user", SB_EMU_W_STRING, false) ||
        !check_field(call, body, "", "prompt_cache_key", SB_EMU_W_STRING, false) ||
        !check_field(call, body, "", "safety_identifier", SB_EMU_W_STRING, false) ||
        !sb_emu_openai_check_range(call, "temperature", SB_EMU_W_NUMBER, 0, 2) ||
        !sb_emu_openai_check_range(call, "top_p", SB_EMU_W_NUMBER, 0, 1) ||
        !sb_emu_openai_check_range(call, "top_logprobs", SB_EMU_W_INT, 0, 20) ||
        !sb_emu_openai_check_range(call, "max_output_tokens", SB_EMU_W_INT, 16, 1e9) ||
        !sb_emu_openai_check_range(call, "max_tool_calls", SB_EMU_W_INT, 1, 1e9) ||
        !sb_emu_openai_check_enum(call, json_object_get(body, "truncation"), "truncation", truncations,
                                  "'auto' and 'disabled'") ||
        !sb_emu_openai_check_enum(call, json_object_get(body, "service_tier"), "service_tier", tiers,
                                  "'auto', 'default', 'flex', 'scale', and 'priority'") ||
        !sb_emu_openai_check_enum(call, json_object_get(body, "prompt_cache_retention"), "prompt_cache_retention",
                                  retentions, "'in-memory' and '24h'") ||
        !check_metadata(call) || !check_text(call) || !check_reasoning(call) || !check_include(call) ||
        !check_tools(call) || !check_tool_choice(call))
        return false;

    json_t *sopts = json_object_get(body, "stream_options");
    if (sopts && !json_is_null(sopts)) {
        static const char *const keys[] = {"include_obfuscation", NULL};
        if (!json_is_true(json_object_get(body, "stream")))
            return sb_emu_openai_invalid(call, "stream_options", NULL,
                                         "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
        if (!sb_emu_openai_check_type(call, sopts, "stream_options", SB_EMU_W_OBJECT) ||
            !check_keys(call, sopts, "stream_options", keys) ||
            !check_field(call, sopts, "stream_options", "include_obfuscation", SB_EMU_W_BOOL, false))
            return false;
    }

    bool store = !json_is_false(json_object_get(body, "store"));
    json_t *input = json_object_get(body, "input");
    if ((!input || json_is_null(input)) && !count)
        return sb_emu_openai_missing(call, "input");
    if (input && !json_is_null(input) && !json_is_string(input)) {
        if (!json_is_array(input))
            return sb_emu_openai_invalid(
                call, "input", "invalid_type",
                "Invalid type for 'input': expected one of a string or array of input items, but got %s "
                "instead.",
                sb_emu_openai_type_phrase(input));
        size_t i;
        json_t *item;
        json_array_foreach (input, i, item) {
            if (!check_item(call, item, i, store))
                return false;
        }
        if (!check_item_sequence(call, input))
            return false;
    }

    const char *fmt =
        json_string_value(json_object_get(json_object_get(json_object_get(body, "text"), "format"), "type"));
    if (fmt && !strcmp(fmt, "json_object") && !input_mentions_json(body))
        return sb_emu_openai_invalid(
            call, "text.format", NULL,
            "Response input messages must contain the word 'json' in some form to use 'text.format' of "
            "type 'json_object'.");
    /* Nothing is stored: every reference to earlier state fails as it would after store:false. */
    const char *prev = json_string_value(json_object_get(body, "previous_response_id"));
    if (prev)
        return sb_emu_openai_invalid(call, "previous_response_id", "previous_response_not_found",
                                     "Previous response with id '%.64s' not found.", prev);
    json_t *conv = json_object_get(body, "conversation");
    if (conv && !json_is_null(conv)) {
        const char *cid =
            json_is_string(conv) ? json_string_value(conv) : json_string_value(json_object_get(conv, "id"));
        return not_found(call, "conversation", "Conversation with id '%.64s' not found.", cid ? cid : "");
    }
    json_t *prompt = json_object_get(body, "prompt");
    if (prompt && !json_is_null(prompt))
        return not_found(call, "prompt.id", "Prompt with id '%.64s' not found.",
                         json_is_object(prompt) && json_string_value(json_object_get(prompt, "id"))
                             ? json_string_value(json_object_get(prompt, "id"))
                             : "");
    if (json_is_true(json_object_get(body, "background")))
        return sb_emu_openai_invalid(call, "background", NULL,
                                     store ? "Background mode is not supported by the emulator."
                                           : "Background mode requires 'store' to be true.");
    return true;
}
