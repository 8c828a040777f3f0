/*
 * fe_multipart: strict multipart/form-data parsing over one in-memory body.
 * See fe_multipart.h for the grammar accepted and the reasons for each
 * leniency or strictness. Nothing here trusts the input: every index is
 * checked against the buffer length, and nothing asserts on bytes.
 */
#include "fe_multipart.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_hex.h"

/* One parameter of a header value; value points into the caller's scratch buffer. */
typedef struct mp_param {
    const char *name;
    size_t name_len;
    const char *value;
    size_t value_len;
} mp_param_t;

static int mp_fail(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int mp_fail(char *err, size_t errsz, const char *fmt, ...)
{
    if (err && errsz) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errsz, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

static bool is_ows(unsigned char c)
{
    return c == ' ' || c == '\t';
}

static bool is_ctl(unsigned char c)
{
    return c < 0x20 || c == 0x7f;
}

static bool is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 9110 tchar: the characters of a header name or parameter name. */
static bool is_tchar(unsigned char c)
{
    return is_alnum(c) || (c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL);
}

/* RFC 2046 bchars. */
static bool is_bchar(unsigned char c)
{
    return is_alnum(c) || (c != 0 && strchr("'()+_,-./:=? ", c) != NULL);
}

/* RFC 8187 attr-char. */
static bool is_attr_char(unsigned char c)
{
    return is_alnum(c) || (c != 0 && strchr("!#$&+-.^_`|~", c) != NULL);
}

/* 1..70 bchars, not ending in a space (RFC 2046 section 5.1.1). */
static bool valid_boundary(const char *b, size_t n)
{
    if (n == 0 || n > FE_MULTIPART_BOUNDARY_MAX || b[n - 1] == ' ')
        return false;
    for (size_t i = 0; i < n; i++)
        if (!is_bchar((unsigned char)b[i]))
            return false;
    return true;
}

/* Well-formed UTF-8: no overlongs, surrogates or code points above U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t k;
        unsigned long cp, min;
        if ((c & 0xe0) == 0xc0) {
            k = 1, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, cp = c & 0x07, min = 0x10000;
        } else {
            return false;
        }
        if (n - i - 1 < k)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + j] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

static bool slice_ieq(const char *s, size_t n, const char *lit)
{
    return n == strlen(lit) && strncasecmp(s, lit, n) == 0;
}

/*
 * Reads the next `; name=value` parameter of s[*pos..len) (RFC 9110 section
 * 5.6.6; OWS tolerated around '=' and a trailing ';' ignored). A quoted value
 * is unescaped into buf, which must hold len + 1 bytes; values never contain
 * control characters. Returns 1 with *p filled, 0 at the end, or -EINVAL.
 */
static int param_next(const char *s, size_t len, size_t *pos, mp_param_t *p, char *buf)
{
    size_t i = *pos, o = 0;
    while (i < len && is_ows((unsigned char)s[i]))
        i++;
    if (i == len)
        goto end;
    if (s[i] != ';')
        return -EINVAL;
    i++;
    while (i < len && is_ows((unsigned char)s[i]))
        i++;
    if (i == len)
        goto end;
    size_t ns = i;
    while (i < len && is_tchar((unsigned char)s[i]))
        i++;
    if (i == ns)
        return -EINVAL;
    p->name = s + ns;
    p->name_len = i - ns;
    while (i < len && is_ows((unsigned char)s[i]))
        i++;
    if (i == len || s[i] != '=')
        return -EINVAL;
    i++;
    while (i < len && is_ows((unsigned char)s[i]))
        i++;
    if (i < len && s[i] == '"') {
        i++;
        for (;;) {
            if (i == len)
                return -EINVAL; /* unterminated quoted-string */
            unsigned char c = (unsigned char)s[i++];
            if (c == '"')
                break;
            if (c == '\\') {
                if (i == len)
                    return -EINVAL;
                c = (unsigned char)s[i++];
            }
            if (is_ctl(c))
                return -EINVAL;
            buf[o++] = (char)c;
        }
    } else {
        while (i < len && s[i] != ';' && s[i] != '"' && !is_ows((unsigned char)s[i]) && !is_ctl((unsigned char)s[i]))
            buf[o++] = s[i++];
        if (o == 0)
            return -EINVAL;
    }
    buf[o] = '\0';
    p->value = buf;
    p->value_len = o;
    *pos = i;
    return 1;
end:
    *pos = i;
    return 0;
}

int fe_multipart_boundary(const char *content_type, char *out, size_t outsz)
{
    static const char mtype[] = "multipart/form-data";
    char found[FE_MULTIPART_BOUNDARY_MAX + 1];
    size_t found_len = 0;
    bool have = false;
    char *buf = NULL;
    int rc = -EINVAL;

    if (!content_type || !out || outsz == 0)
        return -EINVAL;
    size_t len = strlen(content_type), i = 0;
    while (i < len && is_ows((unsigned char)content_type[i]))
        i++;
    if (len - i < sizeof mtype - 1 || strncasecmp(content_type + i, mtype, sizeof mtype - 1) != 0)
        return -EINVAL;
    i += sizeof mtype - 1;
    if (i < len && content_type[i] != ';' && !is_ows((unsigned char)content_type[i]))
        return -EINVAL; /* e.g. multipart/form-dataX */

    buf = sb_xmalloc(len + 1);
    for (;;) {
        mp_param_t p;
        int r = param_next(content_type, len, &i, &p, buf);
        if (r < 0)
            goto fail;
        if (r == 0)
            break;
        if (!slice_ieq(p.name, p.name_len, "boundary"))
            continue;
        /* Two boundary parameters are ambiguous: refuse rather than pick one. */
        if (have || !valid_boundary(p.value, p.value_len))
            goto fail;
        memcpy(found, p.value, p.value_len);
        found_len = p.value_len;
        have = true;
    }
    if (!have || found_len + 1 > outsz)
        goto fail;
    memcpy(out, found, found_len);
    out[found_len] = '\0';
    rc = 0;
fail:
    free(buf);
    return rc;
}

/*
 * Decodes an RFC 8187 ext-value (charset'language'pct-encoded). Only UTF-8 is
 * accepted; the result must be valid UTF-8 without control characters.
 * Returns a new string or NULL.
 */
static char *decode_ext_value(const char *v, size_t n)
{
    const char *q1 = memchr(v, '\'', n);
    if (!q1 || !slice_ieq(v, (size_t)(q1 - v), "UTF-8"))
        return NULL;
    const char *rest = q1 + 1;
    const char *q2 = memchr(rest, '\'', n - (size_t)(rest - v));
    if (!q2)
        return NULL;
    for (const char *l = rest; l < q2; l++) /* language tag: letters, digits, '-' */
        if (!is_alnum((unsigned char)*l) && *l != '-')
            return NULL;
    const unsigned char *s = (const unsigned char *)q2 + 1;
    size_t m = n - (size_t)((const char *)s - v), o = 0;
    unsigned char *dec = sb_xmalloc(m + 1);
    for (size_t i = 0; i < m; i++) {
        unsigned char c = s[i];
        if (c == '%') {
            int hi, lo;
            if (m - i < 3 || (hi = sb_hex_digit(s[i + 1])) < 0 || (lo = sb_hex_digit(s[i + 2])) < 0)
                goto fail;
            c = (unsigned char)(hi << 4 | lo);
            if (is_ctl(c))
                goto fail;
            i += 2;
        } else if (!is_attr_char(c)) {
            goto fail;
        }
        dec[o++] = c;
    }
    if (!utf8_valid(dec, o))
        goto fail;
    dec[o] = '\0';
    return (char *)dec;
fail:
    free(dec);
    return NULL;
}

/* Content-Disposition: form-data; name="..."[; filename="..."][; filename*=UTF-8''...] */
static int parse_disposition(const char *v, size_t vl, fe_multipart_part_t *part, size_t idx, char *err, size_t errsz)
{
    static const char fd[] = "form-data";
    const size_t fdl = sizeof fd - 1;
    char *buf = NULL, *fn = NULL, *fnstar = NULL;
    bool have_fn = false, have_fnstar = false;
    int rc;

    if (vl < fdl || strncasecmp(v, fd, fdl) != 0 || (vl > fdl && v[fdl] != ';' && !is_ows((unsigned char)v[fdl])))
        return mp_fail(err, errsz, "part %zu: Content-Disposition is not form-data", idx);
    buf = sb_xmalloc(vl + 1);
    size_t pos = fdl;
    for (;;) {
        mp_param_t p;
        int r = param_next(v, vl, &pos, &p, buf);
        if (r < 0) {
            rc = mp_fail(err, errsz, "part %zu: malformed Content-Disposition", idx);
            goto fail;
        }
        if (r == 0)
            break;
        if (slice_ieq(p.name, p.name_len, "name")) {
            if (part->name) {
                rc = mp_fail(err, errsz, "part %zu: duplicate name parameter", idx);
                goto fail;
            }
            if (p.value_len == 0 || !utf8_valid((const unsigned char *)p.value, p.value_len)) {
                rc = mp_fail(err, errsz, "part %zu: invalid part name", idx);
                goto fail;
            }
            part->name = sb_xstrndup(p.value, p.value_len);
        } else if (slice_ieq(p.name, p.name_len, "filename")) {
            if (have_fn) {
                rc = mp_fail(err, errsz, "part %zu: duplicate filename parameter", idx);
                goto fail;
            }
            if (!utf8_valid((const unsigned char *)p.value, p.value_len)) {
                rc = mp_fail(err, errsz, "part %zu: filename is not valid UTF-8", idx);
                goto fail;
            }
            fn = sb_xstrndup(p.value, p.value_len);
            have_fn = true;
        } else if (slice_ieq(p.name, p.name_len, "filename*")) {
            if (have_fnstar) {
                rc = mp_fail(err, errsz, "part %zu: duplicate filename* parameter", idx);
                goto fail;
            }
            fnstar = decode_ext_value(p.value, p.value_len);
            if (!fnstar) {
                rc = mp_fail(err, errsz, "part %zu: invalid filename* (expected UTF-8''percent-encoded)", idx);
                goto fail;
            }
            have_fnstar = true;
        }
        /* other parameters are ignored */
    }
    if (!part->name) {
        rc = mp_fail(err, errsz, "part %zu: Content-Disposition without a name", idx);
        goto fail;
    }
    /* RFC 6266: a recipient that understands filename* prefers it. */
    if (fnstar) {
        part->filename = fnstar;
        free(fn);
    } else {
        part->filename = fn;
    }
    free(buf);
    return 0;
fail:
    free(buf);
    free(fn);
    free(fnstar);
    return rc;
}

/* One header line s[0..n) (line end stripped, n > 0) of part idx. */
static int parse_header_line(const char *s, size_t n, fe_multipart_part_t *part, bool *have_cd, size_t idx, char *err,
                             size_t errsz)
{
    if (is_ows((unsigned char)s[0]))
        return mp_fail(err, errsz, "part %zu: folded header line", idx);
    size_t c = 0;
    while (c < n && is_tchar((unsigned char)s[c]))
        c++;
    if (c == n || s[c] != ':') {
        if (memchr(s, ':', n))
            return mp_fail(err, errsz, "part %zu: invalid header name", idx);
        return mp_fail(err, errsz, "part %zu: header line without ':'", idx);
    }
    if (c == 0)
        return mp_fail(err, errsz, "part %zu: invalid header name", idx);
    for (size_t k = c + 1; k < n; k++)
        if (is_ctl((unsigned char)s[k]) && s[k] != '\t')
            return mp_fail(err, errsz, "part %zu: control character in header", idx);
    const char *v = s + c + 1;
    size_t vl = n - c - 1;
    while (vl && is_ows((unsigned char)v[0]))
        v++, vl--;
    while (vl && is_ows((unsigned char)v[vl - 1]))
        vl--;

    if (slice_ieq(s, c, "Content-Disposition")) {
        if (*have_cd)
            return mp_fail(err, errsz, "part %zu: duplicate Content-Disposition", idx);
        *have_cd = true;
        return parse_disposition(v, vl, part, idx, err, errsz);
    }
    if (slice_ieq(s, c, "Content-Type")) {
        if (part->content_type)
            return mp_fail(err, errsz, "part %zu: duplicate Content-Type", idx);
        if (vl == 0 || !utf8_valid((const unsigned char *)v, vl))
            return mp_fail(err, errsz, "part %zu: invalid Content-Type", idx);
        part->content_type = sb_xstrndup(v, vl);
        return 0;
    }
    if (slice_ieq(s, c, "Content-Transfer-Encoding")) {
        /* Decoding base64 or quoted-printable would change the bytes we hand on; refuse. */
        if (!slice_ieq(v, vl, "binary") && !slice_ieq(v, vl, "8bit") && !slice_ieq(v, vl, "7bit"))
            return mp_fail(err, errsz, "part %zu: unsupported Content-Transfer-Encoding", idx);
        return 0;
    }
    return 0;
}

/*
 * Parses the header block starting at *pos, up to and including the empty
 * line that ends it (CRLF or bare LF line ends). On success *pos is the first
 * data byte and *crlf_blank says whether that empty line was a CRLF, whose
 * CR LF may then double as the start of an immediately following delimiter
 * (a part with no body, RFC 2046 "MIME-part-headers [CRLF *OCTET]").
 */
static int parse_headers(const unsigned char *body, size_t len, size_t *pos, fe_multipart_part_t *part,
                         bool *crlf_blank, size_t idx, char *err, size_t errsz)
{
    size_t i = *pos;
    size_t limit = len - i > FE_MULTIPART_HEADER_MAX ? i + FE_MULTIPART_HEADER_MAX : len;
    bool have_cd = false;
    for (;;) {
        const unsigned char *nl = memchr(body + i, '\n', limit - i);
        if (!nl) {
            if (limit < len)
                return mp_fail(err, errsz, "part %zu: headers larger than %d bytes", idx, FE_MULTIPART_HEADER_MAX);
            return mp_fail(err, errsz, "part %zu: truncated headers", idx);
        }
        size_t e = (size_t)(nl - body), le = e;
        bool cr = false;
        if (le > i && body[le - 1] == '\r')
            le--, cr = true;
        if (le == i) {
            *pos = e + 1;
            *crlf_blank = cr;
            break;
        }
        int rc = parse_header_line((const char *)body + i, le - i, part, &have_cd, idx, err, errsz);
        if (rc < 0)
            return rc;
        i = e + 1;
    }
    if (!have_cd)
        return mp_fail(err, errsz, "part %zu: missing Content-Disposition", idx);
    return 0;
}

int fe_multipart_parse(const unsigned char *body, size_t len, const char *boundary, size_t max_parts,
                       fe_multipart_t *mp, char *err, size_t errsz)
{
    unsigned char delim[4 + FE_MULTIPART_BOUNDARY_MAX]; /* "\r\n--" boundary */
    size_t cap = 0, pos;
    int rc;

    if (err && errsz)
        err[0] = '\0';
    if (!mp)
        return mp_fail(err, errsz, "internal error");
    mp->parts = NULL;
    mp->n = 0;
    if (!body && len)
        return mp_fail(err, errsz, "internal error");
    size_t blen = boundary ? strlen(boundary) : 0;
    if (!boundary || !valid_boundary(boundary, blen))
        return mp_fail(err, errsz, "invalid multipart boundary");
    memcpy(delim, "\r\n--", 4);
    memcpy(delim + 4, boundary, blen);
    const size_t dlen = blen + 4, dashlen = blen + 2;

    /* The first delimiter may open the body without a CRLF; anything before it is preamble. */
    if (len >= dashlen && memcmp(body, delim + 2, dashlen) == 0) {
        pos = dashlen;
    } else {
        const unsigned char *m = len ? memmem(body, len, delim, dlen) : NULL;
        if (!m)
            return mp_fail(err, errsz, "multipart boundary not found in body");
        pos = (size_t)(m - body) + dlen;
    }

    for (;;) {
        /* pos is just past "--boundary" of a delimiter line. */
        if (len - pos >= 2 && body[pos] == '-' && body[pos + 1] == '-') {
            if (mp->n == 0) {
                rc = mp_fail(err, errsz, "multipart body has no parts");
                goto fail;
            }
            return 0; /* close delimiter; the epilogue is ignored */
        }
        while (pos < len && is_ows(body[pos]))
            pos++;
        if (len - pos >= 2 && body[pos] == '\r' && body[pos + 1] == '\n') {
            pos += 2;
        } else if (pos < len && body[pos] == '\n') {
            pos += 1;
        } else {
            bool at_end = pos == len || (len - pos == 1 && (body[pos] == '\r' || body[pos] == '-'));
            rc = mp_fail(err, errsz, at_end ? "missing closing boundary" : "malformed boundary line");
            goto fail;
        }
        if (mp->n >= max_parts) {
            rc = mp_fail(err, errsz, "too many parts (at most %zu)", max_parts);
            goto fail;
        }
        if (mp->n == cap) {
            cap = cap ? cap * 2 : 4;
            if (cap > max_parts)
                cap = max_parts;
            mp->parts = sb_xrealloc(mp->parts, cap * sizeof *mp->parts);
        }
        fe_multipart_part_t *part = &mp->parts[mp->n++];
        memset(part, 0, sizeof *part);

        bool crlf_blank = false;
        rc = parse_headers(body, len, &pos, part, &crlf_blank, mp->n, err, errsz);
        if (rc < 0)
            goto fail;
        /* After a CRLF blank line, "--boundary" right away is the next delimiter (the part has
         * no body) and the search below finds it from the blank line's CRLF. After a bare-LF
         * blank line it is neither a delimiter (those need CRLF) nor allowed as data (RFC 2046:
         * no body line may start with the boundary), so it is refused. */
        if (!crlf_blank && len - pos >= dashlen && memcmp(body + pos, delim + 2, dashlen) == 0) {
            rc = mp_fail(err, errsz, "part %zu: data starts with the boundary", mp->n);
            goto fail;
        }
        size_t from = crlf_blank ? pos - 2 : pos;
        const unsigned char *m = memmem(body + from, len - from, delim, dlen);
        if (!m) {
            rc = mp_fail(err, errsz, "missing closing boundary");
            goto fail;
        }
        size_t q = (size_t)(m - body);
        part->data = body + pos;
        part->len = q > pos ? q - pos : 0;
        pos = q + dlen;
    }
fail:
    fe_multipart_clear(mp);
    return rc;
}

void fe_multipart_clear(fe_multipart_t *mp)
{
    if (!mp)
        return;
    for (size_t i = 0; i < mp->n; i++) {
        free(mp->parts[i].name);
        free(mp->parts[i].filename);
        free(mp->parts[i].content_type);
    }
    free(mp->parts);
    mp->parts = NULL;
    mp->n = 0;
}

const fe_multipart_part_t *fe_multipart_get(const fe_multipart_t *mp, const char *name)
{
    if (!mp || !name)
        return NULL;
    for (size_t i = 0; i < mp->n; i++)
        if (strcmp(mp->parts[i].name, name) == 0)
            return &mp->parts[i];
    return NULL;
}
