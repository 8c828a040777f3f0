/*
 * fuzz_code_outcome: libFuzzer harness for what the Messages and Generate
 * Content styles read from a code interpreter run's logs (whatever the
 * model's code printed, so anything): fe_code_traceback's heuristic,
 * fe_code_outcome and fe_code_logs on an item holding them, and the
 * Messages stream's escaping of code into input_json_delta pieces
 * (fe_messages_code_json) and its result block. Input: the logs' bytes.
 *
 * Beyond "no crash, no UB" it checks: a traceback is only ever found where
 * its header (or a frame line) starts a line; on UTF-8 logs the item's
 * outcome is an error exactly when a traceback is found, the joined logs
 * are the bytes, the result block's stdout is the bytes and its
 * return_code 1 exactly then, and the escaped piece, quoted, parses back to
 * the bytes; bytes that are not UTF-8 are never escaped.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fe_code_outcome.h"
#include "fe_messages_code.h"
#include "fuzz.h"

/* Whether s[0..n) has a line starting with prefix. */
static int fuzz_line_starts(const char *s, size_t n, const char *prefix)
{
    size_t k = strlen(prefix);
    for (size_t off = 0; off < n;) {
        if (n - off >= k && !memcmp(s + off, prefix, k))
            return 1;
        const char *nl = memchr(s + off, '\n', n - off);
        if (!nl)
            break;
        off = (size_t)(nl - s) + 1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    int raised = fe_code_traceback(s, size);
    if (raised)
        FUZZ_REQUIRE(fuzz_line_starts(s, size, "Traceback (most recent call last):") ||
                     fuzz_line_starts(s, size, "  File \""));

    json_t *logs = json_stringn(s, size);
    size_t len = 0;
    char *esc = fe_messages_code_json(s, size, &len);
    if (!logs) { /* not UTF-8 */
        FUZZ_REQUIRE(esc == NULL);
        return 0;
    }
    FUZZ_REQUIRE(esc != NULL && strlen(esc) == len);
    char *quoted = malloc(len + 3);
    FUZZ_REQUIRE(quoted != NULL);
    quoted[0] = '"';
    memcpy(quoted + 1, esc, len);
    quoted[len + 1] = '"';
    quoted[len + 2] = '\0';
    json_t *back = json_loads(quoted, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    FUZZ_REQUIRE(back && json_string_length(back) == size && !memcmp(json_string_value(back), s, size));
    json_decref(back);
    free(quoted);
    free(esc);

    json_t *item = json_pack("{s:s, s:s, s:s, s:[{s:s, s:O}]}", "type", "code_interpreter_call", "id", "ci_f", "status",
                             "completed", "outputs", "type", "logs", "logs", logs);
    FUZZ_REQUIRE(item != NULL);
    FUZZ_REQUIRE(fe_code_outcome(item) == (raised ? FE_CODE_ERROR : FE_CODE_OK));
    json_t *joined = fe_code_logs(item);
    FUZZ_REQUIRE(json_equal(joined, logs));
    json_decref(joined);
    json_t *block = fe_messages_code_result_block(item);
    json_t *content = json_object_get(block, "content");
    FUZZ_REQUIRE(json_equal(json_object_get(content, "stdout"), logs));
    FUZZ_REQUIRE(json_integer_value(json_object_get(content, "return_code")) == (raised ? 1 : 0));
    json_decref(block);
    json_decref(item);
    json_decref(logs);
    return 0;
}
