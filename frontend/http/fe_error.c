/*
 * fe_error: the style-neutral error (fe_error.h): set from a message or from
 * a canonical error event. Each style renders it in its own body.
 */
#include "fe_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sb_errkind.h"
#include "sb_event.h"
#include "sb_utf8.h"

/* vsnprintf may cut a multi-byte UTF-8 sequence at the buffer's end; drop the
 * partial tail so the message stays valid JSON text. */
static void fe_error_trim_utf8(char *s)
{
    size_t n = strlen(s);
    size_t i = n;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n - (i - 1) < need)
        s[i - 1] = '\0';
}

void fe_error_set(fe_error_t *e, int status, const char *kind, const char *code, const char *param, const char *fmt,
                  ...)
{
    e->status = status;
    e->kind = kind;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    fe_error_trim_utf8(e->message);
    /* A message may quote a client's bytes (a decoded path): JSON needs
     * valid UTF-8, or the error would go out without its body. */
    sb_utf8_fix(e->message);
    sb_utf8_fix(e->param);
    e->retry_after = 0;
    e->no_retry = false;
}

void fe_error_from_event(fe_error_t *e, const json_t *ev)
{
    json_t *st = json_object_get(ev, "status");
    int status = json_is_integer(st) ? (int)json_integer_value(st) : 502;
    if (status < 400 || status > 599)
        status = 502;
    const char *msg = json_string_value(json_object_get(ev, "message"));
    fe_error_set(e, status, sb_errkind_intern(json_string_value(json_object_get(ev, "kind"))),
                 json_string_value(json_object_get(ev, "code")), NULL, "%s", msg && *msg ? msg : "upstream error");
    json_t *ra = json_object_get(ev, "retry_after");
    if (json_is_integer(ra) && json_integer_value(ra) > 0)
        e->retry_after = (int)json_integer_value(ra);
    /* 429s say which one they are, as OpenAI's codes do. */
    if (e->status == 429 && !e->code[0])
        snprintf(e->code, sizeof e->code, "%s",
                 !strcmp(e->kind, SB_ERR_QUOTA) ? "insufficient_quota" : "rate_limit_exceeded");
    if (!strcmp(e->kind, SB_ERR_QUOTA))
        e->no_retry = true;
}
