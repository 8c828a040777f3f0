/* test_items: Responses input normalisation, ids, part walking and the
 * call_id check (fe_items.c). The route table is test_router.c's. */
#include <jansson.h>
#include <stdlib.h>

#include "fe_items.h"
#include "sb_test.h"

static json_t *norm(const char *text, fe_error_t *err)
{
    json_t *in = json_loads(text, JSON_DECODE_ANY, NULL);
    memset(err, 0, sizeof *err);
    json_t *out = fe_items_normalize(in, "input", err);
    json_decref(in);
    return out;
}

static void test_normalize(void)
{
    fe_error_t err;
    json_t *items = norm("\"hello\"", &err);
    CHECK_STR(json_string_value(
                  json_object_get(json_array_get(json_object_get(json_array_get(items, 0), "content"), 0), "text")),
              "hello");
    json_decref(items);
    items = norm("[{\"role\":\"assistant\",\"content\":\"a\"},{\"type\":\"message\",\"role\":\"developer\","
                 "\"content\":[{\"type\":\"input_text\",\"text\":\"d\"},{\"type\":\"input_image\","
                 "\"image_url\":\"data:image/png;base64,AAAA\",\"detail\":\"low\"},{\"type\":\"input_file\","
                 "\"file_id\":\"file-1\"}]},{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\","
                 "\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"ok\"}]",
                 &err);
    CHECK_INT(json_array_size(items), 4);
    CHECK_STR(json_string_value(
                  json_object_get(json_array_get(json_object_get(json_array_get(items, 0), "content"), 0), "type")),
              "output_text");
    fe_items_assign_ids(items);
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it)
        CHECK(json_is_string(json_object_get(it, "id")));
    CHECK(strncmp(json_string_value(json_object_get(json_array_get(items, 2), "id")), "fc_", 3) == 0);
    CHECK_INT(fe_items_check_calls(items, &err), 0);
    json_decref(items);

    const char *bad[] = {
        "42",
        "[1]",
        "[{\"role\":\"robot\",\"content\":\"x\"}]",
        "[{\"role\":\"user\",\"content\":5}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"ftp://x\"}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_image\",\"image_url\":\"data:text/plain;base64,AA\"}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_audio\",\"input_audio\":{}}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_data\":\"data:a/b;base64,AA\"}]}]",
        "[{\"role\":\"user\",\"content\":[{\"type\":\"input_file\",\"file_url\":\"https://x\"}]}]",
        "[{\"type\":\"function_call\",\"name\":\"f\"}]",
        "[{\"type\":\"function_call_output\",\"call_id\":\"\",\"output\":\"x\"}]",
        "[{\"type\":\"item_reference\",\"id\":\"x\"}]",
        "[{\"type\":\"reasoning\",\"summary\":\"x\"}]"};
    for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
        json_t *out = norm(bad[k], &err);
        CHECK(out == NULL);
        CHECK_INT(err.status, 400);
        if (out)
            fprintf(stderr, "accepted: %s\n", bad[k]);
        json_decref(out);
    }
}

static void test_check_calls(void)
{
    fe_error_t err;
    json_t *items = norm("[{\"type\":\"function_call_output\",\"call_id\":\"c1\",\"output\":\"x\"},"
                         "{\"type\":\"function_call\",\"call_id\":\"c1\",\"name\":\"f\",\"arguments\":\"{}\"}]",
                         &err);
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_items_check_calls(items, &err), -1); /* the output comes before its call */
    CHECK_INT(err.status, 400);
    CHECK(strstr(err.message, "c1") != NULL);
    json_decref(items);
}

static bool count_part(json_t *part, void *arg)
{
    (void)part;
    ++*(int *)arg;
    return true;
}

static void test_foreach(void)
{
    fe_error_t err;
    json_t *items = norm("[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"a\"},"
                         "{\"type\":\"input_text\",\"text\":\"b\"}]},{\"type\":\"function_call\",\"call_id\":\"c\","
                         "\"name\":\"f\",\"arguments\":\"{}\"},{\"type\":\"function_call_output\",\"call_id\":\"c\","
                         "\"output\":[{\"type\":\"input_text\",\"text\":\"r\"}]}]",
                         &err);
    int n = 0;
    fe_items_foreach_part(items, count_part, &n);
    CHECK_INT(n, 3);
    json_decref(items);
}

int main(void)
{
    test_normalize();
    test_check_calls();
    test_foreach();
    return sb_test_finish("items");
}
