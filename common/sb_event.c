/* sb_event: constructors and classification of canonical events. */
#include "sb_event.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_utf8.h"

static const char *const sb_event_names[] = {
    [SB_EV_UNKNOWN] = "unknown",
    [SB_EV_ITEM_ADDED] = "item_added",
    [SB_EV_TEXT_DELTA] = "text_delta",
    [SB_EV_ARGS_DELTA] = "args_delta",
    [SB_EV_REASONING_DELTA] = "reasoning_delta",
    [SB_EV_ITEM_DONE] = "item_done",
    [SB_EV_USAGE] = "usage",
    [SB_EV_COMPLETED] = "completed",
    [SB_EV_ERROR] = "error",
    [SB_EV_CHOICE_DONE] = "choice_done",
    [SB_EV_ITEM_PROGRESS] = "item_progress",
    [SB_EV_ANNOTATION_ADDED] = "annotation_added",
    [SB_EV_TOOL_LOG] = "tool_log",
};

enum sb_event_type sb_event_type_of(const json_t *ev)
{
    const char *t = json_string_value(json_object_get(ev, "type"));
    if (!t)
        return SB_EV_UNKNOWN;
    for (size_t i = 1; i < sizeof sb_event_names / sizeof sb_event_names[0]; i++)
        if (!strcmp(t, sb_event_names[i]))
            return (enum sb_event_type)i;
    return SB_EV_UNKNOWN;
}

const char *sb_event_type_name(enum sb_event_type t)
{
    if ((size_t)t >= sizeof sb_event_names / sizeof sb_event_names[0])
        return "unknown";
    return sb_event_names[t];
}

bool sb_event_is_final(const json_t *ev)
{
    enum sb_event_type t = sb_event_type_of(ev);
    return t == SB_EV_COMPLETED || t == SB_EV_ERROR;
}

json_t *sb_event_item_added(int item_index, json_t *item)
{
    return json_pack("{s:s, s:i, s:o}", "type", "item_added", "item_index", item_index, "item", item);
}

json_t *sb_event_text_delta(int item_index, int content_index, const char *delta, size_t len)
{
    return json_pack("{s:s, s:i, s:i, s:s%}", "type", "text_delta", "item_index", item_index, "content_index",
                     content_index, "delta", delta, len);
}

json_t *sb_event_args_delta(int item_index, const char *delta, size_t len)
{
    return json_pack("{s:s, s:i, s:s%}", "type", "args_delta", "item_index", item_index, "delta", delta, len);
}

json_t *sb_event_reasoning_delta(int item_index, const char *delta, size_t len)
{
    return json_pack("{s:s, s:i, s:s%}", "type", "reasoning_delta", "item_index", item_index, "delta", delta, len);
}

json_t *sb_event_item_done(int item_index, json_t *item)
{
    return json_pack("{s:s, s:i, s:o}", "type", "item_done", "item_index", item_index, "item", item);
}

json_t *sb_event_usage(int64_t input_tokens, int64_t output_tokens, int64_t reasoning_tokens)
{
    return json_pack("{s:s, s:I, s:I, s:I}", "type", "usage", "input_tokens", (json_int_t)input_tokens, "output_tokens",
                     (json_int_t)output_tokens, "reasoning_tokens", (json_int_t)reasoning_tokens);
}

json_t *sb_event_completed(const char *status, const char *incomplete_reason, const char *model, int64_t upstream_us)
{
    return json_pack("{s:s, s:s, s:s?, s:s?, s:I}", "type", "completed", "status", status, "incomplete_reason",
                     incomplete_reason, "model", model, "upstream_us", (json_int_t)upstream_us);
}

json_t *sb_event_error(int http_status, const char *kind, const char *code, const char *message)
{
    json_t *ev = json_pack("{s:s, s:i, s:s, s:s?, s:s}", "type", "error", "status", http_status, "kind", kind, "code",
                           code, "message", message ? message : "");
    if (ev || !message)
        return ev;
    /* Not valid UTF-8 (a reason clipped mid-character, upstream bytes):
     * the event still goes out, its message repaired (found by fuzz_strict). */
    char *fixed = sb_xstrdup(message);
    sb_utf8_fix(fixed);
    ev = json_pack("{s:s, s:i, s:s, s:s?, s:s}", "type", "error", "status", http_status, "kind", kind, "code", code,
                   "message", fixed);
    free(fixed);
    return ev;
}

json_t *sb_event_choice_done(int choice, const char *status, const char *incomplete_reason)
{
    return json_pack("{s:s, s:i, s:s, s:s?}", "type", "choice_done", "choice", choice, "status", status,
                     "incomplete_reason", incomplete_reason);
}

json_t *sb_event_item_progress(int item_index, const char *status)
{
    return json_pack("{s:s, s:i, s:s}", "type", "item_progress", "item_index", item_index, "status", status);
}

json_t *sb_event_annotation_added(int item_index, int content_index, int annotation_index, json_t *annotation)
{
    return json_pack("{s:s, s:i, s:i, s:i, s:o}", "type", "annotation_added", "item_index", item_index, "content_index",
                     content_index, "annotation_index", annotation_index, "annotation", annotation);
}

json_t *sb_event_tool_log(json_t *fields)
{
    if (!json_is_object(fields)) {
        json_decref(fields);
        return NULL;
    }
    json_object_set_new(fields, "type", json_string("tool_log"));
    return fields;
}

int sb_event_choice(const json_t *ev)
{
    const json_t *c = json_object_get(ev, "choice");
    json_int_t k = json_is_integer(c) ? json_integer_value(c) : 0;
    return k > 0 && k <= INT_MAX ? (int)k : 0;
}

void sb_event_set_choice(json_t *ev, int choice)
{
    json_object_set_new(ev, "choice", json_integer(choice));
}
