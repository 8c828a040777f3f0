/* test_utf8: sb_utf8_fix repairs what jansson would refuse, and leaves valid
 * UTF-8 alone. */
#include <jansson.h>
#include <string.h>

#include "sb_test.h"
#include "sb_utf8.h"

static void expect_fix(const char *in, const char *want, size_t replaced)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", in);
    CHECK_INT(sb_utf8_fix(buf), replaced);
    CHECK_STR(buf, want);
    json_t *j = json_string(buf); /* what the fix is for */
    CHECK(j != NULL);
    json_decref(j);
}

int main(void)
{
    expect_fix("plain ascii", "plain ascii", 0);
    expect_fix("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80", 0);
    expect_fix("/v1/\xff\xfe", "/v1/??", 2);    /* bytes a decoded path may hold */
    expect_fix("clipped \xd6", "clipped ?", 1); /* a character cut at the end */
    expect_fix("\xe2\x82x", "??x", 2);          /* a sequence broken in the middle */
    expect_fix("\xc0\xaf", "??", 2);            /* overlong '/' */
    expect_fix("\xed\xa0\x80", "???", 3);       /* a surrogate */
    expect_fix("\xf4\x90\x80\x80", "????", 4);  /* above U+10FFFF */

    /* Code point indexes to byte offsets: "Zoë — 😀x" */
    const char *t = "Zo\xc3\xab \xe2\x80\x94 \xf0\x9f\x98\x80x";
    size_t n = strlen(t);
    CHECK_INT(sb_utf8_offset(t, n, 0), 0);
    CHECK_INT(sb_utf8_offset(t, n, 2), 2);  /* ë starts at byte 2 */
    CHECK_INT(sb_utf8_offset(t, n, 3), 4);  /* after ë (2 bytes) */
    CHECK_INT(sb_utf8_offset(t, n, 5), 8);  /* after — (3 bytes) */
    CHECK_INT(sb_utf8_offset(t, n, 7), 13); /* after 😀 (4 bytes) */
    CHECK_INT(sb_utf8_offset(t, n, 8), 14); /* the end */
    CHECK_INT(sb_utf8_offset(t, n, 9), -1); /* past it */
    CHECK_INT(sb_utf8_offset("", 0, 0), 0);
    return sb_test_finish("utf8");
}
