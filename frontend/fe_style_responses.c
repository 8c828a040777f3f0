/*
 * fe_style_responses: the Responses style (POST /v1/responses): Bearer auth,
 * input items -> canonical request, result -> Response object, OpenAI error
 * body. The canonical model is this style's superset, so translation here is
 * mostly normalisation.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fe_params.h"
#include "fe_router.h"
#include "fe_request.h"
#include "fe_router.h"
#include "sb_event.h"
#include "sb_alloc.h"
#include "sb_id.h"

/* "Authorization: Bearer KEY" */
const char *fe_bearer_key(struct evhttp_request *http, size_t *len)
{
    const char *h = evhttp_find_header(evhttp_request_get_input_headers(http), "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && h[n - 1] == ' ')
        n--;
    if (n == 0)
        return NULL;
    *len = n;
    return h;
}

static json_t *fe_responses_error_body(const fe_request_t *r, const fe_error_t *e) { return fe_error_openai_body(e); }

static const char *const fe_responses_params[] = {
    "model", "input", "instructions", "previous_response_id", "store", "include", "reasoning", "text", "tools",
    "tool_choice", "parallel_tool_calls", "stream", "max_output_tokens", "temperature", "top_p", "metadata", "user",
    "truncation", "service_tier", "safety_identifier", "prompt_cache_key", "max_tool_calls", "top_logprobs",
    "background", "stream_options", NULL};

static bool fe_role_ok(const char *role)
{
    return role && (!strcmp(role, "user") || !strcmp(role, "assistant") || !strcmp(role, "system") ||
                    !strcmp(role, "developer"));
}

/* Normalises one content part; returns a new reference or NULL with err. */
static json_t *fe_responses_part(const json_t *p, size_t i, size_t j, fe_error_t *err)
{
    const char *type = json_string_value(json_object_get(p, "type"));
    char param[64];
    snprintf(param, sizeof param, "input[%zu].content[%zu]", i, j);
    if (!json_is_object(p) || !type) {
        fe_params_invalid(err, param, "Invalid content part at '%s': expected an object with a 'type'.", param);
        return NULL;
    }
    if (!strcmp(type, "input_text") || !strcmp(type, "output_text")) {
        json_t *text = json_object_get(p, "text");
        if (!json_is_string(text)) {
            fe_params_invalid(err, param, "Missing required parameter: '%s.text'.", param);
            return NULL;
        }
        return json_pack("{s:s, s:O}", "type", type, "text", text);
    }
    if (!strcmp(type, "input_image")) {
        json_t *url = json_object_get(p, "image_url");
        if (!json_is_string(url)) {
            fe_params_invalid(err, param, "Missing required parameter: '%s.image_url'.", param);
            return NULL;
        }
        json_t *out = json_pack("{s:s, s:O}", "type", "input_image", "image_url", url);
        json_t *detail = json_object_get(p, "detail");
        if (json_is_string(detail))
            json_object_set(out, "detail", detail);
        return out;
    }
    if (!strcmp(type, "refusal") && json_is_string(json_object_get(p, "refusal")))
        return json_deep_copy(p);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                 "unsupported parameter: content part type '%.40s' is not supported yet.", type);
    return NULL;
}

static json_t *fe_responses_message(const json_t *it, size_t i, fe_error_t *err)
{
    const char *role = json_string_value(json_object_get(it, "role"));
    char param[48];
    snprintf(param, sizeof param, "input[%zu].role", i);
    if (!fe_role_ok(role)) {
        fe_params_invalid(err, param,
                          "Invalid value for '%s': expected one of 'user', 'assistant', 'system', 'developer'.", param);
        return NULL;
    }
    json_t *content = json_object_get(it, "content");
    json_t *parts = json_array();
    bool assistant = !strcmp(role, "assistant");
    if (json_is_string(content)) {
        json_array_append_new(parts, json_pack("{s:s, s:O}", "type", assistant ? "output_text" : "input_text",
                                               "text", content));
    } else if (json_is_array(content)) {
        size_t j;
        json_t *p;
        json_array_foreach(content, j, p)
        {
            json_t *np = fe_responses_part(p, i, j, err);
            if (!np) {
                json_decref(parts);
                return NULL;
            }
            json_array_append_new(parts, np);
        }
    } else {
        json_decref(parts);
        snprintf(param, sizeof param, "input[%zu].content", i);
        fe_params_invalid(err, param, "Invalid type for '%s': expected a string or an array of content parts.",
                          param);
        return NULL;
    }
    json_t *out = json_pack("{s:s, s:s, s:o}", "type", "message", "role", role, "content", parts);
    json_t *id = json_object_get(it, "id");
    if (json_is_string(id))
        json_object_set(out, "id", id);
    return out;
}

static json_t *fe_responses_item(const json_t *it, size_t i, fe_error_t *err)
{
    char param[48];
    snprintf(param, sizeof param, "input[%zu]", i);
    if (!json_is_object(it)) {
        fe_params_invalid(err, param, "Invalid type for '%s': expected an object.", param);
        return NULL;
    }
    const char *type = json_string_value(json_object_get(it, "type"));
    if (!type || !strcmp(type, "message"))
        return fe_responses_message(it, i, err);
    if (!strcmp(type, "function_call")) {
        if (!json_is_string(json_object_get(it, "call_id")) || !json_is_string(json_object_get(it, "name")) ||
            !json_is_string(json_object_get(it, "arguments"))) {
            fe_params_invalid(err, param, "'%s' of type function_call needs string call_id, name and arguments.",
                              param);
            return NULL;
        }
        return json_deep_copy(it);
    }
    if (!strcmp(type, "function_call_output")) {
        json_t *out = json_object_get(it, "output");
        if (!json_is_string(json_object_get(it, "call_id")) || !(json_is_string(out) || json_is_array(out))) {
            fe_params_invalid(err, param, "'%s' of type function_call_output needs a call_id and an output.", param);
            return NULL;
        }
        return json_deep_copy(it);
    }
    if (!strcmp(type, "reasoning"))
        return json_deep_copy(it);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                 "unsupported parameter: input item type '%.40s' is not supported yet.", type);
    return NULL;
}

static json_t *fe_responses_input(const json_t *input, fe_error_t *err)
{
    if (json_is_string(input))
        return json_pack("[{s:s, s:s, s:[{s:s, s:O}]}]", "type", "message", "role", "user", "content", "type",
                         "input_text", "text", input);
    if (!json_is_array(input)) {
        fe_params_invalid(err, "input", "Invalid type for 'input': expected a string or an array of input items.");
        return NULL;
    }
    json_t *items = json_array();
    size_t i;
    json_t *it;
    json_array_foreach(input, i, it)
    {
        json_t *n = fe_responses_item(it, i, err);
        if (!n) {
            json_decref(items);
            return NULL;
        }
        json_array_append_new(items, n);
    }
    return items;
}

/* Gives every input item an id, as OpenAI does for stored input items. */
static void fe_responses_assign_ids(json_t *items)
{
    size_t i;
    json_t *it;
    json_array_foreach(items, i, it)
    {
        if (json_is_string(json_object_get(it, "id")))
            continue;
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *prefix = !strcmp(type, "message") ? "msg_" : !strcmp(type, "function_call") ? "fc_"
                             : !strcmp(type, "function_call_output")                           ? "fco_"
                                                                                               : "item_";
        char id[SB_ID_MAX];
        sb_id_new(id, sizeof id, prefix, 24);
        json_object_set_new(it, "id", json_string(id));
    }
}

static int fe_responses_parse(fe_request_t *r, json_t *body, fe_error_t *err)
{
    if (fe_params_only(body, fe_responses_params, "Unknown parameter: '%s'.", err) < 0)
        return -1;
    const char *model = fe_params_required_string(body, "model", err);
    if (!model)
        return -1;
    r->model_id = sb_xstrdup(model);
    json_t *input = fe_params_require(body, "input", err);
    if (!input)
        return -1;
    json_t *stream = fe_params_typed(body, "stream", FE_P_BOOL | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_true(stream)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "stream",
                     "unsupported parameter: 'stream' is not available on this gateway yet.");
        return -1;
    }
    json_t *c = json_object();
    r->canonical = c;
    json_t *items = fe_responses_input(input, err);
    if (!items)
        return -1;
    fe_responses_assign_ids(items);
    json_object_set_new(c, "input", items);
    if (fe_params_copy(body, "instructions", FE_P_STRING, 0, 0, c, "instructions", err) < 0 ||
        fe_params_copy(body, "max_output_tokens", FE_P_INT, 1, 1e9, c, "max_output_tokens", err) < 0 ||
        fe_params_copy(body, "temperature", FE_P_NUMBER, 0, 2, c, "temperature", err) < 0 ||
        fe_params_copy(body, "top_p", FE_P_NUMBER, 0, 1, c, "top_p", err) < 0 ||
        fe_params_copy(body, "metadata", FE_P_OBJECT, 0, 0, c, "metadata", err) < 0 ||
        fe_params_copy(body, "user", FE_P_STRING, 0, 0, c, "user", err) < 0 ||
        fe_params_copy(body, "parallel_tool_calls", FE_P_BOOL, 0, 0, c, "parallel_tool_calls", err) < 0 ||
        fe_params_copy(body, "tool_choice", FE_P_STRING | FE_P_OBJECT, 0, 0, c, "tool_choice", err) < 0 ||
        fe_params_copy(body, "reasoning", FE_P_OBJECT, 0, 0, c, "reasoning", err) < 0 ||
        fe_params_copy(body, "text", FE_P_OBJECT, 0, 0, c, "text", err) < 0)
        return -1;
    json_t *tools = fe_params_typed(body, "tools", FE_P_ARRAY | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_array(tools)) {
        json_t *out = json_array();
        size_t i;
        json_t *t;
        json_array_foreach(tools, i, t)
        {
            const char *type = json_string_value(json_object_get(t, "type"));
            if (!type || strcmp(type, "function") != 0 || !json_is_string(json_object_get(t, "name"))) {
                json_decref(out);
                fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", "tools",
                             "unsupported parameter: tools[%zu] of type '%.40s' is not supported yet.", i,
                             type ? type : "(none)");
                return -1;
            }
            json_t *nt = json_deep_copy(t);
            if (!json_object_get(nt, "strict"))
                json_object_set_new(nt, "strict", json_true()); /* strict by default in this style */
            json_array_append_new(out, nt);
        }
        json_object_set_new(c, "tools", out);
    }
    json_t *store = fe_params_typed(body, "store", FE_P_BOOL | FE_P_NULL, err);
    json_t *prev = fe_params_typed(body, "previous_response_id", FE_P_STRING | FE_P_NULL, err);
    if (err->status)
        return -1;
    if (json_is_false(store))
        r->store = false;
    if (json_is_string(prev))
        r->previous_response_id = sb_xstrdup(json_string_value(prev));
    sb_id_new(r->response_id, sizeof r->response_id, "resp_", 24);
    return 0;
}

static json_t *fe_json_or_null(json_t *v) { return v ? json_incref(v) : json_null(); }

static json_t *fe_json_number_or(json_t *v, double dflt) { return json_is_number(v) ? json_incref(v) : json_real(dflt); }

static json_t *fe_responses_render(fe_request_t *r)
{
    const json_t *body = r->body;
    const json_t *c = r->canonical;
    const fe_collect_t *res = &r->result;
    bool incomplete = !strcmp(res->status, "incomplete");
    json_t *reasoning = json_object_get(c, "reasoning");
    json_t *effort = json_object_get(reasoning, "effort");
    json_t *text = json_object_get(c, "text");
    json_t *tool_choice = json_object_get(c, "tool_choice");
    json_t *tools = json_object_get(c, "tools");
    json_t *metadata = json_object_get(c, "metadata");
    json_t *ptc = json_object_get(c, "parallel_tool_calls");
    long long now = (long long)time(NULL);
    json_t *out = json_object();
    json_object_set_new(out, "id", json_string(r->response_id));
    json_object_set_new(out, "object", json_string("response"));
    json_object_set_new(out, "created_at", json_integer(r->start_ms / 1000));
    json_object_set_new(out, "completed_at", incomplete ? json_null() : json_integer(now));
    json_object_set_new(out, "status", json_string(incomplete ? "incomplete" : "completed"));
    json_object_set_new(out, "incomplete_details",
                        incomplete ? json_pack("{s:s}", "reason",
                                               res->incomplete_reason[0] ? res->incomplete_reason : "max_output_tokens")
                                   : json_null());
    json_object_set_new(out, "model", json_string(res->model[0] ? res->model : r->model_id));
    json_object_set_new(out, "previous_response_id",
                        r->previous_response_id ? json_string(r->previous_response_id) : json_null());
    json_object_set_new(out, "instructions", fe_json_or_null(json_object_get(c, "instructions")));
    json_object_set(out, "output", res->items);
    json_object_set_new(out, "error", json_null());
    json_object_set_new(out, "tools", tools ? json_incref(tools) : json_array());
    json_object_set_new(out, "tool_choice", tool_choice ? json_incref(tool_choice) : json_string("auto"));
    json_object_set_new(out, "truncation", json_string("disabled"));
    json_object_set_new(out, "parallel_tool_calls", ptc ? json_incref(ptc) : json_true());
    json_object_set_new(out, "text", text ? json_incref(text) : json_pack("{s:{s:s}}", "format", "type", "text"));
    json_object_set_new(out, "top_p", fe_json_number_or(json_object_get(c, "top_p"), 1.0));
    json_object_set_new(out, "presence_penalty", json_real(0));
    json_object_set_new(out, "frequency_penalty", json_real(0));
    json_object_set_new(out, "top_logprobs", json_integer(0));
    json_object_set_new(out, "temperature", fe_json_number_or(json_object_get(c, "temperature"), 1.0));
    json_object_set_new(out, "reasoning", json_pack("{s:O?, s:n}", "effort", effort, "summary"));
    json_object_set_new(out, "usage",
                        json_pack("{s:I, s:{s:i}, s:I, s:{s:I}, s:I}", "input_tokens", (json_int_t)res->input_tokens,
                                  "input_tokens_details", "cached_tokens", 0, "output_tokens",
                                  (json_int_t)res->output_tokens, "output_tokens_details", "reasoning_tokens",
                                  (json_int_t)res->reasoning_tokens, "total_tokens",
                                  (json_int_t)(res->input_tokens + res->output_tokens)));
    json_object_set_new(out, "max_output_tokens", fe_json_or_null(json_object_get(c, "max_output_tokens")));
    json_object_set_new(out, "max_tool_calls", fe_json_or_null(json_object_get(body, "max_tool_calls")));
    json_object_set_new(out, "store", json_boolean(r->store));
    json_object_set_new(out, "background", json_false());
    json_object_set_new(out, "service_tier", json_string("default"));
    json_object_set_new(out, "metadata", metadata ? json_incref(metadata) : json_object());
    json_object_set_new(out, "safety_identifier", fe_json_or_null(json_object_get(body, "safety_identifier")));
    json_object_set_new(out, "prompt_cache_key", fe_json_or_null(json_object_get(body, "prompt_cache_key")));
    json_object_set_new(out, "user", fe_json_or_null(json_object_get(c, "user")));
    return out;
}

const fe_style_t fe_style_responses = {
    .name = "responses",
    .key = fe_bearer_key,
    .error_body = fe_responses_error_body,
    .parse = fe_responses_parse,
    .render = fe_responses_render,
};
