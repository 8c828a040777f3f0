/*
 * emu_routes: the emulator's route table (see emu_routes.h). The table is
 * read top to bottom and the first match wins, so its order is part of the
 * behaviour: Gemini's paths come first (its v1 model methods
 * "/v1/models/<m>:<method>" share OpenAI's prefix), and the two
 * GET /v1/models rows go Anthropic's first, for a request that looks like an
 * Anthropic client's. /_search/... and /_pages/... (the emulator's web for
 * the web search tool, emu_search.c) share no prefix with the protocols.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "emu_embed.h"
#include "emu_image.h"
#include "emu_internal.h"
#include "emu_routes.h"
#include "emu_search.h"
#include "sb_alloc.h"

struct emu_route {
    const char *method;                            /* "GET", "POST"; NULL: any method */
    const char *path;                              /* the exact path; NULL: match alone decides */
    bool (*match)(const struct sb_emu_call *call); /* a further condition, or NULL */
    void (*handle)(struct sb_emu_call *call);
};

/* /v1beta, /v1beta/..., and "/v1/models/<m>:<method>" (Gemini's v1) rather than OpenAI's "/v1/models/<id>". */
static bool is_gemini(const struct sb_emu_call *call)
{
    const char *path = call->path;
    return !strcmp(path, "/v1beta") || !strncmp(path, "/v1beta/", 8) ||
           (!strncmp(path, "/v1/models/", 11) && strchr(path + 11, ':') != NULL);
}

/* Anthropic's clients send x-api-key / anthropic-version; OpenAI's send a bearer token. */
static bool looks_anthropic(const struct sb_emu_call *call)
{
    return !sb_emu_call_header(call, "Authorization") &&
           (sb_emu_call_header(call, "x-api-key") || sb_emu_call_header(call, "anthropic-version"));
}

/* The emulator's web: its search backends and their pages (emu_search.c). */
static bool is_search(const struct sb_emu_call *call)
{
    return !strncmp(call->path, "/_search/", 9) || !strncmp(call->path, "/_pages/", 8);
}

/* Gemini routes its own paths and methods (emu_gemini.c). */
static void gemini(struct sb_emu_call *call)
{
    sb_emu_gemini_route(call, !strcmp(call->method, "GET"));
}

/* OpenAI's Images API (emu_images.c). */
static void images_generations(struct sb_emu_call *call)
{
    sb_emu_images_handle(call, false);
}

static void images_edits(struct sb_emu_call *call)
{
    sb_emu_images_handle(call, true);
}

static const struct emu_route routes[] = {
    {NULL, NULL, is_search, sb_emu_search_handle},
    {NULL, NULL, is_gemini, gemini},
    {"POST", "/v1/chat/completions", NULL, sb_emu_openai_chat_handle},
    {"POST", "/v1/responses", NULL, sb_emu_openai_responses_handle},
    {"POST", "/v1/responses/input_tokens", NULL, sb_emu_openai_responses_count_handle},
    {"POST", "/v1/messages", NULL, sb_emu_anthropic_messages_handle},
    {"POST", "/v1/messages/count_tokens", NULL, sb_emu_anthropic_count_handle},
    {"POST", "/v1/embeddings", NULL, sb_emu_openai_embeddings_handle},
    {"POST", "/v1/images/generations", NULL, images_generations},
    {"POST", "/v1/images/edits", NULL, images_edits},
    {"GET", "/v1/models", looks_anthropic, sb_emu_anthropic_models_handle},
    {"GET", "/v1/models", NULL, sb_emu_openai_models_handle},
};

void sb_emu_route(struct sb_emu_call *call)
{
    for (size_t i = 0; i < sizeof routes / sizeof routes[0]; i++) {
        const struct emu_route *r = &routes[i];
        if ((r->method && strcmp(call->method, r->method)) || (r->path && strcmp(call->path, r->path)) ||
            (r->match && !r->match(call)))
            continue;
        r->handle(call);
        return;
    }
    if (!sb_emu_openai_check_auth(call)) {
        char *msg = sb_xasprintf("Invalid URL (%s %s)", call->method, call->path);
        sb_emu_openai_error(&call->reply, 404, msg, "invalid_request_error", NULL, NULL);
        free(msg);
    }
}
