/*
 * fe_chat_store: keeps a finished chat completion (store defaults to true in
 * Chat Completions), which GET /v1/chat/completions/{id} and its list return
 * (style/chat/fe_chat_stored.c reads it back).
 */
#ifndef FE_CHAT_STORE_H
#define FE_CHAT_STORE_H

#include <jansson.h>

#include "fe_request.h"
#include "sb_db.h"

/* Stores r's completion (the Chat Completions style's fe_style_t.store):
 * rendered (the chat.completion the client gets), the request's messages as
 * sent, its metadata. One statement; done(res, err, r) when it is over. */
void fe_chat_store_save(fe_request_t *r, const json_t *rendered, sb_db_cb done);

#endif
