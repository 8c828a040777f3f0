/*
 * fe_responses_render: the Responses style's rendering
 * (fe_responses_render.c), and what it shares with its stream renderer
 * (fe_stream_responses.c).
 */
#ifndef FE_RESPONSES_RENDER_H
#define FE_RESPONSES_RENDER_H

#include <jansson.h>

#include "fe_style.h"

/* The finished Response object (the style's render):
 * fe_responses_object(res, ctx, NULL, NULL). */
json_t *fe_responses_render(const fe_collect_t *res, const fe_render_ctx_t *ctx);

/* The Response object for res. status NULL: the finished response;
 * "in_progress": no output and no usage yet (a stream's first events);
 * "failed": the items completed so far and `error`. New reference, or NULL
 * when the output cannot be rendered. */
json_t *fe_responses_object(const fe_collect_t *res, const fe_render_ctx_t *ctx, const char *status,
                            const fe_error_t *error);

/* Output items as a client sees them: reasoning sealed into
 * encrypted_content when asked (parsed->seal_reasoning), private upstream
 * fields stripped otherwise. New reference, or NULL when sealing fails. */
json_t *fe_responses_public_items(const fe_render_ctx_t *ctx, const json_t *items);

/* One item as a client sees it, changed in place: private fields stripped
 * (reasoning's upstream fields, web_search_call's sb_output), and a
 * web_search_call's action.sources unless the request included
 * "web_search_call.action.sources" (style_state "include_sources"). */
void fe_responses_public_item(const fe_parsed_t *parsed, json_t *item);

/* A function_call item whose name is a flattened namespace tool of this
 * request ("<namespace>__<name>", kept by parse in style_state
 * "namespaced") gets back its name and namespace, as OpenAI shows the call.
 * Other items are left alone. */
void fe_responses_split_name(const fe_parsed_t *parsed, json_t *item);

/* A resumed Responses stream (GET /v1/responses/{id}?stream=true&
 * starting_after=n, docs/background.md): the renderer whose state this is
 * (fe_stream_responses, fe_stream_state) numbers every event as before
 * but writes only those after sequence number n. */
void fe_stream_responses_start_after(void *state, long long n);

#endif
