/*
 * emu_gemini_image: Gemini's image output, for emu_gemini.c's
 * generateContent and streamGenerateContent.
 *
 * A model whose name contains "image" (gemini-2.5-flash-image,
 * gemini-3-pro-image-preview, emu-image...) answers with an image part
 * {"inlineData":{"mimeType":"image/png","data":<base64>}} after its text,
 * unless generationConfig.responseModalities leaves IMAGE out; with IMAGE
 * and no TEXT the image is the only part. Gemini counts 1290 output tokens
 * per image (usageMetadata.candidatesTokensDetails, modality IMAGE). Any
 * other model asked for IMAGE is refused as Google refuses it: 400 "Model
 * does not support the requested response modalities: image".
 * generationConfig.imageConfig takes aspectRatio (1:1, 2:3, 3:2, 3:4, 4:3,
 * 4:5, 5:4, 9:16, 16:9, 21:9: a wide ratio gives a 24x16 picture, a tall
 * one 16x24) and imageSize (1K, 2K, 4K); other names are unknown fields.
 *
 * The picture (emu_picture.c) hashes the last user text without directives
 * and then every inline image of the request's contents, in order, so
 * sending an earlier image back (an edit, in a user or a model turn) changes
 * the output deterministically.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "emu_check.h"
#include "emu_image.h"
#include "emu_internal.h"
#include "sb_alloc.h"

static const char *const aspect_ratios[] = {"1:1", "2:3",  "3:2",  "3:4",  "4:3", "4:5",
                                            "5:4", "9:16", "16:9", "21:9", NULL};
static const char *const image_sizes[] = {"1K", "2K", "4K", NULL};

/* Whether responseModalities is given, and whether it names mod (case-insensitive, as proto3 enums read). */
static bool modality(const json_t *req, const char *mod, bool *given)
{
    json_t *mods = sb_emu_gget(sb_emu_gget(req, "generationConfig"), "responseModalities");
    *given = json_array_size(mods) > 0;
    size_t i;
    json_t *m;
    json_array_foreach (mods, i, m) {
        if (json_is_string(m) && !strcasecmp(json_string_value(m), mod))
            return true;
    }
    return false;
}

static bool image_model(const char *model)
{
    return strstr(model, "image") != NULL;
}

bool sb_emu_gemini_image_check(struct sb_emu_call *call, const char *model, const json_t *req)
{
    bool given;
    if (modality(req, "IMAGE", &given) && !image_model(model)) {
        sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL,
                            "Model does not support the requested response modalities: image");
        return false;
    }
    json_t *ic = sb_emu_gget(sb_emu_gget(req, "generationConfig"), "imageConfig");
    if (!json_is_object(ic))
        return true;
    const char *key;
    json_t *v;
    json_object_foreach (ic, key, v) {
        bool ratio = !strcmp(key, "aspectRatio") || !strcmp(key, "aspect_ratio");
        bool size = !strcmp(key, "imageSize") || !strcmp(key, "image_size");
        if (!ratio && !size) {
            char msg[256];
            snprintf(msg, sizeof msg,
                     "Invalid JSON payload received. Unknown name \"%.64s\" at 'generation_config.image_config': "
                     "Cannot find field.",
                     key);
            json_t *details =
                json_pack("[{s:s, s:[{s:s, s:s}]}]", "@type", "type.googleapis.com/google.rpc.BadRequest",
                          "fieldViolations", "field", "generation_config.image_config", "description", msg);
            sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", details, "%s", msg);
            return false;
        }
        const char *s = json_string_value(v);
        if (!s || !sb_emu_in_list(s, ratio ? aspect_ratios : image_sizes)) {
            sb_emu_gemini_error(&call->reply, 400, "INVALID_ARGUMENT", NULL,
                                "* GenerateContentRequest.generation_config.image_config.%s: unsupported value\n",
                                ratio ? "aspect_ratio" : "image_size");
            return false;
        }
    }
    return true;
}

bool sb_emu_gemini_image_wanted(const char *model, const json_t *req, bool *text)
{
    bool given;
    bool image = modality(req, "IMAGE", &given);
    bool with_text = modality(req, "TEXT", &given);
    *text = !given || with_text;
    return image_model(model) && (!given || image);
}

/* Chains the bytes of every inline image of the contents into seed. */
static uint64_t inline_images(const json_t *req, uint64_t seed, size_t *count)
{
    size_t i, k;
    json_t *c, *p;
    *count = 0;
    json_array_foreach (sb_emu_gget(req, "contents"), i, c) {
        json_array_foreach (sb_emu_gget(c, "parts"), k, p) {
            json_t *blob = sb_emu_gget(p, "inlineData");
            const char *mime = json_string_value(sb_emu_gget(blob, "mimeType"));
            const char *data = json_string_value(sb_emu_gget(blob, "data"));
            if (!mime || !data || strncasecmp(mime, "image/", 6) != 0)
                continue;
            unsigned char *bytes = NULL;
            size_t n = 0;
            if (sb_emu_base64url_decode(data, strlen(data), &bytes, &n) == 0) {
                seed = sb_emu_image_hash(bytes, n, seed);
                (*count)++;
            }
            free(bytes);
        }
    }
    return seed;
}

json_t *sb_emu_gemini_image_part(const json_t *req, const char *clean)
{
    size_t inputs = 0;
    uint64_t seed = inline_images(req, sb_emu_image_hash(clean, strlen(clean), 0x67656d696e69ULL), &inputs);
    const char *ratio =
        json_string_value(sb_emu_gget(sb_emu_gget(sb_emu_gget(req, "generationConfig"), "imageConfig"), "aspectRatio"));
    unsigned w = 16, h = 16;
    if (ratio) {
        unsigned long a = strtoul(ratio, NULL, 10);
        const char *colon = strchr(ratio, ':');
        unsigned long b = colon ? strtoul(colon + 1, NULL, 10) : a;
        w = a > b ? 24 : 16;
        h = b > a ? 24 : 16;
    }
    struct sb_emu_picture p;
    sb_emu_picture_init(&p, w, h, seed, false);
    char comment[96];
    if (inputs)
        snprintf(comment, sizeof comment, "gemini edit of %zu input image%s", inputs, inputs == 1 ? "" : "s");
    else
        snprintf(comment, sizeof comment, "gemini generation");
    p.desc = clean;
    p.comment = comment;
    size_t len = 0;
    unsigned char *png = sb_emu_picture_encode(&p, SB_EMU_IMAGE_PNG, &len);
    char *b64 = sb_emu_base64_encode(png, len);
    json_t *part = json_pack("{s:{s:s, s:s}}", "inlineData", "mimeType", "image/png", "data", b64);
    free(b64);
    free(png);
    return part;
}
