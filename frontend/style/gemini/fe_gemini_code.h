/*
 * fe_gemini_code: Gemini's code execution tool in the Generate Content
 * style, on the gateway's code interpreter (docs/tools.md), both ways:
 *   request   tools[] {codeExecution: {}} -> the canonical code_interpreter
 *             tool, container {"type":"auto"} (fe_gemini_config.c)
 *   history   a model turn's executableCode part, its codeExecutionResult
 *             part and the inlineData images after it -> a
 *             code_interpreter_call item (fe_gemini_contents.c)
 *   response  a code_interpreter_call -> {executableCode {language
 *             "PYTHON", code}}, {codeExecutionResult {outcome, output}}, and
 *             one {inlineData {mimeType, data}} per image the code showed, as
 *             Gemini returns matplotlib figures (fe_gemini_render.c and the
 *             stream, fe_stream_gemini.c)
 * With a reasoning key, the codeExecutionResult part's thoughtSignature is
 * the item sealed (less its outputs, which the parts carry): a later turn
 * restores what the model was told exactly, and the container the code ran
 * in, so the next call finds its files. Without one the parts alone make the
 * item (the run's container is then not carried over).
 */
#ifndef FE_GEMINI_CODE_H
#define FE_GEMINI_CODE_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_gemini_parse.h"

/* codeExecution {} of a tools[] entry (at its path): 0, or -1 with err
 * (ToolCodeExecution has no fields). */
int fe_gemini_code_tool(fe_gemini_ctx_t *c, const json_t *ce, const char *at);

/* ---- history (one model turn's parts, in order) ---- */

/* An executableCode part (ec, at its part's path): appends a
 * code_interpreter_call {id "ci_...", status "completed", code, outputs []}
 * to c->items, waiting for its result. */
int fe_gemini_code_exec(fe_gemini_ctx_t *c, const json_t *ec, const char *at);

/* A codeExecutionResult part: the waiting item gets its outputs (output as
 * logs; OUTCOME_DEADLINE_EXCEEDED adds the note the model is given when its
 * code runs out of time). sealed, when the part's thoughtSignature opened
 * to a code_interpreter_call (new reference, stolen), replaces the item
 * first. A result with no executableCode before it is a 400. */
int fe_gemini_code_result(fe_gemini_ctx_t *c, const json_t *cer, json_t *sealed, const char *at);

/* An inlineData part of a model turn right after a code result, as
 * fe_gemini_contents.c converted it (part): when it is an input_image, its
 * data URL becomes an image output of that result's item (true); false for
 * any other kind. */
bool fe_gemini_code_image(fe_gemini_ctx_t *c, const json_t *part);

/* A part of another kind: the code item of the turn is over. */
void fe_gemini_code_end(fe_gemini_ctx_t *c);

/* ---- response ---- */

/* The item's {"executableCode":{"language":"PYTHON","code"}} part (new
 * reference). */
json_t *fe_gemini_code_exec_part(const json_t *item);

/* What the codeExecutionResult part's thoughtSignature seals: the item
 * without its outputs (new reference). */
json_t *fe_gemini_code_sealable(const json_t *item);

/* Appends the item's codeExecutionResult part, with signature (stolen; NULL:
 * none) as its thoughtSignature, and its images' inlineData parts to
 * parts. The signature is the caller's to make (fe_gemini_code_parts in
 * fe_gemini_render.c), so this file stays below the renderer. */
void fe_gemini_code_result_parts(json_t *parts, const json_t *item, json_t *signature);

#endif
