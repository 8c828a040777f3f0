/*
 * fe_vstore_params: the checks of the Vector Stores API's request fields, as
 * OpenAI states them (openai-python's vector store, vector store file and
 * file batch params types), with OpenAI's 400 wording: chunking
 * strategies, file attributes, expiry policies, the files a request
 * attaches, search filters and the search request. Pure functions of JSON,
 * so the endpoints, the unit test and the fuzz harness share them (and the
 * file_search tool may check its filters with fe_vstore_params_filters).
 * Every error is a 400 with err filled; param names the field, nested ones
 * with their path ("files[2].chunking_strategy").
 */
#ifndef FE_VSTORE_PARAMS_H
#define FE_VSTORE_PARAMS_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"

/* Static chunking: OpenAI's defaults ("auto") and bounds. */
#define FE_VSTORE_CHUNK_DEFAULT_MAX 800
#define FE_VSTORE_CHUNK_DEFAULT_OVERLAP 400
#define FE_VSTORE_CHUNK_MIN 100
#define FE_VSTORE_CHUNK_MAX 4096

/* Most files one request attaches (vector store create, a batch). */
#define FE_VSTORE_MAX_FILES 500
/* Search: results asked for (1..50, default 10) and queries in one search. */
#define FE_VSTORE_MAX_RESULTS 50
#define FE_VSTORE_DEFAULT_RESULTS 10
#define FE_VSTORE_MAX_QUERIES 10
/* Filters: nesting of compound filters and comparisons in all. */
#define FE_VSTORE_FILTER_MAX_DEPTH 8
#define FE_VSTORE_FILTER_MAX_NODES 64

/* v (absent: NULL) as the strategy a file is ingested with, always the
 * resolved static form {"type":"static","static":{"max_chunk_size_tokens",
 * "chunk_overlap_tokens"}}: absent, null and {"type":"auto"} are 800/400.
 * Returns a new object, or NULL with err. */
json_t *fe_vstore_params_chunking(const json_t *v, const char *param, fe_error_t *err);

/* File attributes: absent or null, or an object of at most 16 keys (each
 * up to 64 characters) whose values are strings (up to 512 characters),
 * numbers or booleans. 0, or -1 with err. */
int fe_vstore_params_attributes(const json_t *v, const char *param, fe_error_t *err);

/* An expiry policy {"anchor":"last_active_at","days":1..365}; null is
 * allowed when nullable (an update clears the policy). 0, or -1 with err. */
int fe_vstore_params_expires_after(const json_t *v, const char *param, bool nullable, fe_error_t *err);

/* A search filter: a comparison {"key","type":eq|ne|gt|gte|lt|lte|in|nin,
 * "value"} (in/nin take an array of strings and numbers, the others a
 * string, number or boolean) or a compound {"type":and|or,"filters":[...]},
 * nested at most FE_VSTORE_FILTER_MAX_DEPTH deep with at most
 * FE_VSTORE_FILTER_MAX_NODES filters in all. Absent and null are allowed.
 * 0, or -1 with err. */
int fe_vstore_params_filters(const json_t *v, const char *param, fe_error_t *err);

/* What the attach endpoints take. */
enum fe_vstore_attach {
    FE_VSTORE_ATTACH_ONE,   /* POST .../files: file_id (required), attributes, chunking_strategy */
    FE_VSTORE_ATTACH_STORE, /* POST /v1/vector_stores: file_ids (optional), chunking_strategy */
    FE_VSTORE_ATTACH_BATCH, /* POST .../file_batches: file_ids or files[{file_id, attributes,
                               chunking_strategy}] (one of them), attributes and chunking_strategy
                               for those that give none */
};

/* The files body attaches, checked, as a new array of {"file_id",
 * "attributes" (an object), "chunking_strategy" (resolved)}, in the order
 * given (a repeated id is kept: the statement takes its first mention).
 * Keys of body that are not the endpoint's are not looked at (the endpoint
 * checks its allowed keys). NULL with err on a bad field. */
json_t *fe_vstore_params_attach(const json_t *body, enum fe_vstore_attach mode, fe_error_t *err);

/* A search body (query, filters, max_num_results, ranking_options,
 * rewrite_query; any other key is refused) as the job's request for
 * vector_store_id: {"op":"vs_search","vector_store_ids":[id],"query",
 * "filters"?,"max_num_results","ranking_options"?,"rewrite_query"}. A new
 * object, or NULL with err. */
json_t *fe_vstore_params_search(const json_t *body, const char *vector_store_id, fe_error_t *err);

#endif
