/*
 * sb_utf8: making text valid UTF-8 before it goes into JSON. jansson refuses
 * to make a string of invalid UTF-8, so a message that quotes a client's
 * bytes (a decoded path), or that was clipped in the middle of a character,
 * would otherwise leave an error without its body.
 */
#ifndef SB_UTF8_H
#define SB_UTF8_H

#include <stddef.h>

/* Replaces, in place, each byte of the NUL-terminated s that is not part of
 * a valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF) with '?'. Returns how many bytes it replaced. */
size_t sb_utf8_fix(char *s);

#endif
