/*
 * fe_responses_stored: the endpoints over stored responses, GET and DELETE
 * /v1/responses/{id} and GET /v1/responses/{id}/input_items, scoped to the
 * caller's account (see fe_responses_stored.c).
 */
#ifndef FE_RESPONSES_STORED_H
#define FE_RESPONSES_STORED_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). */
void fe_responses_get(fe_request_t *r);
void fe_responses_delete(fe_request_t *r);
void fe_responses_input_items(fe_request_t *r);
/* POST /v1/responses/{id}/cancel: a background response (docs/background.md). */
void fe_responses_cancel(fe_request_t *r);

#endif
