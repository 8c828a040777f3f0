/* fe_collect: canonical events -> result. */
#include "fe_collect.h"

#include <stdio.h>
#include <string.h>

#include "sb_event.h"

void fe_collect_init(fe_collect_t *c)
{
    memset(c, 0, sizeof *c);
    c->items = json_array();
    c->upstream_ms = -1;
}

void fe_collect_free(fe_collect_t *c)
{
    json_decref(c->items);
    c->items = NULL;
}

static int64_t fe_collect_int(const json_t *ev, const char *k)
{
    json_t *v = json_object_get(ev, k);
    return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : 0;
}

bool fe_collect_event(fe_collect_t *c, const json_t *ev)
{
    if (c->done)
        return true;
    switch (sb_event_type_of(ev)) {
    case SB_EV_ITEM_DONE: {
        json_t *item = json_object_get(ev, "item");
        json_t *idx = json_object_get(ev, "item_index");
        if (!json_is_object(item))
            break;
        size_t i = json_is_integer(idx) && json_integer_value(idx) >= 0 ? (size_t)json_integer_value(idx)
                                                                        : json_array_size(c->items);
        if (i > 4096)
            break; /* hostile index; items are dense and few */
        while (json_array_size(c->items) <= i)
            json_array_append_new(c->items, json_null());
        json_array_set(c->items, i, item);
        break;
    }
    case SB_EV_USAGE:
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
        json_t *u = json_object_get(ev, "upstream_ms");
        c->upstream_ms = json_is_integer(u) ? (int64_t)json_integer_value(u) : -1;
        c->done = true;
        break;
    }
    case SB_EV_ERROR:
        fe_error_from_event(&c->error, ev);
        c->failed = true;
        c->done = true;
        break;
    default:
        break; /* deltas and item_added matter only to streaming renderers */
    }
    if (c->done) {
        /* Drop holes left by items that never completed. */
        for (size_t i = json_array_size(c->items); i-- > 0;)
            if (json_is_null(json_array_get(c->items, i)))
                json_array_remove(c->items, i);
    }
    return c->done;
}
