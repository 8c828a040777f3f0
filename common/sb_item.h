/*
 * sb_item: the vocabulary of the canonical job's input (sb_job.h) and output
 * (sb_event.h) items as enums: item types, content part types and roles,
 * each with one *_of() that reads it from a JSON object, one *_named() that
 * reads it from a string, and one *_name() that spells it, in the pattern of
 * sb_event_type_of. Styles and adapters switch on these instead of
 * re-spelling "input_text" in every file.
 *
 * A type this vocabulary does not know is *_UNKNOWN (0), not an error:
 * whether an unknown item is refused or passed on (the Responses adapter
 * passes replayed built-in tool calls such as web_search_call) is the
 * caller's decision.
 */
#ifndef SB_ITEM_H
#define SB_ITEM_H

#include <jansson.h>

/* Items: the elements of request.input and of a response's output. */
enum sb_item_type {
    SB_ITEM_UNKNOWN = 0,
    SB_ITEM_MESSAGE,              /* {"type":"message","role","content":[part...]} */
    SB_ITEM_FUNCTION_CALL,        /* {"type":"function_call","call_id","name","arguments"} */
    SB_ITEM_FUNCTION_CALL_OUTPUT, /* {"type":"function_call_output","call_id","output"} */
    SB_ITEM_REASONING,            /* {"type":"reasoning","summary":[..],"content":[..]} */
};

/* Content parts: the elements of a message's content (and of a reasoning
 * item's content and summary). */
enum sb_part_type {
    SB_PART_UNKNOWN = 0,
    SB_PART_INPUT_TEXT,     /* {"type":"input_text","text"} */
    SB_PART_OUTPUT_TEXT,    /* {"type":"output_text","text","annotations"} */
    SB_PART_INPUT_IMAGE,    /* {"type":"input_image","image_url"|"file_id","detail"?} */
    SB_PART_INPUT_FILE,     /* {"type":"input_file","filename","file_data"|"file_id"} */
    SB_PART_INPUT_AUDIO,    /* {"type":"input_audio","input_audio":{"data","format"}} */
    SB_PART_REFUSAL,        /* {"type":"refusal","refusal"}: assistant turns only */
    SB_PART_REASONING_TEXT, /* {"type":"reasoning_text","text"}: a reasoning item's content */
    SB_PART_SUMMARY_TEXT,   /* {"type":"summary_text","text"}: a reasoning item's summary */
};

/* The roles of a message item. */
enum sb_role {
    SB_ROLE_UNKNOWN = 0,
    SB_ROLE_SYSTEM,
    SB_ROLE_DEVELOPER,
    SB_ROLE_USER,
    SB_ROLE_ASSISTANT,
};

/* item's "type" (UNKNOWN when item is not an object, has no string type, or
 * one not listed above). */
enum sb_item_type sb_item_type_of(const json_t *item);
enum sb_item_type sb_item_type_named(const char *name);
/* The type's name; "unknown" for UNKNOWN or an out-of-range value. */
const char *sb_item_type_name(enum sb_item_type t);

enum sb_part_type sb_part_type_of(const json_t *part);
enum sb_part_type sb_part_type_named(const char *name);
const char *sb_part_type_name(enum sb_part_type t);

/* A message item's "role". */
enum sb_role sb_role_of(const json_t *item);
enum sb_role sb_role_named(const char *name);
const char *sb_role_name(enum sb_role r);

#endif
