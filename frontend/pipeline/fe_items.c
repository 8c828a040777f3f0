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
        const char *prefix = !type                                   ? "item_"
                             : !strcmp(type, "message")              ? "msg_"
                             : !strcmp(type, "function_call")        ? "fc_"
                             : !strcmp(type, "function_call_output") ? "fco_"
                             : !strcmp(type, "reasoning")            ? "rs_"
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
