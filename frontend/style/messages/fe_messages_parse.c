/*
 * fe_style_messages: the Messages style (POST /v1/messages, Anthropic's wire
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
 *   thinking {enabled, budget_tokens}   -> reasoning {effort, budget_tokens}
 *   output_config.format json_schema    -> text.format (strict)
 * Response side: reasoning -> thinking blocks (signature = the sealed item),
 * message parts -> text blocks, function_call -> tool_use blocks; with
 * "stream": true the same message as Anthropic's event stream
 * (fe_stream_messages.c, built from the helpers in fe_style_messages.h).
 * This style stores nothing: a message is not retrievable later.
 *
 * POST /v1/messages/count_tokens takes the same body without max_tokens and
 * the output-only fields, and answers {"input_tokens": N} as the model's
 * upstream counts it.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fe_items.h"
#include "fe_params.h"
#include "fe_reasoning.h"
#include "fe_request.h"
#include "fe_router.h"
#include "fe_structured.h"
#include "fe_style_messages.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_log.h"

/* The oldest anthropic-version this gateway speaks; later dates are accepted
 * (the 1.x SDK sends a 2026 one). */
#define FE_MESSAGES_MIN_VERSION "2023-06-01"

/* "x-api-key: KEY", or "Authorization: Bearer KEY" (the 1.x SDK sends it). */
static const char *fe_messages_key(fe_http_req_t *http, size_t *len)
{
    const char *k = fe_http_req_header(http, "x-api-key");
    if (k && *k) {
        *len = strlen(k);
        return k;
    }
    return fe_bearer_key(http, len);
}

static json_t *fe_messages_error_body(const fe_request_t *r, const fe_error_t *e)
{
    return fe_error_anthropic_body(e, r->request_id);
}

/* A 400 in Anthropic's wording, "<param>: <text>" (param may be NULL). */
static void fe_messages_vfail(fe_error_t *err, const char *code, const char *param, const char *fmt, va_list ap)
{
    char text[sizeof err->message];
    vsnprintf(text, sizeof text, fmt, ap);
    if (param)
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, code, param, "%s: %s", param, text);
    else
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, code, NULL, "%s", text);
}

/* The same, for functions returning int: always -1. */
static int fe_messages_fail(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fe_messages_fail(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_messages_vfail(err, code, param, fmt, ap);
    va_end(ap);
    return -1;
}

/* The same, for functions returning a new value: always NULL. */
static json_t *fe_messages_fail_null(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static json_t *fe_messages_fail_null(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_messages_vfail(err, code, param, fmt, ap);
    va_end(ap);
    return NULL;
}

static bool fe_messages_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

/* ---- headers ---------------------------------------------------------------- */

/* anthropic-version: required, a date YYYY-MM-DD no older than the first
 * Messages API version. */
static int fe_messages_version(const fe_request_t *r, fe_error_t *err)
{
    const char *v = r->http ? fe_http_req_header(r->http, "anthropic-version") : NULL;
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
                                                 NULL};

/* What count_tokens takes: the input and what adds to it, as Anthropic's
 * endpoint does (max_tokens, sampling, stream... are extra inputs there). */
static const char *const fe_messages_count_params[] = {
    "model",         "messages",      "system",        "tools",         "tool_choice",        "thinking",
    "output_config", "output_format", "cache_control", "inference_geo", "context_management", NULL};

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
    /* Honouring these needs the upstream (or the gateway) to run code or MCP
     * servers; ignoring them would change the answer. */
    static const char *const unsupported[] = {"container", "mcp_servers"};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        json_t *v = json_object_get(body, unsupported[i]);
        if (v && !json_is_null(v))
            return fe_messages_fail(err, "unsupported_parameter", unsupported[i],
                                    "unsupported parameter: '%s' is not available on this gateway.", unsupported[i]);
    }
    const char *key;
    json_t *val;
    json_object_foreach ((json_t *)body, key, val) {
        bool known = false;
        for (size_t i = 0; params[i] && !known; i++)
            known = !strcmp(key, params[i]);
        /* An unsupported feature sent as null asks for nothing. */
        for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0] && !known; i++)
            known = !strcmp(key, unsupported[i]);
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

/* ---- content blocks ------------------------------------------------------------ */

/* Where canonical items are assembled: consecutive text and media blocks of
 * one message share a message item; tool and thinking blocks stand alone. */
typedef struct {
    json_t *items; /* canonical input (borrowed) */
    json_t *parts; /* the open message's parts, or NULL */
    const char *role;
} fe_messages_out_t;

static void fe_messages_flush(fe_messages_out_t *o)
{
    if (o->parts && json_array_size(o->parts) > 0)
        json_array_append_new(o->items,
                              json_pack("{s:s, s:s, s:O}", "type", "message", "role", o->role, "content", o->parts));
    json_decref(o->parts);
    o->parts = NULL;
}

static void fe_messages_add_part(fe_messages_out_t *o, json_t *part)
{
    if (!o->parts)
        o->parts = json_array();
    json_array_append_new(o->parts, part);
}

static void fe_messages_add_item(fe_messages_out_t *o, json_t *item)
{
    fe_messages_flush(o);
    json_array_append_new(o->items, item);
}

/* "data:<mime>;base64,<data>" (caller frees). */
static char *fe_messages_data_url(const char *mime, const char *b64)
{
    return sb_xasprintf("data:%s;base64,%s", mime, b64);
}

/* An image block's source as an input_image part, or NULL with err. */
static json_t *fe_messages_image(const json_t *block, const char *param, fe_error_t *err)
{
    json_t *src = json_object_get(block, "source");
    const char *type = json_string_value(json_object_get(src, "type"));
    char p[128];
    snprintf(p, sizeof p, "%s.source", param);
    if (!json_is_object(src) || !type)
        return fe_messages_fail_null(err, "missing_required_parameter", p, "Field required");
    json_t *conv = NULL;
    if (!strcmp(type, "base64")) {
        static const char *const mimes[] = {"image/jpeg", "image/png", "image/gif", "image/webp"};
        const char *mt = json_string_value(json_object_get(src, "media_type"));
        bool ok = false;
        for (size_t i = 0; mt && i < sizeof mimes / sizeof mimes[0]; i++)
            ok |= !strcmp(mt, mimes[i]);
        if (!ok)
            return fe_messages_fail_null(err, "invalid_value", p,
                                         "media_type should be 'image/jpeg', 'image/png', 'image/gif' or "
                                         "'image/webp'");
        const char *data = json_string_value(json_object_get(src, "data"));
        if (!data)
            return fe_messages_fail_null(err, "missing_required_parameter", p, "data: Field required");
        char *url = fe_messages_data_url(mt, data);
        conv = json_pack("{s:s, s:s}", "type", "input_image", "image_url", url);
        free(url);
    } else if (!strcmp(type, "url")) {
        if (!json_is_string(json_object_get(src, "url")))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "url: Field required");
        conv = json_pack("{s:s, s:O}", "type", "input_image", "image_url", json_object_get(src, "url"));
    } else if (!strcmp(type, "file")) {
        if (!json_is_string(json_object_get(src, "file_id")))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "file_id: Field required");
        conv = json_pack("{s:s, s:O}", "type", "input_image", "file_id", json_object_get(src, "file_id"));
    } else {
        return fe_messages_fail_null(err, "invalid_value", p, "type should be 'base64', 'url' or 'file'");
    }
    json_t *part = fe_items_normalize_part(conv, param, err);
    json_decref(conv);
    return part;
}

/* A document block's source as an input_file part, or NULL with err. */
static json_t *fe_messages_document(const json_t *block, const char *param, fe_error_t *err)
{
    json_t *src = json_object_get(block, "source");
    const char *type = json_string_value(json_object_get(src, "type"));
    const char *title = json_string_value(json_object_get(block, "title"));
    char p[128];
    snprintf(p, sizeof p, "%s.source", param);
    if (!json_is_object(src) || !type)
        return fe_messages_fail_null(err, "missing_required_parameter", p, "Field required");
    const char *mt = json_string_value(json_object_get(src, "media_type"));
    const char *data = json_string_value(json_object_get(src, "data"));
    json_t *conv = NULL;
    if (!strcmp(type, "base64")) {
        if (!mt || strcmp(mt, "application/pdf") != 0)
            return fe_messages_fail_null(err, "invalid_value", p, "media_type should be 'application/pdf'");
        if (!data)
            return fe_messages_fail_null(err, "missing_required_parameter", p, "data: Field required");
        char *url = fe_messages_data_url(mt, data);
        conv = json_pack("{s:s, s:s, s:s}", "type", "input_file", "file_data", url, "filename",
                         title && *title ? title : "document.pdf");
        free(url);
    } else if (!strcmp(type, "text")) {
        if (!mt || strcmp(mt, "text/plain") != 0)
            return fe_messages_fail_null(err, "invalid_value", p, "media_type should be 'text/plain'");
        json_t *d = json_object_get(src, "data");
        if (!json_is_string(d))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "data: Field required");
        size_t n = 0;
        char *b64 = sb_base64_encode(json_string_value(d), json_string_length(d), &n);
        char *url = fe_messages_data_url(mt, b64 ? b64 : "");
        conv = json_pack("{s:s, s:s, s:s}", "type", "input_file", "file_data", url, "filename",
                         title && *title ? title : "document.txt");
        free(url);
        free(b64);
    } else if (!strcmp(type, "file")) {
        if (!json_is_string(json_object_get(src, "file_id")))
            return fe_messages_fail_null(err, "missing_required_parameter", p, "file_id: Field required");
        conv = json_pack("{s:s, s:O}", "type", "input_file", "file_id", json_object_get(src, "file_id"));
    } else if (!strcmp(type, "url") || !strcmp(type, "content")) {
        return fe_messages_fail_null(err, "unsupported_parameter", p,
                                     "unsupported parameter: document source type '%s' is not supported on this "
                                     "gateway; send the document as base64 or text.",
                                     type);
    } else {
        return fe_messages_fail_null(err, "invalid_value", p, "type should be 'base64', 'text' or 'file'");
    }
    json_t *part = fe_items_normalize_part(conv, param, err);
    json_decref(conv);
    return part;
}

/* A tool_result's content: a string, or parts when it holds media. */
static json_t *fe_messages_tool_output(const json_t *block, const char *param, fe_error_t *err)
{
    json_t *content = json_object_get(block, "content");
    bool is_error = json_is_true(json_object_get(block, "is_error"));
    const char *prefix = is_error ? "Error: " : "";
    if (!content || json_is_null(content) || json_is_string(content)) {
        char *s = sb_xasprintf("%s%s", prefix, json_is_string(content) ? json_string_value(content) : "");
        json_t *out = json_string(s);
        free(s);
        return out;
    }
    char p[128];
    snprintf(p, sizeof p, "%s.content", param);
    if (!json_is_array(content))
        return fe_messages_fail_null(err, "invalid_type", p, "Input should be a valid string or list");
    json_t *parts = json_array();
    bool media = false;
    size_t i;
    json_t *b;
    json_array_foreach (content, i, b) {
        char bp[160];
        snprintf(bp, sizeof bp, "%s.%zu", p, i);
        json_t *type = json_object_get(b, "type");
        json_t *part = NULL;
        if (fe_messages_is(type, "text") && json_is_string(json_object_get(b, "text"))) {
            part = json_pack("{s:s, s:O}", "type", "input_text", "text", json_object_get(b, "text"));
        } else if (fe_messages_is(type, "image")) {
            part = fe_messages_image(b, bp, err);
            media = true;
        } else if (fe_messages_is(type, "document")) {
            part = fe_messages_document(b, bp, err);
            media = true;
        } else {
            fe_messages_fail(err, "invalid_value", bp, "tool_result content blocks must be text, image or document");
        }
        if (!part) {
            json_decref(parts);
            return NULL;
        }
        json_array_append_new(parts, part);
    }
    if (media) {
        if (is_error)
            json_array_insert_new(parts, 0, json_pack("{s:s, s:s}", "type", "input_text", "text", "Error:"));
        return parts;
    }
    /* Text only: one string, the blocks joined by newlines. */
    size_t total = strlen(prefix) + 1;
    json_array_foreach (parts, i, b)
        total += json_string_length(json_object_get(b, "text")) + 1;
    char *buf = sb_xmalloc(total);
    size_t off = strlen(prefix);
    memcpy(buf, prefix, off);
    json_array_foreach (parts, i, b) {
        json_t *t = json_object_get(b, "text");
        if (i > 0)
            buf[off++] = '\n';
        memcpy(buf + off, json_string_value(t), json_string_length(t));
        off += json_string_length(t);
    }
    json_t *out = json_stringn(buf, off);
    free(buf);
    json_decref(parts);
    return out;
}

/* A thinking block's signature (or a redacted_thinking block's data): the
 * reasoning item this gateway sealed into it. */
static json_t *fe_messages_open_thinking(const fe_request_t *r, const json_t *block, bool redacted, const char *param,
                                         fe_error_t *err)
{
    const char *field = redacted ? "data" : "signature";
    const char *token = json_string_value(json_object_get(block, field));
    if (!token || !*token)
        return fe_messages_fail_null(err, "missing_required_parameter", param, "%s: Field required", field);
    if (!redacted && !json_is_string(json_object_get(block, "thinking")))
        return fe_messages_fail_null(err, "missing_required_parameter", param, "thinking: Field required");
    json_t *item = fe_reasoning_open_token(r, token, param, err);
    if (item && fe_messages_is(json_object_get(item, "type"), "reasoning"))
        return item;
    json_decref(item);
    /* Not configured keeps its own message; anything else is a bad token. */
    if (!item && strcmp(err->code, "invalid_encrypted_content") != 0)
        return NULL;
    fe_messages_fail(err, "invalid_encrypted_content", param, "Invalid `%s` in `%s` block", field,
                     redacted ? "redacted_thinking" : "thinking");
    return NULL;
}

/* Blocks only one role may send. */
static int fe_messages_role_only(const char *type, const char *role, bool assistant, const char *param, fe_error_t *err)
{
    if (assistant == !strcmp(role, "assistant"))
        return 0;
    return fe_messages_fail(err, "invalid_value", param, "`%s` blocks are only allowed in %s messages", type,
                            assistant ? "assistant" : "user");
}

static int fe_messages_block(const fe_request_t *r, fe_messages_out_t *o, const json_t *block, const char *param,
                             fe_error_t *err)
{
    const char *type = json_string_value(json_object_get(block, "type"));
    if (!json_is_object(block))
        return fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
    if (!type)
        return fe_messages_fail(err, "missing_required_parameter", param, "type: Field required");
    bool assistant = !strcmp(o->role, "assistant");
    if (!strcmp(type, "text")) {
        json_t *text = json_object_get(block, "text");
        if (!json_is_string(text))
            return fe_messages_fail(err, "missing_required_parameter", param, "text: Field required");
        fe_messages_add_part(o,
                             json_pack("{s:s, s:O}", "type", assistant ? "output_text" : "input_text", "text", text));
        return 0;
    }
    if (!strcmp(type, "image") || !strcmp(type, "document")) {
        if (fe_messages_role_only(type, o->role, false, param, err) < 0)
            return -1;
        json_t *part =
            !strcmp(type, "image") ? fe_messages_image(block, param, err) : fe_messages_document(block, param, err);
        if (!part)
            return -1;
        fe_messages_add_part(o, part);
        return 0;
    }
    if (!strcmp(type, "tool_use")) {
        if (fe_messages_role_only(type, o->role, true, param, err) < 0)
            return -1;
        json_t *id = json_object_get(block, "id"), *name = json_object_get(block, "name");
        json_t *input = json_object_get(block, "input");
        if (!json_is_string(id) || !json_is_string(name) || !json_is_object(input))
            return fe_messages_fail(err, "invalid_value", param,
                                    "tool_use blocks need a string id and name and an "
                                    "object input");
        char *args = json_dumps(input, JSON_COMPACT);
        fe_messages_add_item(o, json_pack("{s:s, s:O, s:O, s:s}", "type", "function_call", "call_id", id, "name", name,
                                          "arguments", args ? args : "{}"));
        free(args);
        return 0;
    }
    if (!strcmp(type, "tool_result")) {
        if (fe_messages_role_only(type, o->role, false, param, err) < 0)
            return -1;
        json_t *id = json_object_get(block, "tool_use_id");
        json_t *is_error = json_object_get(block, "is_error");
        if (!json_is_string(id) || json_string_length(id) == 0)
            return fe_messages_fail(err, "missing_required_parameter", param, "tool_use_id: Field required");
        if (is_error && !json_is_boolean(is_error) && !json_is_null(is_error))
            return fe_messages_fail(err, "invalid_type", param, "is_error: Input should be a valid boolean");
        json_t *output = fe_messages_tool_output(block, param, err);
        if (!output)
            return -1;
        fe_messages_add_item(
            o, json_pack("{s:s, s:O, s:o}", "type", "function_call_output", "call_id", id, "output", output));
        return 0;
    }
    if (!strcmp(type, "thinking") || !strcmp(type, "redacted_thinking")) {
        if (fe_messages_role_only(type, o->role, true, param, err) < 0)
            return -1;
        json_t *item = fe_messages_open_thinking(r, block, !strcmp(type, "redacted_thinking"), param, err);
        if (!item)
            return -1;
        fe_messages_add_item(o, item);
        return 0;
    }
    return fe_messages_fail(err, "unsupported_parameter", param,
                            "unsupported parameter: content block type '%.40s' is not supported on this gateway.",
                            type);
}

/* {"role":"system","content": string | text blocks} -> a canonical system
 * message with input_text parts (cache_control on a block is a hint). */
static int fe_messages_system_message(const json_t *m, json_t *items, const char *param, fe_error_t *err)
{
    json_t *content = json_object_get(m, "content");
    json_t *parts = json_array();
    if (json_is_string(content) && json_string_length(content) > 0) {
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "input_text", "text", content));
    } else if (json_is_array(content)) {
        size_t j;
        json_t *b;
        json_array_foreach (content, j, b) {
            json_t *text = json_object_get(b, "text");
            if (!fe_messages_is(json_object_get(b, "type"), "text") || !json_is_string(text)) {
                char bp[80];
                snprintf(bp, sizeof bp, "%s.content.%zu", param, j);
                json_decref(parts);
                return fe_messages_fail(err, "invalid_value", bp, "system messages take text blocks only");
            }
            json_array_append_new(parts, json_pack("{s:s, s:O}", "type", "input_text", "text", text));
        }
    }
    if (json_array_size(parts) == 0) {
        json_decref(parts);
        return fe_messages_fail(err, "invalid_value", param,
                                "all messages must have non-empty content except for the optional final "
                                "assistant message");
    }
    json_array_append_new(items, json_pack("{s:s, s:s, s:o}", "type", "message", "role", "system", "content", parts));
    return 0;
}

static int fe_messages_messages(const fe_request_t *r, const json_t *messages, json_t *items, fe_error_t *err)
{
    size_t n = json_array_size(messages), i, turns = 0;
    json_t *m;
    json_array_foreach (messages, i, m) {
        char param[48];
        snprintf(param, sizeof param, "messages.%zu", i);
        if (!json_is_object(m))
            return fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
        json_t *rolev = json_object_get(m, "role");
        const char *role = json_string_value(rolev);
        if (!role || (strcmp(role, "user") != 0 && strcmp(role, "assistant") != 0 && strcmp(role, "system") != 0)) {
            snprintf(param, sizeof param, "messages.%zu.role", i);
            return fe_messages_fail(err, "invalid_value", param, "Input should be 'user', 'assistant' or 'system'");
        }
        if (!strcmp(role, "system")) {
            /* A system message between turns (Anthropic takes these today):
             * instructions at that point of the conversation. */
            if (fe_messages_system_message(m, items, param, err) < 0)
                return -1;
            continue;
        }
        json_t *content = json_object_get(m, "content");
        bool last_assistant = i == n - 1 && !strcmp(role, "assistant");
        bool empty = (json_is_string(content) && json_string_length(content) == 0) ||
                     (json_is_array(content) && json_array_size(content) == 0);
        if (empty && !last_assistant)
            return fe_messages_fail(err, "invalid_value", param,
                                    "all messages must have non-empty content except for the optional final "
                                    "assistant message");
        fe_messages_out_t o = {.items = items, .parts = NULL, .role = role};
        if (json_is_string(content)) {
            if (!empty)
                fe_messages_add_part(&o, json_pack("{s:s, s:O}", "type",
                                                   !strcmp(role, "assistant") ? "output_text" : "input_text", "text",
                                                   content));
        } else if (json_is_array(content)) {
            size_t j;
            json_t *b;
            json_array_foreach (content, j, b) {
                char bp[80];
                snprintf(bp, sizeof bp, "messages.%zu.content.%zu", i, j);
                if (fe_messages_block(r, &o, b, bp, err) < 0) {
                    json_decref(o.parts);
                    return -1;
                }
            }
        } else {
            snprintf(param, sizeof param, "messages.%zu.content", i);
            return fe_messages_fail(err, content ? "invalid_type" : "missing_required_parameter", param,
                                    content ? "Input should be a valid string or list" : "Field required");
        }
        fe_messages_flush(&o);
        turns++;
    }
    if (turns == 0)
        return fe_messages_fail(err, "invalid_value", "messages",
                                "messages: at least one message with role 'user' or 'assistant' is required");
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

static int fe_messages_tools(const json_t *body, json_t *c, fe_error_t *err)
{
    json_t *tools = json_object_get(body, "tools");
    if (!tools || json_is_null(tools))
        return 0;
    if (!json_is_array(tools))
        return fe_messages_fail(err, "invalid_type", "tools", "Input should be a valid list");
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char param[32];
        snprintf(param, sizeof param, "tools.%zu", i);
        json_t *type = json_object_get(t, "type");
        json_t *nt = NULL;
        if (!json_is_object(t)) {
            fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
        } else if (type && !json_is_null(type) && !fe_messages_is(type, "custom")) {
            /* web_search_20250305, bash_20250124, text_editor_..., code_execution_...: the
             * upstream would have to run them; none of this gateway's upstreams can. */
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
            return -1;
        }
        json_array_append_new(out, nt);
    }
    if (json_array_size(out) > 0)
        json_object_set(c, "tools", out);
    json_decref(out);
    return 0;
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
static int fe_messages_thinking(fe_request_t *r, const json_t *body, json_t *c, json_int_t max_tokens,
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
        json_object_set_new(r->parsed.style_state, "thinking_omitted", json_true());
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

/* The body of POST /v1/messages, or (r->count_tokens) of
 * /v1/messages/count_tokens: the same request less max_tokens and the fields
 * that only shape the output (fe_messages_count_params). */
static int fe_messages_parse(fe_request_t *r, json_t *body, fe_error_t *err)
{
    bool count = r->count_tokens;
    r->parsed.store = false; /* nothing in this style is retrievable later */
    if (fe_messages_version(r, err) < 0 ||
        fe_messages_foreign(body, count ? fe_messages_count_params : fe_messages_params, err) < 0)
        return -1;
    json_t *model = json_object_get(body, "model");
    if (!model || json_is_null(model))
        return fe_messages_fail(err, "missing_required_parameter", "model", "Field required");
    if (!json_is_string(model) || json_string_length(model) == 0)
        return fe_messages_fail(err, "invalid_value", "model", "Input should be a non-empty string");
    r->parsed.model_id = sb_xstrdup(json_string_value(model));
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
    r->parsed.stream = json_is_true(stream);
    json_t *cc = json_object_get(body, "cache_control");
    if (cc && !json_is_null(cc) && !json_is_object(cc))
        return fe_messages_fail(err, "invalid_type", "cache_control", "Input should be a valid dictionary");

    json_t *c = json_object();
    r->parsed.canonical = c;
    json_t *items = json_array();
    json_object_set_new(c, "input", items);
    if (max)
        json_object_set(c, "max_output_tokens", max);
    const char *effort = NULL;
    if (fe_messages_messages(r, messages, items, err) < 0 || fe_messages_system(body, c, err) < 0 ||
        fe_messages_tools(body, c, err) < 0 || fe_messages_tool_choice(body, c, err) < 0 ||
        fe_messages_sampling(body, c, err) < 0 || fe_messages_context_management(body, err) < 0 ||
        fe_messages_output_config(body, c, &effort, err) < 0 ||
        fe_messages_thinking(r, body, c, max ? json_integer_value(max) : INT64_MAX, effort, err) < 0)
        return -1;
    sb_id_new(r->response_id, sizeof r->response_id, "msg_", 12);
    return 0;
}

/* ---- rendering ------------------------------------------------------------------------ */

/* The text of a reasoning item: its reasoning_text parts, else its summary. */
static json_t *fe_messages_reasoning_text(const json_t *item)
{
    const char *keys[2] = {"content", "summary"};
    for (int k = 0; k < 2; k++) {
        size_t total = 0, i;
        json_t *p;
        json_array_foreach (json_object_get(item, keys[k]), i, p)
            total += json_string_length(json_object_get(p, "text"));
        if (total == 0)
            continue;
        char *buf = sb_xmalloc(total);
        size_t off = 0;
        json_array_foreach (json_object_get(item, keys[k]), i, p) {
            json_t *t = json_object_get(p, "text");
            memcpy(buf + off, json_string_value(t), json_string_length(t));
            off += json_string_length(t);
        }
        json_t *out = json_stringn(buf, off);
        free(buf);
        return out;
    }
    return json_string("");
}

bool fe_messages_thinking_omitted(const fe_request_t *r)
{
    return json_is_true(json_object_get(r->parsed.style_state, "thinking_omitted"));
}

/* The sealed token of a reasoning item (caller frees), or NULL. Sealing draws
 * a random nonce, so each item is sealed once per request and the token kept
 * in style_state "sealed" (by item id, with the item it seals): the streamed
 * thinking block and the final message then carry the same signature. */
static char *fe_messages_seal(const fe_request_t *r, const json_t *item)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    json_t *cache = json_object_get(r->parsed.style_state, "sealed");
    json_t *hit = id ? json_object_get(cache, id) : NULL;
    json_t *sealed_item = json_object_get(hit, "item");
    if (sealed_item && (sealed_item == item || json_equal(sealed_item, (json_t *)item)))
        return sb_xstrdup(json_string_value(json_object_get(hit, "token")));
    char *token = fe_reasoning_seal_item(r, item);
    if (!token || !id || !json_is_object(r->parsed.style_state))
        return token;
    if (!json_is_object(cache)) {
        cache = json_object();
        json_object_set_new(r->parsed.style_state, "sealed", cache);
    }
    json_object_set_new(cache, id, json_pack("{s:s, s:O}", "token", token, "item", item));
    return token;
}

/* A reasoning item as a thinking block (redacted_thinking when the upstream
 * only gave an opaque blob), or NULL when sealing is not configured: the
 * client could not hand it back. */
json_t *fe_messages_thinking_block(const fe_request_t *r, const json_t *item)
{
    char *token = fe_messages_seal(r, item);
    if (!token)
        return NULL;
    json_t *text = fe_messages_reasoning_text(item);
    json_t *block;
    json_t *redacted = json_object_get(item, "redacted");
    if (json_string_length(text) == 0 && redacted && !json_is_false(redacted) && !json_is_null(redacted)) {
        block = json_pack("{s:s, s:s}", "type", "redacted_thinking", "data", token);
        json_decref(text);
    } else {
        if (fe_messages_thinking_omitted(r))
            json_string_set(text, "");
        block = json_pack("{s:s, s:o, s:s}", "type", "thinking", "thinking", text, "signature", token);
    }
    free(token);
    return block;
}

json_t *fe_messages_tool_input(const json_t *item)
{
    const char *args = json_string_value(json_object_get(item, "arguments"));
    json_t *input = args && *args ? json_loads(args, JSON_DECODE_ANY, NULL) : json_object();
    if (!json_is_object(input)) {
        json_decref(input);
        return NULL;
    }
    return input;
}

const json_t *fe_messages_part_text(const json_t *part, bool *refusal)
{
    json_t *pt = json_object_get(part, "type");
    json_t *text = NULL;
    *refusal = false;
    if (fe_messages_is(pt, "output_text"))
        text = json_object_get(part, "text");
    else if (fe_messages_is(pt, "refusal") && (text = json_object_get(part, "refusal")))
        *refusal = true;
    return json_is_string(text) ? text : NULL;
}

json_t *fe_messages_message(const fe_request_t *r, json_t *content, const char *stop_reason)
{
    const fe_collect_t *res = &r->result;
    return json_pack("{s:s, s:s, s:s, s:s, s:o, s:s?, s:n, s:{s:I, s:I, s:i, s:i}}", "id", r->response_id, "type",
                     "message", "role", "assistant", "model", r->parsed.model_id, "content", content, "stop_reason",
                     stop_reason, "stop_sequence", "usage", "input_tokens", (json_int_t)res->input_tokens,
                     "output_tokens", (json_int_t)res->output_tokens, "cache_creation_input_tokens", 0,
                     "cache_read_input_tokens", 0);
}

static json_t *fe_messages_render(fe_request_t *r)
{
    const fe_collect_t *res = &r->result;
    json_t *content = json_array();
    bool tool_use = false, refused = false;
    size_t i;
    json_t *it;
    json_array_foreach (res->items, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (!type)
            continue;
        if (!strcmp(type, "reasoning")) {
            json_t *block = fe_messages_thinking_block(r, it);
            if (block)
                json_array_append_new(content, block);
        } else if (!strcmp(type, "message")) {
            size_t j;
            json_t *p;
            json_array_foreach (json_object_get(it, "content"), j, p) {
                bool refusal;
                const json_t *text = fe_messages_part_text(p, &refusal);
                refused |= refusal;
                if (text)
                    json_array_append_new(content, json_pack("{s:s, s:O}", "type", "text", "text", text));
            }
        } else if (!strcmp(type, "function_call")) {
            tool_use = true;
            json_t *input = fe_messages_tool_input(it);
            if (!input) {
                const char *call_id = json_string_value(json_object_get(it, "call_id"));
                sb_warn("messages: tool call %.64s has arguments that are not a JSON object; sent as {}",
                        call_id ? call_id : "(no call_id)");
                input = json_object();
            }
            json_array_append_new(content, json_pack("{s:s, s:O?, s:O?, s:o}", "type", "tool_use", "id",
                                                     json_object_get(it, "call_id"), "name",
                                                     json_object_get(it, "name"), "input", input));
        }
    }
    bool incomplete = !strcmp(res->status, "incomplete");
    const char *why = res->incomplete_reason;
    const char *stop = tool_use                                                       ? "tool_use"
                       : incomplete && (!why[0] || !strcmp(why, "max_output_tokens")) ? "max_tokens"
                       : refused || (incomplete && !strcmp(why, "content_filter"))    ? "refusal"
                                                                                      : "end_turn";
    return fe_messages_message(r, content, stop);
}

/* The count as Anthropic's count_tokens answers it. */
static json_t *fe_messages_render_count(fe_request_t *r)
{
    return json_pack("{s:I}", "input_tokens", (json_int_t)r->result.input_tokens);
}

/* POST /v1/messages/count_tokens: the generation pipeline (auth, model,
 * permission, capabilities) with a count-only job. */
void fe_messages_count_tokens(fe_request_t *r)
{
    r->count_tokens = true;
    fe_generate_start(r);
}

const fe_style_t fe_style_messages = {
    .name = "messages",
    .key = fe_messages_key,
    .error_body = fe_messages_error_body,
    .parse = fe_messages_parse,
    .render = fe_messages_render,
    .render_count = fe_messages_render_count,
    .stream = &fe_stream_messages,
};
