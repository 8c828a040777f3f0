/*
 * emu_openai_check: the checks the Chat Completions and Responses validators
 * share, worded as OpenAI words them (see emu_openai_check.h). Each protocol's
 * own rules stay in its *_check.c file.
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "emu_internal.h"
#include "emu_openai_check.h"

const char *sb_emu_openai_type_phrase(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT:
        return "an object";
    case JSON_ARRAY:
        return "an array";
    case JSON_STRING:
        return "a string";
    case JSON_INTEGER:
        return "an integer";
    case JSON_REAL:
        return "a decimal";
    case JSON_TRUE:
    case JSON_FALSE:
        return "a boolean";
    case JSON_NULL:
        return "null";
    }
    return "an unknown type";
}

static bool wrong_type(struct sb_emu_call *call, const json_t *v, const char *param, enum sb_emu_want w)
{
    static const char *names[] = {"a string", "a boolean", "an integer", "a number", "an object", "an array"};
    return sb_emu_openai_invalid(call, param, "invalid_type", "Invalid type for '%s': expected %s, but got %s instead.",
                                 param, names[w], sb_emu_openai_type_phrase(v));
}

bool sb_emu_openai_missing(struct sb_emu_call *call, const char *param)
{
    return sb_emu_openai_invalid(call, param, "missing_required_parameter", "Missing required parameter: '%s'.", param);
}

const struct sb_emu_words sb_emu_openai_words = {.missing = sb_emu_openai_missing, .wrong_type = wrong_type};

bool sb_emu_openai_check_type(struct sb_emu_call *call, const json_t *v, const char *param, enum sb_emu_want w)
{
    return sb_emu_check_type(call, &sb_emu_openai_words, v, param, w);
}

bool sb_emu_openai_check_range(struct sb_emu_call *call, const char *name, enum sb_emu_want w, double min, double max)
{
    json_t *v = json_object_get(call->json, name);
    if (!v || json_is_null(v))
        return true;
    if (!sb_emu_openai_check_type(call, v, name, w))
        return false;
    double d = json_number_value(v);
    const char *kind = w == SB_EMU_W_INT ? "integer" : "decimal";
    if (d < min)
        return sb_emu_openai_invalid(
            call, name, w == SB_EMU_W_INT ? "integer_below_min_value" : "decimal_below_min_value",
            "Invalid '%s': %s below minimum value. Expected a value >= %g, but got %g instead.", name, kind, min, d);
    if (d > max)
        return sb_emu_openai_invalid(
            call, name, w == SB_EMU_W_INT ? "integer_above_max_value" : "decimal_above_max_value",
            "Invalid '%s': %s above maximum value. Expected a value <= %g, but got %g instead.", name, kind, max, d);
    return true;
}

bool sb_emu_openai_check_enum(struct sb_emu_call *call, const json_t *v, const char *param, const char *const *values,
                              const char *phrase)
{
    if (!v || json_is_null(v))
        return true;
    if (!sb_emu_openai_check_type(call, v, param, SB_EMU_W_STRING))
        return false;
    if (sb_emu_in_list(json_string_value(v), values))
        return true;
    return sb_emu_openai_invalid(call, param, "invalid_value", "Invalid value: '%.64s'. Supported values are: %s.",
                                 json_string_value(v), phrase);
}

bool sb_emu_openai_valid_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64)
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_' ||
              *s == '-'))
            return false;
    return true;
}

bool sb_emu_openai_check_image_url(struct sb_emu_call *call, const char *url, const char *param)
{
    char buf[160];
    const char *why = sb_emu_image_url_problem(url, buf, sizeof buf);
    if (!why)
        return true;
    return sb_emu_openai_invalid(call, param, "invalid_value",
                                 "Invalid image URL: '%s'. Expected a base64-encoded data URL with an image MIME type "
                                 "(e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), but got %s.",
                                 param, why);
}

bool sb_emu_openai_check_file_data(struct sb_emu_call *call, const char *data, const char *param)
{
    struct sb_emu_data_url du;
    const char *why = NULL;
    if (sb_emu_data_url_parse(data, &du) < 0)
        why = "a value without the 'data:' prefix";
    else if (!strchr(du.mime, '/'))
        why = "a value without a MIME type";
    else if (!du.base64)
        why = "a value that is not base64-encoded";
    else
        why = sb_emu_base64_problem(du.data, du.data_len);
    if (!why)
        return true;
    return sb_emu_openai_invalid(call, param, "invalid_value",
                                 "Invalid file data: '%s'. Expected a base64-encoded data URL with a MIME type (e.g. "
                                 "'data:application/pdf;base64,SGVsbG8sIFdvcmxkIQ=='), but got %s.",
                                 param, why);
}

bool sb_emu_openai_check_metadata(struct sb_emu_call *call, const json_t *md,
                                  bool (*key_too_long)(struct sb_emu_call *call, const char *key))
{
    if (json_object_size(md) > 16)
        return sb_emu_openai_invalid(
            call, "metadata", "object_above_max_properties",
            "Invalid 'metadata': too many properties. Expected an object with at most 16 properties, but "
            "got an object with %zu properties instead.",
            json_object_size(md));
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)md, k, v) {
        if (strlen(k) > 64)
            return key_too_long(call, k);
        char param[SB_EMU_PATH_MAX];
        sb_emu_pathf(param, sizeof param, "metadata.%.64s", k);
        if (!sb_emu_openai_check_type(call, v, param, SB_EMU_W_STRING))
            return false;
        if (json_string_length(v) > 512)
            return sb_emu_openai_invalid(
                call, param, "string_above_max_length",
                "Invalid '%s': string too long. Expected a string with maximum length 512, but got a "
                "string with length %zu instead.",
                param, json_string_length(v));
    }
    return true;
}

bool sb_emu_openai_mention_json(const json_t *list)
{
    size_t i;
    json_t *item;
    json_array_foreach (list, i, item) {
        json_t *content = json_object_get(item, "content");
        if (json_is_string(content) && strcasestr(json_string_value(content), "json"))
            return true;
        size_t k;
        json_t *part;
        json_array_foreach (content, k, part) {
            const char *text = json_string_value(json_object_get(part, "text"));
            if (text && strcasestr(text, "json"))
                return true;
        }
    }
    return false;
}

bool sb_emu_openai_check_body(struct sb_emu_call *call)
{
    const char *ct = sb_emu_call_header(call, "Content-Type");
    if (!ct || strncasecmp(ct, "application/json", 16) != 0 || (ct[16] && ct[16] != ';' && ct[16] != ' '))
        return sb_emu_openai_invalid(call, NULL, NULL,
                                     "Invalid Content-Type header (%.64s), expected application/json. (HINT: The "
                                     "OpenAI API expects a JSON payload.)",
                                     ct ? ct : "none");
    if (!call->json)
        return sb_emu_openai_invalid(call, NULL, NULL,
                                     "We could not parse the JSON body of your request. (HINT: This likely means you "
                                     "aren't using your HTTP library correctly. The OpenAI API expects a JSON "
                                     "payload, but what was sent was not valid JSON.)");
    if (!json_is_object(call->json))
        return sb_emu_openai_invalid(call, NULL, "invalid_type",
                                     "Invalid type for body: expected an object, but got %s instead.",
                                     sb_emu_openai_type_phrase(call->json));
    return true;
}
