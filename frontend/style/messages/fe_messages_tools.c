/*
 * fe_messages_tools: the Messages style's side of the built-in tools the
 * gateway runs (docs/tools.md, "Other styles"), request side:
 *   tools[] web_search_20250305 | _20260209 | _20260318 -> a canonical
 *       web_search tool (allowed_domains / blocked_domains -> filters,
 *       user_location as is, the smallest max_uses -> max_tool_calls)
 *   mcp_servers[] (the MCP connector: mcp-client-2025-04-04's
 *       tool_configuration, or mcp-client-2025-11-20's mcp_toolset entries
 *       in tools[]) -> canonical mcp tools with require_approval "never"
 *       (Anthropic's connector has no approvals)
 *   history blocks of an assistant turn: server_tool_use +
 *       web_search_tool_result -> a web_search_call item, mcp_tool_use +
 *       mcp_tool_result -> an mcp_call item, in their order (the code
 *       execution tool's blocks are fe_messages_code.c's).
 * The beta header is not required: the fields say which version is meant.
 * The response side is fe_messages_render.c and fe_stream_messages.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_messages_code.h"
#include "fe_messages_parse.h"
#include "fe_messages_render.h"
#include "fe_reasoning.h"
#include "sb_alloc.h"

/* The web search tool's versions in @anthropic-ai/sdk today. */
static const char *const fe_mt_search_versions[] = {"web_search_20250305", "web_search_20260209", "web_search_20260318",
                                                    NULL};

bool fe_messages_is_web_search_tool(const json_t *tool)
{
    for (size_t i = 0; fe_mt_search_versions[i]; i++)
        if (fe_messages_is(json_object_get(tool, "type"), fe_mt_search_versions[i]))
            return true;
    return false;
}

/* Only the listed keys in o (an object): 0, or -1 with Anthropic's "Extra
 * inputs" 400 naming param.key. */
static int fe_mt_known(const json_t *o, const char *const *known, const char *param, fe_error_t *err)
{
    const char *k;
    json_t *v;
    json_object_foreach ((json_t *)o, k, v) {
        bool ok = false;
        for (size_t i = 0; known[i] && !ok; i++)
            ok = !strcmp(k, known[i]);
        if (!ok) {
            char p[128];
            snprintf(p, sizeof p, "%s.%.40s", param, k);
            return fe_messages_fail(err, "unknown_parameter", p, "Extra inputs are not permitted");
        }
    }
    return 0;
}

/* An optional list of strings (absent or null: *out NULL). */
static int fe_mt_strings(const json_t *o, const char *key, const char *param, json_t **out, fe_error_t *err)
{
    json_t *v = json_object_get(o, key);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    size_t i;
    json_t *s;
    bool ok = json_is_array(v);
    json_array_foreach (v, i, s)
        ok = ok && json_is_string(s) && json_string_length(s) > 0;
    if (!ok) {
        char p[128];
        snprintf(p, sizeof p, "%s.%s", param, key);
        return fe_messages_fail(err, "invalid_type", p, "Input should be a valid list of non-empty strings");
    }
    *out = v;
    return 0;
}

json_t *fe_messages_web_search_tool(const json_t *t, const char *param, json_int_t *max_uses, fe_error_t *err)
{
    static const char *const known[] = {
        "type",          "name",     "allowed_callers", "allowed_domains", "blocked_domains",    "cache_control",
        "defer_loading", "max_uses", "strict",          "user_location",   "response_inclusion", NULL};
    if (fe_mt_known(t, known, param, err) < 0)
        return NULL;
    char p[96];
    snprintf(p, sizeof p, "%s.name", param);
    if (!fe_messages_is(json_object_get(t, "name"), "web_search"))
        return fe_messages_fail_null(err, "invalid_value", p, "Input should be 'web_search'");
    json_t *allowed, *blocked;
    if (fe_mt_strings(t, "allowed_domains", param, &allowed, err) < 0 ||
        fe_mt_strings(t, "blocked_domains", param, &blocked, err) < 0)
        return NULL;
    if (json_array_size(allowed) > 0 && json_array_size(blocked) > 0)
        return fe_messages_fail_null(err, "invalid_value", param,
                                     "Cannot specify both allowed_domains and blocked_domains.");
    json_t *mu = json_object_get(t, "max_uses");
    if (mu && !json_is_null(mu)) {
        snprintf(p, sizeof p, "%s.max_uses", param);
        if (!json_is_integer(mu))
            return fe_messages_fail_null(err, "invalid_type", p, "Input should be a valid integer");
        if (json_integer_value(mu) < 1)
            return fe_messages_fail_null(err, "invalid_value", p, "Input should be greater than 0");
        if (*max_uses < 0 || json_integer_value(mu) < *max_uses)
            *max_uses = json_integer_value(mu);
    }
    json_t *tool = json_pack("{s:s}", "type", "web_search");
    if (json_array_size(allowed) > 0 || json_array_size(blocked) > 0) {
        json_t *filters = json_object();
        if (json_array_size(allowed) > 0)
            json_object_set(filters, "allowed_domains", allowed);
        if (json_array_size(blocked) > 0)
            json_object_set(filters, "blocked_domains", blocked);
        json_object_set_new(tool, "filters", filters);
    }
    json_t *loc = json_object_get(t, "user_location");
    if (loc && !json_is_null(loc)) {
        static const char *const loc_keys[] = {"type", "city", "region", "country", "timezone", NULL};
        snprintf(p, sizeof p, "%s.user_location", param);
        if (!json_is_object(loc)) {
            json_decref(tool);
            return fe_messages_fail_null(err, "invalid_type", p, "Input should be a valid dictionary");
        }
        if (fe_mt_known(loc, loc_keys, p, err) < 0 || !fe_messages_is(json_object_get(loc, "type"), "approximate")) {
            json_decref(tool);
            if (!err->status)
                fe_messages_fail(err, "invalid_value", p, "type: Input should be 'approximate'");
            return NULL;
        }
        /* Anthropic's approximate location is OpenAI's, field for field. */
        json_t *out = json_pack("{s:s}", "type", "approximate");
        for (size_t i = 1; loc_keys[i]; i++) {
            json_t *v = json_object_get(loc, loc_keys[i]);
            if (json_is_string(v))
                json_object_set(out, loc_keys[i], v);
            else if (v && !json_is_null(v)) {
                json_decref(out);
                json_decref(tool);
                return fe_messages_fail_null(err, "invalid_type", p, "%s: Input should be a valid string", loc_keys[i]);
            }
        }
        json_object_set_new(tool, "user_location", out);
    }
    /* cache_control, defer_loading, allowed_callers, strict and
     * response_inclusion tune Anthropic's prompt and its code execution
     * tool; none changes what a search returns. */
    return tool;
}

/* ---- mcp_servers and mcp_toolset --------------------------------------------- */

int fe_messages_mcp_toolset(const json_t *t, const char *param, json_t *toolsets, fe_error_t *err)
{
    static const char *const known[] = {"type", "mcp_server_name", "cache_control", "configs", "default_config", NULL};
    static const char *const cfg_keys[] = {"enabled", "defer_loading", NULL};
    if (fe_mt_known(t, known, param, err) < 0)
        return -1;
    char p[128];
    json_t *name = json_object_get(t, "mcp_server_name");
    if (!json_is_string(name) || json_string_length(name) == 0) {
        snprintf(p, sizeof p, "%s.mcp_server_name", param);
        return fe_messages_fail(err, "missing_required_parameter", p, "Field required");
    }
    if (json_object_get(toolsets, json_string_value(name)))
        return fe_messages_fail(err, "invalid_value", param,
                                "MCP server '%.64s' is referenced by more than one mcp_toolset.",
                                json_string_value(name));
    json_t *dc = json_object_get(t, "default_config");
    snprintf(p, sizeof p, "%s.default_config", param);
    if (dc && !json_is_null(dc) && (!json_is_object(dc) || fe_mt_known(dc, cfg_keys, p, err) < 0))
        return err->status ? -1 : fe_messages_fail(err, "invalid_type", p, "Input should be a valid dictionary");
    json_t *de = json_object_get(dc, "enabled");
    if (de && !json_is_null(de) && !json_is_boolean(de))
        return fe_messages_fail(err, "invalid_type", p, "enabled: Input should be a valid boolean");
    bool default_on = !json_is_false(de);
    json_t *configs = json_object_get(t, "configs");
    snprintf(p, sizeof p, "%s.configs", param);
    if (configs && !json_is_null(configs) && !json_is_object(configs))
        return fe_messages_fail(err, "invalid_type", p, "Input should be a valid dictionary");
    json_t *allowed = json_array();
    const char *tool;
    json_t *cfg;
    json_object_foreach (configs, tool, cfg) {
        char cp[192];
        snprintf(cp, sizeof cp, "%s.%.60s", p, tool);
        if (!json_is_object(cfg) || fe_mt_known(cfg, cfg_keys, cp, err) < 0) {
            json_decref(allowed);
            return err->status ? -1 : fe_messages_fail(err, "invalid_type", cp, "Input should be a valid dictionary");
        }
        json_t *en = json_object_get(cfg, "enabled");
        if (en && !json_is_null(en) && !json_is_boolean(en)) {
            json_decref(allowed);
            return fe_messages_fail(err, "invalid_type", cp, "enabled: Input should be a valid boolean");
        }
        bool on = en && !json_is_null(en) ? json_is_true(en) : default_on;
        if (default_on && !on) {
            /* A denylist: the canonical mcp tool only has an allowlist, and
             * ignoring it would offer the tools the client switched off. */
            json_decref(allowed);
            return fe_messages_fail(err, "unsupported_parameter", cp,
                                    "unsupported parameter: disabling single tools of an MCP server is not "
                                    "supported on this gateway; set default_config.enabled to false and enable "
                                    "the tools to offer.");
        }
        if (on && !default_on)
            json_array_append_new(allowed, json_string(tool));
    }
    /* {"all": true} or {"allowed": [...]} (possibly empty: nothing offered). */
    json_object_set_new(toolsets, json_string_value(name),
                        default_on ? json_pack("{s:b}", "all", 1) : json_pack("{s:o}", "allowed", allowed));
    if (default_on)
        json_decref(allowed);
    return 0;
}

/* One mcp_servers entry -> a canonical mcp tool appended to tools, or
 * nothing when its tools are all switched off. */
static int fe_mt_server(const json_t *s, const char *param, const json_t *toolsets, json_t *names, json_t *tools,
                        fe_error_t *err)
{
    static const char *const known[] = {"type", "url", "name", "authorization_token", "tool_configuration", NULL};
    static const char *const tc_keys[] = {"enabled", "allowed_tools", NULL};
    char p[128];
    if (!json_is_object(s))
        return fe_messages_fail(err, "invalid_type", param, "Input should be a valid dictionary or object");
    if (fe_mt_known(s, known, param, err) < 0)
        return -1;
    snprintf(p, sizeof p, "%s.type", param);
    if (!fe_messages_is(json_object_get(s, "type"), "url"))
        return fe_messages_fail(err, "invalid_value", p, "Input should be 'url'");
    json_t *url = json_object_get(s, "url"), *name = json_object_get(s, "name");
    json_t *token = json_object_get(s, "authorization_token");
    if (!json_is_string(url) || json_string_length(url) == 0) {
        snprintf(p, sizeof p, "%s.url", param);
        return fe_messages_fail(err, "missing_required_parameter", p, "Field required");
    }
    if (!json_is_string(name) || json_string_length(name) == 0) {
        snprintf(p, sizeof p, "%s.name", param);
        return fe_messages_fail(err, "missing_required_parameter", p, "Field required");
    }
    if (token && !json_is_null(token) && !json_is_string(token)) {
        snprintf(p, sizeof p, "%s.authorization_token", param);
        return fe_messages_fail(err, "invalid_type", p, "Input should be a valid string");
    }
    if (json_object_get(names, json_string_value(name)))
        return fe_messages_fail(err, "invalid_value", "mcp_servers", "MCP server names must be unique: '%.64s'",
                                json_string_value(name));
    json_object_set_new(names, json_string_value(name), json_true());

    json_t *tc = json_object_get(s, "tool_configuration");
    json_t *set = json_object_get(toolsets, json_string_value(name));
    bool on = true;
    json_t *allowed = NULL;
    snprintf(p, sizeof p, "%s.tool_configuration", param);
    if (tc && !json_is_null(tc)) {
        if (!json_is_object(tc))
            return fe_messages_fail(err, "invalid_type", p, "Input should be a valid dictionary");
        if (set)
            return fe_messages_fail(err, "invalid_value", p,
                                    "tool_configuration cannot be combined with an mcp_toolset for the same "
                                    "server; configure the tools in the mcp_toolset.");
        if (fe_mt_known(tc, tc_keys, p, err) < 0 || fe_mt_strings(tc, "allowed_tools", p, &allowed, err) < 0)
            return -1;
        json_t *en = json_object_get(tc, "enabled");
        if (en && !json_is_null(en) && !json_is_boolean(en))
            return fe_messages_fail(err, "invalid_type", p, "enabled: Input should be a valid boolean");
        on = !json_is_false(en);
    } else if (json_object_size(toolsets) > 0 && !set) {
        return fe_messages_fail(err, "invalid_value", param,
                                "MCP server '%.64s' must be referenced by exactly one mcp_toolset in tools.",
                                json_string_value(name));
    } else if (set && !json_object_get(set, "all")) {
        allowed = json_object_get(set, "allowed");
        on = json_array_size(allowed) > 0;
    }
    if (!on)
        return 0;
    json_t *t = json_pack("{s:s, s:O, s:O}", "type", "mcp", "server_label", name, "server_url", url);
    if (json_is_string(token))
        json_object_set(t, "authorization", token);
    if (allowed)
        json_object_set(t, "allowed_tools", allowed);
    json_object_set_new(t, "require_approval", json_string("never"));
    json_array_append_new(tools, t);
    return 0;
}

int fe_messages_mcp_servers(const json_t *body, const json_t *toolsets, json_t *tools, fe_error_t *err)
{
    json_t *servers = json_object_get(body, "mcp_servers");
    if (servers && !json_is_null(servers) && !json_is_array(servers))
        return fe_messages_fail(err, "invalid_type", "mcp_servers", "Input should be a valid list");
    size_t i;
    json_t *s;
    const char *set;
    json_t *v;
    json_object_foreach ((json_t *)toolsets, set, v) {
        bool found = false;
        json_array_foreach (servers, i, s)
            found |= fe_messages_is(json_object_get(s, "name"), set);
        if (!found)
            return fe_messages_fail(err, "invalid_value", "tools",
                                    "mcp_toolset references MCP server '%.64s', which is not in mcp_servers.", set);
    }
    json_t *names = json_object();
    int rc = 0;
    json_array_foreach (servers, i, s) {
        char p[48];
        snprintf(p, sizeof p, "mcp_servers.%zu", i);
        if ((rc = fe_mt_server(s, p, toolsets, names, tools, err)) < 0)
            break;
    }
    json_decref(names);
    return rc;
}

/* ---- history: server tool blocks -> canonical items ------------------------- */

/* id with its prefix `from` replaced by `to` (or `to` put before it). */
static char *fe_mt_swap_prefix(const char *id, const char *from, const char *to)
{
    size_t n = strlen(from);
    return sb_xasprintf("%s%s", to, strncmp(id, from, n) == 0 ? id + n : id);
}

/* The item of items whose id is id, searching from the end; NULL if none. */
static json_t *fe_mt_find(json_t *items, const char *type, const char *id, size_t *at)
{
    for (size_t i = json_array_size(items); i-- > 0;) {
        json_t *it = json_array_get(items, i);
        if (fe_messages_is(json_object_get(it, "type"), type) && fe_messages_is(json_object_get(it, "id"), id)) {
            *at = i;
            return it;
        }
    }
    return NULL;
}

static int fe_mt_use_block(json_t *items, const json_t *block, bool mcp, const char *param, fe_error_t *err)
{
    json_t *id = json_object_get(block, "id"), *name = json_object_get(block, "name");
    json_t *input = json_object_get(block, "input");
    json_t *server = json_object_get(block, "server_name");
    if (!json_is_string(id) || !json_is_string(name) || !json_is_object(input) || (mcp && !json_is_string(server)))
        return fe_messages_fail(err, "invalid_value", param,
                                "%s blocks need a string id%s and name and an object input",
                                mcp ? "mcp_tool_use" : "server_tool_use", mcp ? ", server_name" : "");
    if (!mcp) {
        json_t *query = json_object_get(input, "query");
        if (!strcmp(json_string_value(name), "code_execution"))
            return fe_messages_code_use(items, block, param, err);
        if (strcmp(json_string_value(name), "web_search") != 0)
            return fe_messages_fail(err, "unsupported_parameter", param,
                                    "unsupported parameter: the server tool '%.40s' is not supported on this "
                                    "gateway; only web_search and code_execution are.",
                                    json_string_value(name));
        char *item_id = fe_mt_swap_prefix(json_string_value(id), FE_MESSAGES_SEARCH_PREFIX, "ws_");
        json_array_append_new(items, json_pack("{s:s, s:s, s:s, s:{s:s, s:O?, s:[]}}", "type", "web_search_call", "id",
                                               item_id, "status", "completed", "action", "type", "search", "query",
                                               json_is_string(query) ? query : NULL, "sources"));
        free(item_id);
        return 0;
    }
    char *item_id = fe_mt_swap_prefix(json_string_value(id), FE_MESSAGES_MCP_PREFIX, "mcp_");
    char *args = json_dumps(input, JSON_COMPACT);
    json_array_append_new(items, json_pack("{s:s, s:s, s:O, s:O, s:s, s:n, s:n, s:s}", "type", "mcp_call", "id",
                                           item_id, "server_label", server, "name", name, "arguments",
                                           args ? args : "{}", "output", "error", "status", "completed"));
    free(args);
    free(item_id);
    return 0;
}

/* The sealed web_search_call a result's encrypted_content may hold (this
 * gateway's render puts it in the first result), or NULL: a token of
 * another kind (Anthropic's own, a plain one) just is not one. */
static json_t *fe_mt_open_search(const fe_sealer_t *seal, const json_t *result)
{
    const char *token = json_string_value(json_object_get(result, "encrypted_content"));
    if (!seal->key || !token || !*token)
        return NULL;
    fe_error_t scratch;
    memset(&scratch, 0, sizeof scratch);
    json_t *item = fe_reasoning_open(seal, token, "encrypted_content", &scratch);
    if (item && !fe_messages_is(json_object_get(item, "type"), "web_search_call")) {
        json_decref(item);
        return NULL;
    }
    return item;
}

/* The item a result block answers: the one its tool_use_id names (the
 * block id with block_prefix, the item id with item_prefix), of this type,
 * already among items; *at is its index. NULL when none. */
static json_t *fe_mt_answered(json_t *items, const json_t *block, const char *block_prefix, const char *item_prefix,
                              const char *type, size_t *at)
{
    json_t *use = json_object_get(block, "tool_use_id");
    char *item_id = json_is_string(use) ? fe_mt_swap_prefix(json_string_value(use), block_prefix, item_prefix) : NULL;
    json_t *item = item_id ? fe_mt_find(items, type, item_id, at) : NULL;
    free(item_id);
    return item;
}

static int fe_mt_search_result(const fe_sealer_t *seal, json_t *items, const json_t *block, const char *param,
                               fe_error_t *err)
{
    json_t *content = json_object_get(block, "content");
    size_t at = 0;
    json_t *item = fe_mt_answered(items, block, FE_MESSAGES_SEARCH_PREFIX, "ws_", "web_search_call", &at);
    if (!item)
        return fe_messages_fail(err, "invalid_value", param,
                                "web_search_tool_result block must follow the server_tool_use block with id "
                                "'tool_use_id'");
    json_t *action = json_object_get(item, "action");
    if (json_is_object(content)) {
        if (!fe_messages_is(json_object_get(content, "type"), "web_search_tool_result_error"))
            return fe_messages_fail(err, "invalid_value", param, "content: Input should be a list or an error");
        json_object_set_new(item, "status", json_string("failed"));
        return 0;
    }
    if (!json_is_array(content))
        return fe_messages_fail(err, "invalid_type", param, "content: Input should be a valid list");
    json_t *sealed = fe_mt_open_search(seal, json_array_get(content, 0));
    if (sealed) {
        json_array_set_new(items, at, sealed); /* what the model was given, exactly */
        return 0;
    }
    json_t *sources = json_object_get(action, "sources");
    size_t i;
    json_t *r;
    json_array_foreach (content, i, r) {
        json_t *url = json_object_get(r, "url"), *title = json_object_get(r, "title");
        if (!fe_messages_is(json_object_get(r, "type"), "web_search_result") || !json_is_string(url)) {
            char p[160];
            snprintf(p, sizeof p, "%s.content.%zu", param, i);
            return fe_messages_fail(err, "invalid_value", p, "web_search_result blocks need a string url");
        }
        json_t *src = json_pack("{s:s, s:O}", "type", "url", "url", url);
        if (json_is_string(title))
            json_object_set(src, "title", title);
        json_array_append_new(sources, src);
    }
    return 0;
}

static int fe_mt_mcp_result(json_t *items, const json_t *block, const char *param, fe_error_t *err)
{
    json_t *content = json_object_get(block, "content");
    json_t *is_error = json_object_get(block, "is_error");
    size_t at = 0;
    json_t *item = fe_mt_answered(items, block, FE_MESSAGES_MCP_PREFIX, "mcp_", "mcp_call", &at);
    if (!item)
        return fe_messages_fail(err, "invalid_value", param,
                                "mcp_tool_result block must follow the mcp_tool_use block with id 'tool_use_id'");
    if (is_error && !json_is_boolean(is_error) && !json_is_null(is_error))
        return fe_messages_fail(err, "invalid_type", param, "is_error: Input should be a valid boolean");
    /* A string, or text blocks joined by newlines. */
    json_t *text = NULL;
    if (!content || json_is_null(content)) {
        text = json_string("");
    } else if (json_is_string(content)) {
        text = json_incref(content);
    } else if (json_is_array(content)) {
        size_t total = 1, i;
        json_t *b;
        json_array_foreach (content, i, b) {
            if (!fe_messages_is(json_object_get(b, "type"), "text") || !json_is_string(json_object_get(b, "text")))
                return fe_messages_fail(err, "invalid_value", param, "mcp_tool_result content blocks must be text");
            total += json_string_length(json_object_get(b, "text")) + 1;
        }
        char *buf = sb_xmalloc(total);
        size_t off = 0;
        json_array_foreach (content, i, b) {
            json_t *t = json_object_get(b, "text");
            if (i > 0)
                buf[off++] = '\n';
            memcpy(buf + off, json_string_value(t), json_string_length(t));
            off += json_string_length(t);
        }
        text = json_stringn(buf, off);
        free(buf);
    } else {
        return fe_messages_fail(err, "invalid_type", param, "content: Input should be a valid string or list");
    }
    bool failed = json_is_true(is_error);
    json_object_set_new(item, failed ? "error" : "output", text);
    json_object_set_new(item, "status", json_string(failed ? "failed" : "completed"));
    return 0;
}

bool fe_messages_server_block(const char *type)
{
    return !strcmp(type, "server_tool_use") || !strcmp(type, "web_search_tool_result") ||
           !strcmp(type, "mcp_tool_use") || !strcmp(type, "mcp_tool_result") ||
           !strcmp(type, "code_execution_tool_result");
}

int fe_messages_server_item(const fe_sealer_t *seal, json_t *items, const json_t *block, const char *type,
                            const char *param, fe_error_t *err)
{
    if (!strcmp(type, "server_tool_use"))
        return fe_mt_use_block(items, block, false, param, err);
    if (!strcmp(type, "mcp_tool_use"))
        return fe_mt_use_block(items, block, true, param, err);
    if (!strcmp(type, "web_search_tool_result"))
        return fe_mt_search_result(seal, items, block, param, err);
    if (!strcmp(type, "code_execution_tool_result"))
        return fe_messages_code_result(items, block, param, err);
    return fe_mt_mcp_result(items, block, param, err);
}
