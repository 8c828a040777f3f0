/*
 * provider_openai_chat_parse: the openai-chat adapter's response side
 * (provider_openai_chat.h).
 *
 * Chat response -> canonical events: per choice an optional reasoning item
 * ("reasoning_content" of vLLM and DeepSeek, "reasoning" of newer vLLM), the
 * message item (output_text and/or refusal), one function_call item per tool
 * call; with several choices each tagged "choice" and closed by choice_done;
 * then usage, completed.
 *
 * The item builders here serve the stream too, so a streamed answer ends in
 * exactly the items of the same answer sent whole.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider_openai_chat.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_job.h"

void sb_chat_new_id(char *out, size_t size, const char *prefix)
{
    sb_id_new(out, size, prefix, 16);
}

/* A reasoning item: partial (text NULL) or complete. New reference. */
json_t *sb_chat_reasoning_item(const char *id, const json_t *text)
{
    if (!text)
        return json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning", "id", id, "summary", "content");
    return json_pack("{s:s, s:s, s:[], s:[{s:s, s:O}]}", "type", "reasoning", "id", id, "summary", "content", "type",
                     "reasoning_text", "text", text);
}

/* A message item: partial (in_progress, no content) or complete with an
 * output_text part for text and a refusal part for refusal (either NULL).
 * New reference. */
json_t *sb_chat_message_item(const char *id, bool done, const json_t *text, const json_t *refusal)
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
json_t *sb_chat_call_item(const char *id, const json_t *call_id, const json_t *name, const json_t *arguments)
{
    if (!arguments)
        return json_pack("{s:s, s:s, s:O, s:O, s:s, s:s}", "type", "function_call", "id", id, "call_id", call_id,
                         "name", name, "arguments", "", "status", "in_progress");
    return json_pack("{s:s, s:s, s:O, s:O, s:O, s:s}", "type", "function_call", "id", id, "call_id", call_id, "name",
                     name, "arguments", arguments, "status", "completed");
}

/* usage -> the usage event (reasoning tokens are part of completion_tokens). */
json_t *sb_chat_usage(const json_t *usage)
{
    json_int_t reasoning_tokens =
        json_integer_value(json_object_get(json_object_get(usage, "completion_tokens_details"), "reasoning_tokens"));
    return sb_event_usage(json_integer_value(json_object_get(usage, "prompt_tokens")),
                          json_integer_value(json_object_get(usage, "completion_tokens")), reasoning_tokens);
}

/* Text of message.content (or a delta's): a string, or (some servers) an
 * array of parts. */
json_t *sb_chat_response_text(const json_t *content)
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

bool sb_chat_is_quota(const json_t *root)
{
    const json_t *e = json_object_get(root, "error");
    const char *code = json_string_value(json_object_get(e, "code"));
    const char *type = json_string_value(json_object_get(e, "type"));
    return (code && !strcmp(code, "insufficient_quota")) || (type && !strcmp(type, "insufficient_quota"));
}

/* finish_reason -> the canonical status and incomplete_reason. */
void sb_chat_finish(const json_t *choice, const char **status, const char **reason)
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
void sb_chat_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
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
                                                     resp->upstream_us));
    json_decref(out);
    json_decref(root);
    return;
done:
    json_array_append_new(events, final);
    json_decref(out);
    json_decref(root);
}
