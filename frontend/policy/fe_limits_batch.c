/*
 * fe_limits_batch: one key's admission and release writers, in a map by key
 * id (fe_limits_batch.h).
 */
#include "fe_limits_batch.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_map.h"

typedef struct {
    fe_storebatch_t *admit, *release, *block;
} fe_limits_batch_key_t;

struct fe_limits_batch {
    struct event_base *base;
    sb_db_t *db;
    sb_map_t *keys; /* key id -> fe_limits_batch_key_t */
};

fe_limits_batch_t *fe_limits_batch_new(struct event_base *base, sb_db_t *db)
{
    fe_limits_batch_t *lb = sb_xcalloc(1, sizeof *lb);
    lb->base = base;
    lb->db = db;
    lb->keys = sb_map_new();
    return lb;
}

static int fe_limits_batch_drop(const char *key, void *value, void *arg)
{
    (void)key;
    fe_limits_batch_key_t *k = value;
    bool *only_idle = arg;
    if (*only_idle && !(fe_storebatch_idle(k->admit) && fe_storebatch_idle(k->release) && fe_storebatch_idle(k->block)))
        return 0;
    fe_storebatch_free(&k->admit);
    fe_storebatch_free(&k->release);
    fe_storebatch_free(&k->block);
    free(k);
    return 1;
}

void fe_limits_batch_free(fe_limits_batch_t **plb)
{
    if (!plb || !*plb)
        return;
    fe_limits_batch_t *lb = *plb;
    bool only_idle = false;
    sb_map_remove_if(lb->keys, fe_limits_batch_drop, &only_idle);
    sb_map_destroy(&lb->keys);
    free(lb);
    *plb = NULL;
}

static fe_limits_batch_key_t *fe_limits_batch_key(fe_limits_batch_t *lb, long long key_id)
{
    char id[24];
    snprintf(id, sizeof id, "%lld", key_id);
    fe_limits_batch_key_t *k = sb_map_get(lb->keys, id);
    if (k)
        return k;
    /* A writer answering its batch counts itself busy until its rows'
     * callbacks have run (fe_storebatch_idle), so dropping idle writers
     * here frees none in use, whoever calls. */
    if (sb_map_size(lb->keys) >= FE_LIMITS_BATCH_KEYS) {
        bool only_idle = true;
        sb_map_remove_if(lb->keys, fe_limits_batch_drop, &only_idle);
    }
    k = sb_xcalloc(1, sizeof *k);
    k->admit = fe_storebatch_new(lb->base, lb->db, FE_SQL_LIMIT_ADMIT);
    k->release = fe_storebatch_new(lb->base, lb->db, FE_SQL_LIMIT_RELEASE);
    k->block = fe_storebatch_new(lb->base, lb->db, FE_SQL_LIMIT_BLOCK);
    sb_map_put(lb->keys, id, k);
    return k;
}

fe_storebatch_t *fe_limits_batch_admit(fe_limits_batch_t *lb, long long key_id)
{
    return fe_limits_batch_key(lb, key_id)->admit;
}

fe_storebatch_t *fe_limits_batch_release(fe_limits_batch_t *lb, long long key_id)
{
    return fe_limits_batch_key(lb, key_id)->release;
}

fe_storebatch_t *fe_limits_batch_block(fe_limits_batch_t *lb, long long key_id)
{
    return fe_limits_batch_key(lb, key_id)->block;
}
