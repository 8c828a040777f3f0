/*
 * fe_body: reading a request body as JSON within limits: size, nesting depth
 * and element count (checked by a scan before parsing, so a hostile body can
 * drive neither the parser's recursion nor its allocations), and a top-level
 * object.
 */
#ifndef FE_BODY_H
#define FE_BODY_H

#include <event2/buffer.h>
#include <jansson.h>
#include <stddef.h>

#include "fe_error.h"

/* What the scan before parsing found in a JSON text. Brackets, braces and
 * commas inside strings (escapes included) are not structure. */
typedef struct {
    int depth;       /* deepest nesting of arrays/objects */
    size_t elements; /* array elements plus object members, at every level */
} fe_body_stats_t;

/* Returns a new object, or NULL with err filled (400/413): 400 json_too_deep
 * over max_depth, 400 json_too_many_elements over the element limit
 * (fe_body_set_max_elements). */
json_t *fe_body_json(struct evbuffer *in, size_t max_bytes, int max_depth, fe_error_t *err);

/* The element limit fe_body_json applies (default 200000). Process-wide: one
 * frontend instance runs per process, and fe_server_new sets it from its
 * configuration. */
void fe_body_set_max_elements(size_t max_elements);

/* Scans buf (need not be valid JSON; the parser judges that afterwards). */
void fe_body_scan(const char *buf, size_t len, fe_body_stats_t *out);

/* Deepest nesting of arrays/objects in buf, ignoring brackets inside strings. */
int fe_body_depth(const char *buf, size_t len);

#endif
