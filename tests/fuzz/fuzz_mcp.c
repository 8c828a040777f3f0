/*
 * fuzz_mcp: libFuzzer harness for the worker's MCP answer reader
 * (worker/tools/wtool_mcp.h): what a remote MCP server, named by a client,
 * sends back to a POST (one JSON-RPC message, a batch, or an event stream),
 * and what the tool loop makes of a result (the tools of a tools/list page,
 * the text of a tools/call).
 *
 * Input: two bytes of settings, then the body. Byte 0: bit 0 picks the
 * content type (text/event-stream or application/json), bits 1-2 the size
 * limit (64 bytes to the default), bits 3-4 the expected id (1, 2, 7 or
 * 0). Byte 1: the chunk size the body is fed in (0: byte by byte).
 * Checked besides "no crash, no leak, no UB": the body read at once and in
 * chunks (stopping where the reader says the answer is in, as the client
 * does) gives the same outcome, result and message; a result is an object
 * and comes with no message, a failure with no result and a message that
 * is valid UTF-8 without control characters; every tool kept has a string
 * name and an object schema, within the bound; a call's output is a string.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "wtool_mcp.h"

static int fuzz_chunked(const char *p, size_t n, size_t step, const char *ct, int64_t id, size_t max, json_t **res,
                        char *err, size_t err_len)
{
    sb_mcp_reader_t r;
    sb_mcp_reader_init(&r, ct, id, max);
    if (step == 0)
        step = 1;
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        if (sb_mcp_reader_feed(&r, p + i, k) != 0)
            break;
    }
    int rc = sb_mcp_reader_finish(&r, res, err, err_len);
    sb_mcp_reader_free(&r);
    return rc;
}

static void fuzz_check_message(const char *err)
{
    FUZZ_REQUIRE(err[0] != '\0');
    for (const char *c = err; *c; c++)
        FUZZ_REQUIRE((unsigned char)*c >= 0x20 && (unsigned char)*c != 0x7f);
    json_t *s = json_string(err); /* jansson takes only valid UTF-8 */
    FUZZ_REQUIRE(s != NULL);
    json_decref(s);
}

static void fuzz_check_result(const json_t *res)
{
    json_t *tools = json_array();
    char *cursor = NULL;
    if (sb_mcp_tools_page(res, tools, &cursor) == 0) {
        FUZZ_REQUIRE(json_array_size(tools) <= SB_MCP_MAX_TOOLS);
        size_t i;
        json_t *t;
        json_array_foreach (tools, i, t) {
            FUZZ_REQUIRE(json_string_length(json_object_get(t, "name")) > 0);
            FUZZ_REQUIRE(json_is_object(json_object_get(t, "input_schema")));
        }
        FUZZ_REQUIRE(!cursor || cursor[0] != '\0');
    } else {
        FUZZ_REQUIRE(cursor == NULL && json_array_size(tools) == 0);
    }
    free(cursor);
    json_decref(tools);
    json_t *out = NULL;
    bool is_error;
    sb_mcp_call_output(res, &out, &is_error);
    FUZZ_REQUIRE(json_is_string(out));
    json_decref(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const size_t maxes[] = {64, 1024, 65536, 0};
    static const int64_t ids[] = {1, 2, 7, 0};
    if (size < 2)
        return 0;
    const char *ct = (data[0] & 1) ? "text/event-stream" : "application/json";
    size_t max = maxes[(data[0] >> 1) & 3];
    int64_t id = ids[(data[0] >> 3) & 3];
    size_t step = data[1];
    const char *p = (const char *)data + 2;
    size_t n = size - 2;

    json_t *a = NULL, *b = NULL;
    char ea[SB_MCP_MESSAGE_MAX + 64], eb[SB_MCP_MESSAGE_MAX + 64];
    int ra = sb_mcp_parse_answer(p, n, ct, id, max, &a, ea, sizeof ea);
    int rb = fuzz_chunked(p, n, step, ct, id, max, &b, eb, sizeof eb);
    FUZZ_REQUIRE(ra == rb);
    FUZZ_REQUIRE(strcmp(ea, eb) == 0);
    FUZZ_REQUIRE(ra == 0 || ra == -EPROTO || ra == -EBADMSG || ra == -E2BIG);
    if (ra == 0) {
        FUZZ_REQUIRE(json_is_object(a) && json_equal(a, b) && ea[0] == '\0');
        fuzz_check_result(a);
    } else {
        FUZZ_REQUIRE(a == NULL && b == NULL);
        fuzz_check_message(ea);
    }
    json_decref(a);
    json_decref(b);
    return 0;
}
