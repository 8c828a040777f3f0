/*
 * fe_responses_render: the Responses style's rendering
 * (fe_responses_render.c), and what it shares with its stream renderer
 * (fe_stream_responses.c).
 */
#ifndef FE_RESPONSES_RENDER_H
#define FE_RESPONSES_RENDER_H

#include <jansson.h>

#include "fe_request.h"

/* The Response object for r. status NULL: the finished response, from
 * r->result; "in_progress": no output and no usage yet (a stream's first
 * events); "failed": the items completed so far and `error`. New reference,
 * or NULL when the output cannot be rendered. */
/* The finished Response object for r (fe_responses_object(r, NULL, NULL)). */
json_t *fe_responses_render(fe_request_t *r);

json_t *fe_responses_object(fe_request_t *r, const char *status, const fe_error_t *error);

/* Output items as a client sees them: reasoning sealed into
 * encrypted_content when asked, private upstream fields stripped otherwise.
 * New reference, or NULL when sealing fails. */
json_t *fe_responses_public_items(const fe_request_t *r, const json_t *items);

/* A function_call item whose name is a flattened namespace tool of this
 * request ("<namespace>__<name>") gets back its name and namespace, as
 * OpenAI shows the call. Other items are left alone. */
void fe_responses_split_name(const fe_request_t *r, json_t *item);

#endif
