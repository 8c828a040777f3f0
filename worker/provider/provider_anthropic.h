/*
 * provider_anthropic: what the three files of the "anthropic" adapter
 * (Anthropic's Messages API) share. Internal to the adapter: only
 * provider_anthropic_*.c include it; the rest of the worker knows the
 * adapter as sb_provider_anthropic (provider.h).
 *
 *   provider_anthropic_build.c   canonical job -> Messages (and count_tokens)
 *                                request; holds the vtable
 *   provider_anthropic_parse.c   the response translator (content blocks ->
 *                                canonical events), a complete response,
 *                                a token count, and Anthropic's errors
 *   provider_anthropic_stream.c  the SSE stream, fed through the same
 *                                translator as a complete response
 *
 * The translator is sb_anth_out_t: it is fed content blocks (start, deltas,
 * stop) and the message's usage and stop_reason, from a complete message
 * or from SSE events, so both paths emit the same events.
 */
#ifndef SB_PROVIDER_ANTHROPIC_H
#define SB_PROVIDER_ANTHROPIC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "provider_util.h"
#include "sb_buf.h"
#include "sb_id.h"

#define SB_ANTH_KIND "anthropic"

enum sb_anth_block {
    SB_ANTH_BLOCK_NONE,     /* between blocks */
    SB_ANTH_BLOCK_TEXT,     /* a text block: part of the open message */
    SB_ANTH_BLOCK_THINKING, /* a thinking block: its reasoning item is open */
    SB_ANTH_BLOCK_REDACTED, /* a redacted_thinking block: its reasoning item is open */
    SB_ANTH_BLOCK_TOOL,     /* a tool_use block: its function_call item is open */
    SB_ANTH_BLOCK_SKIP,     /* a block type this adapter does not translate */
};

typedef struct sb_anth_out {
    json_t *events; /* borrowed: where events go (the stream's is per feed) */
    int next_item;  /* the next item_index */
    /* The open message item (consecutive text blocks), or msg_item -1. */
    int msg_item;
    char msg_id[SB_ID_MAX];
    json_t *msg_parts;
    /* The block in progress. */
    enum sb_anth_block block;
    json_int_t block_index; /* the upstream's content block index */
    int block_item;
    char block_id[SB_ID_MAX];
    json_t *block_json; /* the block as it started (tool_use id/name/input, redacted data) */
    sb_buf_t text;      /* its text, thinking or partial_json so far */
    sb_buf_t sig;       /* a thinking block's signature */
    /* The message. */
    char stop_reason[48];
    bool have_usage;
    int64_t in, cache_read, cache_write, out;
} sb_anth_out_t;

/*
 * The translator (provider_anthropic_parse.c).
 */

/* events is borrowed (may be NULL until the first feed sets o->events). */
void sb_anth_out_init(sb_anth_out_t *o, json_t *events);
void sb_anth_out_clear(sb_anth_out_t *o);

/* Appends ev (stolen) to the translator's events. */
static inline void sb_anth_emit(sb_anth_out_t *o, json_t *ev)
{
    json_array_append_new(o->events, ev);
}

/* A content block starts: its item opens (a text block's message opens with
 * its first text). Whatever content the block already carries (all of it,
 * for a complete message) goes out as a delta. Returns 0, or -EINVAL for a
 * block that cannot be translated. */
int sb_anth_block_start(sb_anth_out_t *o, json_int_t index, const json_t *block);
/* A content_block_delta for the block in progress. */
void sb_anth_block_delta(sb_anth_out_t *o, json_int_t index, const json_t *delta);
/* The block in progress ends: its part joins the message, or its item is
 * done. */
void sb_anth_block_stop(sb_anth_out_t *o);

/* Takes the counters a usage object has (message_start's, message_delta's
 * cumulative ones, a complete message's). */
void sb_anth_take_usage(sb_anth_out_t *o, const json_t *usage);
void sb_anth_take_stop_reason(sb_anth_out_t *o, const json_t *v);
/* The message is over: closes what is open and sends usage. */
void sb_anth_end_items(sb_anth_out_t *o);
/* The completed event (incomplete on max_tokens). New reference. */
json_t *sb_anth_completed(const sb_anth_out_t *o, const json_t *job, int64_t upstream_us);

/* The error event for an Anthropic error: {"type":"error","error":{"type",
 * "message"}} (root may be NULL or anything else). The status of an error
 * type read from a body or an SSE error event is sb_errkind's
 * sb_errkind_anthropic_status. New reference. */
json_t *sb_anth_error_event(long status, const json_t *root, long retry_after);

/* The vtable's response hooks. */
void sb_anth_parse_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);
void sb_anth_parse_count_response(const json_t *job, const sb_provider_response_t *resp, json_t *events);

/*
 * The stream hooks (provider_anthropic_stream.c), as sb_provider_t
 * describes them.
 */
void *sb_anth_stream_new(const json_t *job);
int sb_anth_stream_feed(void *state, const char *data, size_t len, json_t *events);
void sb_anth_stream_finish(void *state, const sb_provider_response_t *resp, json_t *events);
void sb_anth_stream_destroy(void *state);

#endif
