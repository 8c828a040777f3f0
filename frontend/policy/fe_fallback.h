/*
 * fe_fallback: a model's fallback chain (models.fallbacks, sbctl model
 * fallback). When a job fails with an error another model may not have
 * (429, 500, 502, 503, 529: the upstream busy or down, its circuit open, no
 * worker) and the client has not seen a byte yet, the request is submitted
 * again for the next model in the chain that is enabled, allowed to the
 * key's token group and able to take the request. The answer then names the
 * model that answered; request_log keeps the one asked for in
 * requested_model. The request counts once against the key's limits.
 */
#ifndef FE_FALLBACK_H
#define FE_FALLBACK_H

#include <stdbool.h>

#include "fe_request.h"

/* The request's job just failed (r->result.failed). Returns true when a
 * fallback is under way (the request is no longer the caller's to finish),
 * false when there is none to try. */
bool fe_fallback_try(fe_request_t *r);

#endif
