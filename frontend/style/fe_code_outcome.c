/*
 * fe_code_outcome: what a code_interpreter_call's run came to (see
 * fe_code_outcome.h for the rules), shared by the Messages and Generate
 * Content styles, whose shapes each say it their own way.
 */
#include "fe_code_outcome.h"

#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

/* The worker's note at the end of what the model reads when the sandbox
 * stopped the code at its wall time (worker/wloop_code.c); read only when
 * the item has no sb_outcome. */
#define FE_CODE_TIMEOUT_NOTE "[The code was stopped: it ran out of time.]"

static bool fe_code_is(const json_t *v, const char *s)
{
    return json_is_string(v) && !strcmp(json_string_value(v), s);
}

static bool fe_code_ident_start(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static bool fe_code_ident_char(char c)
{
    return fe_code_ident_start(c) || (c >= '0' && c <= '9');
}

/* Whether a line (no newline; a trailing '\r' allowed) is an exception
 * line: "Name", "pkg.Name", "Name: message" or "Name:". */
static bool fe_code_exception_line(const char *p, size_t n)
{
    if (n > 0 && p[n - 1] == '\r')
        n--;
    size_t i = 0;
    for (;;) {
        if (i >= n || !fe_code_ident_start(p[i]))
            return false;
        while (i < n && fe_code_ident_char(p[i]))
            i++;
        if (i < n && p[i] == '.') {
            i++;
            continue;
        }
        break;
    }
    return i == n || (p[i] == ':' && (i + 1 == n || p[i + 1] == ' '));
}

/* The offset of the line after the one starting at off (n when none). */
static size_t fe_code_next_line(const char *s, size_t n, size_t off)
{
    const char *nl = memchr(s + off, '\n', n - off);
    return nl ? (size_t)(nl - s) + 1 : n;
}

bool fe_code_traceback(const char *s, size_t n)
{
    static const char head[] = "Traceback (most recent call last):";
    static const char frame[] = "  File \"";
    const size_t hn = sizeof head - 1, fn = sizeof frame - 1;
    if (!s)
        return false;
    size_t anchor = n; /* the line the traceback starts at */
    bool framed = false;
    for (size_t off = 0; off < n; off = fe_code_next_line(s, n, off)) {
        if (n - off >= hn && !memcmp(s + off, head, hn)) {
            anchor = off;
            framed = true;
        } else if (!framed && anchor == n && n - off >= fn && !memcmp(s + off, frame, fn)) {
            anchor = off;
        }
    }
    if (anchor == n)
        return false;
    for (size_t off = fe_code_next_line(s, n, anchor); off < n; off = fe_code_next_line(s, n, off)) {
        size_t end = fe_code_next_line(s, n, off);
        size_t len = end - off - (end > off && s[end - 1] == '\n');
        if (len == 0 || s[off] == ' ' || s[off] == '\t' || (len == 1 && s[off] == '\r'))
            continue;
        return fe_code_exception_line(s + off, len);
    }
    return false;
}

json_t *fe_code_logs(const json_t *item)
{
    size_t total = 0, i;
    json_t *o;
    json_array_foreach (json_object_get(item, "outputs"), i, o)
        if (fe_code_is(json_object_get(o, "type"), "logs"))
            total += json_string_length(json_object_get(o, "logs"));
    char *buf = sb_xmalloc(total + 1);
    size_t off = 0;
    json_array_foreach (json_object_get(item, "outputs"), i, o) {
        json_t *logs = json_object_get(o, "logs");
        if (!fe_code_is(json_object_get(o, "type"), "logs") || !json_is_string(logs))
            continue;
        memcpy(buf + off, json_string_value(logs), json_string_length(logs));
        off += json_string_length(logs);
    }
    json_t *out = json_stringn(buf, off);
    free(buf);
    return out ? out : json_string("");
}

fe_code_outcome_t fe_code_outcome(const json_t *item)
{
    if (fe_code_is(json_object_get(item, "status"), "failed"))
        return FE_CODE_FAILED;
    json_t *how = json_object_get(item, "sb_outcome");
    if (json_is_string(how)) {
        const char *h = json_string_value(how);
        if (!strcmp(h, "timeout"))
            return FE_CODE_TIMEOUT;
        if (!strcmp(h, "unavailable"))
            return FE_CODE_FAILED;
        if (!strcmp(h, "error") || !strcmp(h, "killed"))
            return FE_CODE_ERROR;
        if (!strcmp(h, "ok"))
            return FE_CODE_OK;
    }
    const char *told = json_string_value(json_object_get(item, "sb_output"));
    if (told && strstr(told, FE_CODE_TIMEOUT_NOTE))
        return FE_CODE_TIMEOUT;
    json_t *logs = fe_code_logs(item);
    bool raised = fe_code_traceback(json_string_value(logs), json_string_length(logs));
    json_decref(logs);
    return raised ? FE_CODE_ERROR : FE_CODE_OK;
}
