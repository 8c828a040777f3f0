/*
 * fe_vstore_jobs: the Vector Stores API's jobs on the broker. They run on the
 * workers under the vector store's embedding model (a models row: its route
 * is the embeddings upstream), in the canonical job envelope (sb_job.h) with
 * request.op "vs_ingest" (one attached file: extract, chunk, embed, write its
 * chunks) or "vs_search" (docs/vector_stores.md).
 *
 * An ingestion job outlives the request that attached the file: the worker
 * settles the file's row itself (completed, or failed with last_error) and
 * then sends its final event; when the job ends in an error event instead
 * (no worker, its deadline, the broker gone), this module marks the row
 * failed with a server_error, if it is still in progress.
 */
#ifndef FE_VSTORE_JOBS_H
#define FE_VSTORE_JOBS_H

#include <jansson.h>

#include "fe_server.h"

/* How long an ingestion job may take (queue wait included). */
#define FE_VSTORE_INGEST_DEADLINE_MS (10 * 60 * 1000)
/* How long a search may take. */
#define FE_VSTORE_SEARCH_DEADLINE_MS (30 * 1000)

/* The job for request (stolen) under the model record model (borrowed: its
 * "id" names the job's model, and its route is carried as a generation's
 * job carries it). A new object. */
json_t *fe_vstore_jobs_new(const char *request_id, const json_t *model, long long account_id, json_t *request);

/* Submits one "vs_ingest" job per file of files (borrowed: an array of
 * {"file_id","chunking_strategy",...} as fe_vstore_params_attach makes
 * them) of vector store vector_store_id, whose rows are in progress. client
 * (may be NULL) names who asked, for the broker's circuit breakers. A file
 * whose job cannot be queued is marked failed at once. */
void fe_vstore_jobs_ingest(fe_server_t *srv, const json_t *model, long long account_id, const char *client,
                           const char *vector_store_id, const json_t *files);

#endif
