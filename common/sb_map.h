/*
 * sb_map: an open-addressing hash map from NUL-terminated string keys to
 * borrowed pointers. Keys are copied and owned by the map; values are not.
 * Used for job tables and caches; not thread-safe (one loop per process).
 */
#ifndef SB_MAP_H
#define SB_MAP_H

#include <stddef.h>

typedef struct sb_map sb_map_t;

sb_map_t *sb_map_new(void);
void sb_map_destroy(sb_map_t **m);

/* Inserts or replaces; returns the previous value or NULL. */
void *sb_map_put(sb_map_t *m, const char *key, void *value);
void *sb_map_get(const sb_map_t *m, const char *key);
/* Removes key; returns its value or NULL. */
void *sb_map_remove(sb_map_t *m, const char *key);
size_t sb_map_size(const sb_map_t *m);

/* Calls fn for each entry; fn must not modify the map. */
void sb_map_foreach(const sb_map_t *m, void (*fn)(const char *key, void *value, void *arg), void *arg);
/* Removes every entry for which fn returns non-zero (fn may free the value). */
void sb_map_remove_if(sb_map_t *m, int (*fn)(const char *key, void *value, void *arg), void *arg);

#endif
