/*
 * wloop_exec: the tool loop's steps (wloop_internal.h): the model's events
 * translated as they come (a call of a reserved function becomes a built-in
 * item and starts running as soon as its arguments are complete; every
 * other item is renumbered into the response), and the built-in steps run:
 * MCP listings, MCP calls, web searches and page opens. Each step ends with
 * its item's item_done and one tool_log event (the frontend's tool_calls
 * row); what goes back to the model is its function_call_output. What
 * every step ends with (emit, kick, the log row, the end) is wloop_step.c's,
 * which the loop, these steps and the data tools' steps all call down to.
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

/* Most items one model call may make (a bound against a runaway upstream). */
#define SB_WLOOP_MAX_ITEMS 4096
/* Most bytes of one MCP answer or fetched page read. */
#define SB_WLOOP_ANSWER_MIN_BYTES (1024 * 1024)
/* Most built-in calls one model turn runs: the rest are told they were not
 * run (so one request cannot make a worker open hundreds of fetches at once). */
#define SB_WLOOP_MAX_TURN_CALLS 32

void sb_wexec_free(sb_wexec_t *e)
{
    sb_web_cancel(&e->web);
    sb_wloop_tool_cancel(e);
    json_decref(e->args);
    json_decref(e->item);
    json_decref(e->call);
    json_decref(e->output_item);
    free(e);
}

bool sb_wloop_calls_spent(const sb_wloop_t *l)
{
    return l->max_tool_calls >= 0 && l->tool_calls >= l->max_tool_calls;
}

void sb_wloop_slots_reset(sb_wloop_t *l)
{
    free(l->slots);
    l->slots = NULL;
    l->n_slots = 0;
}

static sb_wexec_t *sb_wexec_new(sb_wloop_t *l, enum sb_tool_kind kind)
{
    sb_wexec_t *e = sb_xcalloc(1, sizeof *e);
    e->l = l;
    e->kind = kind;
    e->index = -1;
    e->iteration = l->iterations;
    e->started_ms = sb_mono_ms();
    if (l->execs_tail)
        l->execs_tail->next = e;
    else
        l->execs = e;
    l->execs_tail = e;
    return e;
}

static size_t sb_wloop_answer_max(const sb_wloop_t *l)
{
    size_t m = l->j->w->tool_output_max * 4;
    return m > SB_WLOOP_ANSWER_MIN_BYTES ? m : SB_WLOOP_ANSWER_MIN_BYTES;
}

static sb_mcp_t *sb_wloop_mcp(sb_wloop_t *l, size_t k, char *why, size_t why_len)
{
    if (l->mcp[k])
        return l->mcp[k];
    const json_t *tool = l->plan->servers[k].tool;
    sb_worker_t *w = l->j->w;
    sb_mcp_cfg_t cfg = {
        .server_url = json_string_value(json_object_get(tool, "server_url")),
        .headers = json_object_get(tool, "headers"),
        .authorization = json_string_value(json_object_get(tool, "authorization")),
        .guard = w->guard,
        .timeout_ms = sb_wloop_timeout(l),
        .connect_timeout_ms = w->connect_timeout_ms,
        .max_bytes = sb_wloop_answer_max(l),
    };
    l->mcp[k] = sb_mcp_new(w->upstream, &cfg, why, why_len);
    return l->mcp[k];
}

/*
 * MCP.
 */

static void sb_wloop_on_list(void *arg, json_t *tools, const char *error)
{
    sb_wexec_t *e = arg;
    sb_wloop_t *l = e->l;
    sb_tool_server_t *s = &l->plan->servers[e->server];
    if (!error && tools) {
        json_decref(s->tools);
        s->tools = json_incref(tools);
        s->listed = true;
        json_object_set_new(e->item, "tools", sb_tool_allowed(s->tool, tools));
    } else {
        json_object_set_new(e->item, "error", json_string(error ? error : "the server listed no tools"));
    }
    json_decref(tools);
    sb_wloop_log(l, e, "mcp_list_tools", NULL, sb_mcp_error_outcome(error), 0, error);
    sb_wexec_finish(e, NULL);
}

static void sb_wloop_on_mcp_call(void *arg, json_t *output, bool is_error, const char *error, size_t bytes_in)
{
    sb_wexec_t *e = arg;
    sb_wloop_t *l = e->l;
    char *text = NULL, *shown = NULL;
    if (error) {
        text = sb_xasprintf("Error: %s", error);
        json_object_set_new(e->item, "error", json_string(error));
        json_object_set_new(e->item, "status", json_string("failed"));
    } else {
        shown = sb_wloop_cap(l, json_is_string(output) ? json_string_value(output) : "");
        text = is_error ? sb_xasprintf("Error: %s", shown) : sb_xstrdup(shown);
        json_object_set_new(e->item, is_error ? "error" : "output", json_string(shown));
        json_object_set_new(e->item, "status", json_string(is_error ? "failed" : "completed"));
    }
    json_decref(output);
    sb_wloop_log(l, e, "mcp_call", e->tool,
                 error      ? sb_mcp_error_outcome(error)
                 : is_error ? "error"
                            : "ok",
                 bytes_in,
                 error      ? error
                 : is_error ? "the tool reported an error"
                            : NULL);
    sb_wexec_finish(e, text);
    free(text);
    free(shown);
}

/* Runs an MCP call with args (an object, borrowed). */
static void sb_wexec_mcp(sb_wexec_t *e, const json_t *args)
{
    sb_wloop_t *l = e->l;
    char why[256] = "";
    sb_mcp_t *m = sb_wloop_mcp(l, e->server, why, sizeof why);
    if (!e->running) { /* an approved call from the input starts at once */
        e->running = true;
        l->pending++;
    }
    if (!m || sb_mcp_call(m, e->tool, args, sb_wloop_on_mcp_call, e) < 0)
        sb_wloop_on_mcp_call(e, NULL, false, *why ? why : "the MCP call could not be started", 0);
}

/*
 * Web search and pages.
 */

static void sb_wloop_on_search(void *arg, json_t *sources, char *text, const char *error, size_t bytes_in)
{
    sb_wexec_t *e = arg;
    sb_wloop_t *l = e->l;
    e->web = NULL; /* the op frees itself */
    json_t *action = json_object_get(e->item, "action");
    json_object_set_new(action, "sources", sources ? json_incref(sources) : json_array());
    json_array_extend(l->sources, sources ? sources : json_array());
    json_object_set_new(e->item, "status", json_string(error ? "failed" : "completed"));
    char *out = error ? sb_xasprintf("Error: the web search failed: %s", error) : sb_wloop_cap(l, text ? text : "");
    json_object_set_new(e->item, "sb_output", json_string(out));
    sb_wloop_log(l, e, "web_search", "web_search", sb_web_outcome(error), bytes_in, error);
    json_decref(sources);
    free(text);
    sb_wexec_finish(e, out);
    free(out);
}

static void sb_wloop_on_page(void *arg, char *text, char *title, const char *error, size_t bytes_in)
{
    sb_wexec_t *e = arg;
    sb_wloop_t *l = e->l;
    e->web = NULL;
    json_t *action = json_object_get(e->item, "action");
    const char *url = json_string_value(json_object_get(action, "url"));
    if (!error && url)
        json_array_append_new(l->sources,
                              json_pack("{s:s, s:s, s:s}", "type", "url", "url", url, "title", title ? title : url));
    json_object_set_new(e->item, "status", json_string(error ? "failed" : "completed"));
    char *out = error ? sb_xasprintf("Error: the page could not be read: %s", error)
                      : sb_xasprintf("%s%s%s", title ? title : "", title ? "\n\n" : "", text ? text : "");
    char *capped = sb_wloop_cap(l, out);
    json_object_set_new(e->item, "sb_output", json_string(capped));
    bool find = e->kind == SB_TOOL_FIND_IN_PAGE;
    sb_wloop_log(l, e, find ? "find_in_page" : "open_page", NULL, sb_web_outcome(error), bytes_in, error);
    free(text);
    free(title);
    sb_wexec_finish(e, capped);
    free(capped);
    free(out);
}

static void sb_wexec_web(sb_wexec_t *e, const json_t *args)
{
    sb_wloop_t *l = e->l;
    sb_worker_t *w = l->j->w;
    sb_web_cfg_t cfg = {
        .backend = json_object_get(json_object_get(l->j->job, "tools_config"), "web_search"),
        .tool = l->plan->web_search,
        .guard = w->guard,
        .timeout_ms = sb_wloop_timeout(l),
        .connect_timeout_ms = w->connect_timeout_ms,
        .max_bytes = sb_wloop_answer_max(l),
    };
    json_t *action = json_object_get(e->item, "action");
    const char *query = json_string_value(json_object_get(args, "query"));
    const char *url = json_string_value(json_object_get(args, "url"));
    const char *pattern = json_string_value(json_object_get(args, "pattern"));
    char why[256] = "";
    int rc = -EINVAL;
    sb_wloop_emit(l, sb_event_item_progress(e->index, "searching"));
    if (e->kind == SB_TOOL_WEB_SEARCH) {
        json_object_set_new(action, "query", json_string(query ? query : ""));
        if (query && *query)
            rc = sb_web_search(w->upstream, &cfg, query, sb_wloop_on_search, e, &e->web, why, sizeof why);
        else
            snprintf(why, sizeof why, "the query is missing");
        if (rc < 0)
            sb_wloop_on_search(e, NULL, NULL, why, 0);
        return;
    }
    json_object_set_new(action, "url", json_string(url ? url : ""));
    if (e->kind == SB_TOOL_FIND_IN_PAGE)
        json_object_set_new(action, "pattern", json_string(pattern ? pattern : ""));
    if (url && (e->kind == SB_TOOL_OPEN_PAGE || (pattern && *pattern)))
        rc = sb_web_page(w->upstream, &cfg, url, e->kind == SB_TOOL_FIND_IN_PAGE ? pattern : NULL, sb_wloop_on_page, e,
                         &e->web, why, sizeof why);
    else
        snprintf(why, sizeof why, "the arguments are missing");
    if (rc < 0)
        sb_wloop_on_page(e, NULL, NULL, why, 0);
}

/*
 * A reserved call of the model: its item shown when the model starts it,
 * run when its arguments are complete.
 */

static const char *sb_wloop_action(enum sb_tool_kind kind)
{
    return kind == SB_TOOL_OPEN_PAGE ? "open_page" : kind == SB_TOOL_FIND_IN_PAGE ? "find_in_page" : "search";
}

/* The exec of a reserved function call whose item the model started. */
static sb_wexec_t *sb_wloop_reserved(sb_wloop_t *l, const json_t *call)
{
    size_t server = 0;
    const char *tool = NULL;
    enum sb_tool_kind kind =
        sb_tool_plan_resolve(l->plan, json_string_value(json_object_get(call, "name")), &server, &tool);
    sb_wexec_t *e = sb_wexec_new(l, kind);
    e->server = server;
    e->tool = tool;
    l->iter_builtin = true;
    if (kind == SB_TOOL_NONE)
        return e; /* the model is told; nothing is shown */
    if (kind == SB_TOOL_MCP && sb_tool_needs_approval(l->plan, server, tool)) {
        e->approval = true; /* shown whole when its arguments are in */
        l->stop = true;
        return e;
    }
    if (sb_wloop_calls_spent(l) || l->iter_calls >= SB_WLOOP_MAX_TURN_CALLS)
        return e; /* over max_tool_calls or the turn's bound: not run, not shown */
    l->tool_calls++;
    l->iter_calls++;
    char id[SB_ID_MAX];
    e->index = l->next_index++;
    if (kind == SB_TOOL_CODE || kind == SB_TOOL_FILE_SEARCH || kind == SB_TOOL_IMAGE) {
        e->item = sb_wloop_tool_item(l, e);
    } else if (kind == SB_TOOL_MCP) {
        sb_id_new(id, sizeof id, "mcp_", 24);
        e->item = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:n, s:s}", "type", "mcp_call", "id", id, "server_label",
                            l->plan->servers[server].label, "name", tool, "arguments", "", "output", "error", "status",
                            "in_progress");
    } else {
        sb_id_new(id, sizeof id, "ws_", 24);
        e->item = json_pack("{s:s, s:s, s:s, s:{s:s}}", "type", "web_search_call", "id", id, "status", "in_progress",
                            "action", "type", sb_wloop_action(kind));
    }
    json_t *sig = json_object_get(call, "thought_signature");
    if (json_is_string(sig)) /* kept (privately) so a later turn replays the call exactly */
        json_object_set(e->item, "thought_signature", sig);
    sb_wloop_emit(l, sb_event_item_added(e->index, json_deep_copy(e->item)));
    return e;
}

/* The model has written the whole call: run it. */
static void sb_wloop_run(sb_wloop_t *l, sb_wexec_t *e, const json_t *call)
{
    json_decref(e->call);
    e->call = json_deep_copy(call);
    json_object_del(e->call, "status");
    const char *args_text = json_string_value(json_object_get(call, "arguments"));
    if (!args_text)
        args_text = "{}";
    e->bytes_out = strlen(args_text);
    json_t *args = json_loads(args_text, 0, NULL);
    if (!json_is_object(args)) {
        json_decref(args);
        args = json_object();
    }
    if (e->approval) {
        char id[SB_ID_MAX];
        sb_id_new(id, sizeof id, "mcpr_", 24);
        e->index = l->next_index++;
        e->item = json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "mcp_approval_request", "id", id, "server_label",
                            l->plan->servers[e->server].label, "name", e->tool, "arguments", args_text);
        sb_wloop_emit(l, sb_event_item_added(e->index, json_deep_copy(e->item)));
        sb_wloop_emit(l, sb_event_item_done(e->index, json_deep_copy(e->item)));
        json_decref(e->call); /* the response ends here: the call goes back with the approval */
        e->call = NULL;
    } else if (e->kind == SB_TOOL_NONE) {
        char *msg = sb_xasprintf("Error: no tool named '%.64s' is available.",
                                 json_string_value(json_object_get(call, "name")));
        sb_wexec_finish(e, msg);
        free(msg);
    } else if (!e->item) {
        char *msg =
            sb_wloop_calls_spent(l)
                ? sb_xasprintf("Not run: this response has reached its limit of %lld built-in tool calls.",
                               l->max_tool_calls)
                : sb_xasprintf("Not run: at most %d built-in tool calls run in one turn.", SB_WLOOP_MAX_TURN_CALLS);
        sb_wexec_finish(e, msg);
        free(msg);
    } else {
        /* Its I/O starts from the loop's kick: this runs inside the model
         * call's transfer callback. */
        if (e->kind == SB_TOOL_MCP)
            json_object_set_new(e->item, "arguments", json_string(args_text));
        e->args = json_incref(args);
        e->running = true;
        l->pending++;
        sb_wloop_kick(l);
    }
    json_decref(args);
}

void sb_wloop_start_due(sb_wloop_t *l)
{
    for (sb_wexec_t *e = l->execs; e && l->state != SB_WLOOP_DONE; e = e->next) {
        if (!e->args)
            continue;
        json_t *args = e->args;
        e->args = NULL;
        if (e->kind == SB_TOOL_MCP)
            sb_wexec_mcp(e, args);
        else if (e->kind == SB_TOOL_CODE || e->kind == SB_TOOL_FILE_SEARCH || e->kind == SB_TOOL_IMAGE)
            sb_wloop_tool_start(e, args);
        else
            sb_wexec_web(e, args);
        json_decref(args);
    }
}

/* The slot of upstream item u (made on first sight, from its item). */
static sb_wloop_slot_t *sb_wloop_slot(sb_wloop_t *l, const json_t *ev)
{
    json_t *ui = json_object_get(ev, "item_index");
    if (!json_is_integer(ui) || json_integer_value(ui) < 0 || json_integer_value(ui) >= SB_WLOOP_MAX_ITEMS)
        return NULL;
    size_t u = (size_t)json_integer_value(ui);
    if (u >= l->n_slots) {
        size_t n = u + 8;
        l->slots = sb_xrealloc(l->slots, n * sizeof *l->slots);
        for (size_t i = l->n_slots; i < n; i++)
            l->slots[i] = (sb_wloop_slot_t){.index = -2};
        l->n_slots = n;
    }
    sb_wloop_slot_t *s = &l->slots[u];
    if (s->index == -2) {
        const json_t *item = json_object_get(ev, "item");
        const char *type = json_string_value(json_object_get(item, "type"));
        const char *name = json_string_value(json_object_get(item, "name"));
        if (type && !strcmp(type, "function_call") && name && !strncmp(name, SB_TOOL_PREFIX, strlen(SB_TOOL_PREFIX))) {
            s->exec = sb_wloop_reserved(l, item);
            s->index = -1;
        } else {
            s->index = l->next_index++;
        }
    }
    return s;
}

/* A message's url_citation annotations, as events and in the item. */
static void sb_wloop_cite(sb_wloop_t *l, int index, json_t *item)
{
    size_t c;
    json_t *part;
    json_array_foreach (json_object_get(item, "content"), c, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        if (!type || strcmp(type, "output_text") != 0)
            continue;
        json_t *cites = sb_tool_citations(json_string_value(json_object_get(part, "text")), l->sources);
        size_t a;
        json_t *cite;
        json_array_foreach (cites, a, cite)
            sb_wloop_emit(l, sb_event_annotation_added(index, (int)c, (int)a, json_incref(cite)));
        if (json_array_size(cites) > 0)
            json_object_set(part, "annotations", cites);
        json_decref(cites);
    }
}

void sb_wloop_translate(sb_wloop_t *l, json_t *ev)
{
    enum sb_event_type t = sb_event_type_of(ev);
    if (t == SB_EV_USAGE) {
        l->have_usage = true;
        l->usage_in += json_integer_value(json_object_get(ev, "input_tokens"));
        l->usage_out += json_integer_value(json_object_get(ev, "output_tokens"));
        l->usage_reasoning += json_integer_value(json_object_get(ev, "reasoning_tokens"));
        return;
    }
    if (t == SB_EV_CHOICE_DONE)
        return;
    if (t != SB_EV_ITEM_ADDED && t != SB_EV_ITEM_DONE && t != SB_EV_TEXT_DELTA && t != SB_EV_ARGS_DELTA &&
        t != SB_EV_REASONING_DELTA) {
        sb_wloop_emit(l, json_incref(ev));
        return;
    }
    sb_wloop_slot_t *s = sb_wloop_slot(l, ev);
    if (!s)
        return;
    sb_wexec_t *e = s->exec;
    if (e) {
        if (t == SB_EV_ARGS_DELTA && e->kind == SB_TOOL_MCP && e->item && e->index >= 0)
            sb_wloop_emit(l, sb_event_args_delta(e->index, json_string_value(json_object_get(ev, "delta")),
                                                 json_string_length(json_object_get(ev, "delta"))));
        else if (t == SB_EV_ARGS_DELTA && e->kind == SB_TOOL_CODE && e->item && e->index >= 0)
            sb_wloop_tool_args(e, json_string_value(json_object_get(ev, "delta")),
                               json_string_length(json_object_get(ev, "delta")));
        else if (t == SB_EV_ITEM_DONE && !e->call)
            sb_wloop_run(l, e, json_object_get(ev, "item"));
        return;
    }
    json_object_set_new(ev, "item_index", json_integer(s->index));
    if (t == SB_EV_ITEM_DONE) {
        json_t *item = json_object_get(ev, "item");
        const char *type = json_string_value(json_object_get(item, "type"));
        if (type && !strcmp(type, "message")) {
            sb_wloop_cite(l, s->index, item);
            sb_wloop_tools_cite(l, s->index, item);
        }
        if (type && !strcmp(type, "function_call"))
            l->stop = true; /* a client function: the client answers it */
        json_array_append_new(l->view, json_deep_copy(item));
    }
    sb_wloop_emit(l, json_incref(ev));
}

/*
 * PREPARE: listings and approved calls.
 */

static void sb_wloop_list(sb_wloop_t *l, size_t k)
{
    sb_wexec_t *e = sb_wexec_new(l, SB_TOOL_NONE);
    e->list = true;
    e->server = k;
    char id[SB_ID_MAX];
    sb_id_new(id, sizeof id, "mcpl_", 24);
    e->index = l->next_index++;
    e->item = json_pack("{s:s, s:s, s:s, s:[]}", "type", "mcp_list_tools", "id", id, "server_label",
                        l->plan->servers[k].label, "tools");
    sb_wloop_emit(l, sb_event_item_added(e->index, json_deep_copy(e->item)));
    e->running = true;
    l->pending++;
    char why[256] = "";
    sb_mcp_t *m = sb_wloop_mcp(l, k, why, sizeof why);
    if (!m || sb_mcp_list(m, sb_wloop_on_list, e) < 0)
        sb_wloop_on_list(e, NULL, *why ? why : "the listing could not be started");
}

static void sb_wloop_approved(sb_wloop_t *l, const sb_tool_approval_t *a)
{
    const json_t *req = a->request;
    sb_wexec_t *e = sb_wexec_new(l, SB_TOOL_MCP);
    e->server = a->server;
    e->tool = json_string_value(json_object_get(req, "name"));
    e->approval_out = a->output;
    const char *args_text = json_string_value(json_object_get(req, "arguments"));
    if (!args_text)
        args_text = "{}";
    e->bytes_out = strlen(args_text);
    l->tool_calls++;
    char id[SB_ID_MAX];
    sb_id_new(id, sizeof id, "mcp_", 24);
    e->index = l->next_index++;
    e->item = json_pack("{s:s, s:s, s:s, s:s, s:s, s:n, s:n, s:O, s:s}", "type", "mcp_call", "id", id, "server_label",
                        l->plan->servers[a->server].label, "name", e->tool ? e->tool : "", "arguments", args_text,
                        "output", "error", "approval_request_id", json_object_get(req, "id"), "status", "in_progress");
    sb_wloop_emit(l, sb_event_item_added(e->index, json_deep_copy(e->item)));
    json_t *args = json_loads(args_text, 0, NULL);
    if (!json_is_object(args)) {
        json_decref(args);
        args = json_object();
    }
    /* The tools this request allows now (a list known from the chain): an
     * approval does not widen them. */
    if (e->tool && sb_tool_may_call(l->plan, a->server, e->tool)) {
        sb_wexec_mcp(e, args);
    } else {
        e->running = true;
        l->pending++;
        sb_wloop_on_mcp_call(
            e, NULL, false,
            e->tool ? "the tool is not among this request's allowed_tools" : "the approval request names no tool", 0);
    }
    json_decref(args);
}

void sb_wloop_prepare(sb_wloop_t *l)
{
    for (size_t k = 0; k < l->plan->n_servers; k++)
        if (!l->plan->servers[k].listed)
            sb_wloop_list(l, k);
    for (size_t a = 0; a < l->plan->n_approvals; a++)
        sb_wloop_approved(l, &l->plan->approvals[a]);
}
