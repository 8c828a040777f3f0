/*
 * fuzz_html: libFuzzer harness for wtool_html.c: sb_web_html_text_enc,
 * which turns a page a model opened into text (bytes from any web server),
 * and sb_web_find_in_text on that text.
 *
 * Input: one byte of settings, then the page. Bits 0-2 pick the charset the
 * Content-Type would name (none, UTF-8, ISO-8859-1, windows-1252,
 * Shift_JIS, UTF-16LE, an unknown name, EUC-JP); bits 3-7 the find_in_page
 * budget. Checked besides "no crash, no leak, no UB" (the tree walk has no
 * recursion: deep nesting must not overflow the stack): 0, or -EINVAL
 * (libxml2 found no document at all) with nothing returned; the text is valid UTF-8, at most SB_WEB_HTML_TEXT_MAX
 * bytes, without a CR or a control byte, nor a line end first or last;
 * the title is NULL or non-empty valid UTF-8 of at most 1024 bytes without
 * a line end; find_in_page with the text's first word finds it (0) within
 * its budget, and with a pattern no text can hold answers -ENOENT.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_utf8.h"
#include "wtool_web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    static const char *const charsets[] = {NULL,        "UTF-8",    "ISO-8859-1", "windows-1252",
                                           "Shift_JIS", "UTF-16LE", "x-unknown",  "EUC-JP"};
    const char *enc = charsets[data[0] & 7];
    size_t budget = 64 + (size_t)(data[0] >> 3) * 256;
    char *text = NULL, *title = NULL;
    int rc = sb_web_html_text_enc((const char *)data + 1, size - 1, enc, &text, &title);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
        FUZZ_REQUIRE(text == NULL && title == NULL);
        return 0;
    }
    size_t len = strlen(text);
    FUZZ_REQUIRE(len <= SB_WEB_HTML_TEXT_MAX);
    FUZZ_REQUIRE(sb_utf8_fix(text) == 0);
    for (size_t i = 0; i < len; i++)
        FUZZ_REQUIRE((unsigned char)text[i] >= 0x20 ? text[i] != 0x7f : text[i] == '\n' || text[i] == '\t');
    FUZZ_REQUIRE(len == 0 || (text[len - 1] != '\n' && text[0] != '\n'));
    if (title) {
        FUZZ_REQUIRE(*title && strlen(title) <= 1024 && sb_utf8_fix(title) == 0);
        FUZZ_REQUIRE(!strchr(title, '\n') && !strchr(title, '\r'));
    }

    /* The first word of the text is found; a NUL-free pattern of a control byte no text holds is not. */
    size_t w = strcspn(text, " \n");
    if (w > 0 && w < 200) {
        char *pat = sb_xstrndup(text, w);
        char *out = NULL;
        FUZZ_REQUIRE(sb_web_find_in_text(text, pat, budget, &out) == 0);
        FUZZ_REQUIRE(out && strlen(out) <= budget + 200 && sb_utf8_fix(out) == 0);
        free(out);
        free(pat);
    }
    char *out = NULL;
    FUZZ_REQUIRE(sb_web_find_in_text(text, "\x01\x02", budget, &out) == -ENOENT && out == NULL);
    free(text);
    free(title);
    return 0;
}
