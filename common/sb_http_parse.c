/*
 * sb_http_parse: strict HTTP/1.1 request framing; the rules are listed in
 * sb_http_parse.h. Written against RFC 9112 (message syntax) and RFC 9110
 * (field semantics); no state beyond the structs the caller owns.
 */
#include "sb_http_parse.h"
#include "sb_hex.h"

#include <string.h>
#include <strings.h>

static const sb_http_err_t sb_http_e_bad = {400, "bad_request_framing", "Malformed HTTP request."};

static void sb_http_set(sb_http_err_t *err, int status, const char *code, const char *message)
{
    err->status = status;
    err->code = code;
    err->message = message;
}

/* RFC 9110 §5.6.2 tchar. */
static bool sb_http_tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

ssize_t sb_http_head_end(const char *buf, size_t len, size_t max, size_t *scanned, sb_http_err_t *err)
{
    size_t i = *scanned;
    for (; i < len; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\r') {
            if (i + 1 == len)
                break; /* its LF is still to come */
            if (buf[i + 1] != '\n') {
                sb_http_set(err, 400, "bad_request_framing", "Malformed HTTP request: a CR not followed by LF.");
                return -1;
            }
            continue;
        }
        if (c != '\n')
            continue;
        if (i == 0 || buf[i - 1] != '\r') {
            sb_http_set(err, 400, "bad_request_framing", "Malformed HTTP request: lines must end with CRLF.");
            return -1;
        }
        /* CRLF at i-1: the head ends when the line it closes is empty. */
        if (i >= 3 && buf[i - 2] == '\n' && buf[i - 3] == '\r') {
            if (i + 1 > max) {
                sb_http_set(err, 431, "headers_too_large", "Request header fields too large.");
                return -1;
            }
            *scanned = i + 1;
            return (ssize_t)(i + 1);
        }
    }
    *scanned = i;
    if (len > max) {
        sb_http_set(err, 431, "headers_too_large", "Request header fields too large.");
        return -1;
    }
    return 0;
}

static const struct {
    const char *name;
    sb_http_method_t m;
} sb_http_methods[] = {
    {"GET", SB_HTTP_M_GET},     {"POST", SB_HTTP_M_POST}, {"PUT", SB_HTTP_M_PUT},         {"DELETE", SB_HTTP_M_DELETE},
    {"PATCH", SB_HTTP_M_PATCH}, {"HEAD", SB_HTTP_M_HEAD}, {"OPTIONS", SB_HTTP_M_OPTIONS},
};

/* Parses "METHOD SP target SP HTTP/x.y" (line without its CRLF). */
static int sb_http_request_line(const char *p, size_t n, sb_http_head_t *h, sb_http_err_t *err)
{
    size_t i = 0;
    while (i < n && sb_http_tchar((unsigned char)p[i]))
        i++;
    size_t mlen = i;
    if (mlen == 0 || i >= n || p[i] != ' ') {
        *err = sb_http_e_bad;
        return -1;
    }
    size_t t0 = ++i;
    while (i < n && (unsigned char)p[i] > 0x20 && (unsigned char)p[i] < 0x7f)
        i++;
    size_t tlen = i - t0;
    if (tlen == 0 || i >= n || p[i] != ' ') {
        *err = sb_http_e_bad;
        return -1;
    }
    const char *v = p + i + 1;
    size_t vlen = n - i - 1;
    if (vlen != 8 || memcmp(v, "HTTP/", 5) != 0 || v[5] < '0' || v[5] > '9' || v[6] != '.' || v[7] < '0' ||
        v[7] > '9') {
        *err = sb_http_e_bad;
        return -1;
    }
    /* The target: origin-form, or absolute-form reduced to its path. */
    const char *t = p + t0;
    if (tlen > 7 && (strncasecmp(t, "http://", 7) == 0 || (tlen > 8 && strncasecmp(t, "https://", 8) == 0))) {
        size_t skip = t[4] == ':' ? 7 : 8;
        const char *slash = memchr(t + skip, '/', tlen - skip);
        if (!slash) {
            h->target = "/";
            h->target_len = 1;
        } else {
            h->target = slash;
            h->target_len = tlen - (size_t)(slash - t);
        }
    } else {
        h->target = t;
        h->target_len = tlen;
    }
    if (v[5] != '1') {
        sb_http_set(err, 505, "http_version_not_supported", "HTTP version not supported: use HTTP/1.1.");
        return -1;
    }
    h->minor = v[7] - '0';
    if (h->minor > 1) {
        sb_http_set(err, 505, "http_version_not_supported", "HTTP version not supported: use HTTP/1.1.");
        return -1;
    }
    bool known = false;
    for (size_t k = 0; k < sizeof sb_http_methods / sizeof sb_http_methods[0]; k++) {
        if (strlen(sb_http_methods[k].name) == mlen && memcmp(sb_http_methods[k].name, p, mlen) == 0) {
            h->method = sb_http_methods[k].m;
            h->method_name = sb_http_methods[k].name;
            known = true;
        }
    }
    if (!known) {
        sb_http_set(err, 501, "method_not_implemented", "Method not implemented.");
        return -1;
    }
    if (h->target[0] != '/' && !(h->method == SB_HTTP_M_OPTIONS && h->target_len == 1 && h->target[0] == '*')) {
        *err = sb_http_e_bad;
        return -1;
    }
    return 0;
}

/* Parses one header line (without its CRLF) into a field. */
static int sb_http_field_line(const char *p, size_t n, sb_http_field_t *f, sb_http_err_t *err)
{
    if (n > 0 && (p[0] == ' ' || p[0] == '\t')) {
        sb_http_set(err, 400, "bad_request_framing", "Malformed HTTP request: folded header lines are not accepted.");
        return -1;
    }
    size_t i = 0;
    while (i < n && sb_http_tchar((unsigned char)p[i]))
        i++;
    if (i == 0 || i >= n || p[i] != ':') {
        sb_http_set(err, 400, "bad_request_framing", "Malformed HTTP request: a header field name is not valid.");
        return -1;
    }
    f->name = p;
    f->name_len = i;
    size_t v0 = i + 1, v1 = n;
    while (v0 < v1 && (p[v0] == ' ' || p[v0] == '\t'))
        v0++;
    while (v1 > v0 && (p[v1 - 1] == ' ' || p[v1 - 1] == '\t'))
        v1--;
    for (size_t k = v0; k < v1; k++) {
        unsigned char c = (unsigned char)p[k];
        if ((c < 0x20 && c != '\t') || c == 0x7f) {
            sb_http_set(err, 400, "bad_request_framing",
                        "Malformed HTTP request: a header field value contains a control character.");
            return -1;
        }
    }
    f->value = p + v0;
    f->value_len = v1 - v0;
    return 0;
}

static bool sb_http_name_is(const sb_http_field_t *f, const char *name)
{
    return f->name_len == strlen(name) && strncasecmp(f->name, name, f->name_len) == 0;
}

/* Next comma-separated element of v[*at..len), OWS trimmed; false at the end. */
static bool sb_http_list_next(const char *v, size_t len, size_t *at, const char **el, size_t *el_len)
{
    if (*at > len)
        return false;
    size_t s = *at, e = s;
    while (e < len && v[e] != ',')
        e++;
    *at = e + 1;
    while (s < e && (v[s] == ' ' || v[s] == '\t'))
        s++;
    while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
        e--;
    *el = v + s;
    *el_len = e - s;
    return true;
}

static bool sb_http_token_is(const char *el, size_t n, const char *tok)
{
    return n == strlen(tok) && strncasecmp(el, tok, n) == 0;
}

/* Content-Length: each element of each field is 1*DIGIT and all are equal. */
static int sb_http_content_length(const sb_http_field_t *f, sb_http_head_t *h, sb_http_err_t *err)
{
    size_t at = 0;
    const char *el;
    size_t n;
    bool any = false;
    while (sb_http_list_next(f->value, f->value_len, &at, &el, &n)) {
        any = true;
        if (n == 0) {
            sb_http_set(err, 400, "bad_content_length", "Malformed HTTP request: Content-Length is not a number.");
            return -1;
        }
        uint64_t v = 0;
        for (size_t k = 0; k < n; k++) {
            if (el[k] < '0' || el[k] > '9') {
                sb_http_set(err, 400, "bad_content_length", "Malformed HTTP request: Content-Length is not a number.");
                return -1;
            }
            unsigned d = (unsigned)(el[k] - '0');
            v = v > (UINT64_MAX - d) / 10 ? UINT64_MAX : v * 10 + d;
        }
        if (h->has_length && h->length != v) {
            sb_http_set(err, 400, "bad_content_length", "Malformed HTTP request: conflicting Content-Length values.");
            return -1;
        }
        h->has_length = true;
        h->length = v;
    }
    if (!any) {
        sb_http_set(err, 400, "bad_content_length", "Malformed HTTP request: Content-Length is not a number.");
        return -1;
    }
    return 0;
}

/* Transfer-Encoding: the codings across every field; only "chunked", alone. */
static int sb_http_transfer_encoding(const sb_http_field_t *f, sb_http_head_t *h, int *codings, sb_http_err_t *err)
{
    size_t at = 0;
    const char *el;
    size_t n;
    while (sb_http_list_next(f->value, f->value_len, &at, &el, &n)) {
        if (n == 0)
            continue;     /* empty list elements are allowed and ignored (RFC 9110 §5.6.1) */
        if (h->chunked) { /* something after chunked: the body's end cannot be known */
            sb_http_set(err, 400, "bad_transfer_encoding",
                        "Malformed HTTP request: chunked must be the last transfer coding.");
            return -1;
        }
        (*codings)++;
        if (sb_http_token_is(el, n, "chunked"))
            h->chunked = true;
    }
    return 0;
}

int sb_http_head_parse(const char *buf, size_t len, sb_http_head_t *h, sb_http_err_t *err)
{
    memset(h, 0, sizeof *h);
    const char *end = buf + len;
    const char *eol = memchr(buf, '\n', len);
    if (!eol || eol == buf || eol[-1] != '\r') {
        *err = sb_http_e_bad;
        return -1;
    }
    if (sb_http_request_line(buf, (size_t)(eol - 1 - buf), h, err) < 0)
        return -1;
    int hosts = 0, codings = 0;
    bool te = false;
    for (const char *p = eol + 1; p < end;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl || nl == p || nl[-1] != '\r') {
            *err = sb_http_e_bad;
            return -1;
        }
        size_t n = (size_t)(nl - 1 - p);
        if (n == 0)
            break; /* the blank line */
        if (h->nfields == SB_HTTP_MAX_FIELDS) {
            sb_http_set(err, 431, "headers_too_large", "Request header fields too large: too many fields.");
            return -1;
        }
        sb_http_field_t *f = &h->fields[h->nfields];
        if (sb_http_field_line(p, n, f, err) < 0)
            return -1;
        h->nfields++;
        p = nl + 1;
        if (sb_http_name_is(f, "Host")) {
            hosts++;
            for (size_t k = 0; k < f->value_len; k++) {
                unsigned char c = (unsigned char)f->value[k];
                if (c <= 0x20 || c >= 0x7f || c == '/' || c == '\\' || c == '@' || c == '?' || c == '#') {
                    sb_http_set(err, 400, "bad_host", "Malformed HTTP request: the Host header is not valid.");
                    return -1;
                }
            }
        } else if (sb_http_name_is(f, "Content-Length")) {
            if (sb_http_content_length(f, h, err) < 0)
                return -1;
        } else if (sb_http_name_is(f, "Transfer-Encoding")) {
            te = true;
            if (sb_http_transfer_encoding(f, h, &codings, err) < 0)
                return -1;
        }
    }
    if (te) {
        if (h->minor == 0) {
            sb_http_set(err, 400, "bad_transfer_encoding",
                        "Malformed HTTP request: Transfer-Encoding is not defined for HTTP/1.0.");
            return -1;
        }
        if (codings == 0) {
            sb_http_set(err, 400, "bad_transfer_encoding", "Malformed HTTP request: empty Transfer-Encoding.");
            return -1;
        }
        if (!h->chunked) {
            sb_http_set(err, 400, "bad_transfer_encoding",
                        "Malformed HTTP request: chunked must be the last transfer coding.");
            return -1;
        }
        if (codings > 1) {
            sb_http_set(err, 501, "unsupported_transfer_encoding",
                        "Transfer codings other than chunked are not implemented.");
            return -1;
        }
        if (h->has_length) {
            sb_http_set(err, 400, "bad_request_framing",
                        "Malformed HTTP request: both Content-Length and Transfer-Encoding are present.");
            return -1;
        }
    }
    if (hosts > 1 || (hosts == 0 && h->minor == 1)) {
        sb_http_set(err, 400, "bad_host", "Malformed HTTP request: exactly one Host header is required.");
        return -1;
    }
    h->keep_alive = h->minor == 1;
    for (size_t k = 0; k < h->nfields; k++) {
        const sb_http_field_t *f = &h->fields[k];
        if (sb_http_name_is(f, "Connection")) {
            size_t at = 0;
            const char *el;
            size_t n;
            while (sb_http_list_next(f->value, f->value_len, &at, &el, &n)) {
                if (sb_http_token_is(el, n, "close"))
                    h->keep_alive = false;
                else if (sb_http_token_is(el, n, "keep-alive") && h->minor == 0)
                    h->keep_alive = true;
            }
        } else if (sb_http_name_is(f, "Expect") && h->minor == 1) {
            if (!sb_http_token_is(f->value, f->value_len, "100-continue")) {
                sb_http_set(err, 417, "expectation_failed", "Expectation failed: only 100-continue is supported.");
                return -1;
            }
            h->expect_continue = true;
        }
    }
    /* Anything after a Connection: close request is never read; HTTP/1.0
     * keep-alive ends at a body without a length. */
    return 0;
}

int sb_http_peek_target(const char *buf, size_t len, sb_http_head_t *h)
{
    memset(h, 0, sizeof *h);
    const char *eol = memchr(buf, '\n', len);
    if (!eol || eol == buf || eol[-1] != '\r')
        return -1;
    sb_http_err_t err;
    sb_http_request_line(buf, (size_t)(eol - 1 - buf), h, &err);
    return h->target ? 0 : -1;
}

const char *sb_http_head_field(const sb_http_head_t *h, const char *name, size_t *len)
{
    for (size_t k = 0; k < h->nfields; k++) {
        if (sb_http_name_is(&h->fields[k], name)) {
            *len = h->fields[k].value_len;
            return h->fields[k].value;
        }
    }
    *len = 0;
    return NULL;
}

int sb_http_target_path(const char *target, size_t len, char *out, size_t outlen)
{
    if (len == 0 || target[0] != '/' || outlen == 0)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < len && target[i] != '?'; i++) {
        char c = target[i];
        if (c == '%') {
            if (i + 2 >= len)
                return -1;
            int hi = sb_hex_digit(target[i + 1]), lo = sb_hex_digit(target[i + 2]);
            if (hi < 0 || lo < 0)
                return -1;
            int v = hi * 16 + lo;
            if (v == 0)
                return -1;
            if (v == '/') { /* stays encoded: never a separator */
                if (o + 3 >= outlen)
                    return -1;
                memcpy(out + o, "%2F", 3);
                o += 3;
            } else {
                if (o + 1 >= outlen)
                    return -1;
                out[o++] = (char)v;
            }
            i += 2;
            continue;
        }
        if (o + 1 >= outlen)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

/* ---- chunked bodies ------------------------------------------------------ */

enum {
    FE_CH_SIZE,    /* the chunk-size line */
    FE_CH_DATA,    /* data bytes of a chunk */
    FE_CH_DATA_CR, /* the CR after a chunk's data */
    FE_CH_DATA_LF, /* the LF after it */
    FE_CH_TRAILER, /* a trailer line (or the final blank line) */
    FE_CH_DONE,
};

void sb_http_chunked_init(sb_http_chunked_t *c, uint64_t max, size_t trailer_max)
{
    memset(c, 0, sizeof *c);
    c->state = FE_CH_SIZE;
    c->max = max;
    c->trailer_max = trailer_max;
}

static int sb_http_chunk_bad(sb_http_err_t *err, const char *msg)
{
    sb_http_set(err, 400, "bad_chunk", msg);
    return -1;
}

int sb_http_chunked_feed(sb_http_chunked_t *c, const char *in, size_t len, size_t *used,
                         void (*sink)(void *arg, const char *data, size_t n), void *arg, sb_http_err_t *err)
{
    size_t i = 0;
    while (i < len) {
        unsigned char b = (unsigned char)in[i];
        switch (c->state) {
        case FE_CH_SIZE:
            if (c->cr) {
                if (b != '\n')
                    return sb_http_chunk_bad(err, "Malformed chunked body: a chunk-size line must end with CRLF.");
                i++;
                c->cr = false;
                if (c->digits == 0)
                    return sb_http_chunk_bad(err, "Malformed chunked body: a chunk size is missing.");
                c->line_len = 0;
                c->digits = 0;
                c->ext = 0;
                c->state = c->left == 0 ? FE_CH_TRAILER : FE_CH_DATA;
                continue;
            }
            if (++c->line_len > SB_HTTP_CHUNK_LINE_MAX)
                return sb_http_chunk_bad(err, "Malformed chunked body: a chunk-size line is too long.");
            i++;
            if (b == '\r') {
                c->cr = true;
                continue;
            }
            if (b == '\n')
                return sb_http_chunk_bad(err, "Malformed chunked body: a chunk-size line must end with CRLF.");
            if (c->ext == 2) { /* inside the extensions: any visible text */
                if ((b < 0x20 && b != '\t') || b == 0x7f)
                    return sb_http_chunk_bad(err, "Malformed chunked body: a chunk extension is not valid.");
                continue;
            }
            if (b == ';') {
                if (c->digits == 0)
                    return sb_http_chunk_bad(err, "Malformed chunked body: a chunk size is missing.");
                c->ext = 2;
                continue;
            }
            if (b == ' ' || b == '\t') { /* BWS before ';' */
                if (c->digits == 0)
                    return sb_http_chunk_bad(err, "Malformed chunked body: a chunk size is missing.");
                c->ext = 1;
                continue;
            }
            int d = sb_hex_digit((char)b);
            if (d < 0 || c->ext == 1)
                return sb_http_chunk_bad(err, "Malformed chunked body: a chunk size is not hexadecimal.");
            if (c->digits >= 16) {
                sb_http_set(err, 413, "request_too_large", "Request body too large.");
                return -1;
            }
            c->digits++;
            c->left = c->left * 16 + (uint64_t)d;
            if (c->left > c->max - c->total) {
                sb_http_set(err, 413, "request_too_large", "Request body too large.");
                return -1;
            }
            continue;
        case FE_CH_DATA: {
            size_t n = len - i;
            if ((uint64_t)n > c->left)
                n = (size_t)c->left;
            if (sink)
                sink(arg, in + i, n);
            c->left -= n;
            c->total += n;
            i += n;
            if (c->left == 0)
                c->state = FE_CH_DATA_CR;
            break;
        }
        case FE_CH_DATA_CR:
            if (b != '\r')
                return sb_http_chunk_bad(err, "Malformed chunked body: chunk data must be followed by CRLF.");
            i++;
            c->state = FE_CH_DATA_LF;
            break;
        case FE_CH_DATA_LF:
            if (b != '\n')
                return sb_http_chunk_bad(err, "Malformed chunked body: chunk data must be followed by CRLF.");
            i++;
            c->state = FE_CH_SIZE;
            break;
        case FE_CH_TRAILER:
            i++;
            if (++c->trailer > c->trailer_max) {
                sb_http_set(err, 431, "headers_too_large", "Request trailer fields too large.");
                return -1;
            }
            if (c->cr) {
                if (b != '\n')
                    return sb_http_chunk_bad(err, "Malformed chunked body: a trailer line must end with CRLF.");
                c->cr = false;
                if (c->line_len == 0) {
                    c->state = FE_CH_DONE;
                    *used = i;
                    return 1;
                }
                c->line_len = 0;
                continue;
            }
            if (b == '\r') {
                c->cr = true;
                continue;
            }
            if (b == '\n' || (b < 0x20 && b != '\t') || b == 0x7f)
                return sb_http_chunk_bad(err, "Malformed chunked body: a trailer line is not valid.");
            if (c->line_len == 0 && (b == ' ' || b == '\t'))
                return sb_http_chunk_bad(err, "Malformed chunked body: folded trailer lines are not accepted.");
            c->line_len++;
            break;
        default:
            *used = i;
            return 1;
        }
    }
    *used = i;
    return c->state == FE_CH_DONE ? 1 : 0;
}

/* ---- query strings ------------------------------------------------------- */

/* Decodes s[0..n) (%XX and '+' as a space) into out; -1 on a bad escape, a
 * NUL, or no room. */
static int sb_http_form_decode(const char *s, size_t n, char *out, size_t outlen)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '%') {
            if (i + 2 >= n)
                return -1;
            int hi = sb_hex_digit(s[i + 1]), lo = sb_hex_digit(s[i + 2]);
            if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
                return -1;
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+') {
            c = ' ';
        }
        if (o + 1 >= outlen)
            return -1;
        out[o++] = c;
    }
    out[o] = '\0';
    return 0;
}

int sb_http_query_get(const char *query, const char *name, char *buf, size_t len)
{
    if (!query || len == 0)
        return -1;
    char key[128];
    for (const char *p = query; *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', n);
        size_t klen = eq ? (size_t)(eq - p) : n;
        if (sb_http_form_decode(p, klen, key, sizeof key) == 0 && strcmp(key, name) == 0) {
            if (!eq)
                return len > 0 ? (buf[0] = '\0', 0) : -1;
            return sb_http_form_decode(eq + 1, n - klen - 1, buf, len);
        }
        if (!amp)
            break;
        p = amp + 1;
    }
    return -1;
}
