/*
 * emu_answer: what the emulated model says, whatever protocol asked.
 *
 * Responses, Messages and Gemini (emu_openai_responses.c, emu_anthropic.c,
 * emu_gemini.c) validate their own wire format, reduce the request to a
 * struct sb_emu_ask and let this file decide the answer; they then write it
 * in their own shape. The rules are the Chat Completions emulator's
 * (emu_openai_chat.c), so one integration-test idea ("CALL f {}",
 * "[[emu:length]]", a json_schema, a tool result) gives the same text through
 * every upstream kind. A scenario installed for the model (emu_scenarios.c)
 * comes first: it decides the text or the one tool call, and everything
 * else (reasoning, cuts, usage) follows as for any answer. Everything is
 * documented at the top of main.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "emu_scenarios.h"
#include "sb_alloc.h"

void sb_emu_tool_results_free(struct sb_emu_tool_result *results, size_t n)
{
    for (size_t i = 0; results && i < n; i++)
        free(results[i].text);
    free(results);
}

void sb_emu_answer_free(struct sb_emu_answer *a)
{
    for (size_t k = 0; k < SB_EMU_MAX_CHOICES; k++)
        free(a->choices[k].text);
    free(a->clean);
    free(a->reasoning);
    sb_emu_tool_calls_free(&a->calls, a->ncalls);
    memset(a, 0, sizeof *a);
}

int sb_emu_answer_begin(struct sb_emu_answer *a, const char *user_text, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    return sb_emu_directives_parse(user_text ? user_text : "", &a->d, &a->clean, err, errlen);
}

bool sb_emu_want_violation(struct sb_emu_call *call, const struct sb_emu_directives *d)
{
    if (d->violate)
        return true;
    return d->violate_tag[0] && sb_emu_tag_first_use(call->emu, d->violate_tag);
}

size_t sb_emu_next_word_piece(const char *s)
{
    size_t i = 0;
    while (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')
        i++;
    while (s[i] && !(s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

size_t sb_emu_next_args_piece(const char *s)
{
    size_t i = 0;
    while (s[i] && i < 8)
        i++;
    while (s[i] && ((unsigned char)s[i] & 0xC0) == 0x80)
        i++;
    return i;
}

static const struct sb_emu_fn *find_fn(const struct sb_emu_ask *ask, const char *name)
{
    for (size_t i = 0; i < ask->nfns; i++)
        if (!ask->fns[i].custom && ask->fns[i].name && !strcmp(ask->fns[i].name, name))
            return &ask->fns[i];
    return NULL;
}

/* Compact JSON text of v (stolen); NULL v gives text that is not JSON. Owned. */
static char *json_text(json_t *v, const char *text)
{
    if (!v)
        return sb_xasprintf(SB_EMU_NOT_JSON_PREFIX "%s", text);
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    json_decref(v);
    return s ? s : sb_xstrdup("null");
}

/* Structured output with text in the first free-form string; violate breaks the format on purpose. */
static char *structured_text(const struct sb_emu_ask *ask, const char *text, bool violate)
{
    if (ask->format == SB_EMU_FMT_JSON || !json_is_object(ask->schema))
        return json_text(violate ? NULL : json_pack("{s:s}", "echo", text), text);
    json_t *inst = sb_emu_schema_instance(ask->schema, text);
    if (violate)
        inst = sb_emu_schema_violate(ask->schema, inst);
    if (ask->format == SB_EMU_FMT_ENUM && json_is_string(inst)) {
        char *s = sb_xstrdup(json_string_value(inst));
        json_decref(inst);
        return s;
    }
    return json_text(inst, text);
}

/* Cuts s before the earliest stop sequence; returns the sequence (borrowed) or NULL. */
static const char *apply_stop(char *s, const json_t *stop)
{
    char *cut = NULL;
    const char *which = NULL;
    if (json_is_string(stop) && json_string_length(stop) > 0) {
        cut = strstr(s, json_string_value(stop));
        which = cut ? json_string_value(stop) : NULL;
    }
    size_t i;
    json_t *st;
    json_array_foreach (stop, i, st) {
        if (!json_is_string(st) || json_string_length(st) == 0)
            continue;
        char *p = strstr(s, json_string_value(st));
        if (p && (!cut || p < cut)) {
            cut = p;
            which = json_string_value(st);
        }
    }
    if (cut)
        *cut = '\0';
    return which;
}

/*
 * Arguments a forced call gets: an instance of the tool's schema (text in the
 * first free-form string), broken on purpose when asked. Owned JSON text.
 */
static char *forced_arguments(struct sb_emu_call *call, const struct sb_emu_ask *ask, const struct sb_emu_fn *fn,
                              const struct sb_emu_answer *a)
{
    const json_t *params = fn ? fn->schema : NULL;
    json_t *args = json_is_object(params) ? sb_emu_schema_instance(params, a->clean) : json_object();
    if (sb_emu_want_violation(call, &a->d)) {
        if (json_is_object(params)) {
            args = sb_emu_schema_violate(params, args);
        } else {
            json_decref(args);
            args = NULL;
        }
        /* tool_use.input / functionCall.args can only be objects: wrap what cannot be one. */
        if (ask->objects_only && !json_is_object(args)) {
            json_t *bad = args ? args : json_sprintf(SB_EMU_NOT_JSON_PREFIX "%s", a->clean);
            args = json_pack("{s:o}", "emu_violation", bad);
        }
    }
    return json_text(args, a->clean);
}

/* Tool calls from CALL lines (1), forced by tool_choice (1), or none (0); -EINVAL with err. */
static int make_calls(struct sb_emu_call *call, const struct sb_emu_ask *ask, struct sb_emu_answer *a, char *err,
                      size_t errlen)
{
    int have = 0;
    if (!ask->tool_text) {
        have = sb_emu_directives_calls(a->clean, &a->calls, &a->ncalls, err, errlen);
        if (have < 0)
            return -EINVAL;
        for (size_t k = 0; k < a->ncalls; k++) {
            if (!find_fn(ask, a->calls[k].name)) {
                snprintf(err, errlen, "CALL directive: function '%.64s' is not among the request's tools",
                         a->calls[k].name);
                return -ENOENT;
            }
            if (ask->objects_only) {
                json_t *v = json_loads(a->calls[k].arguments, JSON_DECODE_ANY, NULL);
                bool object = json_is_object(v);
                json_decref(v);
                if (!object) {
                    snprintf(err, errlen, "CALL directive: arguments for '%.64s' must be a JSON object",
                             a->calls[k].name);
                    return -EINVAL;
                }
            }
        }
    }
    if (!have && ask->forced) {
        a->calls = sb_xcalloc(1, sizeof *a->calls);
        a->ncalls = 1;
        a->calls[0].name = sb_xstrdup(ask->forced);
        a->calls[0].arguments = forced_arguments(call, ask, find_fn(ask, ask->forced), a);
        have = 1;
    }
    return have;
}

/* The text of choice k before cuts: structured output, tool result, search result or echo. Owned. */
static char *choice_text(const struct sb_emu_ask *ask, const struct sb_emu_answer *a, size_t k, bool violate)
{
    char suffix[32] = "";
    if (k > 0)
        snprintf(suffix, sizeof suffix, " #%zu", k);
    const char *extra = ask->extra ? ask->extra : "";
    if (a->searched)
        return sb_xasprintf("Searched: %s%s%s", a->clean, extra, suffix);
    if (ask->format != SB_EMU_FMT_TEXT) {
        char *text = sb_xasprintf("%s%s", a->clean, suffix);
        char *out = structured_text(ask, text, violate);
        free(text);
        return out;
    }
    if (ask->tool_text)
        return sb_xasprintf("Tool result: %s%s%s", ask->tool_text, extra, suffix);
    const char *acks = ask->acks ? ask->acks : "";
    return sb_xasprintf("You said: %s%s%s%s%s", a->clean, *a->clean && *acks ? " " : "", acks, extra, suffix);
}

int sb_emu_answer_make(struct sb_emu_call *call, const struct sb_emu_ask *ask, struct sb_emu_answer *a, char *err,
                       size_t errlen)
{
    a->n = ask->n >= 1 && ask->n <= SB_EMU_MAX_CHOICES ? ask->n : 1;
    if (ask->reasoning)
        a->reasoning = sb_xasprintf("Reasoning (%s) about: %s", ask->reasoning, a->clean);

    if (a->d.refuse) {
        for (size_t k = 0; k < a->n; k++) {
            a->choices[k].text = sb_xstrdup(SB_EMU_REFUSAL_TEXT);
            a->choices[k].finish = SB_EMU_FINISH_REFUSAL;
            a->output_tokens += (long long)sb_emu_count_words(SB_EMU_REFUSAL_TEXT);
        }
    } else {
        char *scene_text = NULL;
        struct sb_emu_tool_call scene_call;
        enum sb_emu_scene scene = sb_emu_scenarios_decide(sb_emu_scenarios_of(call->emu), call->model, ask, call->json,
                                                          &scene_text, &scene_call);
        int calls = 0;
        if (scene == SB_EMU_SCENE_CALL) {
            a->calls = sb_xcalloc(1, sizeof *a->calls);
            a->calls[0] = scene_call;
            a->ncalls = 1;
            calls = 1;
        } else if (scene == SB_EMU_SCENE_NONE) {
            calls = make_calls(call, ask, a, err, errlen);
        }
        if (calls < 0)
            return calls;
        if (calls > 0) {
            long long per_choice = 0;
            for (size_t k = 0; k < a->ncalls; k++)
                per_choice += 1 + (long long)sb_emu_count_words(a->calls[k].arguments);
            for (size_t k = 0; k < a->n; k++)
                a->choices[k].finish = SB_EMU_FINISH_TOOL_CALLS;
            a->output_tokens = per_choice * (long long)a->n;
        } else {
            /* A scenario's text is said as written: no search, no schema instance, no " #k". */
            a->searched = !scene_text && ask->search && !ask->tool_text;
            bool violate =
                !scene_text && !a->searched && ask->format != SB_EMU_FMT_TEXT && sb_emu_want_violation(call, &a->d);
            for (size_t k = 0; k < a->n; k++) {
                struct sb_emu_choice *c = &a->choices[k];
                c->text = scene_text ? sb_xstrdup(scene_text) : choice_text(ask, a, k, violate);
                c->finish = SB_EMU_FINISH_STOP;
                c->stop_seq = apply_stop(c->text, ask->stop);
                if (c->stop_seq)
                    c->finish = SB_EMU_FINISH_STOP_SEQUENCE;
                size_t words = sb_emu_count_words(c->text);
                size_t limit = a->d.length ? 1 : words;
                if (ask->max_words > 0 && (size_t)ask->max_words < limit)
                    limit = (size_t)ask->max_words;
                if (a->d.length || limit < words) {
                    c->text[sb_emu_words_prefix(c->text, limit)] = '\0';
                    c->finish = SB_EMU_FINISH_LENGTH;
                    c->stop_seq = NULL;
                }
                a->output_tokens += (long long)sb_emu_count_words(c->text);
            }
        }
        free(scene_text);
    }
    if (a->reasoning)
        a->reasoning_tokens = (long long)sb_emu_count_words(a->reasoning) * (long long)a->n;
    return 0;
}
