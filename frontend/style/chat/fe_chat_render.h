/*
 * fe_chat_render: the Chat Completions style's rendering of a result
 * (fe_chat_render.c).
 */
#ifndef FE_CHAT_RENDER_H
#define FE_CHAT_RENDER_H

#include <jansson.h>

#include "fe_request.h"

/* The chat.completion for r's result, one choice per r->parsed.n (new
 * reference). */
json_t *fe_chat_render(fe_request_t *r);

#endif
