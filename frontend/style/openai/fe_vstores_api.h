/*
 * fe_vstores_api: the Vector Stores API's stores (POST/GET /v1/vector_stores,
 * GET/POST/DELETE /v1/vector_stores/{id}), as OpenAI's, scoped to the
 * caller's account: another account's store is a 404 exactly like a
 * missing one. The store's files are fe_vstore_files_api, its file batches
 * fe_vstore_batches_api, its search fe_vstore_search_api; what they share
 * (the query bracket, the not-found answer, the body, the store's use with
 * its embedding model) is here. docs/vector_stores.md is the reference.
 */
#ifndef FE_VSTORES_API_H
#define FE_VSTORES_API_H

#include "fe_request.h"
#include "fe_request_db.h"

/* Endpoints (fe_routes.c). */
void fe_vstores_create(fe_request_t *r);
void fe_vstores_list(fe_request_t *r);
void fe_vstores_get(fe_request_t *r);
void fe_vstores_update(fe_request_t *r);
void fe_vstores_delete(fe_request_t *r);

/* A query of these endpoints (the request is QUERY while it runs); a
 * database error answers 503 "Vector stores are temporarily unavailable". */
void fe_vstores_query(fe_request_t *r, const char *stmt, int n, const char *const *params, fe_request_db_cb cb);

/* 404: "No vector store found with id '<id>'." */
void fe_vstores_not_found(fe_request_t *r, const char *id);

/* The JSON body (r->body) with no key outside allowed (NULL-terminated);
 * NULL when the request was answered (400/413). */
json_t *fe_vstores_body(fe_request_t *r, const char *const *allowed);

/* The caller's account id, and its key as the broker's client name
 * ("key:<id>"; "" without one). */
long long fe_vstores_account_id(const fe_request_t *r);
void fe_vstores_client(const fe_request_t *r, char *buf, size_t len);

/* The store r->path_arg is about to be used (a file attached, a search):
 * checks that it is the caller's (404) and has not expired (400), moves its
 * last_active_at, looks up its embedding model (r->model; 400 when the
 * model does not exist or is disabled: the deployment's choice, so the
 * key's token group need not allow it) and continues with then(r). */
void fe_vstores_use(fe_request_t *r, fe_request_then_fn then);

/* Looks up model_id as the embedding model into r->model, then then(r);
 * answers 400 (missing, disabled) or 503 (registry down) itself. */
void fe_vstores_with_model(fe_request_t *r, const char *model_id, fe_request_then_fn then);

/* Per-request scratch between steps (r->parsed.style_state; created on
 * first use). */
json_t *fe_vstores_scratch(fe_request_t *r);

#endif
