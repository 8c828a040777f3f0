/* sb_keyhash: key material. */
#include "sb_keyhash.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "sb_id.h"

static const char sb_b62[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/* prefix + base62 characters up to len, NUL-terminated. */
static void sb_key_generate_as(const char *prefix, char *out, size_t len)
{
    size_t plen = strlen(prefix);
    memcpy(out, prefix, plen);
    size_t i = plen;
    while (i < len) {
        unsigned char b[32];
        sb_random_bytes(b, sizeof b);
        for (size_t j = 0; j < sizeof b && i < len; j++)
            if (b[j] < 248) /* 248 = 4*62: reject to keep the alphabet uniform */
                out[i++] = sb_b62[b[j] % 62];
    }
    out[len] = '\0';
}

void sb_key_generate(char out[SB_KEY_LEN + 1])
{
    sb_key_generate_as(SB_KEY_PREFIX, out, SB_KEY_LEN);
}

void sb_admin_key_generate(char out[SB_ADMIN_KEY_LEN + 1])
{
    sb_key_generate_as(SB_ADMIN_KEY_PREFIX, out, SB_ADMIN_KEY_LEN);
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

static bool sb_key_shaped(const char *prefix, size_t want, const char *key, size_t len)
{
    size_t plen = strlen(prefix);
    if (len != want || strncmp(key, prefix, plen) != 0)
        return false;
    for (size_t i = plen; i < len; i++)
        if (!strchr(sb_b62, key[i]) || key[i] == '\0')
            return false;
    return true;
}

bool sb_key_well_formed(const char *key, size_t len)
{
    return sb_key_shaped(SB_KEY_PREFIX, SB_KEY_LEN, key, len);
}

bool sb_admin_key_well_formed(const char *key, size_t len)
{
    return sb_key_shaped(SB_ADMIN_KEY_PREFIX, SB_ADMIN_KEY_LEN, key, len);
}

void sb_key_display(const char *key, char *out, size_t out_size)
{
    size_t len = strlen(key);
    if (len <= SB_KEY_DISPLAY_LEN + 4)
        snprintf(out, out_size, "%.*s…", len > 4 ? 4 : (int)len, key);
    else
        snprintf(out, out_size, "%.*s…%s", SB_KEY_DISPLAY_LEN, key, key + len - 4);
}
