/*
 * fuzz_emu_upload: libFuzzer harness for the upstream emulator's readers of
 * an Images API edit upload: emu_multipart (the multipart/form-data body a
 * gateway sends) and emu_image_sniff (the image files inside it).
 *
 * Input: the first line (up to '\n'; a trailing '\r' is dropped) is the
 * boundary, the rest is the body. Besides "no crash, no leak, no UB" it
 * checks on every successful parse that there is at least one part and no
 * more than asked for, that the parts lie in order inside the body without
 * overlapping, that no part's data holds the delimiter, and that every part
 * has a name; every part's data (and the whole body) is then sniffed, and
 * a recognised image must carry its format's signature. The line is also
 * read as a Content-Type header's boundary.
 */
#include <string.h>

#include "emu_image.h"
#include "emu_multipart.h"
#include "fuzz.h"

#define FUZZ_MAX_PARTS 16

static void sniff_check(const unsigned char *data, size_t len)
{
    unsigned w = 1, h = 1;
    bool alpha = true;
    enum sb_emu_image_format f = sb_emu_image_sniff(data, len, &w, &h, &alpha);
    switch (f) {
    case SB_EMU_IMAGE_PNG:
        FUZZ_REQUIRE(len >= 8 && data[0] == 0x89 && !memcmp(data + 1, "PNG", 3));
        break;
    case SB_EMU_IMAGE_JPEG:
        FUZZ_REQUIRE(len >= 3 && data[0] == 0xff && data[1] == 0xd8);
        FUZZ_REQUIRE(!alpha);
        break;
    case SB_EMU_IMAGE_WEBP:
        FUZZ_REQUIRE(len >= 16 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4));
        break;
    case SB_EMU_IMAGE_NONE:
        FUZZ_REQUIRE(w == 0 && h == 0 && !alpha);
        break;
    }
    FUZZ_REQUIRE(f == SB_EMU_IMAGE_NONE || sb_emu_image_mime(f) != NULL);
}

static void parse_check(const unsigned char *body, size_t len, const char *boundary)
{
    static struct sb_emu_part parts[FUZZ_MAX_PARTS];
    size_t n = 99;
    char err[128];
    if (sb_emu_multipart_parse(body, len, boundary, parts, FUZZ_MAX_PARTS, &n, err, sizeof err) != 0) {
        FUZZ_REQUIRE(err[0] != '\0');
        return;
    }
    FUZZ_REQUIRE(n >= 1 && n <= FUZZ_MAX_PARTS);
    char delim[80];
    int dlen = snprintf(delim, sizeof delim, "\r\n--%s", boundary);
    FUZZ_REQUIRE(dlen > 4 && (size_t)dlen < sizeof delim);
    const unsigned char *prev_end = body;
    for (size_t i = 0; i < n; i++) {
        const struct sb_emu_part *p = &parts[i];
        FUZZ_REQUIRE(p->name[0] != '\0');
        FUZZ_REQUIRE(p->data >= prev_end && p->data <= body + len && p->len <= (size_t)(body + len - p->data));
        FUZZ_REQUIRE(p->len < (size_t)dlen || !memmem(p->data, p->len, delim, (size_t)dlen));
        FUZZ_REQUIRE(strlen(p->content_type) < sizeof p->content_type);
        prev_end = p->data + p->len;
        sniff_check(p->data, p->len);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    sniff_check(data, size);
    const uint8_t *nl = memchr(data, '\n', size);
    if (!nl)
        return 0;
    size_t blen = (size_t)(nl - data);
    size_t line = blen;
    if (blen && data[blen - 1] == '\r')
        blen--;
    if (blen > 72)
        return 0;
    char boundary[73];
    memcpy(boundary, data, blen);
    boundary[blen] = '\0';
    if (memchr(boundary, '\0', blen))
        return 0;
    parse_check(nl + 1, size - line - 1, boundary);

    char ct[128], out[80];
    snprintf(ct, sizeof ct, "multipart/form-data; boundary=%s", boundary);
    if (sb_emu_multipart_boundary(ct, out, sizeof out) == 0) {
        FUZZ_REQUIRE(out[0] != '\0' && strlen(out) <= 70);
        if (strcmp(out, boundary) != 0)
            parse_check(nl + 1, size - line - 1, out);
    }
    return 0;
}
