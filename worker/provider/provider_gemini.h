/*
 * provider_gemini: what the three files of the "gemini" adapter (the Google
 * Gemini API) share. Internal to the adapter: only provider_gemini_*.c
 * include it; the rest of the worker knows the adapter as sb_provider_gemini
 * (provider.h).
 *
 *   provider_gemini_build.c   canonical job -> GenerateContentRequest (and
 *                             countTokens); holds the vtable
 *   provider_gemini_parse.c   the response state machine
 *                             (GenerateContentResponse -> canonical events),
 *                             a complete response, a token count, Google's
 *                             errors
 *   provider_gemini_stream.c  the alt=sse stream: each event's data is one
 *                             GenerateContentResponse, fed to the same state
 *                             machine
 */
#ifndef SB_PROVIDER_GEMINI_H
#define SB_PROVIDER_GEMINI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider_util.h"
#include "sb_buf.h"
#include "sb_id.h"

#define SB_GEM_KIND "gemini"

/* The random part of a call_id made up for a functionCall without an id:
 * "call_" + 24 hex digits. Such an id is never sent back to Gemini (the
 * parse side makes them, the build side recognises them). */
#define SB_GEM_CALL_ID_BYTES 12

/* The item a candidate is in the middle of: a run of thought parts or of
 * text parts (function calls are complete in one part, so never open). */
enum sb_gem_open { SB_GEM_OPEN_NONE, SB_GEM_OPEN_REASONING, SB_GEM_OPEN_MESSAGE };

typedef struct sb_gem_cand {
    bool seen; /* some chunk carried this candidate */
    bool done; /* its finishReason came, choice closed */
    int next_item;
    enum sb_gem_open open;
    int open_index;
    char id[SB_ID_MAX];
    sb_buf_t text;
} sb_gem_cand_t;

/* One state machine for a whole response or a stream of chunks. */
typedef struct sb_gem_state {
    const json_t *job;
    bool streaming;
    bool multi; /* several choices: events tagged, choice_done each */
    sb_gem_cand_t *cands;
    size_t n_cands;
    bool any_chunk, any_candidate;
    json_t *usage;               /* the latest usageMetadata (streams repeat it growing) */
    char *model;                 /* the latest modelVersion */
    json_t *final;               /* an error that ends the response, once set */
    const char *status, *reason; /* the first incomplete choice's */
} sb_gem_state_t;

/*
 * The state machine (provider_gemini_parse.c).
 */

/* job is borrowed and must outlive st. */
void sb_gem_state_init(sb_gem_state_t *st, const json_t *job, bool streaming);
void sb_gem_state_clear(sb_gem_state_t *st);
/* Sets the error that ends the response (stolen); a later one is dropped. */
void sb_gem_fail(sb_gem_state_t *st, json_t *ev);
/* One GenerateContentResponse: the whole response, or one stream chunk.
 * Appends its events to out. */
void sb_gem_chunk(sb_gem_state_t *st, json_t *out, const json_t *root);
/* The end of the response: closes what is open, appends usage and completed,
 * or the error that ended it. */
void sb_gem_end(sb_gem_state_t *st, json_t *out, int64_t upstream_us);

/* The vtable's response hooks. */
void sb_gem_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);
void sb_gem_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);

/*
 * The stream hooks (provider_gemini_stream.c), as sb_provider_t describes
 * them.
 */
void *sb_gem_stream_new(const json_t *job);
int sb_gem_stream_feed(void *state, const char *data, size_t len, json_t *events);
void sb_gem_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events);
void sb_gem_stream_destroy(void *state);

#endif
