/*
 * fe_messages_fail: the Messages style's 400s in Anthropic's wording
 * ("<param>: <text>"), and its string test: what every file of the style
 * builds on (parse, content, tools), so it sits below them all and none of
 * them imports another for it.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fe_messages_parse.h"
#include "sb_event.h"

/* A 400 in Anthropic's wording, "<param>: <text>" (param may be NULL). */
static void fe_messages_vfail(fe_error_t *err, const char *code, const char *param, const char *fmt, va_list ap)
{
    char text[sizeof err->message];
    vsnprintf(text, sizeof text, fmt, ap);
    if (param)
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, code, param, "%s: %s", param, text);
    else
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, code, NULL, "%s", text);
}

/* fe_messages_vfail for functions returning int: always -1. */
int fe_messages_fail(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_messages_vfail(err, code, param, fmt, ap);
    va_end(ap);
    return -1;
}

/* The same, for functions returning a new value: always NULL. */
json_t *fe_messages_fail_null(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fe_messages_vfail(err, code, param, fmt, ap);
    va_end(ap);
    return NULL;
}

bool fe_messages_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}
