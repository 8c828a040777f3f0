/* sb_base64: standard base64 over OpenSSL's block codec. */
#include "sb_base64.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "sb_alloc.h"

char *sb_base64_encode(const void *data, size_t len, size_t *out_len)
{
    size_t n = 4 * ((len + 2) / 3);
    char *out = sb_xmalloc(n + 1);
    size_t off = 0;
    const unsigned char *in = data;
    /* EVP_EncodeBlock takes an int length: go in chunks (a multiple of 3). */
    const size_t chunk = 3u * 1024u * 1024u;
    for (size_t i = 0; i < len; i += chunk) {
        size_t m = len - i < chunk ? len - i : chunk;
        off += (size_t)EVP_EncodeBlock((unsigned char *)out + off, in + i, (int)m);
    }
    out[off] = '\0';
    if (out_len)
        *out_len = off;
    return out;
}

unsigned char *sb_base64_decode(const char *text, size_t len, size_t *out_len)
{
    if (len % 4 != 0)
        return NULL;
    for (size_t i = 0; i < len; i++) {
        char c = text[i];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/' ||
                  (c == '=' && i >= len - 2 && (i == len - 1 || text[len - 1] == '='));
        if (!ok)
            return NULL;
    }
    unsigned char *out = sb_xmalloc(len / 4 * 3 + 1);
    size_t off = 0;
    const size_t chunk = 4u * 1024u * 1024u; /* a multiple of 4 */
    for (size_t i = 0; i < len; i += chunk) {
        size_t m = len - i < chunk ? len - i : chunk;
        int n = EVP_DecodeBlock(out + off, (const unsigned char *)text + i, (int)m);
        if (n < 0) {
            free(out);
            return NULL;
        }
        off += (size_t)n;
    }
    /* EVP_DecodeBlock counts the padding as zero bytes. */
    if (len >= 1 && text[len - 1] == '=')
        off--;
    if (len >= 2 && text[len - 2] == '=')
        off--;
    out[off] = '\0';
    *out_len = off;
    return out;
}
