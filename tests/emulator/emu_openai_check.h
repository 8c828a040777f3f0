/*
 * emu_openai_check: what the two OpenAI validators share
 * (emu_openai_chat_check.c for Chat Completions,
 * emu_openai_responses_check.c for Responses): OpenAI's wording of the
 * typed-field checks of emu_check.h, the checks whose messages the two APIs
 * word alike (ranges, enums, names, image URLs, file data) and the body check
 * both run first. Every failing check answers 400 invalid_request_error in
 * OpenAI's body and returns false.
 */
#ifndef SB_EMU_OPENAI_CHECK_H
#define SB_EMU_OPENAI_CHECK_H

#include <jansson.h>
#include <stdbool.h>

#include "emu_check.h"

struct sb_emu_call;

/* OpenAI's wording: "Missing required parameter: 'p'." and "Invalid type for 'p': expected a string, but got an
 * integer instead." */
extern const struct sb_emu_words sb_emu_openai_words;

/* The JSON type of v as OpenAI's messages name it: "an object", "a decimal", "null"... */
const char *sb_emu_openai_type_phrase(const json_t *v);
/* sb_emu_check_type and words->missing in OpenAI's words. */
bool sb_emu_openai_check_type(struct sb_emu_call *call, const json_t *v, const char *param, enum sb_emu_want w);
bool sb_emu_openai_missing(struct sb_emu_call *call, const char *param);

/* The top-level parameter name, when present and not null: of type w (a number) and within min..max. */
bool sb_emu_openai_check_range(struct sb_emu_call *call, const char *name, enum sb_emu_want w, double min, double max);
/* v (may be NULL or null: fine) is a string among values ("Invalid value: 'x'. Supported values are: <phrase>."). */
bool sb_emu_openai_check_enum(struct sb_emu_call *call, const json_t *v, const char *param, const char *const *values,
                              const char *phrase);
/* A function or tool name OpenAI accepts: 1 to 64 of a-z, A-Z, 0-9, '_' and '-'. */
bool sb_emu_openai_valid_name(const char *s);
/* An image URL (at param) is http(s) or a base64 data URL of a PNG, JPEG, GIF or WebP image. */
bool sb_emu_openai_check_image_url(struct sb_emu_call *call, const char *url, const char *param);
/*
 * metadata (md, an object): at most 16 entries, keys of at most 64 characters
 * (key_too_long words that error: the two APIs say it differently), string
 * values of at most 512 characters.
 */
bool sb_emu_openai_check_metadata(struct sb_emu_call *call, const json_t *md,
                                  bool (*key_too_long)(struct sb_emu_call *call, const char *key));
/* Whether the text of any item of list (a "content" string, or its parts' "text") mentions "json" in any case:
 * what response_format / text.format json_object needs. */
bool sb_emu_openai_mention_json(const json_t *list);
/* A file part's file_data (at param) is a base64 data URL with a MIME type. */
bool sb_emu_openai_check_file_data(struct sb_emu_call *call, const char *data, const char *param);

#endif
