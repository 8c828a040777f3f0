/*
 * fe_auth: cached lookups. A generation counter guards against a stale answer
 * that was in flight when a flush happened being cached after it.
 */
#include "fe_auth.h"

#include <stdlib.h>
#include <string.h>

#include "fe_sql.h"
#include "sb_alloc.h"
#include "sb_keyhash.h"
#include "sb_log.h"
#include "sb_map.h"

/* A cache bigger than this is dropped whole: bounded memory under a flood of
 * random keys. */
#define FE_AUTH_CACHE_MAX 100000

struct fe_auth {
    sb_db_t *db;
    sb_map_t *keys;   /* key hash -> json_t* record (owned) */
    sb_map_t *models; /* model id -> json_t* record (owned) */
    unsigned long generation;
};

typedef struct {
    fe_auth_t *auth;
    bool is_key;
    char *cache_key;
    unsigned long generation;
    fe_auth_cb cb;
    void *arg;
} fe_auth_pending_t;

static int fe_auth_drop(const char *k, void *v, void *arg)
{
    json_decref(v);
    return 1;
}

static void fe_auth_cache_put(sb_map_t *m, const char *k, json_t *rec)
{
    if (sb_map_size(m) >= FE_AUTH_CACHE_MAX)
        sb_map_remove_if(m, fe_auth_drop, NULL);
    json_t *old = sb_map_put(m, k, json_incref(rec));
    json_decref(old);
}

fe_auth_t *fe_auth_new(sb_db_t *db)
{
    fe_auth_t *a = sb_xcalloc(1, sizeof *a);
    a->db = db;
    a->keys = sb_map_new();
    a->models = sb_map_new();
    return a;
}

void fe_auth_destroy(fe_auth_t **pa)
{
    if (!pa || !*pa)
        return;
    fe_auth_flush(*pa);
    sb_map_destroy(&(*pa)->keys);
    sb_map_destroy(&(*pa)->models);
    free(*pa);
    *pa = NULL;
}

void fe_auth_flush(fe_auth_t *a)
{
    a->generation++;
    sb_map_remove_if(a->keys, fe_auth_drop, NULL);
    sb_map_remove_if(a->models, fe_auth_drop, NULL);
}

static json_t *fe_auth_key_record(const PGresult *res)
{
    if (PQntuples(res) != 1)
        return json_pack("{s:b}", "missing", 1);
    json_t *models = json_loads(PQgetvalue(res, 0, 4), 0, NULL);
    if (!json_is_array(models)) {
        json_decref(models);
        models = json_array();
    }
    return json_pack("{s:I, s:I, s:b, s:b, s:o, s:b}", "key_id", (json_int_t)strtoll(PQgetvalue(res, 0, 0), NULL, 10),
                     "account_id", (json_int_t)strtoll(PQgetvalue(res, 0, 1), NULL, 10), "usable",
                     PQgetvalue(res, 0, 2)[0] == 't', "zdr", PQgetvalue(res, 0, 3)[0] == 't', "models", models,
                     "limited", PQgetvalue(res, 0, 5)[0] == 't');
}

static json_t *fe_auth_model_record(const PGresult *res)
{
    json_t *rec = PQntuples(res) == 1 ? json_loads(PQgetvalue(res, 0, 0), 0, NULL) : NULL;
    return rec ? rec : json_pack("{s:b}", "missing", 1);
}

static void fe_auth_on_result(const PGresult *res, const char *err, void *arg)
{
    fe_auth_pending_t *p = arg;
    if (err) {
        sb_warn("%s lookup failed: %s", p->is_key ? "key" : "model", err);
        p->cb(NULL, err, p->arg);
    } else {
        json_t *rec = p->is_key ? fe_auth_key_record(res) : fe_auth_model_record(res);
        if (p->generation == p->auth->generation)
            fe_auth_cache_put(p->is_key ? p->auth->keys : p->auth->models, p->cache_key, rec);
        p->cb(rec, NULL, p->arg);
        json_decref(rec);
    }
    free(p->cache_key);
    free(p);
}

static void fe_auth_lookup(fe_auth_t *a, bool is_key, const char *cache_key, fe_auth_cb cb, void *arg)
{
    json_t *hit = sb_map_get(is_key ? a->keys : a->models, cache_key);
    if (hit) {
        cb(hit, NULL, arg);
        return;
    }
    fe_auth_pending_t *p = sb_xcalloc(1, sizeof *p);
    p->auth = a;
    p->is_key = is_key;
    p->cache_key = sb_xstrdup(cache_key);
    p->generation = a->generation;
    p->cb = cb;
    p->arg = arg;
    const char *params[1] = {cache_key};
    sb_db_query(a->db, is_key ? FE_SQL_KEY_LOOKUP : FE_SQL_MODEL_LOOKUP, 1, params, fe_auth_on_result, p);
}

void fe_auth_lookup_key(fe_auth_t *a, const char *key, size_t len, fe_auth_cb cb, void *arg)
{
    char hash[SB_KEY_HASH_HEX];
    sb_key_hash(key, len, hash);
    fe_auth_lookup(a, true, hash, cb, arg);
}

void fe_auth_lookup_model(fe_auth_t *a, const char *model, fe_auth_cb cb, void *arg)
{
    fe_auth_lookup(a, false, model, cb, arg);
}

bool fe_auth_key_allows(const json_t *key_record, const char *model)
{
    json_t *models = json_object_get(key_record, "models");
    size_t i;
    json_t *m;
    json_array_foreach (models, i, m) {
        const char *s = json_string_value(m);
        if (s && (!strcmp(s, "*") || !strcmp(s, model)))
            return true;
    }
    return false;
}
