/*
 * sb_base64: standard base64 (RFC 4648 section 4, with padding, no line
 * breaks), for file contents carried through SQL and data URLs.
 */
#ifndef SB_BASE64_H
#define SB_BASE64_H

#include <stddef.h>

/* New NUL-terminated string (caller frees); *out_len its length if not NULL. */
char *sb_base64_encode(const void *data, size_t len, size_t *out_len);

/* Decodes text (len bytes, padding required when the length is not a
 * multiple of 4... as produced above). Returns a new buffer (caller frees,
 * NUL-terminated for convenience) and its length in *out_len, or NULL for
 * invalid input. */
unsigned char *sb_base64_decode(const char *text, size_t len, size_t *out_len);

#endif
