/* Unit tests for sb_keyhash: key shape, hashing, display. */
#include <string.h>

#include "sb_keyhash.h"
#include "sb_test.h"

int main(void)
{
    char k1[SB_KEY_LEN + 1], k2[SB_KEY_LEN + 1];
    sb_key_generate(k1);
    sb_key_generate(k2);
    CHECK_INT(strlen(k1), SB_KEY_LEN);
    CHECK(strncmp(k1, "sk-sb-", 6) == 0);
    CHECK(strcmp(k1, k2) != 0);
    CHECK(sb_key_well_formed(k1, strlen(k1)));
    CHECK(!sb_key_well_formed(k1, strlen(k1) - 1)); /* truncated */
    char bad[SB_KEY_LEN + 1];
    memcpy(bad, k1, sizeof bad);
    bad[10] = '!';
    CHECK(!sb_key_well_formed(bad, strlen(bad)));

    char h[SB_KEY_HASH_HEX];
    sb_key_hash("abc", 3, h);
    /* SHA-256("abc") from FIPS 180-2 */
    CHECK_STR(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    char disp[64];
    sb_key_display(k1, disp, sizeof disp);
    CHECK(strncmp(disp, k1, 12) == 0);
    CHECK(strstr(disp, k1 + 12) == NULL); /* the secret middle is not shown */
    return sb_test_finish("keyhash");
}
