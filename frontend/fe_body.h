/*
 * fe_body: reading a request body as JSON within limits: size, nesting depth
 * (checked by a scan before parsing, so a hostile body cannot drive the
 * parser's recursion), and a top-level object.
 */
#ifndef FE_BODY_H
#define FE_BODY_H

#include <event2/http.h>
#include <jansson.h>

#include "fe_error.h"

/* Returns a new object, or NULL with err filled (400/413). */
json_t *fe_body_json(struct evhttp_request *http, size_t max_bytes, int max_depth, fe_error_t *err);

/* Deepest nesting of arrays/objects in buf, ignoring brackets inside strings. */
int fe_body_depth(const char *buf, size_t len);

#endif
