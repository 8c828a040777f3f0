/*
 * wtool_embed: embeddings for file search, through the operator's
 * embeddings route (a deployment model; its route travels in the job as a
 * generation's does: provider, base_url, upstream_model, credential_ref,
 * timeout_ms, capabilities).
 *
 *   openai-chat, openai-responses (and "openai-compatible"): POST
 *     {base_url}/embeddings {"model", "input":[...], "encoding_format":"float",
 *     "dimensions"?} -> {"data":[{"index","embedding":[...]|"<base64 float32>"}],
 *     "usage":{"prompt_tokens"}}, key as "Authorization: Bearer";
 *   gemini: POST {base_url}/models/{m}:batchEmbedContents {"requests":[{"model",
 *     "content":{"parts":[{"text"}]}, "taskType", "outputDimensionality"?}]}
 *     -> {"embeddings":[{"values":[...]}]}, key in x-goog-api-key; taskType is
 *     RETRIEVAL_DOCUMENT for chunks and RETRIEVAL_QUERY for queries.
 * route.capabilities.embedding_dimensions (an integer), when set, asks the
 * upstream for vectors of that size (OpenAI's text-embedding-3 and Gemini
 * shorten theirs): smaller vectors rank faster (docs: the file search
 * benchmark). The credential is the worker's environment variable that
 * credential_ref names, sent only in the header and never logged. These
 * URLs are the operator's, so they go through sb_upstream without the SSRF
 * guard, as model calls do.
 *
 * Inputs go SB_EMBED_BATCH to a request, SB_EMBED_PARALLEL requests at a
 * time; a batch that meets a transient failure (no connection, 429, 5xx) is
 * retried up to SB_EMBED_RETRIES times, backing off, within the deadline.
 * Every vector comes back scaled to unit length, so that a dot product is
 * the cosine similarity (what file search ranks by); all of one call's
 * vectors must have the same size.
 */
#ifndef WTOOL_EMBED_H
#define WTOOL_EMBED_H

#include <event2/event.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "provider_util.h"
#include "upstream.h"

#define SB_EMBED_BATCH 64
#define SB_EMBED_PARALLEL 4
#define SB_EMBED_RETRIES 2
/* Largest vector accepted (OpenAI's and Gemini's largest models give 3072). */
#define SB_EMBED_MAX_DIMS 16384
/* Largest answer read for one batch. */
#define SB_EMBED_MAX_ANSWER (64u * 1024u * 1024u)

enum sb_embed_api {
    SB_EMBED_API_NONE = 0, /* the route's kind has no embeddings (anthropic) */
    SB_EMBED_API_OPENAI,
    SB_EMBED_API_GEMINI,
};

/* One text to embed: len bytes of valid UTF-8 (not NUL-terminated). */
typedef struct sb_embed_input {
    const char *p;
    size_t len;
} sb_embed_input_t;

enum sb_embed_api sb_embed_api_of(const json_t *route);

/* Pure: the request embedding inputs[0..n) (query: the texts are search
 * queries, not documents). 0, or -EINVAL with *err a final error event (a
 * route without what it needs, a credential not set). *req must be zeroed;
 * the caller clears it either way. */
int sb_embed_build(const json_t *route, const sb_embed_input_t *inputs, size_t n, bool query,
                   sb_provider_request_t *req, json_t **err) __attribute__((warn_unused_result));

/* Pure: a 2xx answer of api for n inputs. *dim is the vectors' size: 0 to
 * take the answer's, or the size the answer must have. Fills vecs[0..n*dim)
 * (malloc'd into *vecs) with unit vectors in input order, and *tokens with
 * the upstream's count (0 when it gives none). 0, or -EINVAL with why set. */
int sb_embed_parse(enum sb_embed_api api, const char *body, size_t len, size_t n, size_t *dim, float **vecs,
                   int64_t *tokens, char *why, size_t why_len) __attribute__((warn_unused_result));

/* What an embedding call needs from the worker (all borrowed). */
typedef struct sb_embed_env {
    struct event_base *base;
    sb_upstream_t *up;
    int64_t connect_timeout_ms;
} sb_embed_env_t;

/* The end of an embedding call: vecs (owned by the callee: free() it) holds
 * n*dim floats; or err (owned: an error event) and vecs NULL. tokens: the
 * upstream's count, summed; upstream_us: time spent in its requests. */
typedef void (*sb_embed_cb)(void *arg, float *vecs, size_t dim, int64_t tokens, int64_t upstream_us, json_t *err);

typedef struct sb_embed sb_embed_t;

/* Starts embedding inputs[0..n) (borrowed: they must stay until the end;
 * n >= 1) on env's loop. cb runs exactly once, from the loop (never inside
 * this call), unless the call is cancelled first. deadline_ms: absolute
 * epoch ms, 0 for none (each request still has route.timeout_ms, 60 s by
 * default). Never fails: a route that cannot embed ends in cb's err. */
sb_embed_t *sb_embed_start(const sb_embed_env_t *env, const json_t *route, const sb_embed_input_t *inputs, size_t n,
                           bool query, long long deadline_ms, sb_embed_cb cb, void *arg);

/* Stops the call (no callback runs) and frees it. NULL-safe; sets *e NULL.
 * Not from inside its own callback (it is freed when that returns). */
void sb_embed_cancel(sb_embed_t **e);

#endif
