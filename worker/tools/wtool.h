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
#define SB_TOOL_PYTHON_FN "sb__python"
#define SB_TOOL_FILE_SEARCH_FN "sb__file_search"
#define SB_TOOL_IMAGE_FN "sb__image_generation"
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
    SB_TOOL_CODE,         /* sb__python {code} */
    SB_TOOL_FILE_SEARCH,  /* sb__file_search {queries} */
    SB_TOOL_IMAGE,        /* sb__image_generation {prompt, edit} */
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
    const json_t *code_interpreter; /* borrowed: the gateway-run code_interpreter tool, or NULL */
    const json_t *file_search;      /* borrowed: the gateway-run file_search tool, or NULL */
    const json_t *image_generation; /* borrowed: the gateway-run image_generation tool, or NULL */
    json_t *last_image;             /* owned: base64 of the chain's newest image (for an edit), or NULL */
    json_t *containers;             /* owned: the container ids the chain's code_interpreter_calls used */
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
 * The code interpreter, file search and image generation (wtool_builtin.c).
 */

/* Takes a tool of the request for the plan when it is one of the three and
 * the gateway runs it (not "native"); true when taken. */
bool sb_tool_builtin_take(sb_tool_plan_t *p, const json_t *job, const json_t *tool);
/* Appends the reserved functions of the plan's three tools to `tools`. */
void sb_tool_builtin_offer(const sb_tool_plan_t *p, json_t *tools);
/* The kind of a reserved name among the three, or SB_TOOL_NONE. */
enum sb_tool_kind sb_tool_builtin_resolve(const sb_tool_plan_t *p, const char *name);
/* An earlier turn's item of the three kinds, rewritten into the call the
 * model made and what it was given (appended to input); false when the
 * item is of none of them, or its kind is native. */
bool sb_tool_builtin_replay(sb_tool_plan_t *p, const json_t *job, const json_t *item, json_t *input);
/* Is `type` one of the three item types the gateway runs for this job? */
bool sb_tool_builtin_item(const json_t *job, const char *type);

/* A replayed call: {type:function_call, call_id, name, arguments}, with the
 * Gemini thought_signature of `from` when it has one (new reference). */
json_t *sb_tool_call_item(const char *call_id, const char *name, const char *arguments, const json_t *from);
/* A replayed call's output (new reference). */
json_t *sb_tool_output_item(const char *call_id, const char *output);

/*
 * The code of a sb__python call from the arguments written so far (the
 * model streams them): the decoded prefix of the "code" string, up to the
 * last whole character (malloc'd; "" when none yet).
 */
char *sb_tool_code_partial(const char *args, size_t len);

/*
 * file_citation annotations of a message text (new reference, an array):
 * every "[filename]" (not a markdown link) naming one of files
 * ([{file_id, filename}]); index is the code point offset of the marker.
 */
json_t *sb_tool_file_citations(const char *text, const json_t *files);

/*
 * Citations: the url_citation annotations (or, for a source carrying an
 * "annotation" object, that object with start_index and end_index: a
 * container's file, cited as container_file_citation) of a message text (new
 * reference, an array, maybe empty): every markdown link [..](url) and every
 * bare URL whose url is one of sources' ([{url,title}]). Indexes count
 * Unicode code points; the span is the whole link.
 */
json_t *sb_tool_citations(const char *text, const json_t *sources);

#endif
