/*
 * sb_alloc: the one place where out-of-memory is handled: it aborts.
 */
#include "sb_alloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void sb_oom(size_t size)
{
    fprintf(stderr, "switchboard: out of memory allocating %zu bytes\n", size);
    abort();
}

void *sb_xmalloc(size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p)
        sb_oom(size);
    return p;
}

void *sb_xcalloc(size_t nmemb, size_t size)
{
    void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
    if (!p)
        sb_oom(nmemb * size);
    return p;
}

void *sb_xrealloc(void *ptr, size_t size)
{
    void *p = realloc(ptr, size ? size : 1);
    if (!p)
        sb_oom(size);
    return p;
}

char *sb_xstrdup(const char *s)
{
    return sb_xstrndup(s, strlen(s));
}

char *sb_xstrndup(const char *s, size_t n)
{
    char *p = sb_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

char *sb_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *out = NULL;
    int n = vasprintf(&out, fmt, ap);
    va_end(ap);
    if (n < 0)
        sb_oom(0);
    return out;
}
