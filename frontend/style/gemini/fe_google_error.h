/*
 * fe_google_error: Google's error body, for the Generate Content style's
 * replies and its stream's last element.
 */
#ifndef FE_GOOGLE_ERROR_H
#define FE_GOOGLE_ERROR_H

#include <jansson.h>

#include "fe_error.h"

/* {"error":{"code","message","status"}}: code the HTTP status, status its
 * google.rpc.Code name. New reference. The style's error_body: request_id
 * is not part of Google's body (the x-request-id header carries it). */
json_t *fe_google_error_body(const fe_error_t *e, const char *request_id);

#endif
