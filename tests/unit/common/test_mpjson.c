/* Unit tests for sb_mpjson: round trips and hostile input. */
#include <errno.h>
#include <stdlib.h>

#include "sb_mpjson.h"
#include "sb_test.h"

static void test_round_trip(void)
{
    const char *src =
        "{\"a\":1,\"b\":[true,false,null,-5,2.5,\"x\\u00e9\"],\"c\":{\"d\":\"\"},\"big\":9007199254740993}";
    json_t *in = json_loads(src, 0, NULL);
    CHECK(in != NULL);
    char *buf = NULL;
    size_t len = 0;
    CHECK_INT(sb_mpjson_encode(in, &buf, &len), 0);
    json_t *out = NULL;
    CHECK_INT(sb_mpjson_decode(buf, len, &out), 0);
    CHECK(json_equal(in, out));
    CHECK_INT(json_integer_value(json_object_get(out, "big")), 9007199254740993LL);
    CHECK(json_is_real(json_array_get(json_object_get(out, "b"), 4)));
    free(buf);
    json_decref(in);
    json_decref(out);
}

static void test_rejects_garbage(void)
{
    json_t *out = (json_t *)1;
    CHECK_INT(sb_mpjson_decode("", 0, &out), -EINVAL);
    CHECK(out == NULL);
    /* map with an integer key */
    const unsigned char intkey[] = {0x81, 0x01, 0x02};
    CHECK_INT(sb_mpjson_decode(intkey, sizeof intkey, &out), -EINVAL);
    /* truncated str8 */
    const unsigned char trunc[] = {0xd9, 0x10, 'a', 'b'};
    CHECK_INT(sb_mpjson_decode(trunc, sizeof trunc, &out), -EINVAL);
    /* trailing bytes after one value */
    const unsigned char trailing[] = {0xc0, 0xc0};
    CHECK_INT(sb_mpjson_decode(trailing, sizeof trailing, &out), -EINVAL);
    /* invalid UTF-8 in a string */
    const unsigned char badutf[] = {0xa2, 0xc3, 0x28};
    CHECK_INT(sb_mpjson_decode(badutf, sizeof badutf, &out), -EINVAL);
    /* uint64 above INT64_MAX */
    const unsigned char huge[] = {0xcf, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    CHECK_INT(sb_mpjson_decode(huge, sizeof huge, &out), -EINVAL);
    CHECK(out == NULL);
}

static void test_depth_limit(void)
{
    /* 200 nested one-element arrays: deeper than SB_MAX_MSGPACK_DEPTH */
    unsigned char deep[201];
    for (int i = 0; i < 200; i++)
        deep[i] = 0x91;
    deep[200] = 0xc0;
    json_t *out = NULL;
    CHECK(sb_mpjson_decode(deep, sizeof deep, &out) < 0);
    CHECK(out == NULL);
}

/* Empty strings where msgpack-c hands back a NULL pointer: a message's first
 * string, or its first key (found by tests/fuzz/fuzz_mpjson). */
static void test_empty_strings(void)
{
    const char *srcs[] = {"\"\"", "[\"\"]", "{\"\":\"\"}", "[\"\",\"\",{\"\":[\"\"]}]"};
    for (size_t i = 0; i < sizeof srcs / sizeof srcs[0]; i++) {
        json_t *in = json_loads(srcs[i], JSON_DECODE_ANY, NULL);
        char *buf = NULL;
        size_t len = 0;
        CHECK_INT(sb_mpjson_encode(in, &buf, &len), 0);
        json_t *out = NULL;
        CHECK_INT(sb_mpjson_decode(buf, len, &out), 0);
        CHECK(json_equal(in, out));
        free(buf);
        json_decref(in);
        json_decref(out);
    }
    const unsigned char bin0[] = {0xc4, 0x00}; /* bin8 of length 0: "" */
    json_t *out = NULL;
    CHECK_INT(sb_mpjson_decode(bin0, sizeof bin0, &out), 0);
    CHECK(json_is_string(out) && json_string_length(out) == 0);
    json_decref(out);
}

/* Container counts no input backs are refused before msgpack-c allocates
 * for them (a 5-byte map32 header claimed 2^32 entries: 128 GiB). */
static void test_unbacked_counts(void)
{
    const unsigned char map32[] = {0xdf, 0xff, 0xff, 0xff, 0xff};
    const unsigned char array32[] = {0xdd, 0x25, 0xcf, 0x01, 0xff, 0xc0, 0xc0};
    const unsigned char map16[] = {0xde, 0x00, 0x02, 0xa1, 'a', 0xc0, 0xa1, 'b'}; /* one value short */
    const unsigned char ok16[] = {0xde, 0x00, 0x01, 0xa1, 'a', 0xc0};
    json_t *out = (json_t *)1;
    CHECK_INT(sb_mpjson_decode(map32, sizeof map32, &out), -EINVAL);
    CHECK(out == NULL);
    CHECK_INT(sb_mpjson_decode(array32, sizeof array32, &out), -EINVAL);
    CHECK_INT(sb_mpjson_decode(map16, sizeof map16, &out), -EINVAL);
    CHECK_INT(sb_mpjson_decode(ok16, sizeof ok16, &out), 0);
    CHECK(json_is_null(json_object_get(out, "a")));
    json_decref(out);
}

int main(void)
{
    test_round_trip();
    test_rejects_garbage();
    test_depth_limit();
    test_empty_strings();
    test_unbacked_counts();
    return sb_test_finish("mpjson");
}
