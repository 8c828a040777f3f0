/*
 * fe_limits_batch: the batch writers (fe_storebatch.h) of limited keys'
 * admissions, releases and block exchanges, one set per key (schema/007_limit_batches.sql).
 * A batch holds one key's requests only, so its transaction locks the key's,
 * group's and account's limit rows once, in that order, and two batches
 * never deadlock. Writers are made on a key's first request and freed once
 * idle when more than FE_LIMITS_BATCH_KEYS keys hold one.
 */
#ifndef FE_LIMITS_BATCH_H
#define FE_LIMITS_BATCH_H

#include <event2/event.h>

#include "fe_storebatch.h"
#include "sb_db.h"

/* Keys with writers kept before idle ones are freed. */
#define FE_LIMITS_BATCH_KEYS 1024

typedef struct fe_limits_batch fe_limits_batch_t;

fe_limits_batch_t *fe_limits_batch_new(struct event_base *base, sb_db_t *db);

/* Frees every writer (rows still queued are failed): after sb_db_destroy,
 * which answers the batches in flight. */
void fe_limits_batch_free(fe_limits_batch_t **lb);

/* The writer of key_id's admissions (FE_SQL_LIMIT_ADMIT) or releases
 * (FE_SQL_LIMIT_RELEASE). */
fe_storebatch_t *fe_limits_batch_admit(fe_limits_batch_t *lb, long long key_id);
fe_storebatch_t *fe_limits_batch_release(fe_limits_batch_t *lb, long long key_id);
/* The writer of the exchanges of key_id's capacity block (FE_SQL_LIMIT_BLOCK,
 * fe_limits_block.h). */
fe_storebatch_t *fe_limits_batch_block(fe_limits_batch_t *lb, long long key_id);

#endif
