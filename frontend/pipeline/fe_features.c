/* fe_features: capability rules, and who runs each built-in tool (see
 * fe_features.h). */
#include "fe_features.h"

#include <string.h>

#include "fe_items.h"
#include "sb_event.h"

static const char *const fe_builtin_tools[] = {
    "web_search",   "web_search_2025_08_26", "web_search_preview", "web_search_preview_2025_03_11",
    "file_search",  "code_interpreter",      "image_generation",   "mcp",
    "computer_use", "computer_use_preview",  "local_shell",        NULL};

bool fe_features_builtin_tool(const char *type)
{
    for (size_t i = 0; type && fe_builtin_tools[i]; i++)
        if (!strcmp(type, fe_builtin_tools[i]))
            return true;
    return false;
}

bool fe_features_web_search_tool(const char *type)
{
    return type && (!strcmp(type, "web_search") || !strcmp(type, "web_search_2025_08_26") ||
                    !strcmp(type, "web_search_preview") || !strcmp(type, "web_search_preview_2025_03_11"));
}

/* The deployment's default search backend, as the model record carries it
 * (fe_sql.c's model lookup); NULL when there is none (or it is disabled). */
static const json_t *fe_features_search_backend(const json_t *model)
{
    const json_t *b = json_object_get(json_object_get(model, "tools_config"), "web_search");
    return json_is_object(b) && json_is_string(json_object_get(b, "kind")) &&
                   json_is_string(json_object_get(b, "base_url"))
               ? b
               : NULL;
}

static bool fe_features_is_native(const json_t *v)
{
    const char *s = json_string_value(v);
    return s && !strcmp(s, "native");
}

enum fe_tool_runner fe_features_tool_runner(const json_t *model, const char *type)
{
    const json_t *caps = json_object_get(model, "capabilities");
    if (!fe_features_builtin_tool(type))
        return FE_TOOL_REFUSED;
    bool search = fe_features_web_search_tool(type);
    if (search || !strcmp(type, "mcp")) {
        const json_t *v = json_object_get(caps, search ? "web_search" : "mcp");
        if (json_is_false(v))
            return FE_TOOL_REFUSED;
        if (fe_features_is_native(v))
            return FE_TOOL_NATIVE;
        if (search && !fe_features_search_backend(model))
            return FE_TOOL_REFUSED; /* nowhere to search: as false (docs/tools.md) */
        return FE_TOOL_GATEWAY;
    }
    const json_t *v = json_object_get(caps, type);
    if (!strcmp(type, "code_interpreter") || !strcmp(type, "file_search") || !strcmp(type, "image_generation")) {
        /* The worker's loop runs these for every upstream kind (issue 16). */
        if (json_is_false(v))
            return FE_TOOL_REFUSED;
        return fe_features_is_native(v) ? FE_TOOL_NATIVE : FE_TOOL_GATEWAY;
    }
    return json_is_true(v) || fe_features_is_native(v) ? FE_TOOL_NATIVE : FE_TOOL_REFUSED;
}

json_t *fe_features_tools_config(const json_t *model, const json_t *tools)
{
    size_t i;
    const json_t *t;
    json_array_foreach (tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        if (fe_features_web_search_tool(type) && fe_features_tool_runner(model, type) == FE_TOOL_GATEWAY) {
            const json_t *b = fe_features_search_backend(model);
            const json_t *cred = json_object_get(b, "credential_ref");
            return json_pack("{s:{s:O, s:O, s:O}}", "web_search", "kind", json_object_get(b, "kind"), "base_url",
                             json_object_get(b, "base_url"), "credential_ref",
                             json_is_string(cred) ? (json_t *)cred : json_null());
        }
    }
    return NULL;
}

/* Absent or anything but false: allowed. */
static bool fe_features_allows(const json_t *caps, const char *name)
{
    return !json_is_false(json_object_get(caps, name));
}

static int fe_features_refuse(fe_error_t *err, const fe_request_t *r, const char *param, const char *what)
{
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", param,
                 "unsupported parameter: %s is not supported with the model '%.100s'.", what, r->parsed.model_id);
    return -1;
}

struct fe_features_parts {
    bool image, file, audio;
};

static bool fe_features_scan_part(json_t *part, void *arg)
{
    struct fe_features_parts *seen = arg;
    const char *type = json_string_value(json_object_get(part, "type"));
    if (!type)
        return true;
    if (!strcmp(type, "input_image"))
        seen->image = true;
    else if (!strcmp(type, "input_file"))
        seen->file = true;
    else if (!strcmp(type, "input_audio"))
        seen->audio = true;
    return true;
}

int fe_features_check(const fe_request_t *r, json_t *input, fe_error_t *err)
{
    const json_t *c = r->parsed.canonical;
    const json_t *caps = json_object_get(r->model, "capabilities");
    const char *param_tools = "tools";
    json_t *tools = json_object_get(c, "tools");
    bool function_tools = false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        function_tools |= type && !strcmp(type, "function");
    }
    /* A built-in tool the model cannot run: a 400, unless the client merely
     * offers it beside its own function tools without forcing it (Codex
     * offers web_search on every request). Then the model answers without
     * it, as it would if it chose not to search; see docs/compatibility.md. */
    const char *forced = json_string_value(json_object_get(json_object_get(c, "tool_choice"), "type"));
    for (i = 0; i < json_array_size(tools);) {
        t = json_array_get(tools, i);
        const char *type = json_string_value(json_object_get(t, "type"));
        if ((type && !strcmp(type, "function")) || fe_features_tool_runner(r->model, type) != FE_TOOL_REFUSED) {
            i++;
            continue;
        }
        if (!function_tools || (forced && type && !strcmp(forced, type))) {
            char what[96];
            snprintf(what, sizeof what, "the built-in tool '%.40s'", type ? type : "");
            return fe_features_refuse(err, r, param_tools, what);
        }
        json_array_remove(tools, i);
    }
    if (function_tools && !fe_features_allows(caps, "tools"))
        return fe_features_refuse(err, r, param_tools, "tool calling");

    const char *format =
        json_string_value(json_object_get(json_object_get(json_object_get(c, "text"), "format"), "type"));
    if (format && strcmp(format, "text") != 0 && !fe_features_allows(caps, "structured_output"))
        return fe_features_refuse(err, r, r->style->format_param, "structured output");

    json_t *effort = json_object_get(json_object_get(c, "reasoning"), "effort");
    const char *effort_param = r->style->effort_param;
    if (json_is_string(effort) && !fe_features_allows(caps, "reasoning"))
        return fe_features_refuse(err, r, effort_param, "reasoning");
    json_t *family = json_object_get(caps, "reasoning_family_version");
    const char *choice = json_string_value(json_object_get(c, "tool_choice"));
    if (function_tools && json_is_string(effort) && !strcmp(json_string_value(effort), "none") &&
        json_is_number(family) && json_number_value(family) >= 5.4 && !(choice && !strcmp(choice, "none")))
        return fe_features_refuse(err, r, effort_param,
                                  "tool calling with reasoning effort 'none' (this reasoning model needs effort "
                                  "'minimal' or higher to call tools)");

    struct fe_features_parts seen = {0};
    fe_items_foreach_part(input, fe_features_scan_part, &seen);
    const char *msg_param = r->style->parts_param;
    if (seen.image && !fe_features_allows(caps, "vision"))
        return fe_features_refuse(err, r, msg_param, "image input (vision)");
    if (seen.file && !fe_features_allows(caps, "files"))
        return fe_features_refuse(err, r, msg_param, "file input");
    if (seen.audio && !fe_features_allows(caps, "audio"))
        return fe_features_refuse(err, r, msg_param, "audio input");
    return 0;
}
