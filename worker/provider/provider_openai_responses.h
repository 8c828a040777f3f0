/*
 * provider_openai_responses: the "openai-responses" adapter, OpenAI's own
 * Responses API (POST {base_url}/responses, Bearer credential). The canonical
 * job is already Responses-shaped, so this is mostly a pass-through; what it
 * changes are the gateway's rules (the tables at the top of each file).
 *
 * Internal to the adapter: what its three files share. The adapter's only
 * export is its vtable, sb_provider_openai_responses (provider.h); the
 * helpers they call back are in provider_util.h.
 *   provider_openai_responses_build.c   canonical job -> Responses request
 *                                       (and the count request); the vtable
 *   provider_openai_responses_parse.c   a whole response (or a count) ->
 *                                       canonical events, and the item and
 *                                       outcome translators the stream shares
 *   provider_openai_responses_stream.c  Responses server-sent events ->
 *                                       canonical events
 */
#ifndef SB_PROVIDER_OPENAI_RESPONSES_H
#define SB_PROVIDER_OPENAI_RESPONSES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "provider_util.h"

#define SB_ORESP_KIND "openai-responses"

static inline bool sb_oresp_is(const char *s, const char *want)
{
    return s && !strcmp(s, want);
}

/* provider_openai_responses_build.c: the vtable's build hooks */
int sb_oresp_build_request(const json_t *job, sb_provider_request_t *req, json_t **err);
int sb_oresp_build_count_request(const json_t *job, sb_provider_request_t *req, json_t **err);

/* provider_openai_responses_parse.c */
/* One upstream output item -> a canonical item (new reference; NULL when
 * malformed): the upstream id kept (`id` when it has none, else a fresh one),
 * a reasoning item's encrypted_content moved to upstream_encrypted_content;
 * `complete` checks what a finished item must have. */
json_t *sb_oresp_item(const json_t *up, const char *id, bool complete);
/* The partial item an item_added carries for a complete item. */
json_t *sb_oresp_partial(const json_t *it);
/* The error event for a response that failed after a 2xx (status "failed",
 * or a streamed "error" event). */
json_t *sb_oresp_failed(const json_t *job, const json_t *error);
/* usage -> the usage event, or NULL without one. */
json_t *sb_oresp_usage(const json_t *usage);
/* A response object's outcome: the final event (completed, or error);
 * `status` is used when the response has none. */
json_t *sb_oresp_outcome(const json_t *job, const json_t *response, const char *status, int64_t upstream_us);
/* The vtable's parse hooks; the stream also uses parse_response for a 2xx
 * body that came as plain JSON (an upstream that ignored "stream"). */
void sb_oresp_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);
void sb_oresp_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);

/* provider_openai_responses_stream.c: the vtable's stream hooks */
void *sb_oresp_stream_new(const json_t *job);
int sb_oresp_stream_feed(void *state, const char *data, size_t len, json_t *events);
void sb_oresp_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events);
void sb_oresp_stream_destroy(void *state);

#endif
