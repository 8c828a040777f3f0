/*
 * fe_collect: folds a job's canonical event stream into a result: the output
 * items in order, usage, final status or error. Style-neutral; each style
 * renders the result in its own shape.
 *
 * tool_log events (one per built-in tool call the worker ran, docs/tools.md)
 * are not output: they become tool_calls rows (checked, bounded, see
 * fe_collect_tool_row), which the request log writes with the request's row
 * (fe_reqlog.h). No style sees them: fe_collect_renders() is false for them,
 * so the pipeline never hands them to a stream renderer.
 */
#ifndef FE_COLLECT_H
#define FE_COLLECT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "fe_error.h"
#include "fe_tokens.h"

typedef struct {
    json_t *items; /* array of completed output items of choice 0, by item_index */
    json_t *more;  /* choices 1..n-1 (Chat Completions n): {"items":[...], "status", "reason"} by choice - 1 */
    int64_t input_tokens, output_tokens, reasoning_tokens;
    bool usage_seen;
    fe_tokens_counter_t streamed; /* the deltas' text, estimated (fe_tokens.h): output of a job that never ends */
    bool done;
    bool failed;      /* done with an error */
    fe_error_t error; /* when failed */
    char status[16];  /* "completed" | "incomplete" */
    char incomplete_reason[32];
    char choice0_status[16]; /* from choice_done for choice 0; "" if none came */
    char choice0_reason[32];
    char model[128];     /* model that answered */
    int64_t upstream_us; /* -1 unknown */
    /* tool_calls rows, in arrival order: {"ts_ms", "kind", "outcome", and
     * when known "server", "name", "item_id", "duration_ms", "bytes_in",
     * "bytes_out", "error", "model" (a fallback's earlier model),
     * "response_id" (once stored)}; at most FE_COLLECT_TOOL_CALLS_MAX. Kept
     * across a fallback (fe_collect_restart): those calls did run. */
    json_t *tool_calls;
} fe_collect_t;

#define FE_COLLECT_TOOL_CALLS_MAX 1000 /* tool_calls rows one request keeps (more are dropped) */
#define FE_COLLECT_TOOL_ERROR_MAX 300  /* characters of a tool call's error kept */

void fe_collect_init(fe_collect_t *c);
void fe_collect_free(fe_collect_t *c);
/* Applies one event; returns true when it was the final one. */
bool fe_collect_event(fe_collect_t *c, const json_t *ev);

/* Whether a (non-final) event is for the client: false for tool_log, which
 * only the request log reads. */
bool fe_collect_renders(const json_t *ev);

/* The tool_calls row for a tool_log event, or NULL when its kind or outcome
 * is not one docs/tools.md names. Strings are cut (error to
 * FE_COLLECT_TOOL_ERROR_MAX characters, after anything shaped like a key is
 * redacted: the worker never puts a header value there, this is the second
 * line), numbers are clamped to >= 0 (duration_ms to an int). ts_ms is
 * the row's time. A new reference. */
json_t *fe_collect_tool_row(const json_t *ev, int64_t ts_ms);

/* Before a fallback's job: the result starts again (as after
 * fe_collect_init), but the tool_calls rows so far stay, each marked with
 * the model that made it (model, the one that failed). */
void fe_collect_restart(fe_collect_t *c, const char *model);

/* The response was stored as response_id: its tool_calls rows name it. */
void fe_collect_tool_calls_stored(fe_collect_t *c, const char *response_id);

/* Per choice (0 is the only one unless n > 1): its output items (borrowed,
 * an empty array for a choice that produced nothing), its status
 * ("completed" | "incomplete") and incomplete reason ("" if none). */
const json_t *fe_collect_choice_items(const fe_collect_t *c, int choice);
const char *fe_collect_choice_status(const fe_collect_t *c, int choice);
const char *fe_collect_choice_reason(const fe_collect_t *c, int choice);

#endif
