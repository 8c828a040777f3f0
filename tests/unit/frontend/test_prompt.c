/* test_prompt: fe_prompt_render (template + variables -> instructions and
 * items) and fe_prompt_check_ref, without a database. */
#include <jansson.h>
#include <stdlib.h>

#include "fe_prompt.h"
#include "sb_test.h"

static json_t *J(const char *text)
{
    json_error_t e;
    json_t *v = json_loads(text, 0, &e);
    if (!v)
        fprintf(stderr, "bad test JSON: %s: %s\n", text, e.text);
    return v;
}

static char *render(const char *body, const char *vars, json_t **instr, fe_error_t *err)
{
    json_t *b = J(body), *v = vars ? J(vars) : NULL;
    memset(err, 0, sizeof *err);
    json_t *items = fe_prompt_render(b, v, instr, err);
    char *out = items ? json_dumps(items, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    json_decref(items);
    json_decref(b);
    json_decref(v);
    return out;
}

static void test_instructions(void)
{
    json_t *instr = NULL;
    fe_error_t err;
    char *items = render("{\"instructions\":\"Talk about {{topic}} to {{ who }}; {{topic}} again. {{not a var}}\"}",
                         "{\"topic\":\"cats\",\"who\":{\"type\":\"input_text\",\"text\":\"Ann\"}}", &instr, &err);
    CHECK_STR(items, "[]");
    CHECK_STR(json_string_value(instr), "Talk about cats to Ann; cats again. {{not a var}}");
    free(items);
    json_decref(instr);
}

static void test_items_and_parts(void)
{
    json_t *instr = NULL;
    fe_error_t err;
    char *items = render("{\"input\":[{\"role\":\"user\",\"content\":\"Look at {{img}} and say {{word}}.\"}]}",
                         "{\"img\":{\"type\":\"input_image\",\"image_url\":\"https://x.test/a.png\"},\"word\":\"hi\"}",
                         &instr, &err);
    CHECK(instr == NULL);
    CHECK_STR(items, "[{\"content\":[{\"text\":\"Look at \",\"type\":\"input_text\"},"
                     "{\"image_url\":\"https://x.test/a.png\",\"type\":\"input_image\"},"
                     "{\"text\":\" and say hi.\",\"type\":\"input_text\"}],\"role\":\"user\",\"type\":\"message\"}]");
    free(items);
    /* A part that is the whole text leaves no empty text parts. */
    items = render("{\"input\":[{\"role\":\"user\",\"content\":\"{{f}}\"}]}",
                   "{\"f\":{\"type\":\"input_file\",\"file_id\":\"file-1\"}}", &instr, &err);
    CHECK_STR(items, "[{\"content\":[{\"file_id\":\"file-1\",\"type\":\"input_file\"}],\"role\":\"user\","
                     "\"type\":\"message\"}]");
    free(items);
}

static void test_errors(void)
{
    json_t *instr = NULL;
    fe_error_t err;
    char *items = render("{\"instructions\":\"{{a}} {{b}} {{a}}\"}", "{\"b\":\"x\"}", &instr, &err);
    CHECK(items == NULL);
    CHECK_INT(err.status, 400);
    CHECK(strstr(err.message, "Missing prompt variables: a") != NULL);
    CHECK(instr == NULL);
    /* A part where only text can go. */
    items = render("{\"instructions\":\"{{img}}\"}",
                   "{\"img\":{\"type\":\"input_image\",\"image_url\":\"https://x.t/\"}}", &instr, &err);
    CHECK(items == NULL);
    CHECK_INT(err.status, 400);
    /* A part variable that is itself invalid. */
    items = render("{\"input\":[{\"role\":\"user\",\"content\":\"{{img}}\"}]}",
                   "{\"img\":{\"type\":\"input_image\",\"image_url\":\"ftp://nope\"}}", &instr, &err);
    CHECK(items == NULL);
    CHECK_INT(err.status, 400);
    /* Unclosed braces are text. */
    items = render("{\"instructions\":\"a {{b\"}", NULL, &instr, &err);
    CHECK_STR(items, "[]");
    CHECK_STR(json_string_value(instr), "a {{b");
    free(items);
    json_decref(instr);
}

static void test_check_ref(void)
{
    const char *good[] = {
        "{\"id\":\"pmpt_1\"}", "{\"id\":\"pmpt_1\",\"version\":\"12\"}",
        "{\"id\":\"p\",\"variables\":{\"a\":\"x\",\"b\":{\"type\":\"input_file\",\"file_id\":\"f\"}}}"};
    const char *bad[] = {"[]",
                         "{}",
                         "{\"id\":\"\"}",
                         "{\"id\":\"p\",\"version\":\"v2\"}",
                         "{\"id\":\"p\",\"version\":3}",
                         "{\"id\":\"p\",\"variables\":[]}",
                         "{\"id\":\"p\",\"variables\":{\"a\":1}}",
                         "{\"id\":\"p\",\"variables\":{\"a\":{\"type\":\"output_text\",\"text\":\"x\"}}}"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        json_t *v = J(good[i]);
        fe_error_t err = {0};
        CHECK_INT(fe_prompt_check_ref(v, &err), 0);
        json_decref(v);
    }
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        json_t *v = J(bad[i]);
        fe_error_t err = {0};
        CHECK_INT(fe_prompt_check_ref(v, &err), -1);
        CHECK_INT(err.status, 400);
        json_decref(v);
    }
}

int main(void)
{
    test_instructions();
    test_items_and_parts();
    test_errors();
    test_check_ref();
    return sb_test_finish("prompt");
}
