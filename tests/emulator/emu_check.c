/*
 * emu_check: the typed-field checks the four request validators share
 * (see emu_check.h). Nothing here writes a message: a check that fails hands
 * the call to the protocol's own wording (struct sb_emu_words).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "emu_check.h"

void sb_emu_pathf(char *out, size_t outlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, outlen, fmt, ap);
    va_end(ap);
}

void sb_emu_path_join(char *out, size_t outlen, const char *prefix, const char *name)
{
    sb_emu_pathf(out, outlen, "%s%s%s", prefix, *prefix ? "." : "", name);
}

bool sb_emu_is_type(const json_t *v, enum sb_emu_want w)
{
    switch (w) {
    case SB_EMU_W_STRING:
        return json_is_string(v);
    case SB_EMU_W_BOOL:
        return json_is_boolean(v);
    case SB_EMU_W_INT:
        return json_is_integer(v);
    case SB_EMU_W_NUMBER:
        return json_is_number(v);
    case SB_EMU_W_OBJECT:
        return json_is_object(v);
    case SB_EMU_W_ARRAY:
        return json_is_array(v);
    }
    return false;
}

bool sb_emu_check_type(struct sb_emu_call *call, const struct sb_emu_words *words, const json_t *v, const char *path,
                       enum sb_emu_want w)
{
    return sb_emu_is_type(v, w) || words->wrong_type(call, v, path, w);
}

bool sb_emu_check_field(struct sb_emu_call *call, const struct sb_emu_words *words, const json_t *obj,
                        const char *prefix, const char *name, enum sb_emu_want w, bool required)
{
    char path[SB_EMU_PATH_MAX];
    sb_emu_path_join(path, sizeof path, prefix, name);
    json_t *v = json_object_get(obj, name);
    if (!v || (json_is_null(v) && !required))
        return required ? words->missing(call, path) : true;
    return sb_emu_check_type(call, words, v, path, w);
}

bool sb_emu_in_list(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcmp(s, *list))
            return true;
    return false;
}

bool sb_emu_in_list_nocase(const char *s, const char *const *list)
{
    for (; *list; list++)
        if (!strcasecmp(s, *list))
            return true;
    return false;
}

const char *sb_emu_extra_key(const json_t *obj, const char *const *allowed)
{
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)obj, key, v) {
        if (!sb_emu_in_list(key, allowed))
            return key;
    }
    return NULL;
}
