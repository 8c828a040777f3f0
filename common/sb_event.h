/*
 * sb_event: the canonical event stream a worker sends back for one job.
 * Every inbound style (frontend) renders these into its own response or
 * stream; every provider adapter (worker) produces them. Events are
 * JSON-shaped objects (msgpack on the wire, see sb_mpjson.h):
 *
 *   {"type":"item_added", "item_index":N, "item":{...partial item...}}
 *   {"type":"text_delta", "item_index":N, "content_index":C, "delta":"..."}
 *   {"type":"args_delta", "item_index":N, "delta":"..."}       function_call arguments
 *   {"type":"reasoning_delta", "item_index":N, "delta":"..."}
 *   {"type":"item_done", "item_index":N, "item":{...complete item...}}
 *   {"type":"choice_done", "choice":K, "status":"completed"|"incomplete",
 *        "incomplete_reason":"max_output_tokens"|"content_filter"|null}   not final
 *   {"type":"usage", "input_tokens":I, "output_tokens":O, "reasoning_tokens":R}
 *   {"type":"completed", "status":"completed"|"incomplete",
 *        "incomplete_reason":"max_output_tokens"|"content_filter"|null,
 *        "model":"<model that answered>", "upstream_us":U}          final
 *   {"type":"error", "status":HTTP, "kind":"<sb_error_kind>", "code":str|null,
 *        "message":"..."}                                              final
 *   {"type":"item_progress", "item_index":N, "status":"searching"}    a built-in
 *        tool item's step between added and done (docs/tools.md)
 *   {"type":"annotation_added", "item_index":N, "content_index":C,
 *        "annotation_index":A, "annotation":{...}}     e.g. a url_citation
 *   {"type":"tool_log", "kind":..., "server":..., "name":..., "item_id":...,
 *        "duration_ms":..., "outcome":..., "bytes_in":..., "bytes_out":...,
 *        "error":...}         one gateway-run tool call, for the frontend's
 *        tool_calls row; styles render nothing for it
 *
 * Items are canonical (Responses-shaped) items, each with its own "id":
 *   {"type":"message","id":"msg_..","role":"assistant","status":"completed",
 *    "content":[{"type":"output_text","text":"..","annotations":[]}]}
 *   {"type":"function_call","id":"fc_..","call_id":"call_..","name":"..",
 *    "arguments":"{...}","status":"completed"}
 *   {"type":"reasoning","id":"rs_..","summary":[],"content":[{"type":"reasoning_text","text":".."}]}
 * Message content parts are {"type":"output_text","text","annotations":[]} or,
 * when the model declined, {"type":"refusal","refusal":".."}.
 * A job's stream ends with exactly one final event (completed or error).
 *
 * Several choices (request.n > 1): item_added, text_delta, args_delta,
 * reasoning_delta and item_done carry "choice":K (0-based; absent means 0,
 * and single-choice jobs never carry it). item_index counts per choice, from
 * 0 in each. Every choice ends with one choice_done before the job's final
 * event (choices may interleave; only their own events are ordered). There is
 * one usage event for the whole job (summed over choices), and the final
 * completed has status "incomplete" when any choice was incomplete, with the
 * first incomplete choice's reason.
 */
#ifndef SB_EVENT_H
#define SB_EVENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

enum sb_event_type {
    SB_EV_UNKNOWN = 0,
    SB_EV_ITEM_ADDED,
    SB_EV_TEXT_DELTA,
    SB_EV_ARGS_DELTA,
    SB_EV_REASONING_DELTA,
    SB_EV_ITEM_DONE,
    SB_EV_USAGE,
    SB_EV_COMPLETED,
    SB_EV_ERROR,
    SB_EV_CHOICE_DONE,      /* not final: one choice of an n > 1 job is over */
    SB_EV_ITEM_PROGRESS,    /* a built-in tool item's intermediate status */
    SB_EV_ANNOTATION_ADDED, /* an annotation on an output_text part */
    SB_EV_TOOL_LOG,         /* a record of one gateway-run tool call, not rendered */
};

/*
 * Error kinds: style-neutral causes that each inbound style maps to its own
 * error body (OpenAI type/code, Anthropic error.type, Google status).
 */
#define SB_ERR_INVALID_REQUEST "invalid_request"
#define SB_ERR_AUTHENTICATION "authentication"
#define SB_ERR_PERMISSION "permission"
#define SB_ERR_NOT_FOUND "not_found"
#define SB_ERR_RATE_LIMIT "rate_limit"
#define SB_ERR_QUOTA "insufficient_quota"
#define SB_ERR_TOO_LARGE "request_too_large"
#define SB_ERR_TIMEOUT "timeout"
#define SB_ERR_UPSTREAM "upstream_error"
#define SB_ERR_OVERLOADED "overloaded"
#define SB_ERR_SERVER "server_error"

enum sb_event_type sb_event_type_of(const json_t *ev);
const char *sb_event_type_name(enum sb_event_type t);
bool sb_event_is_final(const json_t *ev);

/* Constructors return a new reference. Those taking `item` steal it. */
json_t *sb_event_item_added(int item_index, json_t *item);
json_t *sb_event_text_delta(int item_index, int content_index, const char *delta, size_t len);
json_t *sb_event_args_delta(int item_index, const char *delta, size_t len);
json_t *sb_event_reasoning_delta(int item_index, const char *delta, size_t len);
json_t *sb_event_item_done(int item_index, json_t *item);
json_t *sb_event_usage(int64_t input_tokens, int64_t output_tokens, int64_t reasoning_tokens);
json_t *sb_event_completed(const char *status, const char *incomplete_reason, const char *model, int64_t upstream_us);
json_t *sb_event_error(int http_status, const char *kind, const char *code, const char *message);
json_t *sb_event_choice_done(int choice, const char *status, const char *incomplete_reason);
json_t *sb_event_item_progress(int item_index, const char *status);
/* Steals `annotation`. */
json_t *sb_event_annotation_added(int item_index, int content_index, int annotation_index, json_t *annotation);
/* Steals `fields` (an object: kind, server, name, ...); its "type" is set. */
json_t *sb_event_tool_log(json_t *fields);

/* The event's "choice" (0 when absent or not an integer). */
int sb_event_choice(const json_t *ev);
/* Tags an event with "choice":k. */
void sb_event_set_choice(json_t *ev, int choice);

#endif
