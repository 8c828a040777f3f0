/*
 * sb_regex: ECMA-262 patterns, translated to byte-level POSIX ERE and run
 * with glibc's regcomp/regexec, which needed care (each point below was
 * found by differential fuzzing against V8, or by timing):
 * - glibc cannot take ranges of non-ASCII characters in a UTF-8 locale, so
 *   every character set (., \d, [...]) becomes code point ranges emitted as
 *   byte-level ERE over UTF-8 ("[a-z]|[\xc3][\x80-\xbf]|..."), compiled and
 *   run under the "C" locale. Subjects are valid UTF-8 (the caller's
 *   contract; jansson guarantees it for JSON strings) and every atom starts
 *   at a lead byte, so matching is per code point.
 * - Unanchored patterns get a prefix that steps over whole characters, so a
 *   match starts only on a character boundary and glibc makes one pass.
 * - ^ and $ become GNU's \` and \' (glibc's own can match next to a newline).
 * - Constructs glibc answers wrongly or takes minutes to compile, and
 *   patterns over the size limits below, are rejected at compile time.
 */
#include "sb_regex.h"

#include <errno.h>
#include <locale.h>
#include <regex.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"

/* Limits that keep glibc's regcomp/regexec time bounded for patterns from
 * untrusted requests (measured on glibc 2.36; each worst case is tens of ms):
 * - the ERE size once counted repetitions are expanded (glibc copies the
 *   repeated subtree; compile time is linear in it);
 * - the same for unanchored patterns, whose DFA states hold one thread per
 *   start offset (regexec warm-up is quadratic in it);
 * - a{n,m} becomes m-n nested options, and regcomp is cubic in that chain:
 *   cost = sum of (m-n)^2 * (size of a + 20), times enclosing copies. */
#define SB_REGEX_MAX_EXPANDED (256u * 1024)
#define SB_REGEX_MAX_UNANCHORED (16u * 1024)
#define SB_REGEX_MAX_COST 16000000u

struct sb_regex {
    regex_t re;    /* the translated ERE, compiled under cloc */
    locale_t cloc; /* owned "C" locale for regcomp/regexec */
};

static void sb_regex_errf(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void sb_regex_errf(char *err, size_t errsz, const char *fmt, ...)
{
    if (!err || !errsz)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errsz, fmt, ap);
    va_end(ap);
}

/* ---- small helpers ---------------------------------------------------- */

static void sb_regex_buf_adds(sb_buf_t *b, const char *s)
{
    sb_buf_add(b, s, strlen(s));
}

static void sb_regex_buf_addc(sb_buf_t *b, char c)
{
    sb_buf_add(b, &c, 1);
}

/* ---- ECMA-262 pattern -> byte-level POSIX ERE -------------------------- */

/* A set of code points as [lo, hi] ranges. */
struct sb_regex_cset {
    uint32_t (*r)[2];
    size_t n, cap;
};

static void sb_regex_cset_add(struct sb_regex_cset *s, uint32_t lo, uint32_t hi)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->r = sb_xrealloc(s->r, s->cap * sizeof *s->r);
    }
    s->r[s->n][0] = lo;
    s->r[s->n][1] = hi;
    s->n++;
}

static int sb_regex_cset_cmp(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sorts and merges overlapping or adjacent ranges. */
static void sb_regex_cset_norm(struct sb_regex_cset *s)
{
    if (s->n < 2)
        return;
    qsort(s->r, s->n, sizeof *s->r, sb_regex_cset_cmp);
    size_t o = 0;
    for (size_t i = 1; i < s->n; i++) {
        if (s->r[i][0] <= s->r[o][1] + 1) {
            if (s->r[i][1] > s->r[o][1])
                s->r[o][1] = s->r[i][1];
        } else {
            o++;
            s->r[o][0] = s->r[i][0];
            s->r[o][1] = s->r[i][1];
        }
    }
    s->n = o + 1;
}

/* Complement over [0, 0x10FFFF]. */
static void sb_regex_cset_invert(struct sb_regex_cset *s)
{
    sb_regex_cset_norm(s);
    struct sb_regex_cset t = {0};
    uint32_t next = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (s->r[i][0] > next)
            sb_regex_cset_add(&t, next, s->r[i][0] - 1);
        next = s->r[i][1] + 1;
    }
    if (next <= 0x10FFFF)
        sb_regex_cset_add(&t, next, 0x10FFFF);
    free(s->r);
    *s = t;
}

/* Removes [lo, hi] from a normalised set. */
static void sb_regex_cset_remove(struct sb_regex_cset *s, uint32_t lo, uint32_t hi)
{
    struct sb_regex_cset t = {0};
    for (size_t i = 0; i < s->n; i++) {
        uint32_t a = s->r[i][0], b = s->r[i][1];
        if (b < lo || a > hi) {
            sb_regex_cset_add(&t, a, b);
            continue;
        }
        if (a < lo)
            sb_regex_cset_add(&t, a, lo - 1);
        if (b > hi)
            sb_regex_cset_add(&t, hi + 1, b);
    }
    free(s->r);
    *s = t;
}

/* Adds the ECMA class escape c (one of dDwWsS) to s. */
static void sb_regex_cset_class(struct sb_regex_cset *s, char c)
{
    static const uint32_t digit[][2] = {{'0', '9'}};
    static const uint32_t word[][2] = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
    static const uint32_t space[][2] = {{0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680},
                                        {0x2000, 0x200A}, {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F},
                                        {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
    const uint32_t(*tab)[2];
    size_t n;
    switch (c | 0x20) {
    case 'd':
        tab = digit, n = sizeof digit / sizeof *digit;
        break;
    case 'w':
        tab = word, n = sizeof word / sizeof *word;
        break;
    default:
        tab = space, n = sizeof space / sizeof *space;
        break;
    }
    struct sb_regex_cset t = {0};
    for (size_t i = 0; i < n; i++)
        sb_regex_cset_add(&t, tab[i][0], tab[i][1]);
    if (c >= 'A' && c <= 'Z')
        sb_regex_cset_invert(&t);
    for (size_t i = 0; i < t.n; i++)
        sb_regex_cset_add(s, t.r[i][0], t.r[i][1]);
    free(t.r);
}

struct sb_regex_rx {
    const char *pat;              /* source, for messages */
    const unsigned char *p, *end; /* cursor in the source */
    sb_buf_t out;                 /* ERE being built */
    char *err;
    size_t errsz;
};

static int sb_regex_rx_fail(struct sb_regex_rx *x, const char *what)
{
    sb_regex_errf(x->err, x->errsz, "pattern \"%s\": %s", x->pat, what);
    return -EINVAL;
}

/* Decodes one UTF-8 code point (input is valid UTF-8 from jansson, but a
 * malformed byte is still rejected rather than trusted). */
static int sb_regex_rx_utf8(struct sb_regex_rx *x, uint32_t *cp)
{
    const unsigned char *p = x->p;
    unsigned n = p[0] < 0x80 ? 0 : p[0] >= 0xF0 ? 3 : p[0] >= 0xE0 ? 2 : p[0] >= 0xC0 ? 1 : 4;
    if (n == 4 || (size_t)(x->end - p) <= n)
        return sb_regex_rx_fail(x, "invalid UTF-8");
    uint32_t c = n == 0 ? p[0] : (uint32_t)(p[0] & (0x3F >> n));
    for (unsigned i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return sb_regex_rx_fail(x, "invalid UTF-8");
        c = (c << 6) | (p[i] & 0x3F);
    }
    x->p += n + 1;
    *cp = c;
    return 0;
}

static int sb_regex_utf8_encode(uint32_t c, unsigned char b[4])
{
    if (c < 0x80) {
        b[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        b[0] = (unsigned char)(0xC0 | (c >> 6));
        b[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        b[0] = (unsigned char)(0xE0 | (c >> 12));
        b[1] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
        b[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    b[0] = (unsigned char)(0xF0 | (c >> 18));
    b[1] = (unsigned char)(0x80 | ((c >> 12) & 0x3F));
    b[2] = (unsigned char)(0x80 | ((c >> 6) & 0x3F));
    b[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

/* Emits the ASCII members of in[] as one bracket expression (or a plain
 * character), placing ] - ^ [ where POSIX reads them literally. A set with
 * NUL is written negated, since NUL cannot appear in the pattern text. */
static void sb_regex_rx_ascii(sb_buf_t *o, const unsigned char in[128])
{
    int neg = in[0];
    unsigned char m[128];
    for (int c = 0; c < 128; c++)
        m[c] = (unsigned char)(neg ? !in[c] : in[c]);
    m[0] = 0;
    int rb = m[']'], dash = m['-'], caret = m['^'], lb = m['['];
    m[']'] = m['-'] = m['^'] = m['['] = 0;
    int any = 0;
    for (int c = 1; c < 128; c++)
        any |= m[c];
    if (!neg && !rb && !any && !lb) {
        sb_regex_buf_adds(o, caret && dash ? "[-^]" : caret ? "\\^" : "-");
        return;
    }
    sb_regex_buf_adds(o, neg ? "[^" : "[");
    if (rb)
        sb_regex_buf_addc(o, ']');
    if (neg)
        sb_regex_buf_adds(o, "\x80-\xff");
    for (int c = 1; c < 128;) {
        if (!m[c]) {
            c++;
            continue;
        }
        int e = c;
        while (e + 1 < 128 && m[e + 1])
            e++;
        sb_regex_buf_addc(o, (char)c);
        if (e - c >= 2)
            sb_regex_buf_addc(o, '-');
        if (e > c)
            sb_regex_buf_addc(o, (char)e);
        c = e + 1;
    }
    if (lb)
        sb_regex_buf_addc(o, '[');
    if (caret)
        sb_regex_buf_addc(o, '^');
    if (dash)
        sb_regex_buf_addc(o, '-');
    sb_regex_buf_addc(o, ']');
}

/* UTF-8 sequence classes by length (2, 3, 4 bytes): the code points valid in
 * each, and the largest payload its bits can carry. */
static const struct {
    uint32_t lo, hi, max;
    unsigned char lead;
} sb_regex_u8class[3] = {
    {0x80, 0x7FF, 0x7FF, 0xC0},
    {0x800, 0xFFFF, 0xFFFF, 0xE0},
    {0x10000, 0x10FFFF, 0x1FFFFF, 0xF0},
};

/* Emits payloads [lo, hi] of n-byte sequences as alternatives of byte
 * ranges, splitting until every continuation byte spans a full range. */
static void sb_regex_rx_utf8_seq(sb_buf_t *o, int n, uint32_t lo, uint32_t hi)
{
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1;
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                sb_regex_rx_utf8_seq(o, n, lo, lo | m);
                sb_regex_rx_utf8_seq(o, n, (lo | m) + 1, hi);
                return;
            }
            if ((hi & m) != m) {
                sb_regex_rx_utf8_seq(o, n, lo, (hi & ~m) - 1);
                sb_regex_rx_utf8_seq(o, n, hi & ~m, hi);
                return;
            }
        }
    }
    if (hi < sb_regex_u8class[n - 2].lo || lo > sb_regex_u8class[n - 2].hi || (lo >= 0xD800 && hi <= 0xDFFF))
        return; /* only sequences that never occur */
    if (o->len && o->p[o->len - 1] != '(')
        sb_regex_buf_addc(o, '|');
    for (int i = 0; i < n; i++) {
        int shift = 6 * (n - 1 - i);
        unsigned char base = i == 0 ? sb_regex_u8class[n - 2].lead : 0x80;
        unsigned char mask = i == 0 ? (unsigned char)(0x3F >> (n - 1)) : 0x3F;
        unsigned char a = (unsigned char)(base | ((lo >> shift) & mask));
        unsigned char b = (unsigned char)(base | ((hi >> shift) & mask));
        char r[5] = {'[', (char)a, '-', (char)b, ']'};
        if (a == b)
            sb_regex_buf_addc(o, (char)a);
        else
            sb_buf_add(o, r, 5);
    }
}

/* Emits a character set as one ERE atom; consumes (frees) s. The subject is
 * valid UTF-8 and matching starts on character boundaries, so byte sequences
 * that never occur (overlong forms, surrogates, leads past F4) may be
 * matched too: ranges are widened over them, which keeps the alternation
 * short (glibc's regcomp is superlinear in it under repetition). */
static void sb_regex_rx_set(struct sb_regex_rx *x, struct sb_regex_cset *s)
{
    sb_regex_cset_norm(s);
    sb_regex_cset_remove(s, 0xD800, 0xDFFF); /* never present in UTF-8 */
    unsigned char in[128] = {0};
    int ascii = 0, wide = 0;
    for (size_t i = 0; i < s->n; i++) {
        for (uint32_t c = s->r[i][0]; c <= s->r[i][1] && c < 128; c++)
            in[c] = 1, ascii = 1;
        wide |= s->r[i][1] >= 0x80;
    }
    if (!ascii && !wide) {
        sb_regex_buf_adds(&x->out, "(x^)"); /* empty set: never matches */
    } else if (!wide) {
        sb_regex_rx_ascii(&x->out, in);
    } else {
        sb_regex_buf_addc(&x->out, '(');
        if (ascii)
            sb_regex_rx_ascii(&x->out, in);
        for (int k = 0; k < 3; k++) {
            struct sb_regex_cset t = {0};
            for (size_t i = 0; i < s->n; i++) {
                uint32_t lo = s->r[i][0], hi = s->r[i][1];
                if (hi < sb_regex_u8class[k].lo || lo > sb_regex_u8class[k].hi)
                    continue;
                lo = lo <= sb_regex_u8class[k].lo ? 0 : lo;
                hi = hi >= sb_regex_u8class[k].hi ? sb_regex_u8class[k].max : hi;
                if (hi == 0xD7FF)
                    hi = 0xDFFF;
                sb_regex_cset_add(&t, lo, hi);
            }
            sb_regex_cset_norm(&t);
            for (size_t i = 0; i < t.n; i++)
                sb_regex_rx_utf8_seq(&x->out, k + 2, t.r[i][0], t.r[i][1]);
            free(t.r);
        }
        sb_regex_buf_addc(&x->out, ')');
    }
    free(s->r);
    s->r = NULL;
    s->n = s->cap = 0;
}

static int sb_regex_hex(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
        return (c | 0x20) - 'a' + 10;
    return -1;
}

/* Reads n hex digits at x->p into *v; returns 0, or -1 leaving x->p alone. */
static int sb_regex_rx_hexn(struct sb_regex_rx *x, int n, uint32_t *v)
{
    if (x->end - x->p < n)
        return -1;
    uint32_t r = 0;
    for (int i = 0; i < n; i++) {
        int h = sb_regex_hex(x->p[i]);
        if (h < 0)
            return -1;
        r = r * 16 + (uint32_t)h;
    }
    x->p += n;
    *v = r;
    return 0;
}

/* What an escape (after the backslash) stands for. */
enum sb_regex_esc {
    SB_REGEX_ESC_CHAR,  /* *cp is a literal code point */
    SB_REGEX_ESC_CLASS, /* *cp is one of dDwWsS */
    SB_REGEX_ESC_WORDB  /* \b or \B outside a class: *cp is 'b' or 'B' */
};

static int sb_regex_rx_escape(struct sb_regex_rx *x, int in_class, uint32_t *cp, enum sb_regex_esc *kind)
{
    if (x->p >= x->end)
        return sb_regex_rx_fail(x, "trailing backslash");
    *kind = SB_REGEX_ESC_CHAR;
    unsigned char c = *x->p;
    if (c >= 0x80)
        return sb_regex_rx_utf8(x, cp); /* identity escape of a non-ASCII char */
    x->p++;
    switch (c) {
    case 'd':
    case 'D':
    case 'w':
    case 'W':
    case 's':
    case 'S':
        *kind = SB_REGEX_ESC_CLASS;
        *cp = c;
        return 0;
    case 'b':
        if (in_class) {
            *cp = 0x08;
            return 0;
        }
        /* fall through */
    case 'B':
        if (in_class) {
            *cp = 'B';
            return 0;
        }
        *kind = SB_REGEX_ESC_WORDB;
        *cp = c;
        return 0;
    case 'n':
        *cp = '\n';
        return 0;
    case 'r':
        *cp = '\r';
        return 0;
    case 't':
        *cp = '\t';
        return 0;
    case 'f':
        *cp = '\f';
        return 0;
    case 'v':
        *cp = '\v';
        return 0;
    case 'c':
        if (x->p < x->end && ((*x->p | 0x20) >= 'a' && (*x->p | 0x20) <= 'z')) {
            *cp = *x->p++ % 32u;
            return 0;
        }
        return sb_regex_rx_fail(x, "invalid \\c escape");
    case 'x':
        if (sb_regex_rx_hexn(x, 2, cp) < 0)
            *cp = 'x'; /* Annex B: not an escape after all */
        return 0;
    case 'u':
        if (x->p < x->end && *x->p == '{')
            return sb_regex_rx_fail(x, "\\u{...} escapes are not supported");
        if (sb_regex_rx_hexn(x, 4, cp) < 0) {
            *cp = 'u';
            return 0;
        }
        if (*cp >= 0xD800 && *cp <= 0xDBFF && x->end - x->p >= 6 && x->p[0] == '\\' && x->p[1] == 'u') {
            const unsigned char *save = x->p;
            uint32_t lo;
            x->p += 2;
            if (sb_regex_rx_hexn(x, 4, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF)
                *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
            else
                x->p = save;
        }
        return 0;
    case 'p':
    case 'P':
        return sb_regex_rx_fail(x, "Unicode property escapes (\\p) are not supported");
    case 'k':
        return sb_regex_rx_fail(x, "named backreferences (\\k) are not supported");
    case '0':
        if (x->p < x->end && *x->p >= '0' && *x->p <= '9')
            return sb_regex_rx_fail(x, "octal escapes are not supported");
        *cp = 0;
        return 0;
    default:
        break;
    }
    if (c >= '1' && c <= '9') {
        /* ECMA lets a reference to a group that did not take part match
         * empty, POSIX fails it; and glibc backtracks on them. */
        return sb_regex_rx_fail(x, in_class ? "octal escapes are not supported" : "backreferences are not supported");
    }
    *cp = c; /* identity escape: \. \/ \- ... */
    return 0;
}

/* Parses a class body after '[' into s. */
static int sb_regex_rx_class(struct sb_regex_rx *x, struct sb_regex_cset *s)
{
    int neg = 0;
    if (x->p < x->end && *x->p == '^') {
        neg = 1;
        x->p++;
    }
    while (x->p < x->end && *x->p != ']') {
        uint32_t a, b;
        enum sb_regex_esc ka = SB_REGEX_ESC_CHAR, kb = SB_REGEX_ESC_CHAR;
        int rc;
        if (*x->p == '\\') {
            x->p++;
            rc = sb_regex_rx_escape(x, 1, &a, &ka);
        } else {
            rc = sb_regex_rx_utf8(x, &a);
        }
        if (rc)
            return rc;
        if (x->end - x->p >= 2 && x->p[0] == '-' && x->p[1] != ']') {
            x->p++;
            if (*x->p == '\\') {
                x->p++;
                rc = sb_regex_rx_escape(x, 1, &b, &kb);
            } else {
                rc = sb_regex_rx_utf8(x, &b);
            }
            if (rc)
                return rc;
            if (ka == SB_REGEX_ESC_CHAR && kb == SB_REGEX_ESC_CHAR) {
                if (a > b)
                    return sb_regex_rx_fail(x, "range out of order in character class");
                sb_regex_cset_add(s, a, b);
                continue;
            }
            /* Annex B: "[\d-x]" is \d, '-', 'x' */
            sb_regex_cset_add(s, '-', '-');
            if (kb == SB_REGEX_ESC_CLASS)
                sb_regex_cset_class(s, (char)b);
            else
                sb_regex_cset_add(s, b, b);
        }
        if (ka == SB_REGEX_ESC_CLASS)
            sb_regex_cset_class(s, (char)a);
        else
            sb_regex_cset_add(s, a, a);
    }
    if (x->p >= x->end)
        return sb_regex_rx_fail(x, "unterminated character class");
    x->p++; /* ']' */
    if (neg)
        sb_regex_cset_invert(s);
    return 0;
}

/* Parses "{n}", "{n,}", "{n,m}" at p; returns its length or 0 if p does not
 * start a quantifier (then '{' is a literal, Annex B). */
static size_t sb_regex_rx_braces(const unsigned char *p, const unsigned char *end, uint32_t *lo, uint32_t *hi)
{
    const unsigned char *q = p + 1;
    uint64_t a = 0, b;
    if (q >= end || *q < '0' || *q > '9')
        return 0;
    while (q < end && *q >= '0' && *q <= '9')
        a = a < 1000000 ? a * 10 + (*q++ - '0') : (q++, a);
    b = a;
    if (q < end && *q == ',') {
        q++;
        if (q < end && *q >= '0' && *q <= '9') {
            b = 0;
            while (q < end && *q >= '0' && *q <= '9')
                b = b < 1000000 ? b * 10 + (*q++ - '0') : (q++, b);
        } else {
            b = UINT32_MAX; /* unbounded */
        }
    }
    if (q >= end || *q != '}')
        return 0;
    *lo = (uint32_t)a;
    *hi = (uint32_t)b;
    return (size_t)(q + 1 - p);
}

static int sb_regex_rx_is_quant(const unsigned char *p, const unsigned char *end)
{
    uint32_t lo, hi;
    return p < end && (*p == '*' || *p == '+' || *p == '?' || (*p == '{' && sb_regex_rx_braces(p, end, &lo, &hi)));
}

/* Emits a literal code point as an atom. A multi-byte character is grouped
 * when a quantifier follows, so the quantifier covers all its bytes. */
static void sb_regex_rx_literal(struct sb_regex_rx *x, uint32_t c)
{
    if (c == 0 || (c >= 0xD800 && c <= 0xDFFF)) {
        struct sb_regex_cset s = {0};
        sb_regex_cset_add(&s, c, c);
        sb_regex_rx_set(x, &s);
        return;
    }
    if (c < 0x80) {
        if (strchr(".[\\()*+?{|^$", (int)c))
            sb_regex_buf_addc(&x->out, '\\');
        if (c == ']' || c == '}')
            sb_regex_buf_addc(&x->out, '[');
        sb_regex_buf_addc(&x->out, (char)c);
        if (c == ']' || c == '}')
            sb_regex_buf_addc(&x->out, ']');
        return;
    }
    unsigned char b[4];
    int n = sb_regex_utf8_encode(c, b);
    int wrap = sb_regex_rx_is_quant(x->p, x->end);
    if (wrap)
        sb_regex_buf_addc(&x->out, '(');
    sb_buf_add(&x->out, (const char *)b, (size_t)n);
    if (wrap)
        sb_regex_buf_addc(&x->out, ')');
}

/* Whether the pattern has a top-level '|' (outside groups and classes). */
static int sb_regex_rx_top_alt(const unsigned char *p, const unsigned char *end)
{
    int in_class = 0, depth = 0;
    for (; p < end; p++) {
        if (*p == '\\') {
            p++;
            continue;
        }
        if (in_class) {
            in_class = *p != ']';
            continue;
        }
        if (*p == '[') {
            in_class = 1;
            if (p + 1 < end && p[1] == '^')
                p++;
        } else if (*p == '(') {
            depth++;
        } else if (*p == ')') {
            depth--;
        } else if (*p == '|' && depth == 0) {
            return 1;
        }
    }
    return 0;
}

/* Translates pattern (len bytes, no NUL) into an ERE in *out (caller frees).
 *
 * Besides the syntax, it tracks for each open group its size once counted
 * repetitions are expanded (glibc copies a repeated subtree), whether it
 * holds an assertion, and whether it can match the empty string, and
 * rejects two constructs that glibc gets wrong or takes minutes to compile:
 * an assertion inside a group repeated more than once ("(^a|b){2}"), and a
 * repeated sub-pattern that can match empty ("(a|b?){1,100}"). */
static int sb_regex_rx_translate(const char *pattern, size_t len, char **out, char *err, size_t errsz)
{
    struct sb_regex_rx x = {.pat = pattern,
                            .p = (const unsigned char *)pattern,
                            .end = (const unsigned char *)pattern + len,
                            .err = err,
                            .errsz = errsz};
    struct {
        uint64_t size; /* expanded size of the enclosing sequence so far */
        uint64_t cost; /* regcomp cost of the same (see SB_REGEX_MAX_COST) */
        int asrt;      /* the enclosing group holds an assertion */
        int alt_null;  /* some finished alternative of it matches empty */
        int seq_null;  /* the current alternative so far matches empty */
    } stack[64];
    int depth = 0;
    uint64_t cur = 0, atom = 0; /* current sequence / last atom: expanded size */
    uint64_t cur_cost = 0, atom_cost = 0;
    int cur_asrt = 0, atom_asrt = 0;
    int alt_null = 0, seq_null = 1;  /* current group: as in the stack */
    int seq_prev = 1, atom_null = 0; /* seq_null before the last atom; the last atom */
    int quantified = 0;              /* the last token was a quantifier */
    int rc = 0;
    /* A pattern that starts with ^ (and has no top-level |) can only match
     * at offset 0, and glibc sees that. Any other is anchored here behind a
     * prefix that steps over whole characters: it then starts only on
     * character boundaries (so \B is never tried inside a character), and
     * glibc makes one linear pass instead of one per start offset
     * (quadratic on long strings). */
    int anchored = len > 0 && pattern[0] == '^' && !sb_regex_rx_top_alt(x.p, x.end);
    if (!anchored) {
        sb_regex_buf_adds(&x.out, "\\`([^\x80-\xff]|[\xc0-\xdf][\x80-\xbf]|[\xe0-\xef][\x80-\xbf]{2}|"
                                  "[\xf0-\xf7][\x80-\xbf]{3})*(");
    }
    while (x.p < x.end) {
        size_t before = x.out.len;
        unsigned char c = *x.p;
        int is_atom = 1, nullable = 0;
        int was_quantified = quantified;
        quantified = 0;
        if (c == '\\') {
            uint32_t cp;
            enum sb_regex_esc kind;
            x.p++;
            if ((rc = sb_regex_rx_escape(&x, 0, &cp, &kind)))
                goto done;
            if (kind == SB_REGEX_ESC_CLASS) {
                struct sb_regex_cset s = {0};
                sb_regex_cset_class(&s, (char)cp);
                sb_regex_rx_set(&x, &s);
            } else if (kind == SB_REGEX_ESC_WORDB) {
                /* glibc's \b / \B in the C locale use [A-Za-z0-9_], as ECMA */
                sb_regex_buf_adds(&x.out, cp == 'b' ? "\\b" : "\\B");
                is_atom = 0;
                nullable = 1;
                cur_asrt = 1;
            } else {
                sb_regex_rx_literal(&x, cp);
            }
        } else if (c == '.') {
            struct sb_regex_cset s = {0};
            x.p++;
            sb_regex_cset_add(&s, '\n', '\n');
            sb_regex_cset_add(&s, '\r', '\r');
            sb_regex_cset_add(&s, 0x2028, 0x2029);
            sb_regex_cset_invert(&s);
            sb_regex_rx_set(&x, &s);
        } else if (c == '[') {
            struct sb_regex_cset s = {0};
            x.p++;
            rc = sb_regex_rx_class(&x, &s);
            if (rc) {
                free(s.r);
                goto done;
            }
            sb_regex_rx_set(&x, &s);
        } else if (c == '(') {
            x.p++;
            if (x.p < x.end && *x.p == '?') {
                if (x.end - x.p >= 2 && x.p[1] == ':') {
                    x.p += 2;
                } else if (x.end - x.p >= 3 && x.p[1] == '<' && x.p[2] != '=' && x.p[2] != '!') {
                    const unsigned char *q = x.p + 2;
                    while (q < x.end && *q != '>')
                        q++;
                    if (q >= x.end) {
                        rc = sb_regex_rx_fail(&x, "unterminated group name");
                        goto done;
                    }
                    x.p = q + 1; /* a named group is just a group here */
                } else {
                    rc = sb_regex_rx_fail(&x, "lookahead/lookbehind assertions are not supported");
                    goto done;
                }
            }
            sb_regex_buf_addc(&x.out, '(');
            if (depth == (int)(sizeof stack / sizeof *stack)) {
                rc = sb_regex_rx_fail(&x, "groups nested too deeply");
                goto done;
            }
            stack[depth].size = cur;
            stack[depth].cost = cur_cost;
            stack[depth].asrt = cur_asrt;
            stack[depth].alt_null = alt_null;
            stack[depth].seq_null = seq_null;
            depth++;
            cur = cur_cost = 0;
            cur_asrt = alt_null = 0;
            seq_null = 1;
            continue;
        } else if (c == ')') {
            x.p++;
            sb_regex_buf_addc(&x.out, ')');
            if (depth == 0) {
                rc = sb_regex_rx_fail(&x, "unmatched ')'");
                goto done;
            }
            int inner_null = alt_null | seq_null;
            atom = cur + 2;
            atom_cost = cur_cost;
            atom_asrt = cur_asrt;
            depth--;
            cur = stack[depth].size + atom;
            cur_cost = stack[depth].cost + atom_cost;
            cur_asrt = stack[depth].asrt | atom_asrt;
            alt_null = stack[depth].alt_null;
            seq_prev = stack[depth].seq_null;
            seq_null = seq_prev & inner_null;
            atom_null = inner_null;
            continue;
        } else if (c == '|') {
            x.p++;
            sb_regex_buf_addc(&x.out, '|');
            cur++;
            alt_null |= seq_null;
            seq_null = 1;
            atom = atom_cost = 0;
            atom_asrt = atom_null = 0;
            continue;
        } else if (c == '^' || c == '$') {
            /* GNU's buffer anchors: glibc lets ^ and $ also match next to a
             * newline the pattern itself consumed ("\n^"), even without
             * REG_NEWLINE; ECMA (no m flag) anchors only at the ends. */
            x.p++;
            sb_regex_buf_adds(&x.out, c == '^' ? "\\`" : "\\'");
            is_atom = 0;
            nullable = 1;
            cur_asrt = 1;
        } else if (c == '*' || c == '+' || c == '?' || (c == '{' && sb_regex_rx_is_quant(x.p, x.end))) {
            uint32_t lo = c == '+', hi = c == '?' ? 1 : UINT32_MAX;
            if (was_quantified) {
                /* "a{2}{3}": an ECMA syntax error, but glibc would take it
                 * and multiply the copies behind the size estimate's back */
                rc = sb_regex_rx_fail(&x, "nothing to repeat (quantifier after a quantifier)");
                goto done;
            }
            quantified = 1;
            if (c == '{') {
                size_t n = sb_regex_rx_braces(x.p, x.end, &lo, &hi);
                if (lo > RE_DUP_MAX || (hi != UINT32_MAX && hi > RE_DUP_MAX)) {
                    rc = sb_regex_rx_fail(&x, "repetition count too large");
                    goto done;
                }
                if (hi < lo) {
                    rc = sb_regex_rx_fail(&x, "numbers out of order in {} quantifier");
                    goto done;
                }
                sb_buf_add(&x.out, (const char *)x.p, n);
                x.p += n;
            } else {
                x.p++;
                sb_regex_buf_addc(&x.out, (char)c);
            }
            if (x.p < x.end && *x.p == '?')
                x.p++; /* lazy: same match/no-match answer as greedy */
            if (hi > 1 && atom_asrt) {
                rc = sb_regex_rx_fail(&x, "^, $, \\b or \\B inside a repeated group is not supported");
                goto done;
            }
            if (hi > 1 && atom_null) {
                rc = sb_regex_rx_fail(&x, "repeating a group that can match the empty string is not supported");
                goto done;
            }
            /* glibc expands a{n,m} into n copies and m-n nested options,
             * a+ into aa*, a{n,} into n copies and a star */
            uint64_t times = c == '+' ? 2 : hi == UINT32_MAX ? (uint64_t)lo + 1 : (hi ? hi : 1);
            uint64_t opt = hi == UINT32_MAX ? 0 : hi - lo;
            cur += atom * (times - 1) + (x.out.len - before);
            cur_cost += atom_cost * (times - 1) + opt * opt * (atom + 20);
            atom = atom_cost = 0;
            atom_null |= lo == 0;
            seq_null = seq_prev & atom_null;
            if (cur > SB_REGEX_MAX_EXPANDED || cur_cost > SB_REGEX_MAX_COST) {
                rc = sb_regex_rx_fail(&x, "pattern too large once repetitions are expanded "
                                          "(for lengths, use minLength/maxLength)");
                goto done;
            }
            continue;
        } else {
            uint32_t cp;
            if ((rc = sb_regex_rx_utf8(&x, &cp)))
                goto done;
            sb_regex_rx_literal(&x, cp);
        }
        atom = is_atom ? x.out.len - before : 0;
        atom_cost = 0;
        atom_asrt = 0;
        atom_null = nullable;
        seq_prev = seq_null;
        seq_null &= nullable;
        cur += x.out.len - before;
    }
    if (depth) {
        rc = sb_regex_rx_fail(&x, "missing ')'");
        goto done;
    }
    if (cur > SB_REGEX_MAX_EXPANDED || cur_cost > SB_REGEX_MAX_COST) {
        rc = sb_regex_rx_fail(&x, "pattern too large once repetitions are expanded "
                                  "(for lengths, use minLength/maxLength)");
        goto done;
    }
    if (!anchored && cur > SB_REGEX_MAX_UNANCHORED) {
        rc = sb_regex_rx_fail(&x, "unanchored pattern too large once repetitions are expanded "
                                  "(anchor it with ^, or use minLength/maxLength)");
        goto done;
    }
    if (!anchored)
        sb_regex_buf_addc(&x.out, ')');
    *out = x.out.p;
    x.out.p = NULL;
done:
    free(x.out.p);
    return rc;
}

/* ---- compile and search ----------------------------------------------- */

sb_regex_t *sb_regex_compile(const char *ecma_pattern, char *err, size_t errsz)
{
    char *ere = NULL;
    char msg[256];
    if (sb_regex_rx_translate(ecma_pattern, strlen(ecma_pattern), &ere, err, errsz))
        return NULL;
    sb_regex_t *re = sb_xcalloc(1, sizeof *re);
    /* glibc hands out its static "C" locale object here, so one per regex
     * costs nothing */
    re->cloc = newlocale(LC_ALL_MASK, "C", (locale_t)0);
    if (!re->cloc) {
        sb_regex_errf(err, errsz, "cannot create the C locale for regex matching");
        goto fail;
    }
    locale_t old = uselocale(re->cloc);
    int rc = regcomp(&re->re, ere, REG_EXTENDED);
    uselocale(old);
    if (rc) {
        regerror(rc, &re->re, msg, sizeof msg);
        sb_regex_errf(err, errsz, "pattern \"%s\": %s", ecma_pattern, msg);
        goto fail;
    }
    free(ere);
    return re;
fail:
    if (re->cloc)
        freelocale(re->cloc);
    free(ere);
    free(re);
    return NULL;
}

int sb_regex_search(const sb_regex_t *re, const char *subject, size_t len)
{
    if (len > INT32_MAX) /* regoff_t is an int */
        return -E2BIG;
    /* Not REG_NOSUB: glibc's no-submatch path answers wrongly for some
     * anchors inside loops that the regular path gets right. */
    regmatch_t m[1] = {{.rm_so = 0, .rm_eo = (regoff_t)len}};
    locale_t old = uselocale(re->cloc);
    int rc = regexec(&re->re, subject, 1, m, REG_STARTEND);
    uselocale(old);
    if (rc == REG_NOMATCH)
        return 0;
    return rc ? -ENOMEM : 1;
}

void sb_regex_destroy(sb_regex_t **pre)
{
    if (!pre || !*pre)
        return;
    sb_regex_t *re = *pre;
    regfree(&re->re);
    freelocale(re->cloc);
    free(re);
    *pre = NULL;
}
