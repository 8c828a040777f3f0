/*
 * test_image: the image generation tool's pure half (worker/tools/
 * wtool_image.h). Image bytes: the magic of PNG, JPEG and WEBP, base64 and
 * data URL inputs checked without a full decode, the caps. Requests: OpenAI
 * generations (every option, the stream only when partial images are
 * shown), edits as multipart/form-data read back with the frontend's strict
 * multipart parser (the image bytes, NUL bytes included, the mask, the
 * fields an edit takes and not moderation), the three OpenAI route kinds,
 * Gemini's generateContent (parts, aspect ratios, its key header, never a
 * stream), and every refusal (anthropic, missing route fields or
 * credential, wrong types and ranges, bad or too many images, an edit with
 * nothing to edit). Answers: OpenAI's JSON and event stream (fed whole and
 * cut at every byte, with LF and CRLF line ends), partial images in order
 * and capped, Gemini's parts (thought images skipped, text kept, usage
 * mapped, safety blocks), and every failure (HTTP errors with the
 * upstream's message and code, the credential scrubbed out, a 401's
 * message generic, malformed bodies, cut streams, non-images, images over
 * the cap), each ending in exactly one outcome. Then the whole way through
 * the worker's own transfer to the upstream emulator (which checks the
 * requests as the real APIs do): generations plain and streamed (partial
 * images first, as they come), edits with a mask and with two images, the
 * emulator's refusals and a wrong key, and Gemini's image model (an image
 * sent back is an edit; a text-only model's 400).
 */
#include <curl/curl.h>
#include <errno.h>
#include <event2/event.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "fe_multipart.h"
#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_buf.h"
#include "sb_test.h"
#include "sb_time.h"
#include "upstream.h"
#include "wtool_image.h"
#include "wtool_image_internal.h"

#define SECRET "sk-imgtest-0123456789abcdefSECRET"
#define KEY_ENV "SB_TEST_IMAGE_CRED"

/* A real 1x1 RGBA PNG (NUL bytes inside, as every PNG has). */
static const unsigned char png1[] = {
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52, 0x00, 0x00,
    0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4, 0x89, 0x00, 0x00, 0x00,
    0x0d, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0xf8, 0xcf, 0xc0, 0xf0, 0x1f, 0x00, 0x05, 0x00, 0x01, 0xff,
    0x89, 0x99, 0x3d, 0x1d, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae, 0x42, 0x60, 0x82};
#define PNG_B64 "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGP4z8DwHwAFAAH/iZk9HQAAAABJRU5ErkJggg=="
/* The start of a JFIF file and of a lossless WEBP one (the magic is all that is read). */
static const unsigned char jpeg1[] = {0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 'J', 'F', 'I', 'F', 0x00, 0x01, 0x01, 0x00};
static const unsigned char webp1[] = {'R', 'I', 'F', 'F', 0x1a, 0,   0,   0,    'W',
                                      'E', 'B', 'P', 'V', 'P',  '8', 'L', 0x0d, 0};

static char *b64_of(const void *p, size_t n)
{
    return sb_base64_encode(p, n, NULL);
}

static json_t *route_of(const char *provider)
{
    return json_pack("{s:s, s:s, s:s, s:s}", "provider", provider, "base_url", "http://127.0.0.1:18650/v1/",
                     "upstream_model", "gpt-image-1", "credential_ref", KEY_ENV);
}

static const char *header(const sb_image_req_t *r, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < r->http.n_headers; i++)
        if (!strncasecmp(r->http.headers[i], name, n) && r->http.headers[i][n] == ':')
            return r->http.headers[i] + n + 2;
    return NULL;
}

/* ---- image bytes ------------------------------------------------------------------------------ */

static void test_sniff(void)
{
    enum sb_image_format f;
    CHECK_INT(sb_image_sniff(png1, sizeof png1), SB_IMAGE_PNG);
    CHECK_INT(sb_image_sniff(png1, 7), SB_IMAGE_NONE); /* a cut signature */
    CHECK_INT(sb_image_sniff(jpeg1, sizeof jpeg1), SB_IMAGE_JPEG);
    CHECK_INT(sb_image_sniff(webp1, sizeof webp1), SB_IMAGE_WEBP);
    CHECK_INT(sb_image_sniff("RIFF\x1a\0\0\0WAVE", 12), SB_IMAGE_NONE);
    CHECK_INT(sb_image_sniff("GIF89a", 6), SB_IMAGE_NONE);
    CHECK_STR(sb_image_format_name(SB_IMAGE_WEBP), "webp");
    CHECK_STR(sb_image_format_mime(SB_IMAGE_JPEG), "image/jpeg");
    CHECK(sb_image_format_name(SB_IMAGE_NONE) == NULL);

    CHECK_INT(sb_image_check_b64(PNG_B64, strlen(PNG_B64), 0, &f), 0);
    CHECK_INT(f, SB_IMAGE_PNG);
    char *j = b64_of(jpeg1, sizeof jpeg1), *w = b64_of(webp1, sizeof webp1), *short_png = b64_of(png1, 4);
    CHECK_INT(sb_image_check_b64(j, strlen(j), 0, &f), 0);
    CHECK_INT(f, SB_IMAGE_JPEG);
    CHECK_INT(sb_image_check_b64(w, strlen(w), 0, &f), 0);
    CHECK_INT(f, SB_IMAGE_WEBP);
    CHECK_INT(sb_image_check_b64(short_png, strlen(short_png), 0, &f), -EMEDIUMTYPE);
    CHECK_INT(f, SB_IMAGE_NONE);
    CHECK_INT(sb_image_check_b64("aGVsbG8gd29ybGQ=", 16, 0, &f), -EMEDIUMTYPE); /* "hello world" */
    CHECK_INT(sb_image_check_b64("iVBORw0KGgo!", 12, 0, &f), -EINVAL);
    CHECK_INT(sb_image_check_b64("iVBORw0KGgoAAA", 14, 0, &f), -EINVAL); /* a length no encoding has */
    CHECK_INT(sb_image_check_b64("", 0, 0, &f), -EINVAL);
    CHECK_INT(sb_image_check_b64(PNG_B64, strlen(PNG_B64), 20, &f), -E2BIG);
    /* a line break (MIME-style base64) is not the API's base64 */
    char broken[200];
    snprintf(broken, sizeof broken, "%.76s\n%s", PNG_B64, PNG_B64 + 76);
    CHECK_INT(sb_image_check_b64(broken, strlen(broken), 0, &f), -EINVAL);

    const char *b;
    size_t n;
    char url[256];
    snprintf(url, sizeof url, "data:image/jpeg;base64,%s", PNG_B64); /* the bytes win over the type */
    CHECK_INT(sb_image_input(url, 0, &b, &n, &f), 0);
    CHECK_INT(f, SB_IMAGE_PNG);
    CHECK(b == url + 23 && n == strlen(PNG_B64));
    CHECK_INT(sb_image_input(PNG_B64, 0, &b, &n, &f), 0);
    CHECK_INT(sb_image_input("data:image/png,rawbytes", 0, &b, &n, &f), -EINVAL);
    CHECK_INT(sb_image_input("https://example.com/cat.png", 0, &b, &n, &f), -EINVAL);
    CHECK_INT(sb_image_input("file-abc123", 0, &b, &n, &f), -EINVAL);
    CHECK(b == NULL && n == 0);
    CHECK_INT(sb_image_input(NULL, 0, &b, &n, &f), -EINVAL);
    free(j);
    free(w);
    free(short_png);
}

/* ---- requests ------------------------------------------------------------------------------- */

static void test_generate_openai(void)
{
    json_t *route = route_of("openai-chat");
    json_t *tool = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:s, s:i, s:s, s:s}", "type", "image_generation", "size",
                             "1536x1024", "quality", "high", "background", "transparent", "output_format", "webp",
                             "output_compression", 80, "moderation", "low", "partial_images", 2, "input_fidelity",
                             "high", "model", "ignored-the-route-wins");
    sb_image_call_t call = {.route = route, .tool = tool, .prompt = "a red \"fox\"\nin snow", .partials = false};
    sb_image_req_t r = {0};
    char why[200];
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK_STR(r.http.url, "http://127.0.0.1:18650/v1/images/generations");
    CHECK_INT(r.api, SB_IMAGE_API_OPENAI);
    CHECK(!r.edit && !r.stream && r.partial_images == 0);
    CHECK_STR(header(&r, "Authorization"), "Bearer " SECRET);
    CHECK_STR(header(&r, "Content-Type"), "application/json");
    CHECK_STR(header(&r, "Accept"), "application/json");
    json_t *body = json_loadb(r.http.body, r.http.body_len, 0, NULL);
    CHECK(body != NULL);
    CHECK_STR(json_string_value(json_object_get(body, "model")), "gpt-image-1");
    CHECK_STR(json_string_value(json_object_get(body, "prompt")), "a red \"fox\"\nin snow");
    CHECK_INT(json_integer_value(json_object_get(body, "n")), 1);
    CHECK_STR(json_string_value(json_object_get(body, "size")), "1536x1024");
    CHECK_STR(json_string_value(json_object_get(body, "quality")), "high");
    CHECK_STR(json_string_value(json_object_get(body, "background")), "transparent");
    CHECK_STR(json_string_value(json_object_get(body, "output_format")), "webp");
    CHECK_INT(json_integer_value(json_object_get(body, "output_compression")), 80);
    CHECK_STR(json_string_value(json_object_get(body, "moderation")), "low");
    /* not shown, so not asked for; input_fidelity is an edit's */
    CHECK(!json_object_get(body, "partial_images") && !json_object_get(body, "stream"));
    CHECK(!json_object_get(body, "input_fidelity"));
    json_decref(body);
    sb_image_req_clear(&r);
    CHECK(r.http.url == NULL && r.http.body == NULL && r.api == 0);

    /* shown: streamed, with the partial images */
    call.partials = true;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK(r.stream && r.partial_images == 2);
    CHECK_STR(header(&r, "Accept"), "text/event-stream");
    body = json_loadb(r.http.body, r.http.body_len, 0, NULL);
    CHECK(json_is_true(json_object_get(body, "stream")));
    CHECK_INT(json_integer_value(json_object_get(body, "partial_images")), 2);
    json_decref(body);
    sb_image_req_clear(&r);

    /* partial_images 0 is no stream, even when shown */
    json_object_set_new(tool, "partial_images", json_integer(0));
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK(!r.stream);
    sb_image_req_clear(&r);

    /* no tool at all, and the other OpenAI kinds: the bare request */
    const char *kinds[] = {"openai-responses", "openai-compatible"};
    for (size_t i = 0; i < 2; i++) {
        json_t *rt = route_of(kinds[i]);
        json_object_set_new(rt, "base_url", json_string("http://h:1/x"));
        json_object_set_new(rt, "credential_ref", json_null()); /* a server without a key */
        sb_image_call_t c = {.route = rt, .prompt = "p", .partials = true};
        CHECK_INT(sb_image_build(&c, &r, why, sizeof why), 0);
        CHECK_STR(r.http.url, "http://h:1/x/images/generations");
        CHECK(header(&r, "Authorization") == NULL);
        body = json_loadb(r.http.body, r.http.body_len, 0, NULL);
        CHECK_INT(json_object_size(body), 3); /* model, prompt, n */
        json_decref(body);
        sb_image_req_clear(&r);
        json_decref(rt);
    }
    /* without upstream_model, the tool's model */
    json_object_del(route, "upstream_model");
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    body = json_loadb(r.http.body, r.http.body_len, 0, NULL);
    CHECK_STR(json_string_value(json_object_get(body, "model")), "ignored-the-route-wins");
    json_decref(body);
    sb_image_req_clear(&r);
    json_decref(tool);
    json_decref(route);
}

/* Reads an edit's multipart body back with the frontend's strict parser. */
static int parse_edit(const sb_image_req_t *r, fe_multipart_t *mp)
{
    const char *ct = header(r, "Content-Type");
    char boundary[FE_MULTIPART_BOUNDARY_MAX + 1];
    if (!ct || fe_multipart_boundary(ct, boundary, sizeof boundary) != 0)
        return -1;
    char err[128];
    return fe_multipart_parse((const unsigned char *)r->http.body, r->http.body_len, boundary, 64, mp, err, sizeof err);
}

static int part_is(const fe_multipart_t *mp, const char *name, const char *value)
{
    const fe_multipart_part_t *p = fe_multipart_get(mp, name);
    return p && p->len == strlen(value) && !memcmp(p->data, value, p->len);
}

static void test_edit_openai(void)
{
    json_t *route = route_of("openai-responses");
    char *jb = b64_of(jpeg1, sizeof jpeg1);
    char mask[200];
    snprintf(mask, sizeof mask, "data:image/png;base64,%s", PNG_B64);
    json_t *tool =
        json_pack("{s:s, s:s, s:s, s:i, s:s, s:s, s:i, s:{s:s}, s:s}", "size", "1024x1024", "quality", "low",
                  "output_format", "jpeg", "output_compression", 50, "moderation", "low", "input_fidelity", "high",
                  "partial_images", 1, "input_image_mask", "image_url", mask, "background", "opaque");
    char url[200];
    snprintf(url, sizeof url, "data:image/webp;base64,%s", jb); /* a JPEG, whatever the URL says */
    const char *images[] = {PNG_B64, url};
    /* the prompt holds CRLF, dashes and what looks like a delimiter */
    const char *prompt = "make it blue\r\n--sb-image-0000\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\nx";
    sb_image_call_t call = {
        .route = route, .tool = tool, .prompt = prompt, .images = images, .n_images = 2, .partials = true};
    sb_image_req_t r = {0};
    char why[200];
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK_STR(r.http.url, "http://127.0.0.1:18650/v1/images/edits");
    CHECK(r.edit && r.stream && r.partial_images == 1);
    CHECK_STR(header(&r, "Authorization"), "Bearer " SECRET);
    CHECK_STR(header(&r, "Accept"), "text/event-stream");
    CHECK(!strncmp(header(&r, "Content-Type"), "multipart/form-data; boundary=", 30));

    fe_multipart_t mp = {0};
    CHECK_INT(parse_edit(&r, &mp), 0);
    CHECK(part_is(&mp, "model", "gpt-image-1"));
    CHECK(part_is(&mp, "prompt", prompt));
    CHECK(part_is(&mp, "n", "1"));
    CHECK(part_is(&mp, "size", "1024x1024"));
    CHECK(part_is(&mp, "quality", "low"));
    CHECK(part_is(&mp, "background", "opaque"));
    CHECK(part_is(&mp, "output_format", "jpeg"));
    CHECK(part_is(&mp, "output_compression", "50"));
    CHECK(part_is(&mp, "input_fidelity", "high"));
    CHECK(part_is(&mp, "partial_images", "1"));
    CHECK(part_is(&mp, "stream", "true"));
    CHECK(fe_multipart_get(&mp, "moderation") == NULL); /* the edits endpoint has none */
    size_t n_images = 0;
    for (size_t i = 0; i < mp.n; i++) {
        const fe_multipart_part_t *p = &mp.parts[i];
        if (strcmp(p->name, "image[]"))
            continue;
        if (n_images == 0) {
            CHECK_STR(p->content_type, "image/png");
            CHECK_STR(p->filename, "image-1.png");
            CHECK(p->len == sizeof png1 && !memcmp(p->data, png1, sizeof png1));
        } else {
            CHECK_STR(p->content_type, "image/jpeg");
            CHECK_STR(p->filename, "image-2.jpeg");
            CHECK(p->len == sizeof jpeg1 && !memcmp(p->data, jpeg1, sizeof jpeg1));
        }
        n_images++;
    }
    CHECK_INT(n_images, 2);
    const fe_multipart_part_t *m = fe_multipart_get(&mp, "mask");
    CHECK(m && m->len == sizeof png1 && !memcmp(m->data, png1, sizeof png1));
    CHECK(m && !strcmp(m->content_type, "image/png") && !strcmp(m->filename, "mask.png"));
    fe_multipart_clear(&mp);
    sb_image_req_clear(&r);

    /* not shown: no stream fields; the caller's mask wins over the tool's */
    call.partials = false;
    call.mask = jb;
    call.n_images = 1;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK(!r.stream && r.edit);
    CHECK_INT(parse_edit(&r, &mp), 0);
    CHECK(fe_multipart_get(&mp, "stream") == NULL && fe_multipart_get(&mp, "partial_images") == NULL);
    m = fe_multipart_get(&mp, "mask");
    CHECK(m && m->len == sizeof jpeg1 && !strcmp(m->content_type, "image/jpeg"));
    fe_multipart_clear(&mp);
    sb_image_req_clear(&r);

    /* action generate: the images are not used */
    json_object_set_new(tool, "action", json_string("generate"));
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK(!r.edit);
    CHECK_STR(r.http.url, "http://127.0.0.1:18650/v1/images/generations");
    sb_image_req_clear(&r);
    /* an unresolved file_id mask */
    json_object_set_new(tool, "action", json_string("edit"));
    json_object_set_new(tool, "input_image_mask", json_pack("{s:s}", "file_id", "file-1"));
    call.mask = NULL;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "file_id") != NULL);
    CHECK(r.http.url == NULL);

    json_decref(tool);
    json_decref(route);
    free(jb);
}

static void test_gemini(void)
{
    json_t *route = json_pack("{s:s, s:s, s:s, s:s}", "provider", "gemini", "base_url", "http://127.0.0.1:18651/v1beta",
                              "upstream_model", "gemini-2.5-flash-image", "credential_ref", KEY_ENV);
    json_t *tool = json_pack("{s:s, s:i, s:s, s:s}", "size", "1536x1024", "partial_images", 3, "quality", "high",
                             "output_format", "jpeg");
    char *wb = b64_of(webp1, sizeof webp1);
    const char *images[] = {PNG_B64, wb};
    sb_image_call_t call = {
        .route = route, .tool = tool, .prompt = "a fox", .images = images, .n_images = 2, .partials = true};
    sb_image_req_t r = {0};
    char why[200];
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK_INT(r.api, SB_IMAGE_API_GEMINI);
    CHECK(!r.stream && r.partial_images == 0 && r.edit); /* Gemini has no partial images */
    CHECK_STR(r.http.url, "http://127.0.0.1:18651/v1beta/models/gemini-2.5-flash-image:generateContent");
    CHECK_STR(header(&r, "x-goog-api-key"), SECRET);
    CHECK(header(&r, "Authorization") == NULL);
    CHECK(strstr(r.http.url, SECRET) == NULL);
    json_t *body = json_loadb(r.http.body, r.http.body_len, 0, NULL);
    json_t *c0 = json_array_get(json_object_get(body, "contents"), 0);
    CHECK_STR(json_string_value(json_object_get(c0, "role")), "user");
    json_t *parts = json_object_get(c0, "parts");
    CHECK_INT(json_array_size(parts), 3);
    CHECK_STR(json_string_value(json_object_get(json_array_get(parts, 0), "text")), "a fox");
    json_t *in1 = json_object_get(json_array_get(parts, 1), "inlineData");
    CHECK_STR(json_string_value(json_object_get(in1, "mimeType")), "image/png");
    CHECK_STR(json_string_value(json_object_get(in1, "data")), PNG_B64);
    json_t *in2 = json_object_get(json_array_get(parts, 2), "inlineData");
    CHECK_STR(json_string_value(json_object_get(in2, "mimeType")), "image/webp");
    json_t *gc = json_object_get(body, "generationConfig");
    CHECK_STR(json_string_value(json_array_get(json_object_get(gc, "responseModalities"), 1)), "IMAGE");
    CHECK_STR(json_string_value(json_object_get(json_object_get(gc, "imageConfig"), "aspectRatio")), "3:2");
    /* nothing Gemini has no setting for */
    CHECK(strstr(r.http.body, "quality") == NULL && strstr(r.http.body, "jpeg") == NULL);
    json_decref(body);
    sb_image_req_clear(&r);

    /* auto size: no imageConfig; a model name that would reshape the URL */
    json_object_set_new(tool, "size", json_string("auto"));
    call.n_images = 0;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK(!r.edit && strstr(r.http.body, "imageConfig") == NULL);
    sb_image_req_clear(&r);
    json_object_set_new(route, "upstream_model", json_string("x?key=1"));
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    json_object_set_new(route, "upstream_model", json_string("../admin"));
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    json_object_set_new(route, "upstream_model", json_string("tunedModels/mine"));
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    CHECK_STR(r.http.url, "http://127.0.0.1:18651/v1beta/tunedModels/mine:generateContent");
    sb_image_req_clear(&r);

    CHECK_STR(sb_image_aspect_ratio("1024x1024"), "1:1");
    CHECK_STR(sb_image_aspect_ratio("1024x1536"), "2:3");
    CHECK_STR(sb_image_aspect_ratio("1792x1024"), "16:9"); /* 1.75 against 1.78 */
    CHECK_STR(sb_image_aspect_ratio("1024x1792"), "9:16");
    CHECK_STR(sb_image_aspect_ratio("2520x1080"), "21:9");
    CHECK_STR(sb_image_aspect_ratio("1536x864"), "16:9");
    CHECK(sb_image_aspect_ratio("1000x137") == NULL);
    CHECK(sb_image_aspect_ratio("auto") == NULL);
    CHECK(sb_image_aspect_ratio("0x5") == NULL);
    CHECK(sb_image_aspect_ratio("5x") == NULL);
    CHECK(sb_image_aspect_ratio("5x5 ") == NULL);
    CHECK(sb_image_aspect_ratio("99999999999999999999x1") == NULL);
    CHECK(sb_image_aspect_ratio(NULL) == NULL);
    json_decref(tool);
    json_decref(route);
    free(wb);
}

static void test_refusals(void)
{
    json_t *route = route_of("openai-chat");
    sb_image_req_t r = {0};
    char why[200];
    sb_image_call_t call = {.route = route, .prompt = "p"};

    json_t *anth = route_of("anthropic");
    call.route = anth;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -ENOTSUP);
    CHECK(strstr(why, "anthropic") != NULL);
    json_object_del(anth, "provider");
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -ENOTSUP);
    json_decref(anth);
    call.route = route;

    /* the credential's variable is not set: named, its value never */
    json_object_set_new(route, "credential_ref", json_string("SB_TEST_IMAGE_UNSET"));
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -ENOENT);
    CHECK(strstr(why, "SB_TEST_IMAGE_UNSET") != NULL);
    json_object_set_new(route, "credential_ref", json_string(KEY_ENV));
    json_object_del(route, "base_url");
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "base_url") != NULL);
    json_object_set_new(route, "base_url", json_string("http://h/v1"));
    json_object_del(route, "upstream_model");
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    json_object_set_new(route, "upstream_model", json_string("gpt-image-1"));

    call.prompt = "";
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    call.prompt = NULL;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    char *big = sb_xmalloc(SB_IMAGE_MAX_PROMPT + 2);
    memset(big, 'a', SB_IMAGE_MAX_PROMPT + 1);
    big[SB_IMAGE_MAX_PROMPT + 1] = '\0';
    call.prompt = big;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -E2BIG);
    call.prompt = "\xff\xfe not UTF-8";
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    call.prompt = "p";

    /* the tool's fields: types and ranges */
    const char *bad_tools[] = {
        "[]",
        "{\"size\":1024}",
        "{\"quality\":true}",
        "{\"output_compression\":101}",
        "{\"output_compression\":-1}",
        "{\"output_compression\":\"50\"}",
        "{\"partial_images\":4}",
        "{\"partial_images\":1.5}",
        "{\"action\":\"paint\"}",
        "{\"action\":\"edit\"}", /* nothing to edit */
        "{\"background\":{}}",
    };
    for (size_t i = 0; i < sizeof bad_tools / sizeof bad_tools[0]; i++) {
        json_t *t = json_loads(bad_tools[i], 0, NULL);
        call.tool = t;
        why[0] = '\0';
        int rc = sb_image_build(&call, &r, why, sizeof why);
        if (rc != -EINVAL)
            fprintf(stderr, "tool %s: %d\n", bad_tools[i], rc);
        CHECK_INT(rc, -EINVAL);
        CHECK(why[0] != '\0');
        CHECK(r.http.url == NULL && r.http.body == NULL && r.http.headers == NULL);
        json_decref(t);
    }
    /* nulls are absent fields */
    json_t *nulls = json_loads("{\"size\":null,\"partial_images\":null,\"input_image_mask\":null}", 0, NULL);
    call.tool = nulls;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    sb_image_req_clear(&r);
    json_decref(nulls);
    call.tool = NULL;

    /* input images: not images, not base64, URLs, too many, too large */
    const char *not_image[] = {"aGVsbG8gd29ybGQ="};
    call.images = not_image;
    call.n_images = 1;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "input image 1 is not a PNG, JPEG or WEBP") != NULL);
    const char *urls[] = {PNG_B64, "https://example.com/a.png"};
    call.images = urls;
    call.n_images = 2;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "input image 2") != NULL);
    const char *many[SB_IMAGE_MAX_INPUTS + 1];
    for (size_t i = 0; i < SB_IMAGE_MAX_INPUTS + 1; i++)
        many[i] = PNG_B64;
    call.images = many;
    call.n_images = SB_IMAGE_MAX_INPUTS + 1;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -E2BIG);
    call.n_images = SB_IMAGE_MAX_INPUTS; /* the most an edit takes */
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), 0);
    sb_image_req_clear(&r);
    call.n_images = 1;
    call.max_b64 = 16;
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -E2BIG);
    call.max_b64 = 0;
    call.mask = "not base64 at all";
    CHECK_INT(sb_image_build(&call, &r, why, sizeof why), -EINVAL);
    CHECK(strstr(why, "input_image_mask") != NULL);
    CHECK(r.http.url == NULL);
    free(big);
    json_decref(route);
}

static void test_multipart_writer(void)
{
    /* bytes that hold the writer's boundary prefix and CRLFs */
    const char data[] = "--sb-image-\r\n--sb-image-00\r\n\0\x01--";
    sb_image_part_t parts[] = {
        {.name = "a", .data = "x", .len = 1},
        {.name = "f",
         .filename = "f.bin",
         .content_type = "application/octet-stream",
         .data = data,
         .len = sizeof data - 1},
        {.name = "empty", .data = "", .len = 0},
    };
    char *body;
    size_t len;
    char boundary[SB_IMAGE_BOUNDARY_MAX + 1];
    sb_image_multipart(parts, 3, &body, &len, boundary);
    CHECK(strlen(boundary) > 10 && strlen(boundary) <= SB_IMAGE_BOUNDARY_MAX);
    fe_multipart_t mp = {0};
    char err[128];
    CHECK_INT(fe_multipart_parse((const unsigned char *)body, len, boundary, 8, &mp, err, sizeof err), 0);
    CHECK_INT(mp.n, 3);
    const fe_multipart_part_t *f = fe_multipart_get(&mp, "f");
    CHECK(f && f->len == sizeof data - 1 && !memcmp(f->data, data, f->len));
    CHECK(f && !strcmp(f->filename, "f.bin") && !strcmp(f->content_type, "application/octet-stream"));
    const fe_multipart_part_t *e = fe_multipart_get(&mp, "empty");
    CHECK(e && e->len == 0 && e->filename == NULL && e->content_type == NULL);
    fe_multipart_clear(&mp);
    /* two bodies, two boundaries */
    char *body2;
    size_t len2;
    char boundary2[SB_IMAGE_BOUNDARY_MAX + 1];
    sb_image_multipart(parts, 1, &body2, &len2, boundary2);
    CHECK(strcmp(boundary, boundary2) != 0);
    free(body);
    free(body2);
}

/* ---- answers -------------------------------------------------------------------------------- */

static sb_image_req_t req_of(enum sb_image_api api, bool stream, int partials)
{
    sb_image_req_t r = {0};
    r.api = api;
    r.stream = stream;
    r.partial_images = partials;
    return r;
}

/* Feeds body cut every `step` bytes (0: whole), then finishes. New array. */
static json_t *run(const sb_image_req_t *req, long status, const char *body, size_t step, size_t max)
{
    json_t *route = route_of("openai-chat");
    json_t *events = json_array();
    size_t len = strlen(body);
    if (step == 0) {
        sb_image_parse(req, route, max, status, body, len, events);
    } else {
        sb_image_parser_t *p = sb_image_parser_new(req, route, max);
        size_t outcomes_before = 0;
        for (size_t i = 0; i < len; i += step) {
            size_t k = len - i < step ? len - i : step;
            int rc = sb_image_parser_feed(p, status, body + i, k, events);
            /* 1 exactly when the outcome is the last event */
            const char *t =
                json_string_value(json_object_get(json_array_get(events, json_array_size(events) - 1), "type"));
            bool out = t && strcmp(t, SB_IMAGE_EV_PARTIAL);
            CHECK_INT(rc, out ? 1 : 0);
            outcomes_before += out;
            if (rc == 1)
                break;
        }
        sb_image_parser_finish(p, status, events);
        sb_image_parser_finish(p, status, events); /* a second finish adds nothing */
        CHECK_INT(sb_image_parser_feed(p, status, "x", 1, events), 1);
        sb_image_parser_destroy(&p);
        CHECK(p == NULL);
    }
    json_decref(route);
    /* exactly one outcome, last */
    size_t n = json_array_size(events), outcomes = 0;
    for (size_t i = 0; i < n; i++) {
        const char *t = json_string_value(json_object_get(json_array_get(events, i), "type"));
        if (strcmp(t, SB_IMAGE_EV_PARTIAL) != 0) {
            outcomes++;
            CHECK(i == n - 1);
        }
    }
    CHECK_INT(outcomes, 1);
    return events;
}

/* Runs body whole and cut at every size up to 7 bytes and at 64, checking
 * every run gives the same events; returns the whole run's. */
static json_t *run_all(const sb_image_req_t *req, long status, const char *body, size_t max)
{
    json_t *whole = run(req, status, body, 0, max);
    static const size_t steps[] = {1, 2, 3, 5, 7, 64};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        json_t *cut = run(req, status, body, steps[i], max);
        if (!json_equal(whole, cut)) {
            char *a = json_dumps(whole, 0), *b = json_dumps(cut, 0);
            fprintf(stderr, "step %zu differs:\n %s\n %s\n", steps[i], a, b);
            free(a);
            free(b);
        }
        CHECK(json_equal(whole, cut));
        json_decref(cut);
    }
    return whole;
}

static const json_t *last(const json_t *events)
{
    return json_array_get(events, json_array_size(events) - 1);
}

static const char *field(const json_t *ev, const char *name)
{
    return json_string_value(json_object_get(ev, name));
}

static void test_parse_openai_json(void)
{
    sb_image_req_t req = req_of(SB_IMAGE_API_OPENAI, false, 0);
    const char *body =
        "{\"created\":1713833628,\"data\":[{\"b64_json\":\"" PNG_B64
        "\",\"revised_prompt\":\"a red fox, snow\"}],\"background\":\"opaque\",\"output_format\":\"png\","
        "\"quality\":\"high\",\"size\":\"1024x1024\",\"usage\":{\"input_tokens\":50,\"input_tokens_details\":"
        "{\"image_tokens\":40,\"text_tokens\":10},\"output_tokens\":50,\"total_tokens\":100,\"extra\":\"x\"}}";
    json_t *ev = run_all(&req, 200, body, 0);
    CHECK_INT(json_array_size(ev), 1);
    const json_t *img = last(ev);
    CHECK_STR(field(img, "type"), "image");
    CHECK_STR(field(img, "b64"), PNG_B64);
    CHECK_STR(field(img, "output_format"), "png");
    CHECK_STR(field(img, "mime"), "image/png");
    CHECK_STR(field(img, "background"), "opaque");
    CHECK_STR(field(img, "quality"), "high");
    CHECK_STR(field(img, "size"), "1024x1024");
    CHECK_STR(field(img, "revised_prompt"), "a red fox, snow");
    json_t *u = json_object_get(img, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 100);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "input_tokens_details"), "image_tokens")), 40);
    CHECK(json_object_get(u, "extra") == NULL);
    json_decref(ev);

    /* a jpeg in a body that says png: the bytes win; leading white space is fine */
    char *jb = b64_of(jpeg1, sizeof jpeg1);
    char *b2 = sb_xasprintf("\r\n  {\"data\":[{\"b64_json\":\"%s\"}],\"output_format\":\"png\"}", jb);
    ev = run_all(&req, 200, b2, 0);
    CHECK_STR(field(last(ev), "output_format"), "jpeg");
    CHECK(json_object_get(last(ev), "usage") == NULL && json_object_get(last(ev), "revised_prompt") == NULL);
    json_decref(ev);
    free(b2);
    free(jb);

    /* a stream request answered with one JSON body (a compatible server) */
    sb_image_req_t sreq = req_of(SB_IMAGE_API_OPENAI, true, 2);
    ev = run_all(&sreq, 200, "{\"data\":[{\"b64_json\":\"" PNG_B64 "\"}]}", 0);
    CHECK_STR(field(last(ev), "type"), "image");
    json_decref(ev);
}

#define PARTIAL(kind, idx)                                                                                             \
    "event: " kind ".partial_image\ndata: {\"type\":\"" kind ".partial_image\",\"b64_json\":\"" PNG_B64                \
    "\",\"partial_image_index\":" idx ",\"background\":\"auto\",\"output_format\":\"png\",\"quality\":\"low\","        \
    "\"size\":\"1024x1024\",\"created_at\":1}\n\n"
#define COMPLETED(kind)                                                                                                \
    "event: " kind ".completed\ndata: {\"type\":\"" kind ".completed\",\"b64_json\":\"" PNG_B64                        \
    "\",\"background\":\"opaque\",\"output_format\":\"png\",\"quality\":\"low\",\"size\":\"1024x1024\",\"created_"     \
    "at\":2,"                                                                                                          \
    "\"usage\":{\"input_tokens\":5,\"output_tokens\":7,\"total_tokens\":12,\"input_tokens_details\":{\"image_"         \
    "tokens\":0,\"text_tokens\":5}}}\n\n"

static void test_parse_openai_stream(void)
{
    sb_image_req_t req = req_of(SB_IMAGE_API_OPENAI, true, 2);
    const char *body = ": keep-alive\n\n" PARTIAL("image_generation", "0") PARTIAL("image_generation", "1")
        COMPLETED("image_generation") "data: [DONE]\n\n";
    json_t *ev = run_all(&req, 200, body, 0);
    CHECK_INT(json_array_size(ev), 3);
    for (int i = 0; i < 2; i++) {
        const json_t *p = json_array_get(ev, (size_t)i);
        CHECK_STR(field(p, "type"), "partial_image");
        CHECK_INT(json_integer_value(json_object_get(p, "partial_image_index")), i);
        CHECK_STR(field(p, "b64"), PNG_B64);
        CHECK_STR(field(p, "output_format"), "png");
        CHECK_STR(field(p, "quality"), "low");
        CHECK_STR(field(p, "background"), "auto");
    }
    const json_t *img = last(ev);
    CHECK_STR(field(img, "type"), "image");
    CHECK_STR(field(img, "background"), "opaque");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(img, "usage"), "output_tokens")), 7);
    json_decref(ev);

    /* edits' events, CRLF line ends, events named only by their "event" line */
    const char *crlf = "event: image_edit.partial_image\r\ndata: {\"b64_json\":\"" PNG_B64
                       "\"}\r\n\r\nevent: image_edit.completed\r\ndata: {\"b64_json\":\"" PNG_B64 "\"}\r\n\r\n";
    ev = run_all(&req, 200, crlf, 0);
    CHECK_INT(json_array_size(ev), 2);
    CHECK_STR(field(json_array_get(ev, 0), "type"), "partial_image");
    CHECK_STR(field(last(ev), "type"), "image");
    json_decref(ev);

    /* three partials when two were asked for: two pass */
    const char *three =
        PARTIAL("image_edit", "0") PARTIAL("image_edit", "1") PARTIAL("image_edit", "2") COMPLETED("image_edit");
    ev = run_all(&req, 200, three, 0);
    CHECK_INT(json_array_size(ev), 3);
    json_decref(ev);
    /* a request without a stream passes none (a server that streams anyway) */
    sb_image_req_t plain = req_of(SB_IMAGE_API_OPENAI, false, 0);
    ev = run_all(&plain, 200, three, 0);
    CHECK_INT(json_array_size(ev), 1);
    CHECK_STR(field(last(ev), "type"), "image");
    json_decref(ev);

    /* cut before the image: the partials, then an error */
    ev = run_all(&req, 200, PARTIAL("image_generation", "0"), 0);
    CHECK_INT(json_array_size(ev), 2);
    CHECK_STR(field(last(ev), "type"), "error");
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 502);
    CHECK(strstr(field(last(ev), "message"), "ended before the image") != NULL);
    json_decref(ev);

    /* events after the image are not read */
    ev = run_all(&req, 200, COMPLETED("image_generation") "data: {not json\n\n", 0);
    CHECK_INT(json_array_size(ev), 1);
    CHECK_STR(field(last(ev), "type"), "image");
    json_decref(ev);

    /* an error event in the stream */
    ev = run_all(
        &req, 200,
        PARTIAL("image_generation", "0") "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":"
                                         "\"image_generation_user_error\",\"code\":\"moderation_blocked\","
                                         "\"message\":\"Your request was rejected by the safety system.\"}}\n\n",
        0);
    CHECK_INT(json_array_size(ev), 2);
    CHECK_STR(field(last(ev), "type"), "error");
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 502);
    CHECK_STR(field(last(ev), "code"), "moderation_blocked");
    CHECK_STR(field(last(ev), "message"), "Your request was rejected by the safety system.");
    json_decref(ev);

    /* malformed events, a partial that is not an image, an event over the cap */
    const char *bad[] = {
        "data: {\"type\":\"image_generation.partial_image\"\n\n",
        "data: [1,2]\n\n",
        "data: {\"type\":\"image_generation.partial_image\",\"b64_json\":\"aGVsbG8gd29ybGQ=\"}\n\n",
        "data: {\"type\":\"image_generation.partial_image\",\"b64_json\":7}\n\n",
        "data: {\"type\":\"image_generation.completed\"}\n\n",
        "data: {\"type\":\"image_generation.completed\",\"b64_json\":\"" PNG_B64 "\"}\n\n", /* over max 64 */
        "event: nothing\n\n",
        "data: {\"type\":\"response.completed\"}\n\n", /* someone else's event: ignored, then no image */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ev = run_all(&req, 200, bad[i], i == 5 ? 64 : 0);
        CHECK_STR(field(last(ev), "type"), "error");
        CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 502);
        CHECK(strlen(field(last(ev), "message")) > 10);
        json_decref(ev);
    }
}

static void test_parse_errors(void)
{
    sb_image_req_t req = req_of(SB_IMAGE_API_OPENAI, false, 0);
    json_t *ev = run_all(&req, 400,
                         "{\"error\":{\"message\":\"Your request was rejected as a result of our safety system.\","
                         "\"type\":\"image_generation_user_error\",\"param\":null,\"code\":\"moderation_blocked\"}}",
                         0);
    CHECK_STR(field(last(ev), "type"), "error");
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 400);
    CHECK_STR(field(last(ev), "code"), "moderation_blocked");
    CHECK_STR(field(last(ev), "message"), "Your request was rejected as a result of our safety system.");
    json_decref(ev);

    /* a message quoting the credential: scrubbed */
    ev = run_all(&req, 429, "{\"error\":{\"message\":\"Rate limit for key " SECRET " reached\"}}", 0);
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 429);
    CHECK(strstr(field(last(ev), "message"), SECRET) == NULL);
    CHECK(strstr(field(last(ev), "message"), "Rate limit") != NULL);
    json_decref(ev);

    /* 401: generic for the model, the upstream's words (scrubbed) for the log */
    ev = run_all(&req, 401, "{\"error\":{\"message\":\"Incorrect API key provided: " SECRET "\"}}", 0);
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 401);
    CHECK(strstr(field(last(ev), "message"), "credential") != NULL);
    CHECK(strstr(field(last(ev), "message"), "Incorrect") == NULL);
    CHECK(strstr(field(last(ev), "operator_detail"), "Incorrect API key") != NULL);
    CHECK(strstr(field(last(ev), "operator_detail"), SECRET) == NULL);
    char *all = json_dumps(ev, 0);
    CHECK(strstr(all, SECRET) == NULL && strstr(all, "0123456789abcdef") == NULL);
    free(all);
    json_decref(ev);

    /* not JSON, empty, Gemini's shape */
    ev = run_all(&req, 502, "<html><body>Bad Gateway</body></html>", 0);
    CHECK_STR(field(last(ev), "message"), "the image upstream returned HTTP 502");
    json_decref(ev);
    ev = run_all(&req, 500, "", 0);
    CHECK_STR(field(last(ev), "message"), "the image upstream returned HTTP 500");
    json_decref(ev);
    sb_image_req_t g = req_of(SB_IMAGE_API_GEMINI, false, 0);
    ev = run_all(&g, 400,
                 "{\"error\":{\"code\":400,\"message\":\"API key not valid.\",\"status\":\"INVALID_ARGUMENT\"}}", 0);
    CHECK_STR(field(last(ev), "code"), "INVALID_ARGUMENT");
    CHECK_STR(field(last(ev), "message"), "API key not valid.");
    json_decref(ev);

    /* a long message is cut on a character boundary */
    sb_buf_t b = {0};
    sb_buf_add(&b, "{\"error\":{\"message\":\"", 21);
    for (int i = 0; i < 600; i++)
        sb_buf_add(&b, "\xc3\xa9", 2); /* é */
    sb_buf_add(&b, "\"}}", 3);
    ev = run_all(&req, 400, b.p, 0);
    CHECK(strlen(field(last(ev), "message")) <= SB_IMAGE_MESSAGE_MAX);
    CHECK(strlen(field(last(ev), "message")) % 2 == 0);
    json_decref(ev);
    sb_buf_free(&b);

    /* 2xx bodies without a usable image */
    const char *bad[] = {
        "",
        "   \n",
        "{\"data\":",
        "{\"data\":[]}",
        "{\"created\":1}",
        "{\"data\":[{\"url\":\"https://x/y.png\"}]}",
        "{\"data\":[{\"b64_json\":\"aGVsbG8gd29ybGQ=\"}]}",
        "{\"data\":[{\"b64_json\":\"!!!!\"}]}",
        "{\"data\":[{\"b64_json\":null}]}",
        "[\"data\"]",
        "{\"error\":{\"message\":\"in a 200\",\"code\":\"server_error\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ev = run_all(&req, 200, bad[i], 0);
        CHECK_STR(field(last(ev), "type"), "error");
        CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 502);
        json_decref(ev);
    }
    ev = run_all(&req, 200, "{\"data\":[{\"url\":\"https://x/y.png\"}]}", 0);
    CHECK(strstr(field(last(ev), "message"), "URL") != NULL);
    json_decref(ev);

    /* a JSON answer over 2 x max + 1 MiB is refused as it comes */
    size_t max = 64, huge = 2 * max + 1024 * 1024 + 10;
    char *h = sb_xmalloc(huge + 1);
    memset(h, ' ', huge);
    h[0] = '{';
    h[huge] = '\0';
    json_t *route = route_of("openai-chat");
    json_t *events = json_array();
    sb_image_parser_t *p = sb_image_parser_new(&req, route, max);
    int rc = 0;
    for (size_t i = 0; i < huge && rc == 0; i += 4096)
        rc = sb_image_parser_feed(p, 200, h + i, huge - i < 4096 ? huge - i : 4096, events);
    CHECK_INT(rc, 1);
    CHECK(strstr(field(last(events), "message"), "over") != NULL);
    sb_image_parser_destroy(&p);
    json_decref(events);
    /* an error body over its cap: the generic message */
    events = json_array();
    p = sb_image_parser_new(&req, route, max);
    for (size_t i = 0; i < 2 * 1024 * 1024; i += 4096)
        CHECK_INT(sb_image_parser_feed(p, 500, h, 4096, events), 0);
    sb_image_parser_finish(p, 500, events);
    CHECK_STR(field(last(events), "message"), "the image upstream returned HTTP 500");
    sb_image_parser_destroy(&p);
    sb_image_parser_destroy(&p); /* NULL-safe */
    json_decref(events);
    /* no byte at all: finish's status counts */
    events = json_array();
    p = sb_image_parser_new(&req, route, 0);
    sb_image_parser_finish(p, 503, events);
    CHECK_INT(json_integer_value(json_object_get(last(events), "status")), 503);
    sb_image_parser_destroy(&p);
    json_decref(events);
    json_decref(route);
    free(h);
}

static void test_parse_gemini(void)
{
    sb_image_req_t req = req_of(SB_IMAGE_API_GEMINI, false, 0);
    char *jb = b64_of(jpeg1, sizeof jpeg1);
    char *body = sb_xasprintf(
        "{\"candidates\":[{\"content\":{\"role\":\"model\",\"parts\":["
        "{\"text\":\"drafting\",\"thought\":true},{\"inlineData\":{\"mimeType\":\"image/"
        "jpeg\",\"data\":\"%s\"},\"thought\":true},"
        "{\"text\":\"Here is your fox. \"},{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"" PNG_B64 "\"}},"
        "{\"text\":\"Enjoy!\"}]},\"finishReason\":\"STOP\"}],"
        "\"usageMetadata\":{\"promptTokenCount\":10,\"candidatesTokenCount\":1290,\"totalTokenCount\":1300}}",
        jb);
    json_t *ev = run_all(&req, 200, body, 0);
    CHECK_INT(json_array_size(ev), 1);
    const json_t *img = last(ev);
    CHECK_STR(field(img, "type"), "image");
    CHECK_STR(field(img, "b64"), PNG_B64); /* the thought's draft is not the image */
    CHECK_STR(field(img, "output_format"), "png");
    CHECK_STR(field(img, "text"), "Here is your fox. Enjoy!");
    json_t *u = json_object_get(img, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "input_tokens")), 10);
    CHECK_INT(json_integer_value(json_object_get(u, "output_tokens")), 1290);
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 1300);
    json_decref(ev);
    free(body);
    free(jb);

    /* snake_case inline_data, no usage */
    ev = run_all(
        &req, 200,
        "{\"candidates\":[{\"content\":{\"parts\":[{\"inline_data\":{\"mime_type\":\"image/png\",\"data\":\"" PNG_B64
        "\"}}]}}]}",
        0);
    CHECK_STR(field(last(ev), "type"), "image");
    CHECK(json_object_get(last(ev), "usage") == NULL && json_object_get(last(ev), "text") == NULL);
    json_decref(ev);

    /* refusals */
    ev = run_all(&req, 200, "{\"promptFeedback\":{\"blockReason\":\"PROHIBITED_CONTENT\"}}", 0);
    CHECK_STR(field(last(ev), "type"), "error");
    CHECK_STR(field(last(ev), "code"), "blocked");
    CHECK(strstr(field(last(ev), "message"), "PROHIBITED_CONTENT") != NULL);
    json_decref(ev);
    ev = run_all(&req, 200,
                 "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"I can't make that image.\"}]},"
                 "\"finishReason\":\"IMAGE_SAFETY\"}]}",
                 0);
    CHECK_STR(field(last(ev), "code"), "blocked");
    CHECK(strstr(field(last(ev), "message"), "IMAGE_SAFETY") != NULL);
    CHECK(strstr(field(last(ev), "message"), "I can't make that image.") != NULL);
    json_decref(ev);
    ev = run_all(&req, 200, "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Sure!\"}]}}]}", 0);
    CHECK_STR(field(last(ev), "message"), "the image upstream returned no image: Sure!");
    CHECK(json_object_get(last(ev), "code") == NULL);
    json_decref(ev);
    const char *bad[] = {
        "{\"candidates\":[]}",
        "{\"candidates\":[{\"content\":{\"parts\":[{\"inlineData\":{\"data\":\"aGVsbG8gd29ybGQ=\"}}]}}]}",
        "data: {}\n\n", /* Gemini is never read as a stream */
        "{\"error\":{\"code\":500,\"message\":\"internal\",\"status\":\"INTERNAL\"}}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ev = run_all(&req, 200, bad[i], 0);
        CHECK_STR(field(last(ev), "type"), "error");
        CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 502);
        json_decref(ev);
    }
}

/* ---- against the emulator ------------------------------------------------------------------- */

/* The emulator validates the Images API and Gemini's image models as the
 * real APIs do; each request here goes out through the worker's own
 * transfer (sb_upstream_start) and its answer through the parser, as the
 * tool loop will do it. */

static struct event_base *base;
static sb_upstream_t *up;
static struct sb_emu *emu; /* keyed with SECRET */

struct trip {
    sb_image_parser_t *p;
    json_t *events;
    size_t feeds_after_outcome;
    bool done;
    int outcome_at_feed; /* the feed that appended the outcome (1-based), 0: finish */
    int feeds;
};

static int trip_data(long status, const char *data, size_t len, void *arg)
{
    struct trip *t = arg;
    t->feeds++;
    if (sb_image_parser_feed(t->p, status, data, len, t->events) == 1 && !t->outcome_at_feed)
        t->outcome_at_feed = t->feeds;
    return 0;
}

static void trip_done(const sb_upstream_result_t *res, void *arg)
{
    struct trip *t = arg;
    CHECK_INT(res->outcome, SB_UPSTREAM_OK);
    sb_image_parser_finish(t->p, res->status, t->events);
    t->done = true;
}

/* Builds call against the emulator, sends it, reads the answer; returns the
 * events (new reference), or NULL when the build failed (why set). */
static json_t *trip(const sb_image_call_t *call, sb_image_req_t *r, struct trip *t)
{
    char why[200];
    memset(t, 0, sizeof *t);
    if (sb_image_build(call, r, why, sizeof why) != 0) {
        fprintf(stderr, "build: %s\n", why);
        return NULL;
    }
    t->p = sb_image_parser_new(r, call->route, 0);
    t->events = json_array();
    sb_upstream_cbs_t cbs = {.on_data = trip_data, .on_done = trip_done};
    sb_upstream_xfer_t *x = NULL;
    CHECK_INT(sb_upstream_start(up, &r->http, 5000, 1000, &cbs, t, &x), 0);
    int64_t end = sb_now_ms() + 5000;
    while (!t->done && sb_now_ms() < end)
        event_base_loop(base, EVLOOP_ONCE);
    CHECK(t->done);
    sb_image_parser_destroy(&t->p);
    return t->events;
}

static json_t *emu_route(const char *provider, const char *model, const char *cref)
{
    char url[96];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/%s", sb_emu_port(emu), strcmp(provider, "gemini") ? "v1" : "v1beta");
    return json_pack("{s:s, s:s, s:s, s:s}", "provider", provider, "base_url", url, "upstream_model", model,
                     "credential_ref", cref);
}

static void test_emu_openai(void)
{
    json_t *route = emu_route("openai-compatible", "gpt-image-1", KEY_ENV);
    sb_image_req_t r;
    struct trip t;

    /* a generation, not streamed: webp as asked, the settings and usage reported */
    json_t *tool =
        json_pack("{s:s, s:s, s:s, s:s, s:i, s:s, s:i}", "size", "1536x1024", "quality", "low", "background", "opaque",
                  "output_format", "webp", "output_compression", 60, "moderation", "low", "partial_images", 2);
    sb_image_call_t call = {.route = route, .tool = tool, .prompt = "a lighthouse at dusk"};
    json_t *ev = trip(&call, &r, &t);
    CHECK_INT(json_array_size(ev), 1);
    const json_t *img = last(ev);
    CHECK_STR(field(img, "type"), "image");
    CHECK_STR(field(img, "output_format"), "webp");
    CHECK_STR(field(img, "size"), "1536x1024");
    CHECK_STR(field(img, "quality"), "low");
    CHECK(json_integer_value(json_object_get(json_object_get(img, "usage"), "output_tokens")) > 0);
    char *first = sb_xstrdup(field(img, "b64"));
    json_decref(ev);
    sb_image_req_clear(&r);

    /* streamed: the partial images arrive before the image, in order */
    call.partials = true;
    json_object_set_new(tool, "output_format", json_string("png"));
    json_object_del(tool, "output_compression");
    ev = trip(&call, &r, &t);
    CHECK(r.stream);
    CHECK_INT(json_array_size(ev), 3);
    CHECK_STR(field(json_array_get(ev, 0), "type"), "partial_image");
    CHECK_INT(json_integer_value(json_object_get(json_array_get(ev, 1), "partial_image_index")), 1);
    CHECK_STR(field(json_array_get(ev, 1), "output_format"), "png");
    CHECK_STR(field(last(ev), "type"), "image");
    CHECK(strcmp(field(json_array_get(ev, 0), "b64"), field(last(ev), "b64")) != 0); /* a partial is not the image */
    CHECK(t.outcome_at_feed > 0); /* seen as it came, not at the end */
    char *streamed = sb_xstrdup(field(last(ev), "b64"));
    json_decref(ev);
    sb_image_req_clear(&r);

    /* an edit of that image, with a JPEG beside it and a mask the size of the first */
    unsigned char *dec;
    size_t dec_len;
    dec = sb_base64_decode(streamed, strlen(streamed), &dec_len);
    CHECK(dec && sb_image_sniff(dec, dec_len) == SB_IMAGE_PNG);
    free(dec);
    char *jb = b64_of(jpeg1, sizeof jpeg1);
    json_t *etool = json_pack("{s:s, s:s, s:i}", "input_fidelity", "high", "size", "1024x1024", "partial_images", 1);
    const char *imgs[] = {PNG_B64, streamed};
    sb_image_call_t edit = {.route = route,
                            .tool = etool,
                            .prompt = "now in blue",
                            .images = imgs,
                            .n_images = 1,
                            .mask = PNG_B64,
                            .partials = true};
    ev = trip(&edit, &r, &t);
    CHECK(r.edit);
    CHECK_INT(json_array_size(ev), 2);
    CHECK_STR(field(last(ev), "type"), "image");
    char *edited = sb_xstrdup(field(last(ev), "b64"));
    json_decref(ev);
    sb_image_req_clear(&r);
    /* two images, not streamed: another picture than a generation with that prompt */
    edit.n_images = 2;
    edit.mask = NULL;
    edit.partials = false;
    ev = trip(&edit, &r, &t);
    CHECK_INT(json_array_size(ev), 1);
    CHECK_STR(field(last(ev), "type"), "image");
    CHECK(strcmp(field(last(ev), "b64"), edited) != 0);
    CHECK(strcmp(field(last(ev), "b64"), first) != 0);
    json_decref(ev);
    sb_image_req_clear(&r);

    /* the emulator's refusals come back as the upstream's status, words and code */
    json_object_set_new(tool, "output_format", json_string("png"));
    json_object_set_new(tool, "output_compression", json_integer(50));
    call.partials = false;
    ev = trip(&call, &r, &t);
    CHECK_STR(field(last(ev), "type"), "error");
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 400);
    CHECK(strstr(field(last(ev), "message"), "Compression less than 100") != NULL);
    json_decref(ev);
    sb_image_req_clear(&r);
    json_object_del(tool, "output_compression");
    call.prompt = "a lighthouse [[emu:status=429]]";
    ev = trip(&call, &r, &t);
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 429);
    json_decref(ev);
    sb_image_req_clear(&r);

    /* a key the emulator does not take: a 401, the message generic */
    setenv("SB_TEST_IMAGE_WRONG", "sk-wrong-key-for-the-emulator-000", 1);
    json_t *wrong = emu_route("openai-chat", "gpt-image-1", "SB_TEST_IMAGE_WRONG");
    call.route = wrong;
    call.prompt = "p";
    ev = trip(&call, &r, &t);
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 401);
    CHECK(strstr(field(last(ev), "message"), "credential") != NULL);
    char *all = json_dumps(ev, 0);
    CHECK(strstr(all, "sk-wrong-key-for-the-emulator-000") == NULL);
    free(all);
    json_decref(ev);
    sb_image_req_clear(&r);

    json_decref(wrong);
    json_decref(etool);
    json_decref(tool);
    json_decref(route);
    free(first);
    free(streamed);
    free(edited);
    free(jb);
}

static void test_emu_gemini(void)
{
    json_t *route = emu_route("gemini", "gemini-2.5-flash-image", KEY_ENV);
    json_t *tool = json_pack("{s:s, s:i}", "size", "1792x1024", "partial_images", 2);
    sb_image_req_t r;
    struct trip t;
    sb_image_call_t call = {.route = route, .tool = tool, .prompt = "a lighthouse at dusk", .partials = true};
    json_t *ev = trip(&call, &r, &t);
    CHECK(!r.stream);
    CHECK_INT(json_array_size(ev), 1);
    CHECK_STR(field(last(ev), "type"), "image");
    CHECK_STR(field(last(ev), "output_format"), "png");
    CHECK(field(last(ev), "text") != NULL);
    CHECK(json_integer_value(json_object_get(json_object_get(last(ev), "usage"), "output_tokens")) >= 1290);
    char *made = sb_xstrdup(field(last(ev), "b64"));
    json_decref(ev);
    sb_image_req_clear(&r);
    /* an edit: the earlier image goes back inline and changes the picture */
    const char *imgs[] = {made};
    call.images = imgs;
    call.n_images = 1;
    ev = trip(&call, &r, &t);
    CHECK_STR(field(last(ev), "type"), "image");
    CHECK(strcmp(field(last(ev), "b64"), made) != 0);
    json_decref(ev);
    sb_image_req_clear(&r);
    /* a model without image output: Gemini's 400, passed on */
    json_t *text_only = emu_route("gemini", "gemini-2.5-flash", KEY_ENV);
    call.route = text_only;
    ev = trip(&call, &r, &t);
    CHECK_INT(json_integer_value(json_object_get(last(ev), "status")), 400);
    CHECK_STR(field(last(ev), "code"), "INVALID_ARGUMENT");
    CHECK(strstr(field(last(ev), "message"), "response modalities") != NULL);
    json_decref(ev);
    sb_image_req_clear(&r);
    json_decref(text_only);
    json_decref(tool);
    json_decref(route);
    free(made);
}

int main(void)
{
    setenv(KEY_ENV, SECRET, 1);
    test_sniff();
    test_generate_openai();
    test_edit_openai();
    test_gemini();
    test_refusals();
    test_multipart_writer();
    test_parse_openai_json();
    test_parse_openai_stream();
    test_parse_errors();
    test_parse_gemini();

    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    base = event_base_new();
    up = sb_upstream_new(base);
    struct sb_emu_config ecfg = {.host = "127.0.0.1", .port = 0, .require_key = SECRET};
    emu = sb_emu_new(base, &ecfg);
    CHECK(up && emu);
    if (up && emu) {
        test_emu_openai();
        test_emu_gemini();
    }
    sb_upstream_destroy(&up);
    sb_emu_destroy(&emu);
    event_base_free(base);
    curl_global_cleanup();
    return sb_test_finish("image");
}
