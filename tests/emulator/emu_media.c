/*
 * emu_media: the non-text parts of a user message (images, audio, files).
 *
 * The validators (emu_*_check.c) use the base64 and data-URL parsers here to
 * reject what the real APIs reject; the replies use sb_emu_part_ack() (Chat
 * parts) and the sb_emu_ack_*() helpers (Responses, Messages and Gemini
 * shapes) to acknowledge every attachment deterministically after the echo
 * ("[image: ...]", "[audio: ...]", "[file: ...]"), with the same text
 * whatever protocol carried it, so a gateway test can see that an attachment
 * reached the upstream intact. The formats are
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
#include "sb_base64.h"
#include "sb_dataurl.h"

#define IMAGE_PROMPT_TOKENS 85
#define FILE_TEXT_PREVIEW 200 /* code points of a text file shown in its acknowledgement */

/* The base64 dialects of the checks below (sb_base64 has them all): what
 * OpenAI and Anthropic read (standard alphabet, padding optional), and what
 * protobuf's JSON bytes are at Google (either alphabet; strictly, no set
 * bits after the last byte). */
#define EMU_B64 SB_BASE64_PAD_OPTIONAL
#define EMU_B64_PROTO (SB_BASE64_ANY | SB_BASE64_PAD_OPTIONAL)

static int b64_decode(const char *in, size_t len, unsigned flags, unsigned char **out, size_t *outlen)
{
    *out = sb_base64_decode_flags(in, len, flags, outlen);
    if (!*out) {
        *outlen = 0;
        return -EINVAL;
    }
    return 0;
}

int sb_emu_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode(in, len, EMU_B64, out, outlen);
}

int sb_emu_base64url_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode(in, len, EMU_B64_PROTO, out, outlen);
}

int sb_emu_base64url_decode_strict(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode(in, len, EMU_B64_PROTO | SB_BASE64_STRICT, out, outlen);
}

char *sb_emu_base64_encode(const void *data, size_t len)
{
    return sb_base64_encode(data, len, NULL);
}

int sb_emu_data_url_parse(const char *url, struct sb_emu_data_url *out)
{
    memset(out, 0, sizeof *out);
    sb_dataurl_t u;
    if (sb_dataurl_parse(url, &u) < 0)
        return -EINVAL;
    /* Lower-cased and cut to fit: a type too long for the buffer is no type
     * the checks know either way. */
    size_t mlen = u.mime_len < sizeof out->mime ? u.mime_len : sizeof out->mime - 1;
    for (size_t i = 0; i < mlen; i++)
        out->mime[i] = (char)tolower((unsigned char)u.mime[i]);
    out->mime[mlen] = '\0';
    out->base64 = u.base64;
    out->data = u.payload;
    out->data_len = u.payload_len;
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
    if (sb_emu_base64url_decode(b64, len, &buf, &n) < 0)
        return 0;
    if (keep)
        *keep = buf;
    else
        free(buf);
    return n;
}

char *sb_emu_ack_image_url(const char *url, long long *tokens)
{
    *tokens += IMAGE_PROMPT_TOKENS;
    struct sb_emu_data_url du;
    if (sb_emu_data_url_parse(url, &du) == 0)
        return sb_xasprintf("[image: data:%s, %zu bytes]", du.mime, decoded_size(du.data, du.data_len, NULL));
    return sb_xasprintf("[image: %s]", url);
}

char *sb_emu_ack_image_data(const char *mime, const char *b64, long long *tokens)
{
    *tokens += IMAGE_PROMPT_TOKENS;
    char lower[128];
    size_t i = 0;
    for (; mime[i] && i + 1 < sizeof lower; i++)
        lower[i] = (char)tolower((unsigned char)mime[i]);
    lower[i] = '\0';
    return sb_xasprintf("[image: data:%s, %zu bytes]", lower, decoded_size(b64, strlen(b64), NULL));
}

char *sb_emu_ack_image_ref(const char *ref, long long *tokens)
{
    *tokens += IMAGE_PROMPT_TOKENS;
    return sb_xasprintf("[image: %s]", ref);
}

char *sb_emu_ack_audio(const char *format, const char *b64, long long *tokens)
{
    size_t n = decoded_size(b64, strlen(b64), NULL);
    *tokens += (long long)(n / 100);
    return sb_xasprintf("[audio: %s, %zu bytes]", format, n);
}

/* The acknowledgement of a file's bytes: a text preview for text/... types. */
static char *file_ack(const char *name, const char *mime, const unsigned char *bytes, size_t n, long long *tokens)
{
    *tokens += (long long)(n / 100);
    if (!name || !*name)
        name = "file";
    if (!strncasecmp(mime, "text/", 5)) {
        char *preview = utf8_preview(bytes, n, FILE_TEXT_PREVIEW);
        char *ack = sb_xasprintf("[file: %s, %s, %zu bytes: %s]", name, mime, n, preview);
        free(preview);
        return ack;
    }
    return sb_xasprintf("[file: %s, %s, %zu bytes]", name, mime, n);
}

char *sb_emu_ack_file_data(const char *name, const char *mime, const char *b64, long long *tokens)
{
    unsigned char *bytes = NULL;
    size_t n = decoded_size(b64, strlen(b64), &bytes);
    char *ack = file_ack(name, mime, bytes, n, tokens);
    free(bytes);
    return ack;
}

char *sb_emu_ack_file_text(const char *name, const char *mime, const char *text, long long *tokens)
{
    return file_ack(name, mime, (const unsigned char *)text, strlen(text), tokens);
}

char *sb_emu_ack_file_ref(const char *ref)
{
    return sb_xasprintf("[file: %s]", ref);
}

void sb_emu_acks_append(char **acks, char *ack)
{
    if (!ack)
        return;
    char *joined = sb_xasprintf("%s%s%s", *acks, **acks ? " " : "", ack);
    free(*acks);
    free(ack);
    *acks = joined;
}

char *sb_emu_part_ack(const json_t *part, long long *tokens)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    if (!type)
        return NULL;
    if (!strcmp(type, "image_url")) {
        const char *url = json_string_value(json_object_get(json_object_get(part, "image_url"), "url"));
        return url ? sb_emu_ack_image_url(url, tokens) : NULL;
    }
    if (!strcmp(type, "input_audio")) {
        json_t *audio = json_object_get(part, "input_audio");
        const char *data = json_string_value(json_object_get(audio, "data"));
        const char *format = json_string_value(json_object_get(audio, "format"));
        return data && format ? sb_emu_ack_audio(format, data, tokens) : NULL;
    }
    if (!strcmp(type, "file")) {
        json_t *file = json_object_get(part, "file");
        const char *file_data = json_string_value(json_object_get(file, "file_data"));
        const char *file_id = json_string_value(json_object_get(file, "file_id"));
        const char *filename = json_string_value(json_object_get(file, "filename"));
        struct sb_emu_data_url du;
        if (!file_data || sb_emu_data_url_parse(file_data, &du) < 0)
            return file_id ? sb_emu_ack_file_ref(file_id) : NULL;
        unsigned char *bytes = NULL;
        size_t n = decoded_size(du.data, du.data_len, &bytes);
        char *ack = file_ack(filename, du.mime, bytes, n, tokens);
        free(bytes);
        return ack;
    }
    return NULL;
}

const char *sb_emu_base64_problem(const char *b64, size_t len)
{
    if (len == 0)
        return "empty base64-encoded bytes";
    unsigned char *bytes = NULL;
    size_t n = 0;
    if (sb_emu_base64_decode(b64, len, &bytes, &n) < 0)
        return "an invalid base64-encoded value";
    free(bytes);
    return n == 0 ? "empty base64-encoded bytes" : NULL;
}

const char *sb_emu_image_url_problem(const char *url, char *buf, size_t len)
{
    static const char *const mimes[] = {"image/png", "image/jpeg", "image/gif", "image/webp"};
    if ((!strncasecmp(url, "https://", 8) && url[8]) || (!strncasecmp(url, "http://", 7) && url[7]))
        return NULL;
    struct sb_emu_data_url du;
    if (sb_emu_data_url_parse(url, &du) < 0)
        return "a value without the 'data:' prefix";
    bool known = false;
    for (size_t i = 0; i < sizeof mimes / sizeof mimes[0]; i++)
        known |= !strcmp(du.mime, mimes[i]);
    if (!known) {
        snprintf(buf, len, "unsupported MIME type '%.64s'", du.mime);
        return buf;
    }
    if (!du.base64)
        return "a value that is not base64-encoded";
    return sb_emu_base64_problem(du.data, du.data_len);
}
