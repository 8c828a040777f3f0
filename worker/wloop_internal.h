/*
 * wloop_internal: the tool loop's private types, shared by wloop.c (the
 * loop: its states, the model calls, the end) and wloop_exec.c (the model's
 * events translated, and the built-in tool calls run), and by nothing else.
 */
#ifndef SB_WLOOP_INTERNAL_H
#define SB_WLOOP_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "worker_internal.h"
#include "wtool.h"
#include "wtool_mcp.h"
#include "wtool_web.h"

enum sb_wloop_state {
    SB_WLOOP_PREPARE, /* MCP servers being listed, approved calls running; no model call yet */
    SB_WLOOP_MODEL,   /* a model call is running (its tool calls may be starting) */
    SB_WLOOP_TOOLS,   /* the model call is over; its tool calls may still be running */
    SB_WLOOP_DONE,    /* the job has its final event (or was abandoned) */
};

/* One built-in step: a listing, a tool call the model made, or an approved
 * call from the input. */
typedef struct sb_wexec {
    struct sb_wloop *l;     /* borrowed: its loop */
    enum sb_tool_kind kind; /* SB_TOOL_NONE: a reserved name that names nothing (the model is told) */
    bool list;              /* an MCP server's listing (kind NONE) */
    bool approval;          /* shown as an mcp_approval_request, not run */
    bool running;           /* its I/O is in flight or due to start (counted in l->pending) */
    json_t *args;           /* owned while its I/O is due to start: the call's arguments (an object) */
    int iteration;          /* the model call it belongs to (0: before the first) */
    int index;              /* output index of its item; -1 while it has none */
    size_t server;          /* MCP: which server */
    const char *tool;       /* MCP: the tool's name (borrowed from the plan) */
    json_t *item;           /* owned: the built-in item as shown (NULL when none is shown) */
    json_t *call;           /* owned: the model's function_call, for the model's view; NULL for an input approval */
    json_t *output_item;    /* owned: its function_call_output for the model's view; NULL until done */
    json_t *approval_out;   /* borrowed: an approved input call's function_call_output in the plan's input */
    int64_t started_ms;     /* monotonic */
    size_t bytes_out;       /* argument bytes sent */
    sb_web_op_t *web;       /* owned while a web op is in flight */
    void *step;             /* owned while a data tool's step runs (wloop_tools.c); freed by sb_wloop_tool_cancel */
    const char *log_server; /* the tool_calls row's server for a data tool (static or the loop's) */
    struct sb_wexec *next;  /* the loop's list, in creation order */
} sb_wexec_t;

/* One upstream item of the running model call: what it became. */
typedef struct sb_wloop_slot {
    int index;        /* its output index, or -1: not shown (a built-in call's) */
    sb_wexec_t *exec; /* the call of a reserved function, or NULL */
} sb_wloop_slot_t;

struct sb_wloop {
    sb_wjob_t *j; /* borrowed: the job (j->loop is this) */
    const sb_wloop_ops_t *ops;
    enum sb_wloop_state state;
    sb_tool_plan_t *plan; /* owned */
    json_t *view;         /* owned: the model's output so far and the tool results, as the model sees them */
    json_t *model_job;    /* owned: the running call's job (j->call_job) */
    json_t *sources;      /* owned: every source searched or opened in this response, for citations */
    json_t *iter;         /* owned: the running call's translated events (the strict check reads them) */
    size_t iter_events_base;
    int iter_index_base;
    struct event *kick; /* owned: the next step, at a safe point */
    sb_mcp_t **mcp;     /* owned: one client per server, made when first needed */
    sb_wexec_t *execs, *execs_tail;
    sb_wloop_slot_t *slots; /* the running call's items, by upstream item_index */
    size_t n_slots;
    int next_index;           /* the next output index */
    int iterations;           /* model calls made */
    bool iter_builtin;        /* the running call called a built-in tool: the model is called again */
    bool stop;                /* the response ends after this call's tools (approval, client call, cut short) */
    int pending;              /* listings and tool calls in flight */
    long long tool_calls;     /* built-in calls run (max_tool_calls) */
    long long max_tool_calls; /* -1: none */
    int iter_calls;           /* built-in calls the running model call started (SB_WLOOP_MAX_TURN_CALLS) */
    bool have_usage;
    int64_t usage_in, usage_out, usage_reasoning, upstream_us;
    bool incomplete;
    const char *incomplete_reason; /* static */
    struct sb_wci *ci;             /* owned: the code interpreter's sandbox and container (wloop_code.c), or NULL */
    json_t *cited_files;           /* owned: [{file_id, filename}] file search returned, for file_citation */
};

extern const sb_wcall_ops_t sb_wloop_call_ops;

/* wloop_step.c: what the loop and every step use (below all of them) */
/* Appends an event to the job's pending events (and the running call's),
 * and sends them when the job streams. Steals ev. */
void sb_wloop_emit(sb_wloop_t *l, json_t *ev);
/* A zero-delay wake-up: the next step (due I/O, the next call, the end)
 * runs from the loop, never inside the callback that made it due. */
void sb_wloop_kick(sb_wloop_t *l);
/* A listing or tool call is over (pending goes down; the loop may move on). */
void sb_wloop_tool_done(sb_wloop_t *l);

/* wloop_exec.c: the model's events translated, the MCP and web steps. */
/* The listings and approved calls of PREPARE, started. */
void sb_wloop_prepare(sb_wloop_t *l);
/* Starts the I/O of the steps due to start: never from inside a transfer's
 * callback (curl is not re-entrant there), so from the loop's kick. */
void sb_wloop_start_due(sb_wloop_t *l);
/* One non-final event of the running model call. */
void sb_wloop_translate(sb_wloop_t *l, json_t *ev);
/* Forgets the running call's items (a new call, or a strict retry). */
void sb_wloop_slots_reset(sb_wloop_t *l);
/* No built-in call may run any more (max_tool_calls). */
bool sb_wloop_calls_spent(const sb_wloop_t *l);
void sb_wexec_free(sb_wexec_t *e);

/* wloop_step.c, continued. */
/* A step is over: its item done, its output for the model (capped), its
 * log row written by the caller before; then the loop may move on. */
void sb_wexec_finish(sb_wexec_t *e, const char *model_text);
/* One tool_calls row (a tool_log event) for step e. */
void sb_wloop_log(sb_wloop_t *l, sb_wexec_t *e, const char *kind, const char *name, const char *outcome,
                  size_t bytes_in, const char *error);
/* A tool step's time: the worker's limit cut to the job's deadline. */
int64_t sb_wloop_timeout(const sb_wloop_t *l);
/* text cut to the output cap on a UTF-8 boundary, saying so (malloc'd). */
char *sb_wloop_cap(const sb_wloop_t *l, const char *text);

/* wloop_tools.c: the code interpreter, file search and image generation. */
/* The item a data tool's call shows from the start (e->item, e->index set by the caller). */
json_t *sb_wloop_tool_item(sb_wloop_t *l, sb_wexec_t *e);
/* Runs a data tool's call with args (an object, borrowed); from the loop's kick. */
void sb_wloop_tool_start(sb_wexec_t *e, const json_t *args);
/* The model streamed more of a data tool call's arguments (all of them so far). */
void sb_wloop_tool_args(sb_wexec_t *e, const char *args, size_t len);
/* Stops e's step without a callback (the loop ends, or e is freed). */
void sb_wloop_tool_cancel(sb_wexec_t *e);
/* Frees the loop-wide state of the data tools (the sandbox). */
void sb_wloop_tools_free(sb_wloop_t *l);
/* A message's file_citation annotations (events and in the item). */
void sb_wloop_tools_cite(sb_wloop_t *l, int index, json_t *item);

#endif
