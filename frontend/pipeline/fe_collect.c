/* fe_collect: canonical events -> result, and tool_log events -> tool_calls rows. */
#include "fe_collect.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_event.h"
#include "sb_log.h"
#include "sb_scrub.h"
#include "sb_time.h"

void fe_collect_init(fe_collect_t *c)
{
    memset(c, 0, sizeof *c);
    c->items = json_array();
    c->more = json_array();
    c->tool_calls = json_array();
    c->upstream_us = -1;
}

void fe_collect_free(fe_collect_t *c)
{
    json_decref(c->items);
    json_decref(c->more);
    json_decref(c->tool_calls);
    c->items = NULL;
    c->more = NULL;
    c->tool_calls = NULL;
}

void fe_collect_restart(fe_collect_t *c, const char *model)
{
    json_t *calls = c->tool_calls;
    c->tool_calls = NULL;
    size_t i;
    json_t *row;
    json_array_foreach (calls, i, row)
        if (model && !json_object_get(row, "model"))
            json_object_set_new(row, "model", json_string(model));
    fe_collect_free(c);
    fe_collect_init(c);
    json_decref(c->tool_calls);
    c->tool_calls = calls ? calls : json_array();
}

void fe_collect_tool_calls_stored(fe_collect_t *c, const char *response_id)
{
    size_t i;
    json_t *row;
    json_array_foreach (c->tool_calls, i, row)
        json_object_set_new(row, "response_id", json_string(response_id));
}

/* ---- tool_log -> a tool_calls row --------------------------------------------- */

/* Longest server label, tool name or item id kept, in bytes. */
#define FE_COLLECT_TOOL_NAME_MAX 256

static const char *const fe_collect_tool_kinds[] = {"mcp_list_tools", "mcp_call",         "web_search",
                                                    "open_page",      "find_in_page",     "code_interpreter",
                                                    "file_search",    "image_generation", NULL};
static const char *const fe_collect_tool_outcomes[] = {"ok", "error", "timeout", "denied", "blocked", NULL};

static const char *fe_collect_one_of(const json_t *v, const char *const *names)
{
    const char *s = json_string_value(v);
    for (size_t i = 0; s && names[i]; i++)
        if (!strcmp(s, names[i]))
            return names[i];
    return NULL;
}

/* The first max_chars characters of s (UTF-8: jansson's strings are valid),
 * never cutting one in two. */
static json_t *fe_collect_cut(const char *s, size_t max_chars)
{
    size_t n = 0, chars = 0;
    while (s[n] && chars < max_chars) {
        n++;
        while (((unsigned char)s[n] & 0xC0) == 0x80)
            n++;
        chars++;
    }
    return json_stringn(s, n);
}

static void fe_collect_set_text(json_t *row, const char *k, const json_t *v, size_t max_chars)
{
    const char *s = json_string_value(v);
    if (s && *s)
        json_object_set_new(row, k, fe_collect_cut(s, max_chars));
}

static void fe_collect_set_count(json_t *row, const char *k, const json_t *v, json_int_t max)
{
    if (!json_is_number(v))
        return;
    double d = json_number_value(v);
    json_int_t n = d <= 0 ? 0 : d >= (double)max ? max : (json_int_t)d;
    json_object_set_new(row, k, json_integer(n));
}

json_t *fe_collect_tool_row(const json_t *ev, int64_t ts_ms)
{
    const char *kind = fe_collect_one_of(json_object_get(ev, "kind"), fe_collect_tool_kinds);
    const char *outcome = fe_collect_one_of(json_object_get(ev, "outcome"), fe_collect_tool_outcomes);
    if (!kind || !outcome)
        return NULL;
    json_t *row = json_pack("{s:I, s:s, s:s}", "ts_ms", (json_int_t)ts_ms, "kind", kind, "outcome", outcome);
    fe_collect_set_text(row, "server", json_object_get(ev, "server"), FE_COLLECT_TOOL_NAME_MAX);
    fe_collect_set_text(row, "name", json_object_get(ev, "name"), FE_COLLECT_TOOL_NAME_MAX);
    fe_collect_set_text(row, "item_id", json_object_get(ev, "item_id"), FE_COLLECT_TOOL_NAME_MAX);
    fe_collect_set_count(row, "duration_ms", json_object_get(ev, "duration_ms"), INT_MAX);
    /* 2^53: a double holds it exactly, and no tool moves that much. */
    fe_collect_set_count(row, "bytes_in", json_object_get(ev, "bytes_in"), (json_int_t)1 << 53);
    fe_collect_set_count(row, "bytes_out", json_object_get(ev, "bytes_out"), (json_int_t)1 << 53);
    const char *error = json_string_value(json_object_get(ev, "error"));
    if (error && *error) {
        /* Redacted first, then cut: a key cut in two would no longer look
         * like one. The scrub reads at most a few kilobytes of it. */
        json_t *head = fe_collect_cut(error, 4 * FE_COLLECT_TOOL_ERROR_MAX);
        char *clean = sb_scrub_text(NULL, json_string_value(head), NULL);
        json_decref(head);
        json_object_set_new(row, "error", fe_collect_cut(clean, FE_COLLECT_TOOL_ERROR_MAX));
        free(clean);
    }
    return row;
}

bool fe_collect_renders(const json_t *ev)
{
    return sb_event_type_of(ev) != SB_EV_TOOL_LOG;
}

static void fe_collect_tool_log(fe_collect_t *c, const json_t *ev)
{
    json_t *row = fe_collect_tool_row(ev, sb_now_ms());
    if (!row) {
        sb_warn("tool_log event with an unknown kind or outcome: no tool_calls row");
        return;
    }
    if (json_array_size(c->tool_calls) >= FE_COLLECT_TOOL_CALLS_MAX) {
        json_decref(row);
        return; /* a worker gone wrong; the request's own row still lands */
    }
    json_array_append_new(c->tool_calls, row);
}

static int64_t fe_collect_int(const json_t *ev, const char *k)
{
    json_t *v = json_object_get(ev, k);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : 0;
}

/* Most choices a result holds (Chat Completions n is at most 16 here). */
#define FE_COLLECT_MAX_CHOICES 128

/* The state of choice k >= 1, created on first use; NULL for a hostile index. */
static json_t *fe_collect_more(fe_collect_t *c, const json_t *ev)
{
    json_t *k = json_object_get(ev, "choice");
    json_int_t i = json_is_integer(k) ? json_integer_value(k) : 0;
    if (i <= 0 || i >= FE_COLLECT_MAX_CHOICES)
        return NULL;
    while (json_array_size(c->more) < (size_t)i)
        json_array_append_new(c->more, json_pack("{s:[], s:s, s:s}", "items", "status", "completed", "reason", ""));
    return json_array_get(c->more, (size_t)i - 1);
}

/* Drops holes left by items that never completed. */
static void fe_collect_compact(json_t *items)
{
    for (size_t i = json_array_size(items); i-- > 0;)
        if (json_is_null(json_array_get(items, i)))
            json_array_remove(items, i);
}

const json_t *fe_collect_choice_items(const fe_collect_t *c, int choice)
{
    if (choice == 0)
        return c->items;
    json_t *st = json_array_get(c->more, (size_t)choice - 1);
    static json_t *empty;
    if (!empty)
        empty = json_array(); /* one shared, never freed, never modified */
    return st ? json_object_get(st, "items") : empty;
}

const char *fe_collect_choice_status(const fe_collect_t *c, int choice)
{
    if (choice == 0)
        return c->choice0_status[0] ? c->choice0_status : c->status;
    const char *s = json_string_value(json_object_get(json_array_get(c->more, (size_t)choice - 1), "status"));
    return s ? s : "completed";
}

const char *fe_collect_choice_reason(const fe_collect_t *c, int choice)
{
    if (choice == 0)
        return c->choice0_status[0] ? c->choice0_reason : c->incomplete_reason;
    const char *s = json_string_value(json_object_get(json_array_get(c->more, (size_t)choice - 1), "reason"));
    return s ? s : "";
}

bool fe_collect_event(fe_collect_t *c, const json_t *ev)
{
    if (c->done)
        return true;
    switch (sb_event_type_of(ev)) {
    case SB_EV_ITEM_DONE: {
        json_t *item = json_object_get(ev, "item");
        json_t *idx = json_object_get(ev, "item_index");
        json_t *more = fe_collect_more(c, ev);
        json_t *items = more ? json_object_get(more, "items") : c->items;
        if (!json_is_object(item) || (!more && json_integer_value(json_object_get(ev, "choice")) != 0))
            break;
        size_t i = json_is_integer(idx) && json_integer_value(idx) >= 0 ? (size_t)json_integer_value(idx)
                                                                        : json_array_size(items);
        if (i > 4096)
            break; /* hostile index; items are dense and few */
        while (json_array_size(items) <= i)
            json_array_append_new(items, json_null());
        json_array_set(items, i, item);
        break;
    }
    case SB_EV_CHOICE_DONE: {
        const char *st = json_string_value(json_object_get(ev, "status"));
        const char *why = json_string_value(json_object_get(ev, "incomplete_reason"));
        st = st && !strcmp(st, "incomplete") ? "incomplete" : "completed";
        json_t *more = fe_collect_more(c, ev);
        if (more) {
            json_object_set_new(more, "status", json_string(st));
            json_object_set_new(more, "reason", json_string(why ? why : ""));
        } else if (json_integer_value(json_object_get(ev, "choice")) == 0) {
            snprintf(c->choice0_status, sizeof c->choice0_status, "%s", st);
            snprintf(c->choice0_reason, sizeof c->choice0_reason, "%s", why ? why : "");
        }
        break;
    }
    case SB_EV_TEXT_DELTA:
    case SB_EV_ARGS_DELTA:
    case SB_EV_REASONING_DELTA: {
        const json_t *d = json_object_get(ev, "delta");
        if (json_is_string(d))
            fe_tokens_feed(&c->streamed, json_string_value(d), json_string_length(d));
        break;
    }
    case SB_EV_USAGE:
        c->usage_seen = true;
        c->input_tokens = fe_collect_int(ev, "input_tokens");
        c->output_tokens = fe_collect_int(ev, "output_tokens");
        c->reasoning_tokens = fe_collect_int(ev, "reasoning_tokens");
        break;
    case SB_EV_COMPLETED: {
        const char *st = json_string_value(json_object_get(ev, "status"));
        snprintf(c->status, sizeof c->status, "%s", st && !strcmp(st, "incomplete") ? "incomplete" : "completed");
        const char *why = json_string_value(json_object_get(ev, "incomplete_reason"));
        snprintf(c->incomplete_reason, sizeof c->incomplete_reason, "%s", why ? why : "");
        const char *m = json_string_value(json_object_get(ev, "model"));
        snprintf(c->model, sizeof c->model, "%s", m ? m : "");
        json_t *u = json_object_get(ev, "upstream_us");
        c->upstream_us = json_is_integer(u) ? (int64_t)json_integer_value(u) : -1;
        c->done = true;
        break;
    }
    case SB_EV_ERROR:
        fe_error_from_event(&c->error, ev);
        c->failed = true;
        c->done = true;
        break;
    case SB_EV_TOOL_LOG:
        fe_collect_tool_log(c, ev);
        break;
    default:
        break; /* deltas and item_added matter only to streaming renderers */
    }
    if (c->done) {
        fe_collect_compact(c->items);
        size_t k;
        json_t *more;
        json_array_foreach (c->more, k, more)
            fe_collect_compact(json_object_get(more, "items"));
    }
    return c->done;
}
