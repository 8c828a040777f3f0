/*
 * fe_responses_store: keeps a finished Responses answer, which
 * previous_response_id chains from and GET /v1/responses/{id} returns
 * (style/responses/fe_responses_stored.c reads it back).
 */
#ifndef FE_RESPONSES_STORE_H
#define FE_RESPONSES_STORE_H

#include <jansson.h>

#include "fe_request.h"
#include "sb_db.h"

/* Stores r's response (the Responses style's fe_style_t.store): rendered
 * (the body the client gets), the context it inherited, its own input, and
 * the output with reasoning in plain form (the stored copy is what
 * previous_response_id chains from; sealing is only for what the client
 * holds). One statement; done(res, err, r) when it is over. */
void fe_responses_store_save(fe_request_t *r, const json_t *rendered, sb_db_cb done);

#endif
