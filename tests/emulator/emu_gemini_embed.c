/*
 * emu_gemini_embed: Gemini's embedding methods, answered with the
 * deterministic vectors of emu_embed.c:
 *
 *   POST models/{m}:embedContent        {content:{parts:[{text}]}, taskType?, title?,
 *                                        outputDimensionality?, model?}
 *                                        -> {"embedding":{"values":[...]}}
 *   POST models/{m}:batchEmbedContents  {requests:[{model:"models/{m}", content, ...}]}
 *                                        -> {"embeddings":[{"values":[...]}, ...]}
 *
 * (Google's SDK sends every embedding through batchEmbedContents.) The body
 * is checked as proto3 JSON first (emu_gemini_check.c: unknown names, types,
 * the TaskType enum), then for its meaning in Google's
 * "* EmbedContentRequest.<field>: ..." shape: a model whose name has no
 * "embed" is not found for these methods; content is required, with parts,
 * each holding text (an empty text is "an empty Part"), and only text unless
 * the model is multimodal ("embedding-2"); outputDimensionality 1 to the
 * model's size (0 is the default); a title only with RETRIEVAL_DOCUMENT; a
 * batch holds 1 to 100 requests, each naming "models/{m}", the model of the
 * URL. Directives in the first text that carries one, and route faults,
 * apply as in generateContent.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_embed.h"
#include "emu_internal.h"
#include "sb_alloc.h"

#define MAX_BATCH 100
#define MSG_MAX 512

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

/* An int32 field that proto3 JSON may also carry as a decimal string (already checked to be one). */
static long long int_field(const json_t *v)
{
    if (json_is_integer(v))
        return (long long)json_integer_value(v);
    const char *s = json_string_value(v);
    return s ? strtoll(s, NULL, 10) : 0;
}

/* One EmbedContentRequest's meaning; what names it in messages ("EmbedContentRequest", "...requests[2]"). */
static bool check_one(struct sb_emu_call *call, const json_t *req, const char *model, const char *what, bool batch)
{
    json_t *m = sb_emu_gget(req, "model");
    const char *mname = json_string_value(m);
    if (batch && (!mname || strncmp(mname, "models/", 7) != 0))
        return bad(call, "* %s.model: unexpected model name format\n", what);
    if (mname && *mname && (strncmp(mname, "models/", 7) != 0 || strcmp(mname + 7, model) != 0))
        return bad(call, "* %s.model: the model of the request (%.64s) must be the model of the URL (models/%.64s)\n",
                   what, mname, model);
    json_t *content = sb_emu_gget(req, "content");
    if (!json_is_object(content))
        return bad(call, "* %s.content: content is not specified\n", what);
    json_t *parts = sb_emu_gget(content, "parts");
    if (json_array_size(parts) == 0)
        return bad(call, "* %s.content.parts: contents.parts must not be empty.\n", what);
    bool multimodal = strstr(model, "embedding-2") != NULL;
    size_t i;
    json_t *p;
    json_array_foreach (parts, i, p) {
        json_t *text = sb_emu_gget(p, "text");
        if (json_is_string(text)) {
            if (json_string_length(text) == 0)
                return bad(call, "* %s.content: contains an empty Part.\n", what);
            continue;
        }
        bool media = sb_emu_gget(p, "inlineData") || sb_emu_gget(p, "fileData");
        if (!media && json_object_size(p) == 0)
            return bad(call, "* %s.content: contains an empty Part.\n", what);
        if (!media || !multimodal)
            return bad(call, "* %s.content.parts[%zu]: only text parts are supported by models/%.64s\n", what, i,
                       model);
    }
    json_t *od = sb_emu_gget(req, "outputDimensionality");
    long long dims = od ? int_field(od) : 0;
    size_t max = sb_emu_embed_max_dims(model);
    if (dims < 0 || (size_t)dims > max)
        return bad(call, "* %s.output_dimensionality: output_dimensionality must be between 1 and %zu, got %lld\n",
                   what, max, dims);
    const char *task = json_string_value(sb_emu_gget(req, "taskType"));
    const char *title = json_string_value(sb_emu_gget(req, "title"));
    if (title && *title && (!task || strcasecmp(task, "RETRIEVAL_DOCUMENT") != 0))
        return bad(call, "* %s.title: title is only applicable when task_type is RETRIEVAL_DOCUMENT\n", what);
    return true;
}

/* The text of a request: its text parts joined by one space; owned. */
static char *request_text(const json_t *req)
{
    char *out = sb_xstrdup("");
    size_t i;
    json_t *p;
    json_array_foreach (sb_emu_gget(sb_emu_gget(req, "content"), "parts"), i, p) {
        const char *t = json_string_value(sb_emu_gget(p, "text"));
        if (!t)
            continue;
        char *joined = sb_xasprintf("%s%s%s", out, *out ? " " : "", t);
        free(out);
        out = joined;
    }
    return out;
}

static json_t *values_json(const json_t *req, const char *model, const char *text)
{
    json_t *od = sb_emu_gget(req, "outputDimensionality");
    long long want = od ? int_field(od) : 0;
    size_t dims = want > 0 ? (size_t)want : sb_emu_embed_default_dims(model);
    float *v = sb_xmalloc(dims * sizeof *v);
    sb_emu_embed_text(text, dims, v);
    json_t *out = json_pack("{s:o}", "values", sb_emu_embed_json(v, dims));
    free(v);
    return out;
}

static void reply(struct sb_emu_call *call, json_t *out)
{
    struct sb_emu_reply *rep = &call->reply;
    free(rep->body);
    rep->status = 200;
    rep->content_type = "application/json; charset=UTF-8";
    rep->body = json_dumps(out, SB_EMU_EMBED_DUMP_FLAGS);
    if (!rep->body)
        rep->body = sb_xstrdup("{}");
    rep->body_len = strlen(rep->body);
}

void sb_emu_gemini_embed_handle(struct sb_emu_call *call, const char *model, bool batch,
                                const struct sb_emu_fault_errors *errors)
{
    if (!strstr(model, "embed")) {
        const char *version = !strncmp(call->path, "/v1/", 4) ? "v1" : "v1beta";
        sb_emu_gemini_error(&call->reply, 404, "NOT_FOUND", NULL,
                            "models/%s is not found for API version %s, or is not supported for %s. Call "
                            "ListModels to see the list of available models and their supported methods.",
                            model, version, batch ? "batchEmbedContents" : "embedContent");
        return;
    }
    if (!sb_emu_gemini_check_embed_proto(call, batch))
        return;
    const json_t *body = call->json;
    json_t *reqs = batch ? sb_emu_gget(body, "requests") : NULL;
    size_t n = batch ? json_array_size(reqs) : 1;
    if (batch && n == 0) {
        bad(call, "* BatchEmbedContentsRequest.requests: requests is not specified\n");
        return;
    }
    if (batch && n > MAX_BATCH) {
        bad(call, "* BatchEmbedContentsRequest.requests: at most %d requests can be in one batch\n", MAX_BATCH);
        return;
    }
    char **texts = sb_xcalloc(n, sizeof *texts);
    char *clean = NULL, err[MSG_MAX];
    size_t which = SIZE_MAX;
    long long words = 0;
    struct sb_emu_directives d;
    json_t *out = NULL;
    for (size_t i = 0; i < n; i++) {
        const json_t *req = batch ? json_array_get(reqs, i) : body;
        char what[64];
        if (batch)
            snprintf(what, sizeof what, "BatchEmbedContentsRequest.requests[%zu]", i);
        else
            snprintf(what, sizeof what, "EmbedContentRequest");
        if (!check_one(call, req, model, what, batch))
            goto done;
        texts[i] = request_text(req);
        words += (long long)sb_emu_count_words(texts[i]);
        if (which == SIZE_MAX && strstr(texts[i], "[[emu:"))
            which = i;
    }
    if (sb_emu_directives_parse(which == SIZE_MAX ? "" : texts[which], &d, &clean, err, sizeof err) < 0) {
        sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL, "%s", err);
        goto done;
    }
    if (sb_emu_fault_stage(call, &d, false, words, errors))
        goto done;
    if (d.malformed) {
        sb_emu_reply_malformed(&call->reply,
                               batch ? "{\"embeddings\": [ this is not JSON" : "{\"embedding\": { this is not JSON");
        goto done;
    }
    if (batch) {
        json_t *list = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(list, values_json(json_array_get(reqs, i), model, i == which ? clean : texts[i]));
        out = json_pack("{s:o}", "embeddings", list);
    } else {
        out = json_pack("{s:o}", "embedding", values_json(body, model, which == 0 ? clean : texts[0]));
    }
    reply(call, out);
    json_decref(out);
done:
    for (size_t i = 0; i < n; i++)
        free(texts[i]);
    free(texts);
    free(clean);
}
