/*
 * Unit tests for fe_body: the scan before parsing (depth and element count,
 * with brackets, braces, commas, quotes and escapes inside strings that are
 * not structure), and fe_body_json's answers at and over each limit (size,
 * depth, elements), for empty, malformed and non-object bodies.
 */
#include <event2/buffer.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_body.h"
#include "sb_test.h"

static void expect_scan(const char *text, int depth, size_t elements, int line)
{
    fe_body_stats_t st = {-1, (size_t)-1};
    fe_body_scan(text, strlen(text), &st);
    if (st.depth != depth || st.elements != elements)
        fprintf(stderr, "line %d: scan of %s: depth %d elements %zu, want %d and %zu\n", line, text, st.depth,
                st.elements, depth, elements);
    CHECK_INT(st.depth, depth);
    CHECK_INT(st.elements, elements);
    CHECK_INT(fe_body_depth(text, strlen(text)), depth);
}
#define EXPECT_SCAN(text, depth, elements) expect_scan(text, depth, elements, __LINE__)

static void test_scan_structure(void)
{
    EXPECT_SCAN("", 0, 0);
    EXPECT_SCAN("5", 0, 0);
    EXPECT_SCAN("\"a,b[c]{d}\"", 0, 0);
    EXPECT_SCAN("{}", 1, 0);
    EXPECT_SCAN("[]", 1, 0);
    EXPECT_SCAN("[ ]", 1, 0);
    EXPECT_SCAN("{ \n\t\r }", 1, 0);
    EXPECT_SCAN("[1]", 1, 1);
    EXPECT_SCAN("[ 1 ]", 1, 1);
    EXPECT_SCAN("[1,2,3]", 1, 3);
    EXPECT_SCAN("[1, 2 ,\n3]", 1, 3);
    EXPECT_SCAN("{\"a\":1}", 1, 1);
    EXPECT_SCAN("{\"a\":1,\"b\":[1,2]}", 2, 4);
    EXPECT_SCAN("[[],[],[]]", 2, 3);
    EXPECT_SCAN("[[[]]]", 3, 2);
    EXPECT_SCAN("[{}, {\"a\": {}}, [[1, 2]]]", 3, 7);
    EXPECT_SCAN("{\"m\": [{\"k\": null, \"v\": true}, {\"k\": false}]}", 3, 6);
    /* Nesting past the top: depth is the deepest point, not the last. */
    EXPECT_SCAN("[[[1]], 2]", 3, 4);
}

static void test_scan_strings(void)
{
    /* Brackets, braces, commas and colons inside strings are text. */
    EXPECT_SCAN("[\"a,b\", \"[{\", \"]}\"]", 1, 3);
    EXPECT_SCAN("{\"k,[{\": \"v]},\"}", 1, 1);
    EXPECT_SCAN("{\"a\": \"[[[[[[[[[[[[\"}", 1, 1);
    EXPECT_SCAN("[\",,,,,,,,,,,,\"]", 1, 1);
    /* An escaped quote does not end the string: the comma and bracket after it are text. */
    EXPECT_SCAN("[\"a\\\"],[\", \"b\"]", 1, 2);
    EXPECT_SCAN("[\"\\\",\\\",\\\"\"]", 1, 1);
    /* An escaped backslash does not escape the quote after it: the string ends there. */
    EXPECT_SCAN("[\"a\\\\\", \"b\"]", 1, 2);
    EXPECT_SCAN("[\"a\\\\\\\\\", [\"b\"]]", 2, 3);
    /* Other escapes, \u005b (a '[') included, stay inside the string. */
    EXPECT_SCAN("[\"\\u005b\\n\\t\\/\", 1]", 1, 2);
    /* An empty string as a value, and as a key. */
    EXPECT_SCAN("{\"\": \"\", \"x\": [\"\"]}", 2, 3);
    /* A container whose first element is a string counts it. */
    EXPECT_SCAN("[\"]\"]", 1, 1);
    EXPECT_SCAN("{\"}\": 1}", 1, 1);
}

static void test_scan_large(void)
{
    /* 1000 levels: each container holds the next, the innermost is empty. */
    size_t n = 1000;
    char *deep = malloc(2 * n + 1);
    memset(deep, '[', n);
    memset(deep + n, ']', n);
    deep[2 * n] = '\0';
    EXPECT_SCAN(deep, (int)n, n - 1);
    free(deep);
    /* An array of 100000 numbers. */
    size_t count = 100000;
    char *wide = malloc(2 * count + 2);
    wide[0] = '[';
    for (size_t i = 0; i < count; i++) {
        wide[1 + 2 * i] = '7';
        wide[2 + 2 * i] = i + 1 < count ? ',' : ']';
    }
    wide[2 * count + 1] = '\0';
    EXPECT_SCAN(wide, 1, count);
    free(wide);
}

/* fe_body_json on a body: the code of the error (or "" with an object). */
static void json_code(const char *body, size_t max_bytes, int max_depth, int *status, char *code, size_t code_len)
{
    struct evbuffer *req = evbuffer_new();
    evbuffer_add(req, body, strlen(body));
    fe_error_t err;
    memset(&err, 0, sizeof err);
    json_t *j = fe_body_json(req, max_bytes, max_depth, &err);
    *status = j ? 0 : err.status;
    snprintf(code, code_len, "%s", j ? "" : err.code);
    if (j)
        CHECK(json_is_object(j));
    else
        CHECK(strlen(err.message) > 0);
    json_decref(j);
    evbuffer_free(req);
}

static void expect_json(const char *body, size_t max_bytes, int max_depth, int status, const char *code, int line)
{
    int got_status;
    char got_code[64];
    json_code(body, max_bytes, max_depth, &got_status, got_code, sizeof got_code);
    if (got_status != status || strcmp(got_code, code) != 0)
        fprintf(stderr, "line %d: fe_body_json(%.60s): %d %s, want %d %s\n", line, body, got_status, got_code, status,
                code);
    CHECK_INT(got_status, status);
    CHECK_STR(got_code, code);
}
#define EXPECT_JSON(body, max_bytes, max_depth, status, code)                                                          \
    expect_json(body, max_bytes, max_depth, status, code, __LINE__)

static void test_json_limits(void)
{
    fe_body_set_max_elements(5);
    EXPECT_JSON("{\"a\":1}", 1000, 64, 0, "");
    /* Size: at the limit and one over. */
    EXPECT_JSON("{\"a\":\"xx\"}", 10, 64, 0, "");
    EXPECT_JSON("{\"a\":\"xxx\"}", 10, 64, 413, "request_too_large");
    /* Depth: at the limit and one over; brackets in strings are no depth. */
    EXPECT_JSON("{\"a\":{\"b\":{}}}", 1000, 3, 0, "");
    EXPECT_JSON("{\"a\":{\"b\":{\"c\":[]}}}", 1000, 3, 400, "json_too_deep");
    EXPECT_JSON("{\"a\":\"[[[[[[[[\"}", 1000, 1, 0, "");
    /* Elements: 1 member + 4 array elements = 5 is fine; 6 is not. */
    EXPECT_JSON("{\"a\":[1,2,3,4]}", 1000, 64, 0, "");
    EXPECT_JSON("{\"a\":[1,2,3,4,5]}", 1000, 64, 400, "json_too_many_elements");
    EXPECT_JSON("{\"a\":1,\"b\":2,\"c\":3,\"d\":4,\"e\":5,\"f\":6}", 1000, 64, 400, "json_too_many_elements");
    /* Commas inside strings are not elements. */
    EXPECT_JSON("{\"a\":\",,,,,,,,,,,,\",\"b\":\"[1,2,3,4,5,6]\"}", 1000, 64, 0, "");
    /* Nested containers count at every level: 1 + 2 + 2 + 1 = 6. */
    EXPECT_JSON("{\"a\":[[1],[2,3]]}", 1000, 64, 400, "json_too_many_elements");
    /* The other answers. */
    EXPECT_JSON("", 1000, 64, 400, "invalid_json");
    EXPECT_JSON("{\"a\":", 1000, 64, 400, "invalid_json");
    EXPECT_JSON("[1]", 1000, 64, 400, "invalid_json");
    EXPECT_JSON("{\"a\":1,\"a\":2}", 1000, 64, 400, "invalid_json");

    /* The default: 200000 elements pass, one more does not. */
    fe_body_set_max_elements(200000);
    size_t count = 200000;
    size_t len = 8 + 2 * (count + 1);
    char *body = malloc(len);
    char *p = body;
    p += snprintf(p, len, "{\"a\":[");
    for (size_t i = 0; i < count - 1; i++) {
        *p++ = '0';
        *p++ = i + 2 < count ? ',' : ']';
    }
    *p++ = '}';
    *p = '\0';
    /* 1 member + 199999 elements */
    EXPECT_JSON(body, 64u << 20, 64, 0, "");
    p[-2] = ',';
    p[-1] = '0';
    p[0] = ']';
    p[1] = '}';
    p[2] = '\0';
    /* 1 member + 200000 elements */
    EXPECT_JSON(body, 64u << 20, 64, 400, "json_too_many_elements");
    free(body);
}

int main(void)
{
    test_scan_structure();
    test_scan_strings();
    test_scan_large();
    test_json_limits();
    return sb_test_finish("body");
}
