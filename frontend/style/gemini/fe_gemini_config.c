/*
 * fe_gemini_config: the parts of a GenerateContentRequest that configure the
 * answer rather than say what the conversation is: tools
 * (functionDeclarations -> non-strict function tools; googleSearch and the
 * older googleSearchRetrieval -> the web_search tool the gateway runs,
 * codeExecution -> its code_interpreter tool, docs/tools.md), toolConfig
 * (functionCallingConfig -> tool_choice) and generationConfig (sampling,
 * stop, candidateCount -> n, response schema -> text.format, thinkingConfig
 * -> reasoning.effort). The style's translation table is in
 * fe_gemini_parse.c.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_gemini_code.h"
#include "fe_gemini_json.h"
#include "fe_gemini_parse.h"
#include "fe_gemini_render.h"
#include "fe_structured.h"
#include "sb_alloc.h"

/* Google's limit: at most 5 stop sequences (candidateCount: the header). */
#define FE_GEMINI_MAX_STOP 5

/* ---- tools and toolConfig ------------------------------------------------ */

/* googleSearch {excludeDomains?, searchTypes?, timeRangeFilter?,
 * blockingConfidence?} of tool t (at its path): its excluded domains are
 * added to *blocked (created on first use). Only what the gateway's search
 * can honour is taken; the rest changes the answer if ignored: a 400. */
static int fe_gemini_google_search(fe_gemini_ctx_t *c, const json_t *gs, const char *at, json_t **blocked)
{
    static const char *const fields[] = {"excludeDomains", "searchTypes", "timeRangeFilter", "blockingConfidence",
                                         NULL};
    static const char *const type_fields[] = {"webSearch", "imageSearch", NULL};
    char gat[FE_GEMINI_AT + 16];
    fe_gemini_path(gat, sizeof gat, "%s.google_search", at);
    if (fe_gemini_known(gs, fields, gat, c->err) < 0)
        return -1;
    json_t *types = fe_gemini_get(gs, "searchTypes");
    if (types) {
        char tat[FE_GEMINI_AT + 32];
        fe_gemini_path(tat, sizeof tat, "%s.search_types", gat);
        if (fe_gemini_known(types, type_fields, tat, c->err) < 0)
            return -1;
        if (fe_gemini_get(types, "imageSearch"))
            return fe_gemini_unsupported(c->err,
                                         "image search ('%s.image_search') is not supported on this gateway; "
                                         "only web search is.",
                                         tat);
    }
    if (fe_gemini_get(gs, "timeRangeFilter"))
        return fe_gemini_unsupported(c->err, "time_range_filter ('%s') is not supported by this gateway's web search.",
                                     gat);
    if (fe_gemini_get(gs, "blockingConfidence"))
        return fe_gemini_unsupported(c->err,
                                     "blocking_confidence ('%s') is not supported by this gateway's web "
                                     "search.",
                                     gat);
    json_t *ex = fe_gemini_array(gs, "excludeDomains", gat, c->err);
    if (c->err->status)
        return -1;
    size_t i;
    json_t *d;
    json_array_foreach (ex, i, d) {
        if (!json_is_string(d) || json_string_length(d) == 0)
            return fe_gemini_fail(c->err, "Invalid value at '%s.exclude_domains[%zu]': expected a domain name.", gat,
                                  i);
        if (!*blocked)
            *blocked = json_array();
        json_array_append(*blocked, d);
    }
    return 0;
}

/* googleSearchRetrieval {dynamicRetrievalConfig {mode, dynamicThreshold}}:
 * the older form of the same search. Dynamic mode lets the model decide
 * whether to search, which it does with any tool: accepted, and the
 * threshold has nothing to apply to. */
static int fe_gemini_search_retrieval(fe_gemini_ctx_t *c, const json_t *gsr, const char *at)
{
    static const char *const fields[] = {"dynamicRetrievalConfig", NULL};
    static const char *const drc_fields[] = {"mode", "dynamicThreshold", NULL};
    char gat[FE_GEMINI_AT + 32];
    fe_gemini_path(gat, sizeof gat, "%s.google_search_retrieval", at);
    if (fe_gemini_known(gsr, fields, gat, c->err) < 0)
        return -1;
    json_t *drc = fe_gemini_get(gsr, "dynamicRetrievalConfig");
    if (!drc)
        return 0;
    char dat[FE_GEMINI_AT + 64];
    fe_gemini_path(dat, sizeof dat, "%s.dynamic_retrieval_config", gat);
    const char *mode = NULL;
    double threshold;
    if (fe_gemini_known(drc, drc_fields, dat, c->err) < 0 || fe_gemini_string(drc, "mode", dat, &mode, c->err) < 0 ||
        fe_gemini_number(drc, "dynamicThreshold", dat, -1e9, 1e9, &threshold, c->err) < 0)
        return -1;
    if (mode && !fe_gemini_ieq(mode, "MODE_UNSPECIFIED") && !fe_gemini_ieq(mode, "MODE_DYNAMIC")) {
        char mat[FE_GEMINI_AT + 80];
        fe_gemini_path(mat, sizeof mat, "%s.mode", dat);
        return fe_gemini_bad_value(
            c->err, mat, "type.googleapis.com/google.ai.generativelanguage.v1beta.DynamicRetrievalConfig.Mode",
            fe_gemini_get(drc, "mode"));
    }
    return 0;
}

int fe_gemini_tools(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const tool_fields[] = {"functionDeclarations", "googleSearch", "googleSearchRetrieval",
                                              "codeExecution",
                                              /* the tools this gateway does not run: */
                                              "urlContext", "computerUse", "fileSearch", "googleMaps", "mcpServers",
                                              "retrieval", "enterpriseWebSearch", NULL};
    static const char *const fn_fields[] = {"name",     "description",        "parameters", "parametersJsonSchema",
                                            "response", "responseJsonSchema", "behavior",   NULL};
    json_t *tools = fe_gemini_array(body, "tools", "", c->err);
    if (c->err->status)
        return -1;
    json_t *out = json_array();
    json_t *search = NULL, *blocked = NULL; /* the one web_search tool (in out), its excluded domains */
    bool code = false;                      /* the code_interpreter tool is in out */
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        char at[FE_GEMINI_AT];
        fe_gemini_path(at, sizeof at, "tools[%zu]", i);
        if (fe_gemini_known(t, tool_fields, at, c->err) < 0)
            goto fail;
        json_t *gs = fe_gemini_get(t, "googleSearch"), *gsr = fe_gemini_get(t, "googleSearchRetrieval");
        if ((gs && fe_gemini_google_search(c, gs, at, &blocked) < 0) ||
            (gsr && fe_gemini_search_retrieval(c, gsr, at) < 0))
            goto fail;
        if ((gs || gsr) && !search) {
            /* Run by the gateway for every upstream (docs/tools.md); several
             * search tools are one search. */
            search = json_pack("{s:s}", "type", "web_search");
            json_array_append(out, search);
        }
        json_t *ce = fe_gemini_get(t, "codeExecution");
        if (ce && fe_gemini_code_tool(c, ce, at) < 0)
            goto fail;
        if (ce && !code) {
            /* The gateway's code interpreter (fe_gemini_code.c); several
             * are one. A new container (a string would name one). */
            json_array_append_new(out,
                                  json_pack("{s:s, s:{s:s}}", "type", "code_interpreter", "container", "type", "auto"));
            code = true;
        }
        for (const char *const *f = tool_fields + 4; *f; f++) {
            if (fe_gemini_get(t, *f)) {
                fe_gemini_unsupported(c->err,
                                      "the '%s' tool ('%s') is not supported on this gateway; only "
                                      "functionDeclarations, googleSearch and codeExecution are.",
                                      *f, at);
                goto fail;
            }
        }
        json_t *decls = fe_gemini_array(t, "functionDeclarations", at, c->err);
        if (c->err->status)
            goto fail;
        size_t j;
        json_t *d;
        json_array_foreach (decls, j, d) {
            char dat[FE_GEMINI_AT];
            fe_gemini_path(dat, sizeof dat, "%s.function_declarations[%zu]", at, j);
            const char *name = NULL, *desc = NULL;
            if (fe_gemini_known(d, fn_fields, dat, c->err) < 0 || fe_gemini_string(d, "name", dat, &name, c->err) < 0 ||
                fe_gemini_string(d, "description", dat, &desc, c->err) < 0)
                goto fail;
            json_t *params = fe_gemini_get(d, "parameters");
            json_t *pjs = fe_gemini_get(d, "parametersJsonSchema");
            json_t *schema = NULL;
            if (params && pjs) {
                fe_gemini_fail(c->err,
                               "Invalid value at '%s': set either parameters or parametersJsonSchema, not "
                               "both.",
                               dat);
                goto fail;
            }
            if (params) {
                char pat[FE_GEMINI_AT + 16];
                fe_gemini_path(pat, sizeof pat, "%s.parameters", dat);
                if (!(schema = fe_gemini_schema(params, pat, 0, c->err)))
                    goto fail;
            } else if (pjs) {
                if (!json_is_object(pjs)) {
                    char pat[FE_GEMINI_AT + 24];
                    fe_gemini_path(pat, sizeof pat, "%s.parameters_json_schema", dat);
                    fe_gemini_bad_value(c->err, pat, "google.protobuf.Value (a JSON Schema object)", pjs);
                    goto fail;
                }
                schema = json_incref(pjs);
            }
            json_t *fn = json_pack("{s:s?, s:s?, s:o?}", "name", name, "description", desc, "parameters", schema);
            json_t *nt = fe_structured_function(fn, FE_STRICT_OFF, dat, c->err); /* non-strict, as Google's are */
            json_decref(fn);
            if (!nt)
                goto fail;
            json_array_append_new(out, nt);
        }
    }
    if (search && blocked)
        json_object_set_new(search, "filters", json_pack("{s:O}", "blocked_domains", blocked));
    json_decref(search);
    json_decref(blocked);
    if (json_array_size(out) > 0)
        json_object_set(canonical, "tools", out);
    json_decref(out);
    return 0;
fail:
    json_decref(search);
    json_decref(blocked);
    json_decref(out);
    return -1;
}

/* Whether tools declare a function named name (built-in tools have none). */
static bool fe_gemini_has_tool(const json_t *tools, const char *name)
{
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        if (n && !strcmp(n, name))
            return true;
    }
    return false;
}

static bool fe_gemini_has_functions(const json_t *tools)
{
    size_t i;
    json_t *t;
    json_array_foreach (tools, i, t)
        if (json_is_string(json_object_get(t, "name")))
            return true;
    return false;
}

/* functionCallingConfig {mode, allowedFunctionNames} -> tool_choice. ANY
 * with a list of names keeps only those tools (the model must call one of
 * them), or names the single one. */
int fe_gemini_tool_config(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const fields[] = {"functionCallingConfig", "retrievalConfig", "includeServerSideToolInvocations",
                                         NULL};
    static const char *const fcc_fields[] = {"mode", "allowedFunctionNames", "streamFunctionCallArguments", NULL};
    json_t *tc = fe_gemini_get(body, "toolConfig");
    if (!tc)
        return 0;
    if (fe_gemini_known(tc, fields, "tool_config", c->err) < 0)
        return -1;
    json_t *fcc = fe_gemini_get(tc, "functionCallingConfig");
    if (!fcc)
        return 0;
    const char *at = "tool_config.function_calling_config";
    const char *mode = NULL;
    if (fe_gemini_known(fcc, fcc_fields, at, c->err) < 0 || fe_gemini_string(fcc, "mode", at, &mode, c->err) < 0)
        return -1;
    json_t *allowed = fe_gemini_array(fcc, "allowedFunctionNames", at, c->err);
    if (c->err->status)
        return -1;
    json_t *tools = json_object_get(canonical, "tools");
    size_t i;
    json_t *n;
    json_array_foreach (allowed, i, n) {
        if (!json_is_string(n) || !fe_gemini_has_tool(tools, json_string_value(n)))
            return fe_gemini_fail(c->err,
                                  "Invalid value at '%s.allowed_function_names[%zu]': function '%.64s' is not "
                                  "declared in tools.",
                                  at, i, json_is_string(n) ? json_string_value(n) : "?");
    }
    if (!mode || fe_gemini_ieq(mode, "MODE_UNSPECIFIED") || fe_gemini_ieq(mode, "AUTO") ||
        fe_gemini_ieq(mode, "VALIDATED")) {
        if (tools)
            json_object_set_new(canonical, "tool_choice", json_string("auto"));
    } else if (fe_gemini_ieq(mode, "NONE")) {
        if (tools)
            json_object_set_new(canonical, "tool_choice", json_string("none"));
    } else if (fe_gemini_ieq(mode, "ANY")) {
        if (!fe_gemini_has_functions(tools))
            return fe_gemini_fail(c->err, "Invalid value at '%s.mode': ANY needs function declarations in tools.", at);
        if (json_array_size(allowed) == 1) {
            json_object_set_new(canonical, "tool_choice",
                                json_pack("{s:s, s:O}", "type", "function", "name", json_array_get(allowed, 0)));
            return 0;
        }
        if (json_array_size(allowed) > 1) {
            json_t *kept = json_array();
            json_t *t;
            json_array_foreach (tools, i, t) {
                size_t k;
                json_t *a;
                if (!json_is_string(json_object_get(t, "name"))) { /* a built-in tool: not a function choice */
                    json_array_append(kept, t);
                    continue;
                }
                json_array_foreach (allowed, k, a)
                    if (json_equal(a, json_object_get(t, "name"))) {
                        json_array_append(kept, t);
                        break;
                    }
            }
            json_object_set_new(canonical, "tools", kept);
        }
        json_object_set_new(canonical, "tool_choice", json_string("required"));
    } else {
        return fe_gemini_bad_value(c->err, "tool_config.function_calling_config.mode",
                                   "type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode",
                                   fe_gemini_get(fcc, "mode"));
    }
    return 0;
}

/* ---- generationConfig ---------------------------------------------------- */

static int fe_gemini_thinking(fe_gemini_ctx_t *c, const json_t *gc, json_t *canonical)
{
    static const char *const fields[] = {"includeThoughts", "thinkingBudget", "thinkingLevel", NULL};
    const char *at = "generation_config.thinking_config";
    json_t *tc = fe_gemini_get(gc, "thinkingConfig");
    if (!tc)
        return 0;
    bool include = false;
    long long budget = 0;
    const char *level = NULL;
    int has_budget = 0;
    if (fe_gemini_known(tc, fields, at, c->err) < 0 ||
        fe_gemini_bool(tc, "includeThoughts", at, &include, c->err) < 0 ||
        (has_budget = fe_gemini_int(tc, "thinkingBudget", at, -1, 1LL << 31, &budget, c->err)) < 0 ||
        fe_gemini_string(tc, "thinkingLevel", at, &level, c->err) < 0)
        return -1;
    if (level && fe_gemini_ieq(level, "THINKING_LEVEL_UNSPECIFIED"))
        level = NULL;
    if (has_budget && level)
        return fe_gemini_fail(c->err, "Invalid value at '%s': set either thinking_budget or thinking_level, not both.",
                              at);
    const char *effort = NULL;
    if (has_budget) {
        /* 0 turns thinking off, -1 is Google's dynamic budget. */
        effort = budget == 0      ? "none"
                 : budget < 0     ? "medium"
                 : budget < 4096  ? "low"
                 : budget < 16384 ? "medium"
                                  : "high";
    } else if (level) {
        static const char *const levels[] = {"minimal", "low", "medium", "high", NULL};
        for (size_t i = 0; levels[i] && !effort; i++)
            if (fe_gemini_ieq(level, levels[i]))
                effort = levels[i];
        if (!effort)
            return fe_gemini_bad_value(c->err, "generation_config.thinking_config.thinking_level",
                                       "type.googleapis.com/google.ai.generativelanguage.v1beta.ThinkingConfig."
                                       "ThinkingLevel",
                                       fe_gemini_get(tc, "thinkingLevel"));
    } else if (include) {
        effort = "medium"; /* asking for thoughts without a budget: Google's default, dynamic thinking */
    }
    if (effort)
        json_object_set_new(canonical, "reasoning", json_pack("{s:s}", "effort", effort));
    json_object_set_new(c->out->style_state, "include_thoughts", json_boolean(include));
    return 0;
}

static int fe_gemini_response_format(fe_gemini_ctx_t *c, const json_t *gc, json_t *canonical)
{
    const char *at = "generation_config";
    const char *mime = NULL;
    if (fe_gemini_string(gc, "responseMimeType", at, &mime, c->err) < 0)
        return -1;
    json_t *schema = fe_gemini_get(gc, "responseSchema");
    json_t *js = fe_gemini_get(gc, "responseJsonSchema");
    bool json_mime = mime && fe_gemini_ieq(mime, "application/json");
    if (mime && !json_mime && !fe_gemini_ieq(mime, "text/plain")) {
        if (fe_gemini_ieq(mime, "text/x.enum"))
            return fe_gemini_unsupported(c->err, "response_mime_type 'text/x.enum' is not supported on this "
                                                 "gateway; use application/json with an enum schema.");
        return fe_gemini_fail(c->err,
                              "Invalid value at 'generation_config.response_mime_type': '%.64s'. Supported "
                              "values are 'text/plain' and 'application/json'.",
                              mime);
    }
    if ((schema || js) && !json_mime)
        return fe_gemini_fail(c->err, "Invalid value at 'generation_config': response_mime_type must be "
                                      "'application/json' when a response schema is set.");
    if (schema && js)
        return fe_gemini_fail(c->err, "Invalid value at 'generation_config': set either response_schema or "
                                      "response_json_schema, not both.");
    if (!json_mime)
        return 0;
    json_t *converted = NULL;
    if (schema) {
        if (!(converted = fe_gemini_schema(schema, "generation_config.response_schema", 0, c->err)))
            return -1;
    } else if (js) {
        if (!json_is_object(js))
            return fe_gemini_bad_value(c->err, "generation_config.response_json_schema",
                                       "google.protobuf.Value (a JSON Schema object)", js);
        converted = json_incref(js);
    }
    json_t *fmt = converted ? json_pack("{s:s, s:s, s:o, s:b}", "type", "json_schema", "name", "response", "schema",
                                        converted, "strict", 0)
                            : json_pack("{s:s}", "type", "json_object");
    json_t *f = fe_structured_format(fmt, "generation_config.response_schema", c->err);
    json_decref(fmt);
    if (!f)
        return -1;
    json_object_set_new(canonical, "text", json_pack("{s:o}", "format", f));
    return 0;
}

int fe_gemini_generation(fe_gemini_ctx_t *c, const json_t *body, json_t *canonical)
{
    static const char *const fields[] = {"stopSequences",
                                         "responseMimeType",
                                         "responseSchema",
                                         "responseJsonSchema",
                                         "responseModalities",
                                         "candidateCount",
                                         "maxOutputTokens",
                                         "temperature",
                                         "topP",
                                         "topK",
                                         "seed",
                                         "presencePenalty",
                                         "frequencyPenalty",
                                         "responseLogprobs",
                                         "logprobs",
                                         "enableEnhancedCivicAnswers",
                                         "speechConfig",
                                         "thinkingConfig",
                                         "imageConfig",
                                         "mediaResolution",
                                         NULL};
    const char *at = "generation_config";
    json_t *gc = fe_gemini_get(body, "generationConfig");
    if (!gc)
        return 0;
    if (fe_gemini_known(gc, fields, at, c->err) < 0)
        return -1;
    static const struct {
        const char *field, *canonical;
        double lo, hi;
    } numbers[] = {
        {"temperature", "temperature", 0, 2},
        {"topP", "top_p", 0, 1},
        {"presencePenalty", "presence_penalty", -2, 2},
        {"frequencyPenalty", "frequency_penalty", -2, 2},
    };
    for (size_t i = 0; i < sizeof numbers / sizeof numbers[0]; i++) {
        double d;
        int rc = fe_gemini_number(gc, numbers[i].field, at, numbers[i].lo, numbers[i].hi, &d, c->err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            json_object_set_new(canonical, numbers[i].canonical, json_real(d));
    }
    static const struct {
        const char *field, *canonical;
        long long lo, hi;
    } ints[] = {
        {"maxOutputTokens", "max_output_tokens", 1, 1000000000},
        {"topK", "top_k", 1, 1000000},
        {"seed", "seed", -2147483648LL, 2147483647LL},
    };
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
        long long v;
        int rc = fe_gemini_int(gc, ints[i].field, at, ints[i].lo, ints[i].hi, &v, c->err);
        if (rc < 0)
            return -1;
        if (rc > 0)
            json_object_set_new(canonical, ints[i].canonical, json_integer(v));
    }
    long long n = 1;
    if (fe_gemini_int(gc, "candidateCount", at, 1, FE_GEMINI_MAX_CANDIDATES, &n, c->err) < 0)
        return -1;
    c->out->n = (int)n;
    json_t *stop = fe_gemini_array(gc, "stopSequences", at, c->err);
    if (c->err->status)
        return -1;
    if (stop) {
        size_t i;
        json_t *s;
        bool ok = json_array_size(stop) <= FE_GEMINI_MAX_STOP;
        json_array_foreach (stop, i, s)
            ok = ok && json_is_string(s);
        if (!ok)
            return fe_gemini_fail(c->err,
                                  "Invalid value at 'generation_config.stop_sequences': expected at most %d "
                                  "strings.",
                                  FE_GEMINI_MAX_STOP);
        if (json_array_size(stop) > 0)
            json_object_set(canonical, "stop", stop);
    }
    json_t *modalities = fe_gemini_array(gc, "responseModalities", at, c->err);
    if (c->err->status)
        return -1;
    size_t i;
    json_t *m;
    json_array_foreach (modalities, i, m) {
        if (!fe_gemini_ieq(json_string_value(m), "TEXT"))
            return fe_gemini_unsupported(c->err, "response_modalities: only TEXT output is supported on this "
                                                 "gateway.");
    }
    bool flag = false;
    if (fe_gemini_bool(gc, "responseLogprobs", at, &flag, c->err) < 0)
        return -1;
    if (flag || fe_gemini_get(gc, "logprobs"))
        return fe_gemini_unsupported(c->err, "log probabilities (response_logprobs, logprobs) are not available on "
                                             "this gateway.");
    if (fe_gemini_get(gc, "speechConfig") || fe_gemini_get(gc, "imageConfig"))
        return fe_gemini_unsupported(c->err, "speech and image output (speech_config, image_config) are not "
                                             "supported on this gateway.");
    /* enableEnhancedCivicAnswers and mediaResolution are hints an upstream
     * may ignore; they are accepted and not forwarded. */
    return fe_gemini_response_format(c, gc, canonical) < 0 || fe_gemini_thinking(c, gc, canonical) < 0 ? -1 : 0;
}
