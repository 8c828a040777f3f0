/*
 * fe_container_files_api: a container's files (POST/GET
 * /v1/containers/{id}/files, GET/DELETE /v1/containers/{id}/files/{file_id},
 * GET /v1/containers/{id}/files/{file_id}/content), as OpenAI's. A file
 * comes from a multipart upload ("file") or is copied from a /v1/files file
 * of the same account (JSON {"file_id"}); it lives at /mnt/data/<name>
 * (fe_container_path.h), and a file at the same path is replaced. Each
 * operation uses the container: it moves last_active_at, and on an expired
 * container it fails with OpenAI's 400 "Container is expired.".
 */
#ifndef FE_CONTAINER_FILES_API_H
#define FE_CONTAINER_FILES_API_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). fe_container_files_create's route reads a
 * file-sized body. */
void fe_container_files_create(fe_request_t *r);
void fe_container_files_list(fe_request_t *r);
void fe_container_files_get(fe_request_t *r);
void fe_container_files_content(fe_request_t *r);
void fe_container_files_delete(fe_request_t *r);

#endif
