/*
 * fe_tokens: the gateway's own token estimate, used before anything goes
 * upstream (the context-length check, TPM and quota admission) and for the
 * output of a stream the client aborted (no upstream usage arrives then).
 *
 * The method (docs/limits.md): count the pieces a GPT-style pre-tokenizer
 * splits text into, each of which is at least one token: a run of letters
 * (any non-ASCII byte counts as a letter), each group of up to three digits,
 * and a run of other symbols — except a single symbol right before a letter,
 * which o200k joins to the word. Whitespace joins the next word. Plus the
 * chat framing OpenAI documents: 3 tokens per message and 3 for the reply,
 * and 85 per image (the low-detail minimum). Files and audio count 0.
 * The estimate is a lower bound for OpenAI's cl100k/o200k tokenizers on
 * text, typically 75-95% of the real count for English prose, less for
 * code with long identifiers and far less for CJK text (a whole run counts
 * once). It is never used to claim more tokens than the model would see.
 */
#ifndef FE_TOKENS_H
#define FE_TOKENS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* An incremental counter: text may arrive in pieces (stream deltas) split
 * anywhere, even inside a UTF-8 sequence, and counts the same as whole. */
typedef struct {
    int64_t count;
    int cls; /* class of the previous byte (FE_TOK_*) */
    int run; /* length of the current digit or symbol run */
} fe_tokens_counter_t;

void fe_tokens_counter_init(fe_tokens_counter_t *c);
void fe_tokens_feed(fe_tokens_counter_t *c, const char *text, size_t len);
/* The count so far, the pending run included (the counter stays usable). */
int64_t fe_tokens_total(const fe_tokens_counter_t *c);

/* The estimate for one string. */
int64_t fe_tokens_text(const char *text);

/* The estimate for a canonical request (sb_job.h "request"): instructions,
 * every input item (messages and their parts, function calls and outputs),
 * and the tool definitions. */
int64_t fe_tokens_request(const json_t *request, const json_t *input);

#endif
