/*
 * emu_picture: the emulator's generated images (see emu_image.h for what a
 * picture looks like) and the three writers the Images API's output_format
 * asks for. Each writer is the least of its format that real decoders read,
 * written here from the format's specification with no codec library:
 *
 *   PNG   RGB (or RGBA when a colour is not opaque), 8 bits, no filtering,
 *         the zlib stream made of stored (uncompressed) deflate blocks, so
 *         only CRC-32 and Adler-32 are needed; tEXt chunks carry the prompt.
 *   JPEG  baseline, YCbCr without subsampling, every quantiser 1. A picture
 *         is uniform inside each 8x8 block, so only the DC coefficients are
 *         non-zero: each block is its DC difference and an end-of-block, with
 *         two small Huffman tables of the emulator's own (DC categories 0-11
 *         as 4-bit codes, the AC table holding only end-of-block as "0").
 *   WebP  lossless (VP8L), no transforms, no colour cache: a picture has at
 *         most two colours, so each channel's prefix code is a "simple" one
 *         of one or two symbols, a pixel costs at most a bit per channel.
 *
 * The bytes depend only on the picture, so the same request always gets the
 * same image.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "emu_image.h"
#include "sb_alloc.h"
#include "sb_buf.h"

#define TEXT_MAX 256 /* bytes of a tEXt chunk's or a comment's text */

uint64_t sb_emu_image_hash(const void *data, size_t len, uint64_t seed)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL ^ seed;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    h += 0x9e3779b97f4a7c15ULL;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ULL;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebULL;
    return h ^ (h >> 31);
}

void sb_emu_picture_init(struct sb_emu_picture *p, unsigned w, unsigned h, uint64_t seed, bool transparent)
{
    memset(p, 0, sizeof *p);
    p->w = w;
    p->h = h;
    /* Keep the colour away from the grey background: one channel is pushed to an end. */
    for (int i = 0; i < 3; i++)
        p->fg[i] = (unsigned char)(seed >> (8 * i));
    p->fg[seed >> 62 & 1 ? 0 : 2] |= 0xc0;
    p->fg[3] = 255;
    memset(p->bg, transparent ? 0 : 128, 3);
    p->bg[3] = transparent ? 0 : 255;
    p->filled = sb_emu_picture_blocks(p);
}

unsigned sb_emu_picture_blocks(const struct sb_emu_picture *p)
{
    return (p->w / SB_EMU_PICTURE_BLOCK) * (p->h / SB_EMU_PICTURE_BLOCK);
}

static const unsigned char *pixel(const struct sb_emu_picture *p, unsigned x, unsigned y)
{
    unsigned block = (y / SB_EMU_PICTURE_BLOCK) * (p->w / SB_EMU_PICTURE_BLOCK) + x / SB_EMU_PICTURE_BLOCK;
    return block < p->filled ? p->fg : p->bg;
}

static bool has_alpha(const struct sb_emu_picture *p)
{
    /* A transparent background asked for gives an alpha channel even when every block is filled. */
    return p->fg[3] != 255 || p->bg[3] != 255;
}

static void put(sb_buf_t *b, const void *data, size_t n)
{
    sb_buf_add(b, data, n);
}

static void put_be32(sb_buf_t *b, uint32_t v)
{
    unsigned char c[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                          (unsigned char)v};
    put(b, c, 4);
}

static void put_le32(sb_buf_t *b, uint32_t v)
{
    unsigned char c[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    put(b, c, 4);
}

static void put_byte(sb_buf_t *b, unsigned v)
{
    unsigned char c = (unsigned char)v;
    put(b, &c, 1);
}

/* Printable ASCII of s (others as '?'), at most TEXT_MAX bytes, into out (TEXT_MAX + 1). */
static size_t latin_text(const char *s, char *out)
{
    size_t n = 0;
    for (; s && *s && n < TEXT_MAX; s++)
        out[n++] = (*s >= 0x20 && *s < 0x7f) ? *s : '?';
    out[n] = '\0';
    return n;
}

/* ---- PNG ------------------------------------------------------------------------------------- */

static uint32_t crc32_update(uint32_t crc, const unsigned char *p, size_t n)
{
    crc = ~crc;
    for (size_t i = 0; i < n; i++) {
        crc ^= p[i];
        for (int k = 0; k < 8; k++)
            crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
    }
    return ~crc;
}

/* One chunk: length, type, data, CRC of type and data. */
static void png_chunk(sb_buf_t *b, const char type[4], const unsigned char *data, size_t n)
{
    put_be32(b, (uint32_t)n);
    size_t at = b->len;
    put(b, type, 4);
    if (n)
        put(b, data, n);
    put_be32(b, crc32_update(0, (const unsigned char *)b->p + at, n + 4));
}

static void png_text(sb_buf_t *b, const char *keyword, const char *text)
{
    if (!text)
        return;
    char t[TEXT_MAX + 1];
    size_t n = latin_text(text, t);
    size_t k = strlen(keyword);
    unsigned char *data = sb_xmalloc(k + 1 + n);
    memcpy(data, keyword, k + 1);
    memcpy(data + k + 1, t, n);
    png_chunk(b, "tEXt", data, k + 1 + n);
    free(data);
}

static void png_write(const struct sb_emu_picture *p, sb_buf_t *b)
{
    static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    bool alpha = has_alpha(p);
    unsigned channels = alpha ? 4 : 3;
    put(b, sig, sizeof sig);
    unsigned char ihdr[13] = {0};
    for (int i = 0; i < 4; i++) {
        ihdr[i] = (unsigned char)(p->w >> (24 - 8 * i));
        ihdr[4 + i] = (unsigned char)(p->h >> (24 - 8 * i));
    }
    ihdr[8] = 8;             /* bit depth */
    ihdr[9] = alpha ? 6 : 2; /* RGBA : RGB */
    png_chunk(b, "IHDR", ihdr, sizeof ihdr);
    png_text(b, "Software", "switchboard sb-emulator");
    png_text(b, "Description", p->desc);
    png_text(b, "Comment", p->comment);

    /* Scanlines: filter type 0, then the pixels. */
    size_t row = 1 + (size_t)p->w * channels, raw_len = row * p->h;
    unsigned char *raw = sb_xmalloc(raw_len);
    for (unsigned y = 0; y < p->h; y++) {
        unsigned char *r = raw + (size_t)y * row;
        r[0] = 0;
        for (unsigned x = 0; x < p->w; x++)
            memcpy(r + 1 + (size_t)x * channels, pixel(p, x, y), channels);
    }
    /* zlib: CMF/FLG (deflate, 32K window, no dictionary; 0x7801 is a multiple of 31), stored blocks, Adler-32. */
    sb_buf_t z = {0};
    put_byte(&z, 0x78);
    put_byte(&z, 0x01);
    size_t off = 0;
    do {
        size_t n = raw_len - off > 65535 ? 65535 : raw_len - off;
        put_byte(&z, off + n == raw_len ? 1 : 0); /* BFINAL, BTYPE 00 */
        put_byte(&z, (unsigned)(n & 0xff));
        put_byte(&z, (unsigned)(n >> 8));
        put_byte(&z, (unsigned)(~n & 0xff));
        put_byte(&z, (unsigned)((~n >> 8) & 0xff));
        put(&z, raw + off, n);
        off += n;
    } while (off < raw_len);
    uint32_t a = 1, s = 0;
    for (size_t i = 0; i < raw_len; i++) {
        a = (a + raw[i]) % 65521;
        s = (s + a) % 65521;
    }
    put_be32(&z, (s << 16) | a);
    png_chunk(b, "IDAT", (const unsigned char *)z.p, z.len);
    png_chunk(b, "IEND", NULL, 0);
    sb_buf_free(&z);
    free(raw);
}

/* ---- JPEG ------------------------------------------------------------------------------------ */

struct bits_be {
    sb_buf_t *b;
    uint32_t acc;
    int n;
};

/* Appends the low `count` bits of v, most significant first, stuffing a 0x00 after every 0xFF byte. */
static void jbits(struct bits_be *w, uint32_t v, int count)
{
    for (int i = count - 1; i >= 0; i--) {
        w->acc = (w->acc << 1) | ((v >> i) & 1u);
        if (++w->n == 8) {
            put_byte(w->b, w->acc & 0xff);
            if ((w->acc & 0xff) == 0xff)
                put_byte(w->b, 0);
            w->acc = 0;
            w->n = 0;
        }
    }
}

static void jmarker(sb_buf_t *b, unsigned marker, size_t payload)
{
    put_byte(b, 0xff);
    put_byte(b, marker);
    put_byte(b, (unsigned)((payload + 2) >> 8));
    put_byte(b, (unsigned)((payload + 2) & 0xff));
}

/* The DC coefficient of a uniform 8x8 block of level v (quantiser 1): 8 * (v - 128). */
static int dc_of(double v)
{
    return (int)lround(8.0 * (v - 128.0));
}

static void jpeg_ycc(const unsigned char *rgb, int dc[3])
{
    double r = rgb[0], g = rgb[1], b = rgb[2];
    dc[0] = dc_of(0.299 * r + 0.587 * g + 0.114 * b);
    dc[1] = dc_of(-0.168736 * r - 0.331264 * g + 0.5 * b + 128.0);
    dc[2] = dc_of(0.5 * r - 0.418688 * g - 0.081312 * b + 128.0);
}

static void jpeg_write(const struct sb_emu_picture *p, sb_buf_t *b)
{
    put_byte(b, 0xff);
    put_byte(b, 0xd8); /* SOI */
    static const unsigned char jfif[14] = {'J', 'F', 'I', 'F', 0, 1, 1, 0, 0, 1, 0, 1, 0, 0};
    jmarker(b, 0xe0, sizeof jfif);
    put(b, jfif, sizeof jfif);
    if (p->desc || p->comment) {
        char d[TEXT_MAX + 1], c[TEXT_MAX + 1];
        size_t dn = latin_text(p->desc, d), cn = latin_text(p->comment, c);
        jmarker(b, 0xfe, dn + 2 + cn);
        put(b, d, dn);
        put(b, "; ", 2);
        put(b, c, cn);
    }
    jmarker(b, 0xdb, 65); /* DQT: table 0, 8-bit, all ones */
    put_byte(b, 0);
    for (int i = 0; i < 64; i++)
        put_byte(b, 1);
    jmarker(b, 0xc0, 15); /* SOF0 */
    put_byte(b, 8);
    put_byte(b, p->h >> 8);
    put_byte(b, p->h & 0xff);
    put_byte(b, p->w >> 8);
    put_byte(b, p->w & 0xff);
    put_byte(b, 3);
    for (unsigned c = 1; c <= 3; c++) {
        put_byte(b, c);
        put_byte(b, 0x11);
        put_byte(b, 0);
    }
    jmarker(b, 0xc4, (1 + 16 + 12) + (1 + 16 + 1)); /* DHT: DC 0 and AC 0 */
    put_byte(b, 0x00);
    for (int len = 1; len <= 16; len++)
        put_byte(b, len == 4 ? 12 : 0);
    for (unsigned s = 0; s < 12; s++)
        put_byte(b, s);
    put_byte(b, 0x10);
    for (int len = 1; len <= 16; len++)
        put_byte(b, len == 1 ? 1 : 0);
    put_byte(b, 0x00);
    jmarker(b, 0xda, 10); /* SOS */
    put_byte(b, 3);
    for (unsigned c = 1; c <= 3; c++) {
        put_byte(b, c);
        put_byte(b, 0x00);
    }
    put_byte(b, 0);
    put_byte(b, 63);
    put_byte(b, 0);

    struct bits_be w = {.b = b};
    int pred[3] = {0, 0, 0};
    for (unsigned by = 0; by < p->h / SB_EMU_PICTURE_BLOCK; by++) {
        for (unsigned bx = 0; bx < p->w / SB_EMU_PICTURE_BLOCK; bx++) {
            int dc[3];
            jpeg_ycc(pixel(p, bx * SB_EMU_PICTURE_BLOCK, by * SB_EMU_PICTURE_BLOCK), dc);
            for (int c = 0; c < 3; c++) {
                int diff = dc[c] - pred[c];
                pred[c] = dc[c];
                int mag = diff < 0 ? -diff : diff, cat = 0;
                while (mag >> cat)
                    cat++;
                jbits(&w, (uint32_t)cat, 4); /* the DC table's code for category cat is cat in 4 bits */
                if (cat)
                    jbits(&w, (uint32_t)(diff < 0 ? diff + (1 << cat) - 1 : diff), cat);
                jbits(&w, 0, 1); /* end of block */
            }
        }
    }
    if (w.n)
        jbits(&w, 0x7f, 8 - w.n); /* pad with ones */
    put_byte(b, 0xff);
    put_byte(b, 0xd9); /* EOI */
}

/* ---- WebP (VP8L) ----------------------------------------------------------------------------- */

struct bits_le {
    sb_buf_t *b;
    uint32_t acc;
    int n;
};

/* Appends the low `count` bits of v, least significant first (VP8L's order). */
static void lbits(struct bits_le *w, uint32_t v, int count)
{
    for (int i = 0; i < count; i++) {
        w->acc |= ((v >> i) & 1u) << w->n;
        if (++w->n == 8) {
            put_byte(w->b, w->acc);
            w->acc = 0;
            w->n = 0;
        }
    }
}

/* A simple prefix code of the one or two values a channel takes (lo <= hi). */
static void simple_code(struct bits_le *w, unsigned lo, unsigned hi)
{
    lbits(w, 1, 1);        /* simple code */
    lbits(w, lo != hi, 1); /* number of symbols - 1 */
    lbits(w, 1, 1);        /* the first symbol is 8 bits */
    lbits(w, lo, 8);
    if (lo != hi)
        lbits(w, hi, 8);
}

static void webp_write(const struct sb_emu_picture *p, sb_buf_t *b)
{
    /* ARGB channel order of the codes: green, red, blue, alpha (RGBA indexes 1, 0, 2, 3). */
    static const int chan[4] = {1, 0, 2, 3};
    unsigned lo[4], hi[4];
    for (int k = 0; k < 4; k++) {
        unsigned f = p->fg[chan[k]], g = p->bg[chan[k]];
        lo[k] = f < g ? f : g;
        hi[k] = f < g ? g : f;
    }
    sb_buf_t d = {0};
    struct bits_le w = {.b = &d};
    lbits(&w, 0x2f, 8); /* signature */
    lbits(&w, p->w - 1, 14);
    lbits(&w, p->h - 1, 14);
    lbits(&w, has_alpha(p), 1);
    lbits(&w, 0, 3); /* version */
    lbits(&w, 0, 1); /* no transform */
    lbits(&w, 0, 1); /* no colour cache */
    lbits(&w, 0, 1); /* no meta prefix codes */
    for (int k = 0; k < 4; k++)
        simple_code(&w, lo[k], hi[k]);
    lbits(&w, 1, 1); /* distance: a simple code of the one symbol 0, in 1 bit */
    lbits(&w, 0, 1);
    lbits(&w, 0, 1);
    lbits(&w, 0, 1);
    for (unsigned y = 0; y < p->h; y++) {
        for (unsigned x = 0; x < p->w; x++) {
            const unsigned char *px = pixel(p, x, y);
            for (int k = 0; k < 4; k++)
                if (lo[k] != hi[k])
                    lbits(&w, px[chan[k]] == hi[k], 1);
        }
    }
    if (w.n)
        lbits(&w, 0, 8 - w.n);
    size_t pad = d.len & 1;
    put(b, "RIFF", 4);
    put_le32(b, (uint32_t)(4 + 8 + d.len + pad));
    put(b, "WEBPVP8L", 8);
    put_le32(b, (uint32_t)d.len);
    put(b, d.p, d.len);
    if (pad)
        put_byte(b, 0);
    sb_buf_free(&d);
}

unsigned char *sb_emu_picture_encode(const struct sb_emu_picture *p, enum sb_emu_image_format format, size_t *len)
{
    sb_buf_t b = {0};
    if (format == SB_EMU_IMAGE_JPEG)
        jpeg_write(p, &b);
    else if (format == SB_EMU_IMAGE_WEBP)
        webp_write(p, &b);
    else
        png_write(p, &b);
    *len = b.len;
    return (unsigned char *)b.p;
}
