/*
 * wtool_extract: a file's text by its type (see wtool_extract.h): plain
 * text made clean UTF-8, HTML through the web tool's libxml2 reader, PDF
 * through poppler-glib.
 */
#include "wtool_extract.h"

#include <errno.h>
#include <poppler.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_utf8.h"
#include "wtool_web.h"

static void why_set(char *why, size_t why_len, const char *msg)
{
    if (why && why_len)
        snprintf(why, why_len, "%s", msg);
}

/* ---- which reader -------------------------------------------------------------------- */

/* Extensions read as text: prose, data and source code (OpenAI's file
 * search takes these too). */
static const char *const text_exts[] = {
    "txt", "text", "md",   "markdown", "mdx",  "rst",   "csv",   "tsv", "json", "jsonl", "ndjson", "xml",   "yaml",
    "yml", "toml", "ini",  "cfg",      "conf", "log",   "tex",   "c",   "h",    "cc",    "cpp",    "cxx",   "hpp",
    "cs",  "go",   "java", "kt",       "js",   "mjs",   "cjs",   "ts",  "tsx",  "jsx",   "py",     "rb",    "php",
    "sh",  "bash", "css",  "sql",      "rs",   "swift", "scala", "lua", "pl",   "r",     "vue",    "svelte"};

/* Media types (without parameters) of text that are not text/...: */
static const char *const text_types[] = {"application/json",         "application/x-ndjson",   "application/xml",
                                         "application/x-yaml",       "application/yaml",       "application/javascript",
                                         "application/x-javascript", "application/typescript", "application/x-sh",
                                         "application/x-tex",        "application/sql",        "application/toml"};

/* The media type of a Content-Type-like value, lower-cased, into type. */
static void media_type(const char *mime, char *type, size_t type_len)
{
    size_t n = mime ? strcspn(mime, "; \t") : 0;
    if (n >= type_len)
        n = 0; /* too long to be a type we know */
    for (size_t i = 0; i < n; i++)
        type[i] = (char)((mime[i] >= 'A' && mime[i] <= 'Z') ? mime[i] - 'A' + 'a' : mime[i]);
    type[n] = '\0';
}

/* The charset parameter of a MIME type into out ("" when none). */
static void charset_of(const char *mime, char *out, size_t out_len)
{
    out[0] = '\0';
    for (const char *p = mime ? strchr(mime, ';') : NULL; p; p = strchr(p + 1, ';')) {
        p += strspn(p + 1, " \t") + 1;
        if (strncasecmp(p, "charset=", 8))
            continue;
        p += 8;
        if (*p == '"')
            p++;
        size_t m = strcspn(p, "\"; \t");
        if (m < out_len) {
            memcpy(out, p, m);
            out[m] = '\0';
        }
        return;
    }
}

static enum sb_extract_kind kind_of_ext(const char *filename)
{
    const char *dot = filename ? strrchr(filename, '.') : NULL;
    if (!dot || !dot[1] || strchr(dot, '/'))
        return SB_EXTRACT_NONE;
    const char *ext = dot + 1;
    if (!strcasecmp(ext, "pdf"))
        return SB_EXTRACT_PDF;
    if (!strcasecmp(ext, "html") || !strcasecmp(ext, "htm") || !strcasecmp(ext, "xhtml"))
        return SB_EXTRACT_HTML;
    for (size_t i = 0; i < sizeof text_exts / sizeof text_exts[0]; i++)
        if (!strcasecmp(ext, text_exts[i]))
            return SB_EXTRACT_TEXT;
    return SB_EXTRACT_NONE;
}

enum sb_extract_kind sb_extract_kind_of(const char *mime, const char *filename, const char *data, size_t len)
{
    char type[128];
    media_type(mime, type, sizeof type);
    if (!strcmp(type, "application/pdf"))
        return SB_EXTRACT_PDF;
    if (!strcmp(type, "text/html") || !strcmp(type, "application/xhtml+xml"))
        return SB_EXTRACT_HTML;
    if (!strncmp(type, "text/", 5))
        return SB_EXTRACT_TEXT;
    for (size_t i = 0; i < sizeof text_types / sizeof text_types[0]; i++)
        if (!strcmp(type, text_types[i]))
            return SB_EXTRACT_TEXT;
    /* A type that names something else (image/png, a Word document) is what
     * the file is, whatever it is called; an unknown one says nothing. */
    if (*type && strcmp(type, "application/octet-stream") && strcmp(type, "binary/octet-stream"))
        return SB_EXTRACT_NONE;
    enum sb_extract_kind k = kind_of_ext(filename);
    if (k != SB_EXTRACT_NONE)
        return k;
    if (data && len >= 5 && !memcmp(data, "%PDF-", 5))
        return SB_EXTRACT_PDF;
    return SB_EXTRACT_NONE;
}

/* ---- the readers ---------------------------------------------------------------------- */

/* Text is refused past SB_EXTRACT_TEXT_MAX rather than cut: a file search
 * that silently knew only a file's beginning would answer wrongly. */
static int too_long(size_t len, char *why, size_t why_len)
{
    if (len <= SB_EXTRACT_TEXT_MAX)
        return 0;
    char msg[128];
    snprintf(msg, sizeof msg, "the file's text is over %u bytes", SB_EXTRACT_TEXT_MAX);
    why_set(why, why_len, msg);
    return -EINVAL;
}

/* True when s holds something other than whitespace. */
static bool has_text(const char *s)
{
    for (; *s; s++)
        if (!strchr(" \t\r\n\f\v", *s))
            return true;
    return false;
}

int sb_extract_plain(const char *data, size_t len, char **text, char *why, size_t why_len)
{
    *text = NULL;
    if (len >= 3 && !memcmp(data, "\xEF\xBB\xBF", 3)) {
        data += 3;
        len -= 3;
    }
    if (memchr(data, '\0', len)) {
        why_set(why, why_len, "the file is binary, not UTF-8 text");
        return -EINVAL;
    }
    if (too_long(len, why, why_len) < 0)
        return -EINVAL;
    char *t = sb_xmalloc(len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len; i++)
        if (!(data[i] == '\r' && i + 1 < len && data[i + 1] == '\n'))
            t[k++] = data[i];
    t[k] = '\0';
    sb_utf8_fix(t);
    if (!has_text(t)) {
        free(t);
        why_set(why, why_len, "the file has no text");
        return -EINVAL;
    }
    *text = t;
    return 0;
}

int sb_extract_html(const char *data, size_t len, const char *charset, char **text, char *why, size_t why_len)
{
    *text = NULL;
    char *body = NULL, *title = NULL;
    if (len == 0 || sb_web_html_text_enc(data, len, charset && *charset ? charset : NULL, &body, &title) < 0) {
        why_set(why, why_len, "the file is not readable HTML");
        return -EINVAL;
    }
    /* The title is part of what a page is about: searchable with it. */
    char *t = title && has_text(title) ? sb_xasprintf("%s\n\n%s", title, body) : sb_xstrdup(body);
    free(body);
    free(title);
    if (!has_text(t)) {
        free(t);
        why_set(why, why_len, "the file has no text");
        return -EINVAL;
    }
    *text = t;
    return 0;
}

int sb_extract_pdf(const char *data, size_t len, char **text, char *why, size_t why_len)
{
    *text = NULL;
    GError *gerr = NULL;
    /* Static bytes: the document reads the caller's buffer, and is gone
     * before this returns. */
    GBytes *bytes = g_bytes_new_static(data, len);
    PopplerDocument *doc = poppler_document_new_from_bytes(bytes, NULL, &gerr);
    if (!doc) {
        bool locked = gerr && gerr->domain == POPPLER_ERROR && gerr->code == POPPLER_ERROR_ENCRYPTED;
        why_set(why, why_len, locked ? "the PDF is encrypted" : "the file is not a readable PDF");
        if (gerr)
            g_error_free(gerr);
        g_bytes_unref(bytes);
        return -EINVAL;
    }
    sb_buf_t out = {0};
    int rc = 0;
    int pages = poppler_document_get_n_pages(doc);
    for (int i = 0; i < pages && rc == 0; i++) {
        PopplerPage *page = poppler_document_get_page(doc, i);
        if (!page)
            continue;
        char *t = poppler_page_get_text(page);
        if (t && *t) {
            size_t n = strlen(t);
            if (out.len > 0)
                sb_buf_add(&out, "\n\n", 2);
            sb_buf_add(&out, t, n);
            rc = too_long(out.len, why, why_len);
        }
        g_free(t);
        g_object_unref(page);
    }
    g_object_unref(doc);
    g_bytes_unref(bytes);
    if (rc < 0) {
        sb_buf_free(&out);
        return rc;
    }
    if (!out.p || !has_text(out.p)) {
        sb_buf_free(&out);
        why_set(why, why_len, "the PDF has no text (a scan without a text layer?)");
        return -EINVAL;
    }
    sb_utf8_fix(out.p); /* poppler's text is UTF-8; a broken font map may say otherwise */
    *text = out.p;
    return 0;
}

int sb_extract_text(const char *mime, const char *filename, const char *data, size_t len, char **text, char *why,
                    size_t why_len)
{
    *text = NULL;
    char charset[64];
    switch (sb_extract_kind_of(mime, filename, data, len)) {
    case SB_EXTRACT_TEXT:
        return sb_extract_plain(data, len, text, why, why_len);
    case SB_EXTRACT_HTML:
        charset_of(mime, charset, sizeof charset);
        return sb_extract_html(data, len, charset, text, why, why_len);
    case SB_EXTRACT_PDF:
        return sb_extract_pdf(data, len, text, why, why_len);
    case SB_EXTRACT_NONE:
    default:
        break;
    }
    char type[128];
    media_type(mime, type, sizeof type);
    char msg[200];
    snprintf(msg, sizeof msg, "file search cannot read files of type %s", *type ? type : "unknown");
    why_set(why, why_len, msg);
    return -ENOTSUP;
}
