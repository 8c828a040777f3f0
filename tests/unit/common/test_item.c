/*
 * Unit test of sb_item: every item type, part type and role reads from JSON
 * and from its name and spells back to it; unknown names, wrong JSON types
 * and out-of-range values are UNKNOWN / "unknown".
 */
#include <string.h>

#include "sb_item.h"
#include "sb_test.h"

static void test_items(void)
{
    static const char *const names[] = {"message", "function_call", "function_call_output", "reasoning"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        enum sb_item_type t = sb_item_type_named(names[i]);
        CHECK_INT(t, i + 1);
        CHECK_STR(sb_item_type_name(t), names[i]);
        json_t *item = json_pack("{s:s}", "type", names[i]);
        CHECK_INT(sb_item_type_of(item), t);
        json_decref(item);
    }
    CHECK_INT(SB_ITEM_MESSAGE, 1);
    CHECK_INT(sb_item_type_named("web_search_call"), SB_ITEM_UNKNOWN);
    CHECK_INT(sb_item_type_named("unknown"), SB_ITEM_UNKNOWN);
    CHECK_INT(sb_item_type_named("Message"), SB_ITEM_UNKNOWN);
    CHECK_INT(sb_item_type_named(NULL), SB_ITEM_UNKNOWN);
    CHECK_STR(sb_item_type_name(SB_ITEM_UNKNOWN), "unknown");
    CHECK_STR(sb_item_type_name((enum sb_item_type)99), "unknown");
    CHECK_STR(sb_item_type_name((enum sb_item_type) - 1), "unknown");
    json_t *odd = json_pack("{s:i}", "type", 1);
    CHECK_INT(sb_item_type_of(odd), SB_ITEM_UNKNOWN);
    CHECK_INT(sb_item_type_of(NULL), SB_ITEM_UNKNOWN);
    json_t *arr = json_array();
    CHECK_INT(sb_item_type_of(arr), SB_ITEM_UNKNOWN);
    json_decref(arr);
    json_decref(odd);
}

static void test_parts(void)
{
    static const char *const names[] = {"input_text",  "output_text", "input_image",    "input_file",
                                        "input_audio", "refusal",     "reasoning_text", "summary_text"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        enum sb_part_type t = sb_part_type_named(names[i]);
        CHECK_INT(t, i + 1);
        CHECK_STR(sb_part_type_name(t), names[i]);
        json_t *part = json_pack("{s:s, s:s}", "type", names[i], "text", "x");
        CHECK_INT(sb_part_type_of(part), t);
        json_decref(part);
    }
    CHECK_INT(sb_part_type_named("text"), SB_PART_UNKNOWN);
    CHECK_INT(sb_part_type_of(NULL), SB_PART_UNKNOWN);
    CHECK_STR(sb_part_type_name((enum sb_part_type)42), "unknown");
}

static void test_roles(void)
{
    static const char *const names[] = {"system", "developer", "user", "assistant"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        enum sb_role r = sb_role_named(names[i]);
        CHECK_INT(r, i + 1);
        CHECK_STR(sb_role_name(r), names[i]);
        json_t *item = json_pack("{s:s, s:s}", "type", "message", "role", names[i]);
        CHECK_INT(sb_role_of(item), r);
        json_decref(item);
    }
    CHECK_INT(sb_role_named("tool"), SB_ROLE_UNKNOWN);
    CHECK_INT(sb_role_named("model"), SB_ROLE_UNKNOWN);
    json_t *item = json_pack("{s:s}", "type", "message");
    CHECK_INT(sb_role_of(item), SB_ROLE_UNKNOWN);
    json_decref(item);
    CHECK_STR(sb_role_name(SB_ROLE_UNKNOWN), "unknown");
}

int main(void)
{
    test_items();
    test_parts();
    test_roles();
    return sb_test_finish("test_item");
}
