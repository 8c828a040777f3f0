/*
 * wloop_step: what every step of the tool loop ends with, shared by the
 * loop's files (wloop_internal.h): events appended and sent, the loop's
 * kick, a step's time, its output capped for the model, its tool_calls row,
 * and its end (item done, output for the model). Calls nothing above it:
 * wloop.c, wloop_exec.c and the data tools' files all call down here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_time.h"
#include "wloop_internal.h"
#include "wmetrics.h"

/* Most bytes of a step's error kept in tool_log. */
#define SB_WLOOP_LOG_ERROR_MAX 300

void sb_wloop_emit(sb_wloop_t *l, json_t *ev)
{
    json_array_append_new(l->j->events, ev);
    if (l->iter)
        json_array_append(l->iter, ev);
    l->ops->flush(l->j);
}

void sb_wloop_kick(sb_wloop_t *l)
{
    event_active(l->kick, EV_TIMEOUT, 0);
}

void sb_wloop_tool_done(sb_wloop_t *l)
{
    l->pending--;
    if (l->pending == 0)
        sb_wloop_kick(l);
}

/* A tool's time: the worker's limit, cut to the job's deadline. */
int64_t sb_wloop_timeout(const sb_wloop_t *l)
{
    int64_t t = l->j->w->tool_timeout_ms;
    if (l->j->deadline_ms > 0) {
        int64_t left = l->j->deadline_ms - sb_now_ms();
        if (left < t)
            t = left;
    }
    return t > 1 ? t : 1;
}

char *sb_wloop_cap(const sb_wloop_t *l, const char *text)
{
    size_t max = l->j->w->tool_output_max, len = strlen(text);
    if (len <= max)
        return sb_xstrdup(text);
    size_t cut = max;
    while (cut > 0 && ((unsigned char)text[cut] & 0xC0) == 0x80)
        cut--;
    return sb_xasprintf("%.*s\n[output truncated: %zu of %zu bytes shown]", (int)cut, text, cut, len);
}

void sb_wloop_log(sb_wloop_t *l, sb_wexec_t *e, const char *kind, const char *name, const char *outcome,
                  size_t bytes_in, const char *error)
{
    const char *server = e->log_server ? e->log_server
                         : e->kind == SB_TOOL_MCP || e->list
                             ? l->plan->servers[e->server].label
                             : json_string_value(json_object_get(
                                   json_object_get(json_object_get(l->j->job, "tools_config"), "web_search"), "kind"));
    char err[SB_WLOOP_LOG_ERROR_MAX + 1] = "";
    if (error)
        snprintf(err, sizeof err, "%s", error);
    json_t *f = json_pack("{s:s, s:s?, s:s?, s:O?, s:I, s:s, s:I, s:I, s:s?}", "kind", kind, "server", server, "name",
                          name, "item_id", json_object_get(e->item, "id"), "duration_ms",
                          (json_int_t)(sb_mono_ms() - e->started_ms), "outcome", outcome, "bytes_in",
                          (json_int_t)bytes_in, "bytes_out", (json_int_t)e->bytes_out, "error", error ? err : NULL);
    sb_wmetrics_tool_call(kind, outcome);
    if (f)
        sb_wloop_emit(l, sb_event_tool_log(f));
}

void sb_wexec_finish(sb_wexec_t *e, const char *model_text)
{
    sb_wloop_t *l = e->l;
    const char *call_id = json_string_value(json_object_get(e->call, "call_id"));
    if (!call_id)
        call_id = json_string_value(json_object_get(e->item, "id"));
    char *capped = sb_wloop_cap(l, model_text ? model_text : "");
    if (call_id)
        e->output_item =
            json_pack("{s:s, s:s, s:s}", "type", "function_call_output", "call_id", call_id, "output", capped);
    if (e->approval_out)
        json_object_set_new(e->approval_out, "output", json_string(capped));
    free(capped);
    if (e->item && e->index >= 0)
        sb_wloop_emit(l, sb_event_item_done(e->index, json_deep_copy(e->item)));
    if (e->running) {
        e->running = false;
        sb_wloop_tool_done(l);
    }
}
