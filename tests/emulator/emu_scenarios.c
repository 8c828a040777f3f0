/*
 * emu_scenarios: the per-model scenario table (PUT /_emu/scenarios/{model})
 * and the decision it makes for one generation request.
 *
 * A scenario is {"tool": <POSIX extended regex on a tool name>, "arguments":
 * {...}, "after_result": "<text, {{result}} = the tool's result>", "answer":
 * "<text>", "repeat": N}, each field optional. For a request to its model:
 *   1. the last turn is a tool result for a call of a matching tool ->
 *      with repeat N, while the conversation holds at most N results of
 *      matching tools (counted over its whole history), another call as in
 *      2 (so the model calls N + 1 times in all); then after_result
 *      (absent: the usual "Tool result: ..." answer);
 *   2. else a matching tool is offered (and tool_choice allows a call) ->
 *      one call of the first matching tool with the arguments;
 *   3. else answer (absent: the usual behaviour).
 * The protocol files tell the engine which tools are offered and which tool
 * each trailing result answers (struct sb_emu_ask); this file only matches.
 * Like emu_faults.c, the table is a small array scanned linearly: a test run
 * installs a handful of scenarios.
 */
#include "emu_scenarios.h"

#include <regex.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

#define ERR_MAX 256
#define PLACEHOLDER "{{result}}"

struct scenario {
    char *model;        /* owned */
    char *tool;         /* owned: the regex as given, or NULL */
    regex_t re;         /* compiled tool, when tool is not NULL */
    json_t *arguments;  /* owned: the arguments object ({} when absent) */
    char *args_text;    /* owned: its compact JSON text */
    char *after_result; /* owned, or NULL */
    char *answer;       /* owned, or NULL */
    long repeat;        /* calls made again after a result (0: none) */
    bool has_repeat;    /* "repeat" was given (GET shows null otherwise) */
};

struct sb_emu_scenarios {
    struct scenario *list;
    size_t n, cap;
};

struct sb_emu_scenarios *sb_emu_scenarios_new(void)
{
    return sb_xcalloc(1, sizeof(struct sb_emu_scenarios));
}

static void scenario_free(struct scenario *sc)
{
    free(sc->model);
    if (sc->tool)
        regfree(&sc->re);
    free(sc->tool);
    json_decref(sc->arguments);
    free(sc->args_text);
    free(sc->after_result);
    free(sc->answer);
    memset(sc, 0, sizeof *sc);
}

static void clear_all(struct sb_emu_scenarios *s)
{
    for (size_t i = 0; i < s->n; i++)
        scenario_free(&s->list[i]);
    s->n = 0;
}

void sb_emu_scenarios_destroy(struct sb_emu_scenarios **sp)
{
    if (!sp || !*sp)
        return;
    clear_all(*sp);
    free((*sp)->list);
    free(*sp);
    *sp = NULL;
}

static struct scenario *find(const struct sb_emu_scenarios *s, const char *model)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->list[i].model, model))
            return &s->list[i];
    return NULL;
}

static void remove_at(struct sb_emu_scenarios *s, struct scenario *sc)
{
    size_t i = (size_t)(sc - s->list);
    scenario_free(sc);
    memmove(&s->list[i], &s->list[i + 1], (s->n - i - 1) * sizeof *s->list);
    s->n--;
}

/* ---- the control endpoint ---------------------------------------------------------- */

static json_t *scenario_json(const struct scenario *sc)
{
    return json_pack("{s:s?, s:O, s:s?, s:s?, s:o}", "tool", sc->tool, "arguments", sc->arguments, "after_result",
                     sc->after_result, "answer", sc->answer, "repeat",
                     sc->has_repeat ? json_integer(sc->repeat) : json_null());
}

static json_t *error_json(int *status, int code, const char *msg)
{
    *status = code;
    return json_pack("{s:s}", "error", msg);
}

/* A string field or null/absent (*out NULL); false for any other type. */
static bool optional_string(const json_t *req, const char *name, const char **out)
{
    json_t *v = json_object_get(req, name);
    *out = json_string_value(v);
    return !v || json_is_null(v) || json_is_string(v);
}

/* PUT /_emu/scenarios/{model}: validates the whole body before it replaces anything. */
static json_t *put_scenario(struct sb_emu_scenarios *s, const char *model, const char *body, size_t body_len,
                            int *status)
{
    char err[ERR_MAX];
    json_error_t jerr;
    json_t *req = body_len ? json_loadb(body, body_len, 0, &jerr) : NULL;
    json_t *out = NULL;
    struct scenario next = {0};
    if (!json_is_object(req)) {
        out = error_json(status, 400,
                         "body must be a JSON object {\"tool\":\"<regex>\",\"arguments\":{...},"
                         "\"after_result\":\"...\",\"answer\":\"...\"}");
        goto done;
    }
    const char *key;
    json_t *v;
    json_object_foreach (req, key, v) {
        if (strcmp(key, "tool") && strcmp(key, "arguments") && strcmp(key, "after_result") && strcmp(key, "answer") &&
            strcmp(key, "repeat")) {
            snprintf(err, sizeof err,
                     "unknown scenario field '%.64s' (known: tool, arguments, after_result, answer, repeat)", key);
            out = error_json(status, 400, err);
            goto done;
        }
    }
    const char *tool, *after, *answer;
    if (!optional_string(req, "tool", &tool)) {
        out = error_json(status, 400, "\"tool\" must be a string: a POSIX extended regular expression");
        goto done;
    }
    if (!optional_string(req, "after_result", &after) || !optional_string(req, "answer", &answer)) {
        out = error_json(status, 400, "\"after_result\" and \"answer\" must be strings");
        goto done;
    }
    json_t *args = json_object_get(req, "arguments");
    if (args && !json_is_null(args) && !json_is_object(args)) {
        out = error_json(status, 400, "\"arguments\" must be a JSON object");
        goto done;
    }
    json_t *repeat = json_object_get(req, "repeat");
    if (repeat && !json_is_null(repeat) &&
        (!json_is_integer(repeat) || json_integer_value(repeat) < 0 ||
         json_integer_value(repeat) > SB_EMU_SCENARIO_REPEAT_MAX)) {
        snprintf(err, sizeof err, "\"repeat\" must be an integer from 0 to %d", SB_EMU_SCENARIO_REPEAT_MAX);
        out = error_json(status, 400, err);
        goto done;
    }
    next.has_repeat = json_is_integer(repeat);
    next.repeat = next.has_repeat ? (long)json_integer_value(repeat) : 0;
    if (tool) {
        int rc = regcomp(&next.re, tool, REG_EXTENDED | REG_NOSUB);
        if (rc != 0) {
            char why[128];
            regerror(rc, &next.re, why, sizeof why);
            snprintf(err, sizeof err, "\"tool\" is not a valid POSIX extended regular expression: %s", why);
            out = error_json(status, 400, err);
            goto done;
        }
        next.tool = sb_xstrdup(tool);
    }
    next.arguments = json_is_object(args) ? json_deep_copy(args) : json_object();
    next.args_text = json_dumps(next.arguments, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!next.args_text)
        next.args_text = sb_xstrdup("{}");
    next.after_result = after ? sb_xstrdup(after) : NULL;
    next.answer = answer ? sb_xstrdup(answer) : NULL;

    struct scenario *sc = find(s, model);
    if (sc) {
        scenario_free(sc);
    } else {
        if (s->n >= SB_EMU_SCENARIOS_MAX) {
            out = error_json(status, 400, "too many scenarios; DELETE /_emu/scenarios first");
            goto done;
        }
        if (s->n == s->cap) {
            s->cap = s->cap ? s->cap * 2 : 8;
            s->list = sb_xrealloc(s->list, s->cap * sizeof *s->list);
        }
        sc = &s->list[s->n++];
    }
    *sc = next;
    sc->model = sb_xstrdup(model);
    memset(&next, 0, sizeof next); /* now owned by the table */
    *status = 200;
    out = json_pack("{s:b}", "ok", 1);

done:
    scenario_free(&next);
    json_decref(req);
    return out;
}

json_t *sb_emu_scenarios_control(struct sb_emu_scenarios *s, const char *method, const char *model, const char *body,
                                 size_t body_len, int *status)
{
    if (model && !*model)
        return error_json(status, 404, "no model in the path: /_emu/scenarios/{upstream_model}");
    if (!model && !strcmp(method, "GET")) {
        json_t *list = json_object();
        for (size_t i = 0; i < s->n; i++)
            json_object_set_new(list, s->list[i].model, scenario_json(&s->list[i]));
        *status = 200;
        return json_pack("{s:o}", "scenarios", list);
    }
    if (!model && !strcmp(method, "DELETE")) {
        size_t n = s->n;
        clear_all(s);
        *status = 200;
        return json_pack("{s:b, s:I}", "ok", 1, "removed", (json_int_t)n);
    }
    if (model && !strcmp(method, "GET")) {
        struct scenario *sc = find(s, model);
        if (!sc)
            return error_json(status, 404, "no scenario for this model");
        *status = 200;
        return scenario_json(sc);
    }
    if (model && !strcmp(method, "PUT"))
        return put_scenario(s, model, body, body_len, status);
    if (model && !strcmp(method, "DELETE")) {
        struct scenario *sc = find(s, model);
        if (sc)
            remove_at(s, sc);
        *status = 200;
        return json_pack("{s:b, s:I}", "ok", 1, "removed", (json_int_t)(sc ? 1 : 0));
    }
    return error_json(status, 405,
                      "method not allowed: GET|DELETE /_emu/scenarios, GET|PUT|DELETE /_emu/scenarios/{model}");
}

/* ---- matching and calls ------------------------------------------------------------ */

static bool matches(const struct scenario *sc, const char *name)
{
    return sc->tool && name && regexec(&sc->re, name, 0, NULL, 0) == 0;
}

/* tmpl with every {{result}} replaced by the first SB_EMU_SCENARIO_RESULT_MAX bytes of result; owned. */
static char *substitute(const char *tmpl, const char *result)
{
    size_t rlen = strlen(result);
    if (rlen > SB_EMU_SCENARIO_RESULT_MAX) {
        rlen = SB_EMU_SCENARIO_RESULT_MAX;
        /* Never cut a UTF-8 sequence: back up to the start of the one the limit falls in. */
        while (rlen > 0 && ((unsigned char)result[rlen] & 0xC0) == 0x80)
            rlen--;
    }
    size_t plen = strlen(PLACEHOLDER), count = 0;
    for (const char *p = strstr(tmpl, PLACEHOLDER); p; p = strstr(p + plen, PLACEHOLDER))
        count++;
    size_t len = strlen(tmpl) - count * plen + count * rlen;
    char *out = sb_xmalloc(len + 1), *w = out;
    const char *p = tmpl;
    for (const char *hit = strstr(p, PLACEHOLDER); hit; hit = strstr(p, PLACEHOLDER)) {
        memcpy(w, p, (size_t)(hit - p));
        w += hit - p;
        memcpy(w, result, rlen);
        w += rlen;
        p = hit + plen;
    }
    size_t rest = strlen(p);
    memcpy(w, p, rest + 1);
    return out;
}

static void make_call(const struct scenario *sc, const struct sb_emu_fn *fn, struct sb_emu_tool_call *call)
{
    memset(call, 0, sizeof *call);
    call->name = sb_xstrdup(fn->name);
    call->custom = fn->custom;
    const char *input = json_string_value(json_object_get(sc->arguments, "input"));
    if (fn->custom && input)
        call->arguments = sb_xstrdup(input);
    else
        call->arguments = sb_xstrdup(sc->args_text);
}

/* ---- the history (repeat) --------------------------------------------------------- */

/* The name of the call whose id (idkey) is id among calls (array of objects with namekey), or NULL. */
static const char *call_name(const json_t *calls, const char *idkey, const char *id,
                             const char *(*name_of)(const json_t *))
{
    size_t i;
    const json_t *c;
    json_array_foreach (calls, i, c) {
        const char *cid = json_string_value(json_object_get(c, idkey));
        if (cid && id && !strcmp(cid, id))
            return name_of(c);
    }
    return NULL;
}

static const char *chat_name(const json_t *tc)
{
    return json_string_value(json_object_get(json_object_get(tc, "function"), "name"));
}

static const char *plain_name(const json_t *c)
{
    return json_string_value(json_object_get(c, "name"));
}

/* Chat: role "tool" messages, named by the tool_calls entry with their tool_call_id.
 * Messages: tool_result blocks, named by the tool_use block with their tool_use_id. */
static size_t count_in_messages(const struct scenario *sc, const json_t *messages)
{
    size_t n = 0, i, k;
    const json_t *m, *block;
    json_array_foreach (messages, i, m) {
        const char *role = json_string_value(json_object_get(m, "role"));
        if (role && !strcmp(role, "tool")) {
            const char *id = json_string_value(json_object_get(m, "tool_call_id"));
            for (size_t j = 0; j < i; j++) {
                const char *name =
                    call_name(json_object_get(json_array_get(messages, j), "tool_calls"), "id", id, chat_name);
                if (name) {
                    n += matches(sc, name);
                    break;
                }
            }
        }
        json_array_foreach (json_object_get(m, "content"), k, block) {
            const char *type = json_string_value(json_object_get(block, "type"));
            if (!type || strcmp(type, "tool_result"))
                continue;
            const char *id = json_string_value(json_object_get(block, "tool_use_id"));
            for (size_t j = 0; j < i; j++) {
                const char *name =
                    call_name(json_object_get(json_array_get(messages, j), "content"), "id", id, plain_name);
                if (name) {
                    n += matches(sc, name);
                    break;
                }
            }
        }
    }
    return n;
}

/* Responses: function_call_output / custom_tool_call_output items, named by the call item with their call_id. */
static size_t count_in_input(const struct scenario *sc, const json_t *input)
{
    size_t n = 0, i;
    const json_t *item;
    json_array_foreach (input, i, item) {
        const char *type = json_string_value(json_object_get(item, "type"));
        if (!type || (strcmp(type, "function_call_output") && strcmp(type, "custom_tool_call_output")))
            continue;
        const char *id = json_string_value(json_object_get(item, "call_id"));
        for (size_t j = 0; j < i; j++) {
            const json_t *c = json_array_get(input, j);
            const char *ct = json_string_value(json_object_get(c, "type"));
            const char *cid = json_string_value(json_object_get(c, "call_id"));
            if (ct && (!strcmp(ct, "function_call") || !strcmp(ct, "custom_tool_call")) && cid && id &&
                !strcmp(cid, id)) {
                n += matches(sc, plain_name(c));
                break;
            }
        }
    }
    return n;
}

/* Gemini: functionResponse parts, which carry their name. */
static size_t count_in_contents(const struct scenario *sc, const json_t *contents)
{
    size_t n = 0, i, k;
    const json_t *c, *part;
    json_array_foreach (contents, i, c)
        json_array_foreach (json_object_get(c, "parts"), k, part)
            n += matches(sc, plain_name(json_object_get(part, "functionResponse")));
    return n;
}

/* The results of calls of the scenario's tools in the whole conversation of body, whatever its protocol. */
static size_t count_results(const struct scenario *sc, const json_t *body)
{
    const json_t *input = json_object_get(body, "input");
    return count_in_messages(sc, json_object_get(body, "messages")) +
           (json_is_array(input) ? count_in_input(sc, input) : 0) +
           count_in_contents(sc, json_object_get(body, "contents"));
}

/* ---- the decision ------------------------------------------------------------------ */

/* Rule 2: the first matching tool the request offers and tool_choice lets the model call. */
static bool offered_call(const struct scenario *sc, const struct sb_emu_ask *ask, struct sb_emu_tool_call *call)
{
    for (size_t i = 0; sc->tool && !ask->no_calls && i < ask->nfns; i++) {
        const struct sb_emu_fn *fn = &ask->fns[i];
        /* A forced function is the only one the model may call. */
        if (ask->forced && (fn->custom || !fn->name || strcmp(fn->name, ask->forced)))
            continue;
        if (matches(sc, fn->name)) {
            make_call(sc, fn, call);
            return true;
        }
    }
    return false;
}

enum sb_emu_scene sb_emu_scenarios_decide(const struct sb_emu_scenarios *s, const char *model,
                                          const struct sb_emu_ask *ask, const json_t *body, char **text,
                                          struct sb_emu_tool_call *call)
{
    const struct scenario *sc = s && model ? find(s, model) : NULL;
    if (!sc)
        return SB_EMU_SCENE_NONE;

    /* 1. The request ends with the result of a call of a matching tool. */
    for (size_t i = 0; i < ask->nresults; i++) {
        if (!matches(sc, ask->results[i].name))
            continue;
        /* repeat: call again while the conversation holds at most that many results. */
        if (sc->repeat > 0 && count_results(sc, body) <= (size_t)sc->repeat && offered_call(sc, ask, call))
            return SB_EMU_SCENE_CALL;
        if (!sc->after_result)
            return SB_EMU_SCENE_NONE;
        *text = substitute(sc->after_result, ask->results[i].text ? ask->results[i].text : "");
        return SB_EMU_SCENE_TEXT;
    }

    /* 2. A matching tool is offered and tool_choice lets the model call it. */
    if (offered_call(sc, ask, call))
        return SB_EMU_SCENE_CALL;
    /* A forced call the scenario does not cover is made as usual: the model cannot answer text instead. */
    if (ask->forced)
        return SB_EMU_SCENE_NONE;

    /* 3. Anything else. */
    if (!sc->answer)
        return SB_EMU_SCENE_NONE;
    *text = sb_xstrdup(sc->answer);
    return SB_EMU_SCENE_TEXT;
}
