/*
 * emu_journal: a bounded ring of the last N requests received on /v1/..., as
 * JSON objects, so integration tests can assert on exactly what the gateway
 * sent upstream (headers, body). Served by GET /_emu/requests.
 */
#include <stdlib.h>

#include "emu_internal.h"
#include "sb_alloc.h"

struct sb_emu_journal {
    json_t **ring; /* owned references */
    size_t cap;
    size_t head; /* index of the oldest entry */
    size_t count;
};

struct sb_emu_journal *sb_emu_journal_new(size_t capacity)
{
    if (capacity == 0)
        return NULL;
    struct sb_emu_journal *j = sb_xcalloc(1, sizeof *j);
    j->ring = sb_xcalloc(capacity, sizeof *j->ring);
    j->cap = capacity;
    return j;
}

void sb_emu_journal_clear(struct sb_emu_journal *j)
{
    for (size_t i = 0; i < j->count; i++) {
        size_t idx = (j->head + i) % j->cap;
        json_decref(j->ring[idx]);
        j->ring[idx] = NULL;
    }
    j->head = 0;
    j->count = 0;
}

void sb_emu_journal_destroy(struct sb_emu_journal **jp)
{
    if (!jp || !*jp)
        return;
    sb_emu_journal_clear(*jp);
    free((*jp)->ring);
    free(*jp);
    *jp = NULL;
}

void sb_emu_journal_add(struct sb_emu_journal *j, json_t *entry)
{
    if (!entry)
        return;
    if (j->count == j->cap) {
        json_decref(j->ring[j->head]);
        j->ring[j->head] = entry;
        j->head = (j->head + 1) % j->cap;
        return;
    }
    j->ring[(j->head + j->count) % j->cap] = entry;
    j->count++;
}

json_t *sb_emu_journal_list(const struct sb_emu_journal *j, size_t limit)
{
    json_t *arr = json_array();
    size_t n = (limit == 0 || limit > j->count) ? j->count : limit;
    for (size_t i = j->count - n; i < j->count; i++)
        json_array_append(arr, j->ring[(j->head + i) % j->cap]);
    return arr;
}

size_t sb_emu_journal_size(const struct sb_emu_journal *j)
{
    return j->count;
}
