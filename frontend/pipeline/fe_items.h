/*
 * fe_items: Responses-style input items: normalisation into canonical items
 * (sb_job.h; the built-in tool items of docs/tools.md too: web_search_call,
 * mcp_list_tools, mcp_call, mcp_approval_request, mcp_approval_response),
 * ids for stored items, walking content parts, and the checks
 * that need the whole context (function_call_output matched to a
 * function_call by call_id).
 */
#ifndef FE_ITEMS_H
#define FE_ITEMS_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"

/* Normalises a Responses `input` (a string or an array of items) into a new
 * array of canonical items. param names the field in messages ("input").
 * NULL with err on a bad item. */
json_t *fe_items_normalize(const json_t *input, const char *param, fe_error_t *err);

/* Normalises one content part of a message ("input_text", "input_image",
 * "input_file", ...); param names it in errors. New reference or NULL. */
json_t *fe_items_normalize_part(const json_t *part, const char *param, fe_error_t *err);

/* Gives every item without one an id, as OpenAI does for stored items. */
void fe_items_assign_ids(json_t *items);

/* Calls fn for every content part of every message item and every part of a
 * function_call_output's array output; stops early when fn returns false. */
typedef bool (*fe_items_part_fn)(json_t *part, void *arg);
void fe_items_foreach_part(json_t *items, fe_items_part_fn fn, void *arg);

/* Every function_call_output must answer a function_call earlier in items
 * (same call_id): 400 otherwise, as the real API does. */
int fe_items_check_calls(const json_t *items, fe_error_t *err);

#endif
