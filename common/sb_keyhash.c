/* sb_keyhash: key material. */
#include "sb_keyhash.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "sb_id.h"

static const char sb_b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

void sb_key_generate(char out[SB_KEY_LEN + 1])
{
    size_t plen = strlen(SB_KEY_PREFIX);
    memcpy(out, SB_KEY_PREFIX, plen);
    size_t i = plen;
    while (i < SB_KEY_LEN) {
        unsigned char b[32];
        sb_random_bytes(b, sizeof b);
        for (size_t j = 0; j < sizeof b && i < SB_KEY_LEN; j++)
            if (b[j] < 248) /* 248 = 4*62: reject to keep the alphabet uniform */
                out[i++] = sb_b62[b[j] % 62];
    }
    out[SB_KEY_LEN] = '\0';
}

void sb_key_hash(const char *key, size_t len, char out[SB_KEY_HASH_HEX])
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    EVP_Digest(key, len, md, &mdlen, EVP_sha256(), NULL);
    for (unsigned int i = 0; i < mdlen && i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
    out[64] = '\0';
}

bool sb_key_well_formed(const char *key, size_t len)
{
    size_t plen = strlen(SB_KEY_PREFIX);
    if (len != SB_KEY_LEN || strncmp(key, SB_KEY_PREFIX, plen) != 0)
        return false;
    for (size_t i = plen; i < len; i++)
        if (!strchr(sb_b62, key[i]) || key[i] == '\0')
            return false;
    return true;
}

void sb_key_display(const char *key, char *out, size_t out_size)
{
    size_t len = strlen(key);
    if (len <= SB_KEY_DISPLAY_LEN + 4)
        snprintf(out, out_size, "%.*s…", len > 4 ? 4 : (int)len, key);
    else
        snprintf(out, out_size, "%.*s…%s", SB_KEY_DISPLAY_LEN, key, key + len - 4);
}
