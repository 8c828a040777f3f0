/*
 * emu_openai_chat_check: validation of an OpenAI Chat Completions request, the
 * way the real API does it: Content-Type and body, unknown parameters, every
 * parameter's type and range, roles and the properties each role may carry,
 * content part shapes (image URLs, audio and file data are decoded), tool
 * definitions (strict mode included), tool message ordering, response_format.
 * Errors are OpenAI's body {"error":{message,type,param,code}} with messages
 * modelled on the real ones, so a gateway that builds a malformed upstream
 * request fails its test here rather than in production. The reply itself is
 * built by emu_openai_chat.c once this file has accepted the request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_internal.h"
#include "emu_openai_check.h"
#include "sb_alloc.h"

#define PARAM_MAX 128
#define MSG_MAX 640

/* ---- parameter helpers ----------------------------------------------------------- */

/* Optional parameter: absent or null is fine; otherwise of type w. */
static bool check_opt_type(struct sb_emu_call *call, const char *name, enum sb_emu_want w)
{
    json_t *v = json_object_get(call->json, name);
    if (!v || json_is_null(v))
        return true;
    return sb_emu_openai_check_type(call, v, name, w);
}

/* ---- request validation ---------------------------------------------------------- */

static const char *const known_params[] = {"model",
                                           "messages",
                                           "audio",
                                           "frequency_penalty",
                                           "function_call",
                                           "functions",
                                           "logit_bias",
                                           "logprobs",
                                           "max_completion_tokens",
                                           "max_tokens",
                                           "metadata",
                                           "modalities",
                                           "n",
                                           "parallel_tool_calls",
                                           "prediction",
                                           "presence_penalty",
                                           "prompt_cache_key",
                                           "reasoning_effort",
                                           "response_format",
                                           "safety_identifier",
                                           "seed",
                                           "service_tier",
                                           "stop",
                                           "store",
                                           "stream",
                                           "stream_options",
                                           "temperature",
                                           "tool_choice",
                                           "tools",
                                           "top_logprobs",
                                           "top_p",
                                           "user",
                                           "verbosity",
                                           "web_search_options",
                                           NULL};

/* A file part: {"file":{"file_data":"data:<mime>;base64,...","filename"}} or {"file":{"file_id"}}. */
static bool check_file_part(struct sb_emu_call *call, const json_t *file, size_t mi, size_t pi)
{
    char param[PARAM_MAX];
    static const char *const fields[] = {"file_data", "file_id", "filename"};
    for (size_t f = 0; f < 3; f++) {
        json_t *v = json_object_get(file, fields[f]);
        snprintf(param, sizeof param, "messages[%zu].content[%zu].file.%s", mi, pi, fields[f]);
        if (v && !sb_emu_openai_check_type(call, v, param, SB_EMU_W_STRING))
            return false;
    }
    const char *data = json_string_value(json_object_get(file, "file_data"));
    if (!data) {
        if (json_object_get(file, "file_id"))
            return true;
        snprintf(param, sizeof param, "messages[%zu].content[%zu].file", mi, pi);
        return sb_emu_openai_invalid(call, param, "invalid_value",
                                     "Invalid '%s': either 'file_id' or 'file_data' must be provided.", param);
    }
    snprintf(param, sizeof param, "messages[%zu].content[%zu].file.file_data", mi, pi);
    return sb_emu_openai_check_file_data(call, data, param);
}

/* Validates one content part of a message with the given role. */
static bool check_part(struct sb_emu_call *call, const char *role, const json_t *part, size_t mi, size_t pi)
{
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu].content[%zu]", mi, pi);
    if (!sb_emu_openai_check_type(call, part, param, SB_EMU_W_OBJECT))
        return false;
    json_t *type = json_object_get(part, "type");
    snprintf(param, sizeof param, "messages[%zu].content[%zu].type", mi, pi);
    if (!type)
        return sb_emu_openai_missing(call, param);
    if (!sb_emu_openai_check_type(call, type, param, SB_EMU_W_STRING))
        return false;
    const char *t = json_string_value(type);

    bool is_user = !strcmp(role, "user"), is_assistant = !strcmp(role, "assistant");
    const char *field = NULL;
    enum sb_emu_want w = SB_EMU_W_STRING;
    if (!strcmp(t, "text")) {
        field = "text";
    } else if (!strcmp(t, "image_url") && is_user) {
        field = "image_url";
        w = SB_EMU_W_OBJECT;
    } else if (!strcmp(t, "input_audio") && is_user) {
        field = "input_audio";
        w = SB_EMU_W_OBJECT;
    } else if (!strcmp(t, "file") && is_user) {
        field = "file";
        w = SB_EMU_W_OBJECT;
    } else if (!strcmp(t, "refusal") && is_assistant) {
        field = "refusal";
    } else if (is_user) {
        return sb_emu_openai_invalid(
            call, param, "invalid_value",
            "Invalid value: '%.64s'. Supported values are: 'text', 'image_url', 'input_audio', and "
            "'file'.",
            t);
    } else if (is_assistant) {
        return sb_emu_openai_invalid(call, param, "invalid_value",
                                     "Invalid value: '%.64s'. Supported values are: 'text' and 'refusal'.", t);
    } else {
        return sb_emu_openai_invalid(call, param, "invalid_value",
                                     "Invalid value: '%.64s'. Supported values are: 'text'.", t);
    }
    json_t *v = json_object_get(part, field);
    snprintf(param, sizeof param, "messages[%zu].content[%zu].%s", mi, pi, field);
    if (!v)
        return sb_emu_openai_missing(call, param);
    if (!sb_emu_openai_check_type(call, v, param, w))
        return false;

    if (!strcmp(t, "image_url")) {
        json_t *url = json_object_get(v, "url");
        snprintf(param, sizeof param, "messages[%zu].content[%zu].image_url.url", mi, pi);
        if (!url)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, url, param, SB_EMU_W_STRING))
            return false;
        if (!sb_emu_openai_check_image_url(call, json_string_value(url), param))
            return false;
        json_t *detail = json_object_get(v, "detail");
        snprintf(param, sizeof param, "messages[%zu].content[%zu].image_url.detail", mi, pi);
        if (detail && !json_is_null(detail)) {
            if (!sb_emu_openai_check_type(call, detail, param, SB_EMU_W_STRING))
                return false;
            const char *dv = json_string_value(detail);
            if (strcmp(dv, "auto") && strcmp(dv, "low") && strcmp(dv, "high"))
                return sb_emu_openai_invalid(call, param, "invalid_value",
                                             "Invalid value: '%.32s'. Supported values are: 'auto', 'low', and 'high'.",
                                             dv);
        }
    } else if (!strcmp(t, "file")) {
        return check_file_part(call, v, mi, pi);
    } else if (!strcmp(t, "input_audio")) {
        json_t *data = json_object_get(v, "data"), *format = json_object_get(v, "format");
        snprintf(param, sizeof param, "messages[%zu].content[%zu].input_audio.data", mi, pi);
        if (!data)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, data, param, SB_EMU_W_STRING))
            return false;
        snprintf(param, sizeof param, "messages[%zu].content[%zu].input_audio.format", mi, pi);
        if (!format)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, format, param, SB_EMU_W_STRING))
            return false;
        const char *f = json_string_value(format);
        if (strcmp(f, "wav") && strcmp(f, "mp3"))
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid value: '%.32s'. Supported values are: 'wav' and 'mp3'.", f);
        snprintf(param, sizeof param, "messages[%zu].content[%zu].input_audio.data", mi, pi);
        const char *why = sb_emu_base64_problem(json_string_value(data), json_string_length(data));
        if (why)
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid '%s'. Expected base64-encoded audio data, but got %s.", param, why);
    }
    return true;
}

static bool check_content(struct sb_emu_call *call, const char *role, const json_t *content, size_t mi)
{
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu].content", mi);
    if (json_is_string(content))
        return true;
    if (!json_is_array(content))
        return sb_emu_openai_invalid(
            call, param, "invalid_type",
            "Invalid type for '%s': expected one of a string or array of objects, but got %s instead.", param,
            sb_emu_openai_type_phrase(content));
    if (json_array_size(content) == 0)
        return sb_emu_openai_invalid(
            call, param, "empty_array",
            "Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty "
            "array instead.",
            param);
    size_t pi;
    json_t *part;
    json_array_foreach (content, pi, part) {
        if (!check_part(call, role, part, mi, pi))
            return false;
    }
    return true;
}

static bool check_tool_calls(struct sb_emu_call *call, const json_t *tcs, size_t mi)
{
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu].tool_calls", mi);
    if (!sb_emu_openai_check_type(call, tcs, param, SB_EMU_W_ARRAY))
        return false;
    size_t ti;
    json_t *tc;
    json_array_foreach (tcs, ti, tc) {
        snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu]", mi, ti);
        if (!sb_emu_openai_check_type(call, tc, param, SB_EMU_W_OBJECT))
            return false;
        static const char *const fields[] = {"id", "type", "function"};
        for (size_t f = 0; f < 3; f++) {
            json_t *v = json_object_get(tc, fields[f]);
            snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu].%s", mi, ti, fields[f]);
            if (!v)
                return sb_emu_openai_missing(call, param);
            if (!sb_emu_openai_check_type(call, v, param, f == 2 ? SB_EMU_W_OBJECT : SB_EMU_W_STRING))
                return false;
        }
        const char *type = json_string_value(json_object_get(tc, "type"));
        if (strcmp(type, "function"))
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid value: '%.64s'. Supported values are: 'function'.", type);
        json_t *fn = json_object_get(tc, "function");
        static const char *const ffields[] = {"name", "arguments"};
        for (size_t f = 0; f < 2; f++) {
            json_t *v = json_object_get(fn, ffields[f]);
            snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu].function.%s", mi, ti, ffields[f]);
            if (!v)
                return sb_emu_openai_missing(call, param);
            if (!sb_emu_openai_check_type(call, v, param, SB_EMU_W_STRING))
                return false;
        }
    }
    return true;
}

/* Properties each role may carry; anything else is rejected like the real API does. */
static bool check_message_keys(struct sb_emu_call *call, const char *role, const json_t *m, size_t mi)
{
    static const char *const sys_keys[] = {"role", "content", "name", NULL};
    static const char *const assistant_keys[] = {"role",       "content",       "name",  "refusal",
                                                 "tool_calls", "function_call", "audio", NULL};
    /* "name" on tool messages is legacy but still accepted upstream. */
    static const char *const tool_keys[] = {"role", "content", "tool_call_id", "name", NULL};
    const char *const *allowed = sys_keys;
    if (!strcmp(role, "assistant"))
        allowed = assistant_keys;
    else if (!strcmp(role, "tool"))
        allowed = tool_keys;
    const char *key = sb_emu_extra_key(m, allowed);
    if (key)
        return sb_emu_openai_invalid(call, NULL, NULL,
                                     "Additional properties are not allowed ('%.64s' was unexpected) - "
                                     "'messages.%zu'",
                                     key, mi);
    return true;
}

static bool check_message(struct sb_emu_call *call, const json_t *m, size_t mi)
{
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", "function", NULL};
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu]", mi);
    if (!sb_emu_openai_check_type(call, m, param, SB_EMU_W_OBJECT))
        return false;
    json_t *role = json_object_get(m, "role");
    snprintf(param, sizeof param, "messages[%zu].role", mi);
    if (!role)
        return sb_emu_openai_missing(call, param);
    if (!sb_emu_openai_check_type(call, role, param, SB_EMU_W_STRING))
        return false;
    const char *r = json_string_value(role);
    if (!sb_emu_in_list(r, roles))
        return sb_emu_openai_invalid(
            call, param, "invalid_value",
            "Invalid value: '%.64s'. Supported values are: 'system', 'assistant', 'user', 'function', "
            "'tool', and 'developer'.",
            r);
    if (!check_message_keys(call, r, m, mi))
        return false;

    json_t *name = json_object_get(m, "name");
    snprintf(param, sizeof param, "messages[%zu].name", mi);
    if (name && !sb_emu_openai_check_type(call, name, param, SB_EMU_W_STRING))
        return false;

    json_t *content = json_object_get(m, "content");
    snprintf(param, sizeof param, "messages[%zu].content", mi);
    if (!strcmp(r, "assistant")) {
        json_t *tcs = json_object_get(m, "tool_calls");
        json_t *fc = json_object_get(m, "function_call");
        if (tcs && !json_is_null(tcs) && !check_tool_calls(call, tcs, mi))
            return false;
        if ((!content || json_is_null(content))) {
            if ((tcs && !json_is_null(tcs)) || (fc && !json_is_null(fc)))
                return true;
            return sb_emu_openai_missing(call, param);
        }
        return check_content(call, r, content, mi);
    }
    if (!strcmp(r, "function")) {
        if (!name) {
            snprintf(param, sizeof param, "messages[%zu].name", mi);
            return sb_emu_openai_missing(call, param);
        }
        if (!content || json_is_null(content))
            return true;
        return sb_emu_openai_check_type(call, content, param, SB_EMU_W_STRING);
    }
    if (!content)
        return sb_emu_openai_missing(call, param);
    if (json_is_null(content)) {
        /* OpenAI's own wording and param spelling for a null content. */
        snprintf(param, sizeof param, "messages.[%zu].content", mi);
        return sb_emu_openai_invalid(call, param, NULL, "Invalid value for 'content': expected a string, got null.");
    }
    if (!check_content(call, r, content, mi))
        return false;
    if (!strcmp(r, "tool")) {
        json_t *id = json_object_get(m, "tool_call_id");
        snprintf(param, sizeof param, "messages[%zu].tool_call_id", mi);
        if (!id)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, id, param, SB_EMU_W_STRING))
            return false;
    }
    return true;
}

/* Does this assistant message's tool_calls contain id? */
static bool tool_calls_have_id(const json_t *assistant, const char *id)
{
    size_t i;
    json_t *tc;
    json_array_foreach (json_object_get(assistant, "tool_calls"), i, tc) {
        const char *tid = json_string_value(json_object_get(tc, "id"));
        if (tid && !strcmp(tid, id))
            return true;
    }
    return false;
}

/* Tool messages must answer the tool_calls of the assistant message before them, and every tool call must be answered.
 */
static bool check_tool_sequence(struct sb_emu_call *call, const json_t *messages)
{
    size_t n = json_array_size(messages);
    char param[PARAM_MAX];
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(messages, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!strcmp(role, "tool")) {
            size_t j = i;
            while (j > 0 &&
                   !strcmp(json_string_value(json_object_get(json_array_get(messages, j - 1), "role")), "tool"))
                j--;
            json_t *prev = j > 0 ? json_array_get(messages, j - 1) : NULL;
            json_t *tcs = prev ? json_object_get(prev, "tool_calls") : NULL;
            snprintf(param, sizeof param, "messages.[%zu].role", i);
            if (!prev || strcmp(json_string_value(json_object_get(prev, "role")), "assistant") || !json_is_array(tcs) ||
                json_array_size(tcs) == 0)
                return sb_emu_openai_invalid(
                    call, param, NULL,
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                    "message with 'tool_calls'.");
            const char *id = json_string_value(json_object_get(m, "tool_call_id"));
            if (!tool_calls_have_id(prev, id))
                return sb_emu_openai_invalid(
                    call, param, NULL,
                    "Invalid parameter: 'tool_call_id' of '%.64s' not found in 'tool_calls' of previous "
                    "message.",
                    id);
        } else if (!strcmp(role, "assistant") && json_is_array(json_object_get(m, "tool_calls"))) {
            size_t k;
            json_t *tc;
            json_array_foreach (json_object_get(m, "tool_calls"), k, tc) {
                const char *id = json_string_value(json_object_get(tc, "id"));
                bool answered = false;
                for (size_t j = i + 1; j < n; j++) {
                    json_t *t = json_array_get(messages, j);
                    if (strcmp(json_string_value(json_object_get(t, "role")), "tool"))
                        break;
                    const char *tid = json_string_value(json_object_get(t, "tool_call_id"));
                    if (tid && !strcmp(tid, id))
                        answered = true;
                }
                if (!answered) {
                    snprintf(param, sizeof param, "messages.[%zu].role", i);
                    return sb_emu_openai_invalid(
                        call, param, NULL,
                        "An assistant message with 'tool_calls' must be followed by tool messages "
                        "responding to each 'tool_call_id'. The following tool_call_ids did not have "
                        "response messages: %.64s",
                        id);
                }
            }
        }
    }
    return true;
}

/* tool_choice {"type":"function","function":{"name"}} naming one of the tools (or "allowed_tools"/"custom"). */
static bool check_tool_choice_object(struct sb_emu_call *call, const json_t *choice, const json_t *tools)
{
    json_t *type = json_object_get(choice, "type");
    if (!type)
        return sb_emu_openai_missing(call, "tool_choice.type");
    if (!sb_emu_openai_check_type(call, type, "tool_choice.type", SB_EMU_W_STRING))
        return false;
    const char *t = json_string_value(type);
    if (!strcmp(t, "allowed_tools") || !strcmp(t, "custom"))
        return true;
    if (strcmp(t, "function"))
        return sb_emu_openai_invalid(
            call, "tool_choice.type", "invalid_value",
            "Invalid value: '%.64s'. Supported values are: 'function', 'allowed_tools', and 'custom'.", t);
    json_t *fn = json_object_get(choice, "function");
    if (!fn)
        return sb_emu_openai_missing(call, "tool_choice.function");
    if (!sb_emu_openai_check_type(call, fn, "tool_choice.function", SB_EMU_W_OBJECT))
        return false;
    json_t *name = json_object_get(fn, "name");
    if (!name)
        return sb_emu_openai_missing(call, "tool_choice.function.name");
    if (!sb_emu_openai_check_type(call, name, "tool_choice.function.name", SB_EMU_W_STRING))
        return false;
    size_t i;
    json_t *tool;
    json_array_foreach (tools, i, tool) {
        const char *n = json_string_value(json_object_get(json_object_get(tool, "function"), "name"));
        if (n && !strcmp(n, json_string_value(name)))
            return true;
    }
    return sb_emu_openai_invalid(call, "tool_choice", "invalid_value",
                                 "Invalid value for 'tool_choice': function '%.64s' not found in 'tools'.",
                                 json_string_value(name));
}

static bool check_tools(struct sb_emu_call *call)
{
    json_t *tools = json_object_get(call->json, "tools");
    json_t *choice = json_object_get(call->json, "tool_choice");
    json_t *parallel = json_object_get(call->json, "parallel_tool_calls");
    bool have_tools = tools && !json_is_null(tools);
    if (!have_tools) {
        if (choice && !json_is_null(choice))
            return sb_emu_openai_invalid(
                call, "tool_choice", NULL,
                "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                "specified.");
        if (parallel && !json_is_null(parallel))
            return sb_emu_openai_invalid(
                call, "parallel_tool_calls", NULL,
                "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when "
                "'tools' are specified.");
        return true;
    }
    if (!sb_emu_openai_check_type(call, tools, "tools", SB_EMU_W_ARRAY))
        return false;
    char param[PARAM_MAX];
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        snprintf(param, sizeof param, "tools[%zu]", i);
        if (!sb_emu_openai_check_type(call, t, param, SB_EMU_W_OBJECT))
            return false;
        json_t *type = json_object_get(t, "type");
        snprintf(param, sizeof param, "tools[%zu].type", i);
        if (!type)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, type, param, SB_EMU_W_STRING))
            return false;
        if (!strcmp(json_string_value(type), "custom"))
            continue;
        if (strcmp(json_string_value(type), "function"))
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid value: '%.64s'. Supported values are: 'function' and 'custom'.",
                                         json_string_value(type));
        json_t *fn = json_object_get(t, "function");
        snprintf(param, sizeof param, "tools[%zu].function", i);
        if (!fn)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, fn, param, SB_EMU_W_OBJECT))
            return false;
        json_t *name = json_object_get(fn, "name");
        snprintf(param, sizeof param, "tools[%zu].function.name", i);
        if (!name)
            return sb_emu_openai_missing(call, param);
        if (!sb_emu_openai_check_type(call, name, param, SB_EMU_W_STRING))
            return false;
        if (!sb_emu_openai_valid_name(json_string_value(name)))
            return sb_emu_openai_invalid(
                call, param, "invalid_value",
                "Invalid '%s': string does not match pattern. Expected a string that matches the "
                "pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                param);
        json_t *params = json_object_get(fn, "parameters");
        snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
        if (params && !sb_emu_openai_check_type(call, params, param, SB_EMU_W_OBJECT))
            return false;
        json_t *strict = json_object_get(fn, "strict");
        snprintf(param, sizeof param, "tools[%zu].function.strict", i);
        if (strict && !json_is_null(strict) && !sb_emu_openai_check_type(call, strict, param, SB_EMU_W_BOOL))
            return false;
        json_t *desc = json_object_get(fn, "description");
        snprintf(param, sizeof param, "tools[%zu].function.description", i);
        if (desc && !sb_emu_openai_check_type(call, desc, param, SB_EMU_W_STRING))
            return false;
        char err[MSG_MAX / 2];
        snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
        if (json_is_true(strict) && params && sb_emu_schema_strict_check(params, err, sizeof err) < 0)
            return sb_emu_openai_invalid(call, param, "invalid_function_parameters",
                                         "Invalid schema for function '%s': %s", json_string_value(name), err);
    }
    if (choice && !json_is_null(choice)) {
        if (json_is_string(choice)) {
            const char *c = json_string_value(choice);
            if (strcmp(c, "none") && strcmp(c, "auto") && strcmp(c, "required"))
                return sb_emu_openai_invalid(
                    call, "tool_choice", "invalid_value",
                    "Invalid value: '%.64s'. Supported values are: 'none', 'auto', and 'required'.", c);
        } else if (!json_is_object(choice)) {
            return sb_emu_openai_check_type(call, choice, "tool_choice", SB_EMU_W_OBJECT);
        } else if (!check_tool_choice_object(call, choice, tools)) {
            return false;
        }
    }
    return check_opt_type(call, "parallel_tool_calls", SB_EMU_W_BOOL);
}

/* A string parameter with a fixed set of values ("Invalid value: 'x'. Supported values are: ..."). */
static bool check_opt_enum(struct sb_emu_call *call, const char *name, const char *const *values, const char *phrase)
{
    return sb_emu_openai_check_enum(call, json_object_get(call->json, name), name, values, phrase);
}

static bool metadata_key_too_long(struct sb_emu_call *call, const char *k)
{
    return sb_emu_openai_invalid(call, "metadata", "invalid_value",
                                 "Invalid 'metadata': key '%.64s...' is too long. Expected a key with maximum length "
                                 "64, but got a key with length %zu instead.",
                                 k, strlen(k));
}

/* metadata: at most 16 string values, keys <= 64 and values <= 512 characters. */
static bool check_metadata(struct sb_emu_call *call)
{
    json_t *md = json_object_get(call->json, "metadata");
    if (!json_is_object(md))
        return true;
    return sb_emu_openai_check_metadata(call, md, metadata_key_too_long);
}

/* logit_bias: token ids (decimal strings) to numbers in -100..100. */
static bool check_logit_bias(struct sb_emu_call *call)
{
    json_t *lb = json_object_get(call->json, "logit_bias");
    if (!json_is_object(lb))
        return true;
    const char *k;
    json_t *v;
    char param[PARAM_MAX];
    json_object_foreach (lb, k, v) {
        if (!*k || strspn(k, "0123456789") != strlen(k))
            return sb_emu_openai_invalid(call, "logit_bias", "invalid_value",
                                         "Invalid key in 'logit_bias': %.32s. Expected an integer token ID.", k);
        snprintf(param, sizeof param, "logit_bias.%.32s", k);
        if (!sb_emu_openai_check_type(call, v, param, SB_EMU_W_NUMBER))
            return false;
        if (json_number_value(v) < -100 || json_number_value(v) > 100)
            return sb_emu_openai_invalid(
                call, param, "invalid_value",
                "Invalid '%s': number out of range. Expected a value between -100 and 100, but got %g "
                "instead.",
                param, json_number_value(v));
    }
    return true;
}

/* modalities ["text"|"audio"]; audio output needs an audio model and the "audio" parameter. */
static bool check_output_modalities(struct sb_emu_call *call)
{
    json_t *mods = json_object_get(call->json, "modalities");
    char param[PARAM_MAX];
    bool audio_out = false;
    size_t i;
    json_t *v;
    json_array_foreach (mods, i, v) {
        snprintf(param, sizeof param, "modalities[%zu]", i);
        if (!sb_emu_openai_check_type(call, v, param, SB_EMU_W_STRING))
            return false;
        const char *m = json_string_value(v);
        if (strcmp(m, "text") && strcmp(m, "audio"))
            return sb_emu_openai_invalid(call, param, "invalid_value",
                                         "Invalid value: '%.32s'. Supported values are: 'text' and 'audio'.", m);
        audio_out = audio_out || !strcmp(m, "audio");
    }
    json_t *audio = json_object_get(call->json, "audio");
    if (audio_out && !strstr(json_string_value(json_object_get(call->json, "model")), "audio"))
        return sb_emu_openai_invalid(
            call, "modalities", "invalid_value",
            "This model does not support audio output. Remove 'audio' from 'modalities' or use an audio "
            "model.");
    if (audio_out && (!audio || json_is_null(audio)))
        return sb_emu_openai_missing(call, "audio");
    if (!json_is_object(audio))
        return true;
    static const char *const formats[] = {"wav", "aac", "mp3", "flac", "opus", "pcm16", NULL};
    json_t *voice = json_object_get(audio, "voice"), *format = json_object_get(audio, "format");
    if (!voice)
        return sb_emu_openai_missing(call, "audio.voice");
    if (!sb_emu_openai_check_type(call, voice, "audio.voice", SB_EMU_W_STRING))
        return false;
    if (!format)
        return sb_emu_openai_missing(call, "audio.format");
    if (!sb_emu_openai_check_type(call, format, "audio.format", SB_EMU_W_STRING))
        return false;
    if (!sb_emu_in_list(json_string_value(format), formats))
        return sb_emu_openai_invalid(
            call, "audio.format", "invalid_value",
            "Invalid value: '%.32s'. Supported values are: 'wav', 'aac', 'mp3', 'flac', 'opus', and "
            "'pcm16'.",
            json_string_value(format));
    return true;
}

/* stop: a string or an array of at most 4 strings. */
static bool check_stop(struct sb_emu_call *call)
{
    json_t *stop = json_object_get(call->json, "stop");
    if (!stop || json_is_null(stop) || json_is_string(stop))
        return true;
    if (!json_is_array(stop))
        return sb_emu_openai_invalid(
            call, "stop", "invalid_type",
            "Invalid type for 'stop': expected one of a string or array of strings, but got %s instead.",
            sb_emu_openai_type_phrase(stop));
    if (json_array_size(stop) > 4)
        return sb_emu_openai_invalid(
            call, "stop", "array_above_max_length",
            "Invalid 'stop': array too long. Expected an array with maximum length 4, but got an array "
            "with length %zu instead.",
            json_array_size(stop));
    char param[PARAM_MAX];
    size_t i;
    json_t *s;
    json_array_foreach (stop, i, s) {
        snprintf(param, sizeof param, "stop[%zu]", i);
        if (!sb_emu_openai_check_type(call, s, param, SB_EMU_W_STRING))
            return false;
    }
    return true;
}

/* response_format: {"type":"text"}, {"type":"json_object"} or {"type":"json_schema","json_schema":{...}}. */
static bool check_response_format(struct sb_emu_call *call)
{
    json_t *rf = json_object_get(call->json, "response_format");
    if (!json_is_object(rf))
        return true;
    json_t *type = json_object_get(rf, "type");
    if (!type)
        return sb_emu_openai_missing(call, "response_format.type");
    if (!sb_emu_openai_check_type(call, type, "response_format.type", SB_EMU_W_STRING))
        return false;
    const char *t = json_string_value(type);
    if (strcmp(t, "text") && strcmp(t, "json_object") && strcmp(t, "json_schema"))
        return sb_emu_openai_invalid(
            call, "response_format.type", "invalid_value",
            "Invalid value: '%.64s'. Supported values are: 'text', 'json_object', and 'json_schema'.", t);
    if (strcmp(t, "json_schema"))
        return true;
    json_t *js = json_object_get(rf, "json_schema");
    if (!js)
        return sb_emu_openai_missing(call, "response_format.json_schema");
    if (!sb_emu_openai_check_type(call, js, "response_format.json_schema", SB_EMU_W_OBJECT))
        return false;
    json_t *name = json_object_get(js, "name");
    if (!name)
        return sb_emu_openai_missing(call, "response_format.json_schema.name");
    if (!sb_emu_openai_check_type(call, name, "response_format.json_schema.name", SB_EMU_W_STRING))
        return false;
    if (!sb_emu_openai_valid_name(json_string_value(name)))
        return sb_emu_openai_invalid(
            call, "response_format.json_schema.name", "invalid_value",
            "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string "
            "that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.");
    json_t *schema = json_object_get(js, "schema"), *strict = json_object_get(js, "strict");
    json_t *desc = json_object_get(js, "description");
    if (schema && !sb_emu_openai_check_type(call, schema, "response_format.json_schema.schema", SB_EMU_W_OBJECT))
        return false;
    if (strict && !json_is_null(strict) &&
        !sb_emu_openai_check_type(call, strict, "response_format.json_schema.strict", SB_EMU_W_BOOL))
        return false;
    if (desc && !sb_emu_openai_check_type(call, desc, "response_format.json_schema.description", SB_EMU_W_STRING))
        return false;
    char err[MSG_MAX / 2];
    if (json_is_true(strict) && schema && sb_emu_schema_strict_check(schema, err, sizeof err) < 0)
        return sb_emu_openai_invalid(call, "response_format", NULL, "Invalid schema for response_format '%s': %s",
                                     json_string_value(name), err);
    return true;
}

/* Everything but the messages' content: top-level parameters, their types and ranges. */
static bool check_params(struct sb_emu_call *call)
{
    const char *key = sb_emu_extra_key(call->json, known_params);
    if (key)
        return sb_emu_openai_invalid(call, NULL, NULL, "Unrecognized request argument supplied: %.64s", key);
    json_t *model = json_object_get(call->json, "model");
    if (!model)
        return sb_emu_openai_missing(call, "model");
    if (!sb_emu_openai_check_type(call, model, "model", SB_EMU_W_STRING))
        return false;
    if (json_string_length(model) == 0)
        return sb_emu_openai_invalid(call, "model", "invalid_value",
                                     "Invalid 'model': empty string. Expected a non-empty model id.");
    json_t *messages = json_object_get(call->json, "messages");
    if (!messages)
        return sb_emu_openai_missing(call, "messages");
    if (!sb_emu_openai_check_type(call, messages, "messages", SB_EMU_W_ARRAY))
        return false;
    if (json_array_size(messages) == 0)
        return sb_emu_openai_invalid(
            call, "messages", "empty_array",
            "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
            "array instead.");

    if (!check_opt_type(call, "stream", SB_EMU_W_BOOL) || !check_opt_type(call, "stream_options", SB_EMU_W_OBJECT) ||
        !sb_emu_openai_check_range(call, "n", SB_EMU_W_INT, 1, SB_EMU_MAX_CHOICES) ||
        !sb_emu_openai_check_range(call, "max_tokens", SB_EMU_W_INT, 1, 1e9) ||
        !sb_emu_openai_check_range(call, "max_completion_tokens", SB_EMU_W_INT, 1, 1e9) ||
        !sb_emu_openai_check_range(call, "temperature", SB_EMU_W_NUMBER, 0, 2) ||
        !sb_emu_openai_check_range(call, "top_p", SB_EMU_W_NUMBER, 0, 1) ||
        !sb_emu_openai_check_range(call, "presence_penalty", SB_EMU_W_NUMBER, -2, 2) ||
        !sb_emu_openai_check_range(call, "frequency_penalty", SB_EMU_W_NUMBER, -2, 2) ||
        !sb_emu_openai_check_range(call, "top_logprobs", SB_EMU_W_INT, 0, 20) ||
        !check_opt_type(call, "logprobs", SB_EMU_W_BOOL) || !check_opt_type(call, "seed", SB_EMU_W_INT) ||
        !check_opt_type(call, "user", SB_EMU_W_STRING) || !check_opt_type(call, "metadata", SB_EMU_W_OBJECT) ||
        !check_opt_type(call, "store", SB_EMU_W_BOOL) || !check_opt_type(call, "response_format", SB_EMU_W_OBJECT) ||
        !check_opt_type(call, "logit_bias", SB_EMU_W_OBJECT) ||
        !check_opt_type(call, "prompt_cache_key", SB_EMU_W_STRING) ||
        !check_opt_type(call, "safety_identifier", SB_EMU_W_STRING) ||
        !check_opt_type(call, "modalities", SB_EMU_W_ARRAY) || !check_opt_type(call, "audio", SB_EMU_W_OBJECT) ||
        !check_opt_type(call, "prediction", SB_EMU_W_OBJECT) ||
        !check_opt_type(call, "web_search_options", SB_EMU_W_OBJECT))
        return false;
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max", NULL};
    static const char *const tiers[] = {"auto", "default", "flex", "scale", "priority", NULL};
    static const char *const verbosities[] = {"low", "medium", "high", NULL};
    if (!check_opt_enum(call, "reasoning_effort", efforts,
                        "'none', 'minimal', 'low', 'medium', 'high', 'xhigh', and 'max'") ||
        !check_opt_enum(call, "service_tier", tiers, "'auto', 'default', 'flex', 'scale', and 'priority'") ||
        !check_opt_enum(call, "verbosity", verbosities, "'low', 'medium', and 'high'") || !check_metadata(call) ||
        !check_logit_bias(call) || !check_output_modalities(call))
        return false;
    json_t *top_logprobs = json_object_get(call->json, "top_logprobs");
    if (top_logprobs && !json_is_null(top_logprobs) && !json_is_true(json_object_get(call->json, "logprobs")))
        return sb_emu_openai_invalid(call, "logprobs", NULL,
                                     "Invalid value for 'logprobs': must be true when 'top_logprobs' is specified.");

    json_t *stream = json_object_get(call->json, "stream");
    json_t *sopts = json_object_get(call->json, "stream_options");
    if (sopts && !json_is_null(sopts)) {
        if (!json_is_true(stream))
            return sb_emu_openai_invalid(call, "stream_options", NULL,
                                         "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
        json_t *iu = json_object_get(sopts, "include_usage"), *io = json_object_get(sopts, "include_obfuscation");
        if ((iu && !json_is_null(iu) &&
             !sb_emu_openai_check_type(call, iu, "stream_options.include_usage", SB_EMU_W_BOOL)) ||
            (io && !json_is_null(io) &&
             !sb_emu_openai_check_type(call, io, "stream_options.include_obfuscation", SB_EMU_W_BOOL)))
            return false;
    }
    if (!check_stop(call) || !check_response_format(call) || !check_tools(call))
        return false;

    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        if (!check_message(call, m, i))
            return false;
    }
    if (!check_tool_sequence(call, messages))
        return false;

    /* Like OpenAI-compatible servers that cannot sample several choices. */
    json_t *n = json_object_get(call->json, "n");
    if (!strncmp(json_string_value(model), "emu-single", 10) && json_is_integer(n) && json_integer_value(n) != 1)
        return sb_emu_openai_invalid(call, "n", NULL, "n > 1 is not supported by this model");
    /* OpenAI's guard against JSON mode looping on whitespace. */
    const char *rf_type = json_string_value(json_object_get(json_object_get(call->json, "response_format"), "type"));
    if (rf_type && !strcmp(rf_type, "json_object") && !sb_emu_openai_mention_json(messages))
        return sb_emu_openai_invalid(
            call, "messages", NULL,
            "'messages' must contain the word 'json' in some form, to use 'response_format' of type "
            "'json_object'.");
    return true;
}

bool sb_emu_openai_chat_check(struct sb_emu_call *call)
{
    return sb_emu_openai_check_body(call) && check_params(call);
}
