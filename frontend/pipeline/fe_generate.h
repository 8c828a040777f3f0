/*
 * fe_generate: the generation pipeline shared by every style (see
 * fe_generate.c): its order lives in one step table there; the steps get
 * their continuation handed in and know nothing of each other.
 */
#ifndef FE_GENERATE_H
#define FE_GENERATE_H

#include <libpq-fe.h>

#include "fe_request.h"

/* The endpoint of every generation route: parse, model and permission,
 * preparation, the job, its events, store, reply. */
void fe_generate_start(fe_request_t *r);

/* The endpoint of a token-count route (POST /v1/messages/count_tokens,
 * :countTokens): the same pipeline with a count-only job (request.op
 * "count_tokens"), answered by the style's render_count. */
void fe_generate_count_tokens(fe_request_t *r);

/* Database callback for a style's store write (fe_style_t.store): the
 * stored result is replied, or the store's failure. */
void fe_generate_stored(const PGresult *res, const char *err, void *arg);

#endif
