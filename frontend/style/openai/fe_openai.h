/*
 * fe_openai: what OpenAI's two request styles (Responses, Chat Completions)
 * share on the wire besides their bodies: how a caller presents its key,
 * and OpenAI's error body.
 */
#ifndef FE_OPENAI_H
#define FE_OPENAI_H

#include <jansson.h>
#include <stddef.h>

#include "fe_error.h"
#include "sb_http.h"

/* "Authorization: Bearer KEY": the key (borrowed from the request's headers,
 * surrounding blanks trimmed) with *len set, or NULL when absent or empty.
 * The Messages style takes it too (Anthropic's 1.x SDK sends it). */
const char *fe_openai_bearer_key(sb_http_req_t *http, size_t *len);

/* OpenAI's error body, {"error":{"message","type","param","code"}}; type
 * from the canonical kind (new reference). The two styles' error_body:
 * request_id is not part of it (the x-request-id header carries it). */
json_t *fe_openai_error_body(const fe_error_t *e, const char *request_id);

#endif
