/*
 * wtool_vsearch: file search over vector stores: a query (or several)
 * ranked over the chunks of the account's stores, hybrid (as OpenAI's
 * ranking_options.hybrid_search): PostgreSQL full-text rank fused with the
 * cosine similarity of the query's embedding to each chunk's.
 *
 * The score of a chunk for a query is
 *     (embedding_weight * max(cosine, 0) + text_weight * ts_rank_cd(tsv, q, 32))
 *     / (embedding_weight + text_weight)
 * with q = websearch_to_tsquery('english', query) and ts_rank_cd's flag 32
 * (rank / (rank + 1)), so every score is in [0, 1] and score_threshold
 * means the same whatever the weights. Defaults: embedding_weight 0.7,
 * text_weight 0.3, score_threshold 0, max_num_results 10 (1..50). OpenAI
 * describes its weights as reciprocal rank fusion; ranks carry no absolute
 * relevance, so a threshold on a fused rank would keep or drop results by
 * how many there are, not by how well they match: the gateway fuses the
 * scores themselves. With several queries a chunk scores its best, and the
 * results are the best chunks over all of them. rewrite_query is accepted
 * and does nothing (search_query echoes the queries as given); ranker
 * too (there is no reranking step).
 *
 * Ranking is exact: every chunk of the files the filters let through is
 * scored, in SQL over the real[] column (wsql_vstores.c); pgvector is not
 * in Debian 12's archive. How far that goes is measured by
 * tests/bench/vstore.
 *
 * Filters (OpenAI's ComparisonFilter {key, type, value} and CompoundFilter
 * {type: and|or, filters}, nested) apply to each vector store file's
 * attributes, in C, before ranking (so a filter never reaches SQL as text):
 * eq, ne: equal values of the same type (numbers compare as numbers);
 * gt, gte, lt, lte: two numbers, or two strings (by bytes); in, nin: the
 * value is an array and the attribute equals one of its elements (nin:
 * none). A missing attribute, or one of another type, matches ne and nin
 * only.
 */
#ifndef WTOOL_VSEARCH_H
#define WTOOL_VSEARCH_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upstream.h"

struct sb_db;

#define SB_VS_DEFAULT_RESULTS 10
#define SB_VS_MAX_RESULTS 50
#define SB_VS_DEFAULT_EMBEDDING_WEIGHT 0.7
#define SB_VS_DEFAULT_TEXT_WEIGHT 0.3
/* Most queries, stores and filter nodes one search takes. */
#define SB_VS_MAX_QUERIES 10
#define SB_VS_MAX_STORES 100
#define SB_VS_MAX_FILTER_NODES 200
#define SB_VS_MAX_FILTER_DEPTH 16

/* A search request, checked (vector_store_ids, query, filters,
 * max_num_results, ranking_options, rewrite_query). */
typedef struct sb_vs_params {
    json_t *store_ids; /* owned: array of strings */
    json_t *queries;   /* owned: array of 1..SB_VS_MAX_QUERIES non-empty strings */
    json_t *filter;    /* owned, or NULL */
    int max_results;   /* 1..50 */
    double threshold;  /* 0..1 */
    double ew, tw;     /* >= 0, not both 0 */
} sb_vs_params_t;

/* Pure: params (the search's JSON) checked into *p. 0, or -EINVAL with
 * *err a 400 error event (OpenAI's wording of the field at fault). */
int sb_vs_params_parse(const json_t *params, sb_vs_params_t *p, json_t **err) __attribute__((warn_unused_result));
void sb_vs_params_clear(sb_vs_params_t *p);

/* Pure: a filter's shape (as above). 0, or -EINVAL with why set. */
int sb_vs_filter_check(const json_t *filter, char *why, size_t why_len) __attribute__((warn_unused_result));
/* Pure: whether attributes (an object, or NULL for none) pass a checked filter. */
bool sb_vs_filter_match(const json_t *filter, const json_t *attributes);

/* PostgreSQL array literals for parameters: text[] of n strings (lens[i]
 * bytes each, or NUL-terminated when lens is NULL; no NUL inside), real[]
 * of n floats. New strings. */
char *sb_vs_pg_text_array(const char *const *items, const size_t *lens, size_t n);
char *sb_vs_pg_real_array(const float *v, size_t n);

/* What a search needs from the worker (all borrowed; db may be NULL: the
 * search then fails with 503). */
typedef struct sb_vs_env {
    struct event_base *base;
    struct sb_db *db;
    sb_upstream_t *up;
    int64_t connect_timeout_ms;
} sb_vs_env_t;

/* The end of a search: result {"search_query":[...], "data":[{file_id,
 * filename, score, attributes, content:[{type:"text", text}]}]} (owned), or
 * err (owned: an error event). tokens: the query embedding's, as the
 * upstream counted them. */
typedef void (*sb_vsearch_cb)(void *arg, json_t *result, int64_t tokens, json_t *err);

typedef struct sb_vsearch sb_vsearch_t;

/*
 * Starts a search of account's stores: params as sb_vs_params_parse takes
 * them, its queries embedded through route (the stores' embeddings model,
 * wtool_embed.h) while the stores' files are read. route must be the one
 * the chunks were embedded with, capabilities included: a query vector of
 * another size than the chunks' (route.capabilities.embedding_dimensions
 * set at ingestion and not here) matches nothing, and the chunks rank on
 * their text alone. 0 with *out set: cb runs
 * once, from the loop (never inside this call), unless cancelled first. Or
 * a negative code with *err a final error event and nothing started: 400
 * for bad params, 503 without a database.
 */
int sb_vsearch_start(const sb_vs_env_t *env, const json_t *route, long long account_id, const json_t *params,
                     long long deadline_ms, sb_vsearch_cb cb, void *arg, sb_vsearch_t **out, json_t **err)
    __attribute__((warn_unused_result));

/* Stops a search (no callback runs) and frees it. NULL-safe; sets *s NULL.
 * Not from inside its own callback (it is freed when that returns). */
void sb_vsearch_cancel(sb_vsearch_t **s);

/* The error file search gives without the worker's database. */
#define SB_VS_ERR_NO_DB "file search needs the worker's database"

#endif
