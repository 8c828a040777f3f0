/*
 * emu_directives: the in-band test controls. A test steers the emulator by
 * writing "[[emu:...]]" tokens or "CALL name {json}" lines into the last user
 * message; every protocol file reads them the same way, so one integration
 * test idea works against every provider format. The syntax is documented at
 * the top of main.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "sb_alloc.h"

#define DIRECTIVE_OPEN "[[emu:"
#define DIRECTIVE_CLOSE "]]"

static int parse_long(const char *s, size_t len, long min, long max, long *out)
{
    char buf[32];
    if (len == 0 || len >= sizeof buf)
        return -EINVAL;
    memcpy(buf, s, len);
    buf[len] = '\0';
    char *end = NULL;
    errno = 0;
    long v = strtol(buf, &end, 10);
    if (errno || *end != '\0' || v < min || v > max)
        return -EINVAL;
    *out = v;
    return 0;
}

/* Applies one directive "name" or "name=value" (not NUL-terminated). */
static int apply_directive(const char *s, size_t len, struct sb_emu_directives *d, char *err, size_t errlen)
{
    const char *eq = memchr(s, '=', len);
    size_t nlen = eq ? (size_t)(eq - s) : len;
    const char *val = eq ? eq + 1 : NULL;
    size_t vlen = eq ? len - nlen - 1 : 0;
    long v = 0;

#define NAME_IS(lit) (nlen == sizeof(lit) - 1 && memcmp(s, lit, nlen) == 0)
    if (NAME_IS("hang") && !val) {
        d->hang = true;
    } else if (NAME_IS("drop") && !val) {
        d->drop = true;
    } else if (NAME_IS("length") && !val) {
        d->length = true;
    } else if (NAME_IS("malformed") && !val) {
        d->malformed = true;
    } else if (NAME_IS("refuse") && !val) {
        d->refuse = true;
    } else if (NAME_IS("schema_violation") && !val) {
        d->violate = true;
    } else if (NAME_IS("schema_violation_once") && val) {
        if (vlen == 0 || vlen > SB_EMU_TAG_MAX)
            goto bad_value;
        memcpy(d->violate_tag, val, vlen);
        d->violate_tag[vlen] = '\0';
    } else if (NAME_IS("status") && val) {
        if (parse_long(val, vlen, 400, 599, &v) < 0)
            goto bad_value;
        d->status = (int)v;
    } else if (NAME_IS("latency") && val) {
        if (parse_long(val, vlen, 0, 600000, &v) < 0)
            goto bad_value;
        d->latency_ms = (int)v;
    } else if (NAME_IS("chunk_delay") && val) {
        if (parse_long(val, vlen, 0, 60000, &v) < 0)
            goto bad_value;
        d->chunk_delay_ms = (int)v;
    } else if (NAME_IS("hang_after") && val) {
        if (parse_long(val, vlen, 0, 1000000, &v) < 0)
            goto bad_value;
        d->hang_after = v;
    } else if (NAME_IS("drop_after") && val) {
        if (parse_long(val, vlen, 0, 1000000, &v) < 0)
            goto bad_value;
        d->drop_after = v;
    } else if (NAME_IS("retry_after") && val) {
        if (parse_long(val, vlen, 0, 86400, &v) < 0)
            goto bad_value;
        d->retry_after = (int)v;
    } else if (NAME_IS("quota") && !val) {
        d->quota = true;
    } else if (NAME_IS("trickle") && val) {
        if (parse_long(val, vlen, 1, 60000, &v) < 0)
            goto bad_value;
        d->trickle_ms = (int)v;
    } else if (NAME_IS("reset") && !val) {
        d->reset = true;
    } else if (NAME_IS("reset_after") && val) {
        if (parse_long(val, vlen, 0, 1000000, &v) < 0)
            goto bad_value;
        d->reset_after = v;
    } else if (NAME_IS("endless") && !val) {
        d->endless = true;
    } else if (NAME_IS("context_exceeded") && !val) {
        d->context_exceeded = true;
    } else if (NAME_IS("leak_key") && !val) {
        d->leak_key = true;
    } else if (NAME_IS("bad_key") && !val) {
        d->auth_fault = 401;
    } else if (NAME_IS("key_forbidden") && !val) {
        d->auth_fault = 403;
    } else if (NAME_IS("context") && val) {
        if (parse_long(val, vlen, 0, 1000000000L, &v) < 0)
            goto bad_value;
        d->context_limit = v;
    } else {
        snprintf(err, errlen, "unknown emulator directive '[[emu:%.*s]]'", (int)(len > 64 ? 64 : len), s);
        return -EINVAL;
    }
#undef NAME_IS
    return 0;

bad_value:
    snprintf(err, errlen, "bad value in emulator directive '[[emu:%.*s]]'", (int)(len > 64 ? 64 : len), s);
    return -EINVAL;
}

/* No directive given: the values that mean "unset". */
static void directives_init(struct sb_emu_directives *d)
{
    memset(d, 0, sizeof *d);
    d->chunk_delay_ms = -1;
    d->hang_after = -1;
    d->drop_after = -1;
    d->retry_after = -1;
    d->reset_after = -1;
    d->context_limit = -1;
}

int sb_emu_directives_parse(const char *text, struct sb_emu_directives *d, char **clean, char *err, size_t errlen)
{
    directives_init(d);
    *clean = NULL;

    size_t n = strlen(text);
    char *out = sb_xmalloc(n + 1);
    size_t o = 0;
    const char *p = text;
    for (;;) {
        const char *open = strstr(p, DIRECTIVE_OPEN);
        if (!open) {
            size_t rest = strlen(p);
            memcpy(out + o, p, rest);
            o += rest;
            break;
        }
        memcpy(out + o, p, (size_t)(open - p));
        o += (size_t)(open - p);
        const char *inner = open + strlen(DIRECTIVE_OPEN);
        const char *close = strstr(inner, DIRECTIVE_CLOSE);
        if (!close) {
            snprintf(err, errlen, "unterminated emulator directive (missing ']]')");
            goto fail;
        }
        if (apply_directive(inner, (size_t)(close - inner), d, err, errlen) < 0)
            goto fail;
        p = close + strlen(DIRECTIVE_CLOSE);
        /* "a [[emu:x]] b" becomes "a b", not "a  b". */
        if (o > 0 && isspace((unsigned char)out[o - 1]))
            while (*p && isspace((unsigned char)*p))
                p++;
    }
    out[o] = '\0';

    /* Trim. */
    size_t start = 0;
    while (start < o && isspace((unsigned char)out[start]))
        start++;
    while (o > start && isspace((unsigned char)out[o - 1]))
        o--;
    memmove(out, out + start, o - start);
    out[o - start] = '\0';
    *clean = out;
    return 0;

fail:
    free(out);
    return -EINVAL;
}

int sb_emu_directives_parse_list(const char *list, struct sb_emu_directives *d, char *err, size_t errlen)
{
    directives_init(d);
    size_t n = 0;
    const char *p = list;
    for (;;) {
        while (*p && (isspace((unsigned char)*p) || *p == ','))
            p++;
        if (!*p)
            break;
        size_t len = 0;
        while (p[len] && !isspace((unsigned char)p[len]) && p[len] != ',')
            len++;
        const char *tok = p;
        size_t tlen = len;
        size_t open = strlen(DIRECTIVE_OPEN), close = strlen(DIRECTIVE_CLOSE);
        if (tlen > open + close && !strncmp(tok, DIRECTIVE_OPEN, open) &&
            !strncmp(tok + tlen - close, DIRECTIVE_CLOSE, close)) {
            tok += open;
            tlen -= open + close;
        }
        if (apply_directive(tok, tlen, d, err, errlen) < 0)
            return -EINVAL;
        n++;
        p += len;
    }
    if (n == 0) {
        snprintf(err, errlen, "no emulator directive given");
        return -EINVAL;
    }
    return 0;
}

void sb_emu_directives_merge(struct sb_emu_directives *d, const struct sb_emu_directives *route)
{
    if (!d->status)
        d->status = route->status;
    if (!d->latency_ms)
        d->latency_ms = route->latency_ms;
    d->hang = d->hang || route->hang;
    d->drop = d->drop || route->drop;
    d->length = d->length || route->length;
    d->malformed = d->malformed || route->malformed;
    if (d->chunk_delay_ms < 0)
        d->chunk_delay_ms = route->chunk_delay_ms;
    if (d->hang_after < 0)
        d->hang_after = route->hang_after;
    if (d->drop_after < 0)
        d->drop_after = route->drop_after;
    d->refuse = d->refuse || route->refuse;
    d->violate = d->violate || route->violate;
    if (!d->violate_tag[0])
        memcpy(d->violate_tag, route->violate_tag, sizeof d->violate_tag);
    if (d->retry_after < 0)
        d->retry_after = route->retry_after;
    d->quota = d->quota || route->quota;
    if (!d->trickle_ms)
        d->trickle_ms = route->trickle_ms;
    d->reset = d->reset || route->reset;
    if (d->reset_after < 0)
        d->reset_after = route->reset_after;
    d->endless = d->endless || route->endless;
    d->context_exceeded = d->context_exceeded || route->context_exceeded;
    d->leak_key = d->leak_key || route->leak_key;
    if (!d->auth_fault)
        d->auth_fault = route->auth_fault;
    if (d->context_limit < 0)
        d->context_limit = route->context_limit;
}

static bool valid_function_name(const char *s, size_t len)
{
    if (len == 0 || len > 64)
        return false;
    for (size_t i = 0; i < len; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
            return false;
    return true;
}

void sb_emu_tool_calls_free(struct sb_emu_tool_call **calls, size_t ncalls)
{
    if (!calls || !*calls)
        return;
    for (size_t i = 0; i < ncalls; i++) {
        free((*calls)[i].name);
        free((*calls)[i].arguments);
    }
    free(*calls);
    *calls = NULL;
}

int sb_emu_directives_calls(const char *text, struct sb_emu_tool_call **calls, size_t *ncalls, char *err, size_t errlen)
{
    *calls = NULL;
    *ncalls = 0;
    if (strncmp(text, "CALL ", 5) != 0)
        return 0;

    struct sb_emu_tool_call *out = NULL;
    size_t n = 0;
    const char *line = text;
    while (*line) {
        const char *eol = strchr(line, '\n');
        size_t len = eol ? (size_t)(eol - line) : strlen(line);
        const char *next = eol ? eol + 1 : line + len;
        while (len > 0 && isspace((unsigned char)*line)) {
            line++;
            len--;
        }
        while (len > 0 && isspace((unsigned char)line[len - 1]))
            len--;
        if (len < 5 || strncmp(line, "CALL ", 5) != 0) {
            line = next;
            continue;
        }
        const char *name = line + 5;
        const char *end = line + len;
        while (name < end && isspace((unsigned char)*name))
            name++;
        const char *name_end = name;
        while (name_end < end && !isspace((unsigned char)*name_end))
            name_end++;
        if (!valid_function_name(name, (size_t)(name_end - name))) {
            snprintf(err, errlen, "CALL directive: bad function name '%.*s'", (int)(name_end - name), name);
            goto fail;
        }
        const char *args = name_end;
        while (args < end && isspace((unsigned char)*args))
            args++;
        char *args_text = args < end ? sb_xstrndup(args, (size_t)(end - args)) : sb_xstrdup("{}");
        json_error_t jerr;
        json_t *parsed = json_loads(args_text, JSON_DECODE_ANY, &jerr);
        if (!parsed) {
            snprintf(err, errlen, "CALL directive: arguments for '%.*s' are not valid JSON: %s", (int)(name_end - name),
                     name, jerr.text);
            free(args_text);
            goto fail;
        }
        json_decref(parsed);
        out = sb_xrealloc(out, (n + 1) * sizeof *out);
        out[n] =
            (struct sb_emu_tool_call){.name = sb_xstrndup(name, (size_t)(name_end - name)), .arguments = args_text};
        n++;
        line = next;
    }
    *calls = out;
    *ncalls = n;
    return 1;

fail:
    sb_emu_tool_calls_free(&out, n);
    return -EINVAL;
}

size_t sb_emu_count_words(const char *s)
{
    size_t n = 0;
    bool in_word = false;
    for (; *s; s++) {
        bool space = isspace((unsigned char)*s);
        if (!space && !in_word)
            n++;
        in_word = !space;
    }
    return n;
}

size_t sb_emu_words_prefix(const char *s, size_t n)
{
    size_t words = 0, end = 0;
    bool in_word = false;
    for (size_t i = 0; s[i]; i++) {
        bool space = isspace((unsigned char)s[i]);
        if (!space && !in_word) {
            if (words == n)
                break;
            words++;
        }
        if (!space)
            end = i + 1;
        in_word = !space;
    }
    return end;
}
