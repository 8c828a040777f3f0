/*
 * fe_files_resolve: the preparation step that turns `file_id` parts of a
 * generation request into the file's content (see fe_files_resolve.c).
 */
#ifndef FE_FILES_RESOLVE_H
#define FE_FILES_RESOLVE_H

#include "fe_request.h"

/* Preparation step (fe_generate.c): resolves every file_id part of
 * r->job_input and calls done(r); or ends the request (404 for a file the
 * caller does not own). */
void fe_files_resolve(fe_request_t *r, fe_request_then_fn done);

#endif
