/*
 * Unit tests for sb_regex: ECMA-262 syntax against glibc's POSIX engine,
 * per-code-point matching over UTF-8, the constructs and sizes that are
 * rejected, and their messages. (How sb_jschema uses it, "pattern" in a
 * schema, is tested in test_jschema.c.)
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sb_regex.h"
#include "sb_test.h"

/* sb_regex_search() of subject (len bytes) for pattern: 1 or 0, a negative
 * error, or 99 if the pattern is rejected (the reason is printed). */
static int match_n(const char *pattern, const char *subject, size_t len)
{
    char err[512];
    sb_regex_t *re = sb_regex_compile(pattern, err, sizeof err);
    if (!re) {
        fprintf(stderr, "pattern %s rejected: %s\n", pattern, err);
        return 99;
    }
    int rc = sb_regex_search(re, subject, len);
    sb_regex_destroy(&re);
    sb_regex_destroy(&re); /* NULL-safe */
    return rc;
}

static int match(const char *pattern, const char *subject)
{
    return match_n(pattern, subject, strlen(subject));
}

static void test_compile_errors(void)
{
    char err[512];
    static const struct {
        const char *pattern, *msg;
    } bad[] = {
        {"(?=a)", "pattern \"(?=a)\": lookahead/lookbehind assertions are not supported"},
        {"\\p{L}", "pattern \"\\p{L}\": Unicode property escapes (\\p) are not supported"},
        {"[b-a]", "pattern \"[b-a]\": range out of order in character class"},
        {"(a)\\1", "pattern \"(a)\\1\": backreferences are not supported"},
        {"^(.{1000}){1000}", "pattern \"^(.{1000}){1000}\": pattern too large once repetitions are expanded (for "
                             "lengths, use minLength/maxLength)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sb_regex_t *re = sb_regex_compile(bad[i].pattern, err, sizeof err);
        CHECK(re == NULL);
        CHECK_STR(err, bad[i].msg);
        sb_regex_destroy(&re);
    }
    sb_regex_destroy(NULL); /* NULL-safe */
}

/* Patterns run per code point. Subjects are UTF-8 ("\u00e9" is two bytes). */
static void test_unicode(void)
{
    CHECK_INT(match("^.$", "\u00e9"), 1);
    CHECK_INT(match("^.$", "\U0001F4A9"), 1);
    CHECK_INT(match("^..$", "\u00e9"), 0);
    CHECK_INT(match("^h.llo$", "h\u00e9llo"), 1);
    CHECK_INT(match("^[\u00c0-\u00ff]+$", "\u00e9\u00e0"), 1); /* literal UTF-8 in a range */
    CHECK_INT(match("^[\u00c0-\u00ff]+$", "e"), 0);
    CHECK_INT(match("^[\\u4e00-\\u9fa5]{2}$", "\u4e2d\u6587"), 1); /* ECMA \u escapes */
    CHECK_INT(match("^[^a]$", "\u00e9"), 1);
    CHECK_INT(match("^[^\u00e9]$", "\u00e9"), 0);
    CHECK_INT(match("^\u00e9+$", "\u00e9\u00e9"), 1);
    CHECK_INT(match("^\\ud83d\\udca9$", "\U0001F4A9"), 1); /* a surrogate pair is one code point */
    CHECK_INT(match("^\\w$", "\u00e9"), 0);                /* ECMA \w is ASCII */
    CHECK_INT(match("^\\s$", "\u00a0"), 1);
    CHECK_INT(match("^\\S$", "\u2003"), 0);
    CHECK_INT(match_n("^a.b$", "a\0b", 3), 1);
    CHECK_INT(match("^a.b$", "a\nb"), 0);
    CHECK_INT(match("^a.b$", "a\u2028b"), 0);
}

static void test_patterns(void)
{
    static const struct {
        const char *pattern, *subject;
        int match;
    } cases[] = {
        {"\\d+", "ab12", 1},
        {"^\\d+$", "12a", 0},
        {"^\\D+$", "ab", 1},
        {"^\\w+$", "a_Z9", 1},
        {"^\\W$", "-", 1},
        {"^\\s$", "\t", 1},
        {"^\\S+$", "a b", 0},
        {"^a{2}$", "aa", 1},
        {"^a{2}$", "aaa", 0},
        {"^a{2,}$", "aaaa", 1},
        {"^a{1,2}$", "aaa", 0},
        {"a{", "xa{", 1},
        {"^x{,2}$", "x{,2}", 1},
        {"^a+?b*?$", "aab", 1},
        {"^(?:ab)+$", "abab", 1},
        {"^(a)(?:b)(c)$", "abc", 1},
        {"^(a)(?:b)(c)\\2$", "", -1},
        {"^(?<y>\\d{4})-(?<m>\\d\\d)$", "2024-01", 1},
        {"^[\\d-]+$", "1-2", 1},
        {"^[\\w.]+@[\\w.]+$", "a.b@c.d", 1},
        {"^[^\\d]+$", "abc", 1},
        {"^[^\\d]+$", "a1", 0},
        {"^[\\D]$", "x", 1},
        {"^[\\S\\d]$", "x", 1},
        {"^[]$", "", 0},
        {"^[^]$", "\n", 1},
        {"^[a\\]]+$", "a]", 1},
        {"^[\\^]$", "^", 1},
        {"^[-^]$", "-", 1},
        {"^[+--]$", ",", 1},
        {"^[\\[]$", "[", 1},
        {"^[[]$", "[", 1},
        {"^\\]$", "]", 1},
        {"^}$", "}", 1},
        {"^\\/\\.\\*$", "/.*", 1},
        {"\\bfoo\\b", "a foo", 1},
        {"\\bfoo\\b", "afoo", 0},
        {"^\\x41\\u0042$", "AB", 1},
        {"^\\cJ$", "\n", 1},
        {"^\\t\\n$", "\t\n", 1},
        {"^a|b$", "xb", 1},
        {"^(a|)$", "", 1},
        {"^[a-c]*$", "abcba", 1},
        {"^[A-Za-z]+$", "Hello", 1},
        {"^[\\x00-\\x1f]$", "\x01", 1},
        {"colou?r", "my color", 1},
        {"^\\$\\d+(\\.\\d{2})?$", "$10.50", 1},
        {"^[^\\s]+$", "a b", 0},
        {"^\\u{41}", "", -1},
        {"(?!a)", "", -1},
        {"\\k<n>", "", -1},
    };
    char err[512];
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        sb_regex_t *re = sb_regex_compile(cases[i].pattern, err, sizeof err);
        if (cases[i].match < 0) {
            if (re)
                fprintf(stderr, "pattern %s: expected to be rejected\n", cases[i].pattern);
            CHECK(re == NULL);
            sb_regex_destroy(&re);
            continue;
        }
        if (!re) {
            fprintf(stderr, "pattern %s rejected: %s\n", cases[i].pattern, err);
            CHECK(re != NULL);
            continue;
        }
        int rc = sb_regex_search(re, cases[i].subject, strlen(cases[i].subject));
        if (rc != cases[i].match)
            fprintf(stderr, "pattern %s on \"%s\": expected %s\n", cases[i].pattern, cases[i].subject,
                    cases[i].match ? "match" : "no match");
        CHECK(rc == cases[i].match);
        sb_regex_destroy(&re);
    }
    /* bounded repetitions: fine up to a cost that keeps glibc's regcomp and
     * regexec fast; past it, rejected with advice */
    CHECK_INT(match("^.{1,300}$", "hello"), 1);
    CHECK_INT(match("^[a-z]{2000}$", "hello"), 0);
    CHECK_INT(match("^.{5,}$", "h\u00e9llo"), 1);
    char err2[512];
    sb_regex_t *re2 = sb_regex_compile("^.{0,2000}$", err2, sizeof err2);
    CHECK(re2 == NULL);
    CHECK_STR(err2, "pattern \"^.{0,2000}$\": pattern too large once repetitions are expanded (for lengths, use "
                    "minLength/maxLength)");
    re2 = sb_regex_compile("x.{500}", err2, sizeof err2);
    CHECK(re2 == NULL);
    CHECK(strstr(err2, "unanchored pattern too large") != NULL);
    CHECK_INT(match("^x.{500}", "x"), 0); /* the same, anchored, is cheap */
    /* constructs glibc gets wrong are rejected rather than mis-answered */
    re2 = sb_regex_compile("(^a|b){2}", err2, sizeof err2);
    CHECK(re2 == NULL);
    CHECK_STR(err2, "pattern \"(^a|b){2}\": ^, $, \\b or \\B inside a repeated group is not supported");
    re2 = sb_regex_compile("(a|b?)+", err2, sizeof err2);
    CHECK(re2 == NULL);
    CHECK_STR(err2, "pattern \"(a|b?)+\": repeating a group that can match the empty string is not supported");
    CHECK_INT(match("^(a|b)?(c?d)+(^|x)$", "bcddx"), 1);          /* ? and non-empty units are fine */
    re2 = sb_regex_compile("^a{1000}{1000}$", err2, sizeof err2); /* glibc would take it: 10^6 copies */
    CHECK(re2 == NULL);
    CHECK(strstr(err2, "nothing to repeat") != NULL);
    /* each group is cheap, together they are not */
    re2 = sb_regex_compile("^(a{0,300})(b{0,300})(c{0,300})(d{0,300})(e{0,300})"
                           "(f{0,300})(g{0,300})(h{0,300})(i{0,300})(j{0,300})$",
                           err2, sizeof err2);
    CHECK(re2 == NULL);
    CHECK(strstr(err2, "pattern too large") != NULL);
}

int main(void)
{
    test_compile_errors();
    test_unicode();
    test_patterns();
    return sb_test_finish("regex");
}
