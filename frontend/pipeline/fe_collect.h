/*
 * fe_collect: folds a job's canonical event stream into a result: the output
 * items in order, usage, final status or error. Style-neutral; each style
 * renders the result in its own shape.
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
    int64_t upstream_ms; /* -1 unknown */
} fe_collect_t;

void fe_collect_init(fe_collect_t *c);
void fe_collect_free(fe_collect_t *c);
/* Applies one event; returns true when it was the final one. */
bool fe_collect_event(fe_collect_t *c, const json_t *ev);

/* Per choice (0 is the only one unless n > 1): its output items (borrowed,
 * an empty array for a choice that produced nothing), its status
 * ("completed" | "incomplete") and incomplete reason ("" if none). */
const json_t *fe_collect_choice_items(const fe_collect_t *c, int choice);
const char *fe_collect_choice_status(const fe_collect_t *c, int choice);
const char *fe_collect_choice_reason(const fe_collect_t *c, int choice);

#endif
