/*
 * fe_vstore_files_api: a vector store's files (POST/GET
 * /v1/vector_stores/{id}/files, GET/POST/DELETE .../files/{file_id}, GET
 * .../files/{file_id}/content), as OpenAI's. Attaching a file (a /v1/files
 * file of the same account) puts its row in progress and queues its
 * ingestion on the workers (fe_vstore_jobs.h); the row says when it is
 * completed or failed. A vector store file's id is its file's id.
 */
#ifndef FE_VSTORE_FILES_API_H
#define FE_VSTORE_FILES_API_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). */
void fe_vstore_files_create(fe_request_t *r);
void fe_vstore_files_list(fe_request_t *r);
void fe_vstore_files_get(fe_request_t *r);
void fe_vstore_files_update(fe_request_t *r);
void fe_vstore_files_delete(fe_request_t *r);
void fe_vstore_files_content(fe_request_t *r);

/* The attach step the file and batch endpoints share, run once the store
 * is in use and r->model holds its embedding model (fe_vstores_use): the
 * scratch's "files" (fe_vstore_params_attach) go into store r->path_arg,
 * under the scratch's "batch_id" when it has one, and their ingestion jobs
 * are queued. Replies with the vector store file (no batch) or the batch. */
void fe_vstore_files_attach(fe_request_t *r);

/* The files of store r->path_arg, paged (limit, order, after, filter), of
 * the batch batch_id only when not NULL (404 when the batch is not in the
 * store). */
void fe_vstore_files_list_in(fe_request_t *r, const char *batch_id);

#endif
