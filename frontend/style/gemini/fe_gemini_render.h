/*
 * fe_gemini_render: the Generate Content style's rendering
 * (fe_gemini_render.c), and what it shares with its stream renderer
 * (fe_stream_gemini.c), so that a streamed answer is built from the same
 * pieces as the non-streamed GenerateContentResponse.
 */
#ifndef FE_GEMINI_RENDER_H
#define FE_GEMINI_RENDER_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_style.h"

/* Google's limit on generationConfig.candidateCount. */
#define FE_GEMINI_MAX_CANDIDATES 8

/* The object a thoughtSignature seals when it stands for several items (the
 * reasoning before a part, plus the part's own function_call); parsing opens
 * it again (fe_gemini_contents.c). */
#define FE_GEMINI_CARRY "gemini_carry"

/* The GenerateContentResponse for res, one candidate per parsed->n (the
 * style's render; new reference). */
json_t *fe_gemini_render(const fe_collect_t *res, const fe_render_ctx_t *ctx);

/* The countTokens reply, {"totalTokens": N} (the style's render_count; new
 * reference). */
json_t *fe_gemini_render_count(const fe_collect_t *res, const fe_render_ctx_t *ctx);

/* Whether the request asked for thought parts (thinkingConfig.includeThoughts). */
bool fe_gemini_include_thoughts(const fe_parsed_t *parsed);

/* The sealed thoughtSignature standing for items (one item: itself;
 * several: a carry). New string, or NULL when the gateway has no reasoning
 * key. items is borrowed. */
json_t *fe_gemini_seal(const fe_render_ctx_t *ctx, json_t *items);

/* The thought text of a reasoning item: its summary if it has one, else its
 * full reasoning text (new string). */
json_t *fe_gemini_thought_text(const json_t *reasoning);

/* Appends part (stolen) to parts, first giving it the signature of the
 * reasoning items in pending, which wait to be carried by the next part (and
 * of own, the part's own function_call item, when it needs one). Empties
 * pending. */
void fe_gemini_emit(const fe_render_ctx_t *ctx, json_t *parts, json_t *part, json_t *pending, const json_t *own);

/* The text a message content part shows as a Gemini text part: its "text",
 * or a refusal's "refusal" (borrowed; NULL when it has none). */
const json_t *fe_gemini_part_text(const json_t *part);

/* A function_call item as a {"functionCall":{name, args, id}} part (new
 * reference); args that are not a JSON object become {}. */
json_t *fe_gemini_call_part(const json_t *call);

/* Appends a code_interpreter_call's parts (fe_gemini_code.h) to parts: its
 * executableCode part (with exec; it carries the signature of the
 * reasoning in pending, which it empties), its codeExecutionResult part
 * sealing the item, its images. */
void fe_gemini_code_parts(const fe_render_ctx_t *ctx, json_t *parts, const json_t *item, json_t *pending, bool exec);

/* Candidate k's finishReason: STOP, MAX_TOKENS or SAFETY. */
const char *fe_gemini_finish_reason(const fe_collect_t *res, int k);

/* usageMetadata from res as it stands (new reference). */
json_t *fe_gemini_usage(const fe_collect_t *res);

/* A GenerateContentResponse around candidates and usage (both stolen). */
json_t *fe_gemini_response(const fe_render_ctx_t *ctx, json_t *candidates, json_t *usage);

#endif
