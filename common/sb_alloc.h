/*
 * sb_alloc: allocation wrappers that abort on out-of-memory (as redis zmalloc),
 * so call sites never carry an OOM branch. Every pointer returned is owned by
 * the caller and released with free().
 */
#ifndef SB_ALLOC_H
#define SB_ALLOC_H

#include <stddef.h>

void *sb_xmalloc(size_t size);
void *sb_xcalloc(size_t nmemb, size_t size);
void *sb_xrealloc(void *ptr, size_t size);
char *sb_xstrdup(const char *s);
char *sb_xstrndup(const char *s, size_t n);
/* printf into a fresh heap string; aborts on OOM. */
char *sb_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* How many freed objects a free list keeps for reuse: n, or none under
 * AddressSanitizer, so a use after free is still caught there. */
#if defined(__SANITIZE_ADDRESS__)
#define SB_SPARES(n) 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SB_SPARES(n) 0
#endif
#endif
#ifndef SB_SPARES
#define SB_SPARES(n) (n)
#endif

#endif
