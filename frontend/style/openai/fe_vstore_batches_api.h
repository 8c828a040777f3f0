/*
 * fe_vstore_batches_api: a vector store's file batches (POST
 * /v1/vector_stores/{id}/file_batches, GET .../file_batches/{batch_id}, POST
 * .../file_batches/{batch_id}/cancel, GET .../file_batches/{batch_id}/files),
 * as OpenAI's. A batch attaches many files at once (each ingested by its own
 * job, fe_vstore_jobs.h); its status and counts are its files'. Cancelling
 * marks its files still in progress cancelled; a worker that finishes one
 * later leaves it so.
 */
#ifndef FE_VSTORE_BATCHES_API_H
#define FE_VSTORE_BATCHES_API_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). */
void fe_vstore_batches_create(fe_request_t *r);
void fe_vstore_batches_get(fe_request_t *r);
void fe_vstore_batches_cancel(fe_request_t *r);
void fe_vstore_batches_files(fe_request_t *r);

#endif
