/*
 * emu_embed: the emulator's embeddings. emu_embed.c holds the deterministic
 * vector scheme both protocols answer with (its comment says how a text
 * becomes a vector, and why texts that share words come out close);
 * emu_openai_embeddings.c serves OpenAI's POST /v1/embeddings and
 * emu_gemini_embed.c Gemini's models/{m}:embedContent and
 * :batchEmbedContents, each validating its request like the real API.
 */
#ifndef SB_EMU_EMBED_H
#define SB_EMU_EMBED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

struct sb_emu_call;

/* The dimension of the emulator's own embedding models ("emu-embed", ...) and of any model it has no table entry for.
 */
#define SB_EMU_EMBED_DIMS 256
/* The largest dimension the emulator's own models accept. */
#define SB_EMU_EMBED_MAX_DIMS 4096

/*
 * The dimension a model answers with when the request does not choose one:
 * the real one for the providers' models (text-embedding-3-small 1536,
 * text-embedding-3-large 3072, text-embedding-ada-002 1536,
 * gemini-embedding-001 3072, text-embedding-004 768), else
 * SB_EMU_EMBED_DIMS.
 */
size_t sb_emu_embed_default_dims(const char *model);
/* The largest dimension a request may ask of model: the providers' native size, else SB_EMU_EMBED_MAX_DIMS. */
size_t sb_emu_embed_max_dims(const char *model);

/* The unit vector of text in dims (>= 1) dimensions, into out[0..dims). */
void sb_emu_embed_text(const char *text, size_t dims, float *out);
/* The unit vector of a token array (OpenAI's integer input), into out[0..dims). */
void sb_emu_embed_tokens(const long long *tokens, size_t n, size_t dims, float *out);

/* The vector as a JSON array of numbers (a new reference); the reply writer rounds them to 8 significant digits. */
json_t *sb_emu_embed_json(const float *v, size_t dims);
/* Serialisation of a reply holding vectors: compact, in order, reals with 8 significant digits. */
#define SB_EMU_EMBED_DUMP_FLAGS (JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8))

/* POST /v1/embeddings (emu_openai_embeddings.c). */
void sb_emu_openai_embeddings_handle(struct sb_emu_call *call);
/* POST models/{model}:embedContent (batch false) and :batchEmbedContents (batch true); auth is already checked.
 * errors: Google's bodies for the request's faults (emu_gemini.c's, handed down so this file needs nothing of it). */
struct sb_emu_fault_errors;
void sb_emu_gemini_embed_handle(struct sb_emu_call *call, const char *model, bool batch,
                                const struct sb_emu_fault_errors *errors);

#endif
