/*
 * provider_gemini_build: the "gemini" adapter, the Google Gemini API
 * (POST {base_url}/models/{model}:generateContent, or
 * :streamGenerateContent?alt=sse when the job asks for a stream), with the
 * route's credential in x-goog-api-key (never in the URL: URLs get logged).
 * This file is the request side and the adapter's vtable; the response side
 * is provider_gemini_parse.c, the stream provider_gemini_stream.c
 * (provider_gemini.h).
 *
 * Canonical (Responses-shaped) job -> GenerateContentRequest:
 *   instructions, system/developer messages -> systemInstruction.parts, in order
 *   user / assistant messages    -> contents with role "user" / "model";
 *                                   consecutive turns of one role are merged
 *                                   (Gemini wants them alternating)
 *   input_text, output_text      -> {text}; an assistant refusal -> {text}
 *   input_image                  -> data URL: inlineData; http(s) URL:
 *                                   fileData with the MIME type its extension
 *                                   says (400 when it says nothing); "detail"
 *                                   is a cost hint Gemini has no field for
 *   input_file                   -> inlineData (MIME from the data URL, else
 *                                   from the filename's extension)
 *   input_audio                  -> inlineData audio/<format>
 *   function_call                -> model part {functionCall:{name, args, id}}
 *                                   (+ thoughtSignature from the item's private
 *                                   thought_signature); id only when Gemini
 *                                   issued it, never one this adapter made up
 *   function_call_output         -> user part {functionResponse:{name, response}}:
 *                                   name from the function_call with the same
 *                                   call_id earlier in input (400 if none),
 *                                   response the output if it is a JSON object,
 *                                   else {"result": output}
 *   reasoning                    -> with a thought_signature (it came from
 *                                   Gemini): {thought:true, text, thoughtSignature};
 *                                   without one: DROPPED, the one allowed drop:
 *                                   Gemini cannot verify another model's
 *                                   reasoning and reads nothing from unsigned
 *                                   thought text
 *   tools: function              -> one {functionDeclarations:[...]} with
 *                                   parametersJsonSchema (strict is the worker's
 *                                   check, strict.c); web_search -> {googleSearch:{}}
 *                                   when capabilities.web_search is "native"
 *   tool_choice                  -> toolConfig.functionCallingConfig
 *   text.format                  -> responseMimeType (+ responseJsonSchema)
 *   max_output_tokens, temperature, top_p, stop, n, seed, penalties,
 *   reasoning.effort             -> generationConfig (effort -> thinkingBudget)
 *   safety_settings              -> safetySettings, as the Generate Content client gave them
 * parallel_tool_calls, user and metadata have no Gemini field and are not sent.
 *
 * The job's shape (sb_job.h: items with a type, messages with a known role,
 * calls with their ids, tools an array, function tools named) is checked
 * once by the worker on receipt (sb_job_check); this file takes it as given
 * and judges only what is this upstream's to refuse.
 *
 * Token counting (a count job): POST {base_url}/models/{m}:countTokens with
 * {"generateContentRequest": {"model": "models/{m}", ...the mapping above}};
 * the reply is read by provider_gemini_parse.c.
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider.h" /* sb_provider_t, for the vtable */
#include "provider_gemini.h"
#include "provider_util.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_item.h"
#include "sb_job.h"

/*
 * Request side.
 */

/* The MIME type a file name or URL path's extension names, or NULL. Only
 * types Gemini reads. A URL's query and fragment are ignored. */
static const char *sb_gem_mime_for_name(const char *name)
{
    static const struct {
        const char *ext, *mime;
    } types[] = {
        {"png", "image/png"},    {"jpg", "image/jpeg"},        {"jpeg", "image/jpeg"},     {"webp", "image/webp"},
        {"heic", "image/heic"},  {"heif", "image/heif"},       {"pdf", "application/pdf"}, {"txt", "text/plain"},
        {"md", "text/markdown"}, {"csv", "text/csv"},          {"html", "text/html"},      {"htm", "text/html"},
        {"xml", "text/xml"},     {"json", "application/json"}, {"wav", "audio/wav"},       {"mp3", "audio/mp3"},
        {"flac", "audio/flac"},  {"ogg", "audio/ogg"},         {"aac", "audio/aac"},       {"aiff", "audio/aiff"},
    };
    if (!name)
        return NULL;
    size_t end = strcspn(name, "?#");
    const char *dot = NULL;
    for (size_t i = 0; i < end; i++) {
        if (name[i] == '.')
            dot = name + i;
        else if (name[i] == '/')
            dot = NULL;
    }
    if (!dot)
        return NULL;
    size_t len = (size_t)(name + end - (dot + 1));
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (strlen(types[i].ext) == len && !strncasecmp(dot + 1, types[i].ext, len))
            return types[i].mime;
    return NULL;
}

/* {"inlineData":{"mimeType","data"}} for a base64 payload. */
static json_t *sb_gem_inline(const char *mime, const char *payload)
{
    return json_pack("{s:{s:s, s:s}}", "inlineData", "mimeType", mime, "data", payload);
}

static json_t *sb_gem_image_part(const json_t *part, size_t index, json_t **err)
{
    const char *url = json_string_value(json_object_get(part, "image_url"));
    if (!url) {
        *err = sb_provider_invalid("input_image without image_url is not supported by provider " SB_GEM_KIND);
        return NULL;
    }
    char mime[128];
    const char *payload;
    if (sb_provider_data_url(url, mime, sizeof mime, &payload) == 0) {
        if (strncmp(mime, "image/", 6)) {
            *err =
                sb_provider_invalid("input_image (content part %zu) is a data URL without an image MIME type", index);
            return NULL;
        }
        return sb_gem_inline(mime, payload);
    }
    if (!strncasecmp(url, "https://", 8) || !strncasecmp(url, "http://", 7)) {
        const char *type = sb_gem_mime_for_name(url);
        if (!type || strncmp(type, "image/", 6)) {
            *err = sb_provider_invalid("input_image (content part %zu): provider " SB_GEM_KIND
                                       " needs the image type, and the URL does not end in .png, .jpg, .jpeg, .webp, "
                                       ".heic or .heif; send the image as a data URL",
                                       index);
            return NULL;
        }
        return json_pack("{s:{s:s, s:s}}", "fileData", "mimeType", type, "fileUri", url);
    }
    *err = sb_provider_invalid("input_image (content part %zu) needs an http(s) URL or a base64 data URL", index);
    return NULL;
}

static json_t *sb_gem_file_part(const json_t *part, size_t index, json_t **err)
{
    const char *data = json_string_value(json_object_get(part, "file_data"));
    const char *filename = json_string_value(json_object_get(part, "filename"));
    const char *name = filename && *filename ? filename : "file";
    char mime[128];
    const char *payload;
    if (!data) {
        *err = sb_provider_invalid(
            "input_file (content part %zu) without file_data is not supported by provider " SB_GEM_KIND, index);
        return NULL;
    }
    if (sb_provider_data_url(data, mime, sizeof mime, &payload) < 0) {
        *err = sb_provider_invalid("input_file '%.100s' (content part %zu) file_data is not a base64 data URL", name,
                                   index);
        return NULL;
    }
    const char *type = mime;
    if (!*mime || !strcmp(mime, "application/octet-stream"))
        type = sb_gem_mime_for_name(filename);
    if (!type) {
        *err = sb_provider_invalid(
            "input_file '%.100s' (content part %zu) has no MIME type provider " SB_GEM_KIND " can read", name, index);
        return NULL;
    }
    return sb_gem_inline(type, payload);
}

static json_t *sb_gem_audio_part(const json_t *part, size_t index, json_t **err)
{
    const json_t *audio = json_object_get(part, "input_audio");
    const char *data = json_string_value(json_object_get(audio, "data"));
    const char *format = json_string_value(json_object_get(audio, "format"));
    if (!data || !format) {
        *err = sb_provider_invalid("input_audio (content part %zu) needs input_audio.data and .format", index);
        return NULL;
    }
    static const char *const formats[] = {"wav", "mp3", "flac", "ogg", "aac", "aiff"};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++) {
        if (!strcmp(format, formats[i])) {
            char mime[16];
            snprintf(mime, sizeof mime, "audio/%s", formats[i]);
            return sb_gem_inline(mime, data);
        }
    }
    *err = sb_provider_invalid("input_audio format '%.20s' is not supported by provider " SB_GEM_KIND, format);
    return NULL;
}

/* One canonical content part -> one Gemini part. */
static json_t *sb_gem_part(const json_t *part, size_t index, bool assistant, json_t **err)
{
    enum sb_part_type type = sb_part_type_of(part);
    if (type == SB_PART_INPUT_TEXT || type == SB_PART_OUTPUT_TEXT) {
        const json_t *text = json_object_get(part, "text");
        if (!json_is_string(text)) {
            *err = sb_provider_invalid("content part %zu has no text", index);
            return NULL;
        }
        return json_pack("{s:O}", "text", text);
    }
    if (type == SB_PART_REFUSAL && assistant) {
        /* Gemini has no refusal part: what the model said is text. */
        const json_t *r = json_object_get(part, "refusal");
        if (!json_is_string(r)) {
            *err = sb_provider_invalid("refusal part %zu has no refusal text", index);
            return NULL;
        }
        return json_pack("{s:O}", "text", r);
    }
    switch (type) {
    case SB_PART_INPUT_IMAGE:
        return sb_gem_image_part(part, index, err);
    case SB_PART_INPUT_FILE:
        return sb_gem_file_part(part, index, err);
    case SB_PART_INPUT_AUDIO:
        return sb_gem_audio_part(part, index, err);
    default: /* a refusal outside an assistant turn, reasoning parts, unknown types */
        break;
    }
    const char *t = json_string_value(json_object_get(part, "type"));
    *err = sb_provider_invalid("content part type '%.40s' is not supported by provider " SB_GEM_KIND, t ? t : "(none)");
    return NULL;
}

/* Appends part (stolen) to the last content when it has this role, else to a
 * new content: Gemini wants user and model turns to alternate. */
static void sb_gem_append(json_t *contents, const char *role, json_t *part)
{
    json_t *last = json_array_get(contents, json_array_size(contents) - 1);
    const char *last_role = json_string_value(json_object_get(last, "role"));
    if (last_role && !strcmp(last_role, role)) {
        json_array_append_new(json_object_get(last, "parts"), part);
        return;
    }
    json_array_append_new(contents, json_pack("{s:s, s:[o]}", "role", role, "parts", part));
}

/* A system or developer message -> text parts of systemInstruction. */
static int sb_gem_system(json_t *system, const json_t *content, size_t item, json_t **err)
{
    if (json_is_string(content)) { /* not normalized, but unambiguous */
        json_array_append_new(system, json_pack("{s:O}", "text", content));
        return 0;
    }
    size_t i;
    const json_t *part;
    json_array_foreach (content, i, part) {
        enum sb_part_type type = sb_part_type_of(part);
        const json_t *text = json_object_get(part, "text");
        if ((type != SB_PART_INPUT_TEXT && type != SB_PART_OUTPUT_TEXT) || !json_is_string(text)) {
            *err = sb_provider_invalid(
                "input item %zu: system and developer messages may hold only text with provider " SB_GEM_KIND, item);
            return -EINVAL;
        }
        json_array_append_new(system, json_pack("{s:O}", "text", text));
    }
    return 0;
}

/* A user or assistant message -> parts of a user or model turn. An assistant
 * message's thought_signature goes back on its last text part, where the
 * response side took it from. */
static int sb_gem_message(json_t *contents, const json_t *item, bool assistant, json_t **err)
{
    const json_t *content = json_object_get(item, "content");
    const char *role = assistant ? "model" : "user";
    if (json_is_string(content)) {
        sb_gem_append(contents, role, json_pack("{s:O}", "text", content));
        return 0;
    }
    if (!json_is_array(content)) {
        *err = sb_provider_invalid("message content must be an array of parts");
        return -EINVAL;
    }
    json_t *last_text = NULL; /* borrowed, in contents */
    size_t i;
    const json_t *part;
    json_array_foreach (content, i, part) {
        json_t *p = sb_gem_part(part, i, assistant, err);
        if (!p)
            return -EINVAL;
        if (json_object_get(p, "text"))
            last_text = p;
        sb_gem_append(contents, role, p);
    }
    const json_t *sig = json_object_get(item, "thought_signature");
    if (assistant && json_is_string(sig)) {
        if (!last_text) {
            last_text = json_pack("{s:s}", "text", "");
            sb_gem_append(contents, role, last_text);
        }
        json_object_set(last_text, "thoughtSignature", (json_t *)sig);
    }
    return 0;
}

/* A call_id this adapter made up for a functionCall that had none
 * ("call_" + hex); Gemini never saw it, so it is not sent back. */
static bool sb_gem_made_up_id(const char *id)
{
    if (strncmp(id, "call_", 5) || strlen(id) != 5 + 2 * SB_GEM_CALL_ID_BYTES)
        return false;
    for (const char *p = id + 5; *p; p++)
        if (!isxdigit((unsigned char)*p) || isupper((unsigned char)*p))
            return false;
    return true;
}

static int sb_gem_function_call(json_t *contents, const json_t *item, json_t **err)
{
    const json_t *call_id = json_object_get(item, "call_id");
    const json_t *name = json_object_get(item, "name");
    const json_t *arguments = json_object_get(item, "arguments");
    json_t *args;
    if (json_is_string(arguments) && json_string_length(arguments) > 0)
        args = json_loadb(json_string_value(arguments), json_string_length(arguments), 0, NULL);
    else if (json_is_object(arguments))
        args = json_incref((json_t *)arguments);
    else if (!arguments || json_is_null(arguments) || json_is_string(arguments))
        args = json_object();
    else
        args = NULL;
    if (!json_is_object(args)) {
        json_decref(args);
        *err = sb_provider_invalid("function_call '%.64s': arguments must be a JSON object for provider " SB_GEM_KIND,
                                   json_string_value(name));
        return -EINVAL;
    }
    json_t *fc = json_pack("{s:O, s:o}", "name", name, "args", args);
    if (!sb_gem_made_up_id(json_string_value(call_id)))
        json_object_set(fc, "id", (json_t *)call_id);
    json_t *part = json_pack("{s:o}", "functionCall", fc);
    const json_t *sig = json_object_get(item, "thought_signature");
    if (json_is_string(sig))
        json_object_set(part, "thoughtSignature", (json_t *)sig);
    sb_gem_append(contents, "model", part);
    return 0;
}

/* Joins the text of text parts with "\n"; NULL when a part is not text. */
static json_t *sb_gem_join_text(const json_t *parts)
{
    size_t total = 0, i;
    const json_t *part;
    json_array_foreach (parts, i, part) {
        if (!json_is_string(json_object_get(part, "text")))
            return NULL;
        total += json_string_length(json_object_get(part, "text")) + 1;
    }
    char *buf = sb_xmalloc(total + 1);
    size_t pos = 0;
    json_array_foreach (parts, i, part) {
        const json_t *t = json_object_get(part, "text");
        if (i > 0)
            buf[pos++] = '\n';
        memcpy(buf + pos, json_string_value(t), json_string_length(t));
        pos += json_string_length(t);
    }
    json_t *s = json_stringn(buf, pos);
    free(buf);
    return s;
}

/* function_call_output.output -> functionResponse.response, which must be
 * an object: the output itself when it is a JSON object, else
 * {"result": output}. */
static json_t *sb_gem_response_object(const json_t *output, json_t **err)
{
    if (json_is_string(output)) {
        json_t *parsed = json_loadb(json_string_value(output), json_string_length(output), 0, NULL);
        if (json_is_object(parsed))
            return parsed;
        json_decref(parsed);
        return json_pack("{s:O}", "result", output);
    }
    if (json_is_object(output))
        return json_incref((json_t *)output);
    if (json_is_array(output)) {
        json_t *text = sb_gem_join_text(output);
        if (!text) {
            *err = sb_provider_invalid(
                "function_call_output with non-text content is not supported by provider " SB_GEM_KIND);
            return NULL;
        }
        return json_pack("{s:o}", "result", text);
    }
    if (!output || json_is_null(output))
        return json_pack("{s:s}", "result", "");
    return json_pack("{s:O}", "result", output);
}

/* The function_call item before input[upto] with this call_id, or NULL. */
static const json_t *sb_gem_find_call(const json_t *input, size_t upto, const char *call_id)
{
    for (size_t i = upto; i-- > 0;) {
        const json_t *item = json_array_get(input, i);
        const char *id = json_string_value(json_object_get(item, "call_id"));
        if (sb_item_type_of(item) == SB_ITEM_FUNCTION_CALL && id && !strcmp(id, call_id))
            return item;
    }
    return NULL;
}

static int sb_gem_function_output(json_t *contents, const json_t *input, size_t index, json_t **err)
{
    const json_t *item = json_array_get(input, index);
    const char *call_id = json_string_value(json_object_get(item, "call_id")); /* a string (sb_job_check) */
    /* Gemini matches a response to its call by function name. */
    const json_t *call = sb_gem_find_call(input, index, call_id);
    const json_t *name = json_object_get(call, "name");
    if (!json_is_string(name)) {
        *err =
            sb_provider_invalid("function_call_output '%.64s' has no function_call with that call_id earlier in input "
                                "(provider " SB_GEM_KIND " needs the function's name)",
                                call_id);
        return -EINVAL;
    }
    json_t *response = sb_gem_response_object(json_object_get(item, "output"), err);
    if (!response)
        return -EINVAL;
    json_t *fr = json_pack("{s:O, s:o}", "name", name, "response", response);
    if (!sb_gem_made_up_id(call_id))
        json_object_set_new(fr, "id", json_string(call_id));
    sb_gem_append(contents, "user", json_pack("{s:o}", "functionResponse", fr));
    return 0;
}

/* A reasoning item Gemini produced (it has Gemini's signature) -> a thought
 * part; any other reasoning is dropped (see the top of the file). */
static void sb_gem_reasoning(json_t *contents, const json_t *item)
{
    const json_t *sig = json_object_get(item, "thought_signature");
    if (!json_is_string(sig))
        return;
    json_t *text = sb_gem_join_text(json_object_get(item, "content"));
    if (!text || json_array_size(json_object_get(item, "content")) == 0) {
        json_decref(text);
        text = sb_gem_join_text(json_object_get(item, "summary"));
    }
    if (!text)
        text = json_string("");
    sb_gem_append(contents, "model", json_pack("{s:b, s:o, s:O}", "thought", 1, "text", text, "thoughtSignature", sig));
}

/* request.instructions and input -> contents (returned) and *system (the
 * systemInstruction parts; empty when there are none). */
static json_t *sb_gem_contents(const json_t *request, json_t *system, json_t **err)
{
    json_t *contents = json_array();
    const json_t *instructions = json_object_get(request, "instructions");
    if (json_is_string(instructions) && json_string_length(instructions) > 0)
        json_array_append_new(system, json_pack("{s:O}", "text", instructions));
    /* input's shape (absent, null or an array of typed items; messages with
     * a known role, calls with their ids) is sb_job_check's, run by the
     * worker on receipt. */
    const json_t *input = json_object_get(request, "input");
    size_t i;
    const json_t *item;
    json_array_foreach (input, i, item) {
        int rc = 0;
        switch (sb_item_type_of(item)) {
        case SB_ITEM_MESSAGE: {
            enum sb_role role = sb_role_of(item);
            if (role == SB_ROLE_SYSTEM || role == SB_ROLE_DEVELOPER)
                rc = sb_gem_system(system, json_object_get(item, "content"), i, err);
            else
                rc = sb_gem_message(contents, item, role == SB_ROLE_ASSISTANT, err);
            break;
        }
        case SB_ITEM_FUNCTION_CALL:
            rc = sb_gem_function_call(contents, item, err);
            break;
        case SB_ITEM_FUNCTION_CALL_OUTPUT:
            rc = sb_gem_function_output(contents, input, i, err);
            break;
        case SB_ITEM_REASONING:
            sb_gem_reasoning(contents, item);
            break;
        case SB_ITEM_UNKNOWN: {
            const char *type = json_string_value(json_object_get(item, "type"));
            *err = sb_provider_invalid("input item type '%.40s' is not supported by provider " SB_GEM_KIND,
                                       type ? type : "(none)");
            goto fail;
        }
        }
        if (rc < 0)
            goto fail;
    }
    return contents;
fail:
    json_decref(contents);
    return NULL;
}

/* Function tools -> one {functionDeclarations}; web_search -> {googleSearch}
 * when the route's capabilities say "web_search":"native" (docs/tools.md):
 * otherwise the worker's tool loop runs web search and no web_search tool
 * should reach this adapter, so one that does is refused like any built-in.
 * *n_functions counts the declarations (toolConfig needs some). */
static json_t *sb_gem_tools(const json_t *tools, bool native_search, size_t *n_functions, json_t **err)
{
    json_t *out = json_array();
    json_t *decls = json_array();
    bool search = false;
    size_t i;
    const json_t *tool;
    json_array_foreach (tools, i, tool) {
        const char *type = json_string_value(json_object_get(tool, "type"));
        if (native_search && type &&
            (!strcmp(type, "web_search") || !strcmp(type, "web_search_2025_08_26") ||
             !strcmp(type, "web_search_preview") || !strcmp(type, "web_search_preview_2025_03_11"))) {
            /* Google Search takes no options; a domain filter it cannot
             * honour is refused rather than ignored. */
            if (json_object_get(tool, "filters")) {
                *err = sb_provider_unsupported("web_search filters are not supported by provider " SB_GEM_KIND);
                goto fail;
            }
            search = true;
            continue;
        }
        if (!type || strcmp(type, "function")) {
            *err = sb_provider_unsupported("tool type '%.40s' is not supported by provider " SB_GEM_KIND,
                                           type ? type : "(none)");
            goto fail;
        }
        json_t *fn = json_pack("{s:O}", "name", json_object_get(tool, "name")); /* a string (sb_job_check) */
        const json_t *v;
        if (json_is_string(v = json_object_get(tool, "description")))
            json_object_set(fn, "description", (json_t *)v);
        if (json_is_object(v = json_object_get(tool, "parameters")))
            json_object_set(fn, "parametersJsonSchema", (json_t *)v);
        json_array_append_new(decls, fn);
    }
    *n_functions = json_array_size(decls);
    if (*n_functions > 0)
        json_array_append_new(out, json_pack("{s:O}", "functionDeclarations", decls));
    if (search)
        json_array_append_new(out, json_pack("{s:{}}", "googleSearch"));
    json_decref(decls);
    return out;
fail:
    json_decref(decls);
    json_decref(out);
    return NULL;
}

static int sb_gem_tool_config(json_t *body, const json_t *tc, json_t **err)
{
    if (!tc || json_is_null(tc))
        return 0;
    const char *mode = NULL;
    const json_t *name = NULL;
    const char *s = json_string_value(tc);
    if (s && !strcmp(s, "auto"))
        mode = "AUTO";
    else if (s && !strcmp(s, "required"))
        mode = "ANY";
    else if (s && !strcmp(s, "none"))
        mode = "NONE";
    const char *type = json_string_value(json_object_get(tc, "type"));
    if (type && !strcmp(type, "function") && json_is_string(name = json_object_get(tc, "name")))
        mode = "ANY";
    if (!mode) {
        *err = sb_provider_invalid("tool_choice '%.40s' is not supported by provider " SB_GEM_KIND, s      ? s
                                                                                                    : type ? type
                                                                                                           : "(none)");
        return -EINVAL;
    }
    json_t *fcc = json_pack("{s:s}", "mode", mode);
    if (name)
        json_object_set_new(fcc, "allowedFunctionNames", json_pack("[O]", name));
    json_object_set_new(body, "toolConfig", json_pack("{s:o}", "functionCallingConfig", fcc));
    return 0;
}

static int sb_gem_format(json_t *config, const json_t *text, json_t **err)
{
    const json_t *format = json_object_get(text, "format");
    if (!format || json_is_null(format))
        return 0;
    const char *type = json_string_value(json_object_get(format, "type"));
    if (type && !strcmp(type, "text"))
        return 0;
    if (type && !strcmp(type, "json_object")) {
        json_object_set_new(config, "responseMimeType", json_string("application/json"));
        return 0;
    }
    if (type && !strcmp(type, "json_schema")) {
        const json_t *schema = json_object_get(format, "schema");
        if (!json_is_object(schema)) {
            *err = sb_provider_invalid("text.format json_schema needs a schema");
            return -EINVAL;
        }
        json_object_set_new(config, "responseMimeType", json_string("application/json"));
        json_object_set(config, "responseJsonSchema", (json_t *)schema);
        return 0;
    }
    *err = sb_provider_invalid("text.format '%.40s' is not supported by provider " SB_GEM_KIND, type ? type : "(none)");
    return -EINVAL;
}

/* reasoning.effort -> thinkingConfig. The budgets follow Gemini 2.5's range
 * (0 turns thinking off where the model allows it; 24576 is 2.5 Flash's
 * ceiling, 32768 2.5 Pro's). Thoughts are asked for, so they come back as
 * reasoning items. */
static int sb_gem_thinking(json_t *config, const json_t *reasoning, json_t **err)
{
    const json_t *effort = json_object_get(reasoning, "effort");
    if (!effort || json_is_null(effort))
        return 0;
    static const struct {
        const char *effort;
        int budget;
    } budgets[] = {{"none", 0},     {"minimal", 512}, {"low", 1024}, {"medium", 8192},
                   {"high", 24576}, {"xhigh", 32768}, {"max", 32768}};
    const char *e = json_string_value(effort);
    for (size_t i = 0; e && i < sizeof budgets / sizeof budgets[0]; i++) {
        if (!strcmp(e, budgets[i].effort)) {
            json_object_set_new(config, "thinkingConfig",
                                json_pack("{s:i, s:b}", "thinkingBudget", budgets[i].budget, "includeThoughts", 1));
            return 0;
        }
    }
    *err = sb_provider_invalid("reasoning.effort '%.20s' is not supported by provider " SB_GEM_KIND,
                               e ? e : "(not a string)");
    return -EINVAL;
}

static int sb_gem_generation_config(json_t *body, const json_t *job, const json_t *request, json_t **err)
{
    json_t *config = json_object();
    if (sb_provider_copy(config, request, "max_output_tokens", "maxOutputTokens", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy(config, request, "temperature", "temperature", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(config, request, "top_p", "topP", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(config, request, "top_k", "topK", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy(config, request, "frequency_penalty", "frequencyPenalty", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(config, request, "presence_penalty", "presencePenalty", SB_PROVIDER_NUMBER, err) < 0 ||
        sb_provider_copy(config, request, "stop", "stopSequences", SB_PROVIDER_STOP_LIST, err) < 0 ||
        sb_provider_copy(config, request, "seed", "seed", SB_PROVIDER_INTEGER, err) < 0 ||
        sb_provider_copy_n(config, job, "candidateCount", err) < 0)
        goto fail;
    if (sb_gem_format(config, json_object_get(request, "text"), err) < 0 ||
        sb_gem_thinking(config, json_object_get(request, "reasoning"), err) < 0)
        goto fail;
    if (json_object_size(config) > 0)
        json_object_set(body, "generationConfig", config);
    json_decref(config);
    return 0;
fail:
    json_decref(config);
    return -EINVAL;
}

/* The resource name of route.upstream_model: "models/<id>" for a bare id,
 * the name as given when it already names a resource ("models/...",
 * "tunedModels/..."). NULL when it holds characters that could reshape the
 * URL. */
static char *sb_gem_model_name(const char *model)
{
    for (const char *p = model; *p; p++)
        if (!isalnum((unsigned char)*p) && !strchr("._-/", *p))
            return NULL;
    if (strstr(model, "..") || model[0] == '/')
        return NULL;
    return sb_xasprintf("%s%s", strchr(model, '/') ? "" : "models/", model);
}

/* The GenerateContentRequest, sent to :generateContent (or, streaming,
 * :streamGenerateContent?alt=sse); or (count) to :countTokens wrapped as
 * {"generateContentRequest": {"model": <name>, ...the same fields...}}. */
static int sb_gem_build(const json_t *job, sb_provider_request_t *req, json_t **err, bool count)
{
    *err = NULL;
    json_t *body = NULL;
    const json_t *request = sb_job_request(job); /* an object: sb_job_check */
    const char *upstream_model = sb_job_route_str(job, "upstream_model");
    if (!upstream_model || !*upstream_model) {
        *err = sb_provider_invalid("route has no upstream_model");
        goto fail;
    }
    /* The parser streams exactly when the job asks (this adapter has the
     * stream hooks), so the URL follows the same flag. */
    bool stream = !count && json_is_true(json_object_get(request, "stream"));
    char *name = sb_gem_model_name(upstream_model);
    if (!name) {
        *err = sb_provider_invalid("route upstream_model is not a valid Gemini model name");
        goto fail;
    }
    char *path = sb_xasprintf("/%s:%s", name,
                              count    ? "countTokens"
                              : stream ? "streamGenerateContent?alt=sse"
                                       : "generateContent");
    req->url = sb_provider_url(job, path);
    free(path);
    if (count)
        body = json_pack("{s:s}", "model", name);
    free(name);
    if (!req->url) {
        *err = sb_provider_invalid("route has no base_url");
        goto fail;
    }
    const char *credential;
    if (sb_provider_credential(job, &credential, err) < 0)
        goto fail;

    if (!body)
        body = json_object();
    json_t *system = json_array();
    json_t *contents = sb_gem_contents(request, system, err);
    if (!contents) {
        json_decref(system);
        goto fail;
    }
    json_object_set_new(body, "contents", contents);
    /* Google's own safety thresholds (a Generate Content client's
     * safetySettings), carried as given; other kinds have no such setting. */
    const json_t *safety = json_object_get(request, "safety_settings");
    if (json_is_array(safety) && json_array_size(safety) > 0)
        json_object_set(body, "safetySettings", (json_t *)safety);
    if (json_array_size(system) > 0)
        json_object_set_new(body, "systemInstruction", json_pack("{s:o}", "parts", system));
    else
        json_decref(system);

    const json_t *tools = json_object_get(request, "tools"); /* absent, null or an array: sb_job_check */
    size_t n_functions = 0;
    const char *search =
        json_string_value(json_object_get(json_object_get(sb_job_route(job), "capabilities"), "web_search"));
    json_t *t = sb_gem_tools(tools, search && !strcmp(search, "native"), &n_functions, err);
    if (!t)
        goto fail;
    if (json_array_size(t) > 0)
        json_object_set_new(body, "tools", t);
    else
        json_decref(t);
    /* As in chat: tool_choice means something only with functions to call. */
    if (n_functions > 0 && sb_gem_tool_config(body, json_object_get(request, "tool_choice"), err) < 0)
        goto fail;
    if (sb_gem_generation_config(body, job, request, err) < 0)
        goto fail;
    if (count)
        body = json_pack("{s:o}", "generateContentRequest", body);

    if (sb_provider_request_set_json(req, body, stream, err) < 0)
        goto fail;
    if (credential)
        sb_provider_request_add_header(req, "x-goog-api-key: %s", credential);
    json_decref(body);
    return 0;
fail:
    json_decref(body);
    return -EINVAL;
}

static int sb_gem_build_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_gem_build(job, req, err, false);
}

static int sb_gem_build_count_request(const json_t *job, sb_provider_request_t *req, json_t **err)
{
    return sb_gem_build(job, req, err, true);
}

/* The adapter: the request side here, the response side in
 * provider_gemini_parse.c, the stream in provider_gemini_stream.c. */
const sb_provider_t sb_provider_gemini = {
    .kind = SB_GEM_KIND,
    .supports_n = true,
    .build_request = sb_gem_build_request,
    .parse_response = sb_gem_parse_response,
    .stream_new = sb_gem_stream_new,
    .stream_feed = sb_gem_stream_feed,
    .stream_finish = sb_gem_stream_finish,
    .stream_destroy = sb_gem_stream_destroy,
    .build_count_request = sb_gem_build_count_request,
    .parse_count_response = sb_gem_parse_count_response,
};
