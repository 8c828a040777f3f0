/*
 * fe_limits_block: capacity blocks of limited keys (schema/008_limit_blocks.sql,
 * docs/limits.md). A frontend that admits a key's requests often takes a
 * block of the key's capacity from PostgreSQL in one exchange (requests,
 * tokens, concurrency slots, charged there at once) and admits the next
 * requests from it here, with no round trip; their ends give the slots back
 * here too. What is not spent within FE_LIMITS_BLOCK_HOLD_MS goes back in
 * the next exchange, which asks for a new block sized by what was spent.
 * PostgreSQL grants at most an eighth of what is left of each limit, so
 * near a limit (and for small limits) requests are admitted one by one as
 * before (fe_limits.c). One exchange per key is in flight at a time, on the
 * key's writer (fe_limits_batch.h).
 */
#ifndef FE_LIMITS_BLOCK_H
#define FE_LIMITS_BLOCK_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "fe_limits_batch.h"
#include "sb_db.h"

/* Requests and tokens of a block are spent within this long of their grant
 * or given back: the rate limits' bound over their bucket (docs/limits.md). */
#define FE_LIMITS_BLOCK_HOLD_MS 250
/* A block's id: "blk_" and 16 hex digits (one per frontend process), "_"
 * and the key id. */
#define FE_LIMITS_BLOCK_ID_MAX 48

typedef struct fe_limits_blocks fe_limits_blocks_t;
typedef struct fe_limits_block fe_limits_block_t;

/* What a request took from a block (fe_request_t's), for its end. */
typedef struct {
    fe_limits_block_t *block; /* NULL: not admitted from a block */
    int64_t reserved;         /* tokens taken from the block; -1: tokens unlimited */
    bool slot;                /* took one of the block's slots */
    char id[FE_LIMITS_BLOCK_ID_MAX];
} fe_limits_taken_t;

fe_limits_blocks_t *fe_limits_blocks_new(struct event_base *base, fe_limits_batch_t *writers);

/* Every block gives back what it holds unspent (a limit changed: what it
 * holds was granted under the old one); in flight exchanges are let be. */
void fe_limits_blocks_flush(fe_limits_blocks_t *bs);

/* Gives every block's unspent capacity back, blocking (shutdown: before
 * sb_db_destroy). */
void fe_limits_blocks_return_all(fe_limits_blocks_t *bs, sb_db_t *db);

/* Frees every block: once no request holds one (after the requests are
 * reaped). */
void fe_limits_blocks_free(fe_limits_blocks_t **bs);

/* Admits a request of key_id reserving `reserve` tokens, whose lease must
 * last ttl_ms, from the key's block: true with *t filled, or false (no
 * block, or not enough in it) and the request goes to sb_limit_admit;
 * either way the demand counts toward the key's next block. */
bool fe_limits_block_take(fe_limits_blocks_t *bs, long long key_id, int64_t reserve, int64_t ttl_ms,
                          fe_limits_taken_t *t);

/* The request that took *t ended having used `used` tokens: its slot is
 * free again and the difference from its reservation is reported with the
 * next exchange. *t is cleared (its id kept, for the request log). */
void fe_limits_block_put(fe_limits_taken_t *t, int64_t used);

#endif
