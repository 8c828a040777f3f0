/*
 * wtool_plan: which built-in tools of a job the gateway runs, the reserved
 * functions the model is offered for them, and the input rewritten into
 * what the model understands (wtool.h; docs/tools.md). Pure functions of
 * the job.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_event.h"
#include "sb_job.h"
#include "wtool.h"

static bool sb_tool_is_web_search(const char *type)
{
    return type && (!strcmp(type, "web_search") || !strcmp(type, "web_search_2025_08_26") ||
                    !strcmp(type, "web_search_preview") || !strcmp(type, "web_search_preview_2025_03_11"));
}

/* route.capabilities.<name> is "native": the upstream runs the tool. */
static bool sb_tool_native(const json_t *job, const char *name)
{
    const json_t *caps = json_object_get(sb_job_route(job), "capabilities");
    const char *v = json_string_value(json_object_get(caps, name));
    return v && !strcmp(v, "native");
}

static bool sb_tool_name_ok(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-')
            return false;
    return true;
}

void sb_tool_mcp_name(const sb_tool_plan_t *p, size_t k, const char *tool, char *out, size_t out_len)
{
    int n = snprintf(out, out_len, SB_TOOL_PREFIX "mcp%zu__%s", k, tool);
    if (n > 0 && (size_t)n < out_len && n <= SB_TOOL_NAME_MAX && sb_tool_name_ok(tool))
        return;
    /* Too long or not a name every upstream takes: its index in the list. */
    size_t j = 0;
    const json_t *tools = k < p->n_servers ? p->servers[k].tools : NULL;
    for (; j < json_array_size(tools); j++) {
        const char *name = json_string_value(json_object_get(json_array_get(tools, j), "name"));
        if (name && !strcmp(name, tool))
            break;
    }
    snprintf(out, out_len, SB_TOOL_PREFIX "mcp%zu_%zu", k, j);
}

static bool sb_tool_in_names(const json_t *names, const char *name)
{
    size_t i;
    const json_t *v;
    json_array_foreach (names, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), name))
            return true;
    return false;
}

/* The tool named `name` in a list of tools, or NULL. */
static const json_t *sb_tool_listed(const json_t *tools, const char *name)
{
    size_t i;
    const json_t *t;
    json_array_foreach (tools, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && !strcmp(n, name))
            return t;
    }
    return NULL;
}

json_t *sb_tool_allowed(const json_t *mcp_tool, const json_t *tools)
{
    const json_t *allowed = json_object_get(mcp_tool, "allowed_tools");
    const json_t *names = json_is_array(allowed) ? allowed : json_object_get(allowed, "tool_names");
    bool read_only = json_is_true(json_object_get(allowed, "read_only"));
    json_t *out = json_array();
    size_t i;
    const json_t *t;
    json_array_foreach (tools, i, t) {
        const char *name = json_string_value(json_object_get(t, "name"));
        if (!name || (names && !sb_tool_in_names(names, name)))
            continue;
        if (read_only && !json_is_true(json_object_get(json_object_get(t, "annotations"), "readOnlyHint")))
            continue;
        if (sb_tool_listed(out, name))
            continue; /* a server that lists a name twice: offered once */
        json_array_append(out, (json_t *)t);
    }
    return out;
}

bool sb_tool_may_call(const sb_tool_plan_t *p, size_t k, const char *tool)
{
    if (k >= p->n_servers || !tool)
        return false;
    const sb_tool_server_t *s = &p->servers[k];
    if (s->tools) {
        json_t *allowed = sb_tool_allowed(s->tool, s->tools);
        bool ok = sb_tool_listed(allowed, tool) != NULL;
        json_decref(allowed);
        return ok;
    }
    /* No list known yet: the names allowed_tools gives, if it gives any. */
    const json_t *allowed = json_object_get(s->tool, "allowed_tools");
    const json_t *names = json_is_array(allowed) ? allowed : json_object_get(allowed, "tool_names");
    return !names || sb_tool_in_names(names, tool);
}

bool sb_tool_needs_approval(const sb_tool_plan_t *p, size_t k, const char *tool)
{
    if (k >= p->n_servers)
        return true;
    const json_t *ra = json_object_get(p->servers[k].tool, "require_approval");
    if (json_is_string(ra))
        return strcmp(json_string_value(ra), "never") != 0;
    if (json_is_object(ra)) {
        const json_t *never = json_object_get(ra, "never");
        if (sb_tool_in_names(json_object_get(never, "tool_names"), tool))
            return false;
        /* {never:{read_only:true}}: the tools the server marks read-only. */
        const json_t *t = json_is_true(json_object_get(never, "read_only"))
                              ? sb_tool_listed(p->servers[k].tools, tool ? tool : "")
                              : NULL;
        if (json_is_true(json_object_get(json_object_get(t, "annotations"), "readOnlyHint")))
            return false;
        return true; /* listed under always, or not listed: OpenAI's default */
    }
    return true;
}

static json_t *sb_tool_function(const char *name, const char *description, json_t *parameters)
{
    return json_pack("{s:s, s:s, s:s, s:o}", "type", "function", "name", name, "description", description, "parameters",
                     parameters);
}

json_t *sb_tool_plan_offer(const sb_tool_plan_t *p, bool builtins)
{
    json_t *out = json_deep_copy(p->other_tools);
    if (!builtins)
        return out;
    sb_tool_builtin_offer(p, out);
    if (p->web_search) {
        json_array_append_new(
            out, sb_tool_function(SB_TOOL_WEB_SEARCH_FN,
                                  "Search the web. Returns numbered results, each with a title, a URL and a snippet. "
                                  "Cite every source you use as a markdown link [title](url).",
                                  json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object", "properties",
                                            "query", "type", "string", "description", "The search query.", "required",
                                            "query", "additionalProperties", 0)));
        if (p->pages) {
            json_array_append_new(
                out, sb_tool_function(SB_TOOL_OPEN_PAGE_FN, "Open a web page and read its text.",
                                      json_pack("{s:s, s:{s:{s:s}}, s:[s], s:b}", "type", "object", "properties", "url",
                                                "type", "string", "required", "url", "additionalProperties", 0)));
            json_array_append_new(
                out, sb_tool_function(SB_TOOL_FIND_IN_PAGE_FN,
                                      "Find the lines of a web page that contain a pattern (case-insensitive).",
                                      json_pack("{s:s, s:{s:{s:s}, s:{s:s}}, s:[s, s], s:b}", "type", "object",
                                                "properties", "url", "type", "string", "pattern", "type", "string",
                                                "required", "url", "pattern", "additionalProperties", 0)));
        }
    }
    for (size_t k = 0; k < p->n_servers; k++) {
        const sb_tool_server_t *s = &p->servers[k];
        if (!s->tools)
            continue;
        json_t *allowed = sb_tool_allowed(s->tool, s->tools);
        size_t i;
        json_t *t;
        json_array_foreach (allowed, i, t) {
            const char *name = json_string_value(json_object_get(t, "name"));
            char fn[SB_TOOL_NAME_MAX + 32];
            sb_tool_mcp_name(p, k, name, fn, sizeof fn);
            const char *d = json_string_value(json_object_get(t, "description"));
            char *desc = sb_xasprintf("%s (tool '%.100s' of the MCP server '%.100s')", d ? d : "", name, s->label);
            json_t *schema = json_object_get(t, "input_schema");
            json_t *params = json_is_object(schema) ? json_deep_copy(schema) : json_pack("{s:s}", "type", "object");
            if (!json_object_get(params, "type"))
                json_object_set_new(params, "type", json_string("object"));
            json_array_append_new(out, sb_tool_function(fn, desc, params));
            free(desc);
        }
        json_decref(allowed);
    }
    return out;
}

enum sb_tool_kind sb_tool_plan_resolve(const sb_tool_plan_t *p, const char *name, size_t *server, const char **tool)
{
    if (!name || strncmp(name, SB_TOOL_PREFIX, strlen(SB_TOOL_PREFIX)) != 0)
        return SB_TOOL_NONE;
    enum sb_tool_kind builtin = sb_tool_builtin_resolve(p, name);
    if (builtin != SB_TOOL_NONE)
        return builtin;
    if (p->web_search && !strcmp(name, SB_TOOL_WEB_SEARCH_FN))
        return SB_TOOL_WEB_SEARCH;
    if (p->web_search && p->pages && !strcmp(name, SB_TOOL_OPEN_PAGE_FN))
        return SB_TOOL_OPEN_PAGE;
    if (p->web_search && p->pages && !strcmp(name, SB_TOOL_FIND_IN_PAGE_FN))
        return SB_TOOL_FIND_IN_PAGE;
    const char *s = name + strlen(SB_TOOL_PREFIX);
    if (strncmp(s, "mcp", 3) != 0 || !isdigit((unsigned char)s[3]))
        return SB_TOOL_NONE;
    char *end;
    unsigned long k = strtoul(s + 3, &end, 10);
    if (k >= p->n_servers || !p->servers[k].tools)
        return SB_TOOL_NONE;
    json_t *allowed = sb_tool_allowed(p->servers[k].tool, p->servers[k].tools);
    enum sb_tool_kind kind = SB_TOOL_NONE;
    size_t i;
    json_t *t;
    json_array_foreach (allowed, i, t) {
        const char *tn = json_string_value(json_object_get(t, "name"));
        char fn[SB_TOOL_NAME_MAX + 32];
        sb_tool_mcp_name(p, k, tn, fn, sizeof fn);
        if (!strcmp(fn, name)) {
            *server = k;
            /* Borrowed from the server's own list, which outlives `allowed`. */
            *tool = json_string_value(json_object_get(t, "name"));
            kind = SB_TOOL_MCP;
            break;
        }
    }
    json_decref(allowed);
    (void)end;
    return kind;
}

/* The server whose label is `label`, or n_servers. */
static size_t sb_tool_server_of(const sb_tool_plan_t *p, const char *label)
{
    for (size_t k = 0; label && k < p->n_servers; k++)
        if (!strcmp(p->servers[k].label, label))
            return k;
    return p->n_servers;
}

/* The function name an MCP item of an earlier turn is replayed under. */
static void sb_tool_replay_name(const sb_tool_plan_t *p, const json_t *item, char *out, size_t out_len)
{
    const char *name = json_string_value(json_object_get(item, "name"));
    size_t k = sb_tool_server_of(p, json_string_value(json_object_get(item, "server_label")));
    if (!name)
        name = "tool";
    if (k < p->n_servers) {
        sb_tool_mcp_name(p, k, name, out, out_len);
        return;
    }
    snprintf(out, out_len, SB_TOOL_PREFIX "mcp__%.50s", sb_tool_name_ok(name) ? name : "tool");
}

/* What a web_search_call replayed without the gateway's record of it
 * (sb_output: a client's own replay, store:false) tells the model: the
 * action and the sources it names, and that the results themselves are
 * gone (malloc'd). */
static char *sb_tool_replay_summary(const json_t *action, bool failed)
{
    const char *type = json_string_value(json_object_get(action, "type"));
    const char *query = json_string_value(json_object_get(action, "query"));
    const char *url = json_string_value(json_object_get(action, "url"));
    char *what = type && !strcmp(type, "open_page")      ? sb_xasprintf("Opened the page %.500s", url ? url : "")
                 : type && !strcmp(type, "find_in_page") ? sb_xasprintf("Searched the page %.500s", url ? url : "")
                 : query                                 ? sb_xasprintf("Searched the web for \"%.500s\"", query)
                                                         : sb_xstrdup("Searched the web");
    sb_buf_t b = {0};
    sb_buf_add(&b, what, strlen(what));
    free(what);
    const char *tail = failed ? ", which failed." : ".";
    sb_buf_add(&b, tail, strlen(tail));
    size_t i;
    const json_t *src;
    size_t listed = 0;
    json_array_foreach (json_object_get(action, "sources"), i, src) {
        const char *u = json_string_value(json_object_get(src, "url"));
        if (!u || listed >= 20)
            continue;
        const char *sep = listed++ ? ", " : " Sources: ";
        sb_buf_add(&b, sep, strlen(sep));
        sb_buf_add(&b, u, strnlen(u, 500));
    }
    if (listed)
        sb_buf_add(&b, ".", 1);
    if (!failed) {
        static const char gone[] = " The results themselves are not kept in this conversation.";
        sb_buf_add(&b, gone, sizeof gone - 1);
    }
    return b.p; /* owned by the caller now */
}

/* A web_search_call of an earlier turn, as the call the model made and the
 * text it was given. */
static void sb_tool_replay_web(const json_t *item, json_t *input)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    const json_t *action = json_object_get(item, "action");
    const char *type = json_string_value(json_object_get(action, "type"));
    const char *fn = SB_TOOL_WEB_SEARCH_FN;
    json_t *args;
    if (type && !strcmp(type, "open_page")) {
        fn = SB_TOOL_OPEN_PAGE_FN;
        args = json_pack("{s:O?}", "url", json_object_get(action, "url"));
    } else if (type && !strcmp(type, "find_in_page")) {
        fn = SB_TOOL_FIND_IN_PAGE_FN;
        args = json_pack("{s:O?, s:O?}", "url", json_object_get(action, "url"), "pattern",
                         json_object_get(action, "pattern"));
    } else {
        args = json_pack("{s:O?}", "query", json_object_get(action, "query"));
    }
    char *args_text = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    if (!id)
        id = "ws_replayed";
    json_array_append_new(input, sb_tool_call_item(id, fn, args_text, item));
    free(args_text);
    const char *text = json_string_value(json_object_get(item, "sb_output"));
    char *summary = NULL;
    if (!text) {
        /* A replay without the gateway's own record (store:false): what the
         * item itself says. */
        const char *st = json_string_value(json_object_get(item, "status"));
        summary = sb_tool_replay_summary(action, st && !strcmp(st, "failed"));
        text = summary;
    }
    json_array_append_new(input, sb_tool_output_item(id, text));
    free(summary);
}

/* The approval answers (mcp_approval_response, the first for each) and the
 * settled requests (an mcp_call that ran with the request's id) of the
 * input, by approval_request_id: one pass, where a scan per request would
 * be quadratic in an input the client writes. */
static void sb_tool_approval_index(const json_t *input, json_t *answers, json_t *settled)
{
    size_t i;
    const json_t *it;
    json_array_foreach (input, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *rid = json_string_value(json_object_get(it, "approval_request_id"));
        if (!type || !rid)
            continue;
        if (!strcmp(type, "mcp_approval_response") && !json_object_get(answers, rid))
            json_object_set(answers, rid, (json_t *)it);
        else if (!strcmp(type, "mcp_call"))
            json_object_set_new(settled, rid, json_true());
    }
}

/* The input, with the built-in items the gateway ran (kinds not native)
 * rewritten for the model. */
static void sb_tool_rewrite(sb_tool_plan_t *p, const json_t *job, const json_t *input, bool web_native, bool mcp_native)
{
    json_t *answers = json_object(), *settled = json_object(), *seen = json_object();
    sb_tool_approval_index(input, answers, settled);
    size_t i;
    const json_t *it;
    json_array_foreach (input, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        const char *id = json_string_value(json_object_get(it, "id"));
        if (!type) {
            json_array_append(p->input, (json_t *)it);
        } else if (sb_tool_builtin_replay(p, job, it, p->input)) {
            continue;
        } else if (!strcmp(type, "web_search_call") && !web_native) {
            sb_tool_replay_web(it, p->input);
        } else if (!strcmp(type, "mcp_list_tools") && !mcp_native) {
            size_t k = sb_tool_server_of(p, json_string_value(json_object_get(it, "server_label")));
            const json_t *tools = json_object_get(it, "tools");
            bool failed = json_is_string(json_object_get(it, "error"));
            if (k < p->n_servers && !p->servers[k].listed && json_is_array(tools) && !failed) {
                p->servers[k].tools = json_deep_copy(tools);
                p->servers[k].listed = true;
            }
        } else if (!strcmp(type, "mcp_call") && !mcp_native) {
            char fn[SB_TOOL_NAME_MAX + 32];
            sb_tool_replay_name(p, it, fn, sizeof fn);
            const char *call_id = id ? id : "mcp_replayed";
            json_array_append_new(
                p->input, sb_tool_call_item(call_id, fn, json_string_value(json_object_get(it, "arguments")), it));
            const char *err = json_string_value(json_object_get(it, "error"));
            const char *out = json_string_value(json_object_get(it, "output"));
            char *text = err ? sb_xasprintf("Error: %s", err) : NULL;
            json_array_append_new(p->input, sb_tool_output_item(call_id, text ? text : out ? out : ""));
            free(text);
        } else if (!strcmp(type, "mcp_approval_request") && !mcp_native) {
            if (!id || json_object_get(settled, id) || json_object_get(seen, id))
                continue; /* its mcp_call tells the model what happened; a request replayed twice runs once */
            json_object_set_new(seen, id, json_true());
            char fn[SB_TOOL_NAME_MAX + 32];
            sb_tool_replay_name(p, it, fn, sizeof fn);
            json_array_append_new(p->input,
                                  sb_tool_call_item(id, fn, json_string_value(json_object_get(it, "arguments")), it));
            const json_t *resp = json_object_get(answers, id);
            size_t k = sb_tool_server_of(p, json_string_value(json_object_get(it, "server_label")));
            bool approve = resp && json_is_true(json_object_get(resp, "approve"));
            const char *reason = json_string_value(json_object_get(resp, "reason"));
            char *text = NULL;
            if (approve && k < p->n_servers)
                text = sb_xstrdup(""); /* filled in when the call has run */
            else if (approve)
                text = sb_xstrdup("The tool could not be called: its MCP server is not among this request's tools.");
            else if (resp)
                text =
                    sb_xasprintf("The user denied this tool call%s%.500s.", reason ? ": " : "", reason ? reason : "");
            else
                text = sb_xstrdup("The user has not approved this tool call.");
            json_t *out = sb_tool_output_item(id, text);
            free(text);
            json_array_append_new(p->input, out);
            if (approve && k < p->n_servers) {
                p->approvals = sb_xrealloc(p->approvals, (p->n_approvals + 1) * sizeof *p->approvals);
                p->approvals[p->n_approvals++] =
                    (sb_tool_approval_t){.request = json_deep_copy(it), .approve = true, .server = k, .output = out};
            }
        } else if (!strcmp(type, "mcp_approval_response") && !mcp_native) {
            continue; /* read with its request */
        } else {
            json_array_append(p->input, (json_t *)it);
        }
    }
    json_decref(answers);
    json_decref(settled);
    json_decref(seen);
}

/* Does the input hold built-in items of a kind the gateway runs? */
static bool sb_tool_input_has(const json_t *job, const json_t *input, bool web_native, bool mcp_native)
{
    size_t i;
    const json_t *it;
    json_array_foreach (input, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (!type)
            continue;
        if (!web_native && !strcmp(type, "web_search_call"))
            return true;
        if (!mcp_native && !strncmp(type, "mcp_", 4))
            return true;
        if (sb_tool_builtin_item(job, type))
            return true;
    }
    return false;
}

void sb_tool_plan_destroy(sb_tool_plan_t **pp)
{
    if (!pp || !*pp)
        return;
    sb_tool_plan_t *p = *pp;
    for (size_t k = 0; k < p->n_servers; k++)
        json_decref(p->servers[k].tools);
    free(p->servers);
    for (size_t a = 0; a < p->n_approvals; a++)
        json_decref(p->approvals[a].request);
    free(p->approvals);
    json_decref(p->other_tools);
    json_decref(p->input);
    json_decref(p->forced);
    json_decref(p->last_image);
    json_decref(p->containers);
    free(p);
    *pp = NULL;
}

int sb_tool_plan_new(const json_t *job, sb_tool_plan_t **out, json_t **err)
{
    *out = NULL;
    const json_t *request = sb_job_request(job);
    const json_t *tools = json_object_get(request, "tools");
    const json_t *input = json_object_get(request, "input");
    bool web_native = sb_tool_native(job, "web_search"), mcp_native = sb_tool_native(job, "mcp");
    sb_tool_plan_t *p = sb_xcalloc(1, sizeof *p);
    p->other_tools = json_array();
    p->input = json_array();
    size_t i;
    const json_t *t;
    json_array_foreach (tools, i, t) {
        const char *type = json_string_value(json_object_get(t, "type"));
        const char *name = json_string_value(json_object_get(t, "name"));
        if (type && !strcmp(type, "function") && name && !strncmp(name, SB_TOOL_PREFIX, strlen(SB_TOOL_PREFIX))) {
            *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL,
                                  "function names starting with '" SB_TOOL_PREFIX "' are reserved by this gateway");
            goto fail;
        }
        if (sb_tool_builtin_take(p, job, t))
            continue;
        if (sb_tool_is_web_search(type) && !web_native) {
            if (!p->web_search) {
                p->web_search = t;
                p->pages = !json_is_false(json_object_get(t, "external_web_access"));
            }
            continue;
        }
        if (type && !strcmp(type, "mcp") && !mcp_native) {
            const char *label = json_string_value(json_object_get(t, "server_label"));
            if (!label || !json_is_string(json_object_get(t, "server_url"))) {
                *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL,
                                      "an mcp tool needs a string server_label and server_url");
                goto fail;
            }
            for (size_t k = 0; k < p->n_servers; k++)
                if (!strcmp(p->servers[k].label, label)) {
                    *err =
                        sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, "two mcp tools have the same server_label");
                    goto fail;
                }
            if (p->n_servers >= SB_TOOL_MAX_SERVERS) {
                *err = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL,
                                      "at most 32 mcp tools (servers) may be given in one request");
                goto fail;
            }
            p->servers = sb_xrealloc(p->servers, (p->n_servers + 1) * sizeof *p->servers);
            p->servers[p->n_servers++] = (sb_tool_server_t){.tool = t, .label = label};
            continue;
        }
        json_array_append(p->other_tools, (json_t *)t);
    }
    if (!p->web_search && p->n_servers == 0 && !p->code_interpreter && !p->file_search && !p->image_generation &&
        !sb_tool_input_has(job, input, web_native, mcp_native)) {
        sb_tool_plan_destroy(&p);
        return 0;
    }
    sb_tool_rewrite(p, job, input, web_native, mcp_native);
    const json_t *choice = json_object_get(request, "tool_choice");
    const char *forced = json_string_value(json_object_get(choice, "type"));
    if (forced && sb_tool_is_web_search(forced) && p->web_search)
        p->forced = json_pack("{s:s, s:s}", "type", "function", "name", SB_TOOL_WEB_SEARCH_FN);
    else if (forced && !strcmp(forced, "mcp") && p->n_servers > 0)
        p->forced = json_string("required");
    else if (forced && !strcmp(forced, "code_interpreter") && p->code_interpreter)
        p->forced = json_pack("{s:s, s:s}", "type", "function", "name", SB_TOOL_PYTHON_FN);
    else if (forced && !strcmp(forced, "file_search") && p->file_search)
        p->forced = json_pack("{s:s, s:s}", "type", "function", "name", SB_TOOL_FILE_SEARCH_FN);
    else if (forced && !strcmp(forced, "image_generation") && p->image_generation)
        p->forced = json_pack("{s:s, s:s}", "type", "function", "name", SB_TOOL_IMAGE_FN);
    *out = p;
    return 0;
fail:
    sb_tool_plan_destroy(&p);
    return -EINVAL;
}
