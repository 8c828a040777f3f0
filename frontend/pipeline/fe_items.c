/* fe_items: Responses input items (see fe_items.h). */
#include "fe_items.h"

#include <stdio.h>
#include <string.h>

#include "fe_params.h"
#include "sb_base64.h"
#include "sb_dataurl.h"
#include "sb_event.h"
#include "sb_id.h"
#include "sb_map.h"

static bool fe_items_role_ok(const char *role)
{
    return role && (!strcmp(role, "user") || !strcmp(role, "assistant") || !strcmp(role, "system") ||
                    !strcmp(role, "developer"));
}

/* A data URL "data:<mime>;base64,<payload>" whose MIME type starts with
 * mime_prefix and whose payload is non-empty, well-formed base64: one the
 * worker's adapters can split (sb_dataurl, as they do) and decode. */
static bool fe_items_data_url_ok(const char *url, const char *mime_prefix)
{
    sb_dataurl_t u;
    return sb_dataurl_parse(url, &u) == 0 && u.base64 && sb_dataurl_mime_is(&u, mime_prefix) && u.payload_len > 0 &&
           sb_base64_check(u.payload, u.payload_len, 0) == 0;
}

/* An image URL the upstreams accept: http(s), or a base64 data URL of an image. */
static bool fe_items_image_url_ok(const char *url)
{
    if (!strncmp(url, "https://", 8) || !strncmp(url, "http://", 7))
        return strlen(url) > 8;
    return fe_items_data_url_ok(url, "image/");
}

static json_t *fe_items_image_part(const json_t *p, const char *param, fe_error_t *err)
{
    json_t *url = json_object_get(p, "image_url");
    json_t *file_id = json_object_get(p, "file_id");
    json_t *detail = json_object_get(p, "detail");
    json_t *out = json_pack("{s:s}", "type", "input_image");
    if (json_is_string(url)) {
        if (!fe_items_image_url_ok(json_string_value(url))) {
            json_decref(out);
            fe_params_invalid(err, param,
                              "Invalid image URL at '%s.image_url': expected an http(s) URL or a base64 data URL "
                              "(data:image/<type>;base64,...).",
                              param);
            return NULL;
        }
        json_object_set(out, "image_url", url);
    } else if (json_is_string(file_id)) {
        json_object_set(out, "file_id", file_id);
    } else {
        json_decref(out);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", param,
                     "Missing required parameter: '%s.image_url' (or '%s.file_id').", param, param);
        return NULL;
    }
    if (json_is_string(detail)) {
        const char *d = json_string_value(detail);
        if (strcmp(d, "low") != 0 && strcmp(d, "high") != 0 && strcmp(d, "auto") != 0) {
            json_decref(out);
            fe_params_invalid(err, param, "Invalid value for '%s.detail': expected one of 'low', 'high', 'auto'.",
                              param);
            return NULL;
        }
        json_object_set(out, "detail", detail);
    }
    return out;
}

static json_t *fe_items_file_part(const json_t *p, const char *param, fe_error_t *err)
{
    json_t *file_id = json_object_get(p, "file_id");
    json_t *data = json_object_get(p, "file_data");
    json_t *filename = json_object_get(p, "filename");
    if (json_is_string(file_id))
        return json_pack("{s:s, s:O}", "type", "input_file", "file_id", file_id);
    if (json_is_string(data)) {
        const char *d = json_string_value(data);
        if (!fe_items_data_url_ok(d, "") || !json_is_string(filename)) {
            fe_params_invalid(err, param,
                              "Invalid file at '%s': file_data must be a base64 data URL "
                              "(data:<mime>;base64,...) and filename is required with it.",
                              param);
            return NULL;
        }
        return json_pack("{s:s, s:O, s:O}", "type", "input_file", "file_data", data, "filename", filename);
    }
    if (json_object_get(p, "file_url")) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                     "unsupported parameter: '%s.file_url' is not supported; upload the file and use file_id.", param);
        return NULL;
    }
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", param,
                 "Missing required parameter: '%s.file_id' (or '%s.file_data').", param, param);
    return NULL;
}

json_t *fe_items_normalize_part(const json_t *p, const char *param, fe_error_t *err)
{
    const char *type = json_string_value(json_object_get(p, "type"));
    if (!json_is_object(p) || !type) {
        fe_params_invalid(err, param, "Invalid content part at '%s': expected an object with a 'type'.", param);
        return NULL;
    }
    if (!strcmp(type, "input_text") || !strcmp(type, "output_text")) {
        json_t *text = json_object_get(p, "text");
        if (!json_is_string(text)) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", param,
                         "Missing required parameter: '%s.text'.", param);
            return NULL;
        }
        return json_pack("{s:s, s:O}", "type", type, "text", text);
    }
    if (!strcmp(type, "input_image"))
        return fe_items_image_part(p, param, err);
    if (!strcmp(type, "input_file"))
        return fe_items_file_part(p, param, err);
    if (!strcmp(type, "refusal") && json_is_string(json_object_get(p, "refusal")))
        return json_pack("{s:s, s:O}", "type", "refusal", "refusal", json_object_get(p, "refusal"));
    if (!strcmp(type, "input_audio")) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                     "unsupported parameter: audio input is not supported in the Responses API; "
                     "use Chat Completions for audio.");
        return NULL;
    }
    fe_params_invalid(err, param, "Invalid value for '%s.type': '%.40s' is not a supported content part type.", param,
                      type);
    return NULL;
}

static json_t *fe_items_message(const json_t *it, const char *item_param, fe_error_t *err)
{
    const char *role = json_string_value(json_object_get(it, "role"));
    char param[96];
    if (!fe_items_role_ok(role)) {
        snprintf(param, sizeof param, "%s.role", item_param);
        fe_params_invalid(err, param,
                          "Invalid value for '%s': expected one of 'user', 'assistant', 'system', 'developer'.", param);
        return NULL;
    }
    json_t *content = json_object_get(it, "content");
    json_t *parts = json_array();
    bool assistant = !strcmp(role, "assistant");
    if (json_is_string(content)) {
        json_array_append_new(
            parts, json_pack("{s:s, s:O}", "type", assistant ? "output_text" : "input_text", "text", content));
    } else if (json_is_array(content)) {
        size_t j;
        json_t *p;
        json_array_foreach (content, j, p) {
            snprintf(param, sizeof param, "%s.content[%zu]", item_param, j);
            json_t *np = fe_items_normalize_part(p, param, err);
            if (!np) {
                json_decref(parts);
                return NULL;
            }
            json_array_append_new(parts, np);
        }
    } else {
        json_decref(parts);
        snprintf(param, sizeof param, "%s.content", item_param);
        fe_params_invalid(err, param, "Invalid type for '%s': expected a string or an array of content parts.", param);
        return NULL;
    }
    json_t *out = json_pack("{s:s, s:s, s:o}", "type", "message", "role", role, "content", parts);
    json_t *id = json_object_get(it, "id");
    if (json_is_string(id))
        json_object_set(out, "id", id);
    return out;
}

/* Built-in tool items (docs/tools.md) a client sends back, checked as
 * openai-python's response_input_item_param.py types them. A field's
 * absence or type is refused with OpenAI's wording; only the fields of the
 * type are kept, so private ones (sb_output) come only from stored items. */
enum { FE_IT_STR = 1, FE_IT_NULL = 2, FE_IT_BOOL = 4, FE_IT_ARRAY = 8, FE_IT_OBJECT = 16 };

static bool fe_items_is(const json_t *v, int types)
{
    return ((types & FE_IT_STR) && json_is_string(v)) || ((types & FE_IT_NULL) && json_is_null(v)) ||
           ((types & FE_IT_BOOL) && json_is_boolean(v)) || ((types & FE_IT_ARRAY) && json_is_array(v)) ||
           ((types & FE_IT_OBJECT) && json_is_object(v));
}

/* obj[key]'s presence (when required) and type: 0, or -1 with err naming
 * "<param>.<key>". */
static int fe_items_field(const json_t *obj, const char *param, const char *key, int types, bool required,
                          fe_error_t *err)
{
    char p[128];
    snprintf(p, sizeof p, "%s.%s", param, key);
    json_t *v = json_object_get(obj, key);
    if (!v && required) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", p,
                     "Missing required parameter: '%s'.", p);
        return -1;
    }
    if (v && !fe_items_is(v, types)) {
        const char *want = types & FE_IT_STR     ? "a string"
                           : types & FE_IT_BOOL  ? "a boolean"
                           : types & FE_IT_ARRAY ? "an array"
                                                 : "an object";
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", p, "Invalid type for '%s': expected %s.", p,
                     want);
        return -1;
    }
    return 0;
}

/* A string field that must be one of values. */
static int fe_items_enum(const json_t *obj, const char *param, const char *key, const char *const *values,
                         bool required, fe_error_t *err)
{
    if (fe_items_field(obj, param, key, FE_IT_STR, required, err) < 0)
        return -1;
    const char *v = json_string_value(json_object_get(obj, key));
    for (size_t i = 0; v && values[i]; i++)
        if (!strcmp(v, values[i]))
            return 0;
    if (!v)
        return 0;
    char p[128];
    snprintf(p, sizeof p, "%s.%s", param, key);
    fe_params_invalid(err, p, "Invalid value for '%s': '%.40s' is not one of the accepted values.", p, v);
    return -1;
}

/* A new object with the keys of it that are in keys. */
static json_t *fe_items_pick(const json_t *it, const char *const *keys)
{
    json_t *out = json_object();
    for (size_t i = 0; keys[i]; i++) {
        json_t *v = json_object_get(it, keys[i]);
        if (v)
            json_object_set_new(out, keys[i], json_deep_copy(v));
    }
    return out;
}

/* web_search_call's action: search {query?, queries?, sources?}, open_page
 * {url?}, find_in_page {url, pattern}. */
static int fe_items_search_action(const json_t *it, const char *param, fe_error_t *err)
{
    static const char *const types[] = {"search", "open_page", "find_in_page", NULL};
    char p[112];
    snprintf(p, sizeof p, "%s.action", param);
    const json_t *a = json_object_get(it, "action");
    if (fe_items_enum(a, p, "type", types, true, err) < 0)
        return -1;
    const char *type = json_string_value(json_object_get(a, "type"));
    if (!strcmp(type, "find_in_page"))
        return fe_items_field(a, p, "url", FE_IT_STR, true, err) < 0 ||
                       fe_items_field(a, p, "pattern", FE_IT_STR, true, err) < 0
                   ? -1
                   : 0;
    if (!strcmp(type, "open_page"))
        return fe_items_field(a, p, "url", FE_IT_STR | FE_IT_NULL, false, err);
    if (fe_items_field(a, p, "query", FE_IT_STR, false, err) < 0 ||
        fe_items_field(a, p, "queries", FE_IT_ARRAY, false, err) < 0 ||
        fe_items_field(a, p, "sources", FE_IT_ARRAY, false, err) < 0)
        return -1;
    size_t i;
    json_t *src;
    json_array_foreach (json_object_get(a, "sources"), i, src) {
        char sp[160];
        snprintf(sp, sizeof sp, "%s.sources[%zu]", p, i);
        if (fe_items_field(src, sp, "url", FE_IT_STR, true, err) < 0)
            return -1;
    }
    return 0;
}

static json_t *fe_items_web_search_call(const json_t *it, const char *param, fe_error_t *err)
{
    static const char *const statuses[] = {"in_progress", "searching", "completed", "failed", NULL};
    static const char *const keys[] = {"type", "id", "status", "action", NULL};
    if (fe_items_field(it, param, "id", FE_IT_STR, true, err) < 0 ||
        fe_items_enum(it, param, "status", statuses, true, err) < 0 ||
        fe_items_field(it, param, "action", FE_IT_OBJECT, true, err) < 0 || fe_items_search_action(it, param, err) < 0)
        return NULL;
    return fe_items_pick(it, keys);
}

static json_t *fe_items_mcp_list_tools(const json_t *it, const char *param, fe_error_t *err)
{
    static const char *const keys[] = {"type", "id", "server_label", "tools", "error", NULL};
    if (fe_items_field(it, param, "id", FE_IT_STR, true, err) < 0 ||
        fe_items_field(it, param, "server_label", FE_IT_STR, true, err) < 0 ||
        fe_items_field(it, param, "tools", FE_IT_ARRAY, true, err) < 0 ||
        fe_items_field(it, param, "error", FE_IT_STR | FE_IT_NULL, false, err) < 0)
        return NULL;
    size_t i;
    json_t *t;
    json_array_foreach (json_object_get(it, "tools"), i, t) {
        char p[112];
        snprintf(p, sizeof p, "%s.tools[%zu]", param, i);
        if (!json_is_object(t)) {
            fe_params_invalid(err, p, "Invalid type for '%s': expected an object.", p);
            return NULL;
        }
        if (fe_items_field(t, p, "name", FE_IT_STR, true, err) < 0 ||
            fe_items_field(t, p, "input_schema", FE_IT_OBJECT, true, err) < 0 ||
            fe_items_field(t, p, "description", FE_IT_STR | FE_IT_NULL, false, err) < 0)
            return NULL;
    }
    return fe_items_pick(it, keys);
}

/* mcp_call and mcp_approval_request: server_label, name and arguments. */
static json_t *fe_items_mcp_call(const json_t *it, const char *param, bool call, fe_error_t *err)
{
    static const char *const statuses[] = {"in_progress", "completed", "incomplete", "calling", "failed", NULL};
    static const char *const call_keys[] = {
        "type", "id", "server_label", "name", "arguments", "approval_request_id", "error", "output", "status", NULL};
    static const char *const request_keys[] = {"type", "id", "server_label", "name", "arguments", NULL};
    if (fe_items_field(it, param, "id", FE_IT_STR, true, err) < 0 ||
        fe_items_field(it, param, "server_label", FE_IT_STR, true, err) < 0 ||
        fe_items_field(it, param, "name", FE_IT_STR, true, err) < 0 ||
        fe_items_field(it, param, "arguments", FE_IT_STR, true, err) < 0)
        return NULL;
    if (!call)
        return fe_items_pick(it, request_keys);
    /* error: the text docs/tools.md gives the item, or the object
     * openai-python's McpToolCallErrorParam types it as. */
    if (fe_items_field(it, param, "approval_request_id", FE_IT_STR | FE_IT_NULL, false, err) < 0 ||
        fe_items_field(it, param, "output", FE_IT_STR | FE_IT_NULL, false, err) < 0 ||
        fe_items_field(it, param, "error", FE_IT_STR | FE_IT_OBJECT | FE_IT_NULL, false, err) < 0 ||
        fe_items_enum(it, param, "status", statuses, false, err) < 0)
        return NULL;
    return fe_items_pick(it, call_keys);
}

static json_t *fe_items_mcp_approval_response(const json_t *it, const char *param, fe_error_t *err)
{
    static const char *const keys[] = {"type", "id", "approval_request_id", "approve", "reason", NULL};
    if (fe_items_field(it, param, "approval_request_id", FE_IT_STR, true, err) < 0 ||
        fe_items_field(it, param, "approve", FE_IT_BOOL, true, err) < 0 ||
        fe_items_field(it, param, "id", FE_IT_STR | FE_IT_NULL, false, err) < 0 ||
        fe_items_field(it, param, "reason", FE_IT_STR | FE_IT_NULL, false, err) < 0)
        return NULL;
    json_t *out = fe_items_pick(it, keys);
    if (json_is_null(json_object_get(out, "id")))
        json_object_del(out, "id"); /* given one by fe_items_assign_ids */
    return out;
}

static json_t *fe_items_one(const json_t *it, const char *param, fe_error_t *err)
{
    if (!json_is_object(it)) {
        fe_params_invalid(err, param, "Invalid type for '%s': expected an object.", param);
        return NULL;
    }
    const char *type = json_string_value(json_object_get(it, "type"));
    if (!type || !strcmp(type, "message"))
        return fe_items_message(it, param, err);
    if (!strcmp(type, "function_call")) {
        if (!json_is_string(json_object_get(it, "call_id")) || !json_is_string(json_object_get(it, "name")) ||
            !json_is_string(json_object_get(it, "arguments"))) {
            fe_params_invalid(err, param, "'%s' of type function_call needs string call_id, name and arguments.",
                              param);
            return NULL;
        }
        json_t *copy = json_deep_copy(it);
        const char *ns = json_string_value(json_object_get(it, "namespace"));
        if (ns && *ns) /* a call of a namespace tool: the flat name the tool was given (fe_responses_parse.c) */
            json_object_set_new(copy, "name",
                                json_sprintf("%s__%s", ns, json_string_value(json_object_get(it, "name"))));
        json_object_del(copy, "namespace");
        return copy;
    }
    if (!strcmp(type, "function_call_output")) {
        json_t *out = json_object_get(it, "output");
        json_t *call_id = json_object_get(it, "call_id");
        if (!json_is_string(call_id) || json_string_length(call_id) == 0 ||
            !(json_is_string(out) || json_is_array(out))) {
            fe_params_invalid(err, param, "'%s' of type function_call_output needs a call_id and an output.", param);
            return NULL;
        }
        json_t *copy = json_deep_copy(it);
        if (json_is_array(out)) {
            json_t *parts = json_array();
            size_t j;
            json_t *p;
            json_array_foreach (out, j, p) {
                char pparam[96];
                snprintf(pparam, sizeof pparam, "%s.output[%zu]", param, j);
                json_t *np = fe_items_normalize_part(p, pparam, err);
                if (!np) {
                    json_decref(parts);
                    json_decref(copy);
                    return NULL;
                }
                json_array_append_new(parts, np);
            }
            json_object_set_new(copy, "output", parts);
        }
        return copy;
    }
    if (!strcmp(type, "reasoning")) {
        json_t *summary = json_object_get(it, "summary");
        json_t *enc = json_object_get(it, "encrypted_content");
        if ((summary && !json_is_array(summary)) || (enc && !json_is_string(enc) && !json_is_null(enc))) {
            fe_params_invalid(err, param,
                              "'%s' of type reasoning needs a summary array and an optional "
                              "encrypted_content string.",
                              param);
            return NULL;
        }
        return json_deep_copy(it);
    }
    if (!strcmp(type, "web_search_call"))
        return fe_items_web_search_call(it, param, err);
    if (!strcmp(type, "mcp_list_tools"))
        return fe_items_mcp_list_tools(it, param, err);
    if (!strcmp(type, "mcp_call") || !strcmp(type, "mcp_approval_request"))
        return fe_items_mcp_call(it, param, !strcmp(type, "mcp_call"), err);
    if (!strcmp(type, "mcp_approval_response"))
        return fe_items_mcp_approval_response(it, param, err);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                 "unsupported parameter: input item type '%.40s' is not supported.", type);
    return NULL;
}

json_t *fe_items_normalize(const json_t *input, const char *param, fe_error_t *err)
{
    if (json_is_string(input))
        return json_pack("[{s:s, s:s, s:[{s:s, s:O}]}]", "type", "message", "role", "user", "content", "type",
                         "input_text", "text", input);
    if (!json_is_array(input)) {
        fe_params_invalid(err, param, "Invalid type for '%s': expected a string or an array of input items.", param);
        return NULL;
    }
    json_t *items = json_array();
    size_t i;
    json_t *it;
    json_array_foreach (input, i, it) {
        char ip[64];
        snprintf(ip, sizeof ip, "%s[%zu]", param, i);
        json_t *n = fe_items_one(it, ip, err);
        if (!n) {
            json_decref(items);
            return NULL;
        }
        json_array_append_new(items, n);
    }
    return items;
}

void fe_items_assign_ids(json_t *items)
{
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        if (json_is_string(json_object_get(it, "id")))
            continue;
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *prefix = !type                                    ? "item_"
                             : !strcmp(type, "message")               ? "msg_"
                             : !strcmp(type, "function_call")         ? "fc_"
                             : !strcmp(type, "function_call_output")  ? "fco_"
                             : !strcmp(type, "reasoning")             ? "rs_"
                             : !strcmp(type, "web_search_call")       ? "ws_"
                             : !strcmp(type, "mcp_list_tools")        ? "mcpl_"
                             : !strcmp(type, "mcp_call")              ? "mcp_"
                             : !strcmp(type, "mcp_approval_request")  ? "mcpr_"
                             : !strcmp(type, "mcp_approval_response") ? "mcpa_"
                                                                      : "item_";
        char id[SB_ID_MAX];
        sb_id_new(id, sizeof id, prefix, 24);
        json_object_set_new(it, "id", json_string(id));
    }
}

void fe_items_foreach_part(json_t *items, fe_items_part_fn fn, void *arg)
{
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        json_t *parts = NULL;
        if (type && !strcmp(type, "message"))
            parts = json_object_get(it, "content");
        else if (type && !strcmp(type, "function_call_output"))
            parts = json_object_get(it, "output");
        if (!json_is_array(parts))
            continue;
        size_t j;
        json_t *p;
        json_array_foreach (parts, j, p) {
            if (!fn(p, arg))
                return;
        }
    }
}

int fe_items_check_calls(const json_t *items, fe_error_t *err)
{
    sb_map_t *calls = NULL;
    size_t i;
    json_t *it;
    int rc = 0;
    json_array_foreach (items, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *call_id = json_string_value(json_object_get(it, "call_id"));
        if (!type || !call_id)
            continue;
        if (!strcmp(type, "function_call")) {
            if (!calls)
                calls = sb_map_new();
            sb_map_put(calls, call_id, (void *)1);
        } else if (!strcmp(type, "function_call_output") && !(calls && sb_map_get(calls, call_id))) {
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_function_call_output", "input",
                         "No tool call found for function call output with call_id %.64s.", call_id);
            rc = -1;
            break;
        }
    }
    sb_map_destroy(&calls);
    return rc;
}
