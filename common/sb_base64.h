/*
 * sb_base64: base64 (RFC 4648), the one codec of the tree: file contents
 * carried through SQL and data URLs (standard alphabet, padded), sealed
 * tokens (base64url, unpadded, strict), protobuf JSON bytes in the emulator
 * (either alphabet, padding optional). The flags choose the dialect; 0 is
 * standard base64 with padding, no line breaks.
 *
 * Decoding never trusts its input: a character outside the alphabet, a
 * length no encoding has, or misplaced padding is refused. Only SB_BASE64_STRICT
 * also refuses set bits after the last whole byte, which makes the encoding
 * of each byte string unique (tokens compared or signed as text need that).
 */
#ifndef SB_BASE64_H
#define SB_BASE64_H

#include <stddef.h>

#define SB_BASE64_URL 0x1u          /* "-_" in place of "+/" (RFC 4648 section 5) */
#define SB_BASE64_ANY 0x2u          /* decode: either alphabet, even mixed, as protobuf's JSON bytes */
#define SB_BASE64_NOPAD 0x4u        /* encode without '='; decoding refuses '=' */
#define SB_BASE64_PAD_OPTIONAL 0x8u /* decode: the '=' padding may be left out (if there, it must be right) */
#define SB_BASE64_STRICT 0x10u      /* decode: the unused bits of the last character must be zero */

/* Length of the encoding of n bytes (without a NUL). */
size_t sb_base64_encoded_len(size_t n, unsigned flags);
/* Most bytes text of len characters can decode to (room for sb_base64_decode_into). */
size_t sb_base64_decoded_max(size_t len);

/* Standard padded base64 of data: a new NUL-terminated string (caller
 * frees); *out_len its length if not NULL. Cannot fail (aborts on OOM). */
char *sb_base64_encode(const void *data, size_t len, size_t *out_len);
/* The same in the dialect of flags (SB_BASE64_URL, SB_BASE64_NOPAD). */
char *sb_base64_encode_flags(const void *data, size_t len, unsigned flags, size_t *out_len);
/* Encodes into out, which holds sb_base64_encoded_len(len, flags) + 1 bytes;
 * NUL-terminates and returns the length. */
size_t sb_base64_encode_into(const void *data, size_t len, unsigned flags, char *out);

/* Decodes standard padded base64 (len bytes of text; a length that is a
 * multiple of 4, '=' only as the last one or two characters). Returns a new
 * buffer (caller frees, NUL-terminated for convenience) and its length in
 * *out_len, or NULL for invalid input. */
unsigned char *sb_base64_decode(const char *text, size_t len, size_t *out_len);
/* The same in the dialect of flags. */
unsigned char *sb_base64_decode_flags(const char *text, size_t len, unsigned flags, size_t *out_len);
/* Decodes into out (sb_base64_decoded_max(len) bytes; not NUL-terminated),
 * for callers that keep secrets off the heap. Returns 0 with *out_len set,
 * or -EINVAL (out may then hold partial output). */
int sb_base64_decode_into(const char *text, size_t len, unsigned flags, unsigned char *out, size_t *out_len)
    __attribute__((warn_unused_result));
/* Whether text decodes, without decoding it: 0 or -EINVAL. */
int sb_base64_check(const char *text, size_t len, unsigned flags) __attribute__((warn_unused_result));

#endif
