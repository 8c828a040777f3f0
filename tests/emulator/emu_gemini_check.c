/*
 * emu_gemini_check: validation of a Gemini GenerateContentRequest (and a
 * countTokens body) the way the Generative Language API does it, in its two
 * phases:
 *
 *   1. proto3 JSON parsing, against a table of the request's messages: every
 *      unknown name anywhere ("Invalid JSON payload received. Unknown name
 *      \"x\" at 'generation_config': Cannot find field."), wrong JSON types,
 *      bad enum values and bytes that are not base64 are all collected into
 *      one 400 INVALID_ARGUMENT with a BadRequest fieldViolations detail.
 *      Field names are accepted in lowerCamelCase and snake_case, as proto3
 *      JSON does; paths in messages are snake_case.
 *   2. semantic checks ("* GenerateContentRequest.contents: contents is not
 *      specified"): roles, empty parts, the 'data' oneof, function names,
 *      generationConfig ranges and MIME types, the order of function call and
 *      function response turns, and thought signatures on function calls when
 *      the model thinks (Gemini 2.5+/3 behaviour).
 *
 * Errors are Google's {"error":{code,message,status,details}}.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_check.h"
#include "emu_internal.h"
#include "sb_alloc.h"

#define PATH_LEN 256
#define TS_PREFIX "emu-ts:"
#define PKG "type.googleapis.com/google.ai.generativelanguage.v1beta."
#define SIG_DOCS "https://ai.google.dev/gemini-api/docs/thought-signatures"

void sb_emu_gemini_error(struct sb_emu_reply *r, int code, const char *status, json_t *details, const char *fmt, ...)
{
    char msg[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    json_t *e = json_pack("{s:{s:i, s:s, s:s}}", "error", "code", code, "message", msg, "status", status);
    if (details)
        json_object_set_new(json_object_get(e, "error"), "details", details);
    sb_emu_reply_json(r, code, e);
    json_decref(e);
}

/* "generationConfig" -> "generation_config" */
static void snake(const char *camel, char *out, size_t outlen)
{
    size_t o = 0;
    for (const char *p = camel; *p && o + 2 < outlen; p++) {
        if (isupper((unsigned char)*p)) {
            out[o++] = '_';
            out[o++] = (char)tolower((unsigned char)*p);
        } else {
            out[o++] = *p;
        }
    }
    out[o] = '\0';
}

json_t *sb_emu_gget(const json_t *obj, const char *camel)
{
    json_t *v = json_object_get(obj, camel);
    if (v)
        return v;
    char s[96];
    snake(camel, s, sizeof s);
    return json_object_get(obj, s);
}

/* ---- phase 1: the proto3 JSON shape ----------------------------------------------------- */

enum gkind { G_STRING, G_BOOL, G_INT, G_FLOAT, G_BYTES, G_ENUM, G_MSG, G_STRUCT, G_VALUE, G_SCHEMA_MAP };

struct gmsg;
struct gfield {
    const char *name; /* lowerCamelCase */
    enum gkind kind;
    bool repeated;
    const struct gmsg *msg;         /* G_MSG, G_SCHEMA_MAP */
    const char *enum_type;          /* G_ENUM */
    const char *const *enum_values; /* G_ENUM */
};
struct gmsg {
    const char *type; /* for "Invalid value" messages */
    const struct gfield *fields;
};

static const char *const k_types[] = {"TYPE_UNSPECIFIED", "STRING", "NUMBER", "INTEGER", "BOOLEAN", "ARRAY",
                                      "OBJECT",           "NULL",   NULL};
static const char *const k_modes[] = {"MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED", NULL};
static const char *const k_categories[] = {"HARM_CATEGORY_UNSPECIFIED",
                                           "HARM_CATEGORY_HARASSMENT",
                                           "HARM_CATEGORY_HATE_SPEECH",
                                           "HARM_CATEGORY_SEXUALLY_EXPLICIT",
                                           "HARM_CATEGORY_DANGEROUS_CONTENT",
                                           "HARM_CATEGORY_CIVIC_INTEGRITY",
                                           NULL};
static const char *const k_thresholds[] = {"HARM_BLOCK_THRESHOLD_UNSPECIFIED",
                                           "BLOCK_LOW_AND_ABOVE",
                                           "BLOCK_MEDIUM_AND_ABOVE",
                                           "BLOCK_ONLY_HIGH",
                                           "BLOCK_NONE",
                                           "OFF",
                                           NULL};
static const char *const k_levels[] = {"THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH", NULL};
static const char *const k_modalities[] = {"MODALITY_UNSPECIFIED", "TEXT", "IMAGE", "AUDIO", NULL};
static const char *const k_behaviors[] = {"UNSPECIFIED", "BLOCKING", "NON_BLOCKING", NULL};
static const char *const k_resolutions[] = {"MEDIA_RESOLUTION_UNSPECIFIED", "MEDIA_RESOLUTION_LOW",
                                            "MEDIA_RESOLUTION_MEDIUM", "MEDIA_RESOLUTION_HIGH", NULL};

static const struct gmsg g_schema; /* recursive: defined below */
static const struct gfield f_schema[] = {{"type", G_ENUM, false, NULL, "Type", k_types},
                                         {"format", G_STRING, false, NULL, NULL, NULL},
                                         {"title", G_STRING, false, NULL, NULL, NULL},
                                         {"description", G_STRING, false, NULL, NULL, NULL},
                                         {"nullable", G_BOOL, false, NULL, NULL, NULL},
                                         {"enum", G_STRING, true, NULL, NULL, NULL},
                                         {"maxItems", G_INT, false, NULL, NULL, NULL},
                                         {"minItems", G_INT, false, NULL, NULL, NULL},
                                         {"properties", G_SCHEMA_MAP, false, &g_schema, NULL, NULL},
                                         {"required", G_STRING, true, NULL, NULL, NULL},
                                         {"minProperties", G_INT, false, NULL, NULL, NULL},
                                         {"maxProperties", G_INT, false, NULL, NULL, NULL},
                                         {"minLength", G_INT, false, NULL, NULL, NULL},
                                         {"maxLength", G_INT, false, NULL, NULL, NULL},
                                         {"pattern", G_STRING, false, NULL, NULL, NULL},
                                         {"example", G_VALUE, false, NULL, NULL, NULL},
                                         {"anyOf", G_MSG, true, &g_schema, NULL, NULL},
                                         {"propertyOrdering", G_STRING, true, NULL, NULL, NULL},
                                         {"default", G_VALUE, false, NULL, NULL, NULL},
                                         {"items", G_MSG, false, &g_schema, NULL, NULL},
                                         {"minimum", G_FLOAT, false, NULL, NULL, NULL},
                                         {"maximum", G_FLOAT, false, NULL, NULL, NULL},
                                         {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_schema = {PKG "Schema", f_schema};

static const struct gfield f_blob[] = {{"mimeType", G_STRING, false, NULL, NULL, NULL},
                                       {"data", G_BYTES, false, NULL, NULL, NULL},
                                       {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_blob = {PKG "Blob", f_blob};
static const struct gfield f_file[] = {{"mimeType", G_STRING, false, NULL, NULL, NULL},
                                       {"fileUri", G_STRING, false, NULL, NULL, NULL},
                                       {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_file = {PKG "FileData", f_file};
static const struct gfield f_fcall[] = {{"id", G_STRING, false, NULL, NULL, NULL},
                                        {"name", G_STRING, false, NULL, NULL, NULL},
                                        {"args", G_STRUCT, false, NULL, NULL, NULL},
                                        {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_fcall = {PKG "FunctionCall", f_fcall};
static const struct gfield f_fresp[] = {{"id", G_STRING, false, NULL, NULL, NULL},
                                        {"name", G_STRING, false, NULL, NULL, NULL},
                                        {"response", G_STRUCT, false, NULL, NULL, NULL},
                                        {"willContinue", G_BOOL, false, NULL, NULL, NULL},
                                        {"scheduling", G_STRING, false, NULL, NULL, NULL},
                                        {"parts", G_VALUE, false, NULL, NULL, NULL},
                                        {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_fresp = {PKG "FunctionResponse", f_fresp};
static const struct gfield f_part[] = {{"text", G_STRING, false, NULL, NULL, NULL},
                                       {"inlineData", G_MSG, false, &g_blob, NULL, NULL},
                                       {"fileData", G_MSG, false, &g_file, NULL, NULL},
                                       {"functionCall", G_MSG, false, &g_fcall, NULL, NULL},
                                       {"functionResponse", G_MSG, false, &g_fresp, NULL, NULL},
                                       {"executableCode", G_STRUCT, false, NULL, NULL, NULL},
                                       {"codeExecutionResult", G_STRUCT, false, NULL, NULL, NULL},
                                       {"thought", G_BOOL, false, NULL, NULL, NULL},
                                       {"thoughtSignature", G_BYTES, false, NULL, NULL, NULL},
                                       {"videoMetadata", G_STRUCT, false, NULL, NULL, NULL},
                                       {"partMetadata", G_STRUCT, false, NULL, NULL, NULL},
                                       {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_part = {PKG "Part", f_part};
static const struct gfield f_content[] = {{"role", G_STRING, false, NULL, NULL, NULL},
                                          {"parts", G_MSG, true, &g_part, NULL, NULL},
                                          {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_content = {PKG "Content", f_content};
static const struct gfield f_decl[] = {{"name", G_STRING, false, NULL, NULL, NULL},
                                       {"description", G_STRING, false, NULL, NULL, NULL},
                                       {"parameters", G_MSG, false, &g_schema, NULL, NULL},
                                       {"parametersJsonSchema", G_VALUE, false, NULL, NULL, NULL},
                                       {"response", G_MSG, false, &g_schema, NULL, NULL},
                                       {"responseJsonSchema", G_VALUE, false, NULL, NULL, NULL},
                                       {"behavior", G_ENUM, false, NULL, "FunctionDeclaration.Behavior", k_behaviors},
                                       {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_decl = {PKG "FunctionDeclaration", f_decl};
static const struct gfield f_tool[] = {{"functionDeclarations", G_MSG, true, &g_decl, NULL, NULL},
                                       {"googleSearch", G_STRUCT, false, NULL, NULL, NULL},
                                       {"googleSearchRetrieval", G_STRUCT, false, NULL, NULL, NULL},
                                       {"codeExecution", G_STRUCT, false, NULL, NULL, NULL},
                                       {"urlContext", G_STRUCT, false, NULL, NULL, NULL},
                                       {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_tool = {PKG "Tool", f_tool};
static const struct gfield f_fcc[] = {{"mode", G_ENUM, false, NULL, "FunctionCallingConfig.Mode", k_modes},
                                      {"allowedFunctionNames", G_STRING, true, NULL, NULL, NULL},
                                      {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_fcc = {PKG "FunctionCallingConfig", f_fcc};
static const struct gfield f_toolcfg[] = {{"functionCallingConfig", G_MSG, false, &g_fcc, NULL, NULL},
                                          {"retrievalConfig", G_STRUCT, false, NULL, NULL, NULL},
                                          {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_toolcfg = {PKG "ToolConfig", f_toolcfg};
static const struct gfield f_safety[] = {
    {"category", G_ENUM, false, NULL, "HarmCategory", k_categories},
    {"threshold", G_ENUM, false, NULL, "SafetySetting.HarmBlockThreshold", k_thresholds},
    {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_safety = {PKG "SafetySetting", f_safety};
static const struct gfield f_thinking[] = {
    {"includeThoughts", G_BOOL, false, NULL, NULL, NULL},
    {"thinkingBudget", G_INT, false, NULL, NULL, NULL},
    {"thinkingLevel", G_ENUM, false, NULL, "ThinkingConfig.ThinkingLevel", k_levels},
    {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_thinking = {PKG "ThinkingConfig", f_thinking};
static const struct gfield f_gencfg[] = {
    {"stopSequences", G_STRING, true, NULL, NULL, NULL},
    {"responseMimeType", G_STRING, false, NULL, NULL, NULL},
    {"responseSchema", G_MSG, false, &g_schema, NULL, NULL},
    {"responseJsonSchema", G_VALUE, false, NULL, NULL, NULL},
    {"responseModalities", G_ENUM, true, NULL, "GenerationConfig.Modality", k_modalities},
    {"candidateCount", G_INT, false, NULL, NULL, NULL},
    {"maxOutputTokens", G_INT, false, NULL, NULL, NULL},
    {"temperature", G_FLOAT, false, NULL, NULL, NULL},
    {"topP", G_FLOAT, false, NULL, NULL, NULL},
    {"topK", G_INT, false, NULL, NULL, NULL},
    {"seed", G_INT, false, NULL, NULL, NULL},
    {"presencePenalty", G_FLOAT, false, NULL, NULL, NULL},
    {"frequencyPenalty", G_FLOAT, false, NULL, NULL, NULL},
    {"responseLogprobs", G_BOOL, false, NULL, NULL, NULL},
    {"logprobs", G_INT, false, NULL, NULL, NULL},
    {"enableEnhancedCivicAnswers", G_BOOL, false, NULL, NULL, NULL},
    {"speechConfig", G_STRUCT, false, NULL, NULL, NULL},
    {"imageConfig", G_STRUCT, false, NULL, NULL, NULL},
    {"thinkingConfig", G_MSG, false, &g_thinking, NULL, NULL},
    {"mediaResolution", G_ENUM, false, NULL, "GenerationConfig.MediaResolution", k_resolutions},
    {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_gencfg = {PKG "GenerationConfig", f_gencfg};
static const struct gfield f_request[] = {{"model", G_STRING, false, NULL, NULL, NULL},
                                          {"contents", G_MSG, true, &g_content, NULL, NULL},
                                          {"systemInstruction", G_MSG, false, &g_content, NULL, NULL},
                                          {"tools", G_MSG, true, &g_tool, NULL, NULL},
                                          {"toolConfig", G_MSG, false, &g_toolcfg, NULL, NULL},
                                          {"safetySettings", G_MSG, true, &g_safety, NULL, NULL},
                                          {"generationConfig", G_MSG, false, &g_gencfg, NULL, NULL},
                                          {"cachedContent", G_STRING, false, NULL, NULL, NULL},
                                          {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_request = {PKG "GenerateContentRequest", f_request};
static const struct gfield f_count[] = {{"contents", G_MSG, true, &g_content, NULL, NULL},
                                        {"generateContentRequest", G_MSG, false, &g_request, NULL, NULL},
                                        {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_count = {PKG "CountTokensRequest", f_count};
/* The embedding methods' requests (emu_gemini_embed.c checks their meaning). */
static const char *const k_tasks[] = {"TASK_TYPE_UNSPECIFIED", "RETRIEVAL_QUERY",
                                      "RETRIEVAL_DOCUMENT",    "SEMANTIC_SIMILARITY",
                                      "CLASSIFICATION",        "CLUSTERING",
                                      "QUESTION_ANSWERING",    "FACT_VERIFICATION",
                                      "CODE_RETRIEVAL_QUERY",  NULL};
static const struct gfield f_embed[] = {{"model", G_STRING, false, NULL, NULL, NULL},
                                        {"content", G_MSG, false, &g_content, NULL, NULL},
                                        {"taskType", G_ENUM, false, NULL, "TaskType", k_tasks},
                                        {"title", G_STRING, false, NULL, NULL, NULL},
                                        {"outputDimensionality", G_INT, false, NULL, NULL, NULL},
                                        {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_embed = {PKG "EmbedContentRequest", f_embed};
static const struct gfield f_batch[] = {{"requests", G_MSG, true, &g_embed, NULL, NULL},
                                        {NULL, 0, false, NULL, NULL, NULL}};
static const struct gmsg g_batch = {PKG "BatchEmbedContentsRequest", f_batch};

/* Parse-phase problems, collected like Google's parser does. */
struct perrs {
    json_t *violations; /* [{field?, description}] */
    char *message;      /* descriptions joined by "\n" */
};

static void perr_add(struct perrs *e, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void perr_add(struct perrs *e, const char *field, const char *fmt, ...)
{
    char desc[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(desc, sizeof desc, fmt, ap);
    va_end(ap);
    json_t *v = json_object();
    if (field && *field)
        json_object_set_new(v, "field", json_string(field));
    json_object_set_new(v, "description", json_string(desc));
    json_array_append_new(e->violations, v);
    char *joined = sb_xasprintf("%s%s%s", e->message ? e->message : "", e->message ? "\n" : "", desc);
    free(e->message);
    e->message = joined;
}

/* A short JSON rendering of v for "Invalid value" messages. */
static void render(const json_t *v, char *out, size_t outlen)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    snprintf(out, outlen, "%.60s%s", s ? s : "?", s && strlen(s) > 60 ? "..." : "");
    free(s);
}

static void invalid_value(struct perrs *e, const char *path, const char *type, const json_t *v)
{
    char r[80];
    render(v, r, sizeof r);
    perr_add(e, path, "Invalid value at '%s' (%s), %s", path, type, r);
}

static bool numeric_string(const json_t *v, bool integer)
{
    const char *s = json_string_value(v);
    if (!s || !*s)
        return false;
    char *end = NULL;
    if (integer)
        (void)strtoll(s, &end, 10);
    else
        (void)strtod(s, &end);
    return *end == '\0';
}

static void walk_msg(struct perrs *e, const json_t *v, const struct gmsg *m, const char *path);

static void walk_scalar(struct perrs *e, const json_t *v, const struct gfield *f, const char *path)
{
    char ename[128];
    switch (f->kind) {
    case G_STRING:
        if (!json_is_string(v))
            invalid_value(e, path, "TYPE_STRING", v);
        break;
    case G_BOOL:
        if (!json_is_boolean(v))
            invalid_value(e, path, "TYPE_BOOL", v);
        break;
    case G_INT:
        if (!json_is_integer(v) && !numeric_string(v, true))
            invalid_value(e, path, "TYPE_INT32", v);
        break;
    case G_FLOAT:
        if (!json_is_number(v) && !numeric_string(v, false))
            invalid_value(e, path, "TYPE_FLOAT", v);
        break;
    case G_BYTES: {
        const char *s = json_string_value(v);
        unsigned char *bytes = NULL;
        size_t n = 0;
        if (!s) {
            invalid_value(e, path, "TYPE_BYTES", v);
        } else if (sb_emu_base64url_decode_strict(s, strlen(s), &bytes, &n) < 0) {
            perr_add(e, path, "Invalid value at '%s' (TYPE_BYTES), Base64 decoding failed for \"%.60s\"", path, s);
        }
        free(bytes);
        break;
    }
    case G_ENUM:
        snprintf(ename, sizeof ename, PKG "%s", f->enum_type);
        if (!json_is_string(v) || !sb_emu_in_list_nocase(json_string_value(v), f->enum_values))
            invalid_value(e, path, ename, v);
        break;
    case G_MSG:
        walk_msg(e, v, f->msg, path);
        break;
    case G_STRUCT:
        if (!json_is_object(v))
            invalid_value(e, path, "type.googleapis.com/google.protobuf.Struct", v);
        break;
    case G_VALUE:
        break;
    case G_SCHEMA_MAP:
        if (!json_is_object(v)) {
            invalid_value(e, path, f->msg->type, v);
        } else {
            size_t i = 0;
            const char *k;
            json_t *s;
            json_object_foreach ((json_t *)v, k, s) {
                char sub[PATH_LEN];
                sb_emu_pathf(sub, sizeof sub, "%s[%zu].value", path, i++);
                walk_msg(e, s, f->msg, sub);
            }
        }
        break;
    }
}

static const struct gfield *find_field(const struct gmsg *m, const char *key)
{
    for (const struct gfield *f = m->fields; f->name; f++) {
        char s[96];
        snake(f->name, s, sizeof s);
        if (!strcmp(key, f->name) || !strcmp(key, s))
            return f;
    }
    return NULL;
}

static void walk_msg(struct perrs *e, const json_t *v, const struct gmsg *m, const char *path)
{
    if (!json_is_object(v)) {
        invalid_value(e, path, m->type, v);
        return;
    }
    const char *key;
    json_t *child;
    json_object_foreach ((json_t *)v, key, child) {
        const struct gfield *f = find_field(m, key);
        if (!f) {
            if (*path)
                perr_add(e, path, "Invalid JSON payload received. Unknown name \"%.64s\" at '%s': Cannot find field.",
                         key, path);
            else
                perr_add(e, NULL, "Invalid JSON payload received. Unknown name \"%.64s\": Cannot find field.", key);
            continue;
        }
        if (json_is_null(child))
            continue;
        char sname[96], sub[PATH_LEN];
        snake(f->name, sname, sizeof sname);
        sb_emu_pathf(sub, sizeof sub, "%s%s%s", path, *path ? "." : "", sname);
        if (f->repeated) {
            if (!json_is_array(child)) {
                invalid_value(e, sub, f->kind == G_MSG ? f->msg->type : "TYPE_STRING", child);
                continue;
            }
            size_t i;
            json_t *item;
            json_array_foreach (child, i, item) {
                char isub[PATH_LEN];
                sb_emu_pathf(isub, sizeof isub, "%s[%zu]", sub, i);
                walk_scalar(e, item, f, isub);
            }
        } else {
            walk_scalar(e, child, f, sub);
        }
    }
}

/* ---- phase 2: semantics ------------------------------------------------------------------ */

/* "* GenerateContentRequest.<path>: <what>\n", Google's validation message shape. */
static bool bad(struct sb_emu_call *call, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static bool bad(struct sb_emu_call *call, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL, "%s", msg);
    return false;
}

static const char *const data_fields[] = {
    "text",           "inlineData",          "fileData", "functionCall", "functionResponse",
    "executableCode", "codeExecutionResult", NULL};

static bool check_part(struct sb_emu_call *call, const json_t *part, const char *path)
{
    const char *set = NULL;
    for (const char *const *f = data_fields; *f; f++) {
        if (!sb_emu_gget(part, *f))
            continue;
        if (set) {
            char s[64];
            snake(*f, s, sizeof s);
            return bad(call, "* GenerateContentRequest.%s.data: oneof field 'data' is already set. Cannot set '%s'\n",
                       path, s);
        }
        set = *f;
    }
    if (!set)
        return bad(call,
                   "* GenerateContentRequest.%s.data: required oneof field 'data' must have one initialized field\n",
                   path);
    json_t *blob = sb_emu_gget(part, "inlineData");
    if (blob) {
        if (!json_string_value(sb_emu_gget(blob, "mimeType")))
            return bad(call, "* GenerateContentRequest.%s.inline_data.mime_type: mime_type is not specified\n", path);
        if (!json_string_value(sb_emu_gget(blob, "data")) || !*json_string_value(sb_emu_gget(blob, "data")))
            return bad(call, "* GenerateContentRequest.%s.inline_data.data: data is not specified\n", path);
    }
    json_t *fd = sb_emu_gget(part, "fileData");
    if (fd && !json_string_value(sb_emu_gget(fd, "fileUri")))
        return bad(call, "* GenerateContentRequest.%s.file_data.file_uri: file_uri is not specified\n", path);
    json_t *fc = sb_emu_gget(part, "functionCall");
    if (fc && !json_string_value(sb_emu_gget(fc, "name")))
        return bad(call, "* GenerateContentRequest.%s.function_call.name: name is not specified\n", path);
    json_t *fr = sb_emu_gget(part, "functionResponse");
    if (fr && !json_string_value(sb_emu_gget(fr, "name")))
        return bad(call, "* GenerateContentRequest.%s.function_response.name: name is not specified\n", path);
    return true;
}

static const char *role_of(const json_t *c)
{
    const char *r = json_string_value(sb_emu_gget(c, "role"));
    return r && *r ? r : "user";
}

/* How many parts of c carry field (camelCase). */
static size_t count_parts(const json_t *c, const char *field)
{
    size_t n = 0, i;
    json_t *p;
    json_array_foreach (sb_emu_gget(c, "parts"), i, p) {
        if (sb_emu_gget(p, field))
            n++;
    }
    return n;
}

static bool has_called(const json_t *c, const char *name)
{
    size_t i;
    json_t *p;
    json_array_foreach (sb_emu_gget(c, "parts"), i, p) {
        const char *n = json_string_value(sb_emu_gget(sb_emu_gget(p, "functionCall"), "name"));
        if (n && !strcmp(n, name))
            return true;
    }
    return false;
}

bool sb_emu_gemini_thinking(const json_t *req)
{
    json_t *tc = sb_emu_gget(sb_emu_gget(req, "generationConfig"), "thinkingConfig");
    if (!json_is_object(tc))
        return false;
    json_t *budget = sb_emu_gget(tc, "thinkingBudget");
    json_t *level = sb_emu_gget(tc, "thinkingLevel");
    if (json_is_string(level))
        return true;
    if (budget && !json_is_null(budget)) {
        long long b = json_is_integer(budget) ? json_integer_value(budget) : atoll(json_string_value(budget));
        return b != 0;
    }
    return json_is_true(sb_emu_gget(tc, "includeThoughts"));
}

char *sb_emu_gemini_signature(const char *name)
{
    char *plain = sb_xasprintf(TS_PREFIX "%s", name);
    char *sig = sb_emu_base64_encode(plain, strlen(plain));
    free(plain);
    return sig;
}

/* A thought signature is ours when it decodes to "emu-ts:<name of its function call>". */
static bool signature_ok(const char *sig, const char *name)
{
    char *want = sb_emu_gemini_signature(name);
    bool ok = !strcmp(sig, want);
    free(want);
    return ok;
}

/* The order of turns: function calls after a user turn, responses right after the calls they answer. */
static bool check_turns(struct sb_emu_call *call, const json_t *contents, bool thinking)
{
    size_t n = json_array_size(contents);
    /* The current turn starts after the last user content that is not only function responses. */
    size_t turn_start = 0;
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(contents, i);
        if (!strcmp(role_of(c), "user") &&
            count_parts(c, "functionResponse") < json_array_size(sb_emu_gget(c, "parts")))
            turn_start = i + 1;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *c = json_array_get(contents, i);
        json_t *prev = i > 0 ? json_array_get(contents, i - 1) : NULL;
        size_t calls = count_parts(c, "functionCall"), responses = count_parts(c, "functionResponse");
        if (calls && (!prev || strcmp(role_of(prev), "user")))
            return bad(call, "Please ensure that function call turn comes immediately after a user turn or after a "
                             "function response turn.");
        if (responses) {
            size_t prev_calls = prev ? count_parts(prev, "functionCall") : 0;
            if (!prev_calls || strcmp(role_of(prev), "model"))
                return bad(call, "Please ensure that function response turn comes immediately after a function call "
                                 "turn.");
            if (responses != prev_calls)
                return bad(call, "Please ensure that the number of function response parts is equal to the number "
                                 "of function call parts of the function call turn.");
            size_t k;
            json_t *p;
            json_array_foreach (sb_emu_gget(c, "parts"), k, p) {
                const char *name = json_string_value(sb_emu_gget(sb_emu_gget(p, "functionResponse"), "name"));
                if (name && !has_called(prev, name))
                    return bad(call,
                               "* GenerateContentRequest.contents[%zu].parts[%zu].function_response.name: function "
                               "response '%.64s' does not answer a function call of the previous turn.\n",
                               i, k, name);
            }
        }
        if (!calls)
            continue;
        /* Signatures: verify every one given back; require it on the first call of each step of this turn. */
        bool first = true;
        size_t k;
        json_t *p;
        json_array_foreach (sb_emu_gget(c, "parts"), k, p) {
            json_t *fc = sb_emu_gget(p, "functionCall");
            if (!fc)
                continue;
            const char *name = json_string_value(sb_emu_gget(fc, "name"));
            const char *sig = json_string_value(sb_emu_gget(p, "thoughtSignature"));
            if (sig && !signature_ok(sig, name))
                return bad(call,
                           "* GenerateContentRequest.contents[%zu].parts[%zu].thought_signature: Thought "
                           "signature is not valid.\n",
                           i, k);
            if (thinking && first && i >= turn_start && !sig)
                return bad(call,
                           "Function call is missing a thought_signature in functionCall parts. This is required for "
                           "tools to work correctly, and missing thought_signature may lead to degraded model "
                           "performance. Additional data, function call `default_api:%.64s` , position %zu. Please "
                           "refer to " SIG_DOCS " for more details.",
                           name, i + 1);
            first = false;
        }
    }
    return true;
}

static bool valid_function_name(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 64 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != ':' && *s != '-')
            return false;
    return true;
}

static bool declares(const json_t *req, const char *name)
{
    size_t i, k;
    json_t *t, *d;
    json_array_foreach (sb_emu_gget(req, "tools"), i, t) {
        json_array_foreach (sb_emu_gget(t, "functionDeclarations"), k, d) {
            const char *n = json_string_value(sb_emu_gget(d, "name"));
            if (n && !strcmp(n, name))
                return true;
        }
    }
    return false;
}

static bool check_tools(struct sb_emu_call *call, const json_t *req)
{
    size_t i, k;
    json_t *t, *d;
    json_array_foreach (sb_emu_gget(req, "tools"), i, t) {
        json_array_foreach (sb_emu_gget(t, "functionDeclarations"), k, d) {
            const char *name = json_string_value(sb_emu_gget(d, "name"));
            if (!name || !valid_function_name(name))
                return bad(call,
                           "* GenerateContentRequest.tools[%zu].function_declarations[%zu].name: Invalid function "
                           "name. Must start with a letter or an underscore. Must be a-z, A-Z, 0-9, or contain "
                           "underscores, dots, colons and dashes, with a maximum length of 64.\n",
                           i, k);
            json_t *p = sb_emu_gget(d, "parameters"), *pj = sb_emu_gget(d, "parametersJsonSchema");
            if (p && !json_is_null(p) && pj && !json_is_null(pj))
                return bad(call,
                           "* GenerateContentRequest.tools[%zu].function_declarations[%zu]: parameters and "
                           "parameters_json_schema cannot both be set.\n",
                           i, k);
            if (pj && !json_is_null(pj) && !json_is_object(pj))
                return bad(call,
                           "* GenerateContentRequest.tools[%zu].function_declarations[%zu].parameters_json_schema: "
                           "must be a JSON object.\n",
                           i, k);
        }
    }
    json_t *fcc = sb_emu_gget(sb_emu_gget(req, "toolConfig"), "functionCallingConfig");
    json_t *allowed = sb_emu_gget(fcc, "allowedFunctionNames");
    const char *mode = json_string_value(sb_emu_gget(fcc, "mode"));
    if (json_array_size(allowed) > 0) {
        if (!mode || (strcasecmp(mode, "ANY") && strcasecmp(mode, "VALIDATED")))
            return bad(call, "* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: "
                             "allowed_function_names may be set only when the mode is ANY or VALIDATED.\n");
        json_t *n;
        json_array_foreach (allowed, i, n) {
            if (!declares(req, json_string_value(n)))
                return bad(call,
                           "* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names[%zu]: "
                           "function '%.64s' is not declared in tools.\n",
                           i, json_string_value(n));
        }
    }
    return true;
}

static double num(const json_t *v)
{
    return json_is_string(v) ? strtod(json_string_value(v), NULL) : json_number_value(v);
}

static bool check_generation(struct sb_emu_call *call, const json_t *req)
{
    json_t *g = sb_emu_gget(req, "generationConfig");
    if (!json_is_object(g))
        return true;
    json_t *v;
    if ((v = sb_emu_gget(g, "candidateCount")) && !json_is_null(v) && (num(v) < 1 || num(v) > SB_EMU_MAX_CHOICES))
        return bad(call, "* GenerateContentRequest.generation_config.candidate_count: candidate_count must be in the "
                         "range [1, 8].\n");
    if ((v = sb_emu_gget(g, "maxOutputTokens")) && !json_is_null(v) && num(v) < 1)
        return bad(call, "* GenerateContentRequest.generation_config.max_output_tokens: max_output_tokens must be "
                         "positive.\n");
    if ((v = sb_emu_gget(g, "temperature")) && !json_is_null(v) && (num(v) < 0 || num(v) > 2))
        return bad(call, "* GenerateContentRequest.generation_config.temperature: temperature must be in the range "
                         "[0.0, 2.0].\n");
    if ((v = sb_emu_gget(g, "topP")) && !json_is_null(v) && (num(v) < 0 || num(v) > 1))
        return bad(call, "* GenerateContentRequest.generation_config.top_p: top_p must be in the range [0.0, 1.0].\n");
    if (json_array_size(sb_emu_gget(g, "stopSequences")) > 5)
        return bad(call, "* GenerateContentRequest.generation_config.stop_sequences: at most 5 stop sequences are "
                         "allowed.\n");
    const char *mime = json_string_value(sb_emu_gget(g, "responseMimeType"));
    static const char *const mimes[] = {"text/plain",       "application/json", "application/xml",
                                        "application/yaml", "text/x.enum",      NULL};
    if (mime && !sb_emu_in_list_nocase(mime, mimes))
        return bad(call, "* GenerateContentRequest.generation_config.response_mime_type: allowed mimetypes are "
                         "`text/plain`, `application/json`, `application/xml`, `application/yaml` and "
                         "`text/x.enum`.\n");
    json_t *rs = sb_emu_gget(g, "responseSchema"), *rjs = sb_emu_gget(g, "responseJsonSchema");
    bool have_rs = rs && !json_is_null(rs), have_rjs = rjs && !json_is_null(rjs);
    if (have_rs && have_rjs)
        return bad(call, "* GenerateContentRequest.generation_config: response_schema and response_json_schema cannot "
                         "both be set.\n");
    if ((have_rs || have_rjs) && (!mime || (strcasecmp(mime, "application/json") && strcasecmp(mime, "text/x.enum"))))
        return bad(call, "* GenerateContentRequest.generation_config.response_mime_type: response_mime_type must be "
                         "`application/json` or `text/x.enum` when a response schema is set.\n");
    if (have_rjs && !json_is_object(rjs))
        return bad(call, "* GenerateContentRequest.generation_config.response_json_schema: must be a JSON object.\n");
    json_t *tc = sb_emu_gget(g, "thinkingConfig");
    json_t *budget = sb_emu_gget(tc, "thinkingBudget"), *level = sb_emu_gget(tc, "thinkingLevel");
    if (budget && !json_is_null(budget) && (num(budget) < -1 || num(budget) > 32768))
        return bad(call, "* GenerateContentRequest.generation_config.thinking_config.thinking_budget: thinking_budget "
                         "must be -1 (dynamic) or in the range [0, 32768].\n");
    if (budget && !json_is_null(budget) && level && !json_is_null(level))
        return bad(call, "* GenerateContentRequest.generation_config.thinking_config: thinking_budget and "
                         "thinking_level cannot both be set.\n");
    return true;
}

static bool check_contents(struct sb_emu_call *call, const json_t *contents, const char *what)
{
    if (json_array_size(contents) == 0)
        return bad(call, "* %s.contents: contents is not specified\n", what);
    size_t i;
    json_t *c;
    json_array_foreach (contents, i, c) {
        const char *role = json_string_value(sb_emu_gget(c, "role"));
        if (role && *role && strcmp(role, "user") && strcmp(role, "model"))
            return bad(call, "Please use a valid role: user, model.");
        json_t *parts = sb_emu_gget(c, "parts");
        if (json_array_size(parts) == 0)
            return bad(call, "* %s.contents[%zu].parts: contents.parts must not be empty.\n", what, i);
        size_t k;
        json_t *p;
        json_array_foreach (parts, k, p) {
            char path[PATH_LEN];
            sb_emu_pathf(path, sizeof path, "contents[%zu].parts[%zu]", i, k);
            if (!check_part(call, p, path))
                return false;
        }
    }
    return true;
}

/* Phase 1 on the body as message m; false after the 400. */
static bool check_proto(struct sb_emu_call *call, const struct gmsg *m)
{
    if (!call->json || !json_is_object(call->json)) {
        sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL,
                            "Invalid JSON payload received. Expected an object.");
        return false;
    }
    struct perrs e = {.violations = json_array()};
    walk_msg(&e, call->json, m, "");
    if (e.message) {
        json_t *details = json_pack("[{s:s, s:o}]", "@type", "type.googleapis.com/google.rpc.BadRequest",
                                    "fieldViolations", e.violations);
        sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", details, "%s", e.message);
        free(e.message);
        return false;
    }
    json_decref(e.violations);
    return true;
}

bool sb_emu_gemini_check_embed_proto(struct sb_emu_call *call, bool batch)
{
    return check_proto(call, batch ? &g_batch : &g_embed);
}

bool sb_emu_gemini_check(struct sb_emu_call *call, const json_t *req, bool count)
{
    if (!check_proto(call, count ? &g_count : &g_request))
        return false;

    const char *what = count && !sb_emu_gget(call->json, "contents") ? "CountTokensRequest.generate_content_request"
                       : count                                       ? "CountTokensRequest"
                                                                     : "GenerateContentRequest";
    json_t *contents = sb_emu_gget(req, "contents");
    if (!check_contents(call, contents, what))
        return false;
    json_t *sys = sb_emu_gget(req, "systemInstruction");
    if (json_is_object(sys)) {
        size_t k;
        json_t *p;
        json_array_foreach (sb_emu_gget(sys, "parts"), k, p) {
            if (!json_string_value(sb_emu_gget(p, "text")))
                return bad(call,
                           "* GenerateContentRequest.system_instruction.parts[%zu]: only text parts are allowed "
                           "in system_instruction.\n",
                           k);
        }
    }
    return check_tools(call, req) && check_generation(call, req) &&
           check_turns(call, contents, sb_emu_gemini_thinking(req));
}

/* ---- Gemini Schema to JSON Schema ---------------------------------------------------------------- */

json_t *sb_emu_gemini_schema_to_json(const json_t *schema)
{
    if (!json_is_object(schema))
        return json_object();
    json_t *out = json_object();
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)schema, key, v) {
        if (!strcmp(key, "type") && json_is_string(v)) {
            char t[32];
            size_t i = 0;
            for (const char *p = json_string_value(v); *p && i + 1 < sizeof t; p++)
                t[i++] = (char)tolower((unsigned char)*p);
            t[i] = '\0';
            if (strcmp(t, "type_unspecified"))
                json_object_set_new(out, "type", json_string(t));
        } else if (!strcmp(key, "properties") && json_is_object(v)) {
            json_t *props = json_object();
            const char *pk;
            json_t *pv;
            json_object_foreach (v, pk, pv) {
                json_object_set_new(props, pk, sb_emu_gemini_schema_to_json(pv));
            }
            json_object_set_new(out, "properties", props);
        } else if (!strcmp(key, "items")) {
            json_object_set_new(out, "items", sb_emu_gemini_schema_to_json(v));
        } else if (!strcmp(key, "anyOf") || !strcmp(key, "any_of")) {
            json_t *arr = json_array();
            size_t i;
            json_t *s;
            json_array_foreach (v, i, s) {
                json_array_append_new(arr, sb_emu_gemini_schema_to_json(s));
            }
            json_object_set_new(out, "anyOf", arr);
        } else if (json_is_string(v) && numeric_string(v, true) &&
                   (strstr(key, "Items") || strstr(key, "Length") || strstr(key, "Properties") ||
                    strstr(key, "_items") || strstr(key, "_length") || strstr(key, "_properties"))) {
            /* int64 fields may arrive as strings in proto3 JSON. */
            char camel[64];
            size_t o = 0;
            for (const char *p = key; *p && o + 1 < sizeof camel; p++) {
                if (*p == '_' && p[1]) {
                    camel[o++] = (char)toupper((unsigned char)*++p);
                } else {
                    camel[o++] = *p;
                }
            }
            camel[o] = '\0';
            json_object_set_new(out, camel, json_integer(strtoll(json_string_value(v), NULL, 10)));
        } else if (strcmp(key, "nullable") && strcmp(key, "propertyOrdering") && strcmp(key, "property_ordering") &&
                   strcmp(key, "example")) {
            char camel[64];
            size_t o = 0;
            for (const char *p = key; *p && o + 1 < sizeof camel; p++) {
                if (*p == '_' && p[1]) {
                    camel[o++] = (char)toupper((unsigned char)*++p);
                } else {
                    camel[o++] = *p;
                }
            }
            camel[o] = '\0';
            json_object_set(out, camel, v);
        }
    }
    if (json_is_true(json_object_get(schema, "nullable")) && json_is_string(json_object_get(out, "type")))
        json_object_set_new(out, "type", json_pack("[O, s]", json_object_get(out, "type"), "null"));
    return out;
}
