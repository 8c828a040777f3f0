/*
 * fe_responses_render: a result as a Response object (the finished one, and
 * the in-progress and failed ones a stream shows), its output items as a
 * client sees them (no private fields; web_search_call sources only when
 * asked), its tools without the MCP secrets.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fe_reasoning.h"
#include "fe_responses_render.h"
#include "fe_responses_tools.h"

static bool fe_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

void fe_responses_split_name(const fe_parsed_t *parsed, json_t *item)
{
    json_t *hit = json_object_get(json_object_get(parsed->style_state, "namespaced"),
                                  json_string_value(json_object_get(item, "name")) ?: "");
    if (!hit || !fe_is(json_object_get(item, "type"), "function_call"))
        return;
    json_object_set(item, "namespace", json_array_get(hit, 0));
    json_object_set(item, "name", json_array_get(hit, 1));
}

static json_t *fe_json_or_null(json_t *v)
{
    return v ? json_incref(v) : json_null();
}

static json_t *fe_json_number_or(json_t *v, double dflt)
{
    return json_is_number(v) ? json_incref(v) : json_real(dflt);
}

/* A field the client sees only when it asked with include: null otherwise
 * (the field is always there, as OpenAI's). */
static void fe_responses_included(const fe_parsed_t *parsed, json_t *item, const char *field, const char *flag)
{
    if (!json_is_true(json_object_get(parsed->style_state, flag)))
        json_object_set_new(item, field, json_null());
    else if (!json_object_get(item, field))
        json_object_set_new(item, field, json_null());
}

void fe_responses_public_item(const fe_parsed_t *parsed, json_t *item)
{
    fe_reasoning_strip_private(item);
    json_t *type = json_object_get(item, "type");
    if (fe_is(type, "code_interpreter_call") || fe_is(type, "file_search_call") ||
        fe_is(type, "image_generation_call")) {
        json_object_del(item, "sb_output");
        json_object_del(item, "sb_files");
        if (fe_is(type, "code_interpreter_call"))
            fe_responses_included(parsed, item, "outputs", "include_ci_outputs");
        else if (fe_is(type, "file_search_call"))
            fe_responses_included(parsed, item, "results", "include_fs_results");
        return;
    }
    if (!fe_is(type, "web_search_call"))
        return;
    /* The text the model was given stays with the stored item, for the
     * next turn; the client asked for the sources or does not see them. */
    json_object_del(item, "sb_output");
    json_t *action = json_object_get(item, "action");
    if (json_is_object(action) && json_object_get(action, "sources") &&
        !json_is_true(json_object_get(parsed->style_state, "include_sources"))) {
        json_t *copy = json_copy(action); /* the item may share it (json_copy of the item is shallow) */
        json_object_del(copy, "sources");
        json_object_set_new(item, "action", copy);
    }
}

json_t *fe_responses_public_items(const fe_render_ctx_t *ctx, const json_t *items)
{
    bool seal = ctx->parsed->seal_reasoning;
    json_t *output = seal ? fe_reasoning_seal_items(&ctx->seal, items) : json_deep_copy(items);
    size_t i;
    json_t *it;
    json_array_foreach (output, i, it) {
        fe_responses_public_item(ctx->parsed, it);
        fe_responses_split_name(ctx->parsed, it);
    }
    return output;
}

json_t *fe_responses_object(const fe_collect_t *res, const fe_render_ctx_t *ctx, const char *status,
                            const fe_error_t *error)
{
    const fe_parsed_t *p = ctx->parsed;
    const json_t *echo = json_object_get(p->style_state, "echo"); /* fields of the body as sent */
    const json_t *c = p->canonical;
    bool final = !status;
    if (final)
        status = !strcmp(res->status, "incomplete") ? "incomplete" : "completed";
    bool incomplete = !strcmp(status, "incomplete");
    json_t *reasoning = json_object_get(c, "reasoning");
    json_t *text = json_object_get(c, "text");
    json_t *tool_choice = json_object_get(c, "tool_choice");
    json_t *tools = json_object_get(c, "tools");
    json_t *metadata = json_object_get(c, "metadata");
    json_t *ptc = json_object_get(c, "parallel_tool_calls");
    /* In progress: nothing yet; failed: what was completed before. */
    json_t *output = !strcmp(status, "in_progress") || !strcmp(status, "queued")
                         ? json_array()
                         : fe_responses_public_items(ctx, res->items);
    if (!output)
        return NULL;
    long long now = (long long)time(NULL);
    json_t *out = json_object();
    json_object_set_new(out, "id", json_string(p->response_id));
    json_object_set_new(out, "object", json_string("response"));
    json_object_set_new(out, "created_at", json_integer(ctx->start_ms / 1000));
    json_object_set_new(out, "completed_at", !strcmp(status, "completed") ? json_integer(now) : json_null());
    json_object_set_new(out, "status", json_string(status));
    json_object_set_new(out, "incomplete_details",
                        incomplete ? json_pack("{s:s}", "reason",
                                               res->incomplete_reason[0] ? res->incomplete_reason : "max_output_tokens")
                                   : json_null());
    json_object_set_new(out, "model", json_string(p->model_id) /* the public id: upstream names stay private */);
    json_object_set_new(out, "previous_response_id",
                        p->previous_response_id ? json_string(p->previous_response_id) : json_null());
    if (p->conversation_id)
        json_object_set_new(out, "conversation", json_pack("{s:s}", "id", p->conversation_id));
    json_object_set_new(out, "instructions", fe_json_or_null(json_object_get(c, "instructions")));
    json_object_set_new(out, "output", output);
    json_object_set_new(
        out, "error",
        error ? json_pack("{s:s, s:s}", "code", error->code[0] ? error->code : error->kind, "message", error->message)
              : json_null());
    json_object_set_new(out, "tools", fe_responses_tools_public(tools)); /* no MCP headers or authorization */
    json_object_set_new(out, "tool_choice", tool_choice ? json_incref(tool_choice) : json_string("auto"));
    json_object_set_new(out, "truncation",
                        json_string(json_is_string(json_object_get(echo, "truncation"))
                                        ? json_string_value(json_object_get(echo, "truncation"))
                                        : "disabled"));
    json_object_set_new(out, "parallel_tool_calls", ptc ? json_incref(ptc) : json_true());
    json_object_set_new(out, "text",
                        text && json_object_get(text, "format") ? json_incref(text)
                                                                : json_pack("{s:{s:s}}", "format", "type", "text"));
    json_object_set_new(out, "top_p", fe_json_number_or(json_object_get(c, "top_p"), 1.0));
    json_object_set_new(out, "presence_penalty", json_real(0));
    json_object_set_new(out, "frequency_penalty", json_real(0));
    json_object_set_new(out, "top_logprobs", json_integer(json_integer_value(json_object_get(c, "top_logprobs"))));
    json_object_set_new(out, "temperature", fe_json_number_or(json_object_get(c, "temperature"), 1.0));
    json_object_set_new(out, "reasoning",
                        json_pack("{s:O?, s:O?}", "effort", json_object_get(reasoning, "effort"), "summary",
                                  json_object_get(reasoning, "summary")));
    json_object_set_new(out, "usage",
                        !final ? json_null()
                               : json_pack("{s:I, s:{s:i}, s:I, s:{s:I}, s:I}", "input_tokens",
                                           (json_int_t)res->input_tokens, "input_tokens_details", "cached_tokens", 0,
                                           "output_tokens", (json_int_t)res->output_tokens, "output_tokens_details",
                                           "reasoning_tokens", (json_int_t)res->reasoning_tokens, "total_tokens",
                                           (json_int_t)(res->input_tokens + res->output_tokens)));
    json_object_set_new(out, "max_output_tokens", fe_json_or_null(json_object_get(c, "max_output_tokens")));
    json_object_set_new(out, "max_tool_calls", fe_json_or_null(json_object_get(c, "max_tool_calls")));
    json_object_set_new(out, "store", json_boolean(p->store));
    json_object_set_new(out, "background", json_boolean(p->background));
    json_object_set_new(out, "service_tier", json_string("default"));
    json_object_set_new(out, "metadata", metadata ? json_incref(metadata) : json_object());
    json_object_set_new(out, "safety_identifier", fe_json_or_null(json_object_get(echo, "safety_identifier")));
    json_object_set_new(out, "prompt_cache_key", fe_json_or_null(json_object_get(echo, "prompt_cache_key")));
    json_object_set_new(out, "user", fe_json_or_null(json_object_get(c, "user")));
    if (p->prompt_ref)
        json_object_set_new(out, "prompt",
                            json_pack("{s:O, s:O?, s:O?}", "id", json_object_get(p->prompt_ref, "id"), "version",
                                      json_object_get(p->prompt_ref, "version"), "variables",
                                      json_object_get(p->prompt_ref, "variables")));
    return out;
}

json_t *fe_responses_render(const fe_collect_t *res, const fe_render_ctx_t *ctx)
{
    return fe_responses_object(res, ctx, NULL, NULL);
}
