/*
 * test_extract: a file's text by its type (wtool_extract.c): which reader
 * a MIME type, a filename and the first bytes choose; plain text made clean
 * UTF-8 (BOM, CRLF, bad bytes) and binary refused; HTML through libxml2
 * with its title; PDF through poppler (pages in order, a broken or empty
 * PDF invalid); other types unsupported. The PDFs are written here, with
 * their cross-reference offsets computed, so the test needs no file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_buf.h"
#include "sb_test.h"
#include "wtool_extract.h"

static void test_kind(void)
{
    CHECK_INT(sb_extract_kind_of("text/plain", "a.bin", NULL, 0), SB_EXTRACT_TEXT);
    CHECK_INT(sb_extract_kind_of("text/markdown; charset=utf-8", NULL, NULL, 0), SB_EXTRACT_TEXT);
    CHECK_INT(sb_extract_kind_of("Text/CSV", "x", NULL, 0), SB_EXTRACT_TEXT);
    CHECK_INT(sb_extract_kind_of("application/json", "x", NULL, 0), SB_EXTRACT_TEXT);
    CHECK_INT(sb_extract_kind_of("text/html; charset=ISO-8859-1", "x.txt", NULL, 0), SB_EXTRACT_HTML);
    CHECK_INT(sb_extract_kind_of("application/xhtml+xml", NULL, NULL, 0), SB_EXTRACT_HTML);
    CHECK_INT(sb_extract_kind_of("application/pdf", "x.txt", NULL, 0), SB_EXTRACT_PDF);
    /* No type, or octet-stream: the name, then the bytes. */
    CHECK_INT(sb_extract_kind_of("application/octet-stream", "notes.MD", NULL, 0), SB_EXTRACT_TEXT);
    CHECK_INT(sb_extract_kind_of("", "main.py", NULL, 0), SB_EXTRACT_TEXT);
    CHECK_INT(sb_extract_kind_of(NULL, "page.htm", NULL, 0), SB_EXTRACT_HTML);
    CHECK_INT(sb_extract_kind_of(NULL, "paper.Pdf", NULL, 0), SB_EXTRACT_PDF);
    CHECK_INT(sb_extract_kind_of("application/octet-stream", "upload", "%PDF-1.4\n", 9), SB_EXTRACT_PDF);
    CHECK_INT(sb_extract_kind_of("application/octet-stream", "upload", "%PDF", 4), SB_EXTRACT_NONE);
    CHECK_INT(sb_extract_kind_of("application/octet-stream", "archive.tar", NULL, 0), SB_EXTRACT_NONE);
    CHECK_INT(sb_extract_kind_of(NULL, "dir.txt/file", NULL, 0), SB_EXTRACT_NONE);
    CHECK_INT(sb_extract_kind_of(NULL, "noext", NULL, 0), SB_EXTRACT_NONE);
    /* A type that names something else wins over the name. */
    CHECK_INT(sb_extract_kind_of("image/png", "a.txt", NULL, 0), SB_EXTRACT_NONE);
    CHECK_INT(sb_extract_kind_of("application/vnd.openxmlformats-officedocument.wordprocessingml.document", "a.docx",
                                 NULL, 0),
              SB_EXTRACT_NONE);
}

static int extract(const char *mime, const char *name, const char *data, size_t len, char **text, char *why)
{
    why[0] = '\0';
    return sb_extract_text(mime, name, data, len, text, why, 256);
}

static void test_plain(void)
{
    char *t = NULL, why[256];
    const char in[] = "\xEF\xBB\xBFline one\r\nline two\r\n\xC3\xA9t\xC3\xA9 \xFF!";
    CHECK_INT(extract("text/plain", "a.txt", in, sizeof in - 1, &t, why), 0);
    CHECK_STR(t, "line one\nline two\n\xC3\xA9t\xC3\xA9 ?!");
    free(t);
    /* A lone CR stays. */
    CHECK_INT(extract("text/plain", "a.txt", "a\rb", 3, &t, why), 0);
    CHECK_STR(t, "a\rb");
    free(t);
    t = (char *)1;
    CHECK_INT(extract("text/plain", "a.txt", "ab\0cd", 5, &t, why), -EINVAL);
    CHECK(t == NULL);
    CHECK(strstr(why, "binary") != NULL);
    CHECK_INT(extract("text/plain", "a.txt", " \r\n\t ", 5, &t, why), -EINVAL);
    CHECK(strstr(why, "no text") != NULL);
    CHECK_INT(extract("text/plain", "a.txt", "", 0, &t, why), -EINVAL);
    /* UTF-16 (a BOM and NULs) is not UTF-8 text. */
    CHECK_INT(extract("text/plain", "a.txt", "\xFF\xFEh\0i\0", 6, &t, why), -EINVAL);
    const char csv[] = "name,score\nada,3\n";
    CHECK_INT(extract("text/csv", "s.csv", csv, sizeof csv - 1, &t, why), 0);
    CHECK_STR(t, csv);
    free(t);
}

static void test_html(void)
{
    char *t = NULL, why[256];
    const char page[] = "<html><head><title>The Title</title><script>var x = 1;</script></head>"
                        "<body><h1>Heading</h1><p>First &amp; second.</p><style>p{}</style><ul><li>item</li></ul>"
                        "</body></html>";
    CHECK_INT(extract("text/html", "p.html", page, sizeof page - 1, &t, why), 0);
    CHECK(t && !strncmp(t, "The Title\n\n", 11));
    CHECK(t && strstr(t, "Heading") && strstr(t, "First & second.") && strstr(t, "- item"));
    CHECK(t && !strstr(t, "var x") && !strstr(t, "p{}"));
    free(t);
    /* The charset of the type is honoured. */
    const char latin[] = "<p>caf\xE9</p>";
    CHECK_INT(extract("text/html; charset=ISO-8859-1", "p.html", latin, sizeof latin - 1, &t, why), 0);
    CHECK_STR(t, "caf\xC3\xA9");
    free(t);
    CHECK_INT(extract("text/html", "p.html", "<html><script>x</script></html>", 32, &t, why), -EINVAL);
    CHECK(strstr(why, "no text") != NULL);
    CHECK_INT(extract("text/html", "p.html", "", 0, &t, why), -EINVAL);
}

/* A PDF of pages (one line of text each, Helvetica), with a correct xref. */
static char *pdf_of(const char *const *pages, size_t n, size_t *len)
{
    sb_buf_t b = {0};
    size_t offs[64];
    int obj = 0;
    char tmp[512];
#define ADD(...)                                                                                                       \
    do {                                                                                                               \
        int k_ = snprintf(tmp, sizeof tmp, __VA_ARGS__);                                                               \
        sb_buf_add(&b, tmp, (size_t)k_);                                                                               \
    } while (0)
    ADD("%%PDF-1.4\n");
    offs[++obj] = b.len;
    ADD("1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n");
    offs[++obj] = b.len;
    ADD("2 0 obj\n<< /Type /Pages /Count %zu /Kids [", n);
    for (size_t i = 0; i < n; i++)
        ADD(" %zu 0 R", 4 + 2 * i);
    ADD(" ] >>\nendobj\n");
    offs[++obj] = b.len;
    ADD("3 0 obj\n<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>\nendobj\n");
    for (size_t i = 0; i < n; i++) {
        char content[256];
        int cl = snprintf(content, sizeof content, "BT /F1 18 Tf 72 700 Td (%s) Tj ET", pages[i]);
        offs[++obj] = b.len;
        ADD("%d 0 obj\n<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents %d 0 R "
            "/Resources << /Font << /F1 3 0 R >> >> >>\nendobj\n",
            obj, obj + 1);
        offs[++obj] = b.len;
        ADD("%d 0 obj\n<< /Length %d >>\nstream\n%s\nendstream\nendobj\n", obj, cl, content);
    }
    size_t xref = b.len;
    ADD("xref\n0 %d\n0000000000 65535 f \n", obj + 1);
    for (int i = 1; i <= obj; i++)
        ADD("%010zu 00000 n \n", offs[i]);
    ADD("trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n", obj + 1, xref);
#undef ADD
    *len = b.len;
    return b.p;
}

static void test_pdf(void)
{
    char *t = NULL, why[256];
    const char *pages[] = {"Hello PDF world", "Second page here"};
    size_t len;
    char *pdf = pdf_of(pages, 2, &len);
    CHECK_INT(extract("application/pdf", "doc.pdf", pdf, len, &t, why), 0);
    CHECK(t && strstr(t, "Hello PDF world") && strstr(t, "Second page here"));
    CHECK(t && strstr(t, "Hello PDF world") < strstr(t, "Second page here"));
    CHECK(t && strstr(t, "\n\n") != NULL); /* pages apart */
    free(t);
    /* Found by its bytes under an unhelpful type and name. */
    CHECK_INT(extract("application/octet-stream", "upload", pdf, len, &t, why), 0);
    CHECK(t && strstr(t, "Second page here"));
    free(t);
    /* Cut short: not readable (poppler may still recover a page; either way no crash, and the reader says so). */
    int rc = extract("application/pdf", "doc.pdf", pdf, len / 3, &t, why);
    CHECK(rc == 0 || (rc == -EINVAL && why[0]));
    if (rc == 0)
        free(t);
    free(pdf);
    /* A page without text: no text in the file. */
    const char *blank[] = {""};
    pdf = pdf_of(blank, 1, &len);
    CHECK_INT(extract("application/pdf", "scan.pdf", pdf, len, &t, why), -EINVAL);
    CHECK(strstr(why, "no text") != NULL);
    free(pdf);
    CHECK_INT(extract("application/pdf", "x.pdf", "not a pdf at all", 16, &t, why), -EINVAL);
    CHECK(strstr(why, "not a readable PDF") != NULL);
    CHECK_INT(extract("application/pdf", "x.pdf", "", 0, &t, why), -EINVAL);
}

static void test_unsupported(void)
{
    char *t = (char *)1, why[256];
    CHECK_INT(extract("image/png", "a.png", "\x89PNG", 4, &t, why), -ENOTSUP);
    CHECK(t == NULL);
    CHECK(strstr(why, "image/png") != NULL);
    CHECK_INT(extract(NULL, "a.zip", "PK", 2, &t, why), -ENOTSUP);
    CHECK(strstr(why, "unknown") != NULL);
}

int main(void)
{
    test_kind();
    test_plain();
    test_html();
    test_pdf();
    test_unsupported();
    return sb_test_finish("test_extract");
}
