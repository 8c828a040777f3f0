/*
 * fuzz_pdf: libFuzzer harness for file search's PDF reader
 * (sb_extract_pdf in wtool_extract.c, poppler-glib underneath): an
 * uploaded file's bytes, whatever they are.
 *
 * Input: the file. Checked besides "no crash, no leak, no UB" (in our code;
 * poppler's own findings are poppler's): 0 with a text that is valid
 * UTF-8, holds a non-space and fits SB_EXTRACT_TEXT_MAX, or -EINVAL with
 * no text and a reason.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_utf8.h"
#include "wtool_extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = NULL, why[256] = "";
    int rc = sb_extract_pdf((const char *)data, size, &text, why, sizeof why);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
        FUZZ_REQUIRE(text == NULL && why[0]);
        return 0;
    }
    size_t len = strlen(text);
    FUZZ_REQUIRE(len > 0 && len <= SB_EXTRACT_TEXT_MAX);
    FUZZ_REQUIRE(sb_utf8_fix(text) == 0);
    FUZZ_REQUIRE(strspn(text, " \t\r\n\f\v") < len);
    free(text);
    return 0;
}
