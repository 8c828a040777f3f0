/*
 * fe_files_api: the Files API (POST /v1/files multipart upload, GET /v1/files,
 * GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content), scoped to the
 * caller's account: another account's file is a 404 exactly like a missing
 * one. A generation resolves the `file_id` parts that name these files in
 * fe_files_resolve.c.
 */
#ifndef FE_FILES_API_H
#define FE_FILES_API_H

#include "fe_request.h"

/* Endpoints (fe_routes.c). fe_files_upload's route reads a file-sized body. */
void fe_files_upload(fe_request_t *r);
void fe_files_get(fe_request_t *r);
void fe_files_content(fe_request_t *r);
void fe_files_delete(fe_request_t *r);
void fe_files_list(fe_request_t *r);

/* The MIME type for a file: the declared one unless generic, else from the
 * filename's extension. Static string or declared. */
const char *fe_files_mime_type(const char *declared, const char *filename);

#endif
