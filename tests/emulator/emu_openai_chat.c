/*
 * emu_openai_chat: OpenAI Chat Completions (POST /v1/chat/completions) and the
 * OpenAI model list (GET /v1/models).
 *
 * The request is validated the way the real API does it (types, roles,
 * content part shapes, tool message ordering, unknown parameters), with
 * OpenAI's error body and messages modelled on the real ones, so a gateway
 * that builds a malformed upstream request fails its test here rather than in
 * production. The reply is deterministic: "You said: <last user text>", a
 * CALL directive's tool calls, or "Tool result: <tool content>"; see main.c.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_id.h"

#define PARAM_MAX 96
#define MSG_MAX 512

/* ---- errors ---------------------------------------------------------------------- */

void sb_emu_openai_error(struct sb_emu_reply *r, int status, const char *message, const char *type,
                         const char *param, const char *code)
{
    json_t *e = json_pack("{s:{s:s, s:s, s:s?, s:s?}}", "error", "message", message, "type", type, "param", param,
                          "code", code);
    sb_emu_reply_json(r, status, e);
    json_decref(e);
}

bool sb_emu_openai_check_auth(struct sb_emu_call *call)
{
    const char *key = sb_emu_required_key(call->emu);
    if (!key)
        return false;
    const char *auth = sb_emu_call_header(call, "Authorization");
    if (auth && !strncmp(auth, "Bearer ", 7) && !strcmp(auth + 7, key))
        return false;
    sb_emu_openai_error(&call->reply, 401, "Incorrect API key provided", "invalid_request_error", NULL,
                        "invalid_api_key");
    return true;
}

/* 400 invalid_request_error with a formatted message. Always returns false. */
static bool invalid(struct sb_emu_call *call, const char *param, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static bool invalid(struct sb_emu_call *call, const char *param, const char *code, const char *fmt, ...)
{
    char msg[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sb_emu_openai_error(&call->reply, 400, msg, "invalid_request_error", param, code);
    return false;
}

static const char *type_phrase(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "an unknown type";
}

enum want { W_STRING, W_BOOL, W_INT, W_NUMBER, W_OBJECT, W_ARRAY };

static bool is_type(const json_t *v, enum want w)
{
    switch (w) {
    case W_STRING: return json_is_string(v);
    case W_BOOL: return json_is_boolean(v);
    case W_INT: return json_is_integer(v);
    case W_NUMBER: return json_is_number(v);
    case W_OBJECT: return json_is_object(v);
    case W_ARRAY: return json_is_array(v);
    }
    return false;
}

static const char *want_phrase(enum want w)
{
    static const char *names[] = {"a string", "a boolean", "an integer", "a number", "an object", "an array"};
    return names[w];
}

static bool check_type(struct sb_emu_call *call, const json_t *v, const char *param, enum want w)
{
    if (is_type(v, w))
        return true;
    return invalid(call, param, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.", param,
                   want_phrase(w), type_phrase(v));
}

/* Optional parameter: absent or null is fine; otherwise type and range. */
static bool check_opt_number(struct sb_emu_call *call, const char *name, enum want w, double min, double max)
{
    json_t *v = json_object_get(call->json, name);
    if (!v || json_is_null(v))
        return true;
    if (!check_type(call, v, name, w))
        return false;
    double d = json_number_value(v);
    const char *kind = w == W_INT ? "integer" : "decimal";
    if (d < min)
        return invalid(call, name, w == W_INT ? "integer_below_min_value" : "decimal_below_min_value",
                       "Invalid '%s': %s below minimum value. Expected a value >= %g, but got %g instead.", name,
                       kind, min, d);
    if (d > max)
        return invalid(call, name, w == W_INT ? "integer_above_max_value" : "decimal_above_max_value",
                       "Invalid '%s': %s above maximum value. Expected a value <= %g, but got %g instead.", name,
                       kind, max, d);
    return true;
}

static bool check_opt_type(struct sb_emu_call *call, const char *name, enum want w)
{
    json_t *v = json_object_get(call->json, name);
    if (!v || json_is_null(v))
        return true;
    return check_type(call, v, name, w);
}

static bool missing(struct sb_emu_call *call, const char *param)
{
    return invalid(call, param, "missing_required_parameter", "Missing required parameter: '%s'.", param);
}

/* ---- request validation ---------------------------------------------------------- */

static const char *const known_params[] = {
    "model", "messages", "audio", "frequency_penalty", "function_call", "functions", "logit_bias", "logprobs",
    "max_completion_tokens", "max_tokens", "metadata", "modalities", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "reasoning_effort", "response_format", "safety_identifier", "seed",
    "service_tier", "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options", NULL};

static bool in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

/* Validates one content part of a message with the given role. */
static bool check_part(struct sb_emu_call *call, const char *role, const json_t *part, size_t mi, size_t pi)
{
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu].content[%zu]", mi, pi);
    if (!check_type(call, part, param, W_OBJECT))
        return false;
    json_t *type = json_object_get(part, "type");
    snprintf(param, sizeof param, "messages[%zu].content[%zu].type", mi, pi);
    if (!type)
        return missing(call, param);
    if (!check_type(call, type, param, W_STRING))
        return false;
    const char *t = json_string_value(type);

    bool is_user = !strcmp(role, "user"), is_assistant = !strcmp(role, "assistant");
    const char *field = NULL;
    enum want w = W_STRING;
    if (!strcmp(t, "text")) {
        field = "text";
    } else if (!strcmp(t, "image_url") && is_user) {
        field = "image_url";
        w = W_OBJECT;
    } else if (!strcmp(t, "input_audio") && is_user) {
        field = "input_audio";
        w = W_OBJECT;
    } else if (!strcmp(t, "file") && is_user) {
        field = "file";
        w = W_OBJECT;
    } else if (!strcmp(t, "refusal") && is_assistant) {
        field = "refusal";
    } else if (is_user) {
        return invalid(call, param, "invalid_value",
                       "Invalid value: '%.64s'. Supported values are: 'text', 'image_url', 'input_audio', and "
                       "'file'.",
                       t);
    } else if (is_assistant) {
        return invalid(call, param, "invalid_value",
                       "Invalid value: '%.64s'. Supported values are: 'text' and 'refusal'.", t);
    } else {
        return invalid(call, param, "invalid_value", "Invalid value: '%.64s'. Supported values are: 'text'.", t);
    }
    json_t *v = json_object_get(part, field);
    snprintf(param, sizeof param, "messages[%zu].content[%zu].%s", mi, pi, field);
    if (!v)
        return missing(call, param);
    if (!check_type(call, v, param, w))
        return false;

    if (!strcmp(t, "image_url")) {
        json_t *url = json_object_get(v, "url");
        snprintf(param, sizeof param, "messages[%zu].content[%zu].image_url.url", mi, pi);
        if (!url)
            return missing(call, param);
        if (!check_type(call, url, param, W_STRING))
            return false;
    } else if (!strcmp(t, "input_audio")) {
        json_t *data = json_object_get(v, "data"), *format = json_object_get(v, "format");
        snprintf(param, sizeof param, "messages[%zu].content[%zu].input_audio.data", mi, pi);
        if (!data)
            return missing(call, param);
        if (!check_type(call, data, param, W_STRING))
            return false;
        snprintf(param, sizeof param, "messages[%zu].content[%zu].input_audio.format", mi, pi);
        if (!format)
            return missing(call, param);
        if (!check_type(call, format, param, W_STRING))
            return false;
        const char *f = json_string_value(format);
        if (strcmp(f, "wav") && strcmp(f, "mp3"))
            return invalid(call, param, "invalid_value",
                           "Invalid value: '%.32s'. Supported values are: 'wav' and 'mp3'.", f);
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
        return invalid(call, param, "invalid_type",
                       "Invalid type for '%s': expected one of a string or array of objects, but got %s instead.",
                       param, type_phrase(content));
    if (json_array_size(content) == 0)
        return invalid(call, param, "empty_array",
                       "Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty "
                       "array instead.",
                       param);
    size_t pi;
    json_t *part;
    json_array_foreach(content, pi, part) {
        if (!check_part(call, role, part, mi, pi))
            return false;
    }
    return true;
}

static bool check_tool_calls(struct sb_emu_call *call, const json_t *tcs, size_t mi)
{
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu].tool_calls", mi);
    if (!check_type(call, tcs, param, W_ARRAY))
        return false;
    size_t ti;
    json_t *tc;
    json_array_foreach(tcs, ti, tc) {
        snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu]", mi, ti);
        if (!check_type(call, tc, param, W_OBJECT))
            return false;
        static const char *const fields[] = {"id", "type", "function"};
        for (size_t f = 0; f < 3; f++) {
            json_t *v = json_object_get(tc, fields[f]);
            snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu].%s", mi, ti, fields[f]);
            if (!v)
                return missing(call, param);
            if (!check_type(call, v, param, f == 2 ? W_OBJECT : W_STRING))
                return false;
        }
        const char *type = json_string_value(json_object_get(tc, "type"));
        if (strcmp(type, "function"))
            return invalid(call, param, "invalid_value", "Invalid value: '%.64s'. Supported values are: 'function'.",
                           type);
        json_t *fn = json_object_get(tc, "function");
        static const char *const ffields[] = {"name", "arguments"};
        for (size_t f = 0; f < 2; f++) {
            json_t *v = json_object_get(fn, ffields[f]);
            snprintf(param, sizeof param, "messages[%zu].tool_calls[%zu].function.%s", mi, ti, ffields[f]);
            if (!v)
                return missing(call, param);
            if (!check_type(call, v, param, W_STRING))
                return false;
        }
    }
    return true;
}

/* Properties each role may carry; anything else is rejected like the real API does. */
static bool check_message_keys(struct sb_emu_call *call, const char *role, const json_t *m, size_t mi)
{
    static const char *const sys_keys[] = {"role", "content", "name", NULL};
    static const char *const assistant_keys[] = {"role", "content", "name", "refusal", "tool_calls",
                                                 "function_call", "audio", NULL};
    /* "name" on tool messages is legacy but still accepted upstream. */
    static const char *const tool_keys[] = {"role", "content", "tool_call_id", "name", NULL};
    const char *const *allowed = sys_keys;
    if (!strcmp(role, "assistant"))
        allowed = assistant_keys;
    else if (!strcmp(role, "tool"))
        allowed = tool_keys;
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)m, key, v) {
        if (!in_list(key, allowed)) {
            return invalid(call, NULL, NULL, "Additional properties are not allowed ('%.64s' was unexpected) - "
                           "'messages.%zu'", key, mi);
        }
    }
    return true;
}

static bool check_message(struct sb_emu_call *call, const json_t *m, size_t mi)
{
    static const char *const roles[] = {"system", "developer", "user", "assistant", "tool", "function", NULL};
    char param[PARAM_MAX];
    snprintf(param, sizeof param, "messages[%zu]", mi);
    if (!check_type(call, m, param, W_OBJECT))
        return false;
    json_t *role = json_object_get(m, "role");
    snprintf(param, sizeof param, "messages[%zu].role", mi);
    if (!role)
        return missing(call, param);
    if (!check_type(call, role, param, W_STRING))
        return false;
    const char *r = json_string_value(role);
    if (!in_list(r, roles))
        return invalid(call, param, "invalid_value",
                       "Invalid value: '%.64s'. Supported values are: 'system', 'assistant', 'user', 'function', "
                       "'tool', and 'developer'.",
                       r);
    if (!check_message_keys(call, r, m, mi))
        return false;

    json_t *name = json_object_get(m, "name");
    snprintf(param, sizeof param, "messages[%zu].name", mi);
    if (name && !check_type(call, name, param, W_STRING))
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
            return missing(call, param);
        }
        return check_content(call, r, content, mi);
    }
    if (!strcmp(r, "function")) {
        if (!name) {
            snprintf(param, sizeof param, "messages[%zu].name", mi);
            return missing(call, param);
        }
        if (!content || json_is_null(content))
            return true;
        return check_type(call, content, param, W_STRING);
    }
    if (!content || json_is_null(content))
        return missing(call, param);
    if (!check_content(call, r, content, mi))
        return false;
    if (!strcmp(r, "tool")) {
        json_t *id = json_object_get(m, "tool_call_id");
        snprintf(param, sizeof param, "messages[%zu].tool_call_id", mi);
        if (!id)
            return missing(call, param);
        if (!check_type(call, id, param, W_STRING))
            return false;
    }
    return true;
}

/* Does this assistant message's tool_calls contain id? */
static bool tool_calls_have_id(const json_t *assistant, const char *id)
{
    size_t i;
    json_t *tc;
    json_array_foreach(json_object_get(assistant, "tool_calls"), i, tc) {
        const char *tid = json_string_value(json_object_get(tc, "id"));
        if (tid && !strcmp(tid, id))
            return true;
    }
    return false;
}

/* Tool messages must answer the tool_calls of the assistant message before them, and every tool call must be answered. */
static bool check_tool_sequence(struct sb_emu_call *call, const json_t *messages)
{
    size_t n = json_array_size(messages);
    char param[PARAM_MAX];
    for (size_t i = 0; i < n; i++) {
        json_t *m = json_array_get(messages, i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!strcmp(role, "tool")) {
            size_t j = i;
            while (j > 0 && !strcmp(json_string_value(json_object_get(json_array_get(messages, j - 1), "role")),
                                    "tool"))
                j--;
            json_t *prev = j > 0 ? json_array_get(messages, j - 1) : NULL;
            json_t *tcs = prev ? json_object_get(prev, "tool_calls") : NULL;
            snprintf(param, sizeof param, "messages.[%zu].role", i);
            if (!prev || strcmp(json_string_value(json_object_get(prev, "role")), "assistant") ||
                !json_is_array(tcs) || json_array_size(tcs) == 0)
                return invalid(call, param, NULL,
                               "Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                               "message with 'tool_calls'.");
            const char *id = json_string_value(json_object_get(m, "tool_call_id"));
            if (!tool_calls_have_id(prev, id))
                return invalid(call, param, NULL,
                               "Invalid parameter: 'tool_call_id' of '%.64s' not found in 'tool_calls' of previous "
                               "message.",
                               id);
        } else if (!strcmp(role, "assistant") && json_is_array(json_object_get(m, "tool_calls"))) {
            size_t k;
            json_t *tc;
            json_array_foreach(json_object_get(m, "tool_calls"), k, tc) {
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
                    return invalid(call, param, NULL,
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

static bool valid_name_chars(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-'))
            return false;
    return true;
}

static bool check_tools(struct sb_emu_call *call)
{
    json_t *tools = json_object_get(call->json, "tools");
    json_t *choice = json_object_get(call->json, "tool_choice");
    json_t *parallel = json_object_get(call->json, "parallel_tool_calls");
    bool have_tools = tools && !json_is_null(tools);
    if (!have_tools) {
        if (choice && !json_is_null(choice))
            return invalid(call, "tool_choice", NULL,
                           "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                           "specified.");
        if (parallel && !json_is_null(parallel))
            return invalid(call, "parallel_tool_calls", NULL,
                           "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when "
                           "'tools' are specified.");
        return true;
    }
    if (!check_type(call, tools, "tools", W_ARRAY))
        return false;
    char param[PARAM_MAX];
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        snprintf(param, sizeof param, "tools[%zu]", i);
        if (!check_type(call, t, param, W_OBJECT))
            return false;
        json_t *type = json_object_get(t, "type");
        snprintf(param, sizeof param, "tools[%zu].type", i);
        if (!type)
            return missing(call, param);
        if (!check_type(call, type, param, W_STRING))
            return false;
        if (!strcmp(json_string_value(type), "custom"))
            continue;
        if (strcmp(json_string_value(type), "function"))
            return invalid(call, param, "invalid_value",
                           "Invalid value: '%.64s'. Supported values are: 'function' and 'custom'.",
                           json_string_value(type));
        json_t *fn = json_object_get(t, "function");
        snprintf(param, sizeof param, "tools[%zu].function", i);
        if (!fn)
            return missing(call, param);
        if (!check_type(call, fn, param, W_OBJECT))
            return false;
        json_t *name = json_object_get(fn, "name");
        snprintf(param, sizeof param, "tools[%zu].function.name", i);
        if (!name)
            return missing(call, param);
        if (!check_type(call, name, param, W_STRING))
            return false;
        if (!valid_name_chars(json_string_value(name)))
            return invalid(call, param, "invalid_value",
                           "Invalid '%s': string does not match pattern. Expected a string that matches the "
                           "pattern '^[a-zA-Z0-9_-]{1,64}$'.",
                           param);
        json_t *params = json_object_get(fn, "parameters");
        snprintf(param, sizeof param, "tools[%zu].function.parameters", i);
        if (params && !check_type(call, params, param, W_OBJECT))
            return false;
    }
    if (choice && !json_is_null(choice)) {
        if (json_is_string(choice)) {
            const char *c = json_string_value(choice);
            if (strcmp(c, "none") && strcmp(c, "auto") && strcmp(c, "required"))
                return invalid(call, "tool_choice", "invalid_value",
                               "Invalid value: '%.64s'. Supported values are: 'none', 'auto', and 'required'.", c);
        } else if (!json_is_object(choice)) {
            return check_type(call, choice, "tool_choice", W_OBJECT);
        }
    }
    return check_opt_type(call, "parallel_tool_calls", W_BOOL);
}

/* Everything but the messages' content: top-level parameters, their types and ranges. */
static bool check_params(struct sb_emu_call *call)
{
    const char *key;
    json_t *v;
    json_object_foreach(call->json, key, v) {
        if (!in_list(key, known_params))
            return invalid(call, NULL, NULL, "Unrecognized request argument supplied: %.64s", key);
    }
    json_t *model = json_object_get(call->json, "model");
    if (!model)
        return missing(call, "model");
    if (!check_type(call, model, "model", W_STRING))
        return false;
    if (json_string_length(model) == 0)
        return invalid(call, "model", "invalid_value", "Invalid 'model': empty string. Expected a non-empty model id.");
    json_t *messages = json_object_get(call->json, "messages");
    if (!messages)
        return missing(call, "messages");
    if (!check_type(call, messages, "messages", W_ARRAY))
        return false;
    if (json_array_size(messages) == 0)
        return invalid(call, "messages", "empty_array",
                       "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty "
                       "array instead.");

    if (!check_opt_type(call, "stream", W_BOOL) || !check_opt_type(call, "stream_options", W_OBJECT) ||
        !check_opt_number(call, "n", W_INT, 1, 128) || !check_opt_number(call, "max_tokens", W_INT, 1, 1e9) ||
        !check_opt_number(call, "max_completion_tokens", W_INT, 1, 1e9) ||
        !check_opt_number(call, "temperature", W_NUMBER, 0, 2) || !check_opt_number(call, "top_p", W_NUMBER, 0, 1) ||
        !check_opt_number(call, "presence_penalty", W_NUMBER, -2, 2) ||
        !check_opt_number(call, "frequency_penalty", W_NUMBER, -2, 2) ||
        !check_opt_number(call, "top_logprobs", W_INT, 0, 20) || !check_opt_type(call, "logprobs", W_BOOL) ||
        !check_opt_type(call, "seed", W_INT) || !check_opt_type(call, "user", W_STRING) ||
        !check_opt_type(call, "metadata", W_OBJECT) || !check_opt_type(call, "store", W_BOOL) ||
        !check_opt_type(call, "response_format", W_OBJECT) || !check_opt_type(call, "logit_bias", W_OBJECT))
        return false;

    json_t *stream = json_object_get(call->json, "stream");
    json_t *sopts = json_object_get(call->json, "stream_options");
    if (sopts && !json_is_null(sopts) && !json_is_true(stream))
        return invalid(call, "stream_options", NULL,
                       "The 'stream_options' parameter is only allowed when 'stream' is enabled.");
    json_t *stop = json_object_get(call->json, "stop");
    if (stop && !json_is_null(stop) && !json_is_string(stop)) {
        if (!json_is_array(stop) || json_array_size(stop) > 4)
            return invalid(call, "stop", "invalid_type",
                           "Invalid type for 'stop': expected a string or an array of at most 4 strings.");
        size_t i;
        json_t *s;
        json_array_foreach(stop, i, s) {
            if (!json_is_string(s))
                return invalid(call, "stop", "invalid_type",
                               "Invalid type for 'stop': expected a string or an array of at most 4 strings.");
        }
    }
    json_t *rf = json_object_get(call->json, "response_format");
    if (rf && json_is_object(rf)) {
        const char *t = json_string_value(json_object_get(rf, "type"));
        if (!t)
            return missing(call, "response_format.type");
        if (strcmp(t, "text") && strcmp(t, "json_object") && strcmp(t, "json_schema"))
            return invalid(call, "response_format.type", "invalid_value",
                           "Invalid value: '%.64s'. Supported values are: 'text', 'json_object', and 'json_schema'.",
                           t);
    }
    if (!check_tools(call))
        return false;

    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m) {
        if (!check_message(call, m, i))
            return false;
    }
    return check_tool_sequence(call, messages);
}

/* ---- reply ------------------------------------------------------------------------ */

/* The text of a message: a string content, or its text parts joined by one space. Owned. */
static char *message_text(const json_t *m)
{
    json_t *content = json_object_get(m, "content");
    if (json_is_string(content))
        return sb_xstrdup(json_string_value(content));
    char *out = sb_xstrdup("");
    if (!json_is_array(content))
        return out;
    size_t i;
    json_t *part;
    bool first = true;
    json_array_foreach(content, i, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        const char *text = json_string_value(json_object_get(part, "text"));
        if (!type || strcmp(type, "text") || !text)
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, first ? "" : " ", text);
        free(out);
        out = joined;
        first = false;
    }
    return out;
}

static bool tools_have(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        const char *n = json_string_value(json_object_get(json_object_get(t, "function"), "name"));
        if (n && !strcmp(n, name))
            return true;
    }
    return false;
}

/* What the emulated model answers, before it is serialised (one shape for stream and non-stream). */
struct chat_answer {
    const char *model;
    char id[SB_ID_MAX];
    long long created;
    size_t n;                       /* choices */
    char *content;                  /* owned; NULL with tool calls */
    struct sb_emu_tool_call *calls; /* owned */
    size_t ncalls;
    char (*call_ids)[SB_ID_MAX]; /* owned, ncalls entries */
    const char *finish_reason;
    long long prompt_tokens, completion_tokens;
};

static json_t *usage_json(const struct chat_answer *a)
{
    return json_pack("{s:I, s:I, s:I, s:{s:i, s:i}, s:{s:i, s:i, s:i, s:i}}", "prompt_tokens",
                     (json_int_t)a->prompt_tokens, "completion_tokens", (json_int_t)a->completion_tokens,
                     "total_tokens", (json_int_t)(a->prompt_tokens + a->completion_tokens), "prompt_tokens_details",
                     "cached_tokens", 0, "audio_tokens", 0, "completion_tokens_details", "reasoning_tokens", 0,
                     "audio_tokens", 0, "accepted_prediction_tokens", 0, "rejected_prediction_tokens", 0);
}

static json_t *tool_calls_json(const struct chat_answer *a)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < a->ncalls; i++)
        json_array_append_new(arr, json_pack("{s:s, s:s, s:{s:s, s:s}}", "id", a->call_ids[i], "type", "function",
                                             "function", "name", a->calls[i].name, "arguments",
                                             a->calls[i].arguments));
    return arr;
}

static void reply_complete(struct sb_emu_reply *rep, const struct chat_answer *a)
{
    json_t *choices = json_array();
    for (size_t i = 0; i < a->n; i++) {
        json_t *msg = json_pack("{s:s, s:s?, s:n, s:[]}", "role", "assistant", "content", a->content, "refusal",
                                "annotations");
        if (a->ncalls)
            json_object_set_new(msg, "tool_calls", tool_calls_json(a));
        json_array_append_new(choices, json_pack("{s:I, s:o, s:n, s:s}", "index", (json_int_t)i, "message", msg,
                                                 "logprobs", "finish_reason", a->finish_reason));
    }
    json_t *body = json_pack("{s:s, s:s, s:I, s:s, s:o, s:o, s:s, s:n}", "id", a->id, "object", "chat.completion",
                             "created", (json_int_t)a->created, "model", a->model, "choices", choices, "usage",
                             usage_json(a), "service_tier", "default", "system_fingerprint");
    sb_emu_reply_json(rep, 200, body);
    json_decref(body);
}

static json_t *chunk_json(const struct chat_answer *a, json_t *choices /* stolen */, bool with_usage_null)
{
    json_t *c = json_pack("{s:s, s:s, s:I, s:s, s:s, s:n, s:o}", "id", a->id, "object", "chat.completion.chunk",
                          "created", (json_int_t)a->created, "model", a->model, "service_tier", "default",
                          "system_fingerprint", "choices", choices);
    if (with_usage_null)
        json_object_set_new(c, "usage", json_null());
    return c;
}

static void push_delta(struct sb_emu_reply *rep, const struct chat_answer *a, size_t index, json_t *delta,
                       const char *finish, bool usage_null)
{
    json_t *choice = json_pack("{s:I, s:o, s:n, s:s?}", "index", (json_int_t)index, "delta", delta, "logprobs",
                               "finish_reason", finish);
    json_t *chunk = chunk_json(a, json_pack("[o]", choice), usage_null);
    sb_emu_reply_sse_json(rep, chunk);
    json_decref(chunk);
}

/* Length of the next streamed piece of s: leading whitespace plus one word. */
static size_t next_word_piece(const char *s)
{
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    while (s[i] && !(s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* Length of the next piece of JSON arguments: up to 8 bytes, never splitting a UTF-8 sequence. */
static size_t next_args_piece(const char *s)
{
    size_t i = 0;
    while (s[i] && i < 8)
        i++;
    while (s[i] && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static void reply_stream(struct sb_emu_reply *rep, const struct chat_answer *a, bool include_usage)
{
    rep->status = 200;
    rep->stream = true;
    rep->content_type = "text/event-stream; charset=utf-8";
    for (size_t i = 0; i < a->n; i++) {
        if (a->ncalls == 0) {
            push_delta(rep, a, i, json_pack("{s:s, s:s, s:n}", "role", "assistant", "content", "", "refusal"), NULL,
                       include_usage);
            const char *p = a->content;
            while (*p) {
                size_t len = next_word_piece(p);
                push_delta(rep, a, i, json_pack("{s:s%}", "content", p, len), NULL, include_usage);
                p += len;
            }
        }
        for (size_t k = 0; k < a->ncalls; k++) {
            json_t *head = json_pack("[{s:I, s:s, s:s, s:{s:s, s:s}}]", "index", (json_int_t)k, "id", a->call_ids[k],
                                     "type", "function", "function", "name", a->calls[k].name, "arguments", "");
            json_t *delta = k == 0 ? json_pack("{s:s, s:n, s:o, s:n}", "role", "assistant", "content", "tool_calls",
                                               head, "refusal")
                                   : json_pack("{s:o}", "tool_calls", head);
            push_delta(rep, a, i, delta, NULL, include_usage);
            const char *p = a->calls[k].arguments;
            while (*p) {
                size_t len = next_args_piece(p);
                push_delta(rep, a, i,
                           json_pack("{s:[{s:I, s:{s:s%}}]}", "tool_calls", "index", (json_int_t)k, "function",
                                     "arguments", p, len),
                           NULL, include_usage);
                p += len;
            }
        }
        push_delta(rep, a, i, json_object(), a->finish_reason, include_usage);
    }
    if (include_usage) {
        json_t *chunk = chunk_json(a, json_array(), false);
        json_object_set_new(chunk, "usage", usage_json(a));
        sb_emu_reply_sse_json(rep, chunk);
        json_decref(chunk);
    }
    sb_emu_reply_chunk(rep, "data: [DONE]\n\n");
}

static void answer_free(struct chat_answer *a)
{
    free(a->content);
    sb_emu_tool_calls_free(&a->calls, a->ncalls);
    free(a->call_ids);
}

static void status_error(struct sb_emu_reply *rep, int status)
{
    char msg[64];
    snprintf(msg, sizeof msg, "emulated upstream error %d", status);
    if (status == 429) {
        sb_emu_openai_error(rep, status, msg, "requests", NULL, "rate_limit_exceeded");
        sb_emu_reply_header(rep, "Retry-After", "2");
    } else if (status >= 500) {
        sb_emu_openai_error(rep, status, msg, "server_error", NULL, NULL);
    } else {
        sb_emu_openai_error(rep, status, msg, "invalid_request_error", NULL, NULL);
    }
}

void sb_emu_openai_chat_handle(struct sb_emu_call *call)
{
    struct sb_emu_reply *rep = &call->reply;
    struct chat_answer a = {0};
    char *user_text = NULL, *clean = NULL;
    char err[MSG_MAX];

    if (sb_emu_openai_check_auth(call))
        return;
    const char *ct = sb_emu_call_header(call, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' ')) {
        invalid(call, NULL, NULL,
                "Invalid Content-Type header (%.64s), expected application/json. (HINT: The OpenAI API expects a "
                "JSON payload.)",
                ct ? ct : "none");
        return;
    }
    if (!call->json) {
        invalid(call, NULL, NULL,
                "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your "
                "HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid "
                "JSON.)");
        return;
    }
    if (!json_is_object(call->json)) {
        invalid(call, NULL, "invalid_type", "Invalid type for body: expected an object, but got %s instead.",
                type_phrase(call->json));
        return;
    }
    if (!check_params(call))
        return;

    json_t *messages = json_object_get(call->json, "messages");
    size_t nmsg = json_array_size(messages);
    json_t *last = json_array_get(messages, nmsg - 1);
    json_t *last_user = NULL;
    long long prompt = 0;
    for (size_t i = 0; i < nmsg; i++) {
        json_t *m = json_array_get(messages, i);
        char *t = message_text(m);
        prompt += 4 + (long long)sb_emu_count_words(t);
        free(t);
        if (!strcmp(json_string_value(json_object_get(m, "role")), "user"))
            last_user = m;
    }

    /* Directives come from the last user message, whichever message is last. */
    struct sb_emu_directives d;
    user_text = last_user ? message_text(last_user) : sb_xstrdup("");
    if (sb_emu_directives_parse(user_text, &d, &clean, err, sizeof err) < 0) {
        invalid(call, "messages", NULL, "%s", err);
        goto done;
    }
    rep->delay_ms = d.latency_ms;
    rep->hang = d.hang;
    rep->drop = d.drop;
    if (d.status) {
        status_error(rep, d.status);
        goto done;
    }
    bool stream = json_is_true(json_object_get(call->json, "stream"));
    if (d.malformed) {
        rep->status = 200;
        if (stream) {
            rep->stream = true;
            rep->content_type = "text/event-stream; charset=utf-8";
            sb_emu_reply_chunk(rep, "data: {\"id\":\"chatcmpl-malformed\",\"object\":\n\n");
        } else {
            rep->body = sb_xstrdup("{\"id\":\"chatcmpl-malformed\", this is not JSON");
            rep->body_len = strlen(rep->body);
        }
        goto done;
    }

    a.model = json_string_value(json_object_get(call->json, "model"));
    sb_id_new(a.id, sizeof a.id, "chatcmpl-", 15);
    a.created = (long long)time(NULL);
    json_t *n = json_object_get(call->json, "n");
    a.n = json_is_integer(n) ? (size_t)json_integer_value(n) : 1;
    a.finish_reason = "stop";
    a.prompt_tokens = prompt;

    const char *last_role = json_string_value(json_object_get(last, "role"));
    int have_calls = 0;
    if (strcmp(last_role, "tool") != 0) {
        have_calls = sb_emu_directives_calls(clean, &a.calls, &a.ncalls, err, sizeof err);
        if (have_calls < 0) {
            invalid(call, "messages", NULL, "%s", err);
            goto done;
        }
    }
    if (have_calls > 0) {
        json_t *tools = json_object_get(call->json, "tools");
        for (size_t k = 0; k < a.ncalls; k++) {
            if (!json_is_array(tools) || !tools_have(tools, a.calls[k].name)) {
                invalid(call, "tools", NULL, "CALL directive: function '%.64s' is not among the request's tools",
                        a.calls[k].name);
                goto done;
            }
        }
        a.call_ids = sb_xcalloc(a.ncalls, sizeof *a.call_ids);
        long long per_choice = 0;
        for (size_t k = 0; k < a.ncalls; k++) {
            sb_id_new(a.call_ids[k], sizeof a.call_ids[k], "call_", 12);
            per_choice += 1 + (long long)sb_emu_count_words(a.calls[k].arguments);
        }
        a.finish_reason = "tool_calls";
        a.completion_tokens = per_choice * (long long)a.n;
    } else {
        if (!strcmp(last_role, "tool")) {
            char *t = message_text(last);
            a.content = sb_xasprintf("Tool result: %s", t);
            free(t);
        } else {
            a.content = sb_xasprintf("You said: %s", clean);
        }
        size_t words = sb_emu_count_words(a.content);
        json_t *mt = json_object_get(call->json, "max_completion_tokens");
        if (!json_is_integer(mt))
            mt = json_object_get(call->json, "max_tokens");
        size_t limit = d.length ? 1 : words;
        if (json_is_integer(mt) && (size_t)json_integer_value(mt) < limit)
            limit = (size_t)json_integer_value(mt);
        if (d.length || limit < words) {
            a.content[sb_emu_words_prefix(a.content, limit)] = '\0';
            a.finish_reason = "length";
        }
        a.completion_tokens = (long long)sb_emu_count_words(a.content) * (long long)a.n;
    }

    if (stream) {
        json_t *sopts = json_object_get(call->json, "stream_options");
        bool include_usage = json_is_true(json_object_get(sopts, "include_usage"));
        reply_stream(rep, &a, include_usage);
        rep->chunk_delay_ms = d.chunk_delay_ms > 0 ? d.chunk_delay_ms : 0;
        rep->hang_after = d.hang_after;
        rep->drop_after = d.drop_after;
    } else {
        reply_complete(rep, &a);
    }

done:
    answer_free(&a);
    free(user_text);
    free(clean);
}

/* ---- GET /v1/models ------------------------------------------------------------- */

static const char *const emu_models[] = {"gpt-4o", "gpt-4o-mini", "gpt-4.1", "gpt-4.1-mini", "o4-mini", NULL};

void sb_emu_openai_models_handle(struct sb_emu_call *call)
{
    if (sb_emu_openai_check_auth(call))
        return;
    json_t *data = json_array();
    for (size_t i = 0; emu_models[i]; i++)
        json_array_append_new(data, json_pack("{s:s, s:s, s:I, s:s}", "id", emu_models[i], "object", "model",
                                              "created", (json_int_t)1715367049, "owned_by", "emulator"));
    json_t *body = json_pack("{s:s, s:o}", "object", "list", "data", data);
    sb_emu_reply_json(&call->reply, 200, body);
    json_decref(body);
}
