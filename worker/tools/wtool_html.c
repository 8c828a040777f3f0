/*
 * wtool_html: an opened page's HTML as the text a model reads, and
 * find_in_page over that text. The HTML goes through libxml2's HTML parser
 * (the same tolerant tokenizer browsers' ancestors used: recovering from
 * any markup, entities decoded, no network), and the tree is walked without
 * recursion, so a page nested a million deep costs no stack:
 *   - script, style, noscript, template, head (its title is read apart),
 *     svg, canvas, iframe, object, embed and select say nothing;
 *   - block elements (p, div, headings, lists, tables' rows, ...) and br
 *     end a line; li starts one with "- "; table cells are spaced;
 *   - whitespace runs (and no-break spaces) collapse to one space, except
 *     inside pre, which keeps its lines;
 *   - the text stops at SB_WEB_HTML_TEXT_MAX bytes (cut on a UTF-8 boundary).
 * Pure functions: unit-tested (tests/unit/worker/test_web.c) and fuzzed
 * (tests/fuzz/fuzz_html.c), since a page is whatever a server sends.
 */
#include <errno.h>
#include <libxml/HTMLparser.h>
#include <libxml/tree.h>
#include <libxml/xmlerror.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_utf8.h"
#include "wtool_web.h"
#include "wtool_web_internal.h"

/* Bytes of one line find_in_page shows (a paragraph is one line). */
#define FIND_LINE_MAX 1000
/* Bytes of the pattern repeated in find_in_page's heading. */
#define FIND_ECHO_MAX 100

enum kind {
    K_INLINE, /* text flows through */
    K_SKIP,   /* says nothing, nor do its children */
    K_BLOCK,  /* a line of its own */
    K_BR,     /* ends the line */
    K_LI,     /* a line starting "- " */
    K_CELL,   /* a table cell: spaced from its neighbours */
    K_PRE,    /* a block whose whitespace is kept */
};

static enum kind kind_of(const char *name)
{
    static const char *const skip[] = {"script", "style",  "noscript", "template", "head",  "title",
                                       "svg",    "canvas", "iframe",   "object",   "embed", "select"};
    static const char *const block[] = {
        "address", "article", "aside",  "blockquote", "body",  "caption",  "center",     "dd",     "details",
        "dialog",  "dir",     "div",    "dl",         "dt",    "fieldset", "figcaption", "figure", "footer",
        "form",    "h1",      "h2",     "h3",         "h4",    "h5",       "h6",         "header", "hgroup",
        "hr",      "html",    "legend", "main",       "menu",  "nav",      "ol",         "p",      "section",
        "summary", "table",   "tbody",  "thead",      "tfoot", "tr",       "ul",         "option"};
    for (size_t i = 0; i < sizeof skip / sizeof skip[0]; i++)
        if (!strcasecmp(name, skip[i]))
            return K_SKIP;
    for (size_t i = 0; i < sizeof block / sizeof block[0]; i++)
        if (!strcasecmp(name, block[i]))
            return K_BLOCK;
    if (!strcasecmp(name, "br"))
        return K_BR;
    if (!strcasecmp(name, "li"))
        return K_LI;
    if (!strcasecmp(name, "td") || !strcasecmp(name, "th"))
        return K_CELL;
    if (!strcasecmp(name, "pre") || !strcasecmp(name, "listing") || !strcasecmp(name, "xmp") ||
        !strcasecmp(name, "textarea"))
        return K_PRE;
    return K_INLINE;
}

struct walker {
    sb_buf_t out;
    size_t cap;
    bool full;  /* cap reached: stop */
    bool space; /* whitespace seen since the last text: one space before the next */
    int pre;    /* inside this many pre elements */
};

/* len, or less so that s[0..len) does not end inside a UTF-8 sequence (the cap cut it). */
static size_t whole_chars(const char *s, size_t len)
{
    size_t j = len, back = 0;
    while (j > 0 && back < 4 && ((unsigned char)s[j - 1] & 0xC0) == 0x80) {
        j--;
        back++;
    }
    if (j == 0)
        return len;
    unsigned char lead = (unsigned char)s[j - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return len - (j - 1) < need ? j - 1 : len;
}

static bool at_line_start(const struct walker *w)
{
    return w->out.len == 0 || w->out.p[w->out.len - 1] == '\n';
}

static void put(struct walker *w, const char *s, size_t n)
{
    if (w->full)
        return;
    if (w->out.len + n >= w->cap) {
        n = w->cap - w->out.len;
        w->full = true;
    }
    sb_buf_add(&w->out, s, n);
}

static void newline(struct walker *w)
{
    w->space = false;
    /* A space before a line end says nothing. */
    while (w->out.len > 0 && w->out.p[w->out.len - 1] == ' ')
        w->out.p[--w->out.len] = '\0';
    if (!at_line_start(w))
        put(w, "\n", 1);
}

/* Whitespace as a browser collapses it, plus U+00A0 (no-break space): the length of the run at s, or 0. */
static size_t white(const unsigned char *s)
{
    if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v')
        return 1;
    if (s[0] == 0xC2 && s[1] == 0xA0)
        return 2;
    return 0;
}

/* A control byte that says nothing to a reader (line ends and tabs aside). */
static bool control(unsigned char c)
{
    return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f;
}

static void text(struct walker *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;
    if (w->pre) {
        /* pre keeps its lines and spaces (CRs go: line ends are "\n"). */
        while (*p && !w->full) {
            const unsigned char *start = p;
            while (*p && *p != '\r' && !control(*p))
                p++;
            put(w, (const char *)start, (size_t)(p - start));
            if (*p)
                p++;
        }
        return;
    }
    while (*p && !w->full) {
        size_t ws = white(p);
        if (ws) {
            if (!at_line_start(w) && w->out.p[w->out.len - 1] != ' ')
                w->space = true;
            p += ws;
            continue;
        }
        if (control(*p)) {
            p++;
            continue;
        }
        const unsigned char *start = p;
        while (*p && !white(p) && !control(*p))
            p++;
        if (w->space) {
            put(w, " ", 1);
            w->space = false;
        }
        put(w, (const char *)start, (size_t)(p - start));
    }
}

/* Entering n: false when its children are not to be visited (and it has no leave). */
static bool enter(struct walker *w, xmlNode *n)
{
    if (n->type == XML_TEXT_NODE || n->type == XML_CDATA_SECTION_NODE) {
        if (n->content)
            text(w, (const char *)n->content);
        return false;
    }
    if (n->type != XML_ELEMENT_NODE || !n->name)
        return false;
    switch (kind_of((const char *)n->name)) {
    case K_SKIP:
        return false;
    case K_BLOCK:
        newline(w);
        return true;
    case K_BR:
        newline(w);
        return false;
    case K_LI:
        newline(w);
        put(w, "- ", 2);
        return true;
    case K_CELL:
        if (!at_line_start(w))
            w->space = true;
        return true;
    case K_PRE:
        newline(w);
        w->pre++;
        return true;
    case K_INLINE:
        return true;
    }
    return true;
}

static void leave(struct walker *w, xmlNode *n)
{
    if (n->type != XML_ELEMENT_NODE || !n->name)
        return;
    switch (kind_of((const char *)n->name)) {
    case K_PRE:
        w->pre--;
        newline(w);
        break;
    case K_BLOCK:
    case K_LI:
        newline(w);
        break;
    case K_CELL:
        w->space = true;
        break;
    default:
        break;
    }
}

/* Visits the tree in document order without recursion: enter on the way
 * down, leave on the way up (for the nodes whose children were visited). */
static void walk(struct walker *w, xmlNode *first)
{
    xmlNode *n = first;
    while (n && !w->full) {
        bool visit = enter(w, n);
        if (visit && n->children) {
            n = n->children;
            continue;
        }
        if (visit)
            leave(w, n);
        while (!n->next) {
            n = n->parent;
            if (!n || n->type == XML_DOCUMENT_NODE || n->type == XML_HTML_DOCUMENT_NODE)
                return;
            leave(w, n);
        }
        n = n->next;
    }
}

/* The first <title>'s text, whitespace collapsed; NULL when there is none or it is empty. */
static char *find_title(xmlDoc *doc)
{
    xmlNode *n = doc->children;
    while (n) {
        if (n->type == XML_ELEMENT_NODE && n->name && !strcasecmp((const char *)n->name, "title")) {
            struct walker w = {.cap = 1024};
            for (xmlNode *c = n->children; c; c = c->next)
                if ((c->type == XML_TEXT_NODE || c->type == XML_CDATA_SECTION_NODE) && c->content)
                    text(&w, (const char *)c->content);
            if (w.out.p) {
                w.out.len = whole_chars(w.out.p, w.out.len);
                w.out.p[w.out.len] = '\0';
                sb_utf8_fix(w.out.p);
            }
            if (!w.out.p || !*w.out.p) {
                sb_buf_free(&w.out);
                return NULL;
            }
            return w.out.p;
        }
        if (n->children && n->type == XML_ELEMENT_NODE) {
            n = n->children;
            continue;
        }
        while (!n->next) {
            n = n->parent;
            if (!n || n->type == XML_DOCUMENT_NODE || n->type == XML_HTML_DOCUMENT_NODE)
                return NULL;
        }
        n = n->next;
    }
    return NULL;
}

/* libxml2 reports some errors (an encoding that does not convert) past the
 * parser's NOERROR option, to its generic handler, which prints: a page's
 * defects are not the worker's to log. */
static void quiet(void *ctx, const char *msg, ...)
{
    (void)ctx;
    (void)msg;
}

static htmlDocPtr parse(const char *html, size_t len, const char *encoding)
{
    xmlSetGenericErrorFunc(NULL, quiet);
    int opts = HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING | HTML_PARSE_NONET | HTML_PARSE_RECOVER;
    htmlDocPtr doc = encoding ? htmlReadMemory(html, (int)len, NULL, encoding, opts) : NULL;
    if (!doc)
        doc = htmlReadMemory(html, (int)len, NULL, NULL, opts);
    return doc;
}

int sb_web_html_text_enc(const char *html, size_t len, const char *encoding, char **text_out, char **title)
{
    *text_out = NULL;
    *title = NULL;
    if (!html || len == 0 || len > INT_MAX)
        return -EINVAL;
    htmlDocPtr doc = parse(html, len, encoding);
    if (!doc)
        return -EINVAL;
    struct walker w = {.cap = SB_WEB_HTML_TEXT_MAX};
    sb_buf_add(&w.out, "", 0);
    walk(&w, doc->children);
    *title = find_title(doc);
    xmlFreeDoc(doc);
    /* The cap may have fallen inside a character; and no trailing line ends. */
    w.out.len = whole_chars(w.out.p, w.out.len);
    while (w.out.len > 0 && (w.out.p[w.out.len - 1] == '\n' || w.out.p[w.out.len - 1] == ' '))
        w.out.len--;
    w.out.p[w.out.len] = '\0';
    /* pre text may start with a line end. */
    size_t lead = strspn(w.out.p, "\n");
    memmove(w.out.p, w.out.p + lead, w.out.len - lead + 1);
    w.out.len -= lead;
    sb_utf8_fix(w.out.p);
    *text_out = w.out.p;
    return 0;
}

int sb_web_html_text(const char *html, size_t len, char **text_out, char **title)
{
    return sb_web_html_text_enc(html, len, NULL, text_out, title);
}

/* ---- find_in_page ------------------------------------------------------------------ */

static char *ascii_lower(const char *s, size_t n)
{
    char *out = sb_xmalloc(n + 1);
    for (size_t i = 0; i < n; i++)
        out[i] = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] - 'A' + 'a') : s[i];
    out[n] = '\0';
    return out;
}

struct line {
    size_t start, len;
    bool hit, show;
};

int sb_web_find_in_text(const char *text_in, const char *pattern, size_t max_bytes, char **out)
{
    *out = NULL;
    if (!pattern || !*pattern || !text_in)
        return -EINVAL;
    size_t tlen = strlen(text_in), plen = strlen(pattern);
    char *low = ascii_lower(text_in, tlen), *pat = ascii_lower(pattern, plen);
    size_t nlines = 1;
    for (size_t i = 0; i < tlen; i++)
        nlines += text_in[i] == '\n';
    struct line *lines = sb_xcalloc(nlines, sizeof *lines);
    size_t k = 0, hits = 0;
    for (size_t start = 0; start <= tlen && k < nlines; k++) {
        const char *nl = memchr(low + start, '\n', tlen - start);
        size_t len = nl ? (size_t)(nl - (low + start)) : tlen - start;
        lines[k] = (struct line){start, len, memmem(low + start, len, pat, plen) != NULL, false};
        hits += lines[k].hit;
        start += len + 1;
    }
    free(low);
    free(pat);
    if (hits == 0) {
        free(lines);
        return -ENOENT;
    }
    /* Each hit with the line before and after it. */
    for (size_t i = 0; i < k; i++)
        lines[i].show = lines[i].hit || (i > 0 && lines[i - 1].hit) || (i + 1 < k && lines[i + 1].hit);

    sb_buf_t b = {0};
    size_t echo = sb_web_utf8_prefix(pattern, plen, FIND_ECHO_MAX);
    char *head = sb_xasprintf("%zu line%s matching \"%.*s%s\":\n\n", hits, hits == 1 ? "" : "s", (int)echo, pattern,
                              echo < plen ? "..." : "");
    sb_buf_add(&b, head, strlen(head));
    free(head);
    static const char more[] = "[more matches not shown]\n";
    bool wrote = false;
    for (size_t i = 0; i < k; i++) {
        if (!lines[i].show || lines[i].len == 0)
            continue;
        const char *line = text_in + lines[i].start;
        size_t n = sb_web_utf8_prefix(line, lines[i].len, FIND_LINE_MAX);
        bool gap = wrote && !(i > 0 && lines[i - 1].show && lines[i - 1].len > 0);
        size_t need = n + 1 + (n < lines[i].len ? 3 : 0) + (gap ? 4 : 0);
        if (b.len + need + sizeof more > max_bytes) {
            sb_buf_add(&b, more, sizeof more - 1);
            break;
        }
        if (gap)
            sb_buf_add(&b, "...\n", 4);
        sb_buf_add(&b, line, n);
        if (n < lines[i].len)
            sb_buf_add(&b, "...", 3);
        sb_buf_add(&b, "\n", 1);
        wrote = true;
    }
    free(lines);
    *out = b.p;
    return 0;
}
