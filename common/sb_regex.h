/*
 * sb_regex: ECMA-262 regular expressions (as in JSON Schema "pattern") run
 * with the C library's POSIX regex engine. sb_jschema compiles each distinct
 * pattern of a schema with it; any other module may use it the same way.
 *
 * A pattern is translated to a POSIX ERE over UTF-8 bytes and run with
 * regexec() under a private "C" locale, so matching is per code point (as
 * the ECMA "u" flag) whatever the process locale is, and a search is
 * unanchored (as ECMA RegExp.prototype.test without flags). Supported:
 * literals, ., classes ([...], \d \D \w \W \s \S), escapes (\n \t \cX \xHH
 * \uHHHH including surrogate pairs, identity escapes), groups ((...), (?:...),
 * named (?<n>...)), alternation, quantifiers (* + ? {n} {n,} {n,m}, lazy
 * forms), ^ $ \b \B, and the Annex B leniencies ("a{", "]", "[\d-x]").
 *
 * sb_regex_compile() fails on what POSIX cannot express (lookaround,
 * \p{...}, \u{...}, backreferences, octal escapes), on what glibc gets wrong
 * or is pathologically slow on (^ $ \b \B inside a group repeated more than
 * once; repeating a sub-pattern that can match empty, as "(a|b?)+"), and on
 * patterns whose counted repetitions expand too far (e.g. "^.{0,2000}$": use
 * a length check; unanchored ones have a lower limit). Within those limits a
 * pattern compiles and matches a 100 KB string in well under 100 ms, so
 * patterns from untrusted requests are safe to compile and run.
 */
#ifndef SB_REGEX_H
#define SB_REGEX_H

#include <stddef.h>

typedef struct sb_regex sb_regex_t;

/* Compiles ecma_pattern (borrowed, NUL-terminated UTF-8; a pattern holding a
 * NUL cannot be passed, so callers reject it first). Returns an owned regex
 * to free with sb_regex_destroy(), or NULL with a one-line message in err
 * (if err is not NULL), e.g. "pattern \"(?=a)\": lookahead/lookbehind
 * assertions are not supported". */
sb_regex_t *sb_regex_compile(const char *ecma_pattern, char *err, size_t errsz) __attribute__((warn_unused_result));

/* Searches subject (borrowed, len bytes of valid UTF-8; NULs allowed, no
 * terminator needed) for a match anywhere. Returns 1 on a match, 0 on none,
 * -E2BIG if len is beyond what regexec() can address (INT32_MAX), -ENOMEM if
 * regexec() fails. re is not modified, but do not share one regex between
 * threads (the gateway runs one loop per process). */
int sb_regex_search(const sb_regex_t *re, const char *subject, size_t len) __attribute__((warn_unused_result));

/* NULL-safe; sets *re to NULL. */
void sb_regex_destroy(sb_regex_t **re);

#endif
