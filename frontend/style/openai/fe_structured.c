/* fe_structured: schema-bearing request parts (see fe_structured.h). */
#include "fe_structured.h"

#include <string.h>

#include "fe_features.h"
#include "fe_params.h"
#include "sb_event.h"
#include "sb_jschema.h"

/* ^[a-zA-Z0-9_-]{1,64}$, the names OpenAI accepts for schemas and functions. */
static bool fe_structured_name_ok(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > 64)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-'))
            return false;
    }
    return true;
}

/* The schema compiles, and follows strict mode when strict. */
static int fe_structured_schema(const json_t *schema, bool strict, const char *what, const char *name,
                                const char *param, fe_error_t *err)
{
    char msg[512];
    sb_jschema_t *compiled = sb_jschema_new(schema, msg, sizeof msg);
    if (!compiled) {
        fe_params_invalid(err, param, "Invalid schema for %s '%.64s': %s", what, name, msg);
        return -1;
    }
    sb_jschema_destroy(&compiled);
    if (strict && sb_jschema_check_strict(schema, msg, sizeof msg) != 0) {
        /* The checker's text starts "Invalid schema: " as OpenAI's does; say it once. */
        const char *why = strncmp(msg, "Invalid schema: ", 16) == 0 ? msg + 16 : msg;
        fe_params_invalid(err, param, "Invalid schema for %s '%.64s': %s", what, name, why);
        return -1;
    }
    return 0;
}

json_t *fe_structured_format(const json_t *fmt, const char *param, fe_error_t *err)
{
    char p[96];
    const char *type = json_string_value(json_object_get(fmt, "type"));
    if (!json_is_object(fmt) || !type) {
        snprintf(p, sizeof p, "%s.type", param);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", p,
                     "Missing required parameter: '%s'.", p);
        return NULL;
    }
    if (!strcmp(type, "text") || !strcmp(type, "json_object"))
        return json_pack("{s:s}", "type", type);
    if (strcmp(type, "json_schema") != 0) {
        snprintf(p, sizeof p, "%s.type", param);
        fe_params_invalid(err, p,
                          "Invalid value: '%.40s'. Supported values are: 'text', 'json_object' and "
                          "'json_schema'.",
                          type);
        return NULL;
    }
    const char *name = json_string_value(json_object_get(fmt, "name"));
    json_t *schema = json_object_get(fmt, "schema");
    json_t *strict = json_object_get(fmt, "strict");
    json_t *desc = json_object_get(fmt, "description");
    if (!name) {
        snprintf(p, sizeof p, "%s.name", param);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", p,
                     "Missing required parameter: '%s'.", p);
        return NULL;
    }
    if (!fe_structured_name_ok(name)) {
        snprintf(p, sizeof p, "%s.name", param);
        fe_params_invalid(err, p,
                          "Invalid '%s': string does not match pattern. Expected a string that matches the "
                          "pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters.",
                          p);
        return NULL;
    }
    snprintf(p, sizeof p, "%s.schema", param);
    if (!json_is_object(schema)) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", p,
                     "Missing required parameter: '%s' (a JSON Schema object).", p);
        return NULL;
    }
    if (strict && !json_is_boolean(strict) && !json_is_null(strict)) {
        fe_params_invalid(err, param, "Invalid type for '%s.strict': expected a boolean.", param);
        return NULL;
    }
    if (fe_structured_schema(schema, json_is_true(strict), "response_format", name, p, err) < 0)
        return NULL;
    json_t *out = json_pack("{s:s, s:s, s:O, s:b}", "type", "json_schema", "name", name, "schema", schema, "strict",
                            json_is_true(strict));
    if (json_is_string(desc))
        json_object_set(out, "description", desc);
    return out;
}

/* FE_STRICT_AUTO: the schema made strict the way OpenAI does it, or NULL if
 * closing its objects is not enough (the tool then stays non-strict). */
static json_t *fe_structured_auto_strict(const json_t *schema)
{
    char msg[512];
    json_t *closed = sb_jschema_close_objects(schema);
    if (closed && sb_jschema_check_strict(closed, msg, sizeof msg) == 0)
        return closed;
    json_decref(closed);
    return NULL;
}

json_t *fe_structured_function(const json_t *fn, fe_strict_default_t strict_default, const char *param, fe_error_t *err)
{
    char p[96];
    const char *name = json_string_value(json_object_get(fn, "name"));
    if (!name) {
        snprintf(p, sizeof p, "%s.name", param);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", p,
                     "Missing required parameter: '%s'.", p);
        return NULL;
    }
    if (!fe_structured_name_ok(name)) {
        snprintf(p, sizeof p, "%s.name", param);
        fe_params_invalid(err, p,
                          "Invalid '%s': string does not match pattern. Expected a string that matches the "
                          "pattern '^[a-zA-Z0-9_-]+$' of at most 64 characters.",
                          p);
        return NULL;
    }
    json_t *params = json_object_get(fn, "parameters");
    json_t *strict = json_object_get(fn, "strict");
    json_t *desc = json_object_get(fn, "description");
    snprintf(p, sizeof p, "%s.parameters", param);
    if (params && !json_is_null(params) && !json_is_object(params)) {
        fe_params_invalid(err, p, "Invalid type for '%s': expected a JSON Schema object.", p);
        return NULL;
    }
    if (strict && !json_is_boolean(strict) && !json_is_null(strict)) {
        fe_params_invalid(err, param, "Invalid type for '%s.strict': expected a boolean.", param);
        return NULL;
    }
    bool is_strict = json_is_true(strict);
    json_t *schema = json_is_object(params) ? json_incref(params)
                                            : json_pack("{s:s, s:{}, s:[], s:b}", "type", "object", "properties",
                                                        "required", "additionalProperties", 0);
    json_t *closed =
        !json_is_boolean(strict) && strict_default == FE_STRICT_AUTO ? fe_structured_auto_strict(schema) : NULL;
    if (closed) {
        json_decref(schema);
        schema = closed;
        is_strict = true;
    }
    if (fe_structured_schema(schema, is_strict, "function", name, p, err) < 0) {
        json_decref(schema);
        return NULL;
    }
    json_t *out =
        json_pack("{s:s, s:s, s:o, s:b}", "type", "function", "name", name, "parameters", schema, "strict", is_strict);
    if (json_is_string(desc))
        json_object_set(out, "description", desc);
    return out;
}

int fe_structured_tool_choice(const json_t *choice, const json_t *tools, json_t *c, fe_error_t *err)
{
    if (!choice || json_is_null(choice))
        return 0;
    if (json_is_string(choice)) {
        const char *s = json_string_value(choice);
        if (strcmp(s, "none") != 0 && strcmp(s, "auto") != 0 && strcmp(s, "required") != 0) {
            fe_params_invalid(err, "tool_choice",
                              "Invalid value for 'tool_choice': expected 'none', 'auto', "
                              "'required' or an object.");
            return -1;
        }
        json_object_set(c, "tool_choice", (json_t *)choice);
        return 0;
    }
    const char *type = json_string_value(json_object_get(choice, "type"));
    if (type && strcmp(type, "function") != 0 && fe_features_builtin_tool(type)) {
        json_object_set_new(c, "tool_choice", json_deep_copy(choice));
        return 0;
    }
    json_t *name = json_object_get(json_object_get(choice, "function"), "name");
    if (!name)
        name = json_object_get(choice, "name");
    bool found = false;
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t)
        found |= json_is_string(name) && json_equal(json_object_get(t, "name"), name);
    if (!found) {
        fe_params_invalid(err, "tool_choice", "Tool choice '%.64s' not found in 'tools' parameter.",
                          json_is_string(name) ? json_string_value(name) : "(no name)");
        return -1;
    }
    json_object_set_new(c, "tool_choice", json_pack("{s:s, s:O}", "type", "function", "name", name));
    return 0;
}
