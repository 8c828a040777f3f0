/*
 * fe_files: the Files API (POST /v1/files multipart upload, GET /v1/files,
 * GET/DELETE /v1/files/{id}, GET /v1/files/{id}/content), scoped to the
 * caller's account: another account's file is a 404 exactly like a missing
 * one. And the generation step that resolves `file_id` parts (input_file,
 * input_image) into the file's content for the worker.
 */
#ifndef FE_FILES_H
#define FE_FILES_H

#include "fe_request.h"

/* Preparation step (fe_generate.c): resolves every file_id part of
 * r->job_input and calls done(r); or ends the request (404 for a file the
 * caller does not own). */
void fe_files_resolve(fe_request_t *r, fe_request_then_fn done);

/* The MIME type for a file: the declared one unless generic, else from the
 * filename's extension. Static string or declared. */
const char *fe_files_mime_type(const char *declared, const char *filename);

#endif
