/*
 * provider_openai_chat: the "openai-chat" adapter, OpenAI Chat Completions
 * (POST {base_url}/chat/completions) and the servers that copy it: vLLM,
 * llama.cpp's server, Ollama, LM Studio. It speaks the common subset those
 * servers accept, so a few choices favour compatibility over OpenAI's newest
 * fields (see max_tokens below).
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
 * Chat response -> canonical events: per choice an optional reasoning item
 * ("reasoning_content" of vLLM and DeepSeek, "reasoning" of newer vLLM), the
 * message item (output_text and/or refusal), one function_call item per tool
 * call; with several choices each tagged "choice" and closed by choice_done;
 * then usage, completed.
 *
 * Streaming (request.stream): each "data:" chunk is translated as it comes,
 * per choice index (tagged "choice", item indices per choice, when n > 1):
 *   delta.reasoning_content / .reasoning -> a reasoning item: item_added, then
 *                                   reasoning_delta per piece
 *   delta.content                 -> a message item: item_added (partial),
 *                                   text_delta (content_index 0) per piece
 *   delta.refusal                 -> the same message's refusal part (there is
 *                                   no refusal delta: it shows in item_done)
 *   delta.tool_calls[]            -> per index, a function_call item: item_added
 *                                   once its id and name came, then args_delta
 *                                   per arguments piece
 *   a new kind of output closes the open reasoning or message item
 *   (item_done); tool calls stay open until the choice ends, since servers
 *   may interleave their pieces
 *   finish_reason                 -> item_done for what is open; the status
 *                                   (length: incomplete max_output_tokens,
 *                                   content_filter: incomplete content_filter)
 *                                   goes in choice_done (n > 1) and completed
 *   usage (the include_usage chunk, or any chunk's) -> one usage event at the
 *                                   end, from the latest
 *   [DONE]                        -> choices still open end "completed"; usage;
 *                                   completed at the end of the body
 *   {"error":{...}}               -> the final error (status from error.code
 *                                   when it is an HTTP status, as vLLM sends
 *                                   it, else 502); the rest is ignored
 * The item_done items are exactly those of the same answer sent whole. A data
 * line that is not JSON aborts the transfer (the worker reports it); a body
 * that ends before [DONE] with a choice unfinished is a 502; a 2xx body that
 * is plain JSON (a server that ignored "stream") is translated whole.
 *
 * No token-count hooks: neither OpenAI Chat nor vLLM, llama.cpp or Ollama has
 * a counting endpoint, so a count job goes out as a generation with
 * max_tokens 1 (sb_provider_count_job) and its prompt_tokens is the count:
 * exact as the upstream counts, and it costs one output token.
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

#define SB_CHAT_KIND "openai-chat"

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
        const char *t = json_string_value(json_object_get(part, "type"));
        json_t *o = NULL;
        if (t && (!strcmp(t, "input_text") || !strcmp(t, "output_text"))) {
            const json_t *text = json_object_get(part, "text");
            if (!json_is_string(text)) {
                *err = sb_provider_invalid("content part %zu has no text", i);
                goto fail;
            }
            o = json_pack("{s:s, s:O}", "type", "text", "text", text);
        } else if (t && !strcmp(t, "input_image")) {
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
        } else if (t && !strcmp(t, "input_file")) {
            if (!(o = sb_chat_file_part(part, i, err)))
                goto fail;
        } else if (t && !strcmp(t, "input_audio")) {
            const json_t *audio = json_object_get(part, "input_audio");
            const json_t *data = json_object_get(audio, "data");
            const json_t *format = json_object_get(audio, "format");
            if (!json_is_string(data) || !json_is_string(format)) {
                *err = sb_provider_invalid("input_audio (content part %zu) needs input_audio.data and .format", i);
                goto fail;
            }
            o = json_pack("{s:s, s:{s:O, s:O}}", "type", "input_audio", "input_audio", "data", data, "format", format);
        } else if (t && !strcmp(t, "refusal") && assistant) {
            const json_t *r = json_object_get(part, "refusal");
            if (!json_is_string(r)) {
                *err = sb_provider_invalid("refusal part %zu has no refusal text", i);
                goto fail;
            }
            /* Kept in place as an assistant content part, as the API takes it:
             * a message whose only content is a refusal is still a message. */
            o = json_pack("{s:s, s:O}", "type", "refusal", "refusal", r);
        } else {
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

/* Adds one function_call item as a tool call: onto the directly preceding
 * assistant message (a run of calls, or a text turn that led to them), else
 * onto a new assistant message. */
static int sb_chat_add_tool_call(json_t *messages, json_t **last, const json_t *item, json_t **err)
{
    const json_t *call_id = json_object_get(item, "call_id");
    const json_t *name = json_object_get(item, "name");
    const json_t *args = json_object_get(item, "arguments");
    if (!json_is_string(call_id) || !json_is_string(name)) {
        *err = sb_provider_invalid("function_call items need call_id and name");
        return -EINVAL;
    }
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
        return 0;
    }
    json_t *m = json_pack("{s:s, s:n, s:[o]}", "role", "assistant", "content", "tool_calls", tc);
    json_array_append_new(messages, m);
    *last = m;
    return 0;
}

static json_t *sb_chat_messages(const json_t *request, json_t **err)
{
    json_t *messages = json_array();
    json_t *last = NULL; /* the message most recently appended, borrowed */
    const json_t *instructions = json_object_get(request, "instructions");
    if (json_is_string(instructions) && json_string_length(instructions) > 0) {
        last = json_pack("{s:s, s:O}", "role", "system", "content", instructions);
        json_array_append_new(messages, last);
    }
    const json_t *input = json_object_get(request, "input");
    if (input && !json_is_array(input)) {
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
            if (!role || (strcmp(role, "system") && strcmp(role, "developer") && strcmp(role, "user") &&
                          strcmp(role, "assistant"))) {
                *err = sb_provider_invalid("input item %zu has an unsupported role", i);
                goto fail;
            }
            bool assistant = !strcmp(role, "assistant");
            json_t *content;
            if (sb_chat_content(json_object_get(item, "content"), &content, assistant, err) < 0)
                goto fail;
            last = json_pack("{s:s, s:o}", "role", role, "content", content);
            json_array_append_new(messages, last);
        } else if (!strcmp(type, "function_call")) {
            if (sb_chat_add_tool_call(messages, &last, item, err) < 0)
                goto fail;
        } else if (!strcmp(type, "function_call_output")) {
            const json_t *call_id = json_object_get(item, "call_id");
            if (!json_is_string(call_id)) {
                *err = sb_provider_invalid("function_call_output items need call_id");
                goto fail;
            }
            json_t *content;
            if (sb_chat_tool_output(json_object_get(item, "output"), &content, err) < 0)
                goto fail;
            last = json_pack("{s:s, s:O, s:o}", "role", "tool", "tool_call_id", call_id, "content", content);
            json_array_append_new(messages, last);
        } else if (!strcmp(type, "reasoning")) {
            continue; /* chat cannot take reasoning back; `last` stays, so calls still merge */
        } else {
            *err = sb_provider_invalid("input item type '%s' is not supported by provider " SB_CHAT_KIND, type);
            goto fail;
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
        if (!type || strcmp(type, "function")) {
            *err = sb_provider_invalid("tool type '%s' is not supported by provider " SB_CHAT_KIND,
                                       type ? type : "(none)");
            goto fail;
        }
        const json_t *name = json_object_get(tool, "name");
        if (!json_is_string(name)) {
            *err = sb_provider_invalid("function tool %zu has no name", i);
            goto fail;
        }
        json_t *fn = json_pack("{s:O}", "name", name);
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

static int sb_chat_build_request(const json_t *job, sb_provider_request_t *req, json_t **err)
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
    const json_t *tools = json_object_get(request, "tools");
    if (tools && !json_is_null(tools) && !json_is_array(tools)) {
        *err = sb_provider_invalid("request.tools must be an array");
        goto fail;
    }
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

/*
 * Response side. The item builders serve both paths, so a streamed answer
 * ends in exactly the items of the same answer sent whole.
 */

static void sb_chat_new_id(char *out, size_t size, const char *prefix)
{
    sb_id_new(out, size, prefix, 16);
}

/* A reasoning item: partial (text NULL) or complete. New reference. */
static json_t *sb_chat_reasoning_item(const char *id, const json_t *text)
{
    if (!text)
        return json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning", "id", id, "summary", "content");
    return json_pack("{s:s, s:s, s:[], s:[{s:s, s:O}]}", "type", "reasoning", "id", id, "summary", "content", "type",
                     "reasoning_text", "text", text);
}

/* A message item: partial (in_progress, no content) or complete with an
 * output_text part for text and a refusal part for refusal (either NULL).
 * New reference. */
static json_t *sb_chat_message_item(const char *id, bool done, const json_t *text, const json_t *refusal)
{
    json_t *parts = json_array();
    if (text)
        json_array_append_new(parts, json_pack("{s:s, s:O, s:[]}", "type", "output_text", "text", text, "annotations"));
    if (refusal)
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "refusal", "refusal", refusal));
    return json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", "message", "id", id, "role", "assistant", "status",
                     done ? "completed" : "in_progress", "content", parts);
}

/* A function_call item: partial (arguments NULL: "" and in_progress) or
 * complete. New reference. */
static json_t *sb_chat_call_item(const char *id, const json_t *call_id, const json_t *name, const json_t *arguments)
{
    if (!arguments)
        return json_pack("{s:s, s:s, s:O, s:O, s:s, s:s}", "type", "function_call", "id", id, "call_id", call_id,
                         "name", name, "arguments", "", "status", "in_progress");
    return json_pack("{s:s, s:s, s:O, s:O, s:O, s:s}", "type", "function_call", "id", id, "call_id", call_id, "name",
                     name, "arguments", arguments, "status", "completed");
}

/* usage -> the usage event (reasoning tokens are part of completion_tokens). */
static json_t *sb_chat_usage(const json_t *usage)
{
    json_int_t reasoning_tokens =
        json_integer_value(json_object_get(json_object_get(usage, "completion_tokens_details"), "reasoning_tokens"));
    return sb_event_usage(json_integer_value(json_object_get(usage, "prompt_tokens")),
                          json_integer_value(json_object_get(usage, "completion_tokens")), reasoning_tokens);
}

/* Text of message.content (or a delta's): a string, or (some servers) an
 * array of parts. */
static json_t *sb_chat_response_text(const json_t *content)
{
    if (json_is_string(content))
        return json_incref((json_t *)content);
    if (!json_is_array(content))
        return NULL;
    size_t i;
    const json_t *part;
    size_t n = 0;
    json_array_foreach (content, i, part) {
        if (json_is_string(json_object_get(part, "text")))
            n++;
    }
    if (n == 0)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    json_array_foreach (content, i, part) {
        const json_t *t = json_object_get(part, "text");
        if (!json_is_string(t))
            continue;
        buf = sb_xrealloc(buf, len + json_string_length(t) + 1);
        memcpy(buf + len, json_string_value(t), json_string_length(t));
        len += json_string_length(t);
    }
    json_t *s = json_stringn(buf, len);
    free(buf);
    return s;
}

static void sb_chat_emit_reasoning(json_t *out, int index, const json_t *text)
{
    char id[SB_ID_MAX];
    sb_chat_new_id(id, sizeof id, "rs_");
    json_array_append_new(out, sb_event_item_added(index, sb_chat_reasoning_item(id, NULL)));
    json_array_append_new(out, sb_event_reasoning_delta(index, json_string_value(text), json_string_length(text)));
    json_array_append_new(out, sb_event_item_done(index, sb_chat_reasoning_item(id, text)));
}

static void sb_chat_emit_message(json_t *out, int index, const json_t *text, const json_t *refusal)
{
    char id[SB_ID_MAX];
    sb_chat_new_id(id, sizeof id, "msg_");
    json_array_append_new(out, sb_event_item_added(index, sb_chat_message_item(id, false, NULL, NULL)));
    if (text)
        json_array_append_new(out, sb_event_text_delta(index, 0, json_string_value(text), json_string_length(text)));
    json_array_append_new(out, sb_event_item_done(index, sb_chat_message_item(id, true, text, refusal)));
}

static int sb_chat_emit_tool_call(json_t *out, int index, const json_t *tc)
{
    const json_t *fn = json_object_get(tc, "function");
    const json_t *call_id = json_object_get(tc, "id");
    const json_t *name = json_object_get(fn, "name");
    const json_t *args = json_object_get(fn, "arguments");
    if (!json_is_string(call_id) || !json_is_string(name))
        return -EINVAL;
    json_t *arguments = json_is_string(args) ? json_incref((json_t *)args) : json_string("");
    if (!json_is_string(args) && args && !json_is_null(args)) { /* some servers send an object */
        char *s = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
        json_decref(arguments);
        arguments = json_string(s ? s : "");
        free(s);
    }
    char id[SB_ID_MAX];
    sb_chat_new_id(id, sizeof id, "fc_");
    json_array_append_new(out, sb_event_item_added(index, sb_chat_call_item(id, call_id, name, NULL)));
    if (json_string_length(arguments) > 0)
        json_array_append_new(out,
                              sb_event_args_delta(index, json_string_value(arguments), json_string_length(arguments)));
    json_array_append_new(out, sb_event_item_done(index, sb_chat_call_item(id, call_id, name, arguments)));
    json_decref(arguments);
    return 0;
}

static bool sb_chat_is_quota(const json_t *root)
{
    const json_t *e = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *type = json_string_value(json_object_get(e, "type"));
    return (code && !strcmp(code, "insufficient_quota")) || (type && !strcmp(type, "insufficient_quota"));
}

/* finish_reason -> the canonical status and incomplete_reason. */
static void sb_chat_finish(const json_t *choice, const char **status, const char **reason)
{
    const char *finish = json_string_value(json_object_get(choice, "finish_reason"));
    *status = "completed";
    *reason = NULL;
    if (finish && !strcmp(finish, "length")) {
        *status = "incomplete";
        *reason = "max_output_tokens";
    } else if (finish && !strcmp(finish, "content_filter")) {
        *status = "incomplete";
        *reason = "content_filter";
    }
}

/* Appends one choice's items to out: reasoning, message, tool calls, with
 * item indices from 0. Returns 0, or -EINVAL with *final set. */
static int sb_chat_emit_choice(json_t *out, const json_t *root, const json_t *choice, json_t **final)
{
    const json_t *message = json_object_get(choice, "message");
    if (!json_is_object(message)) {
        /* Some proxies answer 200 with an error body. */
        const char *m = sb_provider_error_message(root);
        *final = sb_provider_upstream_error(502, root, m ? m : "upstream response has no choices", false, -1);
        return -EINVAL;
    }
    int index = 0;
    /* "reasoning_content": vLLM (older) and DeepSeek; "reasoning": newer vLLM. */
    const json_t *reasoning = json_object_get(message, "reasoning_content");
    if (!json_is_string(reasoning))
        reasoning = json_object_get(message, "reasoning");
    if (json_is_string(reasoning) && json_string_length(reasoning) > 0)
        sb_chat_emit_reasoning(out, index++, reasoning);

    json_t *text = sb_chat_response_text(json_object_get(message, "content"));
    if (text && json_string_length(text) == 0) {
        json_decref(text);
        text = NULL;
    }
    const json_t *refusal = json_object_get(message, "refusal");
    if (!json_is_string(refusal) || json_string_length(refusal) == 0)
        refusal = NULL;
    if (text || refusal)
        sb_chat_emit_message(out, index++, text, refusal);
    json_decref(text);

    const json_t *tool_calls = json_object_get(message, "tool_calls");
    size_t i;
    const json_t *tc;
    json_array_foreach (tool_calls, i, tc) {
        if (sb_chat_emit_tool_call(out, index++, tc) < 0) {
            *final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed tool call");
            return -EINVAL;
        }
    }
    return 0;
}

/*
 * One choice: its items, usage, completed. Several (the job asked for n > 1,
 * or the upstream sent more than one anyway): each choice's items tagged
 * with "choice" (item indices restart at 0 per choice) and followed by its
 * choice_done; then usage and one completed, incomplete if any choice was.
 */
static void sb_chat_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *out = json_array(); /* events of a good response; appended only at the end */
    json_t *final = NULL;
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    if (resp->status < 200 || resp->status >= 300) {
        final = sb_provider_upstream_error(resp->status, root, sb_provider_error_message(root), sb_chat_is_quota(root),
                                           resp->retry_after);
        goto done;
    }
    if (!json_is_object(root)) {
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned malformed JSON");
        goto done;
    }
    const json_t *choices = json_object_get(root, "choices");
    size_t n_choices = json_is_array(choices) ? json_array_size(choices) : 0;
    bool multi = n_choices > 1 || json_integer_value(json_object_get(sb_job_request(job), "n")) > 1;
    const char *status = "completed", *reason = NULL;
    if (n_choices == 0) {
        const char *m = sb_provider_error_message(root);
        final = sb_provider_upstream_error(502, root, m ? m : "upstream response has no choices", false, -1);
        goto done;
    }
    for (size_t k = 0; k < n_choices; k++) {
        const json_t *choice = json_array_get(choices, k);
        size_t first = json_array_size(out);
        if (sb_chat_emit_choice(out, root, choice, &final) < 0)
            goto done;
        const char *st, *re;
        sb_chat_finish(choice, &st, &re);
        if (!strcmp(st, "incomplete") && !reason) {
            status = st;
            reason = re;
        }
        if (!multi)
            break;
        for (size_t i = first; i < json_array_size(out); i++)
            sb_event_set_choice(json_array_get(out, i), (int)k);
        json_array_append_new(out, sb_event_choice_done((int)k, st, re));
    }

    const json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage))
        json_array_append_new(out, sb_chat_usage(usage));
    json_array_extend(events, out);
    json_array_append_new(events, sb_event_completed(status, reason, json_string_value(json_object_get(job, "model")),
                                                     resp->upstream_ms));
    json_decref(out);
    json_decref(root);
    return;
done:
    json_array_append_new(events, final);
    json_decref(out);
    json_decref(root);
}

/*
 * Streaming: Server-Sent Events, each data field one chat.completion.chunk,
 * the last one "[DONE]". See the top of the file for the translation.
 */

/* Most choices a stream may carry: an index beyond it is a broken upstream,
 * and must not size an allocation. */
#define SB_CHAT_MAX_CHOICES 256

/* The buffer as a JSON string (new reference). Its pieces were jansson
 * strings, so their concatenation is UTF-8. */
static json_t *sb_chat_buf_string(const sb_buf_t *b)
{
    json_t *s = json_stringn(b->p ? b->p : "", b->len);
    return s ? s : json_string("");
}

/* One tool call of a choice, from its first delta to the choice's end. */
typedef struct sb_chat_call {
    json_int_t index;   /* the upstream's tool_calls[].index */
    int item;           /* its item_index, -1 until its id and name are known */
    char id[SB_ID_MAX]; /* the item's id */
    json_t *call_id;    /* the upstream's id, NULL until seen */
    json_t *name;       /* NULL until seen */
    sb_buf_t args;      /* the arguments so far */
} sb_chat_call_t;

/* The reasoning or message item a choice is writing. */
enum sb_chat_open { SB_CHAT_OPEN_NONE, SB_CHAT_OPEN_REASONING, SB_CHAT_OPEN_MESSAGE };

typedef struct sb_chat_choice {
    bool seen;     /* some chunk carried this choice */
    bool finished; /* its finish_reason came: items closed */
    int next_item;
    enum sb_chat_open open;
    int open_item;
    char open_id[SB_ID_MAX];
    sb_buf_t text;         /* the open item's text (reasoning or output_text) */
    sb_buf_t refusal;      /* the open message's refusal */
    sb_chat_call_t *calls; /* open until the choice ends: servers may interleave their pieces */
    size_t n_calls;
    const char *status, *reason; /* once finished */
} sb_chat_choice_t;

enum sb_chat_stream_state {
    SB_CHAT_STREAM_START,  /* only whitespace so far: an event stream, or a plain JSON body? */
    SB_CHAT_STREAM_SSE,    /* reading events */
    SB_CHAT_STREAM_JSON,   /* a plain JSON body (the upstream ignored "stream"): buffered, translated at the end */
    SB_CHAT_STREAM_DONE,   /* [DONE], or a whole end: items and usage sent, completed waits for finish */
    SB_CHAT_STREAM_FAILED, /* a final error sent; nothing after it counts */
};

typedef struct sb_chat_stream {
    const json_t *job; /* borrowed */
    enum sb_chat_stream_state state;
    json_t *events; /* borrowed: where this feed's (or finish's) events go */
    bool multi;     /* n > 1: events tagged with their choice, a choice_done each */
    json_int_t n;   /* the choices asked for */
    sb_chat_choice_t *choices;
    size_t n_choices;
    json_t *usage; /* the latest usage object */
    sb_buf_t line; /* SSE: a line not yet ended; JSON: the whole body */
    sb_buf_t data; /* the data lines of the event being read */
    bool have_data;
    bool skip_lf; /* the last chunk ended in CR: an LF opening the next one ends no line */
} sb_chat_stream_t;

static void *sb_chat_stream_new(const json_t *job)
{
    sb_chat_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    s->n = json_integer_value(json_object_get(sb_job_request(job), "n"));
    s->multi = s->n > 1;
    return s;
}

/* Frees what a choice holds; it keeps its flags and status. */
static void sb_chat_choice_clear(sb_chat_choice_t *c)
{
    for (size_t i = 0; i < c->n_calls; i++) {
        json_decref(c->calls[i].call_id);
        json_decref(c->calls[i].name);
        sb_buf_free(&c->calls[i].args);
    }
    free(c->calls);
    c->calls = NULL;
    c->n_calls = 0;
    sb_buf_free(&c->text);
    sb_buf_free(&c->refusal);
}

static void sb_chat_stream_destroy(void *state)
{
    sb_chat_stream_t *s = state;
    if (!s)
        return;
    for (size_t k = 0; k < s->n_choices; k++)
        sb_chat_choice_clear(&s->choices[k]);
    free(s->choices);
    json_decref(s->usage);
    sb_buf_free(&s->line);
    sb_buf_free(&s->data);
    free(s);
}

/* Sends an event of choice k (tagged when there are several). */
static void sb_chat_stream_emit(sb_chat_stream_t *s, int k, json_t *ev)
{
    if (s->multi)
        sb_event_set_choice(ev, k);
    json_array_append_new(s->events, ev);
}

/* Ends the stream with a final error (stolen). */
static void sb_chat_stream_fail(sb_chat_stream_t *s, json_t *final)
{
    json_array_append_new(s->events, final);
    s->state = SB_CHAT_STREAM_FAILED;
}

static sb_chat_choice_t *sb_chat_stream_choice(sb_chat_stream_t *s, size_t k)
{
    if (k >= s->n_choices) {
        s->choices = sb_xrealloc(s->choices, (k + 1) * sizeof *s->choices);
        memset(s->choices + s->n_choices, 0, (k + 1 - s->n_choices) * sizeof *s->choices);
        s->n_choices = k + 1;
    }
    return &s->choices[k];
}

/* Closes choice k's open reasoning or message item with its complete form. */
static void sb_chat_stream_close(sb_chat_stream_t *s, int k, sb_chat_choice_t *c)
{
    if (c->open == SB_CHAT_OPEN_NONE)
        return;
    json_t *text = c->text.len > 0 ? sb_chat_buf_string(&c->text) : NULL;
    json_t *item;
    if (c->open == SB_CHAT_OPEN_REASONING) {
        item = sb_chat_reasoning_item(c->open_id, text);
    } else {
        json_t *refusal = c->refusal.len > 0 ? sb_chat_buf_string(&c->refusal) : NULL;
        item = sb_chat_message_item(c->open_id, true, text, refusal);
        json_decref(refusal);
    }
    json_decref(text);
    sb_chat_stream_emit(s, k, sb_event_item_done(c->open_item, item));
    c->open = SB_CHAT_OPEN_NONE;
    c->text.len = 0;
    c->refusal.len = 0;
}

/* A piece of reasoning, content or refusal text for choice k: goes to the
 * open item of its kind, else closes the open one and opens its own. A
 * refusal has no delta event: it shows in the message's item_done. */
static void sb_chat_stream_piece(sb_chat_stream_t *s, int k, sb_chat_choice_t *c, enum sb_chat_open kind, bool refusal,
                                 const char *p, size_t n)
{
    if (n == 0)
        return;
    if (c->open != kind) {
        sb_chat_stream_close(s, k, c);
        c->open = kind;
        c->open_item = c->next_item++;
        sb_chat_new_id(c->open_id, sizeof c->open_id, kind == SB_CHAT_OPEN_REASONING ? "rs_" : "msg_");
        sb_chat_stream_emit(
            s, k,
            sb_event_item_added(c->open_item, kind == SB_CHAT_OPEN_REASONING
                                                  ? sb_chat_reasoning_item(c->open_id, NULL)
                                                  : sb_chat_message_item(c->open_id, false, NULL, NULL)));
    }
    if (refusal) {
        sb_buf_add(&c->refusal, p, n);
        return;
    }
    sb_buf_add(&c->text, p, n);
    sb_chat_stream_emit(s, k,
                        kind == SB_CHAT_OPEN_REASONING ? sb_event_reasoning_delta(c->open_item, p, n)
                                                       : sb_event_text_delta(c->open_item, 0, p, n));
}

/* The call a tool_calls[] entry continues, or NULL for a new one. Without an
 * index (some servers leave it out) an entry belongs to the latest call
 * unless it brings another id. */
static sb_chat_call_t *sb_chat_stream_find_call(sb_chat_choice_t *c, const json_t *index, const json_t *id)
{
    if (json_is_integer(index)) {
        for (size_t i = c->n_calls; i > 0; i--)
            if (c->calls[i - 1].index == json_integer_value(index))
                return &c->calls[i - 1];
        return NULL;
    }
    if (c->n_calls == 0)
        return NULL;
    sb_chat_call_t *last = &c->calls[c->n_calls - 1];
    return !id || !last->call_id || json_equal((json_t *)id, last->call_id) ? last : NULL;
}

/* One tool_calls[] entry of choice k's delta: a new call or the next piece
 * of one. A call's item opens once its id and name are known (servers send
 * both with the first piece); arguments that came before go out then, later
 * ones as they come. Returns 0, or -EINVAL for an entry that is no object. */
static int sb_chat_stream_tool_call(sb_chat_stream_t *s, int k, sb_chat_choice_t *c, const json_t *tc)
{
    if (!json_is_object(tc))
        return -EINVAL;
    const json_t *index = json_object_get(tc, "index");
    const json_t *id = json_object_get(tc, "id");
    const json_t *fn = json_object_get(tc, "function");
    const json_t *name = json_object_get(fn, "name");
    const json_t *args = json_object_get(fn, "arguments");
    if (!json_is_string(id) || json_string_length(id) == 0)
        id = NULL;
    if (!json_is_string(name) || json_string_length(name) == 0)
        name = NULL;
    sb_chat_call_t *call = sb_chat_stream_find_call(c, index, id);
    if (!call) {
        c->calls = sb_xrealloc(c->calls, (c->n_calls + 1) * sizeof *c->calls);
        call = &c->calls[c->n_calls];
        memset(call, 0, sizeof *call);
        call->index = json_is_integer(index) ? json_integer_value(index) : (json_int_t)c->n_calls;
        call->item = -1;
        c->n_calls++;
    }
    /* The first id and name stay: some servers repeat them in every piece. */
    if (!call->call_id && id)
        call->call_id = json_incref((json_t *)id);
    if (!call->name && name)
        call->name = json_incref((json_t *)name);
    char *dumped = NULL; /* arguments as an object (some servers): compact JSON */
    if (args && !json_is_null(args) && !json_is_string(args))
        dumped = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
    const char *piece = dumped ? dumped : json_string_value(args);
    size_t n = dumped ? strlen(dumped) : json_string_length(args);
    if (n > 0)
        sb_buf_add(&call->args, piece, n);
    if (call->item < 0 && call->call_id && call->name) {
        call->item = c->next_item++;
        sb_chat_new_id(call->id, sizeof call->id, "fc_");
        sb_chat_stream_emit(
            s, k, sb_event_item_added(call->item, sb_chat_call_item(call->id, call->call_id, call->name, NULL)));
        if (call->args.len > 0)
            sb_chat_stream_emit(s, k, sb_event_args_delta(call->item, call->args.p, call->args.len));
    } else if (call->item >= 0 && n > 0) {
        sb_chat_stream_emit(s, k, sb_event_args_delta(call->item, piece, n));
    }
    free(dumped);
    return 0;
}

/* Choice k is over (its finish_reason, or the end of the stream with choice
 * NULL): its open items close, tool calls last, and with several choices its
 * choice_done follows. A call that never got its id and name fails the
 * stream, as it fails a whole response. */
static void sb_chat_stream_end_choice(sb_chat_stream_t *s, int k, sb_chat_choice_t *c, const json_t *choice)
{
    sb_chat_stream_close(s, k, c);
    for (size_t i = 0; i < c->n_calls; i++) {
        sb_chat_call_t *call = &c->calls[i];
        if (call->item < 0) {
            sb_chat_stream_fail(s,
                                sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed tool call"));
            return;
        }
        json_t *args = sb_chat_buf_string(&call->args);
        sb_chat_stream_emit(
            s, k, sb_event_item_done(call->item, sb_chat_call_item(call->id, call->call_id, call->name, args)));
        json_decref(args);
    }
    sb_chat_finish(choice, &c->status, &c->reason);
    c->finished = true;
    sb_chat_choice_clear(c);
    if (s->multi)
        json_array_append_new(s->events, sb_event_choice_done(k, c->status, c->reason));
}

/* The error event for an {"error":{...}} chunk. vLLM puts the HTTP status it
 * would have answered with in error.code; OpenAI sends a server_error. */
static json_t *sb_chat_stream_error(const json_t *root)
{
    json_int_t code = json_integer_value(json_object_get(json_object_get(root, "error"), "code"));
    bool quota = sb_chat_is_quota(root);
    long status = quota ? 429 : code >= 400 && code < 600 ? (long)code : 502;
    const char *m = sb_provider_error_message(root);
    return sb_provider_upstream_error(status, root, m ? m : "upstream stream reported an error", quota, -1);
}

/* One chat.completion.chunk. */
static void sb_chat_stream_chunk(sb_chat_stream_t *s, const json_t *root)
{
    const json_t *error = json_object_get(root, "error");
    if (error && !json_is_null(error)) { /* an error in the middle of a stream */
        sb_chat_stream_fail(s, sb_chat_stream_error(root));
        return;
    }
    /* The include_usage chunk (choices []), or usage on the last chunk
     * (llama.cpp): one usage event at the end, from the latest. */
    const json_t *usage = json_object_get(root, "usage");
    if (json_is_object(usage)) {
        json_decref(s->usage);
        s->usage = json_incref((json_t *)usage);
    }
    size_t pos;
    const json_t *choice;
    json_array_foreach (json_object_get(root, "choices"), pos, choice) {
        const json_t *index = json_object_get(choice, "index");
        json_int_t k = json_is_integer(index) ? json_integer_value(index) : (json_int_t)pos;
        if (k < 0 || k >= SB_CHAT_MAX_CHOICES) {
            sb_chat_stream_fail(s,
                                sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a choice out of range"));
            return;
        }
        if (k > 0 && !s->multi)
            continue; /* one choice asked for; an extra one has nowhere to go */
        sb_chat_choice_t *c = sb_chat_stream_choice(s, (size_t)k);
        if (c->finished)
            continue;
        c->seen = true;
        const json_t *delta = json_object_get(choice, "delta");
        /* As in a whole message: reasoning_content wins over reasoning. */
        const json_t *reasoning = json_object_get(delta, "reasoning_content");
        if (!json_is_string(reasoning))
            reasoning = json_object_get(delta, "reasoning");
        sb_chat_stream_piece(s, (int)k, c, SB_CHAT_OPEN_REASONING, false, json_string_value(reasoning),
                             json_string_length(reasoning));
        json_t *text = sb_chat_response_text(json_object_get(delta, "content"));
        sb_chat_stream_piece(s, (int)k, c, SB_CHAT_OPEN_MESSAGE, false, json_string_value(text),
                             json_string_length(text));
        json_decref(text);
        const json_t *refusal = json_object_get(delta, "refusal");
        sb_chat_stream_piece(s, (int)k, c, SB_CHAT_OPEN_MESSAGE, true, json_string_value(refusal),
                             json_string_length(refusal));
        const json_t *tool_calls = json_object_get(delta, "tool_calls");
        if (json_array_size(tool_calls) > 0)
            sb_chat_stream_close(s, (int)k, c);
        size_t i;
        const json_t *tc;
        json_array_foreach (tool_calls, i, tc) {
            if (sb_chat_stream_tool_call(s, (int)k, c, tc) < 0) {
                sb_chat_stream_fail(
                    s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed tool call"));
                return;
            }
        }
        const json_t *finish = json_object_get(choice, "finish_reason");
        if (json_is_string(finish) && json_string_length(finish) > 0) {
            sb_chat_stream_end_choice(s, (int)k, c, choice);
            if (s->state == SB_CHAT_STREAM_FAILED)
                return;
        }
    }
}

/* The answer is over ([DONE], or the end of a stream that finished every
 * choice): closes the choices still open, sends usage. */
static void sb_chat_stream_end(sb_chat_stream_t *s)
{
    bool any = false;
    for (size_t k = 0; k < s->n_choices; k++) {
        sb_chat_choice_t *c = &s->choices[k];
        if (!c->seen)
            continue;
        any = true;
        if (!c->finished)
            sb_chat_stream_end_choice(s, (int)k, c, NULL);
        if (s->state == SB_CHAT_STREAM_FAILED)
            return;
    }
    if (!any) {
        sb_chat_stream_fail(s, sb_provider_error_for_status(502, "upstream response has no choices", false, -1));
        return;
    }
    if (s->usage)
        json_array_append_new(s->events, sb_chat_usage(s->usage));
    s->state = SB_CHAT_STREAM_DONE;
}

/* Whether a stream that ended without [DONE] still ended whole: the choice
 * (each of the n asked for) came and ended with its finish_reason. */
static bool sb_chat_stream_whole(const sb_chat_stream_t *s)
{
    size_t want = s->multi ? (size_t)s->n : 1;
    if (s->n_choices < want)
        return false;
    for (size_t k = 0; k < s->n_choices; k++) {
        const sb_chat_choice_t *c = &s->choices[k];
        if ((k < want && !c->seen) || (c->seen && !c->finished))
            return false;
    }
    return true;
}

/* One event's data. Returns 0, or -EBADMSG for data that is not a JSON
 * object (the worker then reports a response it could not parse). */
static int sb_chat_stream_event(sb_chat_stream_t *s, const char *data, size_t len)
{
    if (len == 6 && !memcmp(data, "[DONE]", 6)) {
        sb_chat_stream_end(s);
        return 0;
    }
    json_t *root = json_loadb(data, len, 0, NULL);
    if (!json_is_object(root)) {
        json_decref(root);
        return -EBADMSG;
    }
    sb_chat_stream_chunk(s, root);
    json_decref(root);
    return 0;
}

/* One complete line, without its line end. */
static int sb_chat_stream_line(sb_chat_stream_t *s, const char *line, size_t n)
{
    if (n == 0) { /* the blank line that ends an event; one without data is nothing */
        size_t len = s->data.len;
        bool have = s->have_data;
        s->data.len = 0;
        s->have_data = false;
        return have && len > 0 ? sb_chat_stream_event(s, s->data.p, len) : 0;
    }
    if (n < 5 || memcmp(line, "data:", 5))
        return 0; /* ": comments", event:, id:, retry: carry nothing needed here */
    line += 5;
    n -= 5;
    if (n > 0 && *line == ' ') {
        line++;
        n--;
    }
    if (n + 1 > SB_PROVIDER_MAX_BODY - s->data.len)
        return -E2BIG;
    if (s->have_data)
        sb_buf_add(&s->data, "\n", 1);
    sb_buf_add(&s->data, line, n);
    s->have_data = true;
    return 0;
}

/* SSE bytes: lines end in LF, CRLF or CR, anywhere in a chunk or across
 * chunks; events go out as their blank line arrives. */
static int sb_chat_stream_sse(sb_chat_stream_t *s, const char *data, size_t len)
{
    size_t i = 0;
    if (s->skip_lf && len > 0) {
        if (data[0] == '\n')
            i = 1;
        s->skip_lf = false;
    }
    size_t start = i;
    for (; i < len && s->state == SB_CHAT_STREAM_SSE; i++) {
        if (data[i] != '\n' && data[i] != '\r')
            continue;
        const char *line = data + start;
        size_t n = i - start;
        if (s->line.len > 0) { /* the line began in an earlier chunk */
            if (n > SB_PROVIDER_MAX_BODY - s->line.len)
                return -E2BIG;
            sb_buf_add(&s->line, line, n);
            line = s->line.p;
            n = s->line.len;
        }
        int rc = sb_chat_stream_line(s, line, n);
        s->line.len = 0;
        if (rc < 0)
            return rc;
        if (data[i] == '\r') {
            if (i + 1 == len)
                s->skip_lf = true;
            else if (data[i + 1] == '\n')
                i++;
        }
        start = i + 1;
    }
    if (s->state != SB_CHAT_STREAM_SSE)
        return 0; /* [DONE] or an error: the rest is ignored */
    if (start < len) {
        if (len - start > SB_PROVIDER_MAX_BODY - s->line.len)
            return -E2BIG; /* an absurd line */
        sb_buf_add(&s->line, data + start, len - start);
    }
    return 0;
}

static int sb_chat_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_chat_stream_t *s = state;
    s->events = events;
    if (s->state == SB_CHAT_STREAM_START) {
        size_t i = 0;
        while (i < len && isspace((unsigned char)data[i]))
            i++;
        if (i == len)
            return 0;
        /* An event stream opens with a field or a comment, never with '{'. */
        s->state = data[i] == '{' ? SB_CHAT_STREAM_JSON : SB_CHAT_STREAM_SSE;
        data += i;
        len -= i;
    }
    switch (s->state) {
    case SB_CHAT_STREAM_SSE:
        return sb_chat_stream_sse(s, data, len);
    case SB_CHAT_STREAM_JSON:
        if (len > SB_PROVIDER_MAX_BODY - s->line.len)
            return -E2BIG;
        sb_buf_add(&s->line, data, len);
        return 0;
    default:
        return 0; /* over: nothing after [DONE] or an error counts */
    }
}

static void sb_chat_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_chat_stream_t *s = state;
    s->events = events;
    if (s->state == SB_CHAT_STREAM_JSON) {
        sb_provider_response_t r = *resp;
        r.body = s->line.p ? s->line.p : "";
        r.body_len = s->line.len;
        sb_chat_parse_response(s->job, &r, events);
        return;
    }
    if (s->state == SB_CHAT_STREAM_SSE) {
        /* A last line without its line end, a last event without its blank
         * line, still count. */
        int rc = 0;
        if (s->line.len > 0) {
            rc = sb_chat_stream_line(s, s->line.p, s->line.len);
            s->line.len = 0;
        }
        if (rc == 0 && s->state == SB_CHAT_STREAM_SSE)
            rc = sb_chat_stream_line(s, "", 0);
        if (rc < 0)
            sb_chat_stream_fail(s, sb_event_error(502, SB_ERR_UPSTREAM, NULL,
                                                  rc == -E2BIG ? "upstream response too large"
                                                               : "upstream returned a malformed stream event"));
        else if (s->state == SB_CHAT_STREAM_SSE && sb_chat_stream_whole(s))
            sb_chat_stream_end(s); /* no [DONE], but nothing is missing */
    }
    switch (s->state) {
    case SB_CHAT_STREAM_START:
    case SB_CHAT_STREAM_SSE:
        sb_chat_stream_fail(
            s, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream ended before the response was complete"));
        break;
    case SB_CHAT_STREAM_DONE: {
        const char *status = "completed", *reason = NULL; /* the first incomplete choice's */
        for (size_t k = 0; k < s->n_choices; k++) {
            const sb_chat_choice_t *c = &s->choices[k];
            if (c->seen && c->status && !strcmp(c->status, "incomplete")) {
                status = c->status;
                reason = c->reason;
                break;
            }
        }
        json_array_append_new(
            events,
            sb_event_completed(status, reason, json_string_value(json_object_get(s->job, "model")), resp->upstream_ms));
        break;
    }
    case SB_CHAT_STREAM_JSON:
    case SB_CHAT_STREAM_FAILED:
        break; /* its final event is out */
    }
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
