/*
 * sb_buf: a growable byte buffer, always NUL-terminated once written to
 * (text being joined, streamed lines being assembled). A zeroed sb_buf_t is
 * empty; the buffer owns p.
 */
#ifndef SB_BUF_H
#define SB_BUF_H

#include <stddef.h>

typedef struct sb_buf {
    char *p; /* NULL until the first add */
    size_t len, cap;
} sb_buf_t;

/* Appends n bytes of s (aborts on out of memory, as sb_alloc does). */
void sb_buf_add(sb_buf_t *b, const char *s, size_t n);
/* Frees p and zeroes b. */
void sb_buf_free(sb_buf_t *b);

#endif
