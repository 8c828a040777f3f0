/*
 * wtool_vsjob: file search's two job operations, run by the worker when a
 * job's request.op names one (wjob.c hands the job here instead of to a
 * provider). The job comes under the stores' embeddings model:
 * {"request_id", "model", "account_id", "route":{provider, base_url,
 * upstream_model, credential_ref, timeout_ms, capabilities}, "request":{...}}.
 *
 * "vs_ingest" {"vector_store_id", "file_id", "chunking_strategy"}: the
 * vector store file (the account's, still in_progress) is read with its
 * file, its text extracted (wtool_extract.h), chunked (wtool_chunk.h) and
 * embedded (wtool_embed.h); its chunks, usage_bytes (the chunks' text
 * plus 4 bytes a dimension of their embeddings) and status completed are
 * written in one statement, and only while the file is still in_progress
 * (a cancelled or deleted file is not revived). Events: usage (the
 * embedding's input tokens, when the upstream counts them), completed.
 * When the file cannot be ingested it is marked failed with last_error
 * {"code": "unsupported_file" | "invalid_file" | "server_error",
 * "message"} and the job ends with an error event (400 with that code for
 * the first two; the embedding's or the database's error for the third).
 * A file no longer in progress ends the job with 409 code
 * "vector_store_file_not_in_progress"; one not found (another account's,
 * or gone) with 404.
 *
 * "vs_search" {"vector_store_ids", "query", "filters", "max_num_results",
 * "ranking_options", "rewrite_query"}: wtool_vsearch.h over the account's
 * stores. Events: usage (as above), {"type":"vs_results",
 * "search_query":[...], "data":[...]}, completed.
 *
 * Without the worker's database both end at once with 503 "file search
 * needs the worker's database".
 */
#ifndef WTOOL_VSJOB_H
#define WTOOL_VSJOB_H

#include <jansson.h>
#include <stdbool.h>

#include "wtool_vsearch.h"

#define SB_VSJOB_OP_INGEST "vs_ingest"
#define SB_VSJOB_OP_SEARCH "vs_search"
/* The event carrying a search's results. */
#define SB_VSJOB_EV_RESULTS "vs_results"

/* Whether request.op is one of the two. */
bool sb_vsjob_is_op(const json_t *request);

/* The job is over: events (owned) is an array ending in exactly one final
 * event (completed or error). */
typedef void (*sb_vsjob_cb)(void *arg, json_t *events);

typedef struct sb_vsjob sb_vsjob_t;

/* Starts job (borrowed; must outlive the operation). 0 with *out set: cb
 * runs once, from the loop (never inside this call), unless cancelled
 * first. Or a negative code with *err a final error event and nothing
 * started (a malformed job, no database). deadline_ms: absolute epoch ms,
 * 0 for none. */
int sb_vsjob_start(const sb_vs_env_t *env, const json_t *job, long long deadline_ms, sb_vsjob_cb cb, void *arg,
                   sb_vsjob_t **out, json_t **err) __attribute__((warn_unused_result));

/* Stops the operation (no callback runs; a database write already sent
 * still completes) and frees it. NULL-safe; sets *v NULL. Not from inside
 * its own callback. */
void sb_vsjob_cancel(sb_vsjob_t **v);

#endif
