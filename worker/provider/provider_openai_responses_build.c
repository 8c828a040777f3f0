/*
 * provider_openai_responses: the "openai-responses" adapter, OpenAI's own
 * Responses API (POST {base_url}/responses, Bearer credential). The canonical
 * job is already Responses-shaped, so this is mostly a pass-through; what it
 * changes are the gateway's rules:
 *
 * Canonical job -> Responses request:
 *   store                        -> always false: the gateway keeps state
 *                                   itself (previous_response_id is never sent)
 *   include                      -> ["reasoning.encrypted_content"] when
 *                                   reasoning is requested (effort other than
 *                                   "none", or a summary), the input carries this
 *                                   upstream's reasoning, or the route says
 *                                   capabilities.reasoning true (reasoning
 *                                   models reason by default); plus
 *                                   "message.output_text.logprobs" with top_logprobs
 *   model                        -> route.upstream_model
 *   message items                -> the same; input_text/output_text follow the
 *                                   role (output_text for assistant turns);
 *                                   input_image, input_file (file_data+filename,
 *                                   file_id, file_url), refusal as is. Ids are
 *                                   kept on assistant messages ("msg_...") and
 *                                   function calls ("fc_..."): OpenAI pairs a
 *                                   reasoning item with the item after it by id.
 *                                   Ids of other messages and of function call
 *                                   outputs are the gateway's: dropped.
 *   input_audio parts            -> 400 unsupported parameter (no audio here)
 *   function_call(_output) items -> the same (output parts as message parts)
 *   reasoning items              -> {id, summary, encrypted_content} from the
 *                                   private upstream_encrypted_content (this
 *                                   upstream's own from an earlier turn), no
 *                                   content. A reasoning item WITHOUT it (another
 *                                   provider's, or one returned without include)
 *                                   cannot be verified by OpenAI and is DROPPED:
 *                                   the one item this adapter drops.
 *   private fields               -> signature, redacted, thought_signature,
 *                                   upstream_encrypted_content never leave as such
 *   other item types             -> as is (e.g. replayed web_search_call items)
 *   instructions, tools (function tools as is, with strict false when absent,
 *   since Responses would default it to true; built-in tools unchanged: this is
 *   the upstream that runs them), tool_choice, parallel_tool_calls, text
 *   {format, verbosity}, reasoning {effort, summary}, max_output_tokens,
 *   temperature, top_p, presence/frequency_penalty, user, max_tool_calls,
 *   top_logprobs, truncation, prompt_cache_key, safety_identifier -> as is
 *   metadata                     -> never sent (the gateway's own)
 *   stop, seed                   -> 400 unsupported parameter (no equivalent)
 *   n                            -> never sent: .supports_n is false, so the
 *                                   worker fans out one call per choice
 *   stream                       -> as asked (the stream_* hooks parse SSE)
 *
 * Responses response -> canonical events: each output item in order as
 * item_added (a partial item), its deltas (text, arguments, reasoning text),
 * item_done (the item, upstream id kept, generated when missing). Reasoning
 * items have their encrypted_content moved to the private
 * upstream_encrypted_content (the gateway renders its own sealed
 * encrypted_content). Built-in tool call items pass through. Then usage
 * (output_tokens_details.reasoning_tokens) and completed with the response's
 * model; status "incomplete" keeps incomplete_details.reason; status "failed"
 * becomes an error event from error.code (rate_limit_exceeded 429,
 * server_error 502, invalid_* 400, ...).
 *
 * Token counting (a count job): POST {base_url}/responses/input_tokens with
 * the same body cut to what that endpoint takes (model, input, instructions,
 * tools, tool_choice, text, parallel_tool_calls, reasoning, truncation);
 * {"object":"response.input_tokens","input_tokens":N} -> usage + completed.
 *
 * Upstream HTTP errors go through sb_provider_error_for_status (Retry-After
 * passed on); a 401's text is never passed on, as OpenAI quotes part of the
 * key in it, nor is any message that contains the credential.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"

#define SB_ORESP_KIND "openai-responses"

/* Private item fields only the gateway and an upstream see (fe_reasoning.h). */
static const char *const sb_oresp_private[] = {"signature", "redacted", "thought_signature",
                                               "upstream_encrypted_content", NULL};

static bool sb_oresp_is(const char *s, const char *want)
{
    return s && !strcmp(s, want);
}

static bool sb_oresp_prefixed(const json_t *s, const char *prefix)
{
    return json_is_string(s) && !strncmp(json_string_value(s), prefix, strlen(prefix));
}

/* Copies src[key] to dst when it is a string. */
static void sb_oresp_copy_string(json_t *dst, const json_t *src, const char *key)
{
    const json_t *v = json_object_get(src, key);
    if (json_is_string(v))
        json_object_set(dst, key, (json_t *)v);
}

/*
 * Request side.
 */

/* One canonical content part -> a Responses content part. Text parts take the
 * type the role needs (the Responses API refuses input_text in an assistant
 * turn and output_text in the others). */
static json_t *sb_oresp_part(const json_t *part, bool assistant, size_t item, size_t index, json_t **err)
{
    const char *t = json_string_value(json_object_get(part, "type"));
    if (sb_oresp_is(t, "input_text") || sb_oresp_is(t, "output_text")) {
        const json_t *text = json_object_get(part, "text");
        if (!json_is_string(text)) {
            *err = sb_provider_invalid("input item %zu: content part %zu has no text", item, index);
            return NULL;
        }
        json_t *o = json_pack("{s:s, s:O}", "type", assistant ? "output_text" : "input_text", "text", text);
        const json_t *ann = json_object_get(part, "annotations");
        if (assistant && json_is_array(ann))
            json_object_set(o, "annotations", (json_t *)ann);
        return o;
    }
    if (sb_oresp_is(t, "input_image")) {
        json_t *o = json_pack("{s:s}", "type", "input_image");
        sb_oresp_copy_string(o, part, "image_url");
        sb_oresp_copy_string(o, part, "file_id");
        sb_oresp_copy_string(o, part, "detail");
        if (!json_object_get(o, "image_url") && !json_object_get(o, "file_id")) {
            json_decref(o);
            *err = sb_provider_invalid(
                "input item %zu: input_image (content part %zu) has neither image_url nor file_id", item, index);
            return NULL;
        }
        return o;
    }
    if (sb_oresp_is(t, "input_file")) {
        json_t *o = json_pack("{s:s}", "type", "input_file");
        sb_oresp_copy_string(o, part, "file_id");
        sb_oresp_copy_string(o, part, "file_data");
        sb_oresp_copy_string(o, part, "file_url");
        sb_oresp_copy_string(o, part, "filename");
        if (!json_object_get(o, "file_id") && !json_object_get(o, "file_data") && !json_object_get(o, "file_url")) {
            json_decref(o);
            *err = sb_provider_invalid(
                "input item %zu: input_file (content part %zu) has neither file_data nor file_id", item, index);
            return NULL;
        }
        return o;
    }
    if (sb_oresp_is(t, "refusal")) {
        const json_t *refusal = json_object_get(part, "refusal");
        if (!json_is_string(refusal)) {
            *err = sb_provider_invalid("input item %zu: refusal part %zu has no refusal text", item, index);
            return NULL;
        }
        return json_pack("{s:s, s:O}", "type", "refusal", "refusal", refusal);
    }
    if (sb_oresp_is(t, "input_audio")) {
        *err = sb_provider_unsupported(
            "input_audio (input item %zu, content part %zu) is not supported by provider " SB_ORESP_KIND
            ": the Responses API takes no audio input",
            item, index);
        return NULL;
    }
    *err = sb_provider_invalid("input item %zu: content part type '%s' is not supported by provider " SB_ORESP_KIND,
                               item, t ? t : "(none)");
    return NULL;
}

/* An array of canonical parts -> Responses parts; a string stays a string. */
static json_t *sb_oresp_parts(const json_t *parts, bool assistant, size_t item, json_t **err)
{
    if (json_is_string(parts))
        return json_incref((json_t *)parts);
    if (!json_is_array(parts)) {
        *err = sb_provider_invalid("input item %zu: content must be an array of parts", item);
        return NULL;
    }
    json_t *out = json_array();
    size_t i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        json_t *o = sb_oresp_part(part, assistant, item, i, err);
        if (!o) {
            json_decref(out);
            return NULL;
        }
        json_array_append_new(out, o);
    }
    return out;
}

static json_t *sb_oresp_message(const json_t *it, size_t i, json_t **err)
{
    const char *role = json_string_value(json_object_get(it, "role"));
    if (!sb_oresp_is(role, "user") && !sb_oresp_is(role, "assistant") && !sb_oresp_is(role, "system") &&
        !sb_oresp_is(role, "developer")) {
        *err = sb_provider_invalid("input item %zu has an unsupported role", i);
        return NULL;
    }
    bool assistant = !strcmp(role, "assistant");
    json_t *content = sb_oresp_parts(json_object_get(it, "content"), assistant, i, err);
    if (!content)
        return NULL;
    json_t *o = json_pack("{s:s, s:s, s:o}", "type", "message", "role", role, "content", content);
    if (assistant) {
        const json_t *id = json_object_get(it, "id");
        if (sb_oresp_prefixed(id, "msg_"))
            json_object_set(o, "id", (json_t *)id);
        sb_oresp_copy_string(o, it, "status");
        sb_oresp_copy_string(o, it, "phase"); /* newer models want it back */
    }
    return o;
}

static json_t *sb_oresp_function_call(const json_t *it, size_t i, json_t **err)
{
    const json_t *call_id = json_object_get(it, "call_id");
    const json_t *name = json_object_get(it, "name");
    const json_t *args = json_object_get(it, "arguments");
    if (!json_is_string(call_id) || !json_is_string(name)) {
        *err = sb_provider_invalid("input item %zu: function_call items need call_id and name", i);
        return NULL;
    }
    json_t *arguments;
    if (json_is_string(args)) {
        arguments = json_incref((json_t *)args);
    } else if (!args || json_is_null(args)) {
        arguments = json_string("");
    } else { /* an object from a lenient client: Responses wants a JSON string */
        char *s = json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY);
        arguments = json_string(s ? s : "");
        free(s);
    }
    json_t *o = json_pack("{s:s, s:O, s:O, s:o}", "type", "function_call", "call_id", call_id, "name", name,
                          "arguments", arguments);
    const json_t *id = json_object_get(it, "id");
    if (sb_oresp_prefixed(id, "fc_"))
        json_object_set(o, "id", (json_t *)id);
    sb_oresp_copy_string(o, it, "status");
    return o;
}

static json_t *sb_oresp_function_output(const json_t *it, size_t i, json_t **err)
{
    const json_t *call_id = json_object_get(it, "call_id");
    const json_t *output = json_object_get(it, "output");
    if (!json_is_string(call_id)) {
        *err = sb_provider_invalid("input item %zu: function_call_output items need call_id", i);
        return NULL;
    }
    json_t *out;
    if (json_is_string(output) || json_is_array(output)) {
        out = sb_oresp_parts(output, false, i, err);
        if (!out)
            return NULL;
    } else if (!output || json_is_null(output)) {
        out = json_string("");
    } else {
        char *s = json_dumps(output, JSON_COMPACT | JSON_ENCODE_ANY);
        out = json_string(s ? s : "");
        free(s);
    }
    return json_pack("{s:s, s:O, s:o}", "type", "function_call_output", "call_id", call_id, "output", out);
}

/* A reasoning item this upstream can take back, or NULL (dropped) when it
 * has no upstream_encrypted_content: OpenAI verifies reasoning only by its
 * own encrypted_content, and with store false it has nothing else to go by
 * ("Item with id 'rs_...' not found"). */
static json_t *sb_oresp_reasoning(const json_t *it)
{
    const json_t *enc = json_object_get(it, "upstream_encrypted_content");
    if (!json_is_string(enc) || json_string_length(enc) == 0)
        return NULL;
    json_t *summary = json_array();
    size_t i;
    const json_t *s;
    json_array_foreach (json_object_get(it, "summary"), i, s) {
        const json_t *text = json_object_get(s, "text");
        if (json_is_string(text))
            json_array_append_new(summary, json_pack("{s:s, s:O}", "type", "summary_text", "text", text));
    }
    json_t *o = json_pack("{s:s, s:o, s:O}", "type", "reasoning", "summary", summary, "encrypted_content", enc);
    sb_oresp_copy_string(o, it, "id");
    return o;
}

/* request.input -> the Responses input. *reasoning is set when a reasoning
 * item was kept. */
static json_t *sb_oresp_input(const json_t *request, bool *reasoning, json_t **err)
{
    const json_t *input = json_object_get(request, "input");
    json_t *out = json_array();
    if (!input || json_is_null(input))
        return out;
    if (!json_is_array(input)) {
        *err = sb_provider_invalid("request.input must be an array of items");
        goto fail;
    }
    size_t i;
    const json_t *it;
    json_array_foreach (input, i, it) {
        if (!json_is_object(it)) {
            *err = sb_provider_invalid("input item %zu is not an object", i);
            goto fail;
        }
        const char *type = json_string_value(json_object_get(it, "type"));
        if (!type && json_is_string(json_object_get(it, "role")))
            type = "message";
        if (!type) {
            *err = sb_provider_invalid("input item %zu has no type", i);
            goto fail;
        }
        json_t *o;
        if (!strcmp(type, "message")) {
            o = sb_oresp_message(it, i, err);
        } else if (!strcmp(type, "function_call")) {
            o = sb_oresp_function_call(it, i, err);
        } else if (!strcmp(type, "function_call_output")) {
            o = sb_oresp_function_output(it, i, err);
        } else if (!strcmp(type, "reasoning")) {
            o = sb_oresp_reasoning(it);
            if (!o)
                continue; /* the one allowed drop, see above */
            *reasoning = true;
        } else {
            /* Built-in tool calls and their outputs (web_search_call, ...)
             * replayed from stored output: this upstream made them. */
            o = json_deep_copy(it);
            for (size_t k = 0; sb_oresp_private[k]; k++)
                json_object_del(o, sb_oresp_private[k]);
        }
        if (!o)
            goto fail;
        json_array_append_new(out, o);
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* Tools as they are, except that a function tool without "strict" gets
 * "strict": false: absent means not strict in the canonical model, while the
 * Responses API makes function tools strict by default. */
static json_t *sb_oresp_tools(const json_t *tools, json_t **err)
{
    json_t *out = json_array();
    size_t i;
    const json_t *t;
    json_array_foreach (tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        if (!json_is_object(t) || !type) {
            *err = sb_provider_invalid("tool %zu has no type", i);
            goto fail;
        }
        if (!strcmp(type, "function")) {
            if (!json_is_string(json_object_get(t, "name"))) {
                *err = sb_provider_invalid("function tool %zu has no name", i);
                goto fail;
            }
            if (!json_is_boolean(json_object_get(t, "strict"))) {
                json_t *copy = json_copy((json_t *)t);
                json_object_set_new(copy, "strict", json_false());
                json_array_append_new(out, copy);
                continue;
            }
        }
        json_array_append(out, (json_t *)t);
    }
    return out;
fail:
    json_decref(out);
    return NULL;
}

/* request.text -> text {format, verbosity}. */
static int sb_oresp_text(json_t *body, const json_t *text, json_t **err)
{
    if (!text || json_is_null(text))
        return 0;
    if (!json_is_object(text)) {
        *err = sb_provider_invalid("request.text must be an object");
        return -EINVAL;
    }
    json_t *out = json_object();
    const json_t *format = json_object_get(text, "format");
    if (format && !json_is_null(format)) {
        const char *type = json_string_value(json_object_get(format, "type"));
        if (sb_oresp_is(type, "json_schema") &&
            (!json_is_string(json_object_get(format, "name")) || !json_is_object(json_object_get(format, "schema")))) {
            json_decref(out);
            *err = sb_provider_invalid("text.format json_schema needs name and schema");
            return -EINVAL;
        }
        if (!sb_oresp_is(type, "text") && !sb_oresp_is(type, "json_schema") && !sb_oresp_is(type, "json_object")) {
            json_decref(out);
            *err = sb_provider_invalid("text.format '%s' is not supported by provider " SB_ORESP_KIND,
                                       type ? type : "(none)");
            return -EINVAL;
        }
        json_object_set(out, "format", (json_t *)format);
    }
    sb_oresp_copy_string(out, text, "verbosity");
    if (json_object_size(out) > 0)
        json_object_set(body, "text", out);
    json_decref(out);
    return 0;
}

/* request.reasoning -> reasoning {effort, summary}. Returns whether reasoning
 * is requested: an effort other than "none", or a summary. */
static bool sb_oresp_reasoning_param(json_t *body, const json_t *reasoning)
{
    json_t *out = json_object();
    sb_oresp_copy_string(out, reasoning, "effort");
    sb_oresp_copy_string(out, reasoning, "summary");
    const char *effort = json_string_value(json_object_get(out, "effort"));
    bool requested = (effort && strcmp(effort, "none")) || json_object_get(out, "summary");
    if (json_object_size(out) > 0)
        json_object_set(body, "reasoning", out);
    json_decref(out);
    return requested;
}

/* stop and seed have no Responses equivalent; silently dropping them would
 * change what the client asked for. Null and an empty stop list ask nothing. */
static int sb_oresp_refuse_unmappable(const json_t *request, json_t **err)
{
    const json_t *stop = json_object_get(request, "stop");
    if (stop && !json_is_null(stop) && !(json_is_array(stop) && json_array_size(stop) == 0)) {
        *err = sb_provider_unsupported("'stop' is not supported by provider " SB_ORESP_KIND
                                       " (the Responses API has no stop sequences)");
        return -EINVAL;
    }
    /* top_k: a sampling hint the Responses API has no setting for (Gemini
     * CLI sends it on every request); left out, see docs/compatibility.md. */
    const json_t *seed = json_object_get(request, "seed");
    if (seed && !json_is_null(seed)) {
        *err = sb_provider_unsupported("'seed' is not supported by provider " SB_ORESP_KIND
                                       " (the Responses API has no seed)");
        return -EINVAL;
    }
    const json_t *n = json_object_get(request, "n");
    if (n && !json_is_null(n) && (!json_is_integer(n) || json_integer_value(n) < 1)) {
        *err = sb_provider_invalid("request.n must be at least 1");
        return -EINVAL;
    }
    return 0;
}

/* What POST /responses/input_tokens takes of a Responses request: the input
 * and everything that adds to it; nothing that only shapes the output. */
static const char *const sb_oresp_count_fields[] = {"model",       "input", "instructions",        "tools",
                                                    "tool_choice", "text",  "parallel_tool_calls", "reasoning",
                                                    "truncation",  NULL};

/* The Responses request, or (count) the input-token-count request: the same
 * body cut to sb_oresp_count_fields. */
static int sb_oresp_build(const json_t *job, sb_provider_request_t *req, json_t **err, bool count)
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
    if (sb_oresp_refuse_unmappable(request, err) < 0)
        goto fail;
    req->url = sb_provider_url(job, count ? "/responses/input_tokens" : "/responses");
    if (!req->url) {
        *err = sb_provider_invalid("route has no base_url");
        goto fail;
    }
    const char *credential;
    if (sb_provider_credential(job, &credential, err) < 0)
        goto fail;

    body = json_pack("{s:s}", "model", upstream_model);
    bool reasoning_items = false;
    json_t *input = sb_oresp_input(request, &reasoning_items, err);
    if (!input)
        goto fail;
    json_object_set_new(body, "input", input);
    const json_t *instructions = json_object_get(request, "instructions");
    if (json_is_string(instructions))
        json_object_set(body, "instructions", (json_t *)instructions);

    const json_t *tools = json_object_get(request, "tools");
    if (tools && !json_is_null(tools) && !json_is_array(tools)) {
        *err = sb_provider_invalid("request.tools must be an array");
        goto fail;
    }
    if (json_array_size(tools) > 0) {
        json_t *t = sb_oresp_tools(tools, err);
        if (!t)
            goto fail;
        json_object_set_new(body, "tools", t);
    }
    const json_t *tool_choice = json_object_get(request, "tool_choice");
    if (json_is_string(tool_choice) || json_is_object(tool_choice))
        json_object_set(body, "tool_choice", (json_t *)tool_choice);
    if (sb_oresp_text(body, json_object_get(request, "text"), err) < 0)
        goto fail;
    bool reasoning_requested = sb_oresp_reasoning_param(body, json_object_get(request, "reasoning"));
    if (sb_provider_copy(body, request, "parallel_tool_calls", "parallel_tool_calls", SB_PROVIDER_BOOL, err) < 0 ||
        sb_provider_copy(body, request, "max_output_tokens", "max_output_tokens", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy(body, request, "temperature", "temperature", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "top_p", "top_p", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "presence_penalty", "presence_penalty", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "frequency_penalty", "frequency_penalty", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(body, request, "user", "user", SB_PROVIDER_STRING, err) < 0 ||
        sb_provider_copy(body, request, "max_tool_calls", "max_tool_calls", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy(body, request, "top_logprobs", "top_logprobs", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy(body, request, "truncation", "truncation", SB_PROVIDER_STRING, err) < 0 ||
        sb_provider_copy(body, request, "prompt_cache_key", "prompt_cache_key", SB_PROVIDER_STRING, err) < 0 ||
        sb_provider_copy(body, request, "safety_identifier", "safety_identifier", SB_PROVIDER_STRING, err) < 0)
        goto fail;

    /* Reasoning is passed back statelessly, as this upstream's own
     * encrypted_content: ask for it whenever there may be reasoning. Not
     * always: models without reasoning refuse the include. */
    const json_t *caps = json_object_get(sb_job_route(job), "capabilities");
    json_t *include = json_array();
    if (reasoning_requested || reasoning_items || json_is_true(json_object_get(caps, "reasoning")))
        json_array_append_new(include, json_string("reasoning.encrypted_content"));
    if (json_object_get(body, "top_logprobs"))
        json_array_append_new(include, json_string("message.output_text.logprobs"));
    if (json_array_size(include) > 0)
        json_object_set(body, "include", include);
    json_decref(include);
    /* metadata is not sent: the gateway's stored metadata is its own. */
    json_object_set_new(body, "store", json_false());
    bool stream = !count && json_is_true(json_object_get(request, "stream"));
    json_object_set_new(body, "stream", json_boolean(stream));
    if (count) {
        const char *key;
        void *tmp;
        json_t *v;
        json_object_foreach_safe(body, tmp, key, v)
        {
            size_t k = 0;
            while (sb_oresp_count_fields[k] && strcmp(sb_oresp_count_fields[k], key))
                k++;
            if (!sb_oresp_count_fields[k])
                json_object_del(body, key);
        }
    }

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

static int sb_oresp_build_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_oresp_build(job, req, err, false);
}

static int sb_oresp_build_count_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_oresp_build(job, req, err, true);
}

/*
 * Response side.
 */

/* The id prefix OpenAI uses for an item type (for the rare item without one). */
static const char *sb_oresp_id_prefix(const char *type)
{
    static const char *const prefixes[][2] = {
        {"message", "msg_"},
        {"function_call", "fc_"},
        {"reasoning", "rs_"},
        {"web_search_call", "ws_"},
        {"file_search_call", "fs_"},
        {"code_interpreter_call", "ci_"},
        {"image_generation_call", "ig_"},
        {"mcp_call", "mcp_"},
        {"mcp_list_tools", "mcpl_"},
    };
    for (size_t i = 0; type && i < sizeof prefixes / sizeof prefixes[0]; i++)
        if (!strcmp(type, prefixes[i][0]))
            return prefixes[i][1];
    return "item_";
}

/*
 * One upstream output item -> a canonical item (new reference): the upstream
 * id kept (`id` is used when the item has none, else a fresh one), a
 * reasoning item's encrypted_content moved to upstream_encrypted_content.
 * `complete` checks what a finished item must have. NULL when malformed.
 */
static json_t *sb_oresp_item(const json_t *up, const char *id, bool complete)
{
    const char *type = json_string_value(json_object_get(up, "type"));
    if (!json_is_object(up) || !type)
        return NULL;
    json_t *it = json_deep_copy(up);
    if (!json_is_string(json_object_get(it, "id")) || json_string_length(json_object_get(it, "id")) == 0) {
        char fresh[SB_ID_MAX];
        if (!id) {
            sb_id_new(fresh, sizeof fresh, sb_oresp_id_prefix(type), 16);
            id = fresh;
        }
        json_object_set_new(it, "id", json_string(id));
    }
    if (!strcmp(type, "reasoning")) {
        /* Never shown as is: the gateway renders its own sealed
         * encrypted_content, and sends this one back to this upstream. */
        json_t *enc = json_object_get(it, "encrypted_content");
        if (json_is_string(enc))
            json_object_set(it, "upstream_encrypted_content", enc);
        json_object_del(it, "encrypted_content");
        if (!json_is_array(json_object_get(it, "summary")))
            json_object_set_new(it, "summary", json_array());
    } else if (!strcmp(type, "function_call")) {
        if (complete &&
            (!json_is_string(json_object_get(it, "call_id")) || !json_is_string(json_object_get(it, "name"))))
            goto fail;
        const json_t *args = json_object_get(it, "arguments");
        if (!json_is_string(args)) {
            char *s = args && !json_is_null(args) ? json_dumps(args, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
            json_object_set_new(it, "arguments", json_string(s ? s : ""));
            free(s);
        }
    } else if (!strcmp(type, "message")) {
        if (complete && !json_is_array(json_object_get(it, "content")))
            goto fail;
        if (!json_is_string(json_object_get(it, "role")))
            json_object_set_new(it, "role", json_string("assistant"));
    }
    return it;
fail:
    json_decref(it);
    return NULL;
}

/* The partial item an item_added carries for a complete item. */
static json_t *sb_oresp_partial(const json_t *it)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    const json_t *id = json_object_get(it, "id");
    if (!strcmp(type, "message"))
        return json_pack("{s:s, s:O, s:O, s:s, s:[]}", "type", "message", "id", id, "role", json_object_get(it, "role"),
                         "status", "in_progress", "content");
    if (!strcmp(type, "function_call"))
        return json_pack("{s:s, s:O, s:O, s:O, s:s, s:s}", "type", "function_call", "id", id, "call_id",
                         json_object_get(it, "call_id"), "name", json_object_get(it, "name"), "arguments", "", "status",
                         "in_progress");
    if (!strcmp(type, "reasoning"))
        return json_pack("{s:s, s:O, s:[]}", "type", "reasoning", "id", id, "summary");
    return json_deep_copy(it); /* built-in tool calls: nothing streams */
}

/* item_added, the deltas a streaming renderer needs, item_done (steals it). */
static void sb_oresp_emit_item(json_t *out, int index, json_t *it)
{
    const char *type = json_string_value(json_object_get(it, "type"));
    json_array_append_new(out, sb_event_item_added(index, sb_oresp_partial(it)));
    size_t i;
    const json_t *part;
    if (!strcmp(type, "message")) {
        json_array_foreach (json_object_get(it, "content"), i, part) {
            const json_t *text = json_object_get(part, "text");
            if (sb_oresp_is(json_string_value(json_object_get(part, "type")), "output_text") && json_is_string(text) &&
                json_string_length(text) > 0)
                json_array_append_new(
                    out, sb_event_text_delta(index, (int)i, json_string_value(text), json_string_length(text)));
        }
    } else if (!strcmp(type, "function_call")) {
        const json_t *args = json_object_get(it, "arguments");
        if (json_string_length(args) > 0)
            json_array_append_new(out, sb_event_args_delta(index, json_string_value(args), json_string_length(args)));
    } else if (!strcmp(type, "reasoning")) {
        json_array_foreach (json_object_get(it, "content"), i, part) {
            const json_t *text = json_object_get(part, "text");
            if (json_is_string(text) && json_string_length(text) > 0)
                json_array_append_new(
                    out, sb_event_reasoning_delta(index, json_string_value(text), json_string_length(text)));
        }
    }
    json_array_append_new(out, sb_event_item_done(index, it));
}

static bool sb_oresp_is_quota(const json_t *root)
{
    const json_t *e = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *type = json_string_value(json_object_get(e, "type"));
    return sb_oresp_is(code, "insufficient_quota") || sb_oresp_is(type, "insufficient_quota");
}

/* An upstream message that may be passed on: NULL when it contains the
 * route's credential (a misconfigured proxy may echo the request). */
static const char *sb_oresp_safe_message(const json_t *job, const char *msg)
{
    const char *ref = sb_job_route_str(job, "credential_ref");
    const char *cred = ref && *ref ? getenv(ref) : NULL;
    if (msg && cred && *cred && strstr(msg, cred))
        return NULL;
    return msg;
}

/*
 * The error event for a response that failed after a 2xx (status "failed",
 * or a streamed "error" event): error.code decides the status, the upstream
 * code is kept as the event's code.
 */
static json_t *sb_oresp_failed(const json_t *job, const json_t *error)
{
    const char *code = json_string_value(json_object_get(error, "code"));
    const char *msg = sb_oresp_safe_message(job, json_string_value(json_object_get(error, "message")));
    long status = 502; /* server_error and anything unknown: the upstream failed */
    bool quota = false;
    if (sb_oresp_is(code, "invalid_api_key")) {
        status = 401; /* the route's credential, in band: the operator's problem */
    } else if (sb_oresp_is(code, "rate_limit_exceeded")) {
        status = 429;
    } else if (sb_oresp_is(code, "insufficient_quota")) {
        status = 429;
        quota = true;
    } else if (sb_oresp_is(code, "vector_store_timeout")) {
        status = 408; /* -> 504 timeout */
    } else if (code && (!strncmp(code, "invalid_", 8) || !strncmp(code, "image_", 6) ||
                        !strcmp(code, "empty_image_file") || !strcmp(code, "failed_to_download_image") ||
                        !strcmp(code, "unsupported_image_media_type") || !strcmp(code, "context_length_exceeded"))) {
        status = 400; /* the input was refused: the client's to fix */
    }
    json_t *ev = sb_provider_upstream_error(status, error, msg ? msg : "upstream response failed", quota, -1);
    if (code && json_is_null(json_object_get(ev, "code")))
        json_object_set_new(ev, "code", json_string(code));
    return ev;
}

/* usage -> the usage event, or NULL without one. */
static json_t *sb_oresp_usage(const json_t *usage)
{
    if (!json_is_object(usage))
        return NULL;
    return sb_event_usage(
        json_integer_value(json_object_get(usage, "input_tokens")),
        json_integer_value(json_object_get(usage, "output_tokens")),
        json_integer_value(json_object_get(json_object_get(usage, "output_tokens_details"), "reasoning_tokens")));
}

/* A response object's outcome: the final event (completed, or error).
 * `status` is the response's status when it has none (a stream's terminal
 * event names it too). */
static json_t *sb_oresp_outcome(const json_t *job, const json_t *response, const char *status, int64_t upstream_ms)
{
    if (json_is_string(json_object_get(response, "status")))
        status = json_string_value(json_object_get(response, "status"));
    const char *model = json_string_value(json_object_get(response, "model"));
    if (!model)
        model = json_string_value(json_object_get(job, "model"));
    if (!status || !strcmp(status, "completed"))
        return sb_event_completed("completed", NULL, model, upstream_ms);
    if (!strcmp(status, "incomplete")) {
        const char *reason =
            json_string_value(json_object_get(json_object_get(response, "incomplete_details"), "reason"));
        return sb_event_completed("incomplete", reason, model, upstream_ms);
    }
    if (!strcmp(status, "failed"))
        return sb_oresp_failed(job, json_object_get(response, "error"));
    /* queued / in_progress (background was never asked for), cancelled. */
    char *msg = sb_xasprintf("upstream response ended with status '%.32s'", status);
    json_t *ev = sb_event_error(502, SB_ERR_UPSTREAM, NULL, msg);
    free(msg);
    return ev;
}

/* The error event for an upstream HTTP error status. */
static json_t *sb_oresp_http_error(const json_t *job, const sb_provider_response_t *resp, const json_t *root)
{
    /* A 401/403 never reaches the client with its text (OpenAI's quotes part
     * of the key: "Incorrect API key provided: sk-...abcd"); the status
     * mapping logs it, scrubbed, for the operator. */
    const char *msg = resp->status == 401 || resp->status == 403
                          ? sb_provider_error_message(root)
                          : sb_oresp_safe_message(job, sb_provider_error_message(root));
    return sb_provider_upstream_error(resp->status, root, msg, sb_oresp_is_quota(root), resp->retry_after);
}

static void sb_oresp_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *out = json_array(); /* events of a good response; appended only at the end */
    json_t *final = NULL;
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    if (resp->status < 200 || resp->status >= 300) {
        final = sb_oresp_http_error(job, resp, root);
        goto done;
    }
    if (!json_is_object(root)) {
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned malformed JSON");
        goto done;
    }
    const json_t *output = json_object_get(root, "output");
    const char *status = json_string_value(json_object_get(root, "status"));
    if (!json_is_array(output) && !sb_oresp_is(status, "failed")) {
        /* Some proxies answer 200 with an error body. */
        const char *m = sb_oresp_safe_message(job, sb_provider_error_message(root));
        final = sb_provider_upstream_error(502, root, m ? m : "upstream response has no output", false, -1);
        goto done;
    }
    final = sb_oresp_outcome(job, root, NULL, resp->upstream_ms);
    if (sb_event_type_of(final) == SB_EV_ERROR)
        goto done;
    size_t i;
    const json_t *up;
    json_array_foreach (output, i, up) {
        json_t *it = sb_oresp_item(up, NULL, true);
        if (!it) {
            json_decref(final);
            final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed output item");
            goto done;
        }
        sb_oresp_emit_item(out, (int)i, it);
    }
    json_t *usage = sb_oresp_usage(json_object_get(root, "usage"));
    if (usage)
        json_array_append_new(out, usage);
    json_array_extend(events, out);
done:
    json_array_append_new(events, final);
    json_decref(out);
    json_decref(root);
}

/* {"object":"response.input_tokens","input_tokens":N} -> usage + completed. */
static void sb_oresp_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    const json_t *n = json_object_get(root, "input_tokens");
    if (resp->status < 200 || resp->status >= 300) {
        json_array_append_new(events, sb_oresp_http_error(job, resp, root));
    } else if (!json_is_integer(n) || json_integer_value(n) < 0) {
        /* Some proxies answer 200 with an error body. */
        const char *m = sb_oresp_safe_message(job, sb_provider_error_message(root));
        json_array_append_new(events, sb_provider_error_for_status(
                                          502, m ? m : "upstream count response has no input_tokens", false, -1));
    } else {
        sb_provider_count_result(job, json_integer_value(n), resp->upstream_ms, events);
    }
    json_decref(root);
}

/*
 * Streaming: Responses server-sent events. Each "data:" payload is a JSON
 * event whose "type" says what it is:
 *   response.output_item.added  -> item_added
 *   response.output_text.delta  -> text_delta
 *   response.function_call_arguments.delta -> args_delta
 *   response.reasoning_text.delta -> reasoning_delta
 *   response.output_item.done   -> item_done (encrypted_content moved as above)
 *   response.completed / .incomplete -> usage now, completed at the end
 *   response.failed, error      -> the error event, at the end
 * Everything else (created, in_progress, content_part.*, *.done texts,
 * summary deltas, built-in tool progress) is implied by the events above.
 * Reasoning summary text arrives with the reasoning item's item_done: the
 * canonical events have no summary delta. The final event is held until
 * stream_finish, which knows upstream_ms. A 2xx body that is plain JSON (an
 * upstream that ignored "stream") is translated as a whole.
 */

/* One output item seen in the stream. */
typedef struct sb_oresp_slot {
    json_int_t output_index; /* the upstream's */
    char *id;                /* the item's id (the upstream's or generated) */
    bool done;
} sb_oresp_slot_t;

typedef struct sb_oresp_stream {
    const json_t *job;
    enum { SB_OSTREAM_START, SB_OSTREAM_SSE, SB_OSTREAM_JSON } mode;
    char *buf; /* SSE: the unfinished line; JSON: the whole body */
    size_t len, cap;
    /* SSE: how much of buf is known to hold no line end, so that a long line
     * (a generated image) arriving in many chunks is scanned once. */
    size_t scanned;
    char *data; /* the data lines of the event being read, joined by '\n' */
    size_t dlen, dcap;
    bool have_data;
    sb_oresp_slot_t *slots; /* item_index -> slot */
    size_t n_slots;
    json_t *final; /* the held final event, once the stream said it is over */
} sb_oresp_stream_t;

static void sb_oresp_append(char **buf, size_t *len, size_t *cap, const char *data, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t c = *cap ? *cap : 1024;
        while (c < *len + n + 1)
            c *= 2;
        *buf = sb_xrealloc(*buf, c);
        *cap = c;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

static void *sb_oresp_stream_new(const json_t *job)
{
    sb_oresp_stream_t *s = sb_xcalloc(1, sizeof *s);
    s->job = job;
    return s;
}

static void sb_oresp_stream_destroy(void *state)
{
    sb_oresp_stream_t *s = state;
    if (!s)
        return;
    for (size_t i = 0; i < s->n_slots; i++)
        free(s->slots[i].id);
    free(s->slots);
    free(s->buf);
    free(s->data);
    json_decref(s->final);
    free(s);
}

/* The item_index of an upstream output_index, or -1 if not added yet. */
static int sb_oresp_slot_find(const sb_oresp_stream_t *s, const json_t *ev)
{
    const json_t *oi = json_object_get(ev, "output_index");
    if (!json_is_integer(oi))
        return s->n_slots > 0 ? (int)s->n_slots - 1 : -1; /* the current item */
    for (size_t i = s->n_slots; i > 0; i--)
        if (s->slots[i - 1].output_index == json_integer_value(oi))
            return (int)i - 1;
    return -1;
}

/* Adds a slot for a translated item (borrowed) and emits its item_added,
 * with the item as it is, or its partial form (a done item never added).
 * Returns its item_index. */
static int sb_oresp_slot_add(sb_oresp_stream_t *s, const json_t *ev, const json_t *it, json_t *events, bool partial)
{
    s->slots = sb_xrealloc(s->slots, (s->n_slots + 1) * sizeof *s->slots);
    sb_oresp_slot_t *slot = &s->slots[s->n_slots];
    const json_t *oi = json_object_get(ev, "output_index");
    slot->output_index = json_is_integer(oi) ? json_integer_value(oi) : (json_int_t)s->n_slots;
    slot->id = sb_xstrdup(json_string_value(json_object_get(it, "id")));
    slot->done = false;
    int index = (int)s->n_slots++;
    json_array_append_new(events, sb_event_item_added(index, partial ? sb_oresp_partial(it) : json_deep_copy(it)));
    return index;
}

/* One SSE event's JSON payload. Returns 0, or -EBADMSG for a malformed one. */
static int sb_oresp_stream_event(sb_oresp_stream_t *s, const char *data, size_t len, json_t *events)
{
    if (s->final)
        return 0; /* over: nothing after the end counts */
    if (len == 6 && !memcmp(data, "[DONE]", 6))
        return 0;
    json_t *ev = json_loadb(data, len, 0, NULL);
    const char *type = json_string_value(json_object_get(ev, "type"));
    if (!json_is_object(ev) || !type) {
        json_decref(ev);
        return -EBADMSG;
    }
    int rc = 0;
    if (!strcmp(type, "response.output_item.added")) {
        json_t *it = sb_oresp_item(json_object_get(ev, "item"), NULL, false);
        if (it)
            sb_oresp_slot_add(s, ev, it, events, false);
        else
            rc = -EBADMSG;
        json_decref(it);
    } else if (!strcmp(type, "response.output_text.delta") || !strcmp(type, "response.function_call_arguments.delta") ||
               !strcmp(type, "response.reasoning_text.delta")) {
        int index = sb_oresp_slot_find(s, ev);
        const json_t *delta = json_object_get(ev, "delta");
        if (index >= 0 && json_is_string(delta) && json_string_length(delta) > 0) {
            const char *d = json_string_value(delta);
            size_t n = json_string_length(delta);
            if (type[9] == 'o') /* response.output_text.delta */
                json_array_append_new(
                    events,
                    sb_event_text_delta(index, (int)json_integer_value(json_object_get(ev, "content_index")), d, n));
            else if (type[9] == 'f')
                json_array_append_new(events, sb_event_args_delta(index, d, n));
            else
                json_array_append_new(events, sb_event_reasoning_delta(index, d, n));
        }
    } else if (!strcmp(type, "response.output_item.done")) {
        int index = sb_oresp_slot_find(s, ev);
        if (index >= 0 && s->slots[index].done)
            index = -1;
        json_t *it = sb_oresp_item(json_object_get(ev, "item"), index >= 0 ? s->slots[index].id : NULL, true);
        if (!it) {
            rc = -EBADMSG;
        } else {
            if (index < 0) /* never added: add it now */
                index = sb_oresp_slot_add(s, ev, it, events, true);
            s->slots[index].done = true;
            json_array_append_new(events, sb_event_item_done(index, it));
        }
    } else if (!strcmp(type, "response.completed") || !strcmp(type, "response.incomplete") ||
               !strcmp(type, "response.failed")) {
        const json_t *response = json_object_get(ev, "response");
        s->final = sb_oresp_outcome(s->job, response, type + 9, 0); /* "completed", ... */
        if (sb_event_type_of(s->final) == SB_EV_COMPLETED) {
            json_t *usage = sb_oresp_usage(json_object_get(response, "usage"));
            if (usage)
                json_array_append_new(events, usage);
        }
    } else if (!strcmp(type, "error")) {
        /* OpenAI puts code and message at the top; Open Responses nests them. */
        const json_t *error = json_object_get(ev, "error");
        s->final = sb_oresp_failed(s->job, json_is_object(error) ? error : ev);
    }
    json_decref(ev);
    return rc;
}

/* One complete SSE line (without its end of line). */
static int sb_oresp_stream_line(sb_oresp_stream_t *s, const char *line, size_t n, json_t *events)
{
    if (n == 0) { /* the blank line that ends an event */
        if (!s->have_data)
            return 0;
        int rc = sb_oresp_stream_event(s, s->data, s->dlen, events);
        s->dlen = 0;
        s->have_data = false;
        return rc;
    }
    if (n >= 5 && !memcmp(line, "data:", 5)) {
        line += 5;
        n -= 5;
        if (n > 0 && *line == ' ')
            line++, n--;
        if (s->have_data)
            sb_oresp_append(&s->data, &s->dlen, &s->dcap, "\n", 1);
        sb_oresp_append(&s->data, &s->dlen, &s->dcap, line, n);
        s->have_data = true;
    }
    /* "event:" (the type is in the data too), "id:", "retry:", ": comments". */
    return 0;
}

static int sb_oresp_stream_feed(void *state, const char *data, size_t len, json_t *events)
{
    sb_oresp_stream_t *s = state;
    if (s->mode == SB_OSTREAM_START) {
        size_t i = 0;
        while (i < len && (data[i] == ' ' || data[i] == '\t' || data[i] == '\r' || data[i] == '\n'))
            i++;
        if (i < len)
            s->mode = data[i] == '{' ? SB_OSTREAM_JSON : SB_OSTREAM_SSE;
    }
    if (len > SB_PROVIDER_MAX_BODY - s->len || len > SB_PROVIDER_MAX_BODY - s->dlen)
        return -E2BIG;
    sb_oresp_append(&s->buf, &s->len, &s->cap, data, len);
    if (s->mode != SB_OSTREAM_SSE)
        return 0; /* JSON (or only whitespace so far): translated at the end */
    size_t start = 0, i;
    for (i = s->scanned; i < s->len; i++) {
        if (s->buf[i] != '\n' && s->buf[i] != '\r')
            continue;
        if (s->buf[i] == '\r' && i + 1 == s->len)
            break; /* a CR at the end of the chunk: wait for a possible LF */
        int rc = sb_oresp_stream_line(s, s->buf + start, i - start, events);
        if (rc < 0)
            return rc;
        if (s->buf[i] == '\r' && s->buf[i + 1] == '\n')
            i++;
        start = i + 1;
    }
    memmove(s->buf, s->buf + start, s->len - start);
    s->len -= start;
    s->scanned = i - start;
    return 0;
}

static void sb_oresp_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events)
{
    sb_oresp_stream_t *s = state;
    if (s->mode != SB_OSTREAM_SSE) {
        sb_provider_response_t r = *resp;
        r.body = s->buf ? s->buf : "";
        r.body_len = s->len;
        sb_oresp_parse_response(s->job, &r, events);
        return;
    }
    /* A last event without its blank line still counts. */
    int rc = 0;
    if (s->len > 0) {
        size_t n = s->len;
        while (n > 0 && s->buf[n - 1] == '\r')
            n--;
        rc = sb_oresp_stream_line(s, s->buf, n, events);
        s->len = 0;
    }
    if (rc == 0)
        rc = sb_oresp_stream_line(s, "", 0, events);
    if (rc < 0) {
        json_array_append_new(events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream stream was malformed"));
        return;
    }
    if (!s->final) {
        json_array_append_new(events, sb_event_error(502, SB_ERR_UPSTREAM, NULL,
                                                     "upstream stream ended before the response was complete"));
        return;
    }
    if (sb_event_type_of(s->final) == SB_EV_COMPLETED)
        json_object_set_new(s->final, "upstream_ms", json_integer(resp->upstream_ms));
    json_array_append_new(events, s->final);
    s->final = NULL;
}

const sb_provider_t sb_provider_openai_responses = {
    .kind = SB_ORESP_KIND,
    .supports_n = false,
    .build_request = sb_oresp_build_request,
    .parse_response = sb_oresp_parse_response,
    .stream_new = sb_oresp_stream_new,
    .stream_feed = sb_oresp_stream_feed,
    .stream_finish = sb_oresp_stream_finish,
    .stream_destroy = sb_oresp_stream_destroy,
    .build_count_request = sb_oresp_build_count_request,
    .parse_count_response = sb_oresp_parse_count_response,
};
