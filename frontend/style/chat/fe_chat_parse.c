/*
 * fe_chat_parse: the Chat Completions style (POST /v1/chat/completions),
 * its entry: messages -> canonical items (tool calls and tool results become
 * function_call / function_call_output items), tools, response_format and
 * sampling -> the canonical request. Function tools here are externally
 * tagged and non-strict by default. The result is rendered as a
 * chat.completion by fe_chat_render.c, streamed by fe_stream_chat.c.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_chat_render.h"
#include "fe_chat_store.h"
#include "fe_features.h"
#include "fe_items.h"
#include "fe_openai.h"
#include "fe_params.h"
#include "fe_structured.h"
#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

static const char *const fe_chat_params[] = {"model",
                                             "messages",
                                             "n",
                                             "response_format",
                                             "tools",
                                             "tool_choice",
                                             "functions",
                                             "function_call",
                                             "parallel_tool_calls",
                                             "max_tokens",
                                             "max_completion_tokens",
                                             "temperature",
                                             "top_p",
                                             "stop",
                                             "seed",
                                             "user",
                                             "metadata",
                                             "store",
                                             "reasoning_effort",
                                             "stream",
                                             "stream_options",
                                             "frequency_penalty",
                                             "presence_penalty",
                                             "logprobs",
                                             "top_logprobs",
                                             "logit_bias",
                                             "service_tier",
                                             "prompt_cache_key",
                                             "safety_identifier",
                                             "modalities",
                                             "audio",
                                             "verbosity",
                                             NULL};

/* One chat content part as a canonical part: text, image_url, input_audio,
 * file (user side) or refusal (assistant side). */
static json_t *fe_chat_part(const json_t *p, bool assistant, const char *param, fe_error_t *err)
{
    const char *type = json_string_value(json_object_get(p, "type"));
    const char *text_type = assistant ? "output_text" : "input_text";
    if (type && !strcmp(type, "text") && json_is_string(json_object_get(p, "text")))
        return json_pack("{s:s, s:O}", "type", text_type, "text", json_object_get(p, "text"));
    if (type && !strcmp(type, "refusal") && assistant && json_is_string(json_object_get(p, "refusal")))
        return json_pack("{s:s, s:O}", "type", "refusal", "refusal", json_object_get(p, "refusal"));
    if (!assistant && type && !strcmp(type, "image_url")) {
        json_t *iu = json_object_get(p, "image_url");
        json_t *conv = json_pack("{s:s, s:O?, s:O?}", "type", "input_image", "image_url", json_object_get(iu, "url"),
                                 "detail", json_object_get(iu, "detail"));
        json_t *out = fe_items_normalize_part(conv, param, err);
        json_decref(conv);
        return out;
    }
    if (!assistant && type && !strcmp(type, "input_audio")) {
        json_t *a = json_object_get(p, "input_audio");
        const char *fmt = json_string_value(json_object_get(a, "format"));
        if (!json_is_string(json_object_get(a, "data")) || !fmt ||
            (strcmp(fmt, "wav") != 0 && strcmp(fmt, "mp3") != 0)) {
            fe_params_invalid(err, param,
                              "Invalid value for '%s.input_audio': expected {data: base64, format: 'wav' "
                              "or 'mp3'}.",
                              param);
            return NULL;
        }
        return json_pack("{s:s, s:{s:O, s:s}}", "type", "input_audio", "input_audio", "data",
                         json_object_get(a, "data"), "format", fmt);
    }
    if (!assistant && type && !strcmp(type, "file")) {
        json_t *f = json_object_get(p, "file");
        json_t *conv =
            json_pack("{s:s, s:O?, s:O?, s:O?}", "type", "input_file", "file_id", json_object_get(f, "file_id"),
                      "file_data", json_object_get(f, "file_data"), "filename", json_object_get(f, "filename"));
        json_t *out = fe_items_normalize_part(conv, param, err);
        json_decref(conv);
        return out;
    }
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                 "unsupported parameter: content part type '%.40s' in '%s'.", type ? type : "(none)", param);
    return NULL;
}

/* A chat content value (string, or array of parts) as canonical parts. */
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
    json_array_foreach (content, j, p) {
        char pparam[96];
        snprintf(pparam, sizeof pparam, "%s[%zu]", param, j);
        json_t *np = fe_chat_part(p, assistant, pparam, err);
        if (!np) {
            json_decref(parts);
            return NULL;
        }
        json_array_append_new(parts, np);
    }
    return parts;
}

/* A system, developer, user or tool message must say something: OpenAI
 * answers content null (or absent) and an empty parts array with a 400, in
 * these words, rather than sending the model an empty turn. Only assistant
 * messages may leave content out (when they carry tool calls). */
static int fe_chat_content_required(const json_t *content, size_t i, fe_error_t *err)
{
    char param[48];
    if (!content) {
        snprintf(param, sizeof param, "messages[%zu].content", i);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", param,
                     "Missing required parameter: '%s'.", param);
        return -1;
    }
    if (json_is_null(content)) {
        /* OpenAI's own param spelling for this one is "messages.[i].content". */
        snprintf(param, sizeof param, "messages.[%zu].content", i);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "", param,
                     "Invalid value for 'content': expected a string, got null.");
        return -1;
    }
    if (json_is_array(content) && json_array_size(content) == 0) {
        snprintf(param, sizeof param, "messages[%zu].content", i);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "empty_array", param,
                     "Invalid '%s': empty array. Expected an array with minimum length 1, but got an empty array "
                     "instead.",
                     param);
        return -1;
    }
    return 0;
}

static int fe_chat_messages(const json_t *messages, json_t *items, fe_error_t *err)
{
    size_t i;
    json_t *m;
    json_array_foreach (messages, i, m) {
        char param[48];
        snprintf(param, sizeof param, "messages[%zu]", i);
        const char *role = json_string_value(json_object_get(m, "role"));
        if (!json_is_object(m) || !role) {
            fe_params_invalid(err, param, "Invalid value for '%s': expected an object with a 'role'.", param);
            return -1;
        }
        json_t *content = json_object_get(m, "content");
        if ((!strcmp(role, "system") || !strcmp(role, "developer") || !strcmp(role, "user") || !strcmp(role, "tool")) &&
            fe_chat_content_required(content, i, err) < 0)
            return -1;
        if (!strcmp(role, "system") || !strcmp(role, "developer") || !strcmp(role, "user")) {
            json_t *parts = fe_chat_parts(content, false, i, err);
            if (!parts)
                return -1;
            json_array_append_new(items,
                                  json_pack("{s:s, s:s, s:o}", "type", "message", "role", role, "content", parts));
        } else if (!strcmp(role, "assistant")) {
            /* An assistant may leave content out or null (tool calls only),
             * but an empty array is refused as for every role. */
            if (json_is_array(content) && json_array_size(content) == 0 &&
                fe_chat_content_required(content, i, err) < 0)
                return -1;
            json_t *parts = fe_chat_parts(content, true, i, err);
            if (!parts)
                return -1;
            if (json_array_size(parts) > 0)
                json_array_append_new(
                    items, json_pack("{s:s, s:s, s:o}", "type", "message", "role", "assistant", "content", parts));
            else
                json_decref(parts);
            json_t *calls = json_object_get(m, "tool_calls");
            size_t k;
            json_t *tc;
            json_array_foreach (calls, k, tc) {
                json_t *fn = json_object_get(tc, "function");
                if (!json_is_string(json_object_get(tc, "id")) || !json_is_string(json_object_get(fn, "name"))) {
                    fe_params_invalid(err, param, "Invalid tool call in '%s': id and function.name are required.",
                                      param);
                    return -1;
                }
                json_t *args = json_object_get(fn, "arguments");
                json_array_append_new(items,
                                      json_pack("{s:s, s:O, s:O, s:s}", "type", "function_call", "call_id",
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
            json_array_foreach (parts, k, p)
                total += json_string_length(json_object_get(p, "text"));
            char *buf = sb_xmalloc(total + 1);
            size_t off = 0;
            json_array_foreach (parts, k, p) {
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

/* tools [{type:function, function:{...}}] and legacy functions -> canonical
 * tools. Built-in tools are Responses-only. */
static int fe_chat_tools(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *tools = fe_params_typed(body, "tools", FE_P_ARRAY | FE_P_NULL, err);
    json_t *functions = fe_params_typed(body, "functions", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char param[48];
        snprintf(param, sizeof param, "tools[%zu]", i);
        const char *type = json_string_value(json_object_get(t, "type"));
        json_t *nt = NULL;
        if (type && !strcmp(type, "function") && json_is_object(json_object_get(t, "function"))) {
            strncat(param, ".function", sizeof param - strlen(param) - 1);
            nt = fe_structured_function(json_object_get(t, "function"), FE_STRICT_OFF, param, err);
        } else if (fe_features_builtin_tool(type)) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                         "unsupported parameter: the built-in tool '%.40s' is only supported in the Responses API.",
                         type);
        } else {
            fe_params_invalid(err, param,
                              "Invalid value for '%s': expected {\"type\":\"function\",\"function\":{...}}.", param);
        }
        if (!nt) {
            json_decref(out);
            return -1;
        }
        json_array_append_new(out, nt);
    }
    json_array_foreach (functions, i, t) {
        char param[48];
        snprintf(param, sizeof param, "functions[%zu]", i);
        json_t *nt = fe_structured_function(t, FE_STRICT_OFF, param, err);
        if (!nt) {
            json_decref(out);
            return -1;
        }
        json_array_append_new(out, nt);
    }
    if (json_array_size(out) > 0)
        json_object_set(c, "tools", out);
    json_t *choice = fe_params_typed(body, "tool_choice", FE_P_STRING | FE_P_OBJECT | FE_P_NULL, err);
    json_t *fcall = fe_params_typed(body, "function_call", FE_P_STRING | FE_P_OBJECT | FE_P_NULL, err);
    if (err->status) {
        json_decref(out);
        return -1;
    }
    if (!choice)
        choice = fcall; /* legacy: "none" | "auto" | {"name"} */
    int rc = fe_structured_tool_choice(choice, out, c, err);
    json_decref(out);
    if (rc < 0)
        return -1;
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
    json_t *fmt;
    if (type && !strcmp(type, "json_schema")) {
        json_t *js = json_object_get(rf, "json_schema");
        if (!json_is_object(js)) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "response_format.json_schema",
                         "Missing required parameter: 'response_format.json_schema'.");
            return -1;
        }
        json_t *flat = json_deep_copy(js);
        json_object_set_new(flat, "type", json_string("json_schema"));
        fmt = fe_structured_format(flat, "response_format.json_schema", err);
        json_decref(flat);
    } else {
        fmt = fe_structured_format(rf, "response_format", err);
    }
    if (!fmt)
        return -1;
    json_object_set_new(c, "text", json_pack("{s:o}", "format", fmt));
    return 0;
}

/* Responses-only features and other styles' bodies get a clear 400. */
static int fe_chat_foreign_params(const json_t *body, fe_error_t *err)
{
    static const struct {
        const char *param, *why;
    } foreign[] = {
        {"input", "'input' belongs to the Responses API; Chat Completions takes 'messages'."},
        {"contents", "'contents' belongs to Generate Content; Chat Completions takes 'messages'."},
        {"instructions", "'instructions' belongs to the Responses API; send a system or developer message."},
        {"previous_response_id", "'previous_response_id' belongs to the Responses API; Chat Completions keeps no "
                                 "conversation state."},
        {"web_search_options", "web search is only supported in the Responses API."},
        {"reasoning", "reasoning summaries are only supported in the Responses API; use 'reasoning_effort'."},
        {"text", "'text' belongs to the Responses API; use 'response_format'."},
        {"include", "'include' belongs to the Responses API."},
    };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
        if (json_object_get(body, foreign[i].param)) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", foreign[i].param,
                         "unsupported parameter: %s", foreign[i].why);
            return -1;
        }
    }
    return 0;
}

static int fe_chat_sampling(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *max = json_object_get(body, "max_completion_tokens") ? json_object_get(body, "max_completion_tokens")
                                                                 : json_object_get(body, "max_tokens");
    if (max && !json_is_null(max)) {
        if (!json_is_integer(max) || json_integer_value(max) < 1) {
            fe_params_invalid(err,
                              json_object_get(body, "max_completion_tokens") ? "max_completion_tokens" : "max_tokens",
                              "Invalid value for 'max_tokens': expected a positive integer.");
            return -1;
        }
        json_object_set(c, "max_output_tokens", max);
    }
    json_t *stop = fe_params_typed(body, "stop", FE_P_STRING | FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_array(stop)) {
        size_t i;
        json_t *s;
        bool ok = json_array_size(stop) <= 4;
        json_array_foreach (stop, i, s)
            ok = ok && json_is_string(s);
        if (!ok) {
            fe_params_invalid(err, "stop",
                              "Invalid value for 'stop': expected a string or an array of at most 4 "
                              "strings.");
            return -1;
        }
        if (json_array_size(stop) > 0)
            json_object_set(c, "stop", stop);
    } else if (json_is_string(stop)) {
        json_object_set_new(c, "stop", json_pack("[O]", stop));
    }
    /* Types first, as OpenAI checks them: top_logprobs {} is a wrong type
     * (400 invalid_type), not an empty value. */
    json_t *logprobs = fe_params_typed(body, "logprobs", FE_P_BOOL | FE_P_NULL, err);
    if (err->status)
        return -1;
    fe_params_typed(body, "top_logprobs", FE_P_INT | FE_P_NULL, err);
    if (err->status)
        return -1;
    fe_params_typed(body, "logit_bias", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    /* Not carried through the gateway: refused rather than silently dropped. */
    static const char *const unsupported[] = {"top_logprobs", "logit_bias"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        json_t *v = json_object_get(body, unsupported[i]);
        /* logit_bias {} biases nothing, so it is accepted. */
        if (v && !json_is_null(v) && !(json_is_object(v) && json_object_size(v) == 0)) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", unsupported[i],
                         "unsupported parameter: '%s' is not available on this gateway.", unsupported[i]);
            return -1;
        }
    }
    if (json_is_true(logprobs)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "logprobs",
                     "unsupported parameter: 'logprobs' is not available on this gateway.");
        return -1;
    }
    if (fe_params_copy(body, "temperature", FE_P_NUMBER, 0, 2, c, "temperature", err) < 0 ||
        fe_params_copy(body, "top_p", FE_P_NUMBER, 0, 1, c, "top_p", err) < 0 ||
        fe_params_copy(body, "frequency_penalty", FE_P_NUMBER, -2, 2, c, "frequency_penalty", err) < 0 ||
        fe_params_copy(body, "presence_penalty", FE_P_NUMBER, -2, 2, c, "presence_penalty", err) < 0 ||
        fe_params_copy(body, "seed", FE_P_INT, 0, 0, c, "seed", err) < 0 ||
        fe_params_copy(body, "user", FE_P_STRING, 0, 0, c, "user", err) < 0 || fe_params_metadata(body, c, err) < 0)
        return -1;
    json_t *effort = fe_params_typed(body, "reasoning_effort", FE_P_STRING | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_string(effort)) {
        static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max"};
        bool ok = false;
        for (size_t i = 0; i < sizeof efforts / sizeof efforts[0]; i++)
            ok |= !strcmp(json_string_value(effort), efforts[i]);
        if (!ok) {
            fe_params_invalid(err, "reasoning_effort",
                              "Invalid value: '%.40s'. Supported values are: 'none', "
                              "'minimal', 'low', 'medium', 'high', 'xhigh' and 'max'.",
                              json_string_value(effort));
            return -1;
        }
        json_object_set_new(c, "reasoning", json_pack("{s:O}", "effort", effort));
    }
    return 0;
}

static int fe_chat_parse(const fe_style_in_t *in, json_t *body, fe_parsed_t *out, fe_error_t *err)
{
    if (fe_chat_foreign_params(body, err) < 0 ||
        fe_params_only(body, fe_chat_params, "Unrecognized request argument supplied: %s", err) < 0)
        return -1;
    const char *model = fe_params_required_string(body, "model", err);
    if (!model)
        return -1;
    out->model_id = sb_xstrdup(model);
    json_t *messages = fe_params_require(body, "messages", err);
    if (!messages)
        return -1;
    if (!json_is_array(messages) || json_array_size(messages) == 0) {
        fe_params_invalid(err, "messages", "Invalid value for 'messages': expected a non-empty array.");
        return -1;
    }
    json_t *stream = fe_params_typed(body, "stream", FE_P_BOOL | FE_P_NULL, err);
    json_t *stream_options = fe_params_typed(body, "stream_options", FE_P_OBJECT | FE_P_NULL, err);
    json_t *n = fe_params_typed(body, "n", FE_P_INT | FE_P_NULL, err);
    json_t *store = fe_params_typed(body, "store", FE_P_BOOL | FE_P_NULL, err);
    json_t *modalities = fe_params_typed(body, "modalities", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    out->stream = json_is_true(stream);
    if (json_is_object(stream_options) && !out->stream) {
        fe_params_invalid(err, "stream_options",
                          "The 'stream_options' parameter is only allowed when 'stream' is "
                          "enabled.");
        return -1;
    }
    if (json_is_object(stream_options)) {
        json_t *usage = fe_params_typed(stream_options, "include_usage", FE_P_BOOL | FE_P_NULL, err);
        if (err->status) {
            snprintf(err->param, sizeof err->param, "stream_options.include_usage");
            return -1;
        }
        if (json_is_true(usage))
            json_object_set_new(out->style_state, "include_usage", json_true());
    }
    if (json_is_integer(n) && (json_integer_value(n) < 1 || json_integer_value(n) > 16)) {
        fe_params_invalid(err, "n", "Invalid value for 'n': expected an integer from 1 to 16.");
        return -1;
    }
    out->n = json_is_integer(n) ? (int)json_integer_value(n) : 1;
    size_t i;
    json_t *m;
    json_array_foreach (modalities, i, m) {
        if (!json_is_string(m) || strcmp(json_string_value(m), "text") != 0) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "modalities",
                         "unsupported parameter: audio output is not supported on this gateway; audio input parts "
                         "are.");
            return -1;
        }
    }
    if (json_object_get(body, "audio") && !json_is_null(json_object_get(body, "audio"))) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "audio",
                     "unsupported parameter: audio output is not supported on this gateway; audio input parts are.");
        return -1;
    }
    json_t *c = json_object();
    out->canonical = c;
    json_t *items = json_array();
    json_object_set_new(c, "input", items);
    if (fe_chat_messages(messages, items, err) < 0 || fe_chat_tools(body, c, err) < 0 ||
        fe_chat_response_format(body, c, err) < 0 || fe_chat_sampling(body, c, err) < 0)
        return -1;
    /* Stored by default, retrievable with GET /v1/chat/completions/{id}. */
    if (json_is_false(store))
        out->store = false;
    sb_id_new_ordered(out->response_id, sizeof out->response_id, "chatcmpl-", 24);
    return 0;
}

const fe_style_t fe_style_chat = {
    .name = "chat",
    .key_hint = "'Authorization: Bearer <API_KEY>'",
    .max_tokens_param = "max_tokens",
    .input_param = "messages",
    .format_param = "response_format",
    .effort_param = "reasoning_effort",
    .parts_param = "messages",
    .key = fe_openai_bearer_key,
    .error_body = fe_openai_error_body,
    .parse = fe_chat_parse,
    .render = fe_chat_render,
    .store = fe_chat_store_save,
    .stream = &fe_stream_chat,
};
