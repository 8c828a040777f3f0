/*
 * fe_router: maps method + path to an endpoint and its API style. A path
 * that matches nothing (e.g. a base address given with the endpoint path
 * twice, /v1/chat/completions/v1/chat/completions) is a 404.
 */
#ifndef FE_ROUTER_H
#define FE_ROUTER_H

#include "fe_generate.h" /* the style files' endpoints call into the pipeline (until fe_routes.c) */
#include "fe_request.h"

typedef struct {
    const char *method;  /* "GET", "POST", "DELETE" */
    const char *pattern; /* exact path; "{}" stands for one id segment */
    const fe_style_t *style;
    fe_endpoint_fn fn;
} fe_route_t;

enum fe_route_match { FE_ROUTE_OK, FE_ROUTE_NO_PATH, FE_ROUTE_BAD_METHOD };

/* On FE_ROUTE_OK sets *route and *arg (a new string or NULL). */
enum fe_route_match fe_router_match(const char *method, const char *path, const fe_route_t **route, char **arg);

/* The style whose error body a path gets when no route matched. */
const fe_style_t *fe_router_style_for_path(const char *path);

extern const fe_style_t fe_style_responses;
extern const fe_style_t fe_style_chat;
extern const fe_style_t fe_style_messages; /* fe_style_messages.c */
extern const fe_style_t fe_style_gemini;   /* fe_style_gemini.c: Generate Content */

/* Endpoints. */
void fe_responses_get(fe_request_t *r);
void fe_responses_delete(fe_request_t *r);
void fe_responses_input_items(fe_request_t *r);
void fe_models_list(fe_request_t *r); /* GET /v1/models and /v1/models/{id} */
/* The style of a request to a path OpenAI's and Anthropic's APIs share
 * (/v1/models): Anthropic's when it carries anthropic-version, else dflt. */
const fe_style_t *fe_models_style(fe_http_req_t *http, const fe_style_t *dflt);
void fe_files_upload(fe_request_t *r);
void fe_files_get(fe_request_t *r);
void fe_files_content(fe_request_t *r);
void fe_files_delete(fe_request_t *r);
void fe_files_list(fe_request_t *r);
void fe_chat_stored_get(fe_request_t *r);
void fe_chat_stored_messages(fe_request_t *r);
void fe_chat_stored_update(fe_request_t *r);
void fe_chat_stored_delete(fe_request_t *r);
void fe_chat_stored_list(fe_request_t *r);
void fe_messages_count_tokens(fe_request_t *r);
void fe_gemini_models_list(fe_request_t *r);
void fe_gemini_model_get(fe_request_t *r);
void fe_gemini_count_tokens(fe_request_t *r);

#endif
