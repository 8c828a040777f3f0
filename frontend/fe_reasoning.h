/*
 * fe_reasoning: reasoning items the client holds instead of the gateway.
 * With include ["reasoning.encrypted_content"] (and always for
 * zero-data-retention accounts) a reasoning output item is returned with
 * `encrypted_content`: the item sealed with AES-256-GCM under the gateway's
 * configured key, bound to the account (sb_seal.h). Passed back as input, it
 * is opened in memory only, for the job; a tampered token or one sealed for
 * another account is a 400.
 */
#ifndef FE_REASONING_H
#define FE_REASONING_H

#include <jansson.h>

#include "fe_request.h"

/* Replaces every reasoning item of items carrying encrypted_content by the
 * item it seals. 0, or -1 with err (400). */
int fe_reasoning_open_items(const fe_request_t *r, json_t *items, fe_error_t *err);

/* A copy of output items in which reasoning items carry encrypted_content
 * and no plain content (new reference). NULL if sealing failed. */
json_t *fe_reasoning_seal_items(const fe_request_t *r, const json_t *items);

#endif
