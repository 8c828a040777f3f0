/*
 * emu_check: the typed-field checks the four request validators share
 * (emu_openai_chat_check.c, emu_openai_responses_check.c,
 * emu_anthropic_check.c, emu_gemini_check.c): building a parameter path,
 * "is this JSON value of the type the field wants", "is this string one of
 * these", "which key of this object is not allowed", and "obj.name is present
 * and typed".
 *
 * Only the mechanics live here. Every error a check raises is worded by the
 * protocol that asked, because the emulator is the tests' oracle and each
 * provider words the same mistake its own way ("Invalid type for 'x':
 * expected a string, but got an integer instead." at OpenAI, "x: Input
 * should be a valid string" at Anthropic): a validator hands its wording in
 * as a struct sb_emu_words.
 */
#ifndef SB_EMU_CHECK_H
#define SB_EMU_CHECK_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sb_emu_call;

/* Room for a parameter path such as "input[3].content[0].image_url" (longer ones are cut; they only go into
 * messages). */
#define SB_EMU_PATH_MAX 160

/* The JSON type a field wants. */
enum sb_emu_want {
    SB_EMU_W_STRING,
    SB_EMU_W_BOOL,
    SB_EMU_W_INT,
    SB_EMU_W_NUMBER, /* an integer or a real */
    SB_EMU_W_OBJECT,
    SB_EMU_W_ARRAY,
};

/*
 * How one protocol words the errors of the shared checks. Each function
 * answers the call with the provider's 400 and returns false.
 */
struct sb_emu_words {
    /* A required field is absent (path names it). */
    bool (*missing)(struct sb_emu_call *call, const char *path);
    /* v, at path, is not of type w. */
    bool (*wrong_type)(struct sb_emu_call *call, const json_t *v, const char *path, enum sb_emu_want w);
};

/* snprintf for parameter paths (truncation is harmless: paths only go into messages). */
void sb_emu_pathf(char *out, size_t outlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* "<prefix>.<name>", or "<name>" when prefix is "". */
void sb_emu_path_join(char *out, size_t outlen, const char *prefix, const char *name);

/* Whether v is of type w (false for NULL). */
bool sb_emu_is_type(const json_t *v, enum sb_emu_want w);
/* true when v is of type w; otherwise words->wrong_type answers and this returns false. */
bool sb_emu_check_type(struct sb_emu_call *call, const struct sb_emu_words *words, const json_t *v, const char *path,
                       enum sb_emu_want w);
/*
 * obj.name (reported as "<prefix>.<name>") is of type w. Absent is fine
 * unless required (words->missing answers); null counts as absent when the
 * field is optional, and as a wrong type when it is required.
 */
bool sb_emu_check_field(struct sb_emu_call *call, const struct sb_emu_words *words, const json_t *obj,
                        const char *prefix, const char *name, enum sb_emu_want w, bool required);

/* Whether s is one of list (NULL-terminated), exactly / ignoring ASCII case. */
bool sb_emu_in_list(const char *s, const char *const *list);
bool sb_emu_in_list_nocase(const char *s, const char *const *list);
/* The first key of obj (in the body's order) that is not in allowed (NULL-terminated), or NULL. Borrowed from obj. */
const char *sb_emu_extra_key(const json_t *obj, const char *const *allowed);

#endif
