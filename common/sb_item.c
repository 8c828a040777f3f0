/*
 * sb_item: the item, part and role names and their enums (see sb_item.h).
 * One table each, indexed by the enum, so a name is spelled once.
 */
#include "sb_item.h"

#include <string.h>

static const char *const sb_item_names[] = {
    [SB_ITEM_UNKNOWN] = "unknown",
    [SB_ITEM_MESSAGE] = "message",
    [SB_ITEM_FUNCTION_CALL] = "function_call",
    [SB_ITEM_FUNCTION_CALL_OUTPUT] = "function_call_output",
    [SB_ITEM_REASONING] = "reasoning",
};

static const char *const sb_part_names[] = {
    [SB_PART_UNKNOWN] = "unknown",           [SB_PART_INPUT_TEXT] = "input_text",
    [SB_PART_OUTPUT_TEXT] = "output_text",   [SB_PART_INPUT_IMAGE] = "input_image",
    [SB_PART_INPUT_FILE] = "input_file",     [SB_PART_INPUT_AUDIO] = "input_audio",
    [SB_PART_REFUSAL] = "refusal",           [SB_PART_REASONING_TEXT] = "reasoning_text",
    [SB_PART_SUMMARY_TEXT] = "summary_text",
};

static const char *const sb_role_names[] = {
    [SB_ROLE_UNKNOWN] = "unknown", [SB_ROLE_SYSTEM] = "system",       [SB_ROLE_DEVELOPER] = "developer",
    [SB_ROLE_USER] = "user",       [SB_ROLE_ASSISTANT] = "assistant",
};

#define SB_ITEM_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The index of name in names[1..n) (0, the unknown entry, is never matched). */
static int sb_item_lookup(const char *const *names, size_t n, const char *name)
{
    for (size_t i = 1; name && i < n; i++)
        if (!strcmp(name, names[i]))
            return (int)i;
    return 0;
}

static const char *sb_item_spell(const char *const *names, size_t n, int v)
{
    return v >= 0 && (size_t)v < n ? names[v] : names[0];
}

enum sb_item_type sb_item_type_named(const char *name)
{
    return (enum sb_item_type)sb_item_lookup(sb_item_names, SB_ITEM_COUNT(sb_item_names), name);
}

enum sb_item_type sb_item_type_of(const json_t *item)
{
    return sb_item_type_named(json_string_value(json_object_get(item, "type")));
}

const char *sb_item_type_name(enum sb_item_type t)
{
    return sb_item_spell(sb_item_names, SB_ITEM_COUNT(sb_item_names), (int)t);
}

enum sb_part_type sb_part_type_named(const char *name)
{
    return (enum sb_part_type)sb_item_lookup(sb_part_names, SB_ITEM_COUNT(sb_part_names), name);
}

enum sb_part_type sb_part_type_of(const json_t *part)
{
    return sb_part_type_named(json_string_value(json_object_get(part, "type")));
}

const char *sb_part_type_name(enum sb_part_type t)
{
    return sb_item_spell(sb_part_names, SB_ITEM_COUNT(sb_part_names), (int)t);
}

enum sb_role sb_role_named(const char *name)
{
    return (enum sb_role)sb_item_lookup(sb_role_names, SB_ITEM_COUNT(sb_role_names), name);
}

enum sb_role sb_role_of(const json_t *item)
{
    return sb_role_named(json_string_value(json_object_get(item, "role")));
}

const char *sb_role_name(enum sb_role r)
{
    return sb_item_spell(sb_role_names, SB_ITEM_COUNT(sb_role_names), (int)r);
}
