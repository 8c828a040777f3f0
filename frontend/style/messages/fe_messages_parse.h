/*
 * fe_messages_parse: what the Messages style's request parsing shares
 * between its files: errors in Anthropic's wording and the translation of
 * messages[] into canonical items (both fe_messages_content.c, which
 * fe_messages_parse.c builds on).
 */
#ifndef FE_MESSAGES_PARSE_H
#define FE_MESSAGES_PARSE_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"
#include "fe_style.h"

/* A 400 in Anthropic's wording, "<param>: <text>" (param may be NULL), code
 * its machine code. Always -1. */
int fe_messages_fail(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The same, for functions returning a new value: always NULL. */
json_t *fe_messages_fail_null(fe_error_t *err, const char *code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Whether v is the string s. */
bool fe_messages_is(const json_t *v, const char *s);

/* messages[] -> canonical input items (appended to items): 0, or -1 with
 * err. Thinking blocks' signatures are opened with seal (the caller's). */
int fe_messages_messages(const fe_sealer_t *seal, const json_t *messages, json_t *items, fe_error_t *err);

#endif
