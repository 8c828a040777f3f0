/*
 * fe_conversations_api: the Conversations API (issue 18,
 * schema/012_conversations.sql), OpenAI's shapes:
 *
 *   POST   /v1/conversations                     {items?, metadata?} -> conversation
 *   GET    /v1/conversations/{id}                -> conversation
 *   POST   /v1/conversations/{id}                {metadata} -> conversation
 *   DELETE /v1/conversations/{id}                -> {id, object: "conversation.deleted", deleted}
 *   GET    /v1/conversations/{id}/items          limit, order (desc), after, before -> list
 *   POST   /v1/conversations/{id}/items          {items} -> list of the items added
 *   GET    /v1/conversations/{id}/items/{item}   -> the item
 *   DELETE /v1/conversations/{id}/items/{item}   -> conversation
 *
 * Items are normalised as a response's input items are (fe_items.h) and get
 * ids; at most FE_CONV_ITEMS_MAX per call, as OpenAI's. Everything is
 * scoped to the caller's account: another account's conversation is a 404.
 * POST /v1/responses with `conversation` reads and appends them
 * (pipeline/fe_generate.c).
 */
#ifndef FE_CONVERSATIONS_API_H
#define FE_CONVERSATIONS_API_H

#include "fe_request.h"

#define FE_CONV_ITEMS_MAX 20
#define FE_CONV_ITEM_ID_MAX 136

void fe_conversations_create(fe_request_t *r);
void fe_conversations_get(fe_request_t *r);
void fe_conversations_update(fe_request_t *r);
void fe_conversations_delete(fe_request_t *r);
void fe_conversations_items_list(fe_request_t *r);
void fe_conversations_items_create(fe_request_t *r);
void fe_conversations_item_get(fe_request_t *r);
void fe_conversations_item_delete(fe_request_t *r);

#endif
