/*
 * fuzz_provider_gemini: libFuzzer harness for the "gemini" upstream adapter's
 * parsing of Gemini generateContent replies (JSON bodies and alt=sse streams),
 * error bodies and token counts. The input format and the checks are in
 * fuzz_provider.h; the seed corpus (corpus/provider_gemini/) holds real replies
 * of tests/emulator behind the 4-byte header.
 */
#include "fuzz_provider.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_provider_run(&sb_provider_gemini, data, size);
}
