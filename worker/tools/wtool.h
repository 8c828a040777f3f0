/*
 * wtool: the pure half of the worker's tool loop (docs/tools.md): which
 * built-in tools of a job the gateway runs, what the model is offered for
 * them (function tools under reserved names), what a reserved name the
 * model calls means, and the job's input rewritten into what the model
 * understands (built-in items of earlier turns become function calls and
 * their outputs). No I/O: wloop.c runs the loop, wtool_mcp.c and
 * wtool_web.c execute the tools.
 */
#ifndef WTOOL_H
#define WTOOL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Reserved function names (docs/tools.md). */
#define SB_TOOL_PREFIX "sb__"
#define SB_TOOL_WEB_SEARCH_FN "sb__web_search"
#define SB_TOOL_OPEN_PAGE_FN "sb__open_page"
#define SB_TOOL_FIND_IN_PAGE_FN "sb__find_in_page"
/* Most gateway-run MCP servers in one request (each is listed at once). */
#define SB_TOOL_MAX_SERVERS 32
/* Longest function name every upstream kind takes. */
#define SB_TOOL_NAME_MAX 64

enum sb_tool_kind {
    SB_TOOL_NONE = 0,     /* not a reserved name of this job */
    SB_TOOL_WEB_SEARCH,   /* sb__web_search {query} */
    SB_TOOL_OPEN_PAGE,    /* sb__open_page {url} */
    SB_TOOL_FIND_IN_PAGE, /* sb__find_in_page {url, pattern} */
    SB_TOOL_MCP,          /* sb__mcp<k>__<tool> */
};

/* One gateway-run MCP server of the job (the k-th "mcp" tool). */
typedef struct sb_tool_server {
    const json_t *tool; /* borrowed: the request's {"type":"mcp",...} */
    const char *label;  /* borrowed: its server_label */
    json_t *tools;      /* owned: the server's tools ([{name,input_schema,...}]), NULL until listed */
    bool listed;        /* its list is known (from the input's mcp_list_tools, or listed now) */
} sb_tool_server_t;

/* An approval answered in the input: the call to run (approve) or to tell
 * the model was denied, before the first model call. */
typedef struct sb_tool_approval {
    json_t *request; /* owned: the mcp_approval_request item */
    bool approve;
    size_t server;  /* index into servers */
    json_t *output; /* borrowed: the function_call_output placed in `input` for it; set its "output" */
} sb_tool_approval_t;

typedef struct sb_tool_plan {
    const json_t *web_search; /* borrowed: the gateway-run web search tool, or NULL */
    bool pages;               /* open_page / find_in_page offered (web search without external_web_access:false) */
    sb_tool_server_t *servers;
    size_t n_servers;
    json_t *other_tools; /* owned: the request's tools the gateway does not run (functions, native built-ins) */
    json_t *input;       /* owned: the rewritten input */
    sb_tool_approval_t *approvals;
    size_t n_approvals;
    json_t *forced; /* owned: tool_choice for the first model call when the client forced a built-in, or NULL */
} sb_tool_plan_t;

/*
 * The plan of a job (borrowed; must outlive the plan). 0 with *out NULL when
 * the gateway runs no tool for it (no built-in tool, or every one native),
 * 0 with *out set (owned), or -EINVAL with *err a final 400 error event (a
 * client function under a reserved name, a built-in tool without what it
 * needs).
 */
int sb_tool_plan_new(const json_t *job, sb_tool_plan_t **out, json_t **err) __attribute__((warn_unused_result));
void sb_tool_plan_destroy(sb_tool_plan_t **p);

/* The tools array the model is offered (new reference): the other tools,
 * and, with builtins, the reserved functions of web search and of every
 * listed server's allowed tools. */
json_t *sb_tool_plan_offer(const sb_tool_plan_t *p, bool builtins);

/* What a function name the model called means; for SB_TOOL_MCP, *server
 * and *tool (borrowed from the server's list) say which. */
enum sb_tool_kind sb_tool_plan_resolve(const sb_tool_plan_t *p, const char *name, size_t *server, const char **tool);

/* The reserved name of tool `tool` of server k (out: SB_TOOL_NAME_MAX + 1). */
void sb_tool_mcp_name(const sb_tool_plan_t *p, size_t k, const char *tool, char *out, size_t out_len);

/* True when a call of `tool` on server k needs the client's approval
 * (require_approval; OpenAI's default is "always"). */
bool sb_tool_needs_approval(const sb_tool_plan_t *p, size_t k, const char *tool);

/* Whether the request lets server k's tool be called (allowed_tools, on the
 * server's list when it is known, else on the names it gives). */
bool sb_tool_may_call(const sb_tool_plan_t *p, size_t k, const char *tool);

/* Filters a server's listed tools by its allowed_tools, each name once (new
 * reference). */
json_t *sb_tool_allowed(const json_t *mcp_tool, const json_t *tools);

/*
 * Citations: the url_citation annotations of a message text (new
 * reference, an array, maybe empty): every markdown link [..](url) and every
 * bare URL whose url is one of sources' ([{url,title}]). Indexes count
 * Unicode code points; the span is the whole link.
 */
json_t *sb_tool_citations(const char *text, const json_t *sources);

#endif
