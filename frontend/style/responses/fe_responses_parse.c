/*
 * fe_responses_parse: the Responses style (POST /v1/responses), its entry:
 * Bearer auth, input items -> canonical request, OpenAI error body. The
 * canonical model is this style's superset, so translation here is mostly
 * normalisation. The result is rendered as a Response object by
 * fe_responses_render.c, streamed by fe_stream_responses.c.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_features.h"
#include "fe_items.h"
#include "fe_openai.h"
#include "fe_params.h"
#include "fe_prompt.h"
#include "fe_responses_render.h"
#include "fe_responses_store.h"
#include "fe_responses_tools.h"
#include "fe_structured.h"
#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

/* Every field OpenAI's Responses API takes today (docs/compatibility.md says
 * what each does here). Those not read below are accepted and ignored
 * because they change nothing in the answer: client_metadata (a client's
 * telemetry, sent by Codex on every request), prompt_cache_options and
 * prompt_cache_retention (caching hints), service_tier, stream_options
 * (obfuscation padding),
 * moderation, context_management (compaction past a threshold the
 * gateway's context check refuses first). prompt_cache_key and
 * safety_identifier are carried to an openai-responses upstream. */
static const char *const fe_responses_params[] = {"model",
                                                  "input",
                                                  "instructions",
                                                  "previous_response_id",
                                                  "store",
                                                  "include",
                                                  "reasoning",
                                                  "text",
                                                  "tools",
                                                  "tool_choice",
                                                  "parallel_tool_calls",
                                                  "stream",
                                                  "max_output_tokens",
                                                  "temperature",
                                                  "top_p",
                                                  "metadata",
                                                  "user",
                                                  "truncation",
                                                  "service_tier",
                                                  "safety_identifier",
                                                  "prompt_cache_key",
                                                  "max_tool_calls",
                                                  "top_logprobs",
                                                  "background",
                                                  "stream_options",
                                                  "prompt",
                                                  "client_metadata",
                                                  "prompt_cache_options",
                                                  "prompt_cache_retention",
                                                  "moderation",
                                                  "context_management",
                                                  "conversation",
                                                  NULL};

static const char *const fe_responses_includes[] = {"reasoning.encrypted_content",
                                                    "message.output_text.logprobs",
                                                    "message.input_image.image_url",
                                                    "file_search_call.results",
                                                    "web_search_call.results",
                                                    "web_search_call.action.sources",
                                                    "code_interpreter_call.outputs",
                                                    "computer_call_output.output.image_url",
                                                    NULL};

static bool fe_in_list(const char *s, const char *const *list)
{
    for (size_t i = 0; s && list[i]; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

static int fe_responses_unsupported(fe_error_t *err, const char *param, const char *why)
{
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param, "unsupported parameter: %s", why);
    return -1;
}

/* Parameters that exist elsewhere but not in this style get a clear 400. */
static int fe_responses_foreign_params(const json_t *body, fe_error_t *err)
{
    if (json_object_get(body, "n"))
        return fe_responses_unsupported(err, "n",
                                        "'n' is not supported in the Responses API: exactly one generation "
                                        "is returned per request (use Chat Completions for several choices).");
    if (json_object_get(body, "modalities") || json_object_get(body, "audio"))
        return fe_responses_unsupported(err, json_object_get(body, "audio") ? "audio" : "modalities",
                                        "audio is not supported in the Responses API; use Chat Completions for audio.");
    if (json_object_get(body, "messages"))
        return fe_responses_unsupported(err, "messages",
                                        "'messages' belongs to Chat Completions; the Responses API takes 'input'.");
    if (json_object_get(body, "contents"))
        return fe_responses_unsupported(err, "contents",
                                        "'contents' belongs to Generate Content; the Responses API takes 'input'.");
    return 0;
}

static int fe_responses_include(const fe_style_in_t *in, fe_parsed_t *out, const json_t *body, fe_error_t *err)
{
    json_t *inc = fe_params_typed(body, "include", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    size_t i;
    json_t *v;
    json_array_foreach (inc, i, v) {
        const char *s = json_string_value(v);
        if (!fe_in_list(s, fe_responses_includes)) {
            fe_params_invalid(err, "include", "Invalid value for 'include[%zu]': '%.60s' is not a supported value.", i,
                              s ? s : "(not a string)");
            return -1;
        }
        if (!strcmp(s, "web_search_call.action.sources")) /* shown by fe_responses_public_items */
            json_object_set_new(out->style_state, "include_sources", json_true());
        if (!strcmp(s, "code_interpreter_call.outputs"))
            json_object_set_new(out->style_state, "include_ci_outputs", json_true());
        if (!strcmp(s, "file_search_call.results"))
            json_object_set_new(out->style_state, "include_fs_results", json_true());
        if (!strcmp(s, "reasoning.encrypted_content")) {
            if (!in->seal.key)
                return fe_responses_unsupported(err, "include",
                                                "encrypted reasoning is not configured on this gateway.");
            out->seal_reasoning = true;
        }
    }
    return 0;
}

static int fe_responses_reasoning(const json_t *body, json_t *c, fe_error_t *err)
{
    static const char *const efforts[] = {"none", "minimal", "low", "medium", "high", "xhigh", "max", NULL};
    static const char *const summaries[] = {"auto", "concise", "detailed", NULL};
    json_t *reasoning = fe_params_typed(body, "reasoning", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (!json_is_object(reasoning))
        return 0;
    /* The keys of openai-python's Reasoning; any other is OpenAI's 400
     * unknown_parameter, never silently dropped. */
    static const char *const keys[] = {"effort", "summary", "generate_summary", "context", "mode", NULL};
    if (fe_params_only_nested(reasoning, "reasoning", keys, err) < 0)
        return -1;
    /* context and mode at their defaults change nothing; other values would
     * change what the model sees or how hard it works, which the gateway
     * cannot ask of every upstream: refused rather than ignored. */
    json_t *ctx = json_object_get(reasoning, "context");
    if (ctx && !json_is_null(ctx) && !(json_is_string(ctx) && !strcmp(json_string_value(ctx), "auto")))
        return fe_responses_unsupported(err, "reasoning.context",
                                        "'reasoning.context' other than 'auto' is not available on this gateway.");
    json_t *mode = json_object_get(reasoning, "mode");
    if (mode && !json_is_null(mode) && !(json_is_string(mode) && !strcmp(json_string_value(mode), "standard")))
        return fe_responses_unsupported(err, "reasoning.mode",
                                        "'reasoning.mode' other than 'standard' is not available on this gateway.");
    json_t *effort = json_object_get(reasoning, "effort");
    json_t *summary = json_object_get(reasoning, "summary");
    if (!summary)
        summary = json_object_get(reasoning, "generate_summary");
    json_t *out = json_object();
    if (effort && !json_is_null(effort)) {
        if (!fe_in_list(json_string_value(effort), efforts)) {
            json_decref(out);
            fe_params_invalid(err, "reasoning.effort",
                              "Invalid value for 'reasoning.effort': expected one of 'none', "
                              "'minimal', 'low', 'medium', 'high', 'xhigh', 'max'.");
            return -1;
        }
        json_object_set(out, "effort", effort);
    }
    if (summary && !json_is_null(summary)) {
        if (!fe_in_list(json_string_value(summary), summaries)) {
            json_decref(out);
            fe_params_invalid(err, "reasoning.summary",
                              "Invalid value for 'reasoning.summary': expected one of "
                              "'auto', 'concise', 'detailed'.");
            return -1;
        }
        json_object_set(out, "summary", summary);
    }
    json_object_set_new(c, "reasoning", out);
    return 0;
}

static int fe_responses_text(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *text = fe_params_typed(body, "text", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (!json_is_object(text))
        return 0;
    /* openai-python's ResponseTextConfigParam has these two keys; any other
     * is OpenAI's 400 unknown_parameter ("Unknown parameter: 'text.foo'."). */
    static const char *const keys[] = {"format", "verbosity", NULL};
    static const char *const verbosities[] = {"low", "medium", "high", NULL};
    if (fe_params_only_nested(text, "text", keys, err) < 0)
        return -1;
    json_t *verbosity = json_object_get(text, "verbosity");
    if (verbosity && !json_is_null(verbosity) && !fe_in_list(json_string_value(verbosity), verbosities)) {
        fe_params_invalid(err, "text.verbosity",
                          "Invalid value for 'text.verbosity': expected one of 'low', 'medium', 'high'.");
        return -1;
    }
    json_t *out = json_object();
    json_t *fmt = json_object_get(text, "format");
    if (fmt && !json_is_null(fmt)) {
        /* text.format's own keys per type (ResponseFormatTextConfigParam);
         * fe_structured_format serves other styles' flattened shapes too, so
         * the Responses key set is checked here. */
        static const char *const plain_keys[] = {"type", NULL};
        static const char *const schema_keys[] = {"type", "name", "schema", "strict", "description", NULL};
        const char *ftype = json_string_value(json_object_get(fmt, "type"));
        if (json_is_object(fmt) && ftype &&
            fe_params_only_nested(fmt, "text.format", !strcmp(ftype, "json_schema") ? schema_keys : plain_keys, err) <
                0) {
            json_decref(out);
            return -1;
        }
        json_t *f = fe_structured_format(fmt, "text.format", err);
        if (!f) {
            json_decref(out);
            return -1;
        }
        json_object_set_new(out, "format", f);
    }
    if (json_is_string(verbosity))
        json_object_set(out, "verbosity", verbosity);
    json_object_set_new(c, "text", out);
    return 0;
}

/* A namespace tool {"type":"namespace","name","description","tools":[function
 * tools]} becomes flat function tools named "<namespace>__<name>", the form
 * every upstream kind can take; the joined names are kept in style_state
 * "namespaced" so fe_responses_split_name shows the model's calls to the
 * client as OpenAI does (name + namespace), and fe_items joins them again
 * when the client sends the calls back. */
static bool fe_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

static int fe_responses_namespace(fe_parsed_t *parsed, const json_t *t, const char *param, json_t *out, fe_error_t *err)
{
    const char *ns = json_string_value(json_object_get(t, "name"));
    json_t *inner = json_object_get(t, "tools");
    if (!ns || !*ns || !json_is_array(inner)) {
        fe_params_invalid(err, param, "'%s' of type namespace needs a string 'name' and a 'tools' array.", param);
        return -1;
    }
    json_t *map = json_object_get(parsed->style_state, "namespaced");
    if (!map) {
        map = json_object();
        json_object_set_new(parsed->style_state, "namespaced", map);
    }
    size_t i;
    json_t *fn;
    json_array_foreach (inner, i, fn) {
        char p[64];
        snprintf(p, sizeof p, "%s.tools[%zu]", param, i);
        const char *name = json_string_value(json_object_get(fn, "name"));
        if (!fe_is(json_object_get(fn, "type"), "function") || !name) {
            fe_params_invalid(err, p, "Invalid value for '%s': a namespace holds function tools with a 'name'.", p);
            return -1;
        }
        char *joined = sb_xasprintf("%s__%s", ns, name);
        if (fe_responses_tool_name_check(joined, param, err) < 0) { /* a namespace "sb" would make one */
            free(joined);
            return -1;
        }
        json_t *flat = json_deep_copy(fn);
        json_object_set_new(flat, "name", json_string(joined));
        json_t *nt = fe_structured_function(flat, FE_STRICT_AUTO, p, err);
        json_decref(flat);
        if (nt)
            json_object_set_new(map, joined, json_pack("[s, s]", ns, name));
        free(joined);
        if (!nt)
            return -1;
        json_array_append_new(out, nt);
    }
    return 0;
}

static int fe_responses_tools(fe_parsed_t *parsed, const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *tools = fe_params_typed(body, "tools", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char param[32];
        snprintf(param, sizeof param, "tools[%zu]", i);
        const char *type = json_string_value(json_object_get(t, "type"));
        json_t *nt = NULL;
        if (type && !strcmp(type, "function")) {
            if (fe_responses_tool_name_check(json_string_value(json_object_get(t, "name")), param, err) == 0)
                nt = fe_structured_function(t, FE_STRICT_AUTO, param, err); /* strict when the schema allows */
        } else if (fe_responses_tool_checked(type)) {
            nt = fe_responses_tool_check(t, param, err); /* gateway-run: web search, mcp (docs/tools.md) */
        } else if (fe_features_builtin_tool(type)) {
            nt = json_deep_copy(t);
        } else if (type && !strcmp(type, "namespace")) {
            if (fe_responses_namespace(parsed, t, param, out, err) < 0) {
                json_decref(out);
                return -1;
            }
            continue;
        } else {
            fe_params_invalid(err, param, "Invalid value for '%s.type': '%.40s' is not a supported tool type.", param,
                              type ? type : "(none)");
        }
        if (!nt) {
            json_decref(out);
            return -1;
        }
        json_array_append_new(out, nt);
    }
    if (fe_responses_tools_check_labels(tools, err) < 0) {
        json_decref(out);
        return -1;
    }
    if (json_array_size(out) > 0)
        json_object_set(c, "tools", out);
    json_t *choice = fe_params_typed(body, "tool_choice", FE_P_STRING | FE_P_OBJECT | FE_P_NULL, err);
    int rc = err->status ? -1 : fe_structured_tool_choice(choice, out, c, err);
    json_decref(out);
    return rc;
}

/* conversation (an id, or {"id"}): the Conversations API is not offered
 * yet, so no conversation exists and the id is not found, as OpenAI answers
 * for an id it does not know; ignoring it would drop the conversation's
 * history from the answer. client_metadata and context_management are
 * checked for their type only. */
static int fe_responses_conversation(const json_t *body, fe_parsed_t *out, fe_error_t *err)
{
    json_t *conv = fe_params_typed(body, "conversation", FE_P_STRING | FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    fe_params_typed(body, "client_metadata", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    fe_params_typed(body, "context_management", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    const char *id = json_is_object(conv) ? json_string_value(json_object_get(conv, "id")) : json_string_value(conv);
    if (!conv || json_is_null(conv))
        return 0;
    if (!id || !*id || strlen(id) > 128) {
        fe_params_invalid(err, json_is_object(conv) ? "conversation.id" : "conversation",
                          "Invalid 'conversation': expected a conversation id.");
        return -1;
    }
    const json_t *prev = json_object_get(body, "previous_response_id");
    if (prev && !json_is_null(prev)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "mutually_exclusive_parameters", "conversation",
                     "Mutually exclusive parameters: Ensure you are only providing one of: 'previous_response_id' or "
                     "'conversation'.");
        return -1;
    }
    out->conversation_id = sb_xstrdup(id);
    return 0;
}

/* Fields of the body the Response object echoes and the canonical request
 * does not carry as sent: kept in style_state "echo" for the render. */
static void fe_responses_echo(const json_t *body, fe_parsed_t *out)
{
    static const char *const fields[] = {"truncation", "safety_identifier", "prompt_cache_key"};
    json_t *echo = json_object();
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
        json_t *v = json_object_get(body, fields[i]);
        if (v)
            json_object_set(echo, fields[i], v);
    }
    json_object_set_new(out->style_state, "echo", echo);
}

static int fe_responses_parse(const fe_style_in_t *in, json_t *body, fe_parsed_t *out, fe_error_t *err)
{
    if (fe_responses_foreign_params(body, err) < 0 ||
        fe_params_only(body, fe_responses_params, "Unknown parameter: '%s'.", err) < 0)
        return -1;
    const char *model = fe_params_required_string(body, "model", err);
    if (!model)
        return -1;
    out->model_id = sb_xstrdup(model);
    json_t *prompt = fe_params_typed(body, "prompt", FE_P_OBJECT | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_object(prompt)) {
        if (fe_prompt_check_ref(prompt, err) < 0)
            return -1;
        out->prompt_ref = json_deep_copy(prompt);
    }
    json_t *input = json_object_get(body, "input");
    if (!out->prompt_ref && !(input = fe_params_require(body, "input", err)))
        return -1;
    json_t *stream = fe_params_typed(body, "stream", FE_P_BOOL | FE_P_NULL, err);
    json_t *background = fe_params_typed(body, "background", FE_P_BOOL | FE_P_NULL, err);
    if (err->status)
        return -1;
    out->stream = json_is_true(stream);
    out->background = json_is_true(background);
    json_t *c = json_object();
    out->canonical = c;
    json_t *items = input && !json_is_null(input) ? fe_items_normalize(input, "input", err) : json_array();
    if (!items)
        return -1;
    fe_items_assign_ids(items);
    json_object_set_new(c, "input", items);
    if (fe_params_copy(body, "instructions", FE_P_STRING, 0, 0, c, "instructions", err) < 0 ||
        fe_params_copy(body, "max_output_tokens", FE_P_INT, 1, 1e9, c, "max_output_tokens", err) < 0 ||
        fe_params_copy(body, "temperature", FE_P_NUMBER, 0, 2, c, "temperature", err) < 0 ||
        fe_params_copy(body, "top_p", FE_P_NUMBER, 0, 1, c, "top_p", err) < 0 ||
        fe_params_copy(body, "user", FE_P_STRING, 0, 0, c, "user", err) < 0 ||
        fe_params_copy(body, "parallel_tool_calls", FE_P_BOOL, 0, 0, c, "parallel_tool_calls", err) < 0 ||
        fe_params_copy(body, "max_tool_calls", FE_P_INT, 1, 1e6, c, "max_tool_calls", err) < 0 ||
        fe_params_copy(body, "top_logprobs", FE_P_INT, 0, 20, c, "top_logprobs", err) < 0 ||
        fe_params_copy(body, "prompt_cache_key", FE_P_STRING, 0, 0, c, "prompt_cache_key", err) < 0 ||
        fe_params_copy(body, "safety_identifier", FE_P_STRING, 0, 0, c, "safety_identifier", err) < 0 ||
        fe_params_metadata(body, c, err) < 0 || fe_responses_include(in, out, body, err) < 0 ||
        fe_responses_reasoning(body, c, err) < 0 || fe_responses_text(body, c, err) < 0 ||
        fe_responses_tools(out, body, c, err) < 0 || fe_responses_conversation(body, out, err) < 0)
        return -1;
    json_t *store = fe_params_typed(body, "store", FE_P_BOOL | FE_P_NULL, err);
    json_t *prev = fe_params_typed(body, "previous_response_id", FE_P_STRING | FE_P_NULL, err);
    json_t *truncation = fe_params_typed(body, "truncation", FE_P_STRING | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_string(truncation) && strcmp(json_string_value(truncation), "auto") != 0 &&
        strcmp(json_string_value(truncation), "disabled") != 0) {
        fe_params_invalid(err, "truncation", "Invalid value for 'truncation': expected 'auto' or 'disabled'.");
        return -1;
    }
    if (json_is_false(store))
        out->store = false;
    if (out->background && !out->store) {
        /* A background response is polled and resumed from its stored copy. */
        fe_params_invalid(err, "background", "Background mode requires 'store' to be true.");
        return -1;
    }
    if (json_is_string(prev))
        out->previous_response_id = sb_xstrdup(json_string_value(prev));
    fe_responses_echo(body, out);
    sb_id_new_ordered(out->response_id, sizeof out->response_id, "resp_", 24);
    return 0;
}

const fe_style_t fe_style_responses = {
    .name = "responses",
    .key_hint = "'Authorization: Bearer <API_KEY>'",
    .max_tokens_param = "max_output_tokens",
    .input_param = "input",
    .format_param = "text.format",
    .effort_param = "reasoning.effort",
    .parts_param = "input",
    .key = fe_openai_bearer_key,
    .error_body = fe_openai_error_body,
    .parse = fe_responses_parse,
    .render = fe_responses_render,
    .store = fe_responses_store_save,
    .stream = &fe_stream_responses,
};
