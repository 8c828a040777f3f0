/* sb_utf8: in-place repair of invalid UTF-8 (sb_utf8.h). */
#include "sb_utf8.h"

/* The length of the valid sequence at s, or 0. */
static size_t sb_utf8_seq(const unsigned char *s)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    size_t n;
    unsigned long cp;
    if (c >= 0xc2 && c <= 0xdf) {
        n = 2;
        cp = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
        n = 3;
        cp = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
        n = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80) /* a NUL ends it too */
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

size_t sb_utf8_fix(char *s)
{
    size_t fixed = 0;
    unsigned char *p = (unsigned char *)s;
    while (*p) {
        size_t n = sb_utf8_seq(p);
        if (n == 0) {
            *p++ = '?';
            fixed++;
        } else {
            p += n;
        }
    }
    return fixed;
}

long sb_utf8_offset(const char *s, size_t n, long long cp)
{
    size_t i = 0;
    for (long long k = 0; k < cp; k++) {
        if (i >= n)
            return -1;
        i++;
        while (i < n && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return (long)i;
}
