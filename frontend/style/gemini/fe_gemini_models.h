/*
 * fe_gemini_models: Google's model endpoints, GET /v1beta/models and GET
 * /v1beta/models/{model} (see fe_gemini_models.c).
 */
#ifndef FE_GEMINI_MODELS_H
#define FE_GEMINI_MODELS_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). */
void fe_gemini_models_list(fe_request_t *r);
void fe_gemini_model_get(fe_request_t *r);

#endif
