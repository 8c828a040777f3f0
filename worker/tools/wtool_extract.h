/*
 * wtool_extract: the text of an uploaded file, for file search's ingestion.
 * Which reader a file gets is decided by its MIME type, then its filename's
 * extension (an unknown or application/octet-stream type), then its first
 * bytes ("%PDF-"):
 *   - text: any text/ type, JSON, XML, YAML, and source code by extension: UTF-8
 *     (a BOM dropped, CRLF made LF, bytes that are not UTF-8 made '?'); a
 *     NUL byte means the file is binary, not text;
 *   - HTML (text/html, .html, .htm, .xhtml): libxml2's HTML parser through
 *     the web tool's reader (wtool_html.c: scripts and styles dropped,
 *     blocks as lines, at most SB_WEB_HTML_TEXT_MAX bytes of text), the
 *     page's title first;
 *   - PDF (application/pdf, .pdf): poppler-glib, every page's text in
 *     order, pages separated by a blank line; an encrypted PDF is invalid.
 * Anything else (images, office documents, archives) is unsupported. Pure
 * functions of the bytes: unit-tested (tests/unit/worker/test_extract.c)
 * and fuzzed (tests/fuzz/fuzz_extract_html.c, fuzz_extract_pdf.c), since a
 * file is whatever a client uploaded.
 */
#ifndef WTOOL_EXTRACT_H
#define WTOOL_EXTRACT_H

#include <stddef.h>

/* Most bytes of text one file may give (its chunks are embedded in one job). */
#define SB_EXTRACT_TEXT_MAX (16u * 1024u * 1024u)

enum sb_extract_kind {
    SB_EXTRACT_NONE = 0, /* unsupported */
    SB_EXTRACT_TEXT,
    SB_EXTRACT_HTML,
    SB_EXTRACT_PDF,
};

/* The reader for a file: mime may carry parameters (a charset) and may be
 * NULL or empty, as may filename; data (len bytes) is sniffed only when the
 * type and name say nothing. */
enum sb_extract_kind sb_extract_kind_of(const char *mime, const char *filename, const char *data, size_t len);

/* The file's text (*text malloc'd, NUL-terminated, valid UTF-8, not empty).
 * 0; -ENOTSUP for a type no reader takes (file search's "unsupported_file");
 * -EINVAL for a file its reader cannot read, or with no text in it
 * ("invalid_file"). why (why_len bytes) says what, in words a client may
 * see. */
int sb_extract_text(const char *mime, const char *filename, const char *data, size_t len, char **text, char *why,
                    size_t why_len) __attribute__((warn_unused_result));

/* The readers on their own (as sb_extract_text, for their kind). */
int sb_extract_plain(const char *data, size_t len, char **text, char *why, size_t why_len)
    __attribute__((warn_unused_result));
int sb_extract_html(const char *data, size_t len, const char *charset, char **text, char *why, size_t why_len)
    __attribute__((warn_unused_result));
int sb_extract_pdf(const char *data, size_t len, char **text, char *why, size_t why_len)
    __attribute__((warn_unused_result));

#endif
