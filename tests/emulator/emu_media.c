/*
 * emu_media: the non-text parts of a user message (images, audio, files).
 *
 * Validation (emu_openai_chat_check.c) uses the base64 and data-URL parsers
 * here to reject what the real API rejects; the reply (emu_openai_chat.c)
 * uses sb_emu_part_ack() to acknowledge every part deterministically after
 * the echo ("[image: ...]", "[audio: ...]", "[file: ...]"), so a gateway test
 * can see that an attachment reached the upstream intact. The formats are
 * documented at the top of main.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_internal.h"
#include "sb_alloc.h"

#define IMAGE_PROMPT_TOKENS 85
#define FILE_TEXT_PREVIEW 200 /* code points of a text file shown in its acknowledgement */

static int b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    if (c == '+')
        return 62;
    if (c == '/')
        return 63;
    return -1;
}

int sb_emu_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    *out = NULL;
    *outlen = 0;
    size_t n = len, pad = 0;
    while (n > 0 && in[n - 1] == '=' && pad < 2) {
        n--;
        pad++;
    }
    if (n % 4 == 1 || (pad && (n + pad) % 4 != 0))
        return -EINVAL;
    unsigned char *buf = sb_xmalloc(n / 4 * 3 + 4);
    size_t o = 0;
    unsigned bits = 0, nbits = 0;
    for (size_t i = 0; i < n; i++) {
        int v = b64_value((unsigned char)in[i]);
        if (v < 0) {
            free(buf);
            return -EINVAL;
        }
        bits = (bits << 6) | (unsigned)v;
        nbits += 6;
        if (nbits >= 8) {
            nbits -= 8;
            buf[o++] = (unsigned char)(bits >> nbits);
            bits &= (1u << nbits) - 1;
        }
    }
    buf[o] = '\0';
    *out = buf;
    *outlen = o;
    return 0;
}

int sb_emu_data_url_parse(const char *url, struct sb_emu_data_url *out)
{
    memset(out, 0, sizeof *out);
    if (strncasecmp(url, "data:", 5) != 0)
        return -EINVAL;
    const char *meta = url + 5;
    const char *comma = strchr(meta, ',');
    if (!comma)
        return -EINVAL;
    size_t mlen = strcspn(meta, ";,");
    if (mlen >= sizeof out->mime)
        mlen = sizeof out->mime - 1;
    for (size_t i = 0; i < mlen; i++)
        out->mime[i] = (char)tolower((unsigned char)meta[i]);
    out->mime[mlen] = '\0';
    size_t metalen = (size_t)(comma - meta);
    out->base64 = metalen >= 7 && strncasecmp(comma - 7, ";base64", 7) == 0;
    out->data = comma + 1;
    out->data_len = strlen(out->data);
    return 0;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0 if s does not start one. */
static size_t utf8_seq(const unsigned char *s, size_t avail)
{
    unsigned char c = s[0];
    size_t len;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
        cp = c & 0x1F;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        cp = c & 0x0F;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        cp = c & 0x07;
    } else {
        return 0;
    }
    if (avail < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xC0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

size_t sb_emu_utf8_prefix(const char *s, size_t ncp)
{
    size_t i = 0;
    for (size_t k = 0; k < ncp && s[i]; k++) {
        i++;
        while (s[i] && ((unsigned char)s[i] & 0xC0) == 0x80)
            i++;
    }
    return i;
}

size_t sb_emu_utf8_length(const char *s)
{
    size_t n = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            n++;
    return n;
}

/* Up to max_cp code points of raw bytes as valid, printable UTF-8 (bad bytes become '?'). Owned. */
static char *utf8_preview(const unsigned char *data, size_t len, size_t max_cp)
{
    char *out = sb_xmalloc(max_cp * 4 + 1);
    size_t o = 0, i = 0;
    for (size_t cps = 0; cps < max_cp && i < len; cps++) {
        size_t l = utf8_seq(data + i, len - i);
        if (l == 0 || (l == 1 && data[i] < 0x20 && data[i] != '\n' && data[i] != '\t') || data[i] == 0x7F) {
            out[o++] = '?';
            i++;
            continue;
        }
        memcpy(out + o, data + i, l);
        o += l;
        i += l;
    }
    out[o] = '\0';
    return out;
}

/* Decoded size of base64 text already validated; 0 if it does not decode. */
static size_t decoded_size(const char *b64, size_t len, unsigned char **keep)
{
    unsigned char *buf = NULL;
    size_t n = 0;
    if (sb_emu_base64_decode(b64, len, &buf, &n) < 0)
        return 0;
    if (keep)
        *keep = buf;
    else
        free(buf);
    return n;
}

char *sb_emu_part_ack(const json_t *part, long long *tokens)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    if (!type)
        return NULL;
    if (!strcmp(type, "image_url")) {
        const char *url = json_string_value(json_object_get(json_object_get(part, "image_url"), "url"));
        if (!url)
            return NULL;
        *tokens += IMAGE_PROMPT_TOKENS;
        struct sb_emu_data_url du;
        if (sb_emu_data_url_parse(url, &du) == 0)
            return sb_xasprintf("[image: data:%s, %zu bytes]", du.mime, decoded_size(du.data, du.data_len, NULL));
        return sb_xasprintf("[image: %s]", url);
    }
    if (!strcmp(type, "input_audio")) {
        json_t *audio = json_object_get(part, "input_audio");
        const char *data = json_string_value(json_object_get(audio, "data"));
        const char *format = json_string_value(json_object_get(audio, "format"));
        if (!data || !format)
            return NULL;
        size_t n = decoded_size(data, strlen(data), NULL);
        *tokens += (long long)(n / 100);
        return sb_xasprintf("[audio: %s, %zu bytes]", format, n);
    }
    if (!strcmp(type, "file")) {
        json_t *file = json_object_get(part, "file");
        const char *file_data = json_string_value(json_object_get(file, "file_data"));
        const char *file_id = json_string_value(json_object_get(file, "file_id"));
        const char *filename = json_string_value(json_object_get(file, "filename"));
        struct sb_emu_data_url du;
        if (!file_data || sb_emu_data_url_parse(file_data, &du) < 0)
            return file_id ? sb_xasprintf("[file: %s]", file_id) : NULL;
        unsigned char *bytes = NULL;
        size_t n = decoded_size(du.data, du.data_len, &bytes);
        *tokens += (long long)(n / 100);
        const char *name = filename && *filename ? filename : "file";
        char *ack;
        if (!strncmp(du.mime, "text/", 5)) {
            char *preview = utf8_preview(bytes, n, FILE_TEXT_PREVIEW);
            ack = sb_xasprintf("[file: %s, %s, %zu bytes: %s]", name, du.mime, n, preview);
            free(preview);
        } else {
            ack = sb_xasprintf("[file: %s, %s, %zu bytes]", name, du.mime, n);
        }
        free(bytes);
        return ack;
    }
    return NULL;
}
