/*
 * fe_responses_bg: a background response's snapshot (docs/background.md):
 * what rendering it needs besides its events, written with it when it is
 * created and read back by whichever frontend renders it later (a poll, a
 * resumed stream, the finalizer).
 *
 * It holds the parsed request's public part: the canonical request without
 * its input (the items are stored apart) and with its tools as the
 * response shows them (no MCP headers or authorization: nothing secret is
 * stored), the model, the ids, the render flags of style_state (not its
 * scratch), and the request's creation time, id, key and account.
 */
#ifndef FE_RESPONSES_BG_H
#define FE_RESPONSES_BG_H

#include <jansson.h>
#include <stdint.h>

#include "fe_style.h"

/* What a snapshot says besides the parsed request. */
typedef struct fe_responses_bg_meta {
    int64_t start_ms;           /* when the request arrived (the response's created_at) */
    char request_id[SB_ID_MAX]; /* the request's id: the job id, request_log's request_id */
    long long account_id;       /* the owner */
    long long key_id;           /* the key that made it (0: unknown) */
    bool stream;                /* the request was streamed (its request_log row says so) */
    char *requested_model;      /* the model asked for, when a fallback answered; owned, or NULL */
    char trace_id[33];          /* the request's W3C trace id ("": none), for its request_log row */
} fe_responses_bg_meta_t;

/* The snapshot of parsed (new reference). requested_model may be NULL. */
json_t *fe_responses_bg_snapshot(const fe_parsed_t *parsed, const fe_responses_bg_meta_t *meta);

/* Fills out (fe_parsed_init'ed by the caller) and meta from a snapshot: 0,
 * or -1 when it is not one. meta->requested_model is the caller's to free. */
int fe_responses_bg_restore(const json_t *snapshot, fe_parsed_t *out, fe_responses_bg_meta_t *meta);

#endif
