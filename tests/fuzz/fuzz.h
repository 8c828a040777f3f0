/*
 * fuzz: what every libFuzzer harness in tests/fuzz shares. FUZZ_REQUIRE
 * states an invariant of the parser under test; a violation prints where and
 * aborts, which libFuzzer (and the corpus replay, tests/fuzz/replay.c)
 * reports as a finding.
 */
#ifndef FUZZ_H
#define FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define FUZZ_REQUIRE(cond)                                                                                             \
    do {                                                                                                               \
        if (!(cond)) {                                                                                                 \
            fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond);                               \
            abort();                                                                                                   \
        }                                                                                                              \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif
