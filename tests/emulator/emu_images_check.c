/*
 * emu_images_check: validation of an Images API request (generations: a JSON
 * body; edits: a multipart upload whose text fields emu_images.c has typed)
 * as the real API does it for the GPT image models, in OpenAI's words
 * (400 invalid_request_error, with param and code):
 *
 *   - unknown parameters ("Unknown parameter: 'x'."), response_format and
 *     style included, which only the DALL-E models take;
 *   - prompt required, 1 to 32000 characters;
 *   - model one of the Images API's (gpt-image-1, gpt-image-1-mini,
 *     gpt-image-1.5, gpt-image-2, gpt-image-2-2026-04-21,
 *     chatgpt-image-latest, dall-e-2, dall-e-3) or the emulator's own
 *     "emu-image..."; absent, generations default to dall-e-2 (gpt-image-1
 *     when a GPT-only parameter is given) and edits to gpt-image-1.5. The
 *     DALL-E models are not emulated (a 400 that says so);
 *   - n 1..10; size 1024x1024 | 1536x1024 | 1024x1536 | auto (gpt-image-2:
 *     also WxH, both multiples of 16, at most 3840 a side and 8,294,400
 *     pixels, aspect between 1:3 and 3:1); quality low | medium | high |
 *     auto; background transparent | opaque | auto (transparent: not with
 *     gpt-image-2, not with jpeg); moderation low | auto (generations);
 *     output_format png | jpeg | webp; output_compression 0..100, and below
 *     100 not with png; partial_images 0..3; stream a boolean; user a string;
 *     input_fidelity high | low (edits; not gpt-image-1-mini);
 *   - edits: image (or image[]) required, 1 to 16 files, each with a
 *     Content-Type of image/png, image/jpeg or image/webp and bytes of that
 *     kind; mask a PNG with an alpha channel, the size of the first image.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_image.h"
#include "emu_internal.h"
#include "emu_multipart.h"
#include "emu_openai_check.h"

#define PROMPT_MAX 32000
#define MAX_IMAGES 16
#define GPT2_EDGE_MAX 3840
#define GPT2_PIXELS_MAX (3840L * 2160L)

static const char *const gen_params[] = {
    "prompt",  "background", "model",  "moderation", "n", "output_compression", "output_format", "partial_images",
    "quality", "size",       "stream", "user",       NULL};
static const char *const edit_params[] = {
    "image",         "prompt",         "background", "input_fidelity", "mask",   "model", "n", "output_compression",
    "output_format", "partial_images", "quality",    "size",           "stream", "user",  NULL};
/* Parameters only the GPT image models take: one of them moves the generations default off dall-e-2. */
static const char *const gpt_only[] = {
    "background", "moderation", "output_compression", "output_format", "partial_images", "stream", NULL};
static const char *const models[] = {
    "gpt-image-1",          "gpt-image-1-mini", "gpt-image-1.5", "gpt-image-2", "gpt-image-2-2026-04-21",
    "chatgpt-image-latest", "dall-e-2",         "dall-e-3",      NULL};
#define MODELS_PHRASE                                                                                                  \
    "'gpt-image-1', 'gpt-image-1-mini', 'gpt-image-1.5', 'gpt-image-2', 'gpt-image-2-2026-04-21', "                    \
    "'chatgpt-image-latest', 'dall-e-2', and 'dall-e-3'"
static const char *const sizes[] = {"1024x1024", "1536x1024", "1024x1536", "auto", NULL};
static const char *const qualities[] = {"low", "medium", "high", "auto", NULL};
static const char *const backgrounds[] = {"transparent", "opaque", "auto", NULL};
static const char *const moderations[] = {"low", "auto", NULL};
static const char *const out_formats[] = {"png", "jpeg", "webp", NULL};
static const char *const fidelities[] = {"high", "low", NULL};
static const char *const upload_types[] = {"image/png", "image/jpeg", "image/webp", NULL};

/* A present, non-null parameter. */
static const json_t *param(const json_t *params, const char *name)
{
    const json_t *v = json_object_get(params, name);
    return v && !json_is_null(v) ? v : NULL;
}

/* An integer parameter within min..max ("Invalid 'n': integer above maximum value. ..."). */
static bool check_int(struct sb_emu_call *call, const json_t *params, const char *name, long long min, long long max)
{
    const json_t *v = param(params, name);
    if (!v)
        return true;
    if (!sb_emu_openai_check_type(call, v, name, SB_EMU_W_INT))
        return false;
    long long x = (long long)json_integer_value(v);
    if (x < min)
        return sb_emu_openai_invalid(call, name, "integer_below_min_value",
                                     "Invalid '%s': integer below minimum value. Expected a value >= %lld, but got "
                                     "%lld instead.",
                                     name, min, x);
    if (x > max)
        return sb_emu_openai_invalid(call, name, "integer_above_max_value",
                                     "Invalid '%s': integer above maximum value. Expected a value <= %lld, but got "
                                     "%lld instead.",
                                     name, max, x);
    return true;
}

static bool is_gpt_image(const char *model)
{
    return !strncmp(model, "gpt-image-", 10) || !strcmp(model, "chatgpt-image-latest") ||
           !strncmp(model, "emu-image", 9);
}

static bool is_gpt_image_2(const char *model)
{
    return !strncmp(model, "gpt-image-2", 11);
}

/* gpt-image-2's free size "WxH"; false after the 400. */
static bool check_free_size(struct sb_emu_call *call, const char *s, unsigned *w, unsigned *h)
{
    char *end = NULL;
    long x = strtol(s, &end, 10), y = 0;
    bool shape = end != s && *end == 'x' && x > 0;
    if (shape) {
        const char *hs = end + 1;
        y = strtol(hs, &end, 10);
        shape = end != hs && *end == '\0' && y > 0;
    }
    const char *why = NULL;
    if (!shape)
        why = "Expected 'auto' or a size of the form WIDTHxHEIGHT, e.g. '1536x864'";
    else if (x % 16 || y % 16)
        why = "Width and height must both be divisible by 16";
    else if (x > GPT2_EDGE_MAX || y > GPT2_EDGE_MAX || x * y > GPT2_PIXELS_MAX)
        why = "The maximum supported resolution is 3840x2160";
    else if (x > 3 * y || y > 3 * x)
        why = "The aspect ratio must be between 1:3 and 3:1";
    if (why)
        return sb_emu_openai_invalid(call, "size", "invalid_value", "Invalid value: '%.32s'. %s.", s, why);
    *w = (unsigned)x;
    *h = (unsigned)y;
    return true;
}

/* The picture's pixels for a size: 16x16 square, 24x16 wide, 16x24 tall. */
static void picture_shape(unsigned w, unsigned h, struct sb_emu_images_req *out)
{
    out->w = w > h ? 24 : 16;
    out->h = h > w ? 24 : 16;
}

static bool check_model(struct sb_emu_call *call, const json_t *params, bool edit, struct sb_emu_images_req *out)
{
    const json_t *m = param(params, "model");
    if (!m) {
        out->model = edit ? "gpt-image-1.5" : "dall-e-2";
        for (const char *const *k = gpt_only; !edit && *k; k++)
            if (param(params, *k))
                out->model = "gpt-image-1";
    } else {
        if (!sb_emu_openai_check_type(call, m, "model", SB_EMU_W_STRING))
            return false;
        out->model = json_string_value(m);
        if (!sb_emu_in_list(out->model, models) && strncmp(out->model, "emu-image", 9) != 0)
            return sb_emu_openai_invalid(call, "model", "invalid_value",
                                         "Invalid value: '%.64s'. Supported values are: " MODELS_PHRASE ".",
                                         out->model);
        if (edit && !strcmp(out->model, "dall-e-3"))
            return sb_emu_openai_invalid(call, "model", "invalid_value",
                                         "Invalid value: 'dall-e-3'. Image edits are not supported by dall-e-3.");
    }
    if (!is_gpt_image(out->model))
        return sb_emu_openai_invalid(call, "model", NULL,
                                     "The emulator does not emulate %s: use a GPT image model (e.g. gpt-image-1).",
                                     out->model);
    if (param(params, "response_format"))
        return sb_emu_openai_invalid(call, "response_format", "unknown_parameter",
                                     "Unknown parameter: 'response_format'.");
    if (param(params, "style"))
        return sb_emu_openai_invalid(call, "style", "unknown_parameter", "Unknown parameter: 'style'.");
    return true;
}

static bool check_output(struct sb_emu_call *call, const json_t *params, bool edit, struct sb_emu_images_req *out)
{
    if (!check_int(call, params, "n", 1, 10) || !check_int(call, params, "partial_images", 0, 3) ||
        !check_int(call, params, "output_compression", 0, 100))
        return false;
    const json_t *size = param(params, "size");
    if (size && is_gpt_image_2(out->model)) {
        if (!sb_emu_openai_check_type(call, size, "size", SB_EMU_W_STRING))
            return false;
    } else if (!sb_emu_openai_check_enum(call, size, "size", sizes,
                                         "'1024x1024', '1536x1024', '1024x1536', and 'auto'")) {
        return false;
    }
    if (!sb_emu_openai_check_enum(call, param(params, "quality"), "quality", qualities,
                                  "'low', 'medium', 'high', and 'auto'") ||
        !sb_emu_openai_check_enum(call, param(params, "background"), "background", backgrounds,
                                  "'transparent', 'opaque', and 'auto'") ||
        !sb_emu_openai_check_enum(call, param(params, "output_format"), "output_format", out_formats,
                                  "'png', 'jpeg', and 'webp'"))
        return false;
    if (!edit &&
        !sb_emu_openai_check_enum(call, param(params, "moderation"), "moderation", moderations, "'low' and 'auto'"))
        return false;
    if (edit && !sb_emu_openai_check_enum(call, param(params, "input_fidelity"), "input_fidelity", fidelities,
                                          "'high' and 'low'"))
        return false;
    const json_t *stream = param(params, "stream"), *user = param(params, "user");
    if ((stream && !sb_emu_openai_check_type(call, stream, "stream", SB_EMU_W_BOOL)) ||
        (user && !sb_emu_openai_check_type(call, user, "user", SB_EMU_W_STRING)))
        return false;

    const char *s = size ? json_string_value(size) : "auto";
    out->size = strcmp(s, "auto") ? s : "1024x1024";
    if (!strcmp(out->size, "1536x1024")) {
        picture_shape(1536, 1024, out);
    } else if (!strcmp(out->size, "1024x1536")) {
        picture_shape(1024, 1536, out);
    } else if (!strcmp(out->size, "1024x1024")) {
        picture_shape(1024, 1024, out);
    } else {
        unsigned w = 0, h = 0;
        if (!check_free_size(call, out->size, &w, &h))
            return false;
        picture_shape(w, h, out);
    }
    const json_t *q = param(params, "quality"), *bg = param(params, "background"), *f = param(params, "output_format");
    out->quality = q && strcmp(json_string_value(q), "auto") ? json_string_value(q) : "high";
    out->background = bg && !strcmp(json_string_value(bg), "transparent") ? "transparent" : "opaque";
    out->format = f ? json_string_value(f) : "png";
    out->image_format = !strcmp(out->format, "jpeg")   ? SB_EMU_IMAGE_JPEG
                        : !strcmp(out->format, "webp") ? SB_EMU_IMAGE_WEBP
                                                       : SB_EMU_IMAGE_PNG;
    const json_t *n = param(params, "n"), *pi = param(params, "partial_images"),
                 *oc = param(params, "output_compression");
    out->n = n ? (int)json_integer_value(n) : 1;
    out->partial_images = pi ? (int)json_integer_value(pi) : 0;
    out->stream = stream && json_is_true(stream);

    if (!strcmp(out->background, "transparent") && is_gpt_image_2(out->model))
        return sb_emu_openai_invalid(call, "background", "invalid_value",
                                     "Transparent background is not supported for this model.");
    if (!strcmp(out->background, "transparent") && out->image_format == SB_EMU_IMAGE_JPEG)
        return sb_emu_openai_invalid(call, "background", "invalid_value",
                                     "Transparent background is not supported for the jpeg output format; use png or "
                                     "webp.");
    if (oc && json_integer_value(oc) < 100 && out->image_format == SB_EMU_IMAGE_PNG)
        return sb_emu_openai_invalid(call, "output_compression", "invalid_value",
                                     "Compression less than 100 is not supported for PNG output format.");
    const json_t *fid = param(params, "input_fidelity");
    if (fid && !strcmp(out->model, "gpt-image-1-mini"))
        return sb_emu_openai_invalid(call, "input_fidelity", "invalid_value",
                                     "input_fidelity is not supported for gpt-image-1-mini.");
    return true;
}

/* The file parts of an edit: image / image[] (1..16, typed and of that type), mask (PNG with alpha, same size). */
static bool check_files(struct sb_emu_call *call, const json_t *params, const struct sb_emu_part *parts, size_t nparts,
                        struct sb_emu_images_req *out)
{
    if (param(params, "image"))
        return sb_emu_openai_invalid(call, "image", "invalid_type",
                                     "Invalid type for 'image': expected one of an array of files or file, but got "
                                     "a string instead.");
    if (param(params, "mask"))
        return sb_emu_openai_invalid(call, "mask", "invalid_type",
                                     "Invalid type for 'mask': expected a file, but got a string instead.");
    size_t nimages = 0;
    bool array = false;
    for (size_t i = 0; i < nparts; i++) {
        if (!strcmp(parts[i].name, "image") || !strcmp(parts[i].name, "image[]")) {
            nimages++;
            array = array || parts[i].name[5] == '[';
        }
    }
    if (nimages == 0)
        return sb_emu_openai_missing(call, "image");
    array = array || nimages > 1;
    if (nimages > MAX_IMAGES)
        return sb_emu_openai_invalid(call, "image", "array_above_max_length",
                                     "Invalid 'image': array too long. Expected an array with maximum length %d, but "
                                     "got an array with length %zu instead.",
                                     MAX_IMAGES, nimages);
    uint64_t hash = 0;
    size_t k = 0;
    unsigned first_w = 0, first_h = 0;
    for (size_t i = 0; i < nparts; i++) {
        const struct sb_emu_part *p = &parts[i];
        if (strcmp(p->name, "image") && strcmp(p->name, "image[]"))
            continue;
        char name[32];
        if (array)
            snprintf(name, sizeof name, "image[%zu]", k);
        else
            snprintf(name, sizeof name, "image");
        if (!p->content_type[0])
            return sb_emu_openai_invalid(call, name, "missing_file_mimetype",
                                         "Invalid file '%s': failed to determine mimetype. Ensure you are providing "
                                         "the file's mimetype as part of the 'Content-Type' header.",
                                         name);
        if (!sb_emu_in_list_nocase(p->content_type, upload_types))
            return sb_emu_openai_invalid(call, name, "unsupported_file_mimetype",
                                         "Invalid file '%s': unsupported mimetype ('%.64s'). Supported file formats "
                                         "are 'image/jpeg', 'image/png', and 'image/webp'.",
                                         name, p->content_type);
        unsigned w, h;
        bool alpha;
        enum sb_emu_image_format f = sb_emu_image_sniff(p->data, p->len, &w, &h, &alpha);
        if (f == SB_EMU_IMAGE_NONE || strcasecmp(sb_emu_image_mime(f), p->content_type) != 0)
            return sb_emu_openai_invalid(call, name, "invalid_image_format",
                                         "Invalid image file or mode for image %zu, please check your image file.",
                                         k + 1);
        if (k == 0) {
            first_w = w;
            first_h = h;
        }
        hash = sb_emu_image_hash(p->data, p->len, hash);
        k++;
    }
    for (size_t i = 0; i < nparts; i++) {
        const struct sb_emu_part *p = &parts[i];
        if (strcmp(p->name, "mask"))
            continue;
        if (strcasecmp(p->content_type, "image/png") != 0)
            return sb_emu_openai_invalid(call, "mask", "unsupported_file_mimetype",
                                         "Invalid file 'mask': unsupported mimetype ('%.64s'). Supported file formats "
                                         "are 'image/png'.",
                                         p->content_type[0] ? p->content_type : "application/octet-stream");
        unsigned w, h;
        bool alpha;
        if (sb_emu_image_sniff(p->data, p->len, &w, &h, &alpha) != SB_EMU_IMAGE_PNG)
            return sb_emu_openai_invalid(call, "mask", "invalid_image_format",
                                         "Invalid mask image format - the mask is not a PNG image.");
        if (!alpha)
            return sb_emu_openai_invalid(call, "mask", "invalid_image_format",
                                         "Invalid mask image format - mask image missing alpha channel");
        if (first_w && (w != first_w || h != first_h))
            return sb_emu_openai_invalid(call, "mask", "invalid_image_format",
                                         "Invalid mask image format - mask size (%ux%u) does not match image size "
                                         "(%ux%u)",
                                         w, h, first_w, first_h);
        hash = sb_emu_image_hash(p->data, p->len, hash ^ 0x6d61736bULL); /* "mask" */
    }
    out->ninputs = k;
    out->input_hash = hash;
    return true;
}

bool sb_emu_images_check(struct sb_emu_call *call, const json_t *params, const struct sb_emu_part *parts, size_t nparts,
                         bool edit, struct sb_emu_images_req *out)
{
    memset(out, 0, sizeof *out);
    out->edit = edit;
    const char *const *known = edit ? edit_params : gen_params;
    const char *key;
    json_t *v;
    json_object_foreach ((json_t *)params, key, v) {
        if (!sb_emu_in_list(key, known) && strcmp(key, "response_format") && strcmp(key, "style"))
            return sb_emu_openai_invalid(call, key, "unknown_parameter", "Unknown parameter: '%.64s'.", key);
    }
    for (size_t i = 0; i < nparts; i++) {
        const char *name = parts[i].name;
        if (strcmp(name, "image") && strcmp(name, "image[]") && strcmp(name, "mask"))
            return sb_emu_openai_invalid(call, name, "unknown_parameter", "Unknown parameter: '%.64s'.", name);
    }
    const json_t *prompt = param(params, "prompt");
    if (!prompt)
        return sb_emu_openai_missing(call, "prompt");
    if (!sb_emu_openai_check_type(call, prompt, "prompt", SB_EMU_W_STRING))
        return false;
    size_t plen = sb_emu_utf8_length(json_string_value(prompt));
    if (plen == 0)
        return sb_emu_openai_invalid(call, "prompt", "empty_string",
                                     "Invalid 'prompt': empty string. Expected a string with minimum length 1, but "
                                     "got an empty string instead.");
    if (plen > PROMPT_MAX)
        return sb_emu_openai_invalid(call, "prompt", "string_above_max_length",
                                     "Invalid 'prompt': string too long. Expected a string with maximum length %d, "
                                     "but got a string with length %zu instead.",
                                     PROMPT_MAX, plen);
    out->prompt = json_string_value(prompt);
    if (!check_model(call, params, edit, out) || !check_output(call, params, edit, out))
        return false;
    return !edit || check_files(call, params, parts, nparts, out);
}
