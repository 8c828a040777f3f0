/* fe_prompt: prompt templates (see fe_prompt.h). */
#include "fe_prompt.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "fe_items.h"
#include "fe_params.h"
#include "fe_request_db.h"
#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_event.h"

int fe_prompt_check_ref(const json_t *ref, fe_error_t *err)
{
    if (!json_is_object(ref)) {
        fe_params_invalid(err, "prompt", "Invalid type for 'prompt': expected an object.");
        return -1;
    }
    const char *id = json_string_value(json_object_get(ref, "id"));
    if (!id || !*id) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_required_parameter", "prompt.id",
                     "Missing required parameter: 'prompt.id'.");
        return -1;
    }
    json_t *version = json_object_get(ref, "version");
    if (version && !json_is_null(version)) {
        const char *v = json_string_value(version);
        bool ok = v && *v && strlen(v) <= 9;
        for (size_t i = 0; ok && v[i]; i++)
            ok = isdigit((unsigned char)v[i]);
        if (!ok) {
            fe_params_invalid(err, "prompt.version",
                              "Invalid value for 'prompt.version': expected a version "
                              "number as a string, e.g. \"2\".");
            return -1;
        }
    }
    json_t *vars = json_object_get(ref, "variables");
    if (vars && !json_is_null(vars)) {
        if (!json_is_object(vars)) {
            fe_params_invalid(err, "prompt.variables", "Invalid type for 'prompt.variables': expected an object.");
            return -1;
        }
        const char *name;
        json_t *val;
        json_object_foreach (vars, name, val) {
            const char *type = json_string_value(json_object_get(val, "type"));
            if (json_is_string(val) ||
                (type && (!strcmp(type, "input_text") || !strcmp(type, "input_image") || !strcmp(type, "input_file"))))
                continue;
            char param[96];
            snprintf(param, sizeof param, "prompt.variables.%.60s", name);
            fe_params_invalid(err, param,
                              "Invalid value for '%s': expected a string or an input_text, input_image "
                              "or input_file part.",
                              param);
            return -1;
        }
    }
    return 0;
}

/* Accumulates the output of one substituted text. */
struct fe_prompt_out {
    char *buf;
    size_t len, cap;
    json_t *parts; /* NULL: parts not allowed (instructions) */
    const char *text_type;
    json_t *missing; /* names of missing variables */
};

static void fe_prompt_append(struct fe_prompt_out *o, const char *s, size_t n)
{
    if (o->len + n + 1 > o->cap) {
        o->cap = (o->len + n + 1) * 2;
        o->buf = sb_xrealloc(o->buf, o->cap);
    }
    memcpy(o->buf + o->len, s, n);
    o->len += n;
    o->buf[o->len] = '\0';
}

static void fe_prompt_flush(struct fe_prompt_out *o)
{
    if (o->parts && o->len > 0) {
        json_array_append_new(o->parts, json_pack("{s:s, s:s%}", "type", o->text_type, "text", o->buf, o->len));
        o->len = 0;
    }
}

/* Substitutes {{ name }} in text. Returns -1 with err for a part variable
 * where only text can go. */
static int fe_prompt_subst(struct fe_prompt_out *o, const char *text, const json_t *vars, fe_error_t *err)
{
    const char *p = text;
    for (;;) {
        const char *open = strstr(p, "{{");
        const char *close = open ? strstr(open + 2, "}}") : NULL;
        if (!open || !close) {
            fe_prompt_append(o, p, strlen(p));
            return 0;
        }
        const char *a = open + 2, *b = close;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        bool name_ok = b > a && (size_t)(b - a) < 128;
        for (const char *q = a; name_ok && q < b; q++)
            name_ok = isalnum((unsigned char)*q) || *q == '_' || *q == '-' || *q == '.';
        if (!name_ok) { /* not a placeholder: keep the braces as text */
            fe_prompt_append(o, p, (size_t)(open + 2 - p));
            p = open + 2;
            continue;
        }
        fe_prompt_append(o, p, (size_t)(open - p));
        char name[128];
        memcpy(name, a, (size_t)(b - a));
        name[b - a] = '\0';
        json_t *val = json_object_get(vars, name);
        const char *type = json_string_value(json_object_get(val, "type"));
        if (json_is_string(val)) {
            fe_prompt_append(o, json_string_value(val), json_string_length(val));
        } else if (type && !strcmp(type, "input_text") && json_is_string(json_object_get(val, "text"))) {
            json_t *t = json_object_get(val, "text");
            fe_prompt_append(o, json_string_value(t), json_string_length(t));
        } else if (val) {
            if (!o->parts) {
                fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_prompt_variable", "prompt.variables",
                             "Prompt variable '%s' is used in the instructions, where only text can go.", name);
                return -1;
            }
            char param[160];
            snprintf(param, sizeof param, "prompt.variables.%s", name);
            json_t *part = fe_items_normalize_part(val, param, err);
            if (!part)
                return -1;
            fe_prompt_flush(o);
            json_array_append_new(o->parts, part);
        } else {
            json_array_append_new(o->missing, json_string(name));
        }
        p = close + 2;
    }
}

static int fe_prompt_fill_item(json_t *item, const json_t *vars, json_t *missing, fe_error_t *err)
{
    json_t *content = json_object_get(item, "content");
    if (!json_is_array(content))
        return 0;
    json_t *parts = json_array();
    size_t j;
    json_t *p;
    json_array_foreach (content, j, p) {
        const char *type = json_string_value(json_object_get(p, "type"));
        const char *text = json_string_value(json_object_get(p, "text"));
        if (!type || !text || (strcmp(type, "input_text") != 0 && strcmp(type, "output_text") != 0)) {
            json_array_append(parts, p);
            continue;
        }
        struct fe_prompt_out o = {.parts = parts, .text_type = type, .missing = missing};
        int rc = fe_prompt_subst(&o, text, vars, err);
        fe_prompt_flush(&o);
        free(o.buf);
        if (rc < 0) {
            json_decref(parts);
            return -1;
        }
    }
    json_object_set_new(item, "content", parts);
    return 0;
}

json_t *fe_prompt_render(const json_t *body, const json_t *variables, json_t **instructions, fe_error_t *err)
{
    *instructions = NULL;
    json_t *vars = json_is_object(variables) ? (json_t *)variables : NULL;
    json_t *missing = json_array();
    json_t *items = NULL;
    json_t *tmpl_input = json_object_get(body, "input");
    json_t *tmpl_instr = json_object_get(body, "instructions");
    if (tmpl_input) {
        items = fe_items_normalize(tmpl_input, "prompt.input", err);
        if (!items)
            goto fail;
        size_t i;
        json_t *it;
        json_array_foreach (items, i, it) {
            if (fe_prompt_fill_item(it, vars, missing, err) < 0)
                goto fail;
        }
    } else {
        items = json_array();
    }
    if (json_is_string(tmpl_instr)) {
        struct fe_prompt_out o = {.missing = missing};
        int rc = fe_prompt_subst(&o, json_string_value(tmpl_instr), vars, err);
        if (rc == 0)
            *instructions = json_stringn(o.buf ? o.buf : "", o.len);
        free(o.buf);
        if (rc < 0)
            goto fail;
    }
    if (json_array_size(missing) > 0) {
        char names[512] = "";
        size_t off = 0, i;
        json_t *m;
        json_array_foreach (missing, i, m) {
            int n = snprintf(names + off, sizeof names - off, "%s%s", i ? ", " : "", json_string_value(m));
            if (n < 0 || (size_t)n >= sizeof names - off)
                break;
            off += (size_t)n;
        }
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "missing_prompt_variables", "prompt.variables",
                     "Missing prompt variables: %s.", names);
        goto fail;
    }
    json_decref(missing);
    return items;
fail:
    json_decref(missing);
    json_decref(items);
    json_decref(*instructions);
    *instructions = NULL;
    return NULL;
}

static void fe_prompt_on_loaded(fe_request_t *r, const PGresult *res)
{
    const char *id = json_string_value(json_object_get(r->parsed.prompt_ref, "id"));
    const char *version = json_string_value(json_object_get(r->parsed.prompt_ref, "version"));
    json_t *body = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 1), 0, NULL) : NULL;
    if (!json_is_object(body)) {
        json_decref(body);
        if (version)
            fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "prompt_not_found", "prompt.version",
                             "Prompt '%.64s' has no version '%.16s'.", id, version);
        else
            fe_request_failf(r, 404, SB_ERR_NOT_FOUND, "prompt_not_found", "prompt.id",
                             "Prompt with id '%.64s' not found.", id);
        return;
    }
    /* The response shows the version actually used. */
    json_object_set_new(r->parsed.prompt_ref, "version", json_string(PQgetvalue(res, 0, 0)));
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *instructions = NULL;
    json_t *items = fe_prompt_render(body, json_object_get(r->parsed.prompt_ref, "variables"), &instructions, &err);
    json_decref(body);
    if (!items) {
        fe_request_fail(r, &err);
        return;
    }
    fe_items_assign_ids(items);
    json_t *c = r->parsed.canonical;
    if (instructions && !json_is_string(json_object_get(c, "instructions")))
        json_object_set(c, "instructions", instructions);
    json_decref(instructions);
    json_t *own = json_object_get(c, "input");
    if (json_is_array(own))
        json_array_extend(items, own);
    json_object_set_new(c, "input", items);
    r->prep_done(r);
}

void fe_prompt_expand(fe_request_t *r, fe_request_then_fn done)
{
    char account[24];
    fe_request_account(r, account, sizeof account);
    const char *params[3] = {json_string_value(json_object_get(r->parsed.prompt_ref, "id")), account,
                             json_string_value(json_object_get(r->parsed.prompt_ref, "version"))};
    r->prep_done = done;
    fe_request_db_query(r, FE_SQL_PROMPT_GET, 3, params, "Prompt templates are temporarily unavailable, retry later",
                        fe_prompt_on_loaded);
}
