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

/* r's sealer (fe_style.h): the gateway's key when one is configured, and
 * the caller's account. The styles get it in their hook contexts. */
fe_sealer_t fe_reasoning_sealer(const fe_request_t *r);

/* Seals one canonical item (any type) for s's account: a new token string
 * (caller frees), or NULL when no key is configured or sealing failed.
 * Styles without an encrypted_content field use it for their own opaque
 * fields (a Messages thinking block's signature, a Gemini thoughtSignature). */
char *fe_reasoning_seal(const fe_sealer_t *s, const json_t *item);

/* Opens a token made by fe_reasoning_seal: the item (new reference), or
 * NULL with err (400 invalid_encrypted_content; param names the field; 400
 * unsupported_parameter when no key is configured). */
json_t *fe_reasoning_open(const fe_sealer_t *s, const char *token, const char *param, fe_error_t *err);

/* The same for r's caller (fe_reasoning_sealer(r)). */
char *fe_reasoning_seal_item(const fe_request_t *r, const json_t *item);
json_t *fe_reasoning_open_token(const fe_request_t *r, const char *token, const char *param, fe_error_t *err);

/* Fields only the upstream and the gateway see: an Anthropic thinking
 * signature, redacted thinking, an OpenAI Responses upstream's own
 * encrypted_content, a Gemini thought signature. Removed from every item
 * rendered in plain form; kept in stored items and inside sealed ones. */
void fe_reasoning_strip_private(json_t *item);

/* Replaces every reasoning item of items carrying encrypted_content by the
 * item it seals. 0, or -1 with err (400). */
int fe_reasoning_open_items(const fe_request_t *r, json_t *items, fe_error_t *err);

/* A copy of output items in which reasoning items carry encrypted_content
 * and no plain content (new reference). NULL if sealing failed. */
json_t *fe_reasoning_seal_items(const fe_sealer_t *s, const json_t *items);

#endif
