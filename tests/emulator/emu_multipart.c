/*
 * emu_multipart: multipart/form-data for the emulator's Images API edits
 * (see emu_multipart.h for what is accepted and why it is the emulator's
 * own).
 */
#include "emu_multipart.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define BOUNDARY_MAX 70
#define HEADER_BLOCK_MAX 8192

static bool is_space(char c)
{
    return c == ' ' || c == '\t';
}

int sb_emu_multipart_boundary(const char *ct, char *out, size_t outlen)
{
    static const char type[] = "multipart/form-data";
    if (!ct || strncasecmp(ct, type, sizeof type - 1) != 0)
        return -EINVAL;
    const char *p = ct + sizeof type - 1;
    while (*p) {
        while (is_space(*p) || *p == ';')
            p++;
        if (strncasecmp(p, "boundary=", 9) != 0) {
            while (*p && *p != ';')
                p++;
            continue;
        }
        p += 9;
        size_t n = 0;
        if (*p == '"') {
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1])
                    p++;
                if (n + 1 >= outlen)
                    return -EINVAL;
                out[n++] = *p;
            }
            if (*p != '"')
                return -EINVAL;
        } else {
            for (; *p && *p != ';' && !is_space(*p); p++) {
                if (n + 1 >= outlen)
                    return -EINVAL;
                out[n++] = *p;
            }
        }
        out[n] = '\0';
        return n >= 1 && n <= BOUNDARY_MAX ? 0 : -EINVAL;
    }
    return -EINVAL;
}

static int fail(char *err, size_t errlen, const char *why)
{
    snprintf(err, errlen, "%s", why);
    return -EINVAL;
}

/* A parameter value at *pp (quoted-string or token) into out; advances *pp. */
static void param_value(const char **pp, const char *end, char *out, size_t outlen)
{
    const char *p = *pp;
    size_t n = 0;
    if (p < end && *p == '"') {
        for (p++; p < end && *p != '"'; p++) {
            if (*p == '\\' && p + 1 < end)
                p++;
            if (n + 1 < outlen)
                out[n++] = *p;
        }
        if (p < end)
            p++;
    } else {
        for (; p < end && *p != ';' && !is_space(*p); p++)
            if (n + 1 < outlen)
                out[n++] = *p;
    }
    out[n] = '\0';
    *pp = p;
}

/* Content-Disposition: form-data; name="..."; filename="..." */
static int disposition(const char *v, const char *end, struct sb_emu_part *part)
{
    if ((size_t)(end - v) < 9 || strncasecmp(v, "form-data", 9) != 0)
        return -EINVAL;
    const char *p = v + 9;
    while (p < end) {
        while (p < end && (is_space(*p) || *p == ';'))
            p++;
        const char *key = p;
        while (p < end && *p != '=' && *p != ';')
            p++;
        if (p >= end || *p != '=')
            continue;
        size_t klen = (size_t)(p - key);
        p++;
        if (klen == 4 && !strncasecmp(key, "name", 4)) {
            param_value(&p, end, part->name, sizeof part->name);
        } else if (klen == 8 && !strncasecmp(key, "filename", 8)) {
            param_value(&p, end, part->filename, sizeof part->filename);
            part->is_file = true;
        } else {
            char skip[8];
            param_value(&p, end, skip, sizeof skip);
        }
    }
    return part->name[0] ? 0 : -EINVAL;
}

/* The header block of a part from *pos to its empty line; *pos moves past it. */
static int headers(const unsigned char *body, size_t len, size_t *pos, struct sb_emu_part *part, char *err,
                   size_t errlen)
{
    size_t start = *pos;
    bool seen_disposition = false;
    for (;;) {
        if (*pos - start > HEADER_BLOCK_MAX)
            return fail(err, errlen, "a part's headers are too long");
        const unsigned char *nl = memchr(body + *pos, '\n', len - *pos);
        if (!nl)
            return fail(err, errlen, "a part's headers do not end");
        size_t line_end = (size_t)(nl - body);
        size_t stop = line_end > *pos && body[line_end - 1] == '\r' ? line_end - 1 : line_end;
        const char *line = (const char *)body + *pos;
        const char *end = (const char *)body + stop;
        *pos = line_end + 1;
        if (line == end)
            break;
        const char *colon = memchr(line, ':', (size_t)(end - line));
        if (!colon || colon == line)
            return fail(err, errlen, "a part has a malformed header line");
        const char *v = colon + 1;
        while (v < end && is_space(*v))
            v++;
        size_t nlen = (size_t)(colon - line);
        if (nlen == 19 && !strncasecmp(line, "Content-Disposition", 19)) {
            if (disposition(v, end, part) < 0)
                return fail(err, errlen, "a part's Content-Disposition is not form-data with a name");
            seen_disposition = true;
        } else if (nlen == 12 && !strncasecmp(line, "Content-Type", 12)) {
            size_t n = (size_t)(end - v);
            while (n > 0 && is_space(v[n - 1]))
                n--;
            if (n >= sizeof part->content_type)
                n = sizeof part->content_type - 1;
            memcpy(part->content_type, v, n);
            part->content_type[n] = '\0';
        }
    }
    return seen_disposition ? 0 : fail(err, errlen, "a part has no Content-Disposition");
}

int sb_emu_multipart_parse(const unsigned char *body, size_t len, const char *boundary, struct sb_emu_part *parts,
                           size_t max, size_t *n, char *err, size_t errlen)
{
    char delim[BOUNDARY_MAX + 5];
    size_t blen = strlen(boundary);
    *n = 0;
    if (blen == 0 || blen > BOUNDARY_MAX)
        return fail(err, errlen, "the boundary is not valid");
    int dlen = snprintf(delim, sizeof delim, "\r\n--%s", boundary);
    size_t pos;
    /* The first delimiter: at the very start (no CRLF before it), or after a preamble. */
    if (len >= (size_t)dlen - 2 && !memcmp(body, delim + 2, (size_t)dlen - 2)) {
        pos = (size_t)dlen - 2;
    } else {
        const unsigned char *first = memmem(body, len, delim, (size_t)dlen);
        if (!first)
            return fail(err, errlen, "the body does not contain the boundary");
        pos = (size_t)(first - body) + (size_t)dlen;
    }
    for (;;) {
        if (len - pos >= 2 && body[pos] == '-' && body[pos + 1] == '-')
            return *n > 0 ? 0 : fail(err, errlen, "the body has no parts");
        while (pos < len && is_space((char)body[pos]))
            pos++;
        if (pos < len && body[pos] == '\r')
            pos++;
        if (pos >= len || body[pos] != '\n')
            return fail(err, errlen, "a delimiter line does not end");
        pos++;
        if (*n >= max)
            return fail(err, errlen, "too many parts");
        struct sb_emu_part *part = &parts[*n];
        memset(part, 0, sizeof *part);
        if (headers(body, len, &pos, part, err, errlen) < 0)
            return -EINVAL;
        const unsigned char *next = memmem(body + pos, len - pos, delim, (size_t)dlen);
        if (!next)
            return fail(err, errlen, "the closing delimiter is missing");
        part->data = body + pos;
        part->len = (size_t)(next - (body + pos));
        pos = (size_t)(next - body) + (size_t)dlen;
        (*n)++;
    }
}
