/*
 * sb_test: a minimal assertion harness for unit tests. Each test binary is one
 * ctest; a failed check prints file:line and the binary exits non-zero.
 */
#ifndef SB_TEST_H
#define SB_TEST_H

#include <stdio.h>
#include <string.h>

static int sb_test_failures;
static int sb_test_checks;

#define CHECK(cond)                                                                                                    \
    do {                                                                                                               \
        sb_test_checks++;                                                                                              \
        if (!(cond)) {                                                                                                 \
            sb_test_failures++;                                                                                        \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);                                   \
        }                                                                                                              \
    } while (0)

#define CHECK_STR(a, b)                                                                                                \
    do {                                                                                                               \
        const char *sb_a_ = (a), *sb_b_ = (b);                                                                         \
        sb_test_checks++;                                                                                              \
        if (!sb_a_ || !sb_b_ || strcmp(sb_a_, sb_b_) != 0) {                                                           \
            sb_test_failures++;                                                                                        \
            fprintf(stderr, "%s:%d: CHECK_STR failed: \"%s\" != \"%s\"\n", __FILE__, __LINE__,                         \
                    sb_a_ ? sb_a_ : "(null)", sb_b_ ? sb_b_ : "(null)");                                               \
        }                                                                                                              \
    } while (0)

#define CHECK_INT(a, b)                                                                                                \
    do {                                                                                                               \
        long long sb_a_ = (long long)(a), sb_b_ = (long long)(b);                                                      \
        sb_test_checks++;                                                                                              \
        if (sb_a_ != sb_b_) {                                                                                          \
            sb_test_failures++;                                                                                        \
            fprintf(stderr, "%s:%d: CHECK_INT failed: %lld != %lld (%s vs %s)\n", __FILE__, __LINE__, sb_a_, sb_b_,    \
                    #a, #b);                                                                                           \
        }                                                                                                              \
    } while (0)

static inline int sb_test_finish(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, sb_test_checks, sb_test_failures);
    return sb_test_failures ? 1 : 0;
}

#endif
