/*
 * fe_prompt: prompt templates (the Responses `prompt` parameter): loads the
 * template version named by r->parsed.prompt_ref from PostgreSQL (scoped to the
 * caller's account: another account's prompt is a 404, like a missing one),
 * fills its {{variables}}, and puts the result in front of the request:
 * the template's instructions apply unless the request has its own, and its
 * input items come before the request's input.
 *
 * Variables are strings, or input parts (input_text, input_image,
 * input_file); a part placed in a text splits it around the part.
 */
#ifndef FE_PROMPT_H
#define FE_PROMPT_H

#include <jansson.h>

#include "fe_request.h"

/* Validates the request's `prompt` value (shape only). 0 or -1 with err. */
int fe_prompt_check_ref(const json_t *ref, fe_error_t *err);

/* Asynchronous preparation step (fe_generate.c): expands the template into
 * r->parsed.canonical and calls done(r), or ends the request (404 unknown
 * prompt or version, 400 missing variable). */
void fe_prompt_expand(fe_request_t *r, fe_request_then_fn done);

/* The pure part: a template version body {instructions?, input?} and the
 * variables -> *instructions (new string reference or NULL) and the
 * normalised input items (new array). NULL with err (400) on a missing
 * variable or a bad template. */
json_t *fe_prompt_render(const json_t *body, const json_t *variables, json_t **instructions, fe_error_t *err);

#endif
