/*
 * sb_utf8: making text valid UTF-8 before it goes into JSON (jansson refuses
 * to make a string of invalid UTF-8, so a message that quotes a client's
 * bytes, or that was clipped in the middle of a character, would otherwise
 * leave an error without its body), and moving between code point indexes
 * (OpenAI's annotation spans) and byte offsets (Google's segments, C strings).
 */
#ifndef SB_UTF8_H
#define SB_UTF8_H

#include <stddef.h>

/* Replaces, in place, each byte of the NUL-terminated s that is not part of
 * a valid UTF-8 sequence (RFC 3629: no overlong forms, no surrogates,
 * nothing above U+10FFFF) with '?'. Returns how many bytes it replaced. */
size_t sb_utf8_fix(char *s);

/* The byte offset of code point cp in the UTF-8 text s (n bytes), or -1
 * when s has fewer code points. A continuation byte does not start one. */
long sb_utf8_offset(const char *s, size_t n, long long cp);

#endif
