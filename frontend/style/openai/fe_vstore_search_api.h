/*
 * fe_vstore_search_api: POST /v1/vector_stores/{id}/search, as OpenAI's.
 * The search runs on a worker (a "vs_search" job under the store's embedding
 * model, fe_vstore_jobs.h): it embeds the query, ranks the store's chunks
 * (full-text and embedding similarity) and answers with one "vs_results"
 * event {search_query, data} before its final event; the reply is that page.
 */
#ifndef FE_VSTORE_SEARCH_API_H
#define FE_VSTORE_SEARCH_API_H

#include "fe_request.h"

/* Endpoint (fe_routes.c). */
void fe_vstore_search_start(fe_request_t *r);

#endif
