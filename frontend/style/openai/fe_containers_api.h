/*
 * fe_containers_api: the Containers API's containers (POST /v1/containers,
 * GET /v1/containers, GET/DELETE /v1/containers/{id}), as OpenAI's, scoped
 * to the caller's account: another account's container is a 404 exactly
 * like a missing one. A container is a set of files the code interpreter
 * materialises into a fresh sandbox per call (docs/containers.md); its
 * files are fe_container_files_api's.
 */
#ifndef FE_CONTAINERS_API_H
#define FE_CONTAINERS_API_H

#include <jansson.h>

#include "fe_error.h"
#include "fe_request.h"

/* Limits of one container: its files and their total size (a sandbox's
 * working directory holds all of them at once). One file's own cap is the
 * Files API's (max_file_bytes). */
#define FE_CONTAINER_MAX_FILES 100
#define FE_CONTAINER_MAX_BYTES (64ll * 1024 * 1024)
/* expires_after.minutes: OpenAI's default, and the range schema/005 allows. */
#define FE_CONTAINER_DEFAULT_MINUTES 20
#define FE_CONTAINER_MAX_MINUTES 10080
/* Longest container name kept. */
#define FE_CONTAINER_NAME_MAX 256

/* A create request, checked (fe_containers_parse_create). */
typedef struct {
    const char *name;           /* borrowed from the body */
    const char *memory_limit;   /* "1g" (default), "4g", "16g" or "64g"; borrowed or static */
    int minutes;                /* expires_after.minutes */
    const json_t *file_ids;     /* the /v1/files ids to copy in, borrowed; NULL when none */
    const char *network_policy; /* the policy as stored (static JSON text), or NULL (the default) */
} fe_container_spec_t;

/* Checks a POST /v1/containers body as OpenAI's API does and fills spec
 * (pointers into body). 0, or -1 with err (400): unknown fields, a missing
 * or empty name, expires_after without anchor "last_active_at" or minutes
 * out of 1..FE_CONTAINER_MAX_MINUTES, file_ids not an array of ids or more
 * than FE_CONTAINER_MAX_FILES, an unknown memory_limit, a network_policy
 * other than {"type":"disabled"} (the sandbox has no network, so an
 * allowlist cannot be honoured), or any skills. */
int fe_containers_parse_create(const json_t *body, fe_container_spec_t *spec, fe_error_t *err);

/* The files a create copies in, from the ids asked for (file_ids, in
 * order) and what the account holds (found: id -> {"filename", "bytes"}):
 * a new array of {"file_id", "id" (a new cfile_ id), "path"}, one per
 * path (a later id's file replaces an earlier one's at the same path, as
 * an upload would). NULL with err: 404 when an id is not in found, 400
 * when a filename makes no path or the files exceed a container's limits. */
json_t *fe_containers_copy_plan(const json_t *file_ids, const json_t *found, fe_error_t *err);

/* The answers every container endpoint shares: 404 "Container with id
 * '<id>' not found." and 400 "Container is expired." (OpenAI's words). */
void fe_containers_not_found(fe_request_t *r, const char *id);
void fe_containers_expired(fe_request_t *r);

/* Endpoints (fe_routes.c). */
void fe_containers_create(fe_request_t *r);
void fe_containers_list(fe_request_t *r);
void fe_containers_get(fe_request_t *r);
void fe_containers_delete(fe_request_t *r);

#endif
