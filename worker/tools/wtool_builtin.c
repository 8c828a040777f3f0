/*
 * wtool_builtin: the pure half of the three tools that keep data — the code
 * interpreter (containers), file search (vector stores) and image
 * generation (wtool.h; docs/tools.md): whether the gateway runs each, the
 * reserved function the model is offered for it, and an earlier turn's
 * item rewritten into the call the model made and what it was given. The
 * I/O is wloop_tools.c's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_job.h"
#include "wtool.h"

static bool sb_tool_builtin_native(const json_t *job, const char *name)
{
    const char *v = json_string_value(json_object_get(json_object_get(sb_job_route(job), "capabilities"), name));
    return v && !strcmp(v, "native");
}

bool sb_tool_builtin_item(const json_t *job, const char *type)
{
    if (!type)
        return false;
    if (!strcmp(type, "code_interpreter_call"))
        return !sb_tool_builtin_native(job, "code_interpreter");
    if (!strcmp(type, "file_search_call"))
        return !sb_tool_builtin_native(job, "file_search");
    if (!strcmp(type, "image_generation_call"))
        return !sb_tool_builtin_native(job, "image_generation");
    return false;
}

bool sb_tool_builtin_take(sb_tool_plan_t *p, const json_t *job, const json_t *tool)
{
    const char *type = json_string_value(json_object_get(tool, "type"));
    const json_t **slot = NULL;
    if (type && !strcmp(type, "code_interpreter"))
        slot = &p->code_interpreter;
    else if (type && !strcmp(type, "file_search"))
        slot = &p->file_search;
    else if (type && !strcmp(type, "image_generation"))
        slot = &p->image_generation;
    if (!slot || sb_tool_builtin_native(job, type))
        return false;
    if (!*slot)
        *slot = tool; /* the first of a kind; a second is the same tool again */
    return true;
}

static json_t *sb_tool_builtin_fn(const char *name, const char *description, json_t *parameters)
{
    return json_pack("{s:s, s:s, s:s, s:o}", "type", "function", "name", name, "description", description, "parameters",
                     parameters);
}

void sb_tool_builtin_offer(const sb_tool_plan_t *p, json_t *tools)
{
    if (p->code_interpreter)
        json_array_append_new(
            tools, sb_tool_builtin_fn(
                       SB_TOOL_PYTHON_FN,
                       "Run Python 3 code in a stateful sandbox (like a Jupyter notebook: variables persist between "
                       "calls in this response). The working directory /mnt/data holds the user's files, and files "
                       "saved there are given back to the user; link them as [name](sandbox:/mnt/data/name). "
                       "numpy, pandas and matplotlib are installed; figures shown with matplotlib are displayed to "
                       "the user. There is no internet access. Print what you want to see.",
                       json_pack("{s:s, s:{s:{s:s, s:s}}, s:[s], s:b}", "type", "object", "properties", "code", "type",
                                 "string", "description", "The Python code to run.", "required", "code",
                                 "additionalProperties", 0)));
    if (p->file_search)
        json_array_append_new(
            tools, sb_tool_builtin_fn(
                       SB_TOOL_FILE_SEARCH_FN,
                       "Search the files the user has provided. Returns the most relevant passages with "
                       "their file names. Cite a passage you use by writing its file name in square brackets "
                       "right after the sentence, e.g. [report.pdf].",
                       json_pack("{s:s, s:{s:{s:s, s:{s:s}, s:s}}, s:[s], s:b}", "type", "object", "properties",
                                 "queries", "type", "array", "items", "type", "string", "description",
                                 "One or more search queries.", "required", "queries", "additionalProperties", 0)));
    if (p->image_generation)
        json_array_append_new(
            tools, sb_tool_builtin_fn(
                       SB_TOOL_IMAGE_FN,
                       "Generate an image from a text description; it is shown to the user. With edit true, the "
                       "newest image of this conversation (or the user's image) is edited instead.",
                       json_pack("{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[s], s:b}", "type", "object", "properties",
                                 "prompt", "type", "string", "description", "What the image should show.", "edit",
                                 "type", "boolean", "description", "Edit the newest image instead of starting anew.",
                                 "required", "prompt", "additionalProperties", 0)));
}

enum sb_tool_kind sb_tool_builtin_resolve(const sb_tool_plan_t *p, const char *name)
{
    if (!name)
        return SB_TOOL_NONE;
    if (p->code_interpreter && !strcmp(name, SB_TOOL_PYTHON_FN))
        return SB_TOOL_CODE;
    if (p->file_search && !strcmp(name, SB_TOOL_FILE_SEARCH_FN))
        return SB_TOOL_FILE_SEARCH;
    if (p->image_generation && !strcmp(name, SB_TOOL_IMAGE_FN))
        return SB_TOOL_IMAGE;
    return SB_TOOL_NONE;
}

/* The logs of a code_interpreter_call's outputs (malloc'd; NULL: none). */
static char *sb_tool_builtin_logs(const json_t *outputs)
{
    sb_buf_t b = {0};
    size_t i;
    const json_t *o;
    json_array_foreach (outputs, i, o) {
        const char *logs = json_string_value(json_object_get(o, "logs"));
        if (logs)
            sb_buf_add(&b, logs, strlen(logs));
    }
    if (!b.p)
        return NULL;
    sb_buf_add(&b, "", 1);
    return b.p;
}

static void sb_tool_builtin_pair(const json_t *item, const char *fn, json_t *args, const char *text, json_t *input,
                                 const char *dflt_id)
{
    const char *id = json_string_value(json_object_get(item, "id"));
    char *a = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    json_array_append_new(input, sb_tool_call_item(id ? id : dflt_id, fn, a, item));
    json_array_append_new(input, sb_tool_output_item(id ? id : dflt_id, text));
    free(a);
}

bool sb_tool_builtin_replay(sb_tool_plan_t *p, const json_t *job, const json_t *item, json_t *input)
{
    const char *type = json_string_value(json_object_get(item, "type"));
    if (!sb_tool_builtin_item(job, type))
        return false;
    const char *kept = json_string_value(json_object_get(item, "sb_output"));
    const char *status = json_string_value(json_object_get(item, "status"));
    bool failed = status && !strcmp(status, "failed");
    if (!strcmp(type, "code_interpreter_call")) {
        const json_t *cid = json_object_get(item, "container_id");
        if (json_is_string(cid)) {
            if (!p->containers)
                p->containers = json_array();
            json_array_append(p->containers, (json_t *)cid);
        }
        const char *code = json_string_value(json_object_get(item, "code"));
        char *logs = kept ? NULL : sb_tool_builtin_logs(json_object_get(item, "outputs"));
        const char *text = kept     ? kept
                           : logs   ? logs
                           : failed ? "Error: the code could not be run."
                                    : "The code ran; its output is not kept in this conversation.";
        sb_tool_builtin_pair(item, SB_TOOL_PYTHON_FN, json_pack("{s:s}", "code", code ? code : ""), text, input,
                             "ci_replayed");
        free(logs);
    } else if (!strcmp(type, "file_search_call")) {
        const json_t *q = json_object_get(item, "queries");
        sb_tool_builtin_pair(item, SB_TOOL_FILE_SEARCH_FN,
                             json_pack("{s:O}", "queries", json_is_array(q) ? q : json_array()),
                             kept     ? kept
                             : failed ? "Error: the file search failed."
                                      : "The files were searched; the results are not kept in this conversation.",
                             input, "fs_replayed");
    } else {
        const json_t *result = json_object_get(item, "result");
        if (json_is_string(result) && json_string_length(result) > 0) {
            json_decref(p->last_image);
            p->last_image = json_incref((json_t *)result);
        }
        const char *prompt = json_string_value(json_object_get(item, "revised_prompt"));
        sb_tool_builtin_pair(item, SB_TOOL_IMAGE_FN, json_pack("{s:s}", "prompt", prompt ? prompt : ""),
                             kept     ? kept
                             : failed ? "Error: the image could not be generated."
                                      : "The image was generated and shown to the user.",
                             input, "ig_replayed");
    }
    return true;
}

/* The value of a JSON string escape \uXXXX at s (4 hex digits), or -1. */
static long sb_tool_hex4(const char *s, size_t n)
{
    if (n < 4)
        return -1;
    long v = 0;
    for (int i = 0; i < 4; i++) {
        char c = s[i];
        int d = c >= '0' && c <= '9'   ? c - '0'
                : c >= 'a' && c <= 'f' ? c - 'a' + 10
                : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                       : -1;
        if (d < 0)
            return -1;
        v = v * 16 + d;
    }
    return v;
}

static void sb_tool_put_cp(sb_buf_t *b, unsigned long cp)
{
    char u[4];
    size_t n;
    if (cp < 0x80) {
        u[0] = (char)cp;
        n = 1;
    } else if (cp < 0x800) {
        u[0] = (char)(0xC0 | cp >> 6);
        u[1] = (char)(0x80 | (cp & 0x3F));
        n = 2;
    } else if (cp < 0x10000) {
        u[0] = (char)(0xE0 | cp >> 12);
        u[1] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (char)(0x80 | (cp & 0x3F));
        n = 3;
    } else {
        u[0] = (char)(0xF0 | cp >> 18);
        u[1] = (char)(0x80 | (cp >> 12 & 0x3F));
        u[2] = (char)(0x80 | (cp >> 6 & 0x3F));
        u[3] = (char)(0x80 | (cp & 0x3F));
        n = 4;
    }
    sb_buf_add(b, u, n);
}

/* The length of s[0..n) without a UTF-8 sequence cut off at its end. */
static size_t sb_tool_utf8_whole(const char *s, size_t n)
{
    size_t k = n;
    while (k > 0 && n - k < 4 && ((unsigned char)s[k - 1] & 0xC0) == 0x80)
        k--;
    if (k == 0)
        return n;
    unsigned char lead = (unsigned char)s[k - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    return n - (k - 1) < need ? k - 1 : n;
}

/* Finds the opening quote of the value of key "code" at the top level of a
 * JSON object being written; returns its offset + 1, or 0. A key is
 * recognised only as `"code"` followed by optional space and a colon. */
static size_t sb_tool_code_start(const char *a, size_t n)
{
    for (size_t i = 0; i + 6 <= n; i++) {
        if (memcmp(a + i, "\"code\"", 6) != 0)
            continue;
        size_t j = i + 6;
        while (j < n && (a[j] == ' ' || a[j] == '\n' || a[j] == '\t' || a[j] == '\r'))
            j++;
        if (j >= n || a[j] != ':')
            continue;
        j++;
        while (j < n && (a[j] == ' ' || a[j] == '\n' || a[j] == '\t' || a[j] == '\r'))
            j++;
        if (j < n && a[j] == '"')
            return j + 1;
        return 0;
    }
    return 0;
}

char *sb_tool_code_partial(const char *a, size_t n)
{
    sb_buf_t b = {0};
    size_t i = a ? sb_tool_code_start(a, n) : 0;
    while (i > 0 && i < n && a[i] != '"') {
        if (a[i] != '\\') {
            /* Raw bytes up to the next quote or escape; a UTF-8 sequence cut
             * at the end waits for the rest. */
            size_t j = i;
            while (j < n && a[j] != '"' && a[j] != '\\')
                j++;
            size_t whole = j;
            if (j == n)
                whole = sb_tool_utf8_whole(a + i, j - i) + i;
            sb_buf_add(&b, a + i, whole - i);
            if (whole < j)
                break;
            i = j;
            continue;
        }
        if (i + 1 >= n)
            break;
        char c = a[i + 1];
        const char *simple = strchr("\"\\/bfnrt", c);
        if (simple && c) {
            static const char to[] = "\"\\/\b\f\n\r\t";
            sb_buf_add(&b, &to[simple - "\"\\/bfnrt"], 1);
            i += 2;
            continue;
        }
        if (c != 'u')
            break; /* not JSON: stop where it stops being code */
        long cp = sb_tool_hex4(a + i + 2, n - i - 2);
        if (cp < 0)
            break;
        size_t used = 6;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            long lo = i + 8 <= n && a[i + 6] == '\\' && a[i + 7] == 'u' ? sb_tool_hex4(a + i + 8, n - i - 8) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF)
                break; /* the low half is not here yet (or is missing) */
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            used = 12;
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            cp = 0xFFFD;
        }
        sb_tool_put_cp(&b, (unsigned long)cp);
        i += used;
    }
    sb_buf_add(&b, "", 1);
    return b.p;
}

json_t *sb_tool_file_citations(const char *text, const json_t *files)
{
    json_t *out = json_array();
    if (!text || json_array_size(files) == 0)
        return out;
    size_t n = strlen(text), cp = 0, off = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] != '[')
            continue;
        size_t j = i + 1;
        while (j < n && j - i <= 256 && text[j] != ']' && text[j] != '[' && text[j] != '\n')
            j++;
        if (j >= n || text[j] != ']' || (j + 1 < n && text[j + 1] == '('))
            continue;
        size_t k;
        const json_t *f;
        json_array_foreach (files, k, f) {
            const char *name = json_string_value(json_object_get(f, "filename"));
            if (!name || strlen(name) != j - i - 1 || strncmp(text + i + 1, name, j - i - 1) != 0)
                continue;
            for (; off < i; off++)
                if (((unsigned char)text[off] & 0xC0) != 0x80)
                    cp++;
            json_array_append_new(out,
                                  json_pack("{s:s, s:O, s:s, s:I}", "type", "file_citation", "file_id",
                                            json_object_get(f, "file_id"), "filename", name, "index", (json_int_t)cp));
            break;
        }
        i = j;
    }
    return out;
}
