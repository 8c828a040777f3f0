/*
 * sb_buf: a growable byte buffer (see sb_buf.h).
 */
#include "sb_buf.h"

#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

void sb_buf_add(sb_buf_t *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 64;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = sb_xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sb_buf_free(sb_buf_t *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}
