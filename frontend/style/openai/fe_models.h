/*
 * fe_models: GET /v1/models and GET /v1/models/{id}, the models the key's
 * token group may call, in OpenAI's or Anthropic's shape (see fe_models.c).
 */
#ifndef FE_MODELS_H
#define FE_MODELS_H

#include "fe_request.h"
#include "sb_http.h"

/* Endpoint of both routes (fe_routes.c). */
void fe_models_list(fe_request_t *r);

/* The style of a request to a path OpenAI's and Anthropic's APIs share
 * (/v1/models): Anthropic's when it carries anthropic-version, else dflt
 * (a route's style_of, fe_router.h). */
const fe_style_t *fe_models_style(sb_http_req_t *http, const fe_style_t *dflt);

#endif
