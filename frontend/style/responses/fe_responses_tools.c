/*
 * fe_responses_tools: checks of the gateway-run built-in tools of a
 * Responses request (fe_responses_tools.h). Each field is checked for the
 * type openai-python gives it and every unknown key is OpenAI's 400
 * unknown_parameter, so a misspelt option is refused rather than silently
 * dropped. The tool itself goes on unchanged: the worker reads it.
 */
#include "fe_responses_tools.h"

#include <stdio.h>
#include <string.h>

#include "fe_params.h"
#include "sb_event.h"

static const char *const fe_rt_web_search[] = {"web_search", "web_search_2025_08_26", NULL};
static const char *const fe_rt_web_search_preview[] = {"web_search_preview", "web_search_preview_2025_03_11", NULL};

static bool fe_rt_in(const char *s, const char *const *list)
{
    for (size_t i = 0; s && list[i]; i++)
        if (!strcmp(s, list[i]))
            return true;
    return false;
}

bool fe_responses_tool_checked(const char *type)
{
    return fe_rt_in(type, fe_rt_web_search) || fe_rt_in(type, fe_rt_web_search_preview) ||
           (type && (!strcmp(type, "mcp") || !strcmp(type, "code_interpreter") || !strcmp(type, "file_search") ||
                     !strcmp(type, "image_generation")));
}

static const char *fe_rt_expected(int types)
{
    if ((types & FE_P_ARRAY) && (types & FE_P_OBJECT))
        return "an array or an object";
    if ((types & FE_P_STRING) && (types & FE_P_OBJECT))
        return "a string or an object";
    if (types & FE_P_OBJECT)
        return "an object";
    if (types & FE_P_ARRAY)
        return "an array";
    if (types & FE_P_STRING)
        return "a string";
    return "a boolean";
}

/* obj[key] when present and of one of types (borrowed), else NULL; a value
 * of another type fills err ("<param>.<key>"). required: absence is an error
 * too (null counts as absent). */
static json_t *fe_rt_field(const json_t *obj, const char *param, const char *key, int types, bool required,
                           fe_error_t *err)
{
    char p[128];
    snprintf(p, sizeof p, "%s.%s", param, key);
    json_t *v = json_object_get(obj, key);
    if (required && (!v || json_is_null(v))) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", p,
                     "Missing required parameter: '%s'.", p);
        return NULL;
    }
    if (v && !fe_params_is(v, types)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", p,
                     "Invalid type for '%s': expected %s, but got %s instead.", p, fe_rt_expected(types),
                     fe_params_got(v));
        return NULL;
    }
    return v;
}

/* fe_rt_field for an optional field, as 0 or -1. */
static int fe_rt_typed(const json_t *obj, const char *param, const char *key, int types, fe_error_t *err)
{
    fe_rt_field(obj, param, key, types, false, err);
    return err->status ? -1 : 0;
}

/* A string field whose value must be one of values (or absent/null). */
static int fe_rt_enum(const json_t *obj, const char *param, const char *key, const char *const *values,
                      const char *listed, fe_error_t *err)
{
    json_t *v = fe_rt_field(obj, param, key, FE_P_STRING | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    if (json_is_string(v) && !fe_rt_in(json_string_value(v), values)) {
        char p[128];
        snprintf(p, sizeof p, "%s.%s", param, key);
        fe_params_invalid(err, p, "Invalid value for '%s': expected one of %s.", p, listed);
        return -1;
    }
    return 0;
}

/* An optional array of strings (null allowed); each element one of values
 * when values is given. */
static int fe_rt_strings(const json_t *obj, const char *param, const char *key, const char *const *values,
                         fe_error_t *err)
{
    json_t *a = fe_rt_field(obj, param, key, FE_P_ARRAY | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    size_t i;
    json_t *v;
    json_array_foreach (a, i, v) {
        if (!json_is_string(v) || (values && !fe_rt_in(json_string_value(v), values))) {
            char p[128];
            snprintf(p, sizeof p, "%s.%s[%zu]", param, key, i);
            if (json_is_string(v))
                fe_params_invalid(err, p, "Invalid value for '%s': '%.40s' is not one of the accepted values.", p,
                                  json_string_value(v));
            else
                fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", p,
                             "Invalid type for '%s': expected a string, but got %s instead.", p, fe_params_got(v));
            return -1;
        }
    }
    return 0;
}

static int fe_rt_unsupported(fe_error_t *err, const char *param, const char *key, const char *why)
{
    char p[320]; /* param may itself be a 128-byte path ("tools[3].container") */
    snprintf(p, sizeof p, "%s.%s", param, key);
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "unsupported_parameter", p, "unsupported parameter: '%s': %s", p,
                 why);
    return -1;
}

/* user_location {type:"approximate", city, country, region, timezone}; the
 * preview tool requires its type, the current one does not. */
static int fe_rt_location(const json_t *tool, const char *param, bool type_required, fe_error_t *err)
{
    static const char *const keys[] = {"type", "city", "country", "region", "timezone", NULL};
    static const char *const approximate[] = {"approximate", NULL};
    json_t *loc = fe_rt_field(tool, param, "user_location", FE_P_OBJECT | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    if (!json_is_object(loc))
        return 0;
    char p[96];
    snprintf(p, sizeof p, "%s.user_location", param);
    if (fe_params_only_nested(loc, p, keys, err) < 0 ||
        fe_rt_enum(loc, p, "type", approximate, "'approximate'", err) < 0)
        return -1;
    if (type_required && !fe_rt_field(loc, p, "type", FE_P_STRING, true, err))
        return -1;
    for (size_t i = 1; keys[i]; i++)
        if (fe_rt_typed(loc, p, keys[i], FE_P_STRING | FE_P_NULL, err) < 0)
            return -1;
    return 0;
}

static int fe_rt_web_search_check(const json_t *tool, const char *param, bool preview, fe_error_t *err)
{
    static const char *const keys[] = {"type", "external_web_access", "filters", "search_context_size", "user_location",
                                       NULL};
    static const char *const preview_keys[] = {"type", "search_content_types", "search_context_size", "user_location",
                                               NULL};
    static const char *const sizes[] = {"low", "medium", "high", NULL};
    static const char *const content_types[] = {"text", "image", NULL};
    if (fe_params_only_nested(tool, param, preview ? preview_keys : keys, err) < 0 ||
        fe_rt_enum(tool, param, "search_context_size", sizes, "'low', 'medium', 'high'", err) < 0 ||
        fe_rt_location(tool, param, preview, err) < 0)
        return -1;
    if (preview)
        return fe_rt_strings(tool, param, "search_content_types", content_types, err);
    if (fe_rt_typed(tool, param, "external_web_access", FE_P_BOOL, err) < 0)
        return -1;
    json_t *filters = fe_rt_field(tool, param, "filters", FE_P_OBJECT | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    if (!json_is_object(filters))
        return 0;
    static const char *const filter_keys[] = {"allowed_domains", NULL};
    char p[96];
    snprintf(p, sizeof p, "%s.filters", param);
    if (fe_params_only_nested(filters, p, filter_keys, err) < 0)
        return -1;
    return fe_rt_strings(filters, p, "allowed_domains", NULL, err);
}

/* {tool_names: [string], read_only: bool}, the filter of allowed_tools and
 * of require_approval's always/never. */
static int fe_rt_filter(const json_t *f, const char *p, fe_error_t *err)
{
    static const char *const keys[] = {"tool_names", "read_only", NULL};
    if (fe_params_only_nested(f, p, keys, err) < 0 || fe_rt_strings(f, p, "tool_names", NULL, err) < 0)
        return -1;
    return fe_rt_typed(f, p, "read_only", FE_P_BOOL | FE_P_NULL, err);
}

static int fe_rt_mcp_approval(const json_t *tool, const char *param, fe_error_t *err)
{
    json_t *ra = fe_rt_field(tool, param, "require_approval", FE_P_STRING | FE_P_OBJECT | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    char p[96];
    snprintf(p, sizeof p, "%s.require_approval", param);
    if (json_is_string(ra)) {
        static const char *const modes[] = {"always", "never", NULL};
        if (!fe_rt_in(json_string_value(ra), modes)) {
            fe_params_invalid(err, p, "Invalid value for '%s': expected 'always', 'never' or a filter object.", p);
            return -1;
        }
        return 0;
    }
    if (!json_is_object(ra))
        return 0;
    static const char *const keys[] = {"always", "never", NULL};
    if (fe_params_only_nested(ra, p, keys, err) < 0)
        return -1;
    for (size_t i = 0; keys[i]; i++) {
        json_t *f = fe_rt_field(ra, p, keys[i], FE_P_OBJECT | FE_P_NULL, false, err);
        if (err->status)
            return -1;
        char fp[128];
        snprintf(fp, sizeof fp, "%s.%s", p, keys[i]);
        if (json_is_object(f) && fe_rt_filter(f, fp, err) < 0)
            return -1;
    }
    return 0;
}

/* An MCP server reachable over HTTP: the worker's SSRF guard decides later
 * whether this one may be reached; here only the scheme is checked. */
static bool fe_rt_url_ok(const char *url)
{
    return (!strncmp(url, "https://", 8) && url[8]) || (!strncmp(url, "http://", 7) && url[7]);
}

static int fe_rt_mcp_check(const json_t *tool, const char *param, fe_error_t *err)
{
    static const char *const keys[] = {
        "type",    "server_label",  "server_url",       "connector_id",       "tunnel_id",     "allowed_tools",
        "headers", "authorization", "require_approval", "server_description", "defer_loading", "allowed_callers",
        NULL};
    static const char *const callers[] = {"direct", "programmatic", NULL};
    if (fe_params_only_nested(tool, param, keys, err) < 0)
        return -1;
    json_t *label = fe_rt_field(tool, param, "server_label", FE_P_STRING, true, err);
    if (!label)
        return -1;
    char p[128];
    if (json_string_length(label) == 0) {
        snprintf(p, sizeof p, "%s.server_label", param);
        fe_params_invalid(err, p, "Invalid value for '%s': expected a non-empty string.", p);
        return -1;
    }
    /* A connector or a tunnel is OpenAI's own hosting: ignoring it would
     * answer without the tools the client asked for. */
    json_t *connector = json_object_get(tool, "connector_id");
    if (connector && !json_is_null(connector))
        return fe_rt_unsupported(err, param, "connector_id",
                                 "OpenAI-hosted connectors are not available on this gateway; give the MCP "
                                 "server's server_url instead.");
    json_t *tunnel = json_object_get(tool, "tunnel_id");
    if (tunnel && !json_is_null(tunnel))
        return fe_rt_unsupported(err, param, "tunnel_id",
                                 "MCP tunnels are not available on this gateway; give the MCP server's server_url "
                                 "instead.");
    json_t *url = fe_rt_field(tool, param, "server_url", FE_P_STRING, true, err);
    if (!url)
        return -1;
    if (!fe_rt_url_ok(json_string_value(url))) {
        snprintf(p, sizeof p, "%s.server_url", param);
        fe_params_invalid(err, p, "Invalid value for '%s': expected an http:// or https:// URL.", p);
        return -1;
    }
    json_t *defer = fe_rt_field(tool, param, "defer_loading", FE_P_BOOL, false, err);
    if (err->status)
        return -1;
    if (json_is_true(defer))
        return fe_rt_unsupported(err, param, "defer_loading", "tool search is not available on this gateway.");
    json_t *allowed = fe_rt_field(tool, param, "allowed_tools", FE_P_ARRAY | FE_P_OBJECT | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    snprintf(p, sizeof p, "%s.allowed_tools", param);
    if (json_is_array(allowed) && fe_rt_strings(tool, param, "allowed_tools", NULL, err) < 0)
        return -1;
    if (json_is_object(allowed) && fe_rt_filter(allowed, p, err) < 0)
        return -1;
    json_t *headers = fe_rt_field(tool, param, "headers", FE_P_OBJECT | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach (headers, k, v) {
        if (!json_is_string(v)) {
            snprintf(p, sizeof p, "%s.headers.%.40s", param, k);
            fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", p,
                         "Invalid type for '%s': expected a string, but got %s instead.", p, fe_params_got(v));
            return -1;
        }
    }
    if (fe_rt_typed(tool, param, "authorization", FE_P_STRING, err) < 0 ||
        fe_rt_typed(tool, param, "server_description", FE_P_STRING, err) < 0 ||
        fe_rt_strings(tool, param, "allowed_callers", callers, err) < 0)
        return -1;
    return fe_rt_mcp_approval(tool, param, err);
}

/* An optional integer in [min, max]. */
static int fe_rt_int(const json_t *obj, const char *param, const char *key, long long min, long long max,
                     fe_error_t *err)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v))
        return 0;
    char p[128];
    snprintf(p, sizeof p, "%s.%s", param, key);
    if (!json_is_integer(v)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_type", p,
                     "Invalid type for '%s': expected an integer, but got %s instead.", p, fe_params_got(v));
        return -1;
    }
    if (json_integer_value(v) < min || json_integer_value(v) > max) {
        fe_params_invalid(err, p, "Invalid '%s': expected a value from %lld to %lld.", p, min, max);
        return -1;
    }
    return 0;
}

/* code_interpreter: container is an id, or {type:"auto", file_ids,
 * memory_limit, network_policy}. The sandbox has no network: an allowlist
 * would change what the code can do, so it is refused, not ignored. */
static int fe_rt_code_check(const json_t *tool, const char *param, fe_error_t *err)
{
    static const char *const mem[] = {"1g", "4g", "16g", "64g", NULL};
    static const char *const auto_type[] = {"auto", NULL};
    json_t *c = fe_rt_field(tool, param, "container", FE_P_STRING | FE_P_OBJECT, true, err);
    if (!c)
        return -1;
    if (json_is_string(c))
        return 0;
    char p[128];
    snprintf(p, sizeof p, "%s.container", param);
    if (!fe_rt_field(c, p, "type", FE_P_STRING, true, err) || fe_rt_enum(c, p, "type", auto_type, "'auto'", err) < 0 ||
        fe_rt_strings(c, p, "file_ids", NULL, err) < 0 ||
        fe_rt_enum(c, p, "memory_limit", mem, "'1g', '4g', '16g' or '64g'", err) < 0 ||
        fe_rt_typed(c, p, "network_policy", FE_P_OBJECT | FE_P_NULL, err) < 0)
        return -1;
    if (json_array_size(json_object_get(c, "file_ids")) > 50) {
        fe_params_invalid(err, p, "Invalid '%s.file_ids': at most 50 files.", p);
        return -1;
    }
    const char *np = json_string_value(json_object_get(json_object_get(c, "network_policy"), "type"));
    if (np && strcmp(np, "disabled") != 0)
        return fe_rt_unsupported(err, p, "network_policy", "the code interpreter's sandbox has no network access.");
    return 0;
}

static int fe_rt_file_search_check(const json_t *tool, const char *param, fe_error_t *err)
{
    static const char *const rankers[] = {"auto", "default-2024-11-15", "none", NULL};
    json_t *ids = fe_rt_field(tool, param, "vector_store_ids", FE_P_ARRAY, true, err);
    if (!ids || fe_rt_strings(tool, param, "vector_store_ids", NULL, err) < 0 ||
        fe_rt_int(tool, param, "max_num_results", 1, 50, err) < 0 ||
        fe_rt_typed(tool, param, "filters", FE_P_OBJECT | FE_P_NULL, err) < 0)
        return -1;
    if (json_array_size(ids) > 16) {
        fe_params_invalid(err, param, "Invalid '%s.vector_store_ids': at most 16 vector stores.", param);
        return -1;
    }
    json_t *ro = fe_rt_field(tool, param, "ranking_options", FE_P_OBJECT | FE_P_NULL, false, err);
    if (err->status)
        return -1;
    char p[128];
    snprintf(p, sizeof p, "%s.ranking_options", param);
    if (json_is_object(ro) &&
        (fe_rt_enum(ro, p, "ranker", rankers, "'auto', 'default-2024-11-15' or 'none'", err) < 0 ||
         fe_rt_typed(ro, p, "hybrid_search", FE_P_OBJECT | FE_P_NULL, err) < 0))
        return -1;
    json_t *th = json_object_get(ro, "score_threshold");
    if (th && !json_is_null(th) && (!json_is_number(th) || json_number_value(th) < 0 || json_number_value(th) > 1)) {
        fe_params_invalid(err, p, "Invalid '%s.score_threshold': expected a number from 0 to 1.", p);
        return -1;
    }
    return 0;
}

static int fe_rt_image_check(const json_t *tool, const char *param, fe_error_t *err)
{
    static const char *const bg[] = {"transparent", "opaque", "auto", NULL};
    static const char *const quality[] = {"low", "medium", "high", "auto", NULL};
    static const char *const format[] = {"png", "webp", "jpeg", NULL};
    static const char *const moderation[] = {"auto", "low", NULL};
    static const char *const action[] = {"generate", "edit", "auto", NULL};
    static const char *const fidelity[] = {"high", "low", NULL};
    if (fe_rt_enum(tool, param, "background", bg, "'transparent', 'opaque' or 'auto'", err) < 0 ||
        fe_rt_enum(tool, param, "quality", quality, "'low', 'medium', 'high' or 'auto'", err) < 0 ||
        fe_rt_enum(tool, param, "output_format", format, "'png', 'webp' or 'jpeg'", err) < 0 ||
        fe_rt_enum(tool, param, "moderation", moderation, "'auto' or 'low'", err) < 0 ||
        fe_rt_enum(tool, param, "action", action, "'generate', 'edit' or 'auto'", err) < 0 ||
        fe_rt_enum(tool, param, "input_fidelity", fidelity, "'high' or 'low'", err) < 0 ||
        fe_rt_int(tool, param, "partial_images", 0, 3, err) < 0 ||
        fe_rt_int(tool, param, "output_compression", 0, 100, err) < 0 ||
        fe_rt_typed(tool, param, "size", FE_P_STRING, err) < 0 ||
        fe_rt_typed(tool, param, "model", FE_P_STRING, err) < 0 ||
        fe_rt_typed(tool, param, "input_image_mask", FE_P_OBJECT | FE_P_NULL, err) < 0)
        return -1;
    return 0;
}

json_t *fe_responses_tool_check(const json_t *tool, const char *param, fe_error_t *err)
{
    const char *type = json_string_value(json_object_get(tool, "type"));
    int rc;
    if (fe_rt_in(type, fe_rt_web_search))
        rc = fe_rt_web_search_check(tool, param, false, err);
    else if (fe_rt_in(type, fe_rt_web_search_preview))
        rc = fe_rt_web_search_check(tool, param, true, err);
    else if (type && !strcmp(type, "mcp"))
        rc = fe_rt_mcp_check(tool, param, err);
    else if (type && !strcmp(type, "code_interpreter"))
        rc = fe_rt_code_check(tool, param, err);
    else if (type && !strcmp(type, "file_search"))
        rc = fe_rt_file_search_check(tool, param, err);
    else if (type && !strcmp(type, "image_generation"))
        rc = fe_rt_image_check(tool, param, err);
    else {
        fe_params_invalid(err, param, "Invalid value for '%s.type': '%.40s' is not a supported tool type.", param,
                          type ? type : "(none)");
        rc = -1;
    }
    return rc < 0 ? NULL : json_deep_copy(tool);
}

int fe_responses_tool_name_check(const char *name, const char *param, fe_error_t *err)
{
    if (!name || strncmp(name, FE_RESPONSES_RESERVED_PREFIX, strlen(FE_RESPONSES_RESERVED_PREFIX)) != 0)
        return 0;
    char p[96];
    snprintf(p, sizeof p, "%s.name", param);
    fe_params_invalid(err, p,
                      "Invalid value for '%s': function names starting with '" FE_RESPONSES_RESERVED_PREFIX
                      "' are reserved by this gateway.",
                      p);
    return -1;
}

static bool fe_is_mcp(const json_t *t)
{
    const char *type = json_string_value(json_object_get(t, "type"));
    return type && !strcmp(type, "mcp");
}

int fe_responses_tools_check_labels(const json_t *tools, fe_error_t *err)
{
    size_t i, j;
    json_t *t, *u;
    json_array_foreach (tools, i, t) {
        const char *label = json_string_value(json_object_get(t, "server_label"));
        if (!label || !fe_is_mcp(t))
            continue;
        for (j = 0; j < i; j++) {
            u = json_array_get(tools, j);
            const char *other = json_string_value(json_object_get(u, "server_label"));
            if (other && fe_is_mcp(u) && !strcmp(label, other)) {
                char p[64];
                snprintf(p, sizeof p, "tools[%zu].server_label", i);
                fe_params_invalid(err, p, "Invalid value for '%s': server_label '%.64s' is used by tools[%zu] too.", p,
                                  label, j);
                return -1;
            }
        }
    }
    return 0;
}

json_t *fe_responses_tools_public(const json_t *tools)
{
    json_t *out = json_array();
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        if (json_is_object(t) && (json_object_get(t, "headers") || json_object_get(t, "authorization"))) {
            json_t *copy = json_copy((json_t *)t); /* shallow: only top-level keys go */
            json_object_del(copy, "headers");
            json_object_del(copy, "authorization");
            json_array_append_new(out, copy);
        } else {
            json_array_append(out, t);
        }
    }
    return out;
}
