/*
 * wtool_image: image bytes for the image generation tool (wtool_image.h):
 * what an image is by its magic bytes, and whether a base64 string (an
 * upstream's answer, a client's input image, an earlier result in the
 * chain) is one, checked without decoding it whole. The requests are
 * wtool_image_build.c, the answers wtool_image_parse.c.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "sb_base64.h"
#include "sb_dataurl.h"
#include "wtool_image.h"

enum sb_image_format sb_image_sniff(const void *bytes, size_t len)
{
    static const unsigned char png[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    const unsigned char *b = bytes;
    if (len >= sizeof png && !memcmp(b, png, sizeof png))
        return SB_IMAGE_PNG;
    if (len >= 3 && b[0] == 0xff && b[1] == 0xd8 && b[2] == 0xff)
        return SB_IMAGE_JPEG;
    if (len >= 12 && !memcmp(b, "RIFF", 4) && !memcmp(b + 8, "WEBP", 4))
        return SB_IMAGE_WEBP;
    return SB_IMAGE_NONE;
}

const char *sb_image_format_name(enum sb_image_format f)
{
    switch (f) {
    case SB_IMAGE_PNG:
        return "png";
    case SB_IMAGE_JPEG:
        return "jpeg";
    case SB_IMAGE_WEBP:
        return "webp";
    default:
        return NULL;
    }
}

const char *sb_image_format_mime(enum sb_image_format f)
{
    switch (f) {
    case SB_IMAGE_PNG:
        return "image/png";
    case SB_IMAGE_JPEG:
        return "image/jpeg";
    case SB_IMAGE_WEBP:
        return "image/webp";
    default:
        return NULL;
    }
}

/* Base64 characters decoded for the magic: 16 give 12 bytes, as many as
 * the longest magic (WEBP's) needs. */
#define SB_IMAGE_SNIFF_CHARS 16

int sb_image_check_b64(const char *b64, size_t len, size_t max, enum sb_image_format *fmt)
{
    if (fmt)
        *fmt = SB_IMAGE_NONE;
    if (!max)
        max = SB_IMAGE_MAX_B64;
    if (len > max)
        return -E2BIG;
    if (!b64 || len == 0 || sb_base64_check(b64, len, 0) != 0)
        return -EINVAL;
    /* The whole text is valid, so its first 16 characters (no padding in
     * them when more follow) decode on their own. */
    size_t n = len > SB_IMAGE_SNIFF_CHARS ? SB_IMAGE_SNIFF_CHARS : len;
    unsigned char head[SB_IMAGE_SNIFF_CHARS];
    size_t head_len = 0;
    if (sb_base64_decode_into(b64, n, 0, head, &head_len) != 0)
        return -EINVAL;
    enum sb_image_format f = sb_image_sniff(head, head_len);
    if (f == SB_IMAGE_NONE)
        return -EMEDIUMTYPE;
    if (fmt)
        *fmt = f;
    return 0;
}

int sb_image_input(const char *s, size_t max, const char **b64, size_t *len, enum sb_image_format *fmt)
{
    *b64 = NULL;
    *len = 0;
    if (fmt)
        *fmt = SB_IMAGE_NONE;
    if (!s)
        return -EINVAL;
    const char *p = s;
    size_t n = strlen(s);
    sb_dataurl_t u;
    if (sb_dataurl_parse(s, &u) == 0) {
        if (!u.base64)
            return -EINVAL;
        p = u.payload;
        n = u.payload_len;
    }
    /* Anything else that is no base64 (an http URL, a file id) fails the check. */
    int rc = sb_image_check_b64(p, n, max, fmt);
    if (rc < 0)
        return rc;
    *b64 = p;
    *len = n;
    return 0;
}
