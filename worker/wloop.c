/*
 * wloop: the tool loop of one job (docs/tools.md). A job whose request has
 * built-in tools the gateway runs (web search, remote MCP), or whose input
 * holds such tools' items, makes its model calls here instead of wjob.c's
 * one call:
 *
 *   PREPARE  the MCP servers without a list in the input are listed, and
 *            the calls the client approved are run, all concurrently;
 *   MODEL    one model call (wcall.c) with the job's input, the model's
 *            own output so far and the tool results, and the reserved
 *            functions offered for the built-in tools; its events are
 *            translated as they come: calls of reserved functions become
 *            web_search_call / mcp_call / mcp_approval_request items (each
 *            call starts running as soon as the model has finished writing
 *            it), everything else passes on renumbered, usage is summed;
 *   TOOLS    the model call is over and its tool calls are still running;
 *   DONE     the job has its final event.
 * After a model call (and its tools), the loop calls the model again if it
 * called a built-in tool, and ends otherwise, or when it asked for an
 * approval, called a client function, was cut short, or a limit was hit.
 * The last model call the iteration limit allows, and every call after
 * max_tool_calls is reached, is offered no built-in tool, so the loop ends
 * with the model's answer.
 *
 * The job's events are this file's: item indexes count every item of the
 * response, one usage and one final event close it. The job's file ends the
 * job through the wloop ops it hands in, so nothing here calls up.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_id.h"
#include "sb_log.h"
#include "sb_time.h"
#include "wloop_internal.h"

static const char *const sb_wloop_state_names[] = {"prepare", "model", "tools", "done"};

static void sb_wloop_set_state(sb_wloop_t *l, enum sb_wloop_state state)
{
    sb_wjob_log(l->j, SB_LOG_DEBUG, "loop %s -> %s", sb_wloop_state_names[l->state], sb_wloop_state_names[state]);
    l->state = state;
}

/* Ends the job: the summed usage, then `final` (stolen; a completed event
 * when NULL). */
static void sb_wloop_end(sb_wloop_t *l, json_t *final)
{
    if (l->state == SB_WLOOP_DONE) {
        json_decref(final);
        return;
    }
    sb_wloop_set_state(l, SB_WLOOP_DONE);
    if (!final || sb_event_type_of(final) == SB_EV_COMPLETED) {
        if (l->have_usage)
            json_array_append_new(l->j->events, sb_event_usage(l->usage_in, l->usage_out, l->usage_reasoning));
        if (!final)
            final = sb_event_completed(l->incomplete ? "incomplete" : "completed", l->incomplete_reason,
                                       json_string_value(json_object_get(l->j->job, "model")), l->upstream_us);
        else
            json_object_set_new(final, "upstream_us", json_integer(l->upstream_us));
    }
    l->ops->finish(l->j, final);
}

/*
 * The model's view and the next call.
 */

/* Builds and starts the next model call. */
static void sb_wloop_call_model(sb_wloop_t *l)
{
    sb_wjob_t *j = l->j;
    sb_worker_t *w = j->w;
    bool builtins = l->iterations + 1 < w->tool_max_iterations && !sb_wloop_calls_spent(l);
    l->iterations++;
    l->iter_builtin = false;
    l->iter_calls = 0;
    /* The request the model sees: the input (rewritten), its own output so
     * far and the tool results, and the tools it may call now. */
    json_t *request = json_deep_copy(sb_job_request(j->job));
    json_t *input = json_deep_copy(l->plan->input);
    json_array_extend(input, l->view);
    json_object_set_new(request, "input", input);
    json_t *tools = sb_tool_plan_offer(l->plan, builtins);
    if (json_array_size(tools) > 0) {
        json_object_set_new(request, "tools", tools);
        if (l->iterations == 1 && l->plan->forced)
            json_object_set(request, "tool_choice", l->plan->forced);
        else if (l->iterations > 1 && (l->plan->forced || json_is_string(json_object_get(request, "tool_choice"))))
            json_object_set_new(request, "tool_choice", json_string("auto"));
    } else {
        json_decref(tools);
        json_object_del(request, "tools");
        json_object_del(request, "tool_choice");
        json_object_del(request, "parallel_tool_calls");
    }
    json_object_del(request, "max_tool_calls"); /* the loop's to count; no upstream runs these tools */
    json_decref(l->model_job);
    l->model_job = json_copy(j->job);
    json_object_set_new(l->model_job, "request", request);
    j->call_job = l->model_job;

    json_t *err = NULL;
    sb_provider_request_clear(&j->req);
    if (j->provider->build_request(j->call_job, &j->req, &err) < 0) {
        if (!err)
            err = sb_event_error(500, SB_ERR_SERVER, NULL, "could not build the upstream request");
        sb_wloop_end(l, err);
        return;
    }
    sb_provider_request_add_trace(&j->req, j->job);
    sb_wcall_t *c = &j->calls[0];
    sb_wcall_clear(c);
    memset(c, 0, sizeof *c);
    c->j = j;
    c->ops = &sb_wloop_call_ops;
    c->choice = -1;
    c->attempt = 1;
    c->events = json_array();
    sb_wloop_slots_reset(l);
    l->iter_events_base = json_array_size(j->events);
    l->iter_index_base = l->next_index;
    json_decref(l->iter);
    l->iter = json_array();
    sb_wloop_set_state(l, SB_WLOOP_MODEL);
    if (sb_wcall_start(c, &err) < 0) {
        if (l->iterations > 1 && sb_event_type_of(err) == SB_EV_ERROR &&
            json_integer_value(json_object_get(err, "status")) == 504) {
            json_decref(err);
            err = sb_event_error(504, SB_ERR_TIMEOUT, NULL,
                                 "timeout: the response's deadline passed during its built-in tool calls");
        }
        sb_wloop_end(l, err);
        return;
    }
    sb_retry_budget_deposit(w->budget, j->route_key);
    sb_wjob_log(j, SB_LOG_DEBUG, "model call %d%s", l->iterations, builtins ? "" : ", no built-in tools offered");
}

/* After a model call and its tools: the next call, or the end. */
static void sb_wloop_decide(sb_wloop_t *l)
{
    if (l->pending > 0)
        return;
    if (l->state == SB_WLOOP_PREPARE) {
        sb_wloop_call_model(l);
        return;
    }
    if (l->state != SB_WLOOP_TOOLS)
        return;
    /* The tool results of this call, in the order the model made the calls. */
    for (sb_wexec_t *e = l->execs; e; e = e->next)
        if (e->iteration == l->iterations && e->call && e->output_item)
            json_array_append(l->view, e->call);
    for (sb_wexec_t *e = l->execs; e; e = e->next)
        if (e->iteration == l->iterations && e->call && e->output_item)
            json_array_append(l->view, e->output_item);
    if (l->stop || !l->iter_builtin)
        sb_wloop_end(l, NULL);
    else
        sb_wloop_call_model(l);
}

static void sb_wloop_on_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    sb_wloop_t *l = arg;
    sb_wloop_start_due(l);
    if (l->state != SB_WLOOP_DONE)
        sb_wloop_decide(l);
}

/*
 * What the model call tells the loop (sb_wcall_ops_t).
 */

static void sb_wloop_on_call_events(sb_wcall_t *c)
{
    sb_wloop_t *l = c->j->loop;
    size_t n = 0;
    json_t *ev;
    while (n < json_array_size(c->events) && !sb_event_is_final(ev = json_array_get(c->events, n))) {
        n++;
        sb_wloop_translate(l, ev);
    }
    if (n == json_array_size(c->events))
        json_array_clear(c->events);
    else
        for (; n > 0; n--)
            json_array_remove(c->events, 0);
}

/* A strict job's last model call: its output checked; 1 when a retry
 * started, 0 when valid, -1 with *err when not. */
static int sb_wloop_strict(sb_wloop_t *l, sb_wcall_t *c, const json_t *final, json_t **err)
{
    sb_wjob_t *j = l->j;
    char what[160], why[512];
    if (sb_strict_check(j->strict, l->iter, final, what, sizeof what, why, sizeof why) == 0)
        return 0;
    if (c->attempt < 2 && !j->stream) {
        sb_wjob_log(j, SB_LOG_WARN, "model output did not match %s on attempt %d; retrying", what, c->attempt);
        /* Nothing of this call has left: it goes, and its items' numbers. */
        while (json_array_size(j->events) > l->iter_events_base)
            json_array_remove(j->events, json_array_size(j->events) - 1);
        json_array_clear(l->iter);
        l->next_index = l->iter_index_base;
        sb_wloop_slots_reset(l);
        c->attempt++;
        json_array_clear(c->events);
        return sb_wcall_start(c, err) == 0 ? 1 : -1;
    }
    sb_wjob_log(j, SB_LOG_WARN, "model output did not match %s after %d attempts", what, c->attempt);
    char *msg = sb_xasprintf("The model's output did not match %s after %d attempts: %s", what, c->attempt, why);
    *err = sb_event_error(502, SB_ERR_UPSTREAM, "invalid_structured_output", msg);
    free(msg);
    return -1;
}

static void sb_wloop_on_call_final(sb_wcall_t *c)
{
    sb_wloop_t *l = c->j->loop;
    if (c->idle)
        event_del(c->idle);
    sb_wloop_on_call_events(c);
    json_t *final = sb_wcall_take_final(c);
    if (sb_event_type_of(final) != SB_EV_COMPLETED) {
        sb_wloop_end(l, final);
        return;
    }
    l->upstream_us += json_integer_value(json_object_get(final, "upstream_us"));
    const char *status = json_string_value(json_object_get(final, "status"));
    if (status && !strcmp(status, "incomplete")) {
        /* Cut short (a token limit, a filter): the response ends so. */
        const char *r = json_string_value(json_object_get(final, "incomplete_reason"));
        l->incomplete = true;
        l->incomplete_reason = r && !strcmp(r, "max_output_tokens") ? "max_output_tokens"
                               : r && !strcmp(r, "content_filter")  ? "content_filter"
                                                                    : NULL;
        l->stop = true;
    }
    if (l->j->strict && !l->iter_builtin) {
        json_t *err = NULL;
        int rc = sb_wloop_strict(l, c, final, &err);
        if (rc != 0) {
            json_decref(final);
            if (rc < 0)
                sb_wloop_end(l, err);
            return;
        }
    }
    json_decref(final);
    sb_wloop_set_state(l, SB_WLOOP_TOOLS);
    sb_wloop_kick(l);
}

static void sb_wloop_on_call_fail(sb_wcall_t *c, json_t *err)
{
    sb_wloop_end(c->j->loop, err);
}

const sb_wcall_ops_t sb_wloop_call_ops = {
    .on_events = sb_wloop_on_call_events,
    .on_final = sb_wloop_on_call_final,
    .on_fail = sb_wloop_on_call_fail,
};

/*
 * Start and end.
 */

int sb_wloop_start(sb_wjob_t *j, const sb_wloop_ops_t *ops, json_t **err)
{
    sb_tool_plan_t *plan = NULL;
    if (sb_tool_plan_new(j->job, &plan, err) < 0)
        return -EINVAL;
    if (!plan)
        return 1;
    sb_wloop_t *l = sb_xcalloc(1, sizeof *l);
    l->j = j;
    l->ops = ops;
    l->plan = plan;
    l->view = json_array();
    l->sources = json_array();
    l->kick = event_new(j->w->base, -1, 0, sb_wloop_on_kick, l);
    const json_t *max = json_object_get(sb_job_request(j->job), "max_tool_calls");
    l->max_tool_calls = json_is_integer(max) && json_integer_value(max) >= 0 ? json_integer_value(max) : -1;
    l->mcp = sb_xcalloc(plan->n_servers ? plan->n_servers : 1, sizeof *l->mcp);
    j->loop = l;
    j->calls = sb_xcalloc(1, sizeof *j->calls);
    j->n_calls = 1;
    j->calls[0].j = j;
    j->calls_open = 1;
    sb_wloop_set_state(l, SB_WLOOP_PREPARE);
    sb_wloop_prepare(l);
    sb_debug("job %s: tool loop: web search %s, %zu MCP server(s), %zu approval(s)", j->job_id,
             plan->web_search ? "on" : "off", plan->n_servers, plan->n_approvals);
    if (l->pending == 0)
        sb_wloop_kick(l);
    return 0;
}

void sb_wloop_stop(sb_wloop_t *l)
{
    if (!l)
        return;
    if (l->state != SB_WLOOP_DONE)
        sb_wloop_set_state(l, SB_WLOOP_DONE);
    event_del(l->kick);
    for (sb_wexec_t *e = l->execs; e; e = e->next) {
        sb_web_cancel(&e->web);
        sb_wloop_tool_cancel(e);
    }
    sb_wloop_tools_free(l);
    for (size_t k = 0; k < l->plan->n_servers; k++)
        sb_mcp_destroy(&l->mcp[k]);
}

void sb_wloop_free(sb_wloop_t **pl)
{
    if (!pl || !*pl)
        return;
    sb_wloop_t *l = *pl;
    sb_wloop_stop(l);
    while (l->execs) {
        sb_wexec_t *e = l->execs;
        l->execs = e->next;
        sb_wexec_free(e);
    }
    free(l->mcp);
    event_free(l->kick);
    free(l->slots);
    json_decref(l->iter);
    json_decref(l->view);
    json_decref(l->sources);
    json_decref(l->cited_files);
    json_decref(l->model_job);
    sb_tool_plan_destroy(&l->plan);
    free(l);
    *pl = NULL;
}
