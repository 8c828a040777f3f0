/*
 * fe_chat_render: a result as a chat.completion: one choice per canonical
 * choice (message text -> content, refusals -> refusal, reasoning ->
 * reasoning_content, function_call items -> tool_calls), usage, and the
 * metadata of a stored completion.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_chat_render.h"
#include "sb_alloc.h"

/* Appends text to *dst (created on first use). */
static void fe_chat_append(json_t **dst, const json_t *text)
{
    if (!*dst)
        *dst = json_string("");
    size_t a = json_string_length(*dst), b = json_string_length(text);
    char *buf = sb_xmalloc(a + b + 1);
    memcpy(buf, json_string_value(*dst), a);
    memcpy(buf + a, json_string_value(text), b);
    json_string_setn(*dst, buf, a + b);
    free(buf);
}

/* One choice from its canonical output items. */
static json_t *fe_chat_choice(const fe_collect_t *res, int index)
{
    json_t *tool_calls = json_array();
    json_t *content = NULL, *refusal = NULL, *reasoning = NULL;
    size_t i;
    json_t *it;
    json_array_foreach (fe_collect_choice_items(res, index), i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (type && !strcmp(type, "function_call")) {
            json_array_append_new(tool_calls,
                                  json_pack("{s:O, s:s, s:{s:O, s:O}}", "id", json_object_get(it, "call_id"), "type",
                                            "function", "function", "name", json_object_get(it, "name"), "arguments",
                                            json_object_get(it, "arguments")));
        } else if (type && !strcmp(type, "message")) {
            size_t j;
            json_t *p;
            json_array_foreach (json_object_get(it, "content"), j, p) {
                const char *pt = json_string_value(json_object_get(p, "type"));
                bool is_refusal = pt && !strcmp(pt, "refusal");
                json_t *text = json_object_get(p, is_refusal ? "refusal" : "text");
                if (json_is_string(text))
                    fe_chat_append(is_refusal ? &refusal : &content, text);
            }
        } else if (type && !strcmp(type, "reasoning")) {
            size_t j;
            json_t *p;
            json_array_foreach (json_object_get(it, "content"), j, p) {
                json_t *text = json_object_get(p, "text");
                if (json_is_string(text))
                    fe_chat_append(&reasoning, text);
            }
        }
    }
    const char *status = fe_collect_choice_status(res, index);
    const char *why = fe_collect_choice_reason(res, index);
    const char *finish = json_array_size(tool_calls) > 0 ? "tool_calls"
                         : !strcmp(status, "incomplete")
                             ? (!strcmp(why, "content_filter") ? "content_filter" : "length")
                             : "stop";
    json_t *message =
        json_pack("{s:s, s:o, s:o, s:[]}", "role", "assistant", "content", content ? content : json_null(), "refusal",
                  refusal ? refusal : json_null(), "annotations");
    if (json_array_size(tool_calls) > 0)
        json_object_set(message, "tool_calls", tool_calls);
    if (reasoning) /* as OpenAI-compatible servers (vLLM, DeepSeek) return it */
        json_object_set_new(message, "reasoning_content", reasoning);
    json_decref(tool_calls);
    return json_pack("{s:i, s:o, s:n, s:s}", "index", index, "message", message, "logprobs", "finish_reason", finish);
}

json_t *fe_chat_render(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    const fe_parsed_t *p = ctx->parsed;
    json_t *choices = json_array();
    for (int k = 0; k < p->n; k++)
        json_array_append_new(choices, fe_chat_choice(res, k));
    json_t *out = json_pack(
        "{s:s, s:s, s:I, s:s, s:o, s:{s:I, s:I, s:I, s:{s:i, s:i}, s:{s:I, s:i, s:i, s:i}}, s:s, "
        "s:n}",
        "id", p->response_id, "object", "chat.completion", "created", (json_int_t)(ctx->start_ms / 1000), "model",
        p->model_id, "choices", choices, "usage", "prompt_tokens", (json_int_t)res->input_tokens, "completion_tokens",
        (json_int_t)res->output_tokens, "total_tokens", (json_int_t)(res->input_tokens + res->output_tokens),
        "prompt_tokens_details", "cached_tokens", 0, "audio_tokens", 0, "completion_tokens_details", "reasoning_tokens",
        (json_int_t)res->reasoning_tokens, "audio_tokens", 0, "accepted_prediction_tokens", 0,
        "rejected_prediction_tokens", 0, "service_tier", "default", "system_fingerprint");
    json_t *md = json_object_get(p->canonical, "metadata");
    if (p->store)
        json_object_set_new(out, "metadata", md ? json_incref(md) : json_object());
    return out;
}
