/*
 * fe_call_ids: tool call ids that carry what only the upstream can verify.
 *
 * A reasoning upstream binds a tool call to its reasoning: Gemini puts a
 * thoughtSignature on the functionCall part and refuses the next turn
 * without it; Anthropic with thinking on refuses a tool result whose
 * assistant turn does not open with its signed thinking block; an OpenAI
 * Responses upstream wants its encrypted reasoning item back. Messages
 * thinking blocks and Gemini thought parts can hand these back, but a
 * Responses function_call, a Chat tool call or a Messages tool_use cannot
 * -- and the one thing every client echoes unchanged is the call id.
 *
 * So when the model calls a tool and the call, or the reasoning just before
 * it in the output, carries such a private field, the call id the client sees
 * is "sbc_" + a token sealed like encrypted reasoning (fe_reasoning.h: AES-GCM
 * under the gateway's key, bound to the account) of {the upstream's call id,
 * the call's thought_signature, that reasoning item}. When the client sends
 * the call or its result back, in any style, with store on or off, the token
 * is opened in memory: the upstream's id comes back, the call gets its
 * signature, and the reasoning item is put back before the call unless the
 * input already holds it. Nothing of it is ever shown in plain. A token that
 * does not open (another account's, altered) is left as an ordinary id.
 */
#ifndef FE_CALL_IDS_H
#define FE_CALL_IDS_H

#include <jansson.h>

#include "fe_request.h"

#define FE_CALL_ID_PREFIX "sbc_"

/* Applied to every event of a job before it is collected or streamed:
 * remembers the last signed reasoning item and gives a function_call item
 * that needs it (added or done) its sealed call id. The same call gets the
 * same id in every event of the request. */
void fe_call_ids_seal_event(fe_request_t *r, json_t *ev);

/* The same with narrow arguments: the caller's sealer (key NULL: sealing is
 * off) and the parsed request's style_state, where the ids given so far
 * are kept (a background response rendered away from its request,
 * pipeline/fe_bg.c). */
void fe_call_ids_seal(const fe_sealer_t *seal, json_t *style_state, json_t *ev);

/* Opens the sealed call ids of function_call and function_call_output items
 * in a job's input (the stored context and the request's own items), in
 * place, as described above. */
void fe_call_ids_open(const fe_request_t *r, json_t *items);

#endif
