/*
 * fe_messages_parse: the Messages style (POST /v1/messages, Anthropic's wire
 * format): x-api-key (or Bearer) auth, the anthropic-version header,
 * messages and content blocks -> canonical request, result -> message
 * object, Anthropic's error body.
 *
 * Translation, request side:
 *   system (string | text blocks)       -> instructions, joined "\n\n"
 *   text blocks                         -> input_text / output_text parts
 *   image {base64 | url | file}         -> input_image (data URL, URL, file_id)
 *   document {base64 PDF | text | file} -> input_file (data URL + filename)
 *   tool_use (assistant)                -> function_call (arguments: compact JSON)
 *   tool_result (user)                  -> function_call_output
 *   thinking / redacted_thinking        -> the reasoning item their signature /
 *                                          data seals (tokens this gateway issued)
 *   tools (custom), tool_choice         -> function tools (non-strict by default),
 *                                          tool_choice, parallel_tool_calls
 *   tools web_search_*, mcp_toolset,    -> built-in web_search and mcp tools the gateway
 *   mcp_servers; server tool blocks        runs, and their items (fe_messages_tools.c)
 *   tools code_execution_20250522,      -> the built-in code_interpreter tool, and its
 *   container; its blocks                  items (fe_messages_code.c)
 *   thinking {enabled, budget_tokens}   -> reasoning {effort, budget_tokens}
 *   output_config.format json_schema    -> text.format (strict)
 * Response side: reasoning -> thinking blocks (signature = the sealed item),
 * message parts -> text blocks, function_call -> tool_use blocks; with
 * "stream": true the same message as Anthropic's event stream
 * (fe_stream_messages.c, built from the helpers in fe_messages_render.h).
 * This style stores nothing: a message is not retrievable later.
 *
 * POST /v1/messages/count_tokens takes the same body without max_tokens and
 * the output-only fields, and answers {"input_tokens": N} as the model's
 * upstream counts it.
 *
 * The style's files: this one (headers, the request's top-level fields, the
 * style's vtable), fe_messages_content.c (messages and content blocks),
 * fe_messages_tools.c (server tools, MCP servers and their blocks),
 * fe_messages_render.c (the message object), fe_stream_messages.c (the
 * event stream).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fe_anthropic_error.h"
#include "fe_messages_code.h"
#include "fe_messages_parse.h"
#include "fe_messages_render.h"
#include "fe_openai.h"
#include "fe_params.h"
#include "fe_structured.h"
#include "fe_style.h"
#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_id.h"

/* The oldest anthropic-version this gateway speaks; later dates are accepted
 * (the 1.x SDK sends a 2026 one). */
#define FE_MESSAGES_MIN_VERSION "2023-06-01"

/* "x-api-key: KEY", or "Authorization: Bearer KEY" (the 1.x SDK sends it). */
static const char *fe_messages_key(sb_http_req_t *http, size_t *len)
{
    const char *k = sb_http_req_header(http, "x-api-key");
    if (k && *k) {
        *len = strlen(k);
        return k;
    }
    return fe_openai_bearer_key(http, len);
}

/* ---- headers ---------------------------------------------------------------- */

/* anthropic-version: required, a date YYYY-MM-DD no older than the first
 * Messages API version. */
static int fe_messages_version(const fe_style_in_t *in, fe_error_t *err)
{
    const char *v = fe_style_in_header(in, "anthropic-version");
    if (!v)
        return fe_messages_fail(err, "missing_required_header", "anthropic-version", "header is required");
    bool ok = strlen(v) == 10 && v[4] == '-' && v[7] == '-';
    for (int i = 0; ok && i < 10; i++)
        ok = i == 4 || i == 7 || (v[i] >= '0' && v[i] <= '9');
    if (ok) {
        int month = (v[5] - '0') * 10 + (v[6] - '0'), day = (v[8] - '0') * 10 + (v[9] - '0');
        ok = month >= 1 && month <= 12 && day >= 1 && day <= 31 && strcmp(v, FE_MESSAGES_MIN_VERSION) >= 0;
    }
    if (!ok)
        return fe_messages_fail(err, "invalid_header", "anthropic-version", "\"%.40s\" is not a valid version", v);
    return 0;
}

/* ---- top-level fields --------------------------------------------------------- */

/* Every field Anthropic's API takes today (stable and beta, see
 * docs/compatibility.md). Those not read below are accepted and ignored
 * because they change nothing in the answer: cache_control (a caching hint),
 * inference_geo and speed (where and how fast, not what), diagnostics,
 * fallbacks and fallback_credit_token (the gateway's own fallback chain
 * applies), context_management (edits that only act once a context grows past
 * the client's threshold; see fe_messages_context_management). */
static const char *const fe_messages_params[] = {"model",
                                                 "max_tokens",
                                                 "messages",
                                                 "system",
                                                 "tools",
                                                 "tool_choice",
                                                 "temperature",
                                                 "top_p",
                                                 "top_k",
                                                 "stop_sequences",
                                                 "metadata",
                                                 "thinking",
                                                 "output_config",
                                                 "output_format",
                                                 "service_tier",
                                                 "stream",
                                                 "cache_control",
                                                 "inference_geo",
                                                 "speed",
                                                 "diagnostics",
                                                 "fallbacks",
                                                 "fallback_credit_token",
                                                 "context_management",
                                                 "mcp_servers",
                                                 "container",
                                                 NULL};

/* What count_tokens takes: the input and what adds to it, as Anthropic's
 * endpoint does (max_tokens, sampling, stream... are extra inputs there). */
static const char *const fe_messages_count_params[] = {"model",
                                                       "messages",
                                                       "system",
                                                       "tools",
                                                       "tool_choice",
                                                       "thinking",
                                                       "output_config",
                                                       "output_format",
                                                       "cache_control",
                                                       "inference_geo",
                                                       "context_management",
                                                       "mcp_servers",
                                                       NULL};

/* Other styles' fields, and Anthropic features this gateway does not offer,
 * get a 400 that says so rather than the generic one. params: the fields
 * the endpoint takes. */
static int fe_messages_foreign(const json_t *body, const char *const *params, fe_error_t *err)
{
    static const struct {
        const char *param, *why;
    } foreign[] = {
        {"input", "'input' belongs to the Responses API; the Messages API takes 'messages'."},
        {"contents", "'contents' belongs to Generate Content; the Messages API takes 'messages'."},
        {"instructions", "'instructions' belongs to the Responses API; use the top-level 'system'."},
        {"response_format", "'response_format' belongs to Chat Completions; use 'output_config.format'."},
        {"previous_response_id", "'previous_response_id' belongs to the Responses API; the Messages API keeps no "
                                 "conversation state."},
    };
    for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++)
        if (json_object_get(body, foreign[i].param))
            return fe_messages_fail(err, "unknown_parameter", foreign[i].param, "Extra inputs are not permitted. %s",
                                    foreign[i].why);
    const char *key;
    json_t *val;
    json_object_foreach ((json_t *)body, key, val) {
        bool known = false;
        for (size_t i = 0; params[i] && !known; i++)
            known = !strcmp(key, params[i]);
        if (!known) {
            char k[64];
            snprintf(k, sizeof k, "%s", key);
            return fe_messages_fail(err, "unknown_parameter", k, "Extra inputs are not permitted");
        }
    }
    return 0;
}

/* A number field within [lo, hi] (integer when integer), copied to c[dst]. */
static int fe_messages_number(const json_t *body, const char *key, bool integer, double lo, double hi, json_t *c,
                              const char *dst, fe_error_t *err)
{
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v))
        return 0;
    if (integer ? !json_is_integer(v) : !json_is_number(v))
        return fe_messages_fail(err, "invalid_type", key, "Input should be a valid %s", integer ? "integer" : "number");
    double d = json_number_value(v);
    if (d < lo)
        return fe_messages_fail(err, "invalid_value", key, "Input should be greater than or equal to %g", lo);
    if (d > hi)
        return fe_messages_fail(err, "invalid_value", key, "Input should be less than or equal to %g", hi);
    json_object_set(c, dst, v);
    return 0;
}

/* ---- other request fields ---------------------------------------------------------- */

static int fe_messages_system(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *sys = json_object_get(body, "system");
    if (!sys || json_is_null(sys))
        return 0;
    if (json_is_string(sys)) {
        if (json_string_length(sys) > 0)
            json_object_set(c, "instructions", sys);
        return 0;
    }
    if (!json_is_array(sys))
        return fe_messages_fail(err, "invalid_type", "system", "Input should be a valid string or list");
    size_t total = 1, i;
    json_t *b;
    json_array_foreach (sys, i, b) {
        json_t *text = json_object_get(b, "text");
        if (!fe_messages_is(json_object_get(b, "type"), "text") || !json_is_string(text)) {
            char p[32];
            snprintf(p, sizeof p, "system.%zu", i);
            return fe_messages_fail(err, "invalid_value", p, "system blocks must be {\"type\":\"text\",\"text\":...}");
        }
        total += json_string_length(text) + 2;
    }
    char *buf = sb_xmalloc(total);
    size_t off = 0;
    json_array_foreach (sys, i, b) {
        json_t *text = json_object_get(b, "text");
        if (json_string_length(text) == 0)
            continue;
        if (off > 0) {
            memcpy(buf + off, "\n\n", 2);
            off += 2;
        }
        memcpy(buf + off, json_string_value(text), json_string_length(text));
        off += json_string_length(text);
    }
    if (off > 0)
        json_object_set_new(c, "instructions", json_stringn(buf, off));
    free(buf);
    return 0;
}

/* tools[] (custom tools, web search, MCP toolsets) and mcp_servers ->
 * canonical tools (and max_tool_calls from the web search's max_uses). */
static int fe_messages_tools(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *tools = json_object_get(body, "tools");
    if (!tools || json_is_null(tools))
        tools = NULL;
    else if (!json_is_array(tools))
        return fe_messages_fail(err, "invalid_type", "tools", "Input should be a valid list");
    json_t *out = json_array(), *toolsets = json_object();
    json_int_t max_uses = -1;
    bool search = false, code = false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char param[32];
        snprintf(param, sizeof param, "tools.%zu", i);
        json_t *type = json_object_get(t, "type");
        json_t *nt = NULL;
        if (!json_is_object(t)) {
            fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
        } else if (fe_messages_is_web_search_tool(t)) {
            /* Run by the gateway for every upstream (docs/tools.md). */
            if (search)
                fe_messages_fail(err, "invalid_value", param, "Tool names must be unique: 'web_search'");
            else
                nt = fe_messages_web_search_tool(t, param, &max_uses, err);
            search = true;
        } else if (fe_messages_is_code_tool(t)) {
            /* The gateway's code interpreter (fe_messages_code.c). */
            if (code)
                fe_messages_fail(err, "invalid_value", param, "Tool names must be unique: 'code_execution'");
            else
                nt = fe_messages_code_tool(t, param, err);
            code = true;
        } else if (fe_messages_is(type, "mcp_toolset")) {
            if (fe_messages_mcp_toolset(t, param, toolsets, err) == 0)
                continue;
        } else if (type && !json_is_null(type) && !fe_messages_is(type, "custom")) {
            /* bash_20250124, text_editor_..., web_fetch_...: the upstream
             * would have to run them; none of this gateway's upstreams can. */
            fe_messages_fail(err, "unsupported_parameter", param,
                             "unsupported parameter: the Anthropic server tool '%.60s' is not supported on this "
                             "gateway; define a custom tool with 'name' and 'input_schema'.",
                             json_is_string(type) ? json_string_value(type) : "(not a string)");
        } else if (!json_is_object(json_object_get(t, "input_schema"))) {
            char p[64];
            snprintf(p, sizeof p, "%s.custom.input_schema", param);
            fe_messages_fail(err, "missing_required_parameter", p, "Field required");
        } else {
            json_t *fn = json_pack("{s:O?, s:O?, s:O, s:O?}", "name", json_object_get(t, "name"), "description",
                                   json_object_get(t, "description"), "parameters", json_object_get(t, "input_schema"),
                                   "strict", json_object_get(t, "strict"));
            nt = fe_structured_function(fn, FE_STRICT_OFF, param, err); /* non-strict unless asked */
            json_decref(fn);
        }
        if (!nt) {
            json_decref(out);
            json_decref(toolsets);
            return -1;
        }
        json_array_append_new(out, nt);
    }
    int rc = fe_messages_code_container(body, out, err);
    if (rc == 0)
        rc = fe_messages_mcp_servers(body, toolsets, out, err);
    json_decref(toolsets);
    if (rc == 0 && json_array_size(out) > 0)
        json_object_set(c, "tools", out);
    json_decref(out);
    /* max_uses caps web searches; the job's cap is on every built-in call,
     * which is the same thing unless MCP servers are offered too. */
    if (rc == 0 && max_uses > 0)
        json_object_set_new(c, "max_tool_calls", json_integer(max_uses));
    return rc;
}

/* Whether canonical tools hold a built-in tool of type and no function of
 * that name: tool_choice {"type":"tool","name":"web_search"} forces it. */
static bool fe_messages_forces_builtin(const json_t *tools, const char *type, const char *name)
{
    bool builtin = false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        if (fe_messages_is(json_object_get(t, "name"), name))
            return false;
        builtin |= fe_messages_is(json_object_get(t, "type"), type);
    }
    return builtin;
}

static int fe_messages_tool_choice(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *tc = json_object_get(body, "tool_choice");
    if (!tc || json_is_null(tc))
        return 0;
    const char *type = json_string_value(json_object_get(tc, "type"));
    if (!json_is_object(tc) || !type)
        return fe_messages_fail(err, "invalid_value", "tool_choice", "Input should be an object with a 'type'");
    json_t *dptu = json_object_get(tc, "disable_parallel_tool_use");
    if (dptu && !json_is_boolean(dptu) && !json_is_null(dptu))
        return fe_messages_fail(err, "invalid_type", "tool_choice.disable_parallel_tool_use",
                                "Input should be a valid boolean");
    if (!strcmp(type, "auto")) {
        json_object_set_new(c, "tool_choice", json_string("auto"));
    } else if (!strcmp(type, "any")) {
        json_object_set_new(c, "tool_choice", json_string("required"));
    } else if (!strcmp(type, "none")) {
        json_object_set_new(c, "tool_choice", json_string("none"));
    } else if (!strcmp(type, "tool")) {
        json_t *name = json_object_get(tc, "name");
        if (!json_is_string(name))
            return fe_messages_fail(err, "missing_required_parameter", "tool_choice.tool.name", "Field required");
        const char *builtin = !strcmp(json_string_value(name), "web_search")       ? "web_search"
                              : !strcmp(json_string_value(name), "code_execution") ? "code_interpreter"
                                                                                   : NULL;
        if (builtin && fe_messages_forces_builtin(json_object_get(c, "tools"), builtin, json_string_value(name))) {
            json_object_set_new(c, "tool_choice", json_pack("{s:s}", "type", builtin));
            if (json_is_true(dptu))
                json_object_set_new(c, "parallel_tool_calls", json_false());
            return 0;
        }
        json_t *choice = json_pack("{s:s, s:O}", "type", "function", "name", name);
        int rc = fe_structured_tool_choice(choice, json_object_get(c, "tools"), c, err);
        json_decref(choice);
        if (rc < 0)
            return fe_messages_fail(err, "invalid_value", "tool_choice.tool.name", "Tool '%.64s' not found in 'tools'",
                                    json_string_value(name));
    } else {
        return fe_messages_fail(err, "invalid_value", "tool_choice.type",
                                "Input should be 'auto', 'any', 'tool' or 'none'");
    }
    if (json_is_true(dptu) && strcmp(type, "none") != 0)
        json_object_set_new(c, "parallel_tool_calls", json_false());
    return 0;
}

static int fe_messages_sampling(const json_t *body, json_t *c, fe_error_t *err)
{
    if (fe_messages_number(body, "temperature", false, 0, 1, c, "temperature", err) < 0 ||
        fe_messages_number(body, "top_p", false, 0, 1, c, "top_p", err) < 0 ||
        fe_messages_number(body, "top_k", true, 0, 1e9, c, "top_k", err) < 0)
        return -1;
    json_t *stop = json_object_get(body, "stop_sequences");
    if (stop && !json_is_null(stop)) {
        size_t i;
        json_t *s;
        bool ok = json_is_array(stop);
        json_array_foreach (stop, i, s)
            ok = ok && json_is_string(s);
        if (!ok)
            return fe_messages_fail(err, "invalid_type", "stop_sequences", "Input should be a valid list of strings");
        if (json_array_size(stop) > 0)
            json_object_set(c, "stop", stop);
    }
    json_t *md = json_object_get(body, "metadata");
    if (md && !json_is_null(md)) {
        if (!json_is_object(md))
            return fe_messages_fail(err, "invalid_type", "metadata", "Input should be a valid dictionary");
        const char *k;
        json_t *v;
        json_object_foreach (md, k, v) {
            if (strcmp(k, "user_id") != 0) {
                char p[80];
                snprintf(p, sizeof p, "metadata.%.60s", k);
                return fe_messages_fail(err, "unknown_parameter", p, "Extra inputs are not permitted");
            }
        }
        json_t *user = json_object_get(md, "user_id");
        if (user && !json_is_null(user)) {
            if (!json_is_string(user) || json_string_length(user) > 256)
                return fe_messages_fail(err, "invalid_value", "metadata.user_id",
                                        "Input should be a string of at most 256 characters");
            json_object_set(c, "user", user);
        }
    }
    json_t *tier = json_object_get(body, "service_tier");
    if (tier && !json_is_null(tier) && !fe_messages_is(tier, "auto") && !fe_messages_is(tier, "standard_only"))
        return fe_messages_fail(err, "invalid_value", "service_tier", "Input should be 'auto' or 'standard_only'");
    return 0;
}

/* A json_schema output format (output_config.format, or the older beta
 * top-level output_format) -> canonical text.format; param names it. */
static int fe_messages_format(const json_t *f, const char *param, json_t *c, fe_error_t *err)
{
    char p[64];
    snprintf(p, sizeof p, "%s.type", param);
    if (!json_is_object(f) || !fe_messages_is(json_object_get(f, "type"), "json_schema"))
        return fe_messages_fail(err, "invalid_value", p, "Input should be 'json_schema'");
    snprintf(p, sizeof p, "%s.schema", param);
    if (!json_is_object(json_object_get(f, "schema")))
        return fe_messages_fail(err, "missing_required_parameter", p, "Field required");
    json_t *flat = json_pack("{s:s, s:s, s:O, s:b}", "type", "json_schema", "name", "output", "schema",
                             json_object_get(f, "schema"), "strict", 1);
    json_t *fmt = fe_structured_format(flat, param, err);
    json_decref(flat);
    if (!fmt)
        return -1;
    json_object_set_new(c, "text", json_pack("{s:o}", "format", fmt));
    return 0;
}

/* context_management {edits: [{type, ...}]}: checked as Anthropic checks it,
 * then ignored. Its edits (clear old thinking or tool results, compact) act
 * only once the context passes the client's trigger, so a request under it
 * gets the same answer; clear_thinking with keep "all", what Claude Code
 * sends, never acts. See docs/compatibility.md. */
static int fe_messages_context_management(const json_t *body, fe_error_t *err)
{
    static const char *const edits[] = {"clear_tool_uses_20250919", "clear_thinking_20251015", "compact_20260112"};
    json_t *cm = json_object_get(body, "context_management");
    if (!cm || json_is_null(cm))
        return 0;
    if (!json_is_object(cm))
        return fe_messages_fail(err, "invalid_type", "context_management", "Input should be a valid dictionary");
    json_t *list = json_object_get(cm, "edits");
    if (list && !json_is_null(list) && !json_is_array(list))
        return fe_messages_fail(err, "invalid_type", "context_management.edits", "Input should be a valid list");
    size_t i;
    json_t *e;
    json_array_foreach (list, i, e) {
        bool ok = false;
        for (size_t k = 0; k < sizeof edits / sizeof edits[0]; k++)
            ok |= fe_messages_is(json_object_get(e, "type"), edits[k]);
        if (!ok) {
            char p[64];
            snprintf(p, sizeof p, "context_management.edits.%zu.type", i);
            return fe_messages_fail(err, "invalid_value", p,
                                    "Input should be 'clear_tool_uses_20250919', 'clear_thinking_20251015' or "
                                    "'compact_20260112'");
        }
    }
    return 0;
}

/* output_config {effort?, format?} (and the beta top-level output_format);
 * *effort gets the effort asked for (or NULL). */
static int fe_messages_output_config(const json_t *body, json_t *c, const char **effort, fe_error_t *err)
{
    *effort = NULL;
    json_t *of = json_object_get(body, "output_format");
    if (of && !json_is_null(of) && fe_messages_format(of, "output_format", c, err) < 0)
        return -1;
    json_t *oc = json_object_get(body, "output_config");
    if (!oc || json_is_null(oc))
        return 0;
    if (!json_is_object(oc))
        return fe_messages_fail(err, "invalid_type", "output_config", "Input should be a valid dictionary");
    const char *k;
    json_t *v;
    json_object_foreach (oc, k, v) {
        if (strcmp(k, "effort") != 0 && strcmp(k, "format") != 0) {
            char p[80];
            snprintf(p, sizeof p, "output_config.%.50s", k);
            return fe_messages_fail(err, "unknown_parameter", p, "Extra inputs are not permitted");
        }
    }
    json_t *e = json_object_get(oc, "effort");
    if (e && !json_is_null(e)) {
        static const char *const efforts[] = {"low", "medium", "high", "xhigh", "max"};
        bool ok = false;
        for (size_t i = 0; i < sizeof efforts / sizeof efforts[0]; i++)
            ok |= fe_messages_is(e, efforts[i]);
        if (!ok)
            return fe_messages_fail(err, "invalid_value", "output_config.effort",
                                    "Input should be 'low', 'medium', 'high', 'xhigh' or 'max'");
        *effort = json_string_value(e);
    }
    json_t *f = json_object_get(oc, "format");
    if (!f || json_is_null(f))
        return 0;
    return fe_messages_format(f, "output_config.format", c, err);
}

/* thinking -> canonical reasoning. The effort follows the budget, so a
 * budget-less upstream still thinks about as hard as asked. */
static int fe_messages_thinking(fe_parsed_t *out, const json_t *body, json_t *c, json_int_t max_tokens,
                                const char *effort, fe_error_t *err)
{
    json_t *th = json_object_get(body, "thinking");
    if (!th || json_is_null(th))
        return 0;
    const char *type = json_string_value(json_object_get(th, "type"));
    if (!json_is_object(th) || !type)
        return fe_messages_fail(err, "invalid_value", "thinking", "Input should be an object with a 'type'");
    json_t *display = json_object_get(th, "display");
    if (display && !json_is_null(display) && !fe_messages_is(display, "summarized") &&
        !fe_messages_is(display, "omitted"))
        return fe_messages_fail(err, "invalid_value", "thinking.display", "Input should be 'summarized' or 'omitted'");
    if (fe_messages_is(display, "omitted"))
        json_object_set_new(out->style_state, "thinking_omitted", json_true());
    if (!strcmp(type, "disabled"))
        return 0;
    if (!strcmp(type, "adaptive")) {
        const char *e = !effort ? "medium" : !strcmp(effort, "max") ? "xhigh" : effort;
        json_object_set_new(c, "reasoning", json_pack("{s:s}", "effort", e));
        return 0;
    }
    if (strcmp(type, "enabled") != 0)
        return fe_messages_fail(err, "invalid_value", "thinking.type",
                                "Input should be 'enabled', 'disabled' or "
                                "'adaptive'");
    json_t *budget = json_object_get(th, "budget_tokens");
    if (!budget)
        return fe_messages_fail(err, "missing_required_parameter", "thinking.enabled.budget_tokens", "Field required");
    if (!json_is_integer(budget))
        return fe_messages_fail(err, "invalid_type", "thinking.enabled.budget_tokens",
                                "Input should be a valid "
                                "integer");
    json_int_t b = json_integer_value(budget);
    if (b < 1024)
        return fe_messages_fail(err, "invalid_value", "thinking.enabled.budget_tokens",
                                "Input should be greater than or equal to 1024");
    if (b >= max_tokens)
        return fe_messages_fail(err, "invalid_value", NULL,
                                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult the "
                                "extended thinking documentation for max_tokens and context window size.");
    const char *e = b < 4096 ? "low" : b < 16384 ? "medium" : "high";
    json_object_set_new(c, "reasoning", json_pack("{s:s, s:I}", "effort", e, "budget_tokens", b));
    return 0;
}

/* The body of POST /v1/messages, or (in->count_tokens) of
 * /v1/messages/count_tokens: the same request less max_tokens and the fields
 * that only shape the output (fe_messages_count_params). */
static int fe_messages_parse(const fe_style_in_t *in, json_t *body, fe_parsed_t *out, fe_error_t *err)
{
    bool count = in->count_tokens;
    out->store = false; /* nothing in this style is retrievable later */
    if (fe_messages_version(in, err) < 0 ||
        fe_messages_foreign(body, count ? fe_messages_count_params : fe_messages_params, err) < 0)
        return -1;
    json_t *model = json_object_get(body, "model");
    if (!model || json_is_null(model))
        return fe_messages_fail(err, "missing_required_parameter", "model", "Field required");
    if (!json_is_string(model) || json_string_length(model) == 0)
        return fe_messages_fail(err, "invalid_value", "model", "Input should be a non-empty string");
    out->model_id = sb_xstrdup(json_string_value(model));
    json_t *max = json_object_get(body, "max_tokens");
    if (count)
        max = NULL; /* a count has no output: no limit for a thinking budget to fit under */
    else if (!max || json_is_null(max))
        return fe_messages_fail(err, "missing_required_parameter", "max_tokens", "Field required");
    else if (!json_is_integer(max))
        return fe_messages_fail(err, "invalid_type", "max_tokens", "Input should be a valid integer");
    else if (json_integer_value(max) < 1)
        return fe_messages_fail(err, "invalid_value", "max_tokens", "Input should be greater than or equal to 1");
    json_t *messages = json_object_get(body, "messages");
    if (!messages || json_is_null(messages))
        return fe_messages_fail(err, "missing_required_parameter", "messages", "Field required");
    if (!json_is_array(messages))
        return fe_messages_fail(err, "invalid_type", "messages", "Input should be a valid list");
    if (json_array_size(messages) == 0)
        return fe_messages_fail(err, "invalid_value", "messages", "at least one message is required");
    json_t *stream = json_object_get(body, "stream");
    if (stream && !json_is_boolean(stream) && !json_is_null(stream))
        return fe_messages_fail(err, "invalid_type", "stream", "Input should be a valid boolean");
    out->stream = json_is_true(stream);
    json_t *cc = json_object_get(body, "cache_control");
    if (cc && !json_is_null(cc) && !json_is_object(cc))
        return fe_messages_fail(err, "invalid_type", "cache_control", "Input should be a valid dictionary");

    json_t *c = json_object();
    out->canonical = c;
    json_t *items = json_array();
    json_object_set_new(c, "input", items);
    if (max)
        json_object_set(c, "max_output_tokens", max);
    const char *effort = NULL;
    if (fe_messages_messages(&in->seal, messages, items, err) < 0 || fe_messages_system(body, c, err) < 0 ||
        fe_messages_tools(body, c, err) < 0 || fe_messages_tool_choice(body, c, err) < 0 ||
        fe_messages_sampling(body, c, err) < 0 || fe_messages_context_management(body, err) < 0 ||
        fe_messages_output_config(body, c, &effort, err) < 0 ||
        fe_messages_thinking(out, body, c, max ? json_integer_value(max) : INT64_MAX, effort, err) < 0)
        return -1;
    sb_id_new(out->response_id, sizeof out->response_id, "msg_", 12);
    return 0;
}

const fe_style_t fe_style_messages = {
    .name = "messages",
    .key_hint = "the 'x-api-key' header",
    .max_tokens_param = "max_tokens",
    .input_param = "messages",
    .format_param = "text.format",
    .effort_param = "reasoning.effort",
    .parts_param = "input",
    .key = fe_messages_key,
    .error_body = fe_anthropic_error_body,
    .parse = fe_messages_parse,
    .render = fe_messages_render,
    .render_count = fe_messages_render_count,
    .stream = &fe_stream_messages,
};
