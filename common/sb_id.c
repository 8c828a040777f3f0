/* sb_id: prefixed random identifiers. */
#include "sb_id.h"

#include <openssl/rand.h>
#include <stdio.h>
#include <stdlib.h>

void sb_random_bytes(void *buf, size_t n)
{
    if (RAND_bytes(buf, (int)n) != 1) {
        fprintf(stderr, "switchboard: CSPRNG failure\n");
        abort();
    }
}

void sb_id_new(char *out, size_t out_size, const char *prefix, size_t nbytes)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char raw[32];
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    sb_random_bytes(raw, nbytes);
    size_t pos = (size_t)snprintf(out, out_size, "%s", prefix);
    for (size_t i = 0; i < nbytes && pos + 2 < out_size; i++) {
        out[pos++] = hex[raw[i] >> 4];
        out[pos++] = hex[raw[i] & 15];
    }
    out[pos < out_size ? pos : out_size - 1] = '\0';
}
