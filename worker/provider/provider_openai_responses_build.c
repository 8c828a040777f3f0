/*
 * provider_openai_responses_build: the openai-responses adapter's request
 * side (provider_openai_responses.h), and its vtable.
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
 * Token counting (a count job): POST {base_url}/responses/input_tokens with
 * the same body cut to what that endpoint takes (model, input, instructions,
 * tools, tool_choice, text, parallel_tool_calls, reasoning, truncation);
 * {"object":"response.input_tokens","input_tokens":N} -> usage + completed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h" /* sb_provider_t, for the vtable */
#include "provider_openai_responses.h"
#include "provider_util.h"
#include "sb_item.h"
#include "sb_job.h"

/* Private item fields only the gateway and an upstream see (fe_reasoning.h). */
static const char *const sb_oresp_private[] = {"signature", "redacted", "thought_signature",
                                               "upstream_encrypted_content", NULL};

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

/* One canonical content part -> a Responses content part. Text parts take the
 * type the role needs (the Responses API refuses input_text in an assistant
 * turn and output_text in the others). */
static json_t *sb_oresp_part(const json_t *part, bool assistant, size_t item, size_t index, json_t **err)
{
    switch (sb_part_type_of(part)) {
    case SB_PART_INPUT_TEXT:
    case SB_PART_OUTPUT_TEXT: {
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
    case SB_PART_INPUT_IMAGE: {
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
    case SB_PART_INPUT_FILE: {
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
    case SB_PART_REFUSAL: {
        const json_t *refusal = json_object_get(part, "refusal");
        if (!json_is_string(refusal)) {
            *err = sb_provider_invalid("input item %zu: refusal part %zu has no refusal text", item, index);
            return NULL;
        }
        return json_pack("{s:s, s:O}", "type", "refusal", "refusal", refusal);
    }
    case SB_PART_INPUT_AUDIO:
        *err = sb_provider_unsupported(
            "input_audio (input item %zu, content part %zu) is not supported by provider " SB_ORESP_KIND
            ": the Responses API takes no audio input",
            item, index);
        return NULL;
    default: /* reasoning parts, unknown types */
        break;
    }
    const char *t = json_string_value(json_object_get(part, "type"));
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

/* A message item (its role is known: sb_job_check). */
static json_t *sb_oresp_message(const json_t *it, size_t i, json_t **err)
{
    enum sb_role role = sb_role_of(it);
    bool assistant = role == SB_ROLE_ASSISTANT;
    json_t *content = sb_oresp_parts(json_object_get(it, "content"), assistant, i, err);
    if (!content)
        return NULL;
    json_t *o = json_pack("{s:s, s:s, s:o}", "type", "message", "role", sb_role_name(role), "content", content);
    if (assistant) {
        const json_t *id = json_object_get(it, "id");
        if (sb_oresp_prefixed(id, "msg_"))
            json_object_set(o, "id", (json_t *)id);
        sb_oresp_copy_string(o, it, "status");
        sb_oresp_copy_string(o, it, "phase"); /* newer models want it back */
    }
    return o;
}

/* A function_call item (call_id and name are strings: sb_job_check). */
static json_t *sb_oresp_function_call(const json_t *it)
{
    const json_t *call_id = json_object_get(it, "call_id");
    const json_t *name = json_object_get(it, "name");
    const json_t *args = json_object_get(it, "arguments");
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

/* A function_call_output item (call_id is a string: sb_job_check). */
static json_t *sb_oresp_function_output(const json_t *it, size_t i, json_t **err)
{
    const json_t *call_id = json_object_get(it, "call_id");
    const json_t *output = json_object_get(it, "output");
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
 * item was kept. The job's shape was checked on receipt (sb_job_check:
 * input an array, every item typed, a message's role known, a call's call_id
 * and name). */
static json_t *sb_oresp_input(const json_t *request, bool *reasoning, json_t **err)
{
    json_t *out = json_array();
    size_t i;
    const json_t *it;
    json_array_foreach (json_object_get(request, "input"), i, it) {
        json_t *o;
        switch (sb_item_type_of(it)) {
        case SB_ITEM_MESSAGE:
            o = sb_oresp_message(it, i, err);
            break;
        case SB_ITEM_FUNCTION_CALL:
            o = sb_oresp_function_call(it);
            break;
        case SB_ITEM_FUNCTION_CALL_OUTPUT:
            o = sb_oresp_function_output(it, i, err);
            break;
        case SB_ITEM_REASONING:
            o = sb_oresp_reasoning(it);
            if (!o)
                continue; /* the one allowed drop, see above */
            *reasoning = true;
            break;
        case SB_ITEM_UNKNOWN:
        default:
            /* Built-in tool calls and their outputs (web_search_call, ...)
             * replayed from stored output: this upstream made them. */
            o = json_deep_copy(it);
            for (size_t k = 0; sb_oresp_private[k]; k++)
                json_object_del(o, sb_oresp_private[k]);
            break;
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
        /* A function tool's name is a string (sb_job_check); a tool of another
         * type passes on as it is, so its type is checked here. */
        if (!strcmp(type, "function")) {
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

    const json_t *tools = json_object_get(request, "tools"); /* absent, null or an array: sb_job_check */
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

int sb_oresp_build_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_oresp_build(job, req, err, false);
}

int sb_oresp_build_count_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_oresp_build(job, req, err, true);
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
