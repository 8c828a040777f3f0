/*
 * wtool_image_build: the upstream request for one image (wtool_image.h):
 * the request's image_generation tool read and type-checked once, the input
 * images and the mask checked (base64 of a PNG, JPEG or WEBP image, within
 * the caps), then the request of the route's kind: OpenAI's
 * /images/generations (JSON) or /images/edits (multipart/form-data), or
 * Gemini's generateContent. Pure: the only outside state read is the
 * route's credential, from the environment.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "wtool_image.h"
#include "wtool_image_internal.h"

/* A checked image: its base64 borrowed from the call. */
typedef struct sb_image_in {
    const char *b64;
    size_t len;
    enum sb_image_format fmt;
} sb_image_in_t;

/* The tool's settings, type-checked; strings borrowed from the tool. */
typedef struct sb_image_opts {
    const char *model, *size, *quality, *background, *output_format, *moderation, *input_fidelity;
    bool has_compression;
    json_int_t compression;
    json_int_t partial_images;
    bool edit;
    sb_image_in_t images[SB_IMAGE_MAX_INPUTS];
    size_t n_images;
    sb_image_in_t mask;
    bool has_mask;
} sb_image_opts_t;

static int sb_image_fail(char *why, size_t why_len, int rc, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int sb_image_fail(char *why, size_t why_len, int rc, const char *fmt, ...)
{
    if (why && why_len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, why_len, fmt, ap);
        va_end(ap);
    }
    return rc;
}

/* tool[name] as a string: *out NULL when absent or null. */
static int sb_image_tool_str(const json_t *tool, const char *name, const char **out, char *why, size_t why_len)
{
    const json_t *v = json_object_get(tool, name);
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return sb_image_fail(why, why_len, -EINVAL, "image_generation.%s must be a string", name);
    *out = json_string_value(v);
    return 0;
}

/* tool[name] as an integer in [lo, hi]: *has false when absent or null. */
static int sb_image_tool_int(const json_t *tool, const char *name, json_int_t lo, json_int_t hi, bool *has,
                             json_int_t *out, char *why, size_t why_len)
{
    const json_t *v = json_object_get(tool, name);
    *has = false;
    *out = 0;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return sb_image_fail(why, why_len, -EINVAL, "image_generation.%s must be an integer from %lld to %lld", name,
                             (long long)lo, (long long)hi);
    *has = true;
    *out = json_integer_value(v);
    return 0;
}

/* One input image (what = "input image 2", "input_image_mask") checked into *in. */
static int sb_image_take(const char *s, size_t max, const char *what, sb_image_in_t *in, char *why, size_t why_len)
{
    int rc = sb_image_input(s, max, &in->b64, &in->len, &in->fmt);
    if (rc == -E2BIG)
        return sb_image_fail(why, why_len, -E2BIG, "%s is over %zu bytes of base64", what, max);
    if (rc == -EMEDIUMTYPE)
        return sb_image_fail(why, why_len, -EINVAL, "%s is not a PNG, JPEG or WEBP image", what);
    if (rc < 0)
        return sb_image_fail(why, why_len, -EINVAL, "%s is not base64 image data (or a base64 data URL)", what);
    return 0;
}

/* The mask: the caller's, else the tool's input_image_mask.image_url. */
static int sb_image_read_mask(const sb_image_call_t *call, size_t max, sb_image_opts_t *o, char *why, size_t why_len)
{
    const char *s = call->mask;
    if (!s) {
        const json_t *m = json_object_get(call->tool, "input_image_mask");
        if (!m || json_is_null(m))
            return 0;
        if (!json_is_object(m))
            return sb_image_fail(why, why_len, -EINVAL, "image_generation.input_image_mask must be an object");
        const json_t *url = json_object_get(m, "image_url");
        if (json_is_string(url))
            s = json_string_value(url);
        else if (json_is_string(json_object_get(m, "file_id")))
            return sb_image_fail(why, why_len, -EINVAL, "image_generation.input_image_mask.file_id was not resolved");
        else
            return sb_image_fail(why, why_len, -EINVAL,
                                 "image_generation.input_image_mask needs an image_url or a file_id");
    }
    int rc = sb_image_take(s, max, "input_image_mask", &o->mask, why, why_len);
    if (rc < 0)
        return rc;
    o->has_mask = true;
    return 0;
}

/* Reads and checks everything the request is made of into *o. */
static int sb_image_read(const sb_image_call_t *call, sb_image_opts_t *o, char *why, size_t why_len)
{
    const json_t *tool = call->tool;
    if (tool && !json_is_object(tool))
        return sb_image_fail(why, why_len, -EINVAL, "the image_generation tool is not an object");
    const char *action = NULL;
    bool has_partials;
    int rc;
    if ((rc = sb_image_tool_str(tool, "size", &o->size, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "quality", &o->quality, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "background", &o->background, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "output_format", &o->output_format, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "moderation", &o->moderation, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "input_fidelity", &o->input_fidelity, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "model", &o->model, why, why_len)) < 0 ||
        (rc = sb_image_tool_str(tool, "action", &action, why, why_len)) < 0 ||
        (rc = sb_image_tool_int(tool, "output_compression", 0, 100, &o->has_compression, &o->compression, why,
                                why_len)) < 0 ||
        (rc = sb_image_tool_int(tool, "partial_images", 0, SB_IMAGE_MAX_PARTIALS, &has_partials, &o->partial_images,
                                why, why_len)) < 0)
        return rc;
    if (action && strcmp(action, "generate") && strcmp(action, "edit") && strcmp(action, "auto"))
        return sb_image_fail(why, why_len, -EINVAL, "image_generation.action must be generate, edit or auto");
    const char *upstream_model = json_string_value(json_object_get(call->route, "upstream_model"));
    if (upstream_model && *upstream_model)
        o->model = upstream_model;
    if (!o->model || !*o->model)
        return sb_image_fail(why, why_len, -EINVAL, "the image route has no upstream_model");

    if (!call->prompt || !*call->prompt)
        return sb_image_fail(why, why_len, -EINVAL, "the image prompt is empty");
    if (strlen(call->prompt) > SB_IMAGE_MAX_PROMPT)
        return sb_image_fail(why, why_len, -E2BIG, "the image prompt is over %u bytes", SB_IMAGE_MAX_PROMPT);

    size_t max = call->max_b64 ? call->max_b64 : SB_IMAGE_MAX_B64;
    bool generate = action && !strcmp(action, "generate");
    size_t n = generate || !call->images ? 0 : call->n_images;
    if (n > SB_IMAGE_MAX_INPUTS)
        return sb_image_fail(why, why_len, -E2BIG, "more than %d input images", SB_IMAGE_MAX_INPUTS);
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        char what[32];
        snprintf(what, sizeof what, "input image %zu", i + 1);
        if ((rc = sb_image_take(call->images[i], max, what, &o->images[i], why, why_len)) < 0)
            return rc;
        total += o->images[i].len;
    }
    o->n_images = n;
    if (action && !strcmp(action, "edit") && n == 0)
        return sb_image_fail(why, why_len, -EINVAL, "image_generation.action is edit, but there is no image to edit");
    o->edit = n > 0;
    if (o->edit && (rc = sb_image_read_mask(call, max, o, why, why_len)) < 0)
        return rc;
    total += o->has_mask ? o->mask.len : 0;
    if (total > SB_IMAGE_MAX_INPUT_TOTAL)
        return sb_image_fail(why, why_len, -E2BIG, "the input images are over %u bytes of base64 together",
                             SB_IMAGE_MAX_INPUT_TOTAL);
    return 0;
}

/* route.base_url without trailing '/' + path; NULL without a base_url. */
static char *sb_image_url(const json_t *route, const char *path)
{
    const char *base = json_string_value(json_object_get(route, "base_url"));
    if (!base || !*base)
        return NULL;
    size_t n = strlen(base);
    while (n > 0 && base[n - 1] == '/')
        n--;
    return sb_xasprintf("%.*s%s", (int)n, base, path);
}

/* The route's credential (borrowed from environ) or NULL when it names none;
 * known to the worker's scrubber from now on (sb_provider_credential). */
static int sb_image_credential(const json_t *route, const char **value, char *why, size_t why_len)
{
    json_t *job = json_pack("{s:O}", "route", route);
    json_t *err = NULL;
    int rc = sb_provider_credential(job, value, &err);
    json_decref(job);
    json_decref(err);
    if (rc < 0) {
        const char *ref = json_string_value(json_object_get(route, "credential_ref"));
        return sb_image_fail(why, why_len, -ENOENT, "image route credential '%s' is not configured", ref ? ref : "");
    }
    return 0;
}

/* Sets a string field when the tool has it. */
static void sb_image_set_str(json_t *body, const char *name, const char *v)
{
    if (v)
        json_object_set_new(body, name, json_string(v));
}

/* POST /images/generations: the settings as JSON. */
static int sb_image_openai_generate(const sb_image_opts_t *o, const char *prompt, sb_image_req_t *out, char *why,
                                    size_t why_len)
{
    json_t *p = json_string(prompt);
    if (!p)
        return sb_image_fail(why, why_len, -EINVAL, "the image prompt is not UTF-8 text");
    json_t *body = json_pack("{s:s, s:o, s:i}", "model", o->model, "prompt", p, "n", 1);
    if (!body)
        return sb_image_fail(why, why_len, -EINVAL, "the image model name is not UTF-8 text");
    sb_image_set_str(body, "size", o->size);
    sb_image_set_str(body, "quality", o->quality);
    sb_image_set_str(body, "background", o->background);
    sb_image_set_str(body, "output_format", o->output_format);
    sb_image_set_str(body, "moderation", o->moderation);
    if (o->has_compression)
        json_object_set_new(body, "output_compression", json_integer(o->compression));
    if (out->stream) {
        json_object_set_new(body, "partial_images", json_integer(out->partial_images));
        json_object_set_new(body, "stream", json_true());
    }
    json_t *err = NULL;
    int rc = sb_provider_request_set_json(&out->http, body, out->stream, &err);
    json_decref(err);
    json_decref(body);
    if (rc < 0) /* a string jansson refused (not UTF-8) */
        return sb_image_fail(why, why_len, -EINVAL, "the image settings are not UTF-8 text");
    return 0;
}

/* Appends a plain field when it has a value. */
static void sb_image_field(sb_image_part_t *parts, size_t *n, const char *name, const char *value)
{
    if (value)
        parts[(*n)++] = (sb_image_part_t){.name = name, .data = value, .len = strlen(value)};
}

/* POST /images/edits: the images and mask as file parts, the rest as fields. */
static int sb_image_openai_edit(const sb_image_opts_t *o, const char *prompt, sb_image_req_t *out, char *why,
                                size_t why_len)
{
    /* A prompt jansson would not take is not text OpenAI could read either. */
    json_t *check = json_string(prompt);
    if (!check)
        return sb_image_fail(why, why_len, -EINVAL, "the image prompt is not UTF-8 text");
    json_decref(check);

    enum { MAX_PARTS = SB_IMAGE_MAX_INPUTS + 16 };
    sb_image_part_t parts[MAX_PARTS];
    unsigned char *bytes[SB_IMAGE_MAX_INPUTS + 1] = {0};
    char names[SB_IMAGE_MAX_INPUTS + 1][32];
    size_t n = 0, nb = 0;
    sb_image_field(parts, &n, "model", o->model);
    sb_image_field(parts, &n, "prompt", prompt);
    sb_image_field(parts, &n, "n", "1");
    int rc = 0;
    for (size_t i = 0; i <= o->n_images; i++) {
        const sb_image_in_t *in = i < o->n_images ? &o->images[i] : o->has_mask ? &o->mask : NULL;
        if (!in)
            break;
        size_t len = 0;
        bytes[nb] = sb_base64_decode(in->b64, in->len, &len);
        if (!bytes[nb]) { /* checked already; only a broken invariant gets here */
            rc = sb_image_fail(why, why_len, -EINVAL, "an input image is not base64");
            goto done;
        }
        const char *ext = sb_image_format_name(in->fmt);
        bool mask = i == o->n_images;
        if (mask)
            snprintf(names[nb], sizeof names[nb], "mask.%s", ext);
        else
            snprintf(names[nb], sizeof names[nb], "image-%zu.%s", i + 1, ext);
        parts[n++] = (sb_image_part_t){.name = mask ? "mask" : "image[]",
                                       .filename = names[nb],
                                       .content_type = sb_image_format_mime(in->fmt),
                                       .data = (const char *)bytes[nb],
                                       .len = len};
        nb++;
    }
    char compression[24], partials[24];
    snprintf(compression, sizeof compression, "%lld", (long long)o->compression);
    snprintf(partials, sizeof partials, "%d", out->partial_images);
    sb_image_field(parts, &n, "input_fidelity", o->input_fidelity);
    sb_image_field(parts, &n, "size", o->size);
    sb_image_field(parts, &n, "quality", o->quality);
    sb_image_field(parts, &n, "background", o->background);
    sb_image_field(parts, &n, "output_format", o->output_format);
    sb_image_field(parts, &n, "output_compression", o->has_compression ? compression : NULL);
    sb_image_field(parts, &n, "partial_images", out->stream ? partials : NULL);
    sb_image_field(parts, &n, "stream", out->stream ? "true" : NULL);

    char boundary[SB_IMAGE_BOUNDARY_MAX + 1];
    sb_image_multipart(parts, n, &out->http.body, &out->http.body_len, boundary);
    sb_provider_request_add_header(&out->http, "Content-Type: multipart/form-data; boundary=%s", boundary);
    sb_provider_request_add_header(&out->http, "Accept: %s", out->stream ? "text/event-stream" : "application/json");
done:
    for (size_t i = 0; i < nb; i++)
        free(bytes[i]);
    return rc;
}

/* Gemini's resource name of a model id: "models/<id>", or the name as given
 * when it already is one; NULL when it holds characters that could reshape
 * the URL. */
static char *sb_image_gemini_name(const char *model)
{
    for (const char *p = model; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || strchr("._-/", *p)))
            return NULL;
    if (strstr(model, "..") || model[0] == '/')
        return NULL;
    return sb_xasprintf("%s%s", strchr(model, '/') ? "" : "models/", model);
}

/* POST {base}/models/{model}:generateContent, the prompt and images as parts. */
static int sb_image_gemini(const sb_image_call_t *call, const sb_image_opts_t *o, sb_image_req_t *out, char *why,
                           size_t why_len)
{
    char *name = sb_image_gemini_name(o->model);
    if (!name)
        return sb_image_fail(why, why_len, -EINVAL, "the image route's upstream_model is not a Gemini model name");
    char *path = sb_xasprintf("/%s:generateContent", name);
    free(name);
    out->http.url = sb_image_url(call->route, path);
    free(path);
    if (!out->http.url)
        return sb_image_fail(why, why_len, -EINVAL, "the image route has no base_url");

    json_t *text = json_string(call->prompt);
    if (!text)
        return sb_image_fail(why, why_len, -EINVAL, "the image prompt is not UTF-8 text");
    json_t *parts = json_array();
    json_array_append_new(parts, json_pack("{s:o}", "text", text));
    for (size_t i = 0; i < o->n_images; i++) {
        const sb_image_in_t *in = &o->images[i];
        json_array_append_new(parts, json_pack("{s:{s:s, s:s%}}", "inlineData", "mimeType",
                                               sb_image_format_mime(in->fmt), "data", in->b64, in->len));
    }
    json_t *config = json_pack("{s:[s,s]}", "responseModalities", "TEXT", "IMAGE");
    const char *ratio = sb_image_aspect_ratio(o->size);
    if (ratio)
        json_object_set_new(config, "imageConfig", json_pack("{s:s}", "aspectRatio", ratio));
    json_t *body =
        json_pack("{s:[{s:s, s:o}], s:o}", "contents", "role", "user", "parts", parts, "generationConfig", config);
    json_t *err = NULL;
    int rc = body ? sb_provider_request_set_json(&out->http, body, false, &err) : -1;
    json_decref(err);
    json_decref(body);
    if (rc < 0)
        return sb_image_fail(why, why_len, -EINVAL, "the image request could not be encoded");
    return 0;
}

int sb_image_build(const sb_image_call_t *call, sb_image_req_t *out, char *why, size_t why_len)
{
    memset(out, 0, sizeof *out);
    if (why && why_len)
        why[0] = '\0';
    const char *kind = json_string_value(json_object_get(call->route, "provider"));
    if (!kind)
        kind = "";
    if (!strcmp(kind, "openai-chat") || !strcmp(kind, "openai-responses") || !strcmp(kind, "openai-compatible"))
        out->api = SB_IMAGE_API_OPENAI;
    else if (!strcmp(kind, "gemini"))
        out->api = SB_IMAGE_API_GEMINI;
    else
        return sb_image_fail(why, why_len, -ENOTSUP, "image generation is not available on a %s route",
                             *kind ? kind : "provider-less");

    sb_image_opts_t o = {0};
    const char *credential = NULL;
    int rc = sb_image_read(call, &o, why, why_len);
    if (rc == 0)
        rc = sb_image_credential(call->route, &credential, why, why_len);
    if (rc < 0)
        goto fail;
    out->edit = o.edit;
    if (out->api == SB_IMAGE_API_GEMINI) {
        rc = sb_image_gemini(call, &o, out, why, why_len);
        if (rc == 0 && credential)
            sb_provider_request_add_header(&out->http, "x-goog-api-key: %s", credential);
    } else {
        out->stream = call->partials && o.partial_images > 0;
        out->partial_images = out->stream ? (int)o.partial_images : 0;
        out->http.url = sb_image_url(call->route, o.edit ? "/images/edits" : "/images/generations");
        if (!out->http.url)
            rc = sb_image_fail(why, why_len, -EINVAL, "the image route has no base_url");
        else if (o.edit)
            rc = sb_image_openai_edit(&o, call->prompt, out, why, why_len);
        else
            rc = sb_image_openai_generate(&o, call->prompt, out, why, why_len);
        if (rc == 0 && credential)
            sb_provider_request_add_header(&out->http, "Authorization: Bearer %s", credential);
    }
    if (rc < 0)
        goto fail;
    return 0;
fail:
    sb_image_req_clear(out);
    return rc;
}

void sb_image_req_clear(sb_image_req_t *r)
{
    sb_provider_request_clear(&r->http);
    memset(r, 0, sizeof *r);
}

const char *sb_image_aspect_ratio(const char *size)
{
    /* Gemini's imageConfig.aspectRatio values, with width / height. */
    static const struct {
        const char *name;
        double r;
    } ratios[] = {{"1:1", 1.0},     {"2:3", 2.0 / 3}, {"3:2", 3.0 / 2},   {"3:4", 3.0 / 4},   {"4:3", 4.0 / 3},
                  {"4:5", 4.0 / 5}, {"5:4", 5.0 / 4}, {"9:16", 9.0 / 16}, {"16:9", 16.0 / 9}, {"21:9", 21.0 / 9}};
    if (!size)
        return NULL;
    unsigned long w = 0, h = 0;
    const char *p = size;
    for (; *p >= '0' && *p <= '9' && w < 1000000; p++)
        w = w * 10 + (unsigned long)(*p - '0');
    if (p == size || *p != 'x')
        return NULL;
    const char *q = ++p;
    for (; *p >= '0' && *p <= '9' && h < 1000000; p++)
        h = h * 10 + (unsigned long)(*p - '0');
    if (p == q || *p != '\0' || w == 0 || h == 0)
        return NULL;
    double r = (double)w / (double)h;
    const char *best = NULL;
    double best_off = 0.03; /* relative: 1792x1024 (1.75) is 16:9 (1.78); 1:1 and 5:4 are 25% apart */
    for (size_t i = 0; i < sizeof ratios / sizeof ratios[0]; i++) {
        double off = r / ratios[i].r - 1;
        if (off < 0)
            off = -off;
        if (off <= best_off) {
            best_off = off;
            best = ratios[i].name;
        }
    }
    return best;
}
