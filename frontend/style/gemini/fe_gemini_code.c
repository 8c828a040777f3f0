/*
 * fe_gemini_code: Gemini's code execution on the gateway's code
 * interpreter, in the Generate Content style (see fe_gemini_code.h for the
 * mapping). Gemini's Outcome is read from the canonical item
 * (fe_code_outcome.h): a run that raised is OUTCOME_FAILED with its
 * traceback in output (Gemini: "output contains the stderr and stdout"), one
 * stopped at its time limit OUTCOME_DEADLINE_EXCEEDED with what it printed,
 * and a sandbox that could not run the code OUTCOME_FAILED with a short
 * text in place of the output it never made.
 */
#include "fe_gemini_code.h"

#include <stdlib.h>
#include <string.h>

#include "fe_code_outcome.h"
#include "fe_gemini_json.h"
#include "sb_alloc.h"
#include "sb_dataurl.h"
#include "sb_id.h"

/* What a failed item's output says (the worker's reason is the
 * operator's, not the client's). */
#define FE_GC_UNAVAILABLE "The code could not be run: the sandbox is unavailable."
/* The note the model reads when its code runs out of time
 * (worker/wloop_code.c), kept when a client sends such a result back. */
#define FE_GC_TIMEOUT_NOTE "\n[The code was stopped: it ran out of time.]"

int fe_gemini_code_tool(fe_gemini_ctx_t *c, const json_t *ce, const char *at)
{
    static const char *const fields[] = {NULL};
    char cat[FE_GEMINI_AT + 16];
    fe_gemini_path(cat, sizeof cat, "%s.code_execution", at);
    return fe_gemini_known(ce, fields, cat, c->err);
}

/* ---- history ------------------------------------------------------------------ */

int fe_gemini_code_exec(fe_gemini_ctx_t *c, const json_t *ec, const char *at)
{
    static const char *const fields[] = {"language", "code", "id", NULL};
    char eat[FE_GEMINI_AT];
    fe_gemini_at(eat, sizeof eat, at, "executableCode");
    const char *lang = NULL, *code = NULL, *id = NULL;
    if (fe_gemini_known(ec, fields, eat, c->err) < 0 || fe_gemini_string(ec, "language", eat, &lang, c->err) < 0 ||
        fe_gemini_string(ec, "code", eat, &code, c->err) < 0 || fe_gemini_string(ec, "id", eat, &id, c->err) < 0)
        return -1;
    if (lang && !fe_gemini_ieq(lang, "PYTHON")) {
        char lat[FE_GEMINI_AT + 12];
        fe_gemini_path(lat, sizeof lat, "%s.language", eat);
        return fe_gemini_bad_value(c->err, lat, "type.googleapis.com/google.ai.generativelanguage.v1beta.Language",
                                   fe_gemini_get(ec, "language"));
    }
    char gen[SB_ID_MAX];
    sb_id_new(gen, sizeof gen, "ci_", 24);
    json_t *item = json_pack("{s:s, s:s, s:s, s:s, s:[]}", "type", "code_interpreter_call", "id", gen, "status",
                             "completed", "code", code ? code : "", "outputs");
    json_array_append_new(c->items, item);
    c->code = item;
    c->code_waiting = true;
    return 0;
}

/* Appends {type:"logs", logs} to the item's outputs. */
static void fe_gc_add_logs(json_t *item, const char *logs, size_t n)
{
    if (n == 0)
        return;
    json_t *s = json_stringn(logs, n);
    if (s)
        json_array_append_new(json_object_get(item, "outputs"), json_pack("{s:s, s:o}", "type", "logs", "logs", s));
}

int fe_gemini_code_result(fe_gemini_ctx_t *c, const json_t *cer, json_t *sealed, const char *at)
{
    static const char *const fields[] = {"outcome", "output", "id", NULL};
    char rat[FE_GEMINI_AT];
    fe_gemini_at(rat, sizeof rat, at, "codeExecutionResult");
    const char *outcome = NULL, *output = NULL, *id = NULL;
    if (fe_gemini_known(cer, fields, rat, c->err) < 0 || fe_gemini_string(cer, "outcome", rat, &outcome, c->err) < 0 ||
        fe_gemini_string(cer, "output", rat, &output, c->err) < 0 || fe_gemini_string(cer, "id", rat, &id, c->err) < 0)
        goto fail;
    static const char *const outcomes[] = {"OUTCOME_UNSPECIFIED", "OUTCOME_OK", "OUTCOME_FAILED",
                                           "OUTCOME_DEADLINE_EXCEEDED", NULL};
    bool known = !outcome;
    for (size_t i = 0; outcomes[i] && !known; i++)
        known = fe_gemini_ieq(outcome, outcomes[i]);
    if (!known) {
        char oat[FE_GEMINI_AT + 12];
        fe_gemini_path(oat, sizeof oat, "%s.outcome", rat);
        fe_gemini_bad_value(c->err, oat, "type.googleapis.com/google.ai.generativelanguage.v1beta.Outcome",
                            fe_gemini_get(cer, "outcome"));
        goto fail;
    }
    if (!c->code || !c->code_waiting) {
        fe_gemini_fail(c->err,
                       "Invalid value at '%s': a codeExecutionResult part must follow the executableCode part it "
                       "answers.",
                       at);
        goto fail;
    }
    if (sealed) {
        /* What the gateway sealed: the item the model saw, the container it
         * ran in; its outputs are the parts'. */
        size_t i;
        json_t *it;
        json_array_foreach (c->items, i, it)
            if (it == c->code)
                break;
        json_object_set_new(sealed, "outputs", json_array());
        json_array_set_new(c->items, i, sealed);
        c->code = sealed;
        sealed = NULL;
    }
    c->code_waiting = false;
    fe_gc_add_logs(c->code, output ? output : "", output ? strlen(output) : 0);
    if (outcome && fe_gemini_ieq(outcome, "OUTCOME_DEADLINE_EXCEEDED") &&
        !json_is_string(json_object_get(c->code, "sb_output"))) {
        static const char note[] = FE_GC_TIMEOUT_NOTE;
        size_t skip = output && *output ? 0 : 1; /* no newline before the note when it is all there is */
        fe_gc_add_logs(c->code, note + skip, sizeof note - 1 - skip);
    }
    return 0;
fail:
    json_decref(sealed);
    return -1;
}

bool fe_gemini_code_image(fe_gemini_ctx_t *c, const json_t *part)
{
    const char *type = json_string_value(json_object_get(part, "type"));
    json_t *url = json_object_get(part, "image_url");
    if (!c->code || c->code_waiting || !type || strcmp(type, "input_image") != 0 || !json_is_string(url))
        return false;
    json_array_append_new(json_object_get(c->code, "outputs"), json_pack("{s:s, s:O}", "type", "image", "url", url));
    return true;
}

void fe_gemini_code_end(fe_gemini_ctx_t *c)
{
    c->code = NULL;
    c->code_waiting = false;
}

/* ---- response ------------------------------------------------------------------ */

json_t *fe_gemini_code_exec_part(const json_t *item)
{
    json_t *code = json_object_get(item, "code");
    return json_pack("{s:{s:s, s:s}}", "executableCode", "language", "PYTHON", "code",
                     json_is_string(code) ? json_string_value(code) : "");
}

/* An image output's data URL as an inlineData part, or NULL when it is not
 * a base64 data URL. */
static json_t *fe_gc_image_part(const char *url)
{
    sb_dataurl_t u;
    char mime[64];
    if (!url || sb_dataurl_parse(url, &u) < 0 || !u.base64 || sb_dataurl_mime(&u, mime, sizeof mime) < 0 ||
        strncmp(mime, "image/", 6) != 0)
        return NULL;
    json_t *data = json_stringn(u.payload, u.payload_len);
    return data ? json_pack("{s:{s:s, s:o}}", "inlineData", "mimeType", mime, "data", data) : NULL;
}

json_t *fe_gemini_code_sealable(const json_t *item)
{
    json_t *copy = json_deep_copy(item);
    json_object_del(copy, "outputs");
    return copy ? copy : json_object();
}

void fe_gemini_code_result_parts(json_t *parts, const json_t *item, json_t *sig)
{
    fe_code_outcome_t how = fe_code_outcome(item);
    json_t *logs = fe_code_logs(item);
    if (how == FE_CODE_FAILED && json_string_length(logs) == 0)
        json_string_set(logs, FE_GC_UNAVAILABLE);
    const char *outcome = how == FE_CODE_OK        ? "OUTCOME_OK"
                          : how == FE_CODE_TIMEOUT ? "OUTCOME_DEADLINE_EXCEEDED"
                                                   : "OUTCOME_FAILED";
    json_t *result = json_pack("{s:s}", "outcome", outcome);
    if (json_string_length(logs) > 0) /* proto3 JSON leaves an empty string out */
        json_object_set(result, "output", logs);
    json_decref(logs);
    json_t *part = json_pack("{s:o}", "codeExecutionResult", result);
    if (sig)
        json_object_set_new(part, "thoughtSignature", sig);
    json_array_append_new(parts, part);
    size_t i;
    json_t *o;
    json_array_foreach (json_object_get(item, "outputs"), i, o) {
        const char *type = json_string_value(json_object_get(o, "type"));
        json_t *img =
            type && !strcmp(type, "image") ? fe_gc_image_part(json_string_value(json_object_get(o, "url"))) : NULL;
        if (img)
            json_array_append_new(parts, img);
    }
}
