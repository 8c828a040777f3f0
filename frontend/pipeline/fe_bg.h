/*
 * fe_bg: background responses, the frontend's half (docs/background.md).
 *
 *   fe_bg_submit      POST /v1/responses with background: the response is
 *                     written queued (with its snapshot), the job submitted
 *                     asking for ACCEPTED, and the client answered queued
 *                     (or, streaming, the stream follows the stored events);
 *   fe_bg_stream      a stream rendered from the stored events, written
 *                     from a sequence number on, following new events
 *                     until the final one (GET ?stream=true, and the POST);
 *   fe_bg_finalize    the final response, its output items and its
 *                     request_log row, written once by whichever frontend
 *                     comes first, from the snapshot and the events;
 *   the sweep         every FE_BG_SWEEP_MS: the reaper (deadline passed,
 *                     worker gone) and the finalizer's worklist (at most
 *                     FE_BG_SWEEP_BATCH; after a full batch the next sweep
 *                     goes once its finalizations have ended).
 *
 * Background responses are the Responses style's: this file renders them
 * with its renderers (fe_responses_render.h, fe_responses_bg.h).
 */
#ifndef FE_BG_H
#define FE_BG_H

#include <jansson.h>
#include <stdint.h>

#include "fe_request.h"

#define FE_BG_SWEEP_MS 500   /* the reaper and finalizer's period */
#define FE_BG_STALE_MS 10000 /* a worker silent this long runs nothing */
#define FE_BG_GRACE_MS 5000  /* after the deadline, before the reaper fails a job */
#define FE_BG_POLL_MS 100    /* a stream waiting for events looks again after this */
#define FE_BG_SWEEP_BATCH 16 /* responses finalized per sweep at most */

typedef struct fe_bg fe_bg_t;

/* The server's background state: the sweep timer starts at once. */
fe_bg_t *fe_bg_new(fe_server_t *srv);
void fe_bg_destroy(fe_bg_t **bg);

/* The generation pipeline's last step for a background request (instead
 * of submitting an ordinary job): job is the job as fe_generate built it
 * (borrowed), deadline_ms its absolute deadline. */
void fe_bg_submit(fe_request_t *r, const json_t *job, int64_t deadline_ms);

/* Streams the background response r->parsed names (restored from its
 * snapshot, or the request's own), created at created_ms, writing the
 * events after sequence number starting_after (-1: all), until its final
 * event. */
void fe_bg_stream(fe_request_t *r, int64_t created_ms, long long starting_after);

/* Finalizes response_id if it is over and not finalized yet, then calls
 * done(body, err, arg) with the final body as stored (borrowed; NULL with
 * err set on failure, or NULL without err when it is not over yet). done
 * may be NULL. Concurrent calls for one id share one finalization. */
typedef void (*fe_bg_done_fn)(const json_t *body, const char *err, void *arg);
void fe_bg_finalize(fe_bg_t *bg, const char *response_id, fe_bg_done_fn done, void *arg);

#endif
