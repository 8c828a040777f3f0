/*
 * emu_image_sniff: what the emulator reads of an uploaded image (an Images
 * API edit's image and mask parts): its type by signature, and from its
 * header the size and whether it has an alpha channel, which the real API
 * checks (a mask must be a PNG with alpha, the size of the image). Only
 * headers are read, every offset bounds-checked: the bytes come from the
 * client, and tests/fuzz/fuzz_emu_upload.c runs this on arbitrary input.
 *
 *   PNG   the IHDR chunk (width, height, colour type 4 or 6 = alpha), and a
 *         tRNS chunk before IDAT (palette or key transparency) also counts
 *   JPEG  the first SOFn segment (height, width); never alpha
 *   WebP  the VP8 frame header, the VP8L header (with its alpha hint) or the
 *         VP8X canvas (with its alpha flag)
 */
#include <string.h>

#include "emu_image.h"

static unsigned be16(const unsigned char *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

static unsigned long be32(const unsigned char *p)
{
    return (unsigned long)p[0] << 24 | (unsigned long)p[1] << 16 | (unsigned long)p[2] << 8 | p[3];
}

static unsigned long le24(const unsigned char *p)
{
    return (unsigned long)p[0] | (unsigned long)p[1] << 8 | (unsigned long)p[2] << 16;
}

static void png_info(const unsigned char *d, size_t len, unsigned *w, unsigned *h, bool *alpha)
{
    if (len < 33 || memcmp(d + 12, "IHDR", 4) != 0)
        return;
    *w = (unsigned)be32(d + 16);
    *h = (unsigned)be32(d + 20);
    *alpha = d[25] == 4 || d[25] == 6;
    /* Chunks after IHDR, up to IDAT: a tRNS gives transparency to the other colour types. */
    size_t off = 8;
    while (!*alpha && off + 8 <= len) {
        unsigned long n = be32(d + off);
        if (!memcmp(d + off + 4, "tRNS", 4))
            *alpha = true;
        if (!memcmp(d + off + 4, "IDAT", 4) || n > len - off - 8 || len - off - 8 - n < 4)
            break;
        off += 8 + n + 4;
    }
}

static void jpeg_info(const unsigned char *d, size_t len, unsigned *w, unsigned *h)
{
    size_t off = 2;
    while (off + 4 <= len) {
        if (d[off] != 0xff)
            return;
        unsigned m = d[off + 1];
        if (m == 0xff) { /* fill byte */
            off++;
            continue;
        }
        if (m == 0x01 || (m >= 0xd0 && m <= 0xd7)) { /* markers without a length */
            off += 2;
            continue;
        }
        if (m == 0xd9 || m == 0xda) /* EOI, or the scan: no frame header before it */
            return;
        unsigned seg = be16(d + off + 2);
        if (seg < 2 || seg > len - off - 2)
            return;
        if (m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc) {
            if (seg >= 7) {
                *h = be16(d + off + 5);
                *w = be16(d + off + 7);
            }
            return;
        }
        off += 2 + seg;
    }
}

static void webp_info(const unsigned char *d, size_t len, unsigned *w, unsigned *h, bool *alpha)
{
    if (len >= 30 && !memcmp(d + 12, "VP8 ", 4) && d[23] == 0x9d && d[24] == 0x01 && d[25] == 0x2a) {
        *w = (unsigned)((d[26] | d[27] << 8) & 0x3fff);
        *h = (unsigned)((d[28] | d[29] << 8) & 0x3fff);
    } else if (len >= 25 && !memcmp(d + 12, "VP8L", 4) && d[20] == 0x2f) {
        unsigned long bits =
            (unsigned long)d[21] | (unsigned long)d[22] << 8 | (unsigned long)d[23] << 16 | (unsigned long)d[24] << 24;
        *w = (unsigned)(bits & 0x3fff) + 1;
        *h = (unsigned)((bits >> 14) & 0x3fff) + 1;
        *alpha = (bits >> 28) & 1;
    } else if (len >= 30 && !memcmp(d + 12, "VP8X", 4)) {
        *alpha = (d[20] & 0x10) != 0;
        *w = (unsigned)le24(d + 24) + 1;
        *h = (unsigned)le24(d + 27) + 1;
    }
}

enum sb_emu_image_format sb_emu_image_sniff(const unsigned char *data, size_t len, unsigned *w, unsigned *h,
                                            bool *alpha)
{
    static const unsigned char png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    *w = *h = 0;
    *alpha = false;
    if (len >= 8 && !memcmp(data, png_sig, 8)) {
        png_info(data, len, w, h, alpha);
        return SB_EMU_IMAGE_PNG;
    }
    if (len >= 3 && data[0] == 0xff && data[1] == 0xd8 && data[2] == 0xff) {
        jpeg_info(data, len, w, h);
        return SB_EMU_IMAGE_JPEG;
    }
    if (len >= 16 && !memcmp(data, "RIFF", 4) && !memcmp(data + 8, "WEBP", 4)) {
        webp_info(data, len, w, h, alpha);
        return SB_EMU_IMAGE_WEBP;
    }
    return SB_EMU_IMAGE_NONE;
}

const char *sb_emu_image_mime(enum sb_emu_image_format f)
{
    switch (f) {
    case SB_EMU_IMAGE_PNG:
        return "image/png";
    case SB_EMU_IMAGE_JPEG:
        return "image/jpeg";
    case SB_EMU_IMAGE_WEBP:
        return "image/webp";
    case SB_EMU_IMAGE_NONE:
        break;
    }
    return NULL;
}
