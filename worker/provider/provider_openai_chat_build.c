/*
 * provider_openai_chat_build: the openai-chat adapter's request side
 * (provider_openai_chat.h), and its vtable.
 *
 * Canonical (Responses-shaped) job -> chat request:
 *   instructions                 -> first {"role":"system"} message
 *   message items                -> messages with the same role; all-text
 *                                   content becomes one string
 *   function_call items          -> tool_calls on an assistant message
 *   function_call_output items   -> {"role":"tool"} messages
 *   reasoning items              -> dropped (chat cannot take them back)
 *   input_image / input_audio    -> image_url / input_audio parts
 *   input_file                   -> a "text" part "<filename>:\n<content>" for
 *                                   text files (text/..., application/json, or
 *                                   .txt/.md/.csv/.json as octet-stream), else
 *                                   a "file" part (PDFs): chat upstreams take
 *                                   no other file types
 *   refusal parts (assistant)    -> assistant content parts {"type":"refusal"}
 *   text.format, reasoning.effort -> response_format, reasoning_effort
 *   n                            -> n, unless route.capabilities.n is false
 *   stream                       -> stream, with stream_options.include_usage
 *                                   (else a stream carries no usage); never
 *                                   for a count job
 * metadata is never sent.
 *
 * No token-count hooks: neither OpenAI Chat nor vLLM, llama.cpp or Ollama has
 * a counting endpoint, so a count job goes out as a generation with
 * max_tokens 1 (sb_provider_count_job) and its prompt_tokens is the count:
 * exact as the upstream counts, and it costs one output token.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* sb_provider_t, for the vtable */
#include "provider_openai_chat.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_item.h"
#include "sb_job.h"

/* True when every part is text, so the content can be one plain string (the
 * only form some compatible servers accept for system/assistant turns).
 * Canonical parts are input_text/output_text, chat parts "text". */
static bool sb_chat_parts_all_text(const json_t *parts, bool chat)
{
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        bool text = t && (chat ? !strcmp(t, "text") : (!strcmp(t, "input_text") || !strcmp(t, "output_text")));
        if (!text || !json_is_string(json_object_get(part, "text")))
            return false;
    }
    return true;
}

/* Joins the `key` strings of parts with "\n", as vLLM itself joins an
 * array of text parts. */
static json_t *sb_chat_join(const json_t *parts, const char *key)
{
    size_t total = 0, i;
    const json_t *part;
    json_array_foreach (parts, i, part)
        total += json_string_length(json_object_get(part, key)) + 1;
    char *buf = sb_xmalloc(total + 1);
    size_t pos = 0;
    json_array_foreach (parts, i, part) {
        const json_t *t = json_object_get(part, key);
        if (i > 0)
            buf[pos++] = '\n';
        memcpy(buf + pos, json_string_value(t), json_string_length(t));
        pos += json_string_length(t);
    }
    json_t *s = json_stringn(buf, pos);
    free(buf);
    return s;
}

/* An input_file part -> a chat "file" part, or for a text file a "text" part
 * "<filename>:\n<content>". */
static json_t *sb_chat_file_part(const json_t *part, size_t index, json_t **err)
{
    const json_t *data = json_object_get(part, "file_data");
    const char *filename = json_string_value(json_object_get(part, "filename"));
    char mime[128];
    const char *payload;
    if (json_is_string(data) && sb_provider_data_url(json_string_value(data), mime, sizeof mime, &payload) == 0 &&
        sb_provider_is_text_file(mime, filename)) {
        const char *name = filename && *filename ? filename : "file";
        size_t n;
        char *bytes = (char *)sb_base64_decode(payload, strlen(payload), &n);
        if (!bytes) {
            *err =
                sb_provider_invalid("input_file '%s' (content part %zu) has malformed base64 file_data", name, index);
            return NULL;
        }
        size_t name_len = strlen(name);
        char *text = sb_xmalloc(name_len + 2 + n);
        memcpy(text, name, name_len);
        memcpy(text + name_len, ":\n", 2);
        memcpy(text + name_len + 2, bytes, n);
        json_t *t = json_stringn(text, name_len + 2 + n); /* NULL unless valid UTF-8 */
        free(text);
        free(bytes);
        if (!t) {
            *err = sb_provider_invalid("input_file '%s' (content part %zu) is not UTF-8 text", name, index);
            return NULL;
        }
        return json_pack("{s:s, s:o}", "type", "text", "text", t);
    }
    json_t *file = json_object();
    static const char *const keys[] = {"file_id", "file_data", "filename"};
    for (size_t k = 0; k < 3; k++) {
        const json_t *v = json_object_get(part, keys[k]);
        if (json_is_string(v))
            json_object_set(file, keys[k], (json_t *)v);
    }
    if (json_object_size(file) == 0) {
        json_decref(file);
        *err = sb_provider_invalid("input_file (content part %zu) has neither file_data nor file_id", index);
        return NULL;
    }
    return json_pack("{s:s, s:o}", "type", "file", "file", file);
}

/* Canonical content parts -> chat content (string or array of parts).
 * Refusal parts are kept only in an assistant turn (assistant true). */
static int sb_chat_content(const json_t *parts, json_t **out, bool assistant, json_t **err)
{
    *out = NULL;
    if (json_is_string(parts)) { /* not normalized, but unambiguous */
        *out = json_copy((json_t *)parts);
        return 0;
    }
    if (!json_is_array(parts)) {
        *err = sb_provider_invalid("message content must be an array of parts");
        return -EINVAL;
    }
    if (sb_chat_parts_all_text(parts, false)) { /* the common case, without a copy of each part */
        *out = sb_chat_join(parts, "text");
        return 0;
    }
    json_t *arr = json_array();
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        json_t *o = NULL; /* stays NULL for a part chat cannot carry */
        switch (sb_part_type_of(part)) {
        case SB_PART_INPUT_TEXT:
        case SB_PART_OUTPUT_TEXT: {
            const json_t *text = json_object_get(part, "text");
            if (!json_is_string(text)) {
                *err = sb_provider_invalid("content part %zu has no text", i);
                goto fail;
            }
            o = json_pack("{s:s, s:O}", "type", "text", "text", text);
            break;
        }
        case SB_PART_INPUT_IMAGE: {
            const json_t *url = json_object_get(part, "image_url");
            if (!json_is_string(url)) {
                *err = sb_provider_invalid("input_image without image_url is not supported by provider " SB_CHAT_KIND);
                goto fail;
            }
            json_t *img = json_pack("{s:O}", "url", url);
            const json_t *detail = json_object_get(part, "detail");
            if (json_is_string(detail))
                json_object_set(img, "detail", (json_t *)detail);
            o = json_pack("{s:s, s:o}", "type", "image_url", "image_url", img);
            break;
        }
        case SB_PART_INPUT_FILE:
            if (!(o = sb_chat_file_part(part, i, err)))
                goto fail;
            break;
        case SB_PART_INPUT_AUDIO: {
            const json_t *audio = json_object_get(part, "input_audio");
            const json_t *data = json_object_get(audio, "data");
            const json_t *format = json_object_get(audio, "format");
            if (!json_is_string(data) || !json_is_string(format)) {
                *err = sb_provider_invalid("input_audio (content part %zu) needs input_audio.data and .format", i);
                goto fail;
            }
            o = json_pack("{s:s, s:{s:O, s:O}}", "type", "input_audio", "input_audio", "data", data, "format", format);
            break;
        }
        case SB_PART_REFUSAL: {
            if (!assistant)
                break; /* only an assistant turn refuses */
            const json_t *r = json_object_get(part, "refusal");
            if (!json_is_string(r)) {
                *err = sb_provider_invalid("refusal part %zu has no refusal text", i);
                goto fail;
            }
            /* Kept in place as an assistant content part, as the API takes it:
             * a message whose only content is a refusal is still a message. */
            o = json_pack("{s:s, s:O}", "type", "refusal", "refusal", r);
            break;
        }
        default: /* reasoning parts, unknown types */
            break;
        }
        if (!o) {
            const char *t = json_string_value(json_object_get(part, "type"));
            *err = sb_provider_invalid("content part type '%s' is not supported by provider " SB_CHAT_KIND,
                                       t ? t : "(none)");
            goto fail;
        }
        json_array_append_new(arr, o);
    }
    if (sb_chat_parts_all_text(arr, true)) { /* text files made it all text */
        *out = sb_chat_join(arr, "text");
        json_decref(arr);
    } else {
        *out = arr;
    }
    return 0;
fail:
    json_decref(arr);
    return -EINVAL;
}

/* function_call_output.output -> tool message content (a string). */
static int sb_chat_tool_output(const json_t *output, json_t **out, json_t **err)
{
    if (json_is_string(output)) {
        *out = json_copy((json_t *)output);
        return 0;
    }
    if (json_is_array(output)) {
        if (!sb_chat_parts_all_text(output, false)) {
            *err = sb_provider_invalid(
                "function_call_output with non-text content is not supported by provider " SB_CHAT_KIND);
            return -EINVAL;
        }
        *out = sb_chat_join(output, "text");
        return 0;
    }
    if (!output || json_is_null(output)) {
        *out = json_string("");
        return 0;
    }
    char *s = json_dumps(output, JSON_COMPACT | JSON_ENCODE_ANY);
    *out = json_string(s ? s : "");
    free(s);
    return 0;
}

/* Adds one function_call item (call_id and name are strings: sb_job_check)
 * as a tool call: onto the directly preceding assistant message (a run of
 * calls, or a text turn that led to them), else onto a new assistant
 * message. */
static void sb_chat_add_tool_call(json_t *messages, json_t **last, const json_t *item)
{
    const json_t *call_id = json_object_get(item, "call_id");
    const json_t *name = json_object_get(item, "name");
    const json_t *args = json_object_get(item, "arguments");
    json_t *arguments;
    if (json_is_string(args)) {
        arguments = json_copy((json_t *)args);
    } else if (!args || json_is_null(args)) {
        arguments = json_string("{}");
    } else {
        char *s = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
        arguments = json_string(s ? s : "{}");
        free(s);
    }
    json_t *tc = json_pack("{s:O, s:s, s:{s:O, s:o}}", "id", call_id, "type", "function", "function", "name", name,
                           "arguments", arguments);
    const char *role = json_string_value(json_object_get(*last, "role"));
    if (role && !strcmp(role, "assistant")) {
        json_t *tcs = json_object_get(*last, "tool_calls");
        if (!tcs) {
            tcs = json_array();
            json_object_set_new(*last, "tool_calls", tcs);
        }
        json_array_append_new(tcs, tc);
        return;
    }
    json_t *m = json_pack("{s:s, s:n, s:[o]}", "role", "assistant", "content", "tool_calls", tc);
    json_array_append_new(messages, m);
    *last = m;
}

/* request.input -> chat messages. The job's shape was checked on receipt
 * (sb_job_check: input an array, every item typed, a message's role known,
 * a call's call_id and name): what is refused here is what chat cannot
 * carry. */
static json_t *sb_chat_messages(const json_t *request, json_t **err)
{
    json_t *messages = json_array();
    json_t *last = NULL; /* the message most recently appended, borrowed */
    const json_t *instructions = json_object_get(request, "instructions");
    if (json_is_string(instructions) && json_string_length(instructions) > 0) {
        last = json_pack("{s:s, s:O}", "role", "system", "content", instructions);
        json_array_append_new(messages, last);
    }
    size_t i;
    const json_t *item;
    json_array_foreach (json_object_get(request, "input"), i, item) {
        switch (sb_item_type_of(item)) {
        case SB_ITEM_MESSAGE: {
            enum sb_role role = sb_role_of(item);
            json_t *content;
            if (sb_chat_content(json_object_get(item, "content"), &content, role == SB_ROLE_ASSISTANT, err) < 0)
                goto fail;
            last = json_pack("{s:s, s:o}", "role", sb_role_name(role), "content", content);
            json_array_append_new(messages, last);
            break;
        }
        case SB_ITEM_FUNCTION_CALL:
            sb_chat_add_tool_call(messages, &last, item);
            break;
        case SB_ITEM_FUNCTION_CALL_OUTPUT: {
            json_t *content;
            if (sb_chat_tool_output(json_object_get(item, "output"), &content, err) < 0)
                goto fail;
            last = json_pack("{s:s, s:O, s:o}", "role", "tool", "tool_call_id", json_object_get(item, "call_id"),
                             "content", content);
            json_array_append_new(messages, last);
            break;
        }
        case SB_ITEM_REASONING:
            break; /* chat cannot take reasoning back; `last` stays, so calls still merge */
        case SB_ITEM_UNKNOWN: {
            const char *type = json_string_value(json_object_get(item, "type"));
            *err = sb_provider_invalid("input item type '%s' is not supported by provider " SB_CHAT_KIND,
                                       type ? type : "(none)");
            goto fail;
        }
        }
    }
    return messages;
fail:
    json_decref(messages);
    return NULL;
}

static json_t *sb_chat_tools(const json_t *tools, json_t **err)
{
    json_t *out = json_array();
    size_t i;
    const json_t *tool;
    json_array_foreach (tools, i, tool) {
        const char *type = json_string_value(json_object_get(tool, "type"));
        /* A built-in tool (web_search...) is a valid request this upstream
         * cannot run: unsupported_parameter, as in the other adapters. */
        if (!type || strcmp(type, "function")) {
            *err = sb_provider_unsupported("tool type '%s' is not supported by provider " SB_CHAT_KIND,
                                           type ? type : "(none)");
            goto fail;
        }
        /* A function tool's name is a string (sb_job_check). */
        json_t *fn = json_pack("{s:O}", "name", json_object_get(tool, "name"));
        const json_t *v;
        if (json_is_string(v = json_object_get(tool, "description")))
            json_object_set(fn, "description", (json_t *)v);
        if (json_is_object(v = json_object_get(tool, "parameters")))
            json_object_set(fn, "parameters", (json_t *)v);
        if (json_is_boolean(v = json_object_get(tool, "strict")))
            json_object_set(fn, "strict", (json_t *)v);
        json_array_append_new(out, json_pack("{s:s, s:o}", "type", "function", "function", fn));
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

static int sb_chat_tool_choice(json_t *body, const json_t *tc, json_t **err)
{
    if (!tc || json_is_null(tc))
        return 0;
    if (json_is_string(tc)) {
        json_object_set(body, "tool_choice", (json_t *)tc);
        return 0;
    }
    const char *type = json_string_value(json_object_get(tc, "type"));
    const json_t *name = json_object_get(tc, "name");
    if (type && !strcmp(type, "function") && json_is_string(name)) {
        json_object_set_new(body, "tool_choice",
                            json_pack("{s:s, s:{s:O}}", "type", "function", "function", "name", name));
        return 0;
    }
    *err = sb_provider_invalid("tool_choice '%s' is not supported by provider " SB_CHAT_KIND, type ? type : "(none)");
    return -EINVAL;
}

static int sb_chat_response_format(json_t *body, const json_t *text, json_t **err)
{
    const json_t *format = json_object_get(text, "format");
    if (!format || json_is_null(format))
        return 0;
    const char *type = json_string_value(json_object_get(format, "type"));
    if (type && !strcmp(type, "text"))
        return 0;
    if (type && !strcmp(type, "json_object")) {
        json_object_set_new(body, "response_format", json_pack("{s:s}", "type", "json_object"));
        return 0;
    }
    if (type && !strcmp(type, "json_schema")) {
        const json_t *name = json_object_get(format, "name");
        const json_t *schema = json_object_get(format, "schema");
        if (!json_is_string(name) || !json_is_object(schema)) {
            *err = sb_provider_invalid("text.format json_schema needs name and schema");
            return -EINVAL;
        }
        json_t *js = json_pack("{s:O, s:O}", "name", name, "schema", schema);
        const json_t *v;
        if (json_is_string(v = json_object_get(format, "description")))
            json_object_set(js, "description", (json_t *)v);
        if (json_is_boolean(v = json_object_get(format, "strict")))
            json_object_set(js, "strict", (json_t *)v);
        json_object_set_new(body, "response_format", json_pack("{s:s, s:o}", "type", "json_schema", "json_schema", js));
        return 0;
    }
    *err = sb_provider_invalid("text.format '%s' is not supported by provider " SB_CHAT_KIND, type ? type : "(none)");
    return -EINVAL;
}

int sb_chat_build_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    *err = NULL;
    json_t *body = NULL;
    const json_t *request = sb_job_request(job);
    const char *upstream_model = sb_job_route_str(job, "upstream_model");
    if (!upstream_model || !*upstream_model) {
        *err = sb_provider_invalid("route has no upstream_model");
        goto fail;
    }
    req->url = sb_provider_url(job, "/chat/completions");
    if (!req->url) {
        *err = sb_provider_invalid("route has no base_url");
        goto fail;
    }
    const char *credential;
    if (sb_provider_credential(job, &credential, err) < 0)
        goto fail;

    body = json_pack("{s:s}", "model", upstream_model);
    json_t *messages = sb_chat_messages(request, err);
    if (!messages)
        goto fail;
    json_object_set_new(body, "messages", messages);

    /* Chat rejects an empty tools array, and tool_choice/parallel_tool_calls
     * without tools, where Responses accepts both: send them only with tools. */
    const json_t *tools = json_object_get(request, "tools"); /* absent, null or an array: sb_job_check */
    if (json_array_size(tools) > 0) {
        json_t *t = sb_chat_tools(tools, err);
        if (!t)
            goto fail;
        json_object_set_new(body, "tools", t);
        if (sb_chat_tool_choice(body, json_object_get(request, "tool_choice"), err) < 0)
            goto fail;
        const json_t *ptc = json_object_get(request, "parallel_tool_calls");
        if (json_is_boolean(ptc))
            json_object_set(body, "parallel_tool_calls", (json_t *)ptc);
    }
    if (sb_chat_response_format(body, json_object_get(request, "text"), err) < 0)
        goto fail;
    /* "max_tokens", not OpenAI's newer "max_completion_tokens": vLLM,
     * llama.cpp and Ollama all honour max_tokens, and OpenAI still accepts it
     * for every non-o-series model. A route to an o-series model belongs on
     * the openai-responses provider. */
    if (sb_provider_copy(body, request, "max_output_tokens", "max_tokens", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy(body, request, "temperature", "temperature", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "top_p", "top_p", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "frequency_penalty", "frequency_penalty", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "presence_penalty", "presence_penalty", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "stop", "stop", SB_PROVIDER_STOP, err) < 0 ||
        sb_provider_copy(body, request, "seed", "seed", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy_n(body, job, "n", err) < 0 ||
        sb_provider_copy(body, request, "user", "user", SB_PROVIDER_STRING, err) < 0)
        goto fail;
    /* top_k, a sampling hint Gemini CLI sends on every request: OpenAI
     * refuses it, vLLM, llama.cpp and Ollama take it. Carried only to a route
     * whose capabilities say "top_k": true; otherwise left out, as a
     * sampling hint the server has no setting for (docs/compatibility.md). */
    if (json_is_true(json_object_get(json_object_get(sb_job_route(job), "capabilities"), "top_k")) &&
        sb_provider_copy(body, request, "top_k", "top_k", SB_PROVIDER_INTEGER, err) < 0)
        goto fail;
    const json_t *effort = json_object_get(json_object_get(request, "reasoning"), "effort");
    if (json_is_string(effort))
        json_object_set(body, "reasoning_effort", (json_t *)effort);
    /* metadata is not sent: OpenAI chat only takes it with store=true, and the
     * compatible servers reject unknown fields unevenly. */
    /* A count job never streams (sb_provider_count_job drops stream; the
     * parser wants its usage from one whole body). */
    bool stream = !sb_job_is_count(job) && json_is_true(json_object_get(request, "stream"));
    json_object_set_new(body, "stream", json_boolean(stream));
    if (stream) /* else no usage comes: it is a last chunk of its own, only on request */
        json_object_set_new(body, "stream_options", json_pack("{s:b}", "include_usage", 1));

    if (sb_provider_request_set_json(req, body, stream, err) < 0)
        goto fail;
    if (credential)
        sb_provider_request_add_header(req, "Authorization: Bearer %s", credential);
    json_decref(body);
    return 0;
fail:
    json_decref(body);
    return -EINVAL;
}

const sb_provider_t sb_provider_openai_chat = {
    .kind = SB_CHAT_KIND,
    .supports_n = true,
    .build_request = sb_chat_build_request,
    .parse_response = sb_chat_parse_response,
    .stream_new = sb_chat_stream_new,
    .stream_feed = sb_chat_stream_feed,
    .stream_finish = sb_chat_stream_finish,
    .stream_destroy = sb_chat_stream_destroy,
};
