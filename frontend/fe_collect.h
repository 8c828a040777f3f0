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

typedef struct {
    json_t *items; /* array of completed output items, by item_index */
    int64_t input_tokens, output_tokens, reasoning_tokens;
    bool done;
    bool failed;               /* done with an error */
    fe_error_t error;          /* when failed */
    char status[16];           /* "completed" | "incomplete" */
    char incomplete_reason[32];
    char model[128];           /* model that answered */
    int64_t upstream_ms;       /* -1 unknown */
} fe_collect_t;

void fe_collect_init(fe_collect_t *c);
void fe_collect_free(fe_collect_t *c);
/* Applies one event; returns true when it was the final one. */
bool fe_collect_event(fe_collect_t *c, const json_t *ev);

#endif
