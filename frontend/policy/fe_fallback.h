/*
 * fe_fallback: a model's fallback chain (models.fallbacks, sbctl model
 * fallback). When a job fails with an error another model may not have
 * (429, 500, 502, 503, 529: the upstream busy or down, its circuit open, no
 * worker) and the client has not seen a byte yet, the request is submitted
 * again for the next model in the chain that is enabled, allowed to the
 * key's token group and able to take the request. The answer then names the
 * model that answered; request_log keeps the one asked for in
 * requested_model. The request counts once against the key's limits.
 *
 * This module only decides (pure functions of the request); fe_generate.c
 * looks the model up and submits again.
 */
#ifndef FE_FALLBACK_H
#define FE_FALLBACK_H

#include <jansson.h>

#include "fe_request.h"

/* The request's job failed (r->result.failed): the next model of its chain
 * to try (borrowed: the head of r->fallbacks, valid until fe_fallback_pop),
 * or NULL when there is none: the failure is not one another model may not
 * have, the client has seen bytes of the answer, or the chain is used up.
 * Changes nothing but entries of r->fallbacks that are not model ids. */
const char *fe_fallback_next(fe_request_t *r);

/* Takes the head of the chain off (the model fe_fallback_next named), as a
 * new string the caller frees. */
char *fe_fallback_pop(fe_request_t *r);

/* Why model id (its registry record rec, or the lookup's error err) cannot
 * answer for the request, or NULL when it may: missing, disabled, or not
 * allowed to the key's token group. Whether it can take this request
 * (features, size) is the caller's to check. */
const char *fe_fallback_unusable(const fe_request_t *r, const char *id, const json_t *rec, const char *err);

#endif
