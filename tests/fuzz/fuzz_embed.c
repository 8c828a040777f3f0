/*
 * fuzz_embed: libFuzzer harness for the embeddings answer reader
 * (sb_embed_parse in wtool_embed_wire.c): what an embeddings upstream (or
 * anything between it and the worker) answers.
 *
 * Input: one byte of settings, then the body. Bit 0 picks the API (OpenAI,
 * Gemini), bits 1-3 the number of inputs asked (1 to 8), bit 4 whether the
 * size is imposed (4, as a second batch's would be). Checked besides "no
 * crash, no leak, no UB": 0 with n vectors of one size (1 to
 * SB_EMBED_MAX_DIMS; the imposed one when imposed), every value finite and
 * every vector of unit length or zero, and a token count >= 0; or -EINVAL
 * with no vectors, the size as it was, and a reason.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "fuzz.h"
#include "wtool_embed.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    enum sb_embed_api api = data[0] & 1 ? SB_EMBED_API_GEMINI : SB_EMBED_API_OPENAI;
    size_t n = 1 + ((data[0] >> 1) & 7);
    size_t want = data[0] & 16 ? 4 : 0, dim = want;
    float *v = NULL;
    int64_t tokens = -1;
    char why[160] = "";
    int rc = sb_embed_parse(api, (const char *)data + 1, size - 1, n, &dim, &v, &tokens, why, sizeof why);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if (rc < 0) {
        FUZZ_REQUIRE(v == NULL && dim == want && why[0]);
        return 0;
    }
    FUZZ_REQUIRE(v != NULL && dim >= 1 && dim <= SB_EMBED_MAX_DIMS && (!want || dim == want));
    FUZZ_REQUIRE(tokens >= 0);
    for (size_t i = 0; i < n; i++) {
        double norm = 0;
        for (size_t k = 0; k < dim; k++) {
            FUZZ_REQUIRE(isfinite(v[i * dim + k]));
            norm += (double)v[i * dim + k] * v[i * dim + k];
        }
        FUZZ_REQUIRE(norm == 0 || fabs(norm - 1) < 1e-3);
    }
    free(v);
    return 0;
}
