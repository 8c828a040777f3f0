/*
 * fe_messages_code: Anthropic's code execution server tool on the gateway's
 * code interpreter, in the Messages style (see fe_messages_code.h for the
 * mapping). The tool the model is offered is the gateway's sb__python, so
 * the version to take is the one whose blocks are a Python run:
 * code_execution_20250522 (server_tool_use {code} + code_execution_result
 * {stdout, stderr, return_code}). Its successors have the model run bash
 * commands and edit files (bash_code_execution, text_editor_code_execution
 * blocks), which would need another sandbox interface: they are refused
 * rather than answered in the older version's blocks, which a client of
 * theirs would not expect.
 */
#include "fe_messages_code.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "fe_code_outcome.h"
#include "fe_messages_parse.h"
#include "sb_alloc.h"

/* The code execution version this gateway answers in its own blocks. */
#define FE_MC_VERSION "code_execution_20250522"

bool fe_messages_is_code_tool(const json_t *tool)
{
    const char *type = json_string_value(json_object_get(tool, "type"));
    return type && !strncmp(type, "code_execution_", 15);
}

json_t *fe_messages_code_tool(const json_t *t, const char *param, fe_error_t *err)
{
    static const char *const known[] = {"type",   "name", "allowed_callers", "cache_control", "defer_loading",
                                        "strict", NULL};
    const char *type = json_string_value(json_object_get(t, "type"));
    char p[96];
    if (strcmp(type, FE_MC_VERSION) != 0) {
        snprintf(p, sizeof p, "%s.type", param);
        return fe_messages_fail_null(err, "unsupported_parameter", p,
                                     "unsupported parameter: the code execution tool '%.40s' (bash commands and file "
                                     "editing) is not supported on this gateway, whose sandbox runs Python; use "
                                     "'" FE_MC_VERSION "'.",
                                     type);
    }
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)t, k, v) {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++)
            ok = !strcmp(k, known[i]);
        if (!ok) {
            snprintf(p, sizeof p, "%s.%.40s", param, k);
            return fe_messages_fail_null(err, "unknown_parameter", p, "Extra inputs are not permitted");
        }
    }
    snprintf(p, sizeof p, "%s.name", param);
    if (!fe_messages_is(json_object_get(t, "name"), "code_execution"))
        return fe_messages_fail_null(err, "invalid_value", p, "Input should be 'code_execution'");
    /* allowed_callers, cache_control, defer_loading and strict tune how the
     * tool is offered, not what a run does. The container is the object
     * form: a string names an existing container. */
    return json_pack("{s:s, s:{s:s}}", "type", "code_interpreter", "container", "type", "auto");
}

int fe_messages_code_container(const json_t *body, json_t *tools, fe_error_t *err)
{
    json_t *c = json_object_get(body, "container");
    if (!c || json_is_null(c))
        return 0;
    json_t *id = c;
    if (json_is_object(c)) {
        const char *k;
        json_t *v;
        json_object_foreach (c, k, v) {
            if (strcmp(k, "id") != 0 && strcmp(k, "skills") != 0) {
                char p[64];
                snprintf(p, sizeof p, "container.%.40s", k);
                return fe_messages_fail(err, "unknown_parameter", p, "Extra inputs are not permitted");
            }
        }
        json_t *skills = json_object_get(c, "skills");
        if (skills && !json_is_null(skills) && (!json_is_array(skills) || json_array_size(skills) > 0))
            return fe_messages_fail(err, "unsupported_parameter", "container.skills",
                                    "unsupported parameter: skills are not available in this gateway's sandbox.");
        id = json_object_get(c, "id");
        if (!id || json_is_null(id))
            return 0; /* a new container, as "auto" makes */
    }
    if (!json_is_string(id) || json_string_length(id) == 0)
        return fe_messages_fail(err, "invalid_type", json_is_object(c) ? "container.id" : "container",
                                "Input should be a valid string");
    /* A container only matters to a code execution tool; without one it
     * asks for nothing. */
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t)
        if (fe_messages_is(json_object_get(t, "type"), "code_interpreter"))
            json_object_set(t, "container", id);
    return 0;
}

/* ---- history ------------------------------------------------------------------------ */

/* id with its prefix `from` replaced by `to` (or `to` put before it). */
static json_t *fe_mc_swap(const char *id, const char *from, const char *to)
{
    size_t n = strlen(from);
    char *s = sb_xasprintf("%s%s", to, strncmp(id, from, n) == 0 ? id + n : id);
    json_t *out = json_string(s);
    free(s);
    return out ? out : json_string(to);
}

int fe_messages_code_use(json_t *items, const json_t *block, const char *param, fe_error_t *err)
{
    json_t *id = json_object_get(block, "id"), *input = json_object_get(block, "input");
    json_t *code = json_object_get(input, "code");
    if (!json_is_string(id) || !json_is_object(input) || !json_is_string(code))
        return fe_messages_fail(err, "invalid_value", param,
                                "code_execution server_tool_use blocks need a string id and an input {\"code\": "
                                "string}");
    json_array_append_new(
        items, json_pack("{s:s, s:o, s:s, s:O, s:[]}", "type", "code_interpreter_call", "id",
                         fe_mc_swap(json_string_value(id), FE_MESSAGES_CODE_PREFIX, FE_MESSAGES_CODE_ITEM_PREFIX),
                         "status", "completed", "code", code, "outputs"));
    return 0;
}

/* The string field key of o ("" when absent or null), or NULL when it is
 * of another type. */
static const char *fe_mc_text(const json_t *o, const char *key)
{
    json_t *v = json_object_get(o, key);
    return !v || json_is_null(v) ? "" : json_string_value(v);
}

int fe_messages_code_result(json_t *items, const json_t *block, const char *param, fe_error_t *err)
{
    json_t *use = json_object_get(block, "tool_use_id");
    json_t *want = json_is_string(use)
                       ? fe_mc_swap(json_string_value(use), FE_MESSAGES_CODE_PREFIX, FE_MESSAGES_CODE_ITEM_PREFIX)
                       : NULL;
    json_t *item = NULL;
    for (size_t i = json_array_size(items); want && i-- > 0 && !item;) {
        json_t *it = json_array_get(items, i);
        if (fe_messages_is(json_object_get(it, "type"), "code_interpreter_call") &&
            json_equal(json_object_get(it, "id"), want))
            item = it;
    }
    json_decref(want);
    if (!item)
        return fe_messages_fail(err, "invalid_value", param,
                                "code_execution_tool_result block must follow the server_tool_use block with id "
                                "'tool_use_id'");
    json_t *content = json_object_get(block, "content");
    const char *type = json_string_value(json_object_get(content, "type"));
    char p[160];
    snprintf(p, sizeof p, "%s.content", param);
    if (!json_is_object(content) || !type)
        return fe_messages_fail(err, "invalid_type", p, "Input should be a valid dictionary");
    if (!strcmp(type, "code_execution_tool_result_error")) {
        json_t *code = json_object_get(content, "error_code");
        if (!json_is_string(code))
            return fe_messages_fail(err, "missing_required_parameter", p, "error_code: Field required");
        if (fe_messages_is(code, "execution_time_exceeded")) {
            /* It ran, and was stopped: what the model is told of it. */
            json_object_set_new(
                item, "outputs",
                json_pack("[{s:s, s:s}]", "type", "logs", "logs", "[The code was stopped: it ran out of time.]"));
            return 0;
        }
        json_object_set_new(item, "status", json_string("failed"));
        return 0;
    }
    /* An encrypted result (Anthropic's own, when the code called a tool)
     * has its stdout sealed by Anthropic: only its stderr can be read. */
    bool encrypted = !strcmp(type, "encrypted_code_execution_result");
    if (strcmp(type, "code_execution_result") != 0 && !encrypted)
        return fe_messages_fail(err, "invalid_value", p,
                                "type: Input should be 'code_execution_result', 'encrypted_code_execution_result' or "
                                "'code_execution_tool_result_error'");
    const char *out = encrypted ? "" : fe_mc_text(content, "stdout");
    const char *errs = fe_mc_text(content, "stderr");
    if (!out || !errs)
        return fe_messages_fail(err, "invalid_type", p, "stdout and stderr should be valid strings");
    char *logs = sb_xasprintf("%s%s", out, errs);
    json_t *outputs = json_array();
    if (*logs)
        json_array_append_new(outputs, json_pack("{s:s, s:s}", "type", "logs", "logs", logs));
    free(logs);
    json_object_set_new(item, "outputs", outputs);
    return 0;
}

/* ---- response blocks ------------------------------------------------------------------- */

static json_t *fe_mc_block_id(const json_t *item)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    return fe_mc_swap(id ? id : "", FE_MESSAGES_CODE_ITEM_PREFIX, FE_MESSAGES_CODE_PREFIX);
}

json_t *fe_messages_code_use_block(const json_t *item, bool with_input)
{
    json_t *code = json_object_get(item, "code");
    json_t *input = json_object();
    if (with_input)
        json_object_set_new(input, "code", json_is_string(code) ? json_incref(code) : json_string(""));
    return json_pack("{s:s, s:o, s:s, s:o}", "type", "server_tool_use", "id", fe_mc_block_id(item), "name",
                     "code_execution", "input", input);
}

json_t *fe_messages_code_result_block(const json_t *item)
{
    fe_code_outcome_t how = fe_code_outcome(item);
    json_t *content;
    if (how == FE_CODE_FAILED || how == FE_CODE_TIMEOUT) {
        content = json_pack("{s:s, s:s}", "type", "code_execution_tool_result_error", "error_code",
                            how == FE_CODE_FAILED ? "unavailable" : "execution_time_exceeded");
    } else {
        /* The notebook's output is one stream (prints, warnings and the
         * traceback in their order): all of it is stdout, and the return
         * code says whether the run raised. */
        content = json_pack("{s:s, s:o, s:s, s:i, s:[]}", "type", "code_execution_result", "stdout", fe_code_logs(item),
                            "stderr", "", "return_code", how == FE_CODE_ERROR ? 1 : 0, "content");
    }
    return json_pack("{s:s, s:o, s:o}", "type", "code_execution_tool_result", "tool_use_id", fe_mc_block_id(item),
                     "content", content);
}

json_t *fe_messages_code_container_info(const json_t *items, int64_t now_ms)
{
    json_t *id = NULL;
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it)
        if (fe_messages_is(json_object_get(it, "type"), "code_interpreter_call") &&
            json_string_length(json_object_get(it, "container_id")) > 0)
            id = json_object_get(it, "container_id");
    if (!id)
        return NULL;
    time_t at = (time_t)((now_ms + FE_MESSAGES_CODE_IDLE_MS) / 1000);
    struct tm tm;
    char when[32] = "1970-01-01T00:00:00Z";
    if (gmtime_r(&at, &tm))
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_pack("{s:O, s:s, s:n}", "id", id, "expires_at", when, "skills");
}

char *fe_messages_code_json(const char *code, size_t n, size_t *len)
{
    json_t *s = json_stringn(code, n);
    char *text = s ? json_dumps(s, JSON_ENCODE_ANY | JSON_COMPACT) : NULL;
    json_decref(s);
    if (!text)
        return NULL;
    size_t l = strlen(text); /* "..." : the quotes go */
    memmove(text, text + 1, l - 2);
    text[l - 2] = '\0';
    *len = l - 2;
    return text;
}
