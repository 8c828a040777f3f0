/*
 * sb_base64: the base64 codec (see sb_base64.h): one table-driven encoder
 * and one decoder, the dialect chosen by flags.
 */
#include "sb_base64.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "sb_alloc.h"

static const char sb_base64_std[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
static const char sb_base64_url[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

size_t sb_base64_encoded_len(size_t n, unsigned flags)
{
    if (flags & SB_BASE64_NOPAD)
        return n / 3 * 4 + (n % 3 ? n % 3 + 1 : 0);
    return (n + 2) / 3 * 4;
}

size_t sb_base64_decoded_max(size_t len)
{
    return len / 4 * 3 + 2; /* 2 or 3 characters left over give 1 or 2 bytes */
}

size_t sb_base64_encode_into(const void *data, size_t len, unsigned flags, char *out)
{
    const char *abc = flags & SB_BASE64_URL ? sb_base64_url : sb_base64_std;
    const unsigned char *in = data;
    size_t o = 0, i = 0;
    for (; i + 3 <= len; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        out[o++] = abc[v >> 6 & 63];
        out[o++] = abc[v & 63];
    }
    size_t left = len - i;
    if (left > 0) {
        uint32_t v = (uint32_t)in[i] << 16 | (left == 2 ? (uint32_t)in[i + 1] << 8 : 0);
        out[o++] = abc[v >> 18 & 63];
        out[o++] = abc[v >> 12 & 63];
        if (left == 2)
            out[o++] = abc[v >> 6 & 63];
        if (!(flags & SB_BASE64_NOPAD)) {
            out[o++] = '=';
            if (left == 1)
                out[o++] = '=';
        }
    }
    out[o] = '\0';
    return o;
}

char *sb_base64_encode_flags(const void *data, size_t len, unsigned flags, size_t *out_len)
{
    char *out = sb_xmalloc(sb_base64_encoded_len(len, flags) + 1);
    size_t n = sb_base64_encode_into(data, len, flags, out);
    if (out_len)
        *out_len = n;
    return out;
}

char *sb_base64_encode(const void *data, size_t len, size_t *out_len)
{
    return sb_base64_encode_flags(data, len, 0, out_len);
}

/* Value of one character in the alphabets flags allow, or -1. */
static int sb_base64_value(unsigned char c, unsigned flags)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    bool std = !(flags & SB_BASE64_URL) || (flags & SB_BASE64_ANY);
    bool url = (flags & (SB_BASE64_URL | SB_BASE64_ANY)) != 0;
    if ((std && c == '+') || (url && c == '-'))
        return 62;
    if ((std && c == '/') || (url && c == '_'))
        return 63;
    return -1;
}

/* The decoder; out NULL only checks. */
static int sb_base64_run(const char *text, size_t len, unsigned flags, unsigned char *out, size_t *out_len)
{
    size_t n = len, pad = 0;
    if (!(flags & SB_BASE64_NOPAD)) {
        while (pad < 2 && n > 0 && text[n - 1] == '=') {
            n--;
            pad++;
        }
        /* Padding, when there is any (or must be), completes the last group of 4. */
        if ((pad || !(flags & SB_BASE64_PAD_OPTIONAL)) && (n + pad) % 4 != 0)
            return -EINVAL;
    }
    if (n % 4 == 1) /* 6 bits cannot make a byte */
        return -EINVAL;
    uint32_t acc = 0;
    unsigned bits = 0;
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        int v = sb_base64_value((unsigned char)text[i], flags);
        if (v < 0)
            return -EINVAL; /* also an '=' before the end */
        acc = (acc << 6 | (uint32_t)v) & 0xffffff;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            if (out)
                out[o] = (unsigned char)(acc >> bits);
            o++;
        }
    }
    if ((flags & SB_BASE64_STRICT) && (acc & ((1u << bits) - 1)))
        return -EINVAL; /* the bits after the last whole byte must be zero */
    *out_len = o;
    return 0;
}

int sb_base64_decode_into(const char *text, size_t len, unsigned flags, unsigned char *out, size_t *out_len)
{
    return sb_base64_run(text, len, flags, out, out_len);
}

int sb_base64_check(const char *text, size_t len, unsigned flags)
{
    size_t n;
    return sb_base64_run(text, len, flags, NULL, &n);
}

unsigned char *sb_base64_decode_flags(const char *text, size_t len, unsigned flags, size_t *out_len)
{
    unsigned char *out = sb_xmalloc(sb_base64_decoded_max(len) + 1);
    size_t n = 0;
    if (sb_base64_run(text, len, flags, out, &n) < 0) {
        free(out);
        return NULL;
    }
    out[n] = '\0';
    *out_len = n;
    return out;
}

unsigned char *sb_base64_decode(const char *text, size_t len, size_t *out_len)
{
    return sb_base64_decode_flags(text, len, 0, out_len);
}
