/*
 * fe_auth: API key and model lookups with in-memory caches. Entries (also
 * negative ones) live until PostgreSQL announces a change on channel
 * 'sb_config' (LISTEN/NOTIFY), which drops every cache at once, so a disabled
 * key or changed group takes effect on every frontend within milliseconds.
 * Keys are looked up by SHA-256 digest only; the secret is never stored.
 */
#ifndef FE_AUTH_H
#define FE_AUTH_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sb_db.h"

typedef struct fe_auth fe_auth_t;

/* Key record: {"key_id":int, "account_id":int, "usable":bool, "zdr":bool,
 * "models":[str]} or {"missing":true}. Model record: the models row as an
 * object (fe_sql.c) or {"missing":true}. */
typedef void (*fe_auth_cb)(json_t *record, const char *err, void *arg); /* record borrowed; NULL on err */

fe_auth_t *fe_auth_new(sb_db_t *db);
void fe_auth_destroy(fe_auth_t **a);

/* key is the presented secret (not NUL-terminated necessarily). cb may run
 * before this returns (cache hit). */
void fe_auth_lookup_key(fe_auth_t *a, const char *key, size_t len, fe_auth_cb cb, void *arg);
void fe_auth_lookup_model(fe_auth_t *a, const char *model, fe_auth_cb cb, void *arg);

/* True when the key record's group allows model. */
bool fe_auth_key_allows(const json_t *key_record, const char *model);

/* Drops all cached entries (NOTIFY handler). */
void fe_auth_flush(fe_auth_t *a);

#endif
