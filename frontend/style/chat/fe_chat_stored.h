/*
 * fe_chat_stored: the endpoints over stored chat completions (list, get,
 * update metadata, delete, messages), scoped to the caller's account (see
 * fe_chat_stored.c).
 */
#ifndef FE_CHAT_STORED_H
#define FE_CHAT_STORED_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). */
void fe_chat_stored_list(fe_request_t *r);
void fe_chat_stored_get(fe_request_t *r);
void fe_chat_stored_update(fe_request_t *r);
void fe_chat_stored_delete(fe_request_t *r);
void fe_chat_stored_messages(fe_request_t *r);

#endif
