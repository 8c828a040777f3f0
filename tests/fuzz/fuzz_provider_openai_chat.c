/*
 * fuzz_provider_openai_chat: libFuzzer harness for the "openai-chat" upstream adapter's
 * parsing of OpenAI Chat Completions replies (JSON bodies and SSE chunk streams),
 * error bodies and token counts. The input format and the checks are in
 * fuzz_provider.h; the seed corpus (corpus/provider_openai_chat/) holds real replies
 * of tests/emulator behind the 4-byte header.
 */
#include "fuzz_provider.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    return fuzz_provider_run(&sb_provider_openai_chat, data, size);
}
