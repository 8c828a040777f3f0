/*
 * sb_job: the canonical job, the one internal request model every inbound
 * style is translated into (the Responses style is the superset). A job is a
 * JSON-shaped object carried as msgpack in frame 2 of SUBMIT/JOB:
 *
 * {
 *   "request_id": "req_...",            for logs; the job_id in the header is the same
 *   "model": "<public model id>",
 *   "account_id": 1,
 *   "route": {"provider": "openai-chat", "base_url": "http://127.0.0.1:18080/v1",
 *             "upstream_model": "...", "credential_ref": "ENV_VAR_NAME" | null,
 *             "timeout_ms": 60000,
 *             "capabilities": {"n": false, ...} },  the model record's capabilities;
 *                                       may be absent or {}; a missing key means "supported";
 *                                       web_search and mcp: absent/true the worker's tool loop
 *                                       runs the tool, "native" the upstream does (docs/tools.md)
 *   "tools_config": {"web_search": {"kind": "searxng"|"brave"|"tavily", "base_url": "...",
 *                    "credential_ref": "ENV_VAR_NAME" | null}},
 *                                       absent unless request.tools holds a web search tool the
 *                                       gateway runs: the deployment's default search backend
 *                                       (sbctl search-backend), set by the frontend; its base_url
 *                                       is the operator's (no SSRF guard), credential_ref names the
 *                                       worker's environment variable holding its API key
 *   "request": {
 *     "op": "count_tokens",             absent (or "generate"): generate a response
 *     "instructions": "..." | null,
 *     "input": [ item, ... ],           normalized, see below
 *     "tools": [ {"type":"function","name","description","parameters","strict"} ],
 *     "tool_choice": "auto" | "none" | "required" | {"type":"function","name":..},
 *     "parallel_tool_calls": bool,
 *     "text": {"format": {"type":"text"} | {"type":"json_schema","name","schema","strict"}
 *                                        | {"type":"json_object"}},
 *     "reasoning": {"effort": "none"|"minimal"|"low"|"medium"|"high"},
 *     "max_output_tokens": int, "temperature": num, "top_p": num,
 *     "stop": [str], "seed": int, "n": int, "user": str, "metadata": {..},
 *     "stream": bool
 *   }
 * }
 * Absent optional fields mean "upstream default".
 *
 * "op":"count_tokens" asks only for the input's token count, as the upstream
 * counts it: the request is the one a generation would send (output
 * settings such as max_output_tokens, stream and n are ignored), and the job
 * answers with one usage event whose input_tokens is the count, then
 * completed. The worker uses the upstream's counting endpoint when its
 * adapter has one, else it runs the generation with max_output_tokens 1 and
 * reports that response's prompt token count (output_tokens then says what
 * the count cost).
 *
 * "n" (int >= 1, chat style only) asks for that many choices; events then
 * carry "choice" (sb_event.h). When route.capabilities.n is false the worker
 * makes n upstream calls without n and merges them.
 *
 * Strict structured output: with text.format json_schema "strict":true, or a
 * function tool "strict":true, the worker checks the model's output text /
 * arguments against the schema and retries the upstream call once before
 * failing with 502 "invalid_structured_output".
 *
 * Normalized input items (content is always an array of parts):
 *   {"type":"message","role":"system"|"developer"|"user"|"assistant",
 *    "content":[{"type":"input_text","text"} | {"type":"output_text","text"}
 *              | {"type":"input_image","image_url","detail"?}
 *              | {"type":"input_file","filename","file_data":"data:<mime>;base64,..."}
 *              | {"type":"input_audio","input_audio":{"data":"<base64>","format":"wav"|"mp3"|..}}
 *              | {"type":"refusal","refusal"}]}          refusal: assistant turns only
 *   (the frontend resolves an input_file's file_id to filename + file_data
 *   before the job is sent; a bare {"file_id"} is passed through as is)
 *   {"type":"function_call","call_id","name","arguments"}
 *   {"type":"function_call_output","call_id","output"}
 *   {"type":"reasoning", ...}
 */
#ifndef SB_JOB_H
#define SB_JOB_H

#include <jansson.h>
#include <stdbool.h>

/* A job's route (new reference) from a model record as the frontend reads
 * it (fe_sql.c's model lookup): provider, base_url, upstream_model,
 * credential_ref, timeout_ms, capabilities ({} when none) and
 * max_output_tokens; NULL when the record lacks one of the first five. */
json_t *sb_job_route_from_model(const json_t *model);

/* Builds a job object. `route` and `request` are stolen; strings borrowed. */
json_t *sb_job_new(const char *request_id, const char *model, long long account_id, json_t *route, json_t *request);

/* Borrowed accessors; NULL when absent or of the wrong type. */
const json_t *sb_job_request(const json_t *job);
const json_t *sb_job_route(const json_t *job);
const char *sb_job_route_str(const json_t *job, const char *field);

/* request.op: the operation the job asks for. */
#define SB_JOB_OP_COUNT_TOKENS "count_tokens"
/* True for a count-only job (request.op "count_tokens"). */
bool sb_job_is_count(const json_t *job);

/*
 * The one check of a job's shape, run by the worker when a job arrives so the
 * adapters can take the shape as given. It holds exactly the checks all four
 * provider adapters made, with their messages, in their order:
 *   - request is an object                  "job has no request"
 *   - request.input is absent, null or an array
 *                                           "request.input must be an array of items"
 *   - each input item is an object with a string "type"
 *                                           "input item %zu has no type"
 *   - a message item's role is system, developer, user or assistant
 *                                           "input item %zu has an unsupported role"
 *   - a function_call item has string call_id and name
 *                                           "function_call items need call_id and name"
 *   - a function_call_output item has a string call_id
 *                                           "function_call_output items need call_id"
 *   - request.tools is absent, null or an array
 *                                           "request.tools must be an array"
 *   - a tool of type "function" has a string name
 *                                           "function tool %zu has no name"
 * Item types it does not know, content parts, tool types and every other
 * field are each adapter's to judge (the Responses adapter passes unknown
 * items on; the others refuse them in their own words).
 *
 * Returns 0 with *err NULL, or -EINVAL with *err a new error event (400,
 * SB_ERR_INVALID_REQUEST, no code) naming the first problem, as an adapter's
 * build_request reports one. `job` is borrowed; anything may be in it.
 */
int sb_job_check(const json_t *job, json_t **err) __attribute__((warn_unused_result));

#endif
