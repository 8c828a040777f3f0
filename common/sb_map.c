/*
 * sb_map: linear probing with backward-shift deletion (no tombstones), FNV-1a
 * hashing, load factor kept under 1/2.
 */
#include "sb_map.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

struct sb_map_slot {
    char *key; /* NULL when empty */
    uint64_t hash;
    void *value;
};

struct sb_map {
    struct sb_map_slot *slots;
    size_t cap; /* power of two */
    size_t size;
};

static uint64_t sb_map_hash(const char *s)
{
    uint64_t h = 1469598103934665603ULL;
    for (; *s; s++) {
        h ^= (unsigned char)*s;
        h *= 1099511628211ULL;
    }
    return h;
}

sb_map_t *sb_map_new(void)
{
    sb_map_t *m = sb_xcalloc(1, sizeof *m);
    m->cap = 16;
    m->slots = sb_xcalloc(m->cap, sizeof *m->slots);
    return m;
}

void sb_map_destroy(sb_map_t **pm)
{
    if (!pm || !*pm)
        return;
    sb_map_t *m = *pm;
    for (size_t i = 0; i < m->cap; i++)
        free(m->slots[i].key);
    free(m->slots);
    free(m);
    *pm = NULL;
}

static size_t sb_map_find(const sb_map_t *m, const char *key, uint64_t h)
{
    size_t mask = m->cap - 1;
    size_t i = h & mask;
    while (m->slots[i].key) {
        if (m->slots[i].hash == h && !strcmp(m->slots[i].key, key))
            return i;
        i = (i + 1) & mask;
    }
    return i; /* empty slot where key would go */
}

static void sb_map_grow(sb_map_t *m)
{
    struct sb_map_slot *old = m->slots;
    size_t oldcap = m->cap;
    m->cap *= 2;
    m->slots = sb_xcalloc(m->cap, sizeof *m->slots);
    for (size_t i = 0; i < oldcap; i++) {
        if (!old[i].key)
            continue;
        size_t j = old[i].hash & (m->cap - 1);
        while (m->slots[j].key)
            j = (j + 1) & (m->cap - 1);
        m->slots[j] = old[i];
    }
    free(old);
}

void *sb_map_put(sb_map_t *m, const char *key, void *value)
{
    if ((m->size + 1) * 2 > m->cap)
        sb_map_grow(m);
    uint64_t h = sb_map_hash(key);
    size_t i = sb_map_find(m, key, h);
    if (m->slots[i].key) {
        void *prev = m->slots[i].value;
        m->slots[i].value = value;
        return prev;
    }
    m->slots[i].key = sb_xstrdup(key);
    m->slots[i].hash = h;
    m->slots[i].value = value;
    m->size++;
    return NULL;
}

void *sb_map_get(const sb_map_t *m, const char *key)
{
    size_t i = sb_map_find(m, key, sb_map_hash(key));
    return m->slots[i].key ? m->slots[i].value : NULL;
}

static void sb_map_delete_slot(sb_map_t *m, size_t i)
{
    size_t mask = m->cap - 1;
    free(m->slots[i].key);
    m->slots[i].key = NULL;
    m->size--;
    /* Backward-shift: move later entries of the cluster into the hole when
     * their home slot does not lie cyclically in (hole, j]. */
    size_t hole = i;
    size_t j = (i + 1) & mask;
    while (m->slots[j].key) {
        size_t home = m->slots[j].hash & mask;
        int in_range = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!in_range) {
            m->slots[hole] = m->slots[j];
            m->slots[j].key = NULL;
            hole = j;
        }
        j = (j + 1) & mask;
    }
}

void *sb_map_remove(sb_map_t *m, const char *key)
{
    size_t i = sb_map_find(m, key, sb_map_hash(key));
    if (!m->slots[i].key)
        return NULL;
    void *v = m->slots[i].value;
    sb_map_delete_slot(m, i);
    return v;
}

size_t sb_map_size(const sb_map_t *m)
{
    return m->size;
}

void sb_map_foreach(const sb_map_t *m, void (*fn)(const char *, void *, void *), void *arg)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key)
            fn(m->slots[i].key, m->slots[i].value, arg);
}

void sb_map_remove_if(sb_map_t *m, int (*fn)(const char *, void *, void *), void *arg)
{
    /* Collect first: deletion shifts entries, which would skip or revisit slots. */
    size_t n = 0;
    char **doomed = sb_xcalloc(m->size + 1, sizeof *doomed);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].key && fn(m->slots[i].key, m->slots[i].value, arg))
            doomed[n++] = sb_xstrdup(m->slots[i].key);
    for (size_t i = 0; i < n; i++) {
        sb_map_remove(m, doomed[i]);
        free(doomed[i]);
    }
    free(doomed);
}
