/*
 * fe_anthropic_error: Anthropic's error body, for the Messages style's
 * replies and its stream's error event.
 */
#ifndef FE_ANTHROPIC_ERROR_H
#define FE_ANTHROPIC_ERROR_H

#include <jansson.h>

#include "fe_error.h"

/* {"type":"error","error":{"type","message"},"request_id"}: the error type
 * from the canonical kind, the HTTP status staying the reply's own;
 * request_id may be NULL (then left out). New reference. */
json_t *fe_anthropic_error_body(const fe_error_t *e, const char *request_id);

#endif
