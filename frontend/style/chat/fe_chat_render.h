/*
 * fe_chat_render: the Chat Completions style's rendering of a result
 * (fe_chat_render.c).
 */
#ifndef FE_CHAT_RENDER_H
#define FE_CHAT_RENDER_H

#include <jansson.h>

#include "fe_style.h"

/* The chat.completion for res, one choice per parsed->n (the style's
 * render; new reference). */
json_t *fe_chat_render(const fe_collect_t *res, const fe_render_ctx_t *ctx);

#endif
