/*
 * fe_gemini_parse: what the Generate Content style's request parsing shares
 * between its files: the parse context, and the translation of each part of
 * a GenerateContentRequest into the canonical request (fe_gemini_contents.c:
 * contents and systemInstruction; fe_gemini_config.c: tools, toolConfig,
 * generationConfig). Each returns 0, or -1 with *c->err set (Google's
 * wording, fe_gemini_json.h).
 */
#ifndef FE_GEMINI_PARSE_H
#define FE_GEMINI_PARSE_H

#include <jansson.h>
#include <stdbool.h>

#include "fe_error.h"
#include "fe_style.h"

typedef struct {
    const fe_sealer_t *seal; /* opens thoughtSignatures (the caller's) */
    fe_parsed_t *out;        /* the parsed request being filled (n, style_state) */
    fe_error_t *err;
    json_t *items;     /* canonical input being built (borrowed) */
    json_t *calls;     /* function calls so far: [{"call_id","name","turn","answered"}] (owned) */
    json_t *code;      /* the model turn's latest code_interpreter_call (in items, borrowed), or NULL */
    bool code_waiting; /* its executableCode came, its codeExecutionResult not yet (fe_gemini_code.c) */
} fe_gemini_ctx_t;

/* contents[] -> canonical input items (appended to c->items). */
int fe_gemini_contents(fe_gemini_ctx_t *c, const json_t *body);

/* systemInstruction (a Content of text parts) -> canonical instructions. */
int fe_gemini_system(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical);

/* tools[].functionDeclarations -> canonical function tools; googleSearch
 * and codeExecution -> the built-in web_search and code_interpreter tools. */
int fe_gemini_tools(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical);

/* toolConfig.functionCallingConfig -> tool_choice (after fe_gemini_tools). */
int fe_gemini_tool_config(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical);

/* generationConfig -> sampling, stop, n, text.format, reasoning. */
int fe_gemini_generation(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical);

#endif
