/*
 * fe_style_chat: the Chat Completions style (POST /v1/chat/completions):
 * messages -> canonical items (tool calls and tool results become
 * function_call / function_call_output items), result -> chat.completion.
 * Function tools here are externally tagged and non-strict by default.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_params.h"
#include "fe_request.h"
#include "fe_router.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

static json_t *fe_chat_error_body(const fe_request_t *r, const fe_error_t *e) { return fe_error_openai_body(e); }

static const char *const fe_chat_params[] = {
    "model", "messages", "n", "response_format", "tools", "tool_choice", "functions", "function_call",
    "parallel_tool_calls", "max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "user",
    "metadata", "store", "reasoning_effort", "stream", "stream_options", "frequency_penalty", "presence_penalty",
    "logprobs", "top_logprobs", "logit_bias", "service_tier", "prompt_cache_key", "safety_identifier", NULL};

/* Text of a chat content value (string, or array of text parts) as canonical parts. */
static json_t *fe_chat_parts(const json_t *content, bool assistant, size_t i, fe_error_t *err)
{
    const char *text_type = assistant ? "output_text" : "input_text";
    json_t *parts = json_array();
    if (json_is_string(content)) {
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", text_type, "text", content));
        return parts;
    }
    if (json_is_null(content) || !content)
        return parts;
    char param[48];
    snprintf(param, sizeof param, "messages[%zu].content", i);
    if (!json_is_array(content)) {
        json_decref(parts);
        fe_params_invalid(err, param, "Invalid type for '%s': expected a string or an array of content parts.", param);
        return NULL;
    }
    size_t j;
    json_t *p;
    json_array_foreach(content, j, p)
    {
        const char *type = json_string_value(json_object_get(p, "type"));
        if (type && !strcmp(type, "text") && json_is_string(json_object_get(p, "text"))) {
            json_array_append_new(parts, json_pack("{s:s, s:O}", "type", text_type, "text", json_object_get(p, "text")));
        } else if (type && !strcmp(type, "image_url") && !assistant &&
                   json_is_string(json_object_get(json_object_get(p, "image_url"), "url"))) {
            json_t *iu = json_object_get(p, "image_url");
            json_t *part = json_pack("{s:s, s:O}", "type", "input_image", "image_url", json_object_get(iu, "url"));
            if (json_is_string(json_object_get(iu, "detail")))
                json_object_set(part, "detail", json_object_get(iu, "detail"));
            json_array_append_new(parts, part);
        } else if (type && !strcmp(type, "refusal") && assistant) {
            json_array_append_new(parts, json_deep_copy(p));
        } else {
            json_decref(parts);
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                         "unsupported parameter: content part type '%.40s' in '%s'.", type ? type : "(none)", param);
            return NULL;
        }
    }
    return parts;
}

static int fe_chat_messages(const json_t *messages, json_t *items, fe_error_t *err)
{
    size_t i;
    json_t *m;
    json_array_foreach(messages, i, m)
    {
        char param[48];
        snprintf(param, sizeof param, "messages[%zu]", i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!json_is_object(m) || !role) {
            fe_params_invalid(err, param, "Invalid value for '%s': expected an object with a 'role'.", param);
            return -1;
        }
        json_t *content = json_object_get(m, "content");
        if (!strcmp(role, "system") || !strcmp(role, "developer") || !strcmp(role, "user")) {
            json_t *parts = fe_chat_parts(content, false, i, err);
            if (!parts)
                return -1;
            json_array_append_new(items, json_pack("{s:s, s:s, s:o}", "type", "message", "role", role, "content", parts));
        } else if (!strcmp(role, "assistant")) {
            json_t *parts = fe_chat_parts(content, true, i, err);
            if (!parts)
                return -1;
            if (json_array_size(parts) > 0)
                json_array_append_new(items, json_pack("{s:s, s:s, s:o}", "type", "message", "role", "assistant",
                                                       "content", parts));
            else
                json_decref(parts);
            json_t *calls = json_object_get(m, "tool_calls");
            size_t k;
            json_t *tc;
            json_array_foreach(calls, k, tc)
            {
                json_t *fn = json_object_get(tc, "function");
                if (!json_is_string(json_object_get(tc, "id")) || !json_is_string(json_object_get(fn, "name"))) {
                    fe_params_invalid(err, param, "Invalid tool call in '%s': id and function.name are required.",
                                      param);
                    return -1;
                }
                json_t *args = json_object_get(fn, "arguments");
                json_array_append_new(items, json_pack("{s:s, s:O, s:O, s:s}", "type", "function_call", "call_id",
                                                       json_object_get(tc, "id"), "name", json_object_get(fn, "name"),
                                                       "arguments", json_is_string(args) ? json_string_value(args) : "{}"));
            }
        } else if (!strcmp(role, "tool")) {
            json_t *call_id = json_object_get(m, "tool_call_id");
            if (!json_is_string(call_id)) {
                fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "tool_call_id",
                             "Missing required parameter: '%s.tool_call_id'.", param);
                return -1;
            }
            json_t *parts = fe_chat_parts(content, false, i, err);
            if (!parts)
                return -1;
            /* The tool's result as text: its text parts joined. */
            size_t total = 0, k;
            json_t *p;
            json_array_foreach(parts, k, p) total += json_string_length(json_object_get(p, "text"));
            char *buf = sb_xmalloc(total + 1);
            size_t off = 0;
            json_array_foreach(parts, k, p)
            {
                size_t n = json_string_length(json_object_get(p, "text"));
                memcpy(buf + off, json_string_value(json_object_get(p, "text")), n);
                off += n;
            }
            buf[off] = '\0';
            json_decref(parts);
            json_array_append_new(items, json_pack("{s:s, s:O, s:s%}", "type", "function_call_output", "call_id",
                                                   call_id, "output", buf, off));
            free(buf);
        } else {
            snprintf(param, sizeof param, "messages[%zu].role", i);
            fe_params_invalid(err, param,
                              "Invalid value for '%s': expected one of 'system', 'developer', 'user', 'assistant', "
                              "'tool'.",
                              param);
            return -1;
        }
    }
    return 0;
}

/* tools [{type:function, function:{...}}] and legacy functions -> canonical tools. */
static int fe_chat_tools(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *tools = fe_params_typed(body, "tools", FE_P_ARRAY | FE_P_NULL, err);
    json_t *functions = fe_params_typed(body, "functions", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t)
    {
        json_t *fn = json_object_get(t, "function");
        const char *type = json_string_value(json_object_get(t, "type"));
        if (!type || strcmp(type, "function") != 0 || !json_is_string(json_object_get(fn, "name"))) {
            json_decref(out);
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "tools",
                         "unsupported parameter: tools[%zu] must be {\"type\":\"function\",\"function\":{\"name\":...}}.",
                         i);
            return -1;
        }
        json_t *nt = json_pack("{s:s, s:O}", "type", "function", "name", json_object_get(fn, "name"));
        json_t *strict = json_object_get(fn, "strict");
        json_object_set_new(nt, "strict", json_boolean(json_is_true(strict))); /* non-strict by default */
        if (json_object_get(fn, "description"))
            json_object_set(nt, "description", json_object_get(fn, "description"));
        if (json_object_get(fn, "parameters"))
            json_object_set(nt, "parameters", json_object_get(fn, "parameters"));
        json_array_append_new(out, nt);
    }
    json_array_foreach(functions, i, t)
    {
        if (!json_is_string(json_object_get(t, "name"))) {
            json_decref(out);
            fe_params_invalid(err, "functions", "Invalid value for 'functions[%zu]': a name is required.", i);
            return -1;
        }
        json_t *nt = json_pack("{s:s, s:O, s:b}", "type", "function", "name", json_object_get(t, "name"), "strict", 0);
        if (json_object_get(t, "description"))
            json_object_set(nt, "description", json_object_get(t, "description"));
        if (json_object_get(t, "parameters"))
            json_object_set(nt, "parameters", json_object_get(t, "parameters"));
        json_array_append_new(out, nt);
    }
    if (json_array_size(out) > 0)
        json_object_set(c, "tools", out);
    json_decref(out);
    json_t *choice = fe_params_typed(body, "tool_choice", FE_P_STRING | FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_string(choice))
        json_object_set(c, "tool_choice", choice);
    else if (json_is_object(choice)) {
        json_t *name = json_object_get(json_object_get(choice, "function"), "name");
        if (!json_is_string(name)) {
            fe_params_invalid(err, "tool_choice", "Invalid value for 'tool_choice': function.name is required.");
            return -1;
        }
        json_object_set_new(c, "tool_choice", json_pack("{s:s, s:O}", "type", "function", "name", name));
    }
    return fe_params_copy(body, "parallel_tool_calls", FE_P_BOOL, 0, 0, c, "parallel_tool_calls", err);
}

static int fe_chat_response_format(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *rf = fe_params_typed(body, "response_format", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (!json_is_object(rf))
        return 0;
    const char *type = json_string_value(json_object_get(rf, "type"));
    if (type && !strcmp(type, "text"))
        return 0;
    if (type && !strcmp(type, "json_object")) {
        json_object_set_new(c, "text", json_pack("{s:{s:s}}", "format", "type", "json_object"));
        return 0;
    }
    json_t *js = json_object_get(rf, "json_schema");
    if (type && !strcmp(type, "json_schema") && json_is_string(json_object_get(js, "name"))) {
        json_t *fmt = json_pack("{s:s, s:O, s:b}", "type", "json_schema", "name", json_object_get(js, "name"), "strict",
                                json_is_true(json_object_get(js, "strict")));
        if (json_object_get(js, "schema"))
            json_object_set(fmt, "schema", json_object_get(js, "schema"));
        json_object_set_new(c, "text", json_pack("{s:o}", "format", fmt));
        return 0;
    }
    fe_params_invalid(err, "response_format",
                      "Invalid value for 'response_format': expected type 'text', 'json_object' or 'json_schema' "
                      "with json_schema.name.");
    return -1;
}

static int fe_chat_parse(fe_request_t *r, json_t *body, fe_error_t *err)
{
    if (fe_params_only(body, fe_chat_params, "Unrecognized request argument supplied: %s", err) < 0)
        return -1;
    const char *model = fe_params_required_string(body, "model", err);
    if (!model)
        return -1;
    r->model_id = sb_xstrdup(model);
    json_t *messages = fe_params_require(body, "messages", err);
    if (!messages)
        return -1;
    if (!json_is_array(messages) || json_array_size(messages) == 0) {
        fe_params_invalid(err, "messages", "Invalid value for 'messages': expected a non-empty array.");
        return -1;
    }
    json_t *stream = fe_params_typed(body, "stream", FE_P_BOOL | FE_P_NULL, err);
    json_t *n = fe_params_typed(body, "n", FE_P_INT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_true(stream)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "stream",
                     "unsupported parameter: 'stream' is not available on this gateway yet.");
        return -1;
    }
    if (json_is_integer(n) && json_integer_value(n) != 1) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "n",
                     "unsupported parameter: 'n' other than 1 is not available on this gateway yet.");
        return -1;
    }
    json_t *c = json_object();
    r->canonical = c;
    json_t *items = json_array();
    json_object_set_new(c, "input", items);
    if (fe_chat_messages(messages, items, err) < 0 || fe_chat_tools(body, c, err) < 0 ||
        fe_chat_response_format(body, c, err) < 0)
        return -1;
    json_t *max = json_object_get(body, "max_completion_tokens") ? json_object_get(body, "max_completion_tokens")
                                                                 : json_object_get(body, "max_tokens");
    if (max && !json_is_null(max)) {
        if (!json_is_integer(max) || json_integer_value(max) < 1) {
            fe_params_invalid(err, "max_tokens", "Invalid value for 'max_tokens': expected a positive integer.");
            return -1;
        }
        json_object_set(c, "max_output_tokens", max);
    }
    json_t *stop = fe_params_typed(body, "stop", FE_P_STRING | FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_string(stop))
        json_object_set_new(c, "stop", json_pack("[O]", stop));
    else if (json_is_array(stop))
        json_object_set(c, "stop", stop);
    if (fe_params_copy(body, "temperature", FE_P_NUMBER, 0, 2, c, "temperature", err) < 0 ||
        fe_params_copy(body, "top_p", FE_P_NUMBER, 0, 1, c, "top_p", err) < 0 ||
        fe_params_copy(body, "seed", FE_P_INT, 0, 0, c, "seed", err) < 0 ||
        fe_params_copy(body, "user", FE_P_STRING, 0, 0, c, "user", err) < 0 ||
        fe_params_copy(body, "metadata", FE_P_OBJECT, 0, 0, c, "metadata", err) < 0)
        return -1;
    json_t *effort = fe_params_typed(body, "reasoning_effort", FE_P_STRING | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_string(effort))
        json_object_set_new(c, "reasoning", json_pack("{s:O}", "effort", effort));
    /* Chat completions are not retrievable yet, so nothing is stored. */
    r->store = false;
    return 0;
}

static json_t *fe_chat_render(fe_request_t *r)
{
    const fe_collect_t *res = &r->result;
    json_t *tool_calls = json_array();
    json_t *content = NULL, *refusal = NULL;
    size_t i;
    json_t *it;
    json_array_foreach(res->items, i, it)
    {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (type && !strcmp(type, "function_call")) {
            json_array_append_new(tool_calls,
                                  json_pack("{s:O, s:s, s:{s:O, s:O}}", "id", json_object_get(it, "call_id"), "type",
                                            "function", "function", "name", json_object_get(it, "name"), "arguments",
                                            json_object_get(it, "arguments")));
        } else if (type && !strcmp(type, "message")) {
            size_t j;
            json_t *p;
            json_array_foreach(json_object_get(it, "content"), j, p)
            {
                const char *pt = json_string_value(json_object_get(p, "type"));
                json_t *text = json_object_get(p, pt && !strcmp(pt, "refusal") ? "refusal" : "text");
                if (!json_is_string(text))
                    continue;
                json_t **dst = pt && !strcmp(pt, "refusal") ? &refusal : &content;
                if (!*dst)
                    *dst = json_string("");
                size_t a = json_string_length(*dst), b = json_string_length(text);
                char *buf = sb_xmalloc(a + b + 1);
                memcpy(buf, json_string_value(*dst), a);
                memcpy(buf + a, json_string_value(text), b);
                json_string_setn(*dst, buf, a + b);
                free(buf);
            }
        }
    }
    const char *finish = json_array_size(tool_calls) > 0 ? "tool_calls"
                         : !strcmp(res->status, "incomplete")
                             ? (!strcmp(res->incomplete_reason, "content_filter") ? "content_filter" : "length")
                             : "stop";
    json_t *message = json_pack("{s:s, s:o, s:o}", "role", "assistant", "content", content ? content : json_null(),
                                "refusal", refusal ? refusal : json_null());
    if (json_array_size(tool_calls) > 0)
        json_object_set(message, "tool_calls", tool_calls);
    json_decref(tool_calls);
    char id[SB_ID_MAX];
    sb_id_new(id, sizeof id, "chatcmpl-", 16);
    return json_pack("{s:s, s:s, s:I, s:s, s:[{s:i, s:o, s:n, s:s}], s:{s:I, s:I, s:I, s:{s:i}, s:{s:I}}, s:n}", "id",
                     id, "object", "chat.completion", "created", (json_int_t)(r->start_ms / 1000), "model",
                     res->model[0] ? res->model : r->model_id, "choices", "index", 0, "message", message, "logprobs",
                     "finish_reason", finish, "usage", "prompt_tokens", (json_int_t)res->input_tokens,
                     "completion_tokens", (json_int_t)res->output_tokens, "total_tokens",
                     (json_int_t)(res->input_tokens + res->output_tokens), "prompt_tokens_details", "cached_tokens", 0,
                     "completion_tokens_details", "reasoning_tokens", (json_int_t)res->reasoning_tokens,
                     "system_fingerprint");
}

const fe_style_t fe_style_chat = {
    .name = "chat",
    .key = fe_bearer_key,
    .error_body = fe_chat_error_body,
    .parse = fe_chat_parse,
    .render = fe_chat_render,
};
