/*
 * provider_anthropic_parse: the "anthropic" adapter's response side
 * (provider_anthropic.h): one translator, fed content blocks either from a
 * complete message (parse_response, here) or from SSE events
 * (provider_anthropic_stream.c); Anthropic's errors; the count_tokens reply.
 *
 * Messages response -> canonical events, in content block order:
 *   thinking           -> reasoning item with content [reasoning_text] and the
 *                         private field "signature"
 *   redacted_thinking  -> reasoning item with empty content and the private
 *                         field "redacted" (the opaque data)
 *   text blocks        -> one message item; consecutive text blocks are its
 *                         output_text parts (content_index 0, 1, ...)
 *   tool_use           -> function_call item, arguments the compact JSON input
 * then usage (cache reads and writes count as input) and completed:
 * stop_reason max_tokens / model_context_window_exceeded is incomplete
 * (max_output_tokens); refusal is completed, the last message then carrying a
 * refusal part instead of its text. Private fields are stripped by the
 * frontend from plain output (fe_reasoning.h).
 *
 * Token counting: {"input_tokens":N} -> usage + completed.
 */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "provider_anthropic.h"
#include "provider_util.h"
#include "sb_buf.h"
#include "sb_errkind.h"
#include "sb_event.h"
#include "sb_id.h"

/* What a refusal part says when the model stopped with stop_reason
 * "refusal" before writing any text. */
#define SB_ANTH_REFUSAL_TEXT "The model declined to respond."

void sb_anth_out_init(sb_anth_out_t *o, json_t *events)
{
    memset(o, 0, sizeof *o);
    o->events = events;
    o->msg_item = -1;
}

void sb_anth_out_clear(sb_anth_out_t *o)
{
    json_decref(o->msg_parts);
    json_decref(o->block_json);
    sb_buf_free(&o->text);
    sb_buf_free(&o->sig);
    memset(o, 0, sizeof *o);
    o->msg_item = -1;
}

static void sb_anth_open_message(sb_anth_out_t *o)
{
    o->msg_item = o->next_item++;
    sb_id_new(o->msg_id, sizeof o->msg_id, "msg_", 16);
    o->msg_parts = json_array();
    sb_anth_emit(
        o, sb_event_item_added(o->msg_item, json_pack("{s:s, s:s, s:s, s:s, s:[]}", "type", "message", "id", o->msg_id,
                                                      "role", "assistant", "status", "in_progress", "content")));
}

/* Ends the open message item. With refusal (stop_reason "refusal") the
 * message is the model declining: its text becomes one refusal part, and a
 * message is made for it when none is open. */
static void sb_anth_close_message(sb_anth_out_t *o, bool refusal)
{
    if (o->msg_item < 0 && !refusal)
        return;
    if (o->msg_item < 0)
        sb_anth_open_message(o);
    json_t *parts = o->msg_parts;
    o->msg_parts = NULL;
    if (refusal) {
        sb_buf_t text = {0};
        size_t i;
        const json_t *part;
        json_array_foreach (parts, i, part) {
            const json_t *t = json_object_get(part, "text");
            sb_buf_add(&text, json_string_value(t), json_string_length(t));
        }
        json_decref(parts);
        parts = json_pack("[{s:s, s:s}]", "type", "refusal", "refusal", text.len ? text.p : SB_ANTH_REFUSAL_TEXT);
        sb_buf_free(&text);
    }
    sb_anth_emit(
        o, sb_event_item_done(o->msg_item, json_pack("{s:s, s:s, s:s, s:s, s:o}", "type", "message", "id", o->msg_id,
                                                     "role", "assistant", "status", "completed", "content", parts)));
    o->msg_item = -1;
}

static void sb_anth_block_delta_text(sb_anth_out_t *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    if (o->msg_item < 0)
        sb_anth_open_message(o);
    sb_anth_emit(o, sb_event_text_delta(o->msg_item, (int)json_array_size(o->msg_parts), s, n));
    sb_buf_add(&o->text, s, n);
}

static void sb_anth_block_delta_thinking(sb_anth_out_t *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    sb_anth_emit(o, sb_event_reasoning_delta(o->block_item, s, n));
    sb_buf_add(&o->text, s, n);
}

static void sb_anth_block_delta_args(sb_anth_out_t *o, const char *s, size_t n)
{
    if (n == 0)
        return;
    sb_anth_emit(o, sb_event_args_delta(o->block_item, s, n));
    sb_buf_add(&o->text, s, n);
}

/* A content block starts: its item opens (a text block's message opens with
 * its first text). Whatever content the block already carries (all of it,
 * for a complete message) goes out as a delta. Returns 0, or -EINVAL for a
 * block that cannot be translated. */
int sb_anth_block_start(sb_anth_out_t *o, json_int_t index, const json_t *block)
{
    if (o->block != SB_ANTH_BLOCK_NONE) /* a missing content_block_stop */
        sb_anth_block_stop(o);
    const char *type = json_string_value(json_object_get(block, "type"));
    o->block_index = index;
    o->text.len = 0;
    o->sig.len = 0;
    if (!type) {
        return -EINVAL;
    } else if (!strcmp(type, "text")) {
        o->block = SB_ANTH_BLOCK_TEXT;
        const json_t *t = json_object_get(block, "text");
        sb_anth_block_delta_text(o, json_string_value(t), json_string_length(t));
        return 0;
    } else if (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking")) {
        bool redacted = !strcmp(type, "redacted_thinking");
        if (redacted && !json_is_string(json_object_get(block, "data")))
            return -EINVAL;
        sb_anth_close_message(o, false);
        o->block = redacted ? SB_ANTH_BLOCK_REDACTED : SB_ANTH_BLOCK_THINKING;
        o->block_item = o->next_item++;
        sb_id_new(o->block_id, sizeof o->block_id, "rs_", 16);
        o->block_json = json_incref((json_t *)block);
        sb_anth_emit(o, sb_event_item_added(o->block_item, json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning",
                                                                     "id", o->block_id, "summary", "content")));
        if (!redacted) {
            const json_t *t = json_object_get(block, "thinking");
            const json_t *sig = json_object_get(block, "signature");
            sb_anth_block_delta_thinking(o, json_string_value(t), json_string_length(t));
            if (json_is_string(sig))
                sb_buf_add(&o->sig, json_string_value(sig), json_string_length(sig));
        }
        return 0;
    } else if (!strcmp(type, "tool_use")) {
        const json_t *id = json_object_get(block, "id");
        const json_t *name = json_object_get(block, "name");
        if (!json_is_string(id) || !json_is_string(name))
            return -EINVAL;
        sb_anth_close_message(o, false);
        o->block = SB_ANTH_BLOCK_TOOL;
        o->block_item = o->next_item++;
        sb_id_new(o->block_id, sizeof o->block_id, "fc_", 16);
        o->block_json = json_incref((json_t *)block);
        sb_anth_emit(
            o, sb_event_item_added(o->block_item, json_pack("{s:s, s:s, s:O, s:O, s:s, s:s}", "type", "function_call",
                                                            "id", o->block_id, "call_id", id, "name", name, "arguments",
                                                            "", "status", "in_progress")));
        return 0;
    }
    /* Server tool blocks and the like: this adapter sends no built-in tools,
     * so none should come; newer block types are skipped, not fatal. */
    o->block = SB_ANTH_BLOCK_SKIP;
    return 0;
}

/* A content_block_delta for the block in progress. */
void sb_anth_block_delta(sb_anth_out_t *o, json_int_t index, const json_t *delta)
{
    if (o->block == SB_ANTH_BLOCK_NONE || index != o->block_index)
        return;
    const char *type = json_string_value(json_object_get(delta, "type"));
    if (!type)
        return;
    const json_t *v;
    if (o->block == SB_ANTH_BLOCK_TEXT && !strcmp(type, "text_delta")) {
        v = json_object_get(delta, "text");
        sb_anth_block_delta_text(o, json_string_value(v), json_string_length(v));
    } else if (o->block == SB_ANTH_BLOCK_THINKING && !strcmp(type, "thinking_delta")) {
        v = json_object_get(delta, "thinking");
        sb_anth_block_delta_thinking(o, json_string_value(v), json_string_length(v));
    } else if (o->block == SB_ANTH_BLOCK_THINKING && !strcmp(type, "signature_delta")) {
        v = json_object_get(delta, "signature");
        if (json_is_string(v))
            sb_buf_add(&o->sig, json_string_value(v), json_string_length(v));
    } else if (o->block == SB_ANTH_BLOCK_TOOL && !strcmp(type, "input_json_delta")) {
        v = json_object_get(delta, "partial_json");
        sb_anth_block_delta_args(o, json_string_value(v), json_string_length(v));
    }
    /* citations_delta and others: nothing canonical to carry them. */
}

/* The block in progress ends: its part joins the message, or its item is
 * done. */
void sb_anth_block_stop(sb_anth_out_t *o)
{
    switch (o->block) {
    case SB_ANTH_BLOCK_NONE:
    case SB_ANTH_BLOCK_SKIP:
        break;
    case SB_ANTH_BLOCK_TEXT:
        if (o->text.len > 0)
            json_array_append_new(o->msg_parts, json_pack("{s:s, s:s%, s:[]}", "type", "output_text", "text", o->text.p,
                                                          o->text.len, "annotations"));
        break;
    case SB_ANTH_BLOCK_THINKING: {
        json_t *item =
            json_pack("{s:s, s:s, s:[], s:[]}", "type", "reasoning", "id", o->block_id, "summary", "content");
        if (o->text.len > 0)
            json_array_append_new(json_object_get(item, "content"),
                                  json_pack("{s:s, s:s%}", "type", "reasoning_text", "text", o->text.p, o->text.len));
        if (o->sig.len > 0)
            json_object_set_new(item, "signature", json_stringn(o->sig.p, o->sig.len));
        sb_anth_emit(o, sb_event_item_done(o->block_item, item));
        break;
    }
    case SB_ANTH_BLOCK_REDACTED:
        sb_anth_emit(o, sb_event_item_done(o->block_item, json_pack("{s:s, s:s, s:[], s:[], s:O}", "type", "reasoning",
                                                                    "id", o->block_id, "summary", "content", "redacted",
                                                                    json_object_get(o->block_json, "data"))));
        break;
    case SB_ANTH_BLOCK_TOOL: {
        json_t *args;
        if (o->text.len > 0) { /* streamed: exactly the deltas sent */
            args = json_stringn(o->text.p, o->text.len);
        } else { /* a complete block: its input, compact */
            const json_t *input = json_object_get(o->block_json, "input");
            char *s = json_is_object(input) ? json_dumps(input, JSON_COMPACT) : NULL;
            args = json_string(s ? s : "{}");
            free(s);
            sb_anth_emit(o, sb_event_args_delta(o->block_item, json_string_value(args), json_string_length(args)));
        }
        if (!args) /* partial_json chunks that do not join into UTF-8 */
            args = json_string("{}");
        const json_t *b = o->block_json;
        sb_anth_emit(
            o, sb_event_item_done(o->block_item,
                                  json_pack("{s:s, s:s, s:O, s:O, s:o, s:s}", "type", "function_call", "id",
                                            o->block_id, "call_id", json_object_get(b, "id"), "name",
                                            json_object_get(b, "name"), "arguments", args, "status", "completed")));
        break;
    }
    }
    json_decref(o->block_json);
    o->block_json = NULL;
    o->block = SB_ANTH_BLOCK_NONE;
}

/* Takes the counters a usage object has (message_start's, message_delta's
 * cumulative ones, a complete message's). */
void sb_anth_take_usage(sb_anth_out_t *o, const json_t *usage)
{
    static const struct {
        const char *key;
        size_t off;
    } fields[] = {
        {"input_tokens", offsetof(sb_anth_out_t, in)},
        {"cache_read_input_tokens", offsetof(sb_anth_out_t, cache_read)},
        {"cache_creation_input_tokens", offsetof(sb_anth_out_t, cache_write)},
        {"output_tokens", offsetof(sb_anth_out_t, out)},
    };
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        const json_t *v = json_object_get(usage, fields[k].key);
        if (json_is_integer(v)) {
            *(int64_t *)((char *)o + fields[k].off) = json_integer_value(v);
            o->have_usage = true;
        }
    }
}

void sb_anth_take_stop_reason(sb_anth_out_t *o, const json_t *v)
{
    if (json_is_string(v))
        snprintf(o->stop_reason, sizeof o->stop_reason, "%s", json_string_value(v));
}

/* The message is over: closes what is open and sends usage. Anthropic does
 * not report reasoning tokens apart (they are in output_tokens). */
void sb_anth_end_items(sb_anth_out_t *o)
{
    sb_anth_block_stop(o);
    sb_anth_close_message(o, !strcmp(o->stop_reason, "refusal"));
    if (o->have_usage)
        sb_anth_emit(o, sb_event_usage(o->in + o->cache_read + o->cache_write, o->out, 0));
}

json_t *sb_anth_completed(const sb_anth_out_t *o, const json_t *job, int64_t upstream_us)
{
    bool cut = !strcmp(o->stop_reason, "max_tokens") || !strcmp(o->stop_reason, "model_context_window_exceeded");
    /* "model": the public model id, as every adapter reports it, not the
     * upstream's (dated) model name. */
    return sb_event_completed(cut ? "incomplete" : "completed", cut ? "max_output_tokens" : NULL,
                              json_string_value(json_object_get(job, "model")), upstream_us);
}

/* The error event for an Anthropic error: {"type":"error","error":{"type",
 * "message"}} (root may be NULL or anything else). 529 overloaded_error is
 * Anthropic's own status, a 503 to clients. */
json_t *sb_anth_error_event(long status, const json_t *root, long retry_after)
{
    if (status == 529)
        status = 503;
    return sb_provider_upstream_error(status, root, sb_provider_error_message(root), false, retry_after);
}

void sb_anth_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *out = json_array(); /* events of a good response; appended only at the end */
    json_t *final = NULL;
    sb_anth_out_t o;
    sb_anth_out_init(&o, out);
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    if (resp->status < 200 || resp->status >= 300) {
        final = sb_anth_error_event(resp->status, root, resp->retry_after);
        goto done;
    }
    if (!json_is_object(root)) {
        final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned malformed JSON");
        goto done;
    }
    const char *type = json_string_value(json_object_get(root, "type"));
    if (type && !strcmp(type, "error")) { /* a proxy answering 200 with an error */
        const char *etype = json_string_value(json_object_get(json_object_get(root, "error"), "type"));
        final = sb_anth_error_event(sb_errkind_anthropic_status(etype), root, resp->retry_after);
        goto done;
    }
    const json_t *content = json_object_get(root, "content");
    if (!json_is_array(content)) {
        const char *m = sb_provider_error_message(root);
        final = sb_provider_error_for_status(502, m ? m : "upstream response has no content", false, -1);
        goto done;
    }
    sb_anth_take_stop_reason(&o, json_object_get(root, "stop_reason"));
    sb_anth_take_usage(&o, json_object_get(root, "usage"));
    size_t i;
    const json_t *block;
    json_array_foreach (content, i, block) {
        if (sb_anth_block_start(&o, (json_int_t)i, block) < 0) {
            final = sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream returned a malformed content block");
            goto done;
        }
        sb_anth_block_stop(&o);
    }
    sb_anth_end_items(&o);
    json_array_extend(events, out);
    json_array_append_new(events, sb_anth_completed(&o, job, resp->upstream_us));
    goto out;
done:
    json_array_append_new(events, final);
out:
    sb_anth_out_clear(&o);
    json_decref(out);
    json_decref(root);
}

/* {"input_tokens": N} -> usage + completed; errors as for a message. */
void sb_anth_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events)
{
    json_t *root = json_loadb(resp->body ? resp->body : "", resp->body_len, 0, NULL);
    const json_t *n = json_object_get(root, "input_tokens");
    const char *type = json_string_value(json_object_get(root, "type"));
    if (resp->status < 200 || resp->status >= 300) {
        json_array_append_new(events, sb_anth_error_event(resp->status, root, resp->retry_after));
    } else if (type && !strcmp(type, "error")) {
        const char *etype = json_string_value(json_object_get(json_object_get(root, "error"), "type"));
        json_array_append_new(events, sb_anth_error_event(sb_errkind_anthropic_status(etype), root, resp->retry_after));
    } else if (!json_is_integer(n) || json_integer_value(n) < 0) {
        json_array_append_new(
            events, sb_event_error(502, SB_ERR_UPSTREAM, NULL, "upstream count response has no input_tokens"));
    } else {
        sb_provider_count_result(job, json_integer_value(n), resp->upstream_us, events);
    }
    json_decref(root);
}
