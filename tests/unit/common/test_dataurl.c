/*
 * Unit test of sb_dataurl: the parts of a data URL as the worker's adapters,
 * the frontend's item checks and the emulator read them.
 */
#include <errno.h>
#include <string.h>

#include "sb_dataurl.h"
#include "sb_test.h"

/* A borrowed span as a string, for comparing. */
static const char *span(const char *p, size_t n)
{
    static char buf[4][128];
    static int k;
    char *b = buf[k++ % 4];
    snprintf(b, sizeof buf[0], "%.*s", (int)n, p);
    return b;
}

static void test_parse(void)
{
    sb_dataurl_t u;
    CHECK_INT(sb_dataurl_parse("data:image/png;base64,iVBORw0KGgo=", &u), 0);
    CHECK_STR(span(u.mime, u.mime_len), "image/png");
    CHECK_STR(span(u.params, u.params_len), "");
    CHECK(u.base64);
    CHECK_STR(u.payload, "iVBORw0KGgo=");
    CHECK_INT(u.payload_len, 12);

    /* Case is ignored in the scheme and the marker; the type is kept as written. */
    CHECK_INT(sb_dataurl_parse("DATA:Image/PNG;charset=x;Base64,AAAA", &u), 0);
    CHECK_STR(span(u.mime, u.mime_len), "Image/PNG");
    CHECK_STR(span(u.params, u.params_len), ";charset=x");
    CHECK(u.base64);
    char mime[16];
    CHECK_INT(sb_dataurl_mime(&u, mime, sizeof mime), 0);
    CHECK_STR(mime, "image/png");
    CHECK(sb_dataurl_mime_is(&u, "image/"));
    CHECK(sb_dataurl_mime_is(&u, "IMAGE/png"));
    CHECK(sb_dataurl_mime_is(&u, ""));
    CHECK(!sb_dataurl_mime_is(&u, "image/pngx"));
    CHECK(!sb_dataurl_mime_is(&u, "text/"));

    /* Not base64: percent-encoded text, the payload as is. */
    CHECK_INT(sb_dataurl_parse("data:text/plain,hello%20world", &u), 0);
    CHECK(!u.base64);
    CHECK_STR(span(u.mime, u.mime_len), "text/plain");
    CHECK_STR(u.payload, "hello%20world");
    CHECK_INT(sb_dataurl_parse("data:base64,AAAA", &u), 0);
    CHECK(!u.base64);
    CHECK_STR(span(u.mime, u.mime_len), "base64");

    /* No type at all; an empty payload. */
    CHECK_INT(sb_dataurl_parse("data:;base64,", &u), 0);
    CHECK(u.base64);
    CHECK_INT(u.mime_len, 0);
    CHECK_INT(u.params_len, 0);
    CHECK_INT(u.payload_len, 0);
    CHECK_INT(sb_dataurl_parse("data:,", &u), 0);
    CHECK(!u.base64 && u.mime_len == 0 && u.payload_len == 0);

    /* The metadata ends at the first comma: ";base64" after it is payload. */
    CHECK_INT(sb_dataurl_parse("data:image/png,x;base64,AAAA", &u), 0);
    CHECK(!u.base64);
    CHECK_STR(u.payload, "x;base64,AAAA");
    /* ";base64" must end the metadata. */
    CHECK_INT(sb_dataurl_parse("data:image/png;base64;x=1,AAAA", &u), 0);
    CHECK(!u.base64);
    CHECK_STR(span(u.params, u.params_len), ";base64;x=1");

    /* Not data URLs. */
    CHECK_INT(sb_dataurl_parse("https://example.com/a.png", &u), -EINVAL);
    CHECK_INT(sb_dataurl_parse("data:image/png;base64", &u), -EINVAL);
    CHECK_INT(sb_dataurl_parse("dat", &u), -EINVAL);
    CHECK_INT(sb_dataurl_parse("", &u), -EINVAL);
    CHECK(u.mime && u.payload && u.mime_len == 0); /* the result stays safe to read */
}

static void test_mime_too_long(void)
{
    sb_dataurl_t u;
    CHECK_INT(sb_dataurl_parse("data:application/vnd.a-very-long-type;base64,AA==", &u), 0);
    char small[8] = "junk";
    CHECK_INT(sb_dataurl_mime(&u, small, sizeof small), -ENAMETOOLONG);
    CHECK_STR(small, "");
    char exact[33];
    CHECK_INT(u.mime_len, 32);
    CHECK_INT(sb_dataurl_mime(&u, exact, sizeof exact), 0);
    CHECK_STR(exact, "application/vnd.a-very-long-type");
}

int main(void)
{
    test_parse();
    test_mime_too_long();
    return sb_test_finish("test_dataurl");
}
