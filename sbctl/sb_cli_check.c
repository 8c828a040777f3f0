/*
 * sb_cli_check: the value checks of sbctl's grammar: names, ids, numbers,
 * URLs, JSON. sb_cli.c runs them on every argument and option before anything
 * touches the database; a command that reads a value itself (prompt's
 * --body-file) runs the same check, so they sit below both the grammar and
 * the commands.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_cli.h"

int sb_cli_fail(char *err, size_t errsz, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
    return -EINVAL;
}

int sb_cli_parse_int(const char *s, long long min, long long max, long long *out)
{
    if (!s || !*s)
        return -EINVAL;
    /* strtoll accepts leading whitespace and '+'; a count on a command line should not. */
    if (!(*s == '-' || (*s >= '0' && *s <= '9')))
        return -EINVAL;
    errno = 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 10);
    if (end == s || *end != '\0')
        return -EINVAL;
    if (errno == ERANGE || v < min || v > max)
        return -ERANGE;
    *out = v;
    return 0;
}

static bool sb_cli_is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool sb_cli_valid_ident(const char *s, size_t max, const char *extra)
{
    size_t n = strlen(s);
    if (n == 0 || n > max || !sb_cli_is_alnum(s[0]))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!sb_cli_is_alnum(s[i]) && !strchr(extra, s[i]))
            return false;
    return true;
}

bool sb_cli_valid_name(const char *s)
{
    return sb_cli_valid_ident(s, SB_CLI_NAME_MAX, "._@:+-");
}

bool sb_cli_valid_model_id(const char *s)
{
    return sb_cli_valid_ident(s, SB_CLI_MODEL_MAX, "._@:+-/");
}

bool sb_cli_valid_upstream_model(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > SB_CLI_MODEL_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] >= 0x7f)
            return false;
    return true;
}

bool sb_cli_valid_label(const char *s)
{
    size_t n = strlen(s);
    if (n > SB_CLI_LABEL_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return false;
    return true;
}

bool sb_cli_valid_env_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128 || (s[0] >= '0' && s[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!sb_cli_is_alnum(s[i]) && s[i] != '_')
            return false;
    return true;
}

bool sb_cli_valid_url(const char *s)
{
    size_t n = strlen(s);
    size_t scheme;
    if (!strncmp(s, "http://", 7))
        scheme = 7;
    else if (!strncmp(s, "https://", 8))
        scheme = 8;
    else
        return false;
    if (n > SB_CLI_URL_MAX || n == scheme || s[scheme] == '/')
        return false;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return false;
    return true;
}

bool sb_cli_valid_provider(const char *s)
{
    static const char *const kinds[] = {"openai-chat", "openai-responses", "anthropic", "gemini"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(s, kinds[i]))
            return true;
    return false;
}

bool sb_cli_valid_json_object(const char *s)
{
    json_error_t jerr;
    json_t *v = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
    bool ok = v && json_is_object(v);
    json_decref(v);
    return ok;
}

bool sb_cli_valid_search_kind(const char *s)
{
    static const char *const kinds[] = {"searxng", "brave", "tavily"};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(s, kinds[i]))
            return true;
    return false;
}

int sb_cli_check_capabilities(const char *json, char *err, size_t errsz)
{
    /* The frontend reads anything but false and "native" as "the gateway
     * runs it" (web_search, mcp) or as "not offered" (the others), so a typo
     * such as "Native" would silently change who runs the tool. */
    static const char *const tools[] = {"web_search",       "mcp",          "file_search",          "code_interpreter",
                                        "image_generation", "computer_use", "computer_use_preview", "local_shell"};
    json_t *caps = json_loads(json, JSON_REJECT_DUPLICATES, NULL);
    int rc = 0;
    for (size_t i = 0; caps && i < sizeof tools / sizeof tools[0] && rc == 0; i++) {
        json_t *v = json_object_get(caps, tools[i]);
        const char *s = json_string_value(v);
        if (v && !json_is_boolean(v) && !(s && !strcmp(s, "native")))
            rc = sb_cli_fail(err, errsz, "--capabilities: \"%s\" must be true, false or \"native\"", tools[i]);
    }
    json_decref(caps);
    return rc;
}

bool sb_cli_valid_prompt_id(const char *s)
{
    size_t n = strlen(s);
    if (n <= 5 || n > SB_CLI_PROMPT_ID_MAX || strncmp(s, "pmpt_", 5) != 0)
        return false;
    for (size_t i = 5; i < n; i++)
        if (!sb_cli_is_alnum(s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

int sb_cli_check_prompt_body(const char *json, size_t len, char *err, size_t errsz)
{
    json_error_t jerr;
    json_t *body = NULL;
    int rc = -EINVAL;
    if (len > SB_CLI_BODY_MAX) {
        sb_cli_fail(err, errsz, "the body is larger than %d bytes", SB_CLI_BODY_MAX);
        goto fail;
    }
    if (memchr(json, '\0', len)) {
        sb_cli_fail(err, errsz, "the body contains a NUL byte");
        goto fail;
    }
    /* Integers as reals: only the shape is checked here, and PostgreSQL's
     * jsonb takes numbers bigger than jansson's json_int_t. */
    body = json_loadb(json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL, &jerr);
    if (!body) {
        sb_cli_fail(err, errsz, "not valid JSON: %s (line %d, column %d)", jerr.text, jerr.line, jerr.column);
        goto fail;
    }
    if (!json_is_object(body)) {
        sb_cli_fail(err, errsz, "expected a JSON object {\"instructions\": TEXT, \"input\": [ITEMS]}");
        goto fail;
    }
    const char *key;
    json_t *val;
    json_object_foreach (body, key, val) {
        if (!strcmp(key, "instructions")) {
            if (!json_is_string(val)) {
                sb_cli_fail(err, errsz, "\"instructions\" must be a string");
                goto fail;
            }
        } else if (!strcmp(key, "input")) {
            if (!json_is_array(val)) {
                sb_cli_fail(err, errsz, "\"input\" must be an array of input items");
                goto fail;
            }
            size_t i;
            json_t *item;
            json_array_foreach (val, i, item) {
                if (!json_is_object(item)) {
                    sb_cli_fail(err, errsz, "\"input\"[%zu] must be an object (an input item)", i);
                    goto fail;
                }
            }
        } else {
            sb_cli_fail(err, errsz, "unknown key \"%.64s\" (a prompt body has only \"instructions\" and \"input\")",
                        key);
            goto fail;
        }
    }
    if (!json_object_get(body, "instructions") && !json_object_get(body, "input")) {
        sb_cli_fail(err, errsz, "the body needs \"instructions\", \"input\" or both");
        goto fail;
    }
    rc = 0;

fail:
    json_decref(body);
    return rc;
}
