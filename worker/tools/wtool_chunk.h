/*
 * wtool_chunk: a file's text cut into the chunks file search embeds and
 * ranks (OpenAI's static chunking strategy: chunks of at most
 * max_chunk_size_tokens, each starting chunk_overlap_tokens before the
 * previous one ended).
 *
 * Tokens are approximated, not counted: SB_CHUNK_BYTES_PER_TOKEN bytes of
 * UTF-8 are one token (English text averages about 4 bytes a token in
 * OpenAI's tokenizers; text in scripts of 3-byte characters comes out at
 * about one token a character, which is close to what those tokenizers do
 * too). So a chunk of 800 tokens is at most 3200 bytes. The worker has no
 * tokenizer for every embedding model it may be routed to, and an
 * approximation that never splits a character and prefers natural breaks
 * matters more to retrieval than an exact count.
 *
 * Where a chunk ends: the last paragraph break ("\n\n") in the second half
 * of its window, else the last line break there, else the last sentence end
 * (". ", "! ", "? "), else the last whitespace, else the window's end moved
 * back to a UTF-8 character boundary. The next chunk starts overlap bytes
 * before that end, moved forward to the start of a word, and always after
 * the previous chunk's start (so the text is always consumed). Chunks carry
 * no leading or trailing whitespace; whitespace-only text gives no chunk.
 * Pure functions: unit-tested (tests/unit/worker/test_chunk.c).
 */
#ifndef WTOOL_CHUNK_H
#define WTOOL_CHUNK_H

#include <jansson.h>
#include <stddef.h>

#define SB_CHUNK_BYTES_PER_TOKEN 4
/* OpenAI's static chunking defaults and bounds. */
#define SB_CHUNK_DEFAULT_MAX_TOKENS 800
#define SB_CHUNK_DEFAULT_OVERLAP_TOKENS 400
#define SB_CHUNK_MIN_TOKENS 100
#define SB_CHUNK_MAX_TOKENS 4096

/* One chunk: a span of the text it was cut from. */
typedef struct sb_chunk {
    size_t off;
    size_t len;
} sb_chunk_t;

/* The chunk size and overlap a chunking_strategy asks for: absent, null or
 * {"type":"auto"}: the defaults; {"type":"static","static":{
 * "max_chunk_size_tokens", "chunk_overlap_tokens"}}: those (max 100..4096,
 * overlap 0..max/2, as OpenAI). 0, or -EINVAL with why set. */
int sb_chunk_params(const json_t *strategy, int *max_tokens, int *overlap_tokens, char *why, size_t why_len)
    __attribute__((warn_unused_result));

/* Cuts text[0..len) into chunks (*out malloc'd, *n of them; *out NULL when
 * none). max_tokens >= 1, 0 <= overlap_tokens < max_tokens. */
void sb_chunk_split(const char *text, size_t len, int max_tokens, int overlap_tokens, sb_chunk_t **out, size_t *n);

/* The approximate token count of len bytes of text. */
size_t sb_chunk_tokens(size_t len);

#endif
