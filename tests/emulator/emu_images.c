/*
 * emu_images: OpenAI's Images API for the GPT image models.
 *
 *   POST /v1/images/generations  JSON {prompt, model, n, size, quality, background,
 *                                output_format, output_compression, moderation,
 *                                partial_images, stream, user}
 *   POST /v1/images/edits        multipart/form-data: image (or image[], up to 16
 *                                PNG/JPEG/WebP files), mask (PNG), prompt,
 *                                input_fidelity and the same output fields
 *
 * Both answer {"created","background","data":[{"b64_json"}],"output_format",
 * "quality","size","usage":{input_tokens, input_tokens_details{image_tokens,
 * text_tokens}, output_tokens, total_tokens, output_tokens_details}} with "auto"
 * resolved (size 1024x1024, quality high, background opaque); with
 * stream:true an SSE stream of, per image, partial_images events
 * "image_generation.partial_image" (edits: "image_edit.partial_image")
 * {type, b64_json, created_at, size, quality, background, output_format,
 * partial_image_index} and then "image_generation.completed"
 * ("image_edit.completed") {type, b64_json, created_at, size, quality,
 * background, output_format, usage}, each with its "event:" line.
 *
 * The images are emu_picture.c's: the colour hashes the prompt (without
 * directives) and, for an edit, every input image and the mask, so an edit
 * differs from a generation of the same prompt; image i of n hashes i too.
 * Partial image k of P fills floor(blocks * (k + 1) / (P + 1)) of the
 * picture's blocks, the final image all of them. Output tokens are OpenAI's
 * per-image counts for gpt-image-1 (1024x1024: low 272, medium 1056, high
 * 4160; the wide and tall sizes 408, 1584, 6240; gpt-image-2's free sizes in
 * proportion to their pixels); input tokens are the prompt's words plus 85
 * per input image. Directives in the prompt and route faults apply.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "emu_image.h"
#include "emu_internal.h"
#include "emu_multipart.h"
#include "emu_openai_check.h"
#include "sb_alloc.h"

#define MSG_MAX 512
#define INPUT_IMAGE_TOKENS 85
#define SQUARE_PIXELS (1024.0 * 1024.0)

struct images_reply {
    const struct sb_emu_images_req *r;
    const char *clean; /* the prompt without directives */
    long long created;
    long long text_tokens, image_tokens, output_tokens; /* output_tokens: per image */
};

/* ---- reading an edit's upload ------------------------------------------------------------------- */

static bool all_digits(const char *s)
{
    if (*s == '-')
        s++;
    if (!*s)
        return false;
    for (; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

/* A text field's value typed as the JSON body would carry it: integers and booleans read from their text. */
static json_t *typed_field(const char *name, const struct sb_emu_part *p)
{
    json_t *s = json_stringn((const char *)p->data, p->len);
    if (!s)
        return NULL; /* not UTF-8 */
    const char *t = json_string_value(s);
    bool int_field = !strcmp(name, "n") || !strcmp(name, "output_compression") || !strcmp(name, "partial_images");
    if (int_field && strlen(t) < 19 && all_digits(t)) {
        json_t *i = json_integer(strtoll(t, NULL, 10));
        json_decref(s);
        return i;
    }
    if (!strcmp(name, "stream") && (!strcasecmp(t, "true") || !strcasecmp(t, "false"))) {
        json_t *b = json_boolean(!strcasecmp(t, "true"));
        json_decref(s);
        return b;
    }
    return s;
}

/* The upload's text fields into *params (first of a name wins), its file parts into files; false after the 400. */
static bool read_upload(struct sb_emu_call *call, json_t **params, struct sb_emu_part *files, size_t *nfiles)
{
    char boundary[80], err[160];
    const char *ct = sb_emu_call_header(call, "Content-Type");
    if (sb_emu_multipart_boundary(ct, boundary, sizeof boundary) < 0)
        return sb_emu_openai_invalid(call, NULL, NULL,
                                     "Invalid Content-Type header (%.64s), expected multipart/form-data with a "
                                     "boundary. (HINT: image edits are file uploads.)",
                                     ct ? ct : "none");
    struct sb_emu_part *all = sb_xcalloc(SB_EMU_MULTIPART_MAX_PARTS, sizeof *all);
    size_t n = 0;
    if (sb_emu_multipart_parse((const unsigned char *)call->body, call->body_len, boundary, all,
                               SB_EMU_MULTIPART_MAX_PARTS, &n, err, sizeof err) < 0) {
        free(all);
        return sb_emu_openai_invalid(call, NULL, NULL, "Could not parse the multipart form: %s.", err);
    }
    *params = json_object();
    *nfiles = 0;
    for (size_t i = 0; i < n; i++) {
        if (all[i].is_file) {
            files[(*nfiles)++] = all[i];
            continue;
        }
        if (json_object_get(*params, all[i].name))
            continue;
        json_t *v = typed_field(all[i].name, &all[i]);
        if (!v) {
            sb_emu_openai_invalid(call, all[i].name, "invalid_value", "Invalid value for '%.64s': not UTF-8 text.",
                                  all[i].name);
            free(all);
            return false;
        }
        json_object_set_new(*params, all[i].name, v);
    }
    free(all);
    return true;
}

/* ---- the images ------------------------------------------------------------------------------------ */

static long long tokens_per_image(const struct sb_emu_images_req *r)
{
    bool square = !strcmp(r->size, "1024x1024");
    bool standard = square || !strcmp(r->size, "1536x1024") || !strcmp(r->size, "1024x1536");
    long long low = square || !standard ? 272 : 408, medium = square || !standard ? 1056 : 1584,
              high = square || !standard ? 4160 : 6240;
    long long t = !strcmp(r->quality, "low") ? low : !strcmp(r->quality, "medium") ? medium : high;
    if (standard)
        return t;
    /* gpt-image-2's free sizes: the square count in proportion to the pixels. */
    unsigned long w = strtoul(r->size, NULL, 10);
    const char *x = strchr(r->size, 'x');
    unsigned long h = x ? strtoul(x + 1, NULL, 10) : 0;
    return (long long)((double)t * (double)w * (double)h / SQUARE_PIXELS + 0.5);
}

/*
 * Image `index`'s base64: the final image when partial < 0, else partial image `partial` (0-based) of `partials`,
 * with `filled` of its blocks painted.
 */
static char *image_b64(const struct images_reply *x, int index, unsigned filled, int partial, int partials)
{
    const struct sb_emu_images_req *r = x->r;
    uint64_t seed = sb_emu_image_hash(x->clean, strlen(x->clean), r->edit ? r->input_hash ^ 1u : 0);
    unsigned char ib[4] = {(unsigned char)index, (unsigned char)(index >> 8), 0, 0};
    seed = sb_emu_image_hash(ib, sizeof ib, seed);
    struct sb_emu_picture p;
    sb_emu_picture_init(&p, r->w, r->h, seed, !strcmp(r->background, "transparent"));
    if (partial >= 0)
        p.filled = filled;
    char comment[200];
    int at = snprintf(comment, sizeof comment, "%s by %s, image %d of %d", r->edit ? "edit" : "generation", r->model,
                      index + 1, r->n);
    if (r->edit && at > 0 && (size_t)at < sizeof comment)
        at += snprintf(comment + at, sizeof comment - (size_t)at, ", of %zu input image%s", r->ninputs,
                       r->ninputs == 1 ? "" : "s");
    if (partial >= 0 && at > 0 && (size_t)at < sizeof comment)
        snprintf(comment + at, sizeof comment - (size_t)at, ", partial %d of %d", partial + 1, partials);
    p.desc = x->clean;
    p.comment = comment;
    size_t len = 0;
    unsigned char *bytes = sb_emu_picture_encode(&p, r->image_format, &len);
    char *b64 = sb_emu_base64_encode(bytes, len);
    free(bytes);
    return b64;
}

static json_t *usage_json(const struct images_reply *x, int images)
{
    long long in = x->text_tokens + x->image_tokens, out = x->output_tokens * images;
    return json_pack("{s:I, s:{s:I, s:I}, s:I, s:I, s:{s:I, s:I}}", "input_tokens", (json_int_t)in,
                     "input_tokens_details", "image_tokens", (json_int_t)x->image_tokens, "text_tokens",
                     (json_int_t)x->text_tokens, "output_tokens", (json_int_t)out, "total_tokens",
                     (json_int_t)(in + out), "output_tokens_details", "image_tokens", (json_int_t)out, "text_tokens",
                     (json_int_t)0);
}

static void reply_full(struct sb_emu_call *call, const struct images_reply *x)
{
    const struct sb_emu_images_req *r = x->r;
    json_t *data = json_array();
    for (int i = 0; i < r->n; i++) {
        char *b64 = image_b64(x, i, 0, -1, 0);
        json_array_append_new(data, json_pack("{s:s}", "b64_json", b64));
        free(b64);
    }
    json_t *out = json_pack("{s:I, s:s, s:o, s:s, s:s, s:s, s:o}", "created", (json_int_t)x->created, "background",
                            r->background, "data", data, "output_format", r->format, "quality", r->quality, "size",
                            r->size, "usage", usage_json(x, r->n));
    sb_emu_reply_json(&call->reply, 200, out);
    json_decref(out);
}

static json_t *event_json(const struct images_reply *x, const char *type, const char *b64)
{
    const struct sb_emu_images_req *r = x->r;
    return json_pack("{s:s, s:s, s:I, s:s, s:s, s:s, s:s}", "type", type, "b64_json", b64, "created_at",
                     (json_int_t)x->created, "size", r->size, "quality", r->quality, "background", r->background,
                     "output_format", r->format);
}

static void reply_stream(struct sb_emu_call *call, const struct images_reply *x)
{
    const struct sb_emu_images_req *r = x->r;
    struct sb_emu_reply *rep = &call->reply;
    const char *partial_type = r->edit ? "image_edit.partial_image" : "image_generation.partial_image";
    const char *done_type = r->edit ? "image_edit.completed" : "image_generation.completed";
    unsigned blocks = (r->w / SB_EMU_PICTURE_BLOCK) * (r->h / SB_EMU_PICTURE_BLOCK);
    sb_emu_reply_stream_start(rep);
    for (int i = 0; i < r->n; i++) {
        for (int k = 0; k < r->partial_images; k++) {
            unsigned filled =
                (unsigned)((unsigned long)blocks * (unsigned long)(k + 1) / (unsigned long)(r->partial_images + 1));
            char *b64 = image_b64(x, i, filled, k, r->partial_images);
            json_t *ev = event_json(x, partial_type, b64);
            json_object_set_new(ev, "partial_image_index", json_integer(k));
            sb_emu_reply_sse(rep, partial_type, ev, "\n\n");
            json_decref(ev);
            free(b64);
        }
        char *b64 = image_b64(x, i, 0, -1, 0);
        json_t *ev = event_json(x, done_type, b64);
        json_object_set_new(ev, "usage", usage_json(x, 1));
        sb_emu_reply_sse(rep, done_type, ev, "\n\n");
        json_decref(ev);
        free(b64);
    }
}

/* ---- the handler ------------------------------------------------------------------------------------ */

static void leak_error(struct sb_emu_call *call, int status, const char *message, bool stream)
{
    (void)stream;
    sb_emu_openai_leak_error(call, status, message);
}

static const struct sb_emu_fault_errors images_errors = {
    .status = sb_emu_openai_status_error, .leak = leak_error, .auth = sb_emu_openai_auth_error};

void sb_emu_images_handle(struct sb_emu_call *call, bool edit)
{
    json_t *params = NULL;
    struct sb_emu_part *files = NULL;
    size_t nfiles = 0;
    char *clean = NULL, err[MSG_MAX];
    struct sb_emu_images_req r;

    call->protocol = "openai-images";
    if (!edit)
        sb_emu_call_set_model_from_body(call);
    if (sb_emu_openai_check_auth(call))
        return;
    if (!edit) {
        if (!sb_emu_openai_check_body(call))
            return;
        params = json_incref(call->json);
    } else {
        files = sb_xcalloc(SB_EMU_MULTIPART_MAX_PARTS, sizeof *files);
        if (!read_upload(call, &params, files, &nfiles))
            goto done;
        sb_emu_call_set_model(call, json_string_value(json_object_get(params, "model")));
    }
    if (!sb_emu_images_check(call, params, files, nfiles, edit, &r))
        goto done;

    struct sb_emu_directives d;
    if (sb_emu_directives_parse(r.prompt, &d, &clean, err, sizeof err) < 0) {
        sb_emu_openai_invalid(call, "prompt", NULL, "%s", err);
        goto done;
    }
    struct images_reply x = {.r = &r, .clean = clean, .created = (long long)time(NULL)};
    x.text_tokens = (long long)sb_emu_count_words(clean);
    x.image_tokens = (long long)r.ninputs * INPUT_IMAGE_TOKENS;
    x.output_tokens = tokens_per_image(&r);
    if (sb_emu_fault_stage(call, &d, r.stream, x.text_tokens + x.image_tokens, &images_errors))
        goto done;
    if (d.malformed) {
        if (r.stream) {
            sb_emu_reply_stream_start(&call->reply);
            sb_emu_reply_chunk(&call->reply, "event: image_generation.completed\ndata: {\"type\":\n\n");
        } else {
            sb_emu_reply_malformed(&call->reply, "{\"created\": 1, \"data\": [ this is not JSON");
        }
        goto done;
    }
    if (r.stream) {
        reply_stream(call, &x);
        sb_emu_stream_faults(&call->reply, &d);
    } else {
        reply_full(call, &x);
    }
done:
    json_decref(params);
    free(files);
    free(clean);
}
