/*
 * strict: compiles a job's strict schemas once and checks each upstream
 * attempt's items against them (see strict.h for what is and is not checked).
 */
#include "strict.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_event.h"
#include "sb_jschema.h"

/* Longest name quoted in a message; longer ones are cut. */
#define SB_STRICT_NAME_MAX 64

typedef struct sb_strict_tool {
    const char *name;     /* borrowed from the request */
    sb_jschema_t *schema; /* NULL: the tool has no parameters; arguments need only parse */
} sb_strict_tool_t;

struct sb_strict {
    const char *format_name; /* borrowed; NULL when text.format is not strict */
    sb_jschema_t *format;
    sb_strict_tool_t *tools; /* the strict function tools */
    size_t n_tools;
};

void sb_strict_destroy(sb_strict_t **ps)
{
    if (!ps || !*ps)
        return;
    sb_strict_t *s = *ps;
    sb_jschema_destroy(&s->format);
    for (size_t i = 0; i < s->n_tools; i++)
        sb_jschema_destroy(&s->tools[i].schema);
    free(s->tools);
    free(s);
    *ps = NULL;
}

static json_t *sb_strict_unusable(const char *what, const char *name, const char *reason)
{
    char *msg = sb_xasprintf("%s '%.*s' is not a usable JSON Schema: %s", what, SB_STRICT_NAME_MAX, name, reason);
    json_t *ev = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, msg);
    free(msg);
    return ev;
}

int sb_strict_new(const json_t *request, sb_strict_t **out, json_t **err)
{
    *out = NULL;
    *err = NULL;
    sb_strict_t *s = sb_xcalloc(1, sizeof *s);
    char reason[512];

    const json_t *format = json_object_get(json_object_get(request, "text"), "format");
    const char *type = json_string_value(json_object_get(format, "type"));
    const json_t *schema = json_object_get(format, "schema");
    /* Without a schema there is nothing to check; the adapter refuses it. */
    if (type && !strcmp(type, "json_schema") && json_is_true(json_object_get(format, "strict")) && schema) {
        const char *name = json_string_value(json_object_get(format, "name"));
        s->format_name = name ? name : "(unnamed)";
        s->format = sb_jschema_new(schema, reason, sizeof reason);
        if (!s->format) {
            *err = sb_strict_unusable("text.format.schema", s->format_name, reason);
            goto fail;
        }
    }

    const json_t *tools = json_object_get(request, "tools");
    size_t i;
    const json_t *tool;
    json_array_foreach (tools, i, tool) {
        const char *name = json_string_value(json_object_get(tool, "name"));
        const char *ttype = json_string_value(json_object_get(tool, "type"));
        if (!name || !ttype || strcmp(ttype, "function") || !json_is_true(json_object_get(tool, "strict")))
            continue;
        if (!s->tools)
            s->tools = sb_xcalloc(json_array_size(tools), sizeof *s->tools);
        sb_strict_tool_t *t = &s->tools[s->n_tools++];
        t->name = name;
        const json_t *params = json_object_get(tool, "parameters");
        if (params && !json_is_null(params)) {
            t->schema = sb_jschema_new(params, reason, sizeof reason);
            if (!t->schema) {
                *err = sb_strict_unusable("the parameters of tool", name, reason);
                goto fail;
            }
        }
    }

    if (!s->format && s->n_tools == 0) {
        sb_strict_destroy(&s);
        return 0;
    }
    *out = s;
    return 0;
fail:
    sb_strict_destroy(&s);
    return -EINVAL;
}

/* Parses text as JSON and validates it. 0 valid, -1 with why set. */
static int sb_strict_validate_text(const sb_jschema_t *schema, const char *text, size_t len, char *why, size_t whysz)
{
    json_error_t jerr;
    json_t *v = json_loadb(text, len, JSON_DECODE_ANY, &jerr);
    if (!v) {
        /* The position only: jerr.text may quote the output. */
        snprintf(why, whysz, "$: not valid JSON (line %d, column %d)", jerr.line, jerr.column);
        return -1;
    }
    int rc = schema ? sb_jschema_validate(schema, v, why, whysz) : 0;
    json_decref(v);
    return rc < 0 ? -1 : 0;
}

/* A message item: its output_text parts joined, unless it has a refusal. */
static int sb_strict_check_message(const sb_strict_t *s, const json_t *item, char *what, size_t whatsz, char *why,
                                   size_t whysz)
{
    const json_t *content = json_object_get(item, "content");
    size_t i, len = 0, n_text = 0;
    const json_t *part;
    json_array_foreach (content, i, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        if (t && !strcmp(t, "refusal"))
            return 0;
        if (t && !strcmp(t, "output_text")) {
            len += json_string_length(json_object_get(part, "text"));
            n_text++;
        }
    }
    if (n_text == 0)
        return 0;
    char *text = sb_xmalloc(len + 1);
    size_t pos = 0;
    json_array_foreach (content, i, part) {
        const char *t = json_string_value(json_object_get(part, "type"));
        const json_t *txt = json_object_get(part, "text");
        if (t && !strcmp(t, "output_text") && json_is_string(txt)) {
            memcpy(text + pos, json_string_value(txt), json_string_length(txt));
            pos += json_string_length(txt);
        }
    }
    int rc = sb_strict_validate_text(s->format, text, pos, why, whysz);
    free(text);
    if (rc < 0)
        snprintf(what, whatsz, "the JSON schema '%.*s'", SB_STRICT_NAME_MAX, s->format_name);
    return rc;
}

static int sb_strict_check_call(const sb_strict_t *s, const json_t *item, char *what, size_t whatsz, char *why,
                                size_t whysz)
{
    const char *name = json_string_value(json_object_get(item, "name"));
    const sb_strict_tool_t *tool = NULL;
    for (size_t i = 0; name && i < s->n_tools && !tool; i++)
        if (!strcmp(s->tools[i].name, name))
            tool = &s->tools[i];
    if (!tool)
        return 0; /* not a strict tool */
    const json_t *args = json_object_get(item, "arguments");
    const char *text = json_string_value(args);
    size_t len = json_string_length(args);
    if (!text || len == 0) { /* some servers send "" for a call without arguments */
        text = "{}";
        len = 2;
    }
    int rc = sb_strict_validate_text(tool->schema, text, len, why, whysz);
    if (rc < 0)
        snprintf(what, whatsz, "the parameters schema of tool '%.*s'", SB_STRICT_NAME_MAX, tool->name);
    return rc;
}

/* Which choices of this attempt ended incomplete: their choice_done says
 * so, or (a single-choice attempt, without choice_done) the final does.
 * Returns a flag per choice index (owned; *n entries). */
static bool *sb_strict_incomplete(const json_t *events, const json_t *final, size_t *n)
{
    size_t i, max = 0;
    bool multi = false;
    const json_t *ev;
    json_array_foreach (events, i, ev) {
        if (sb_event_type_of(ev) == SB_EV_CHOICE_DONE) {
            multi = true;
            if ((size_t)sb_event_choice(ev) > max)
                max = (size_t)sb_event_choice(ev);
        }
    }
    *n = max + 1;
    bool *inc = sb_xcalloc(*n, sizeof *inc);
    if (!multi) {
        const char *status = json_string_value(json_object_get(final, "status"));
        inc[0] = !status || strcmp(status, "completed");
        return inc;
    }
    json_array_foreach (events, i, ev) {
        if (sb_event_type_of(ev) == SB_EV_CHOICE_DONE) {
            const char *status = json_string_value(json_object_get(ev, "status"));
            inc[sb_event_choice(ev)] = !status || strcmp(status, "completed");
        }
    }
    return inc;
}

int sb_strict_check(const sb_strict_t *s, const json_t *events, const json_t *final, char *what, size_t whatsz,
                    char *why, size_t whysz)
{
    size_t n_choices;
    bool *incomplete = sb_strict_incomplete(events, final, &n_choices);
    int rc = 0;
    size_t i;
    const json_t *ev;
    json_array_foreach (events, i, ev) {
        if (sb_event_type_of(ev) != SB_EV_ITEM_DONE)
            continue;
        size_t k = (size_t)sb_event_choice(ev);
        if (k < n_choices && incomplete[k])
            continue;
        const json_t *item = json_object_get(ev, "item");
        const char *type = json_string_value(json_object_get(item, "type"));
        if (type && !strcmp(type, "message") && s->format)
            rc = sb_strict_check_message(s, item, what, whatsz, why, whysz);
        else if (type && !strcmp(type, "function_call") && s->n_tools > 0)
            rc = sb_strict_check_call(s, item, what, whatsz, why, whysz);
        if (rc < 0)
            break;
    }
    free(incomplete);
    return rc;
}
