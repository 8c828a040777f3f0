/* sb_id: prefixed random identifiers. */
#include "sb_id.h"

#include <openssl/rand.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void sb_random_bytes(void *buf, size_t n)
{
    if (RAND_bytes(buf, (int)n) != 1) {
        fprintf(stderr, "switchboard: CSPRNG failure\n");
        abort();
    }
}

/* prefix, then the n bytes of raw as hex, truncated to out_size. */
static void sb_id_write(char *out, size_t out_size, const char *prefix, const unsigned char *raw, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (out_size == 0)
        return;
    size_t pos = strlen(prefix);
    if (pos >= out_size)
        pos = out_size - 1;
    memcpy(out, prefix, pos);
    for (size_t i = 0; i < n && pos + 2 < out_size; i++) {
        out[pos++] = hex[raw[i] >> 4];
        out[pos++] = hex[raw[i] & 15];
    }
    out[pos] = '\0';
}

void sb_id_new(char *out, size_t out_size, const char *prefix, size_t nbytes)
{
    unsigned char raw[32];
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    sb_random_bytes(raw, nbytes);
    sb_id_write(out, out_size, prefix, raw, nbytes);
}

void sb_id_new_ordered(char *out, size_t out_size, const char *prefix, size_t nbytes)
{
    unsigned char raw[6 + 32];
    if (nbytes > 32)
        nbytes = 32;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (int i = 5; i >= 0; i--, ms >>= 8)
        raw[i] = (unsigned char)(ms & 0xff);
    sb_random_bytes(raw + 6, nbytes);
    sb_id_write(out, out_size, prefix, raw, 6 + nbytes);
}
