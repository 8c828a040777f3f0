/*
 * fuzz_image_parse: libFuzzer harness for the image generation tool
 * (worker/tools/wtool_image.h): what an image upstream answers (OpenAI's
 * Images API JSON and event streams, Gemini's generateContent, error
 * bodies), and, in one mode, the request built from what a client (the
 * image_generation tool, input images) and a model (the prompt) chose.
 *
 * Input: two bytes of settings, then the body. Byte 0: bits 0-1 the mode
 * (0 an OpenAI answer, 1 an OpenAI stream answer, 2 a Gemini answer, 3 the
 * builder: the body is a JSON object {provider, tool, prompt, images, mask,
 * partials}), bits 2-3 the HTTP status (200, 400, 401, 500), bits 4-5 the
 * image cap (64, 1024, 65536 bytes, the default), bits 6-7 the partial
 * images asked for. Byte 1: the chunk size the body is fed in (0: byte by
 * byte).
 * Checked besides "no crash, no leak, no UB": the body read whole and in
 * chunks gives the same events; exactly one outcome, last, and feed says 1
 * once it is in; partial images no more than asked, numbered 0, 1, ...;
 * every image is base64 of a PNG, JPEG or WEBP within the cap, its
 * output_format and mime what its bytes are; an error has the HTTP status
 * (502 for a 2xx) and a message. The builder returns one of its codes, a
 * message when it fails and a POST with a URL and a body when it does not,
 * and never puts the credential in its message.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "wtool_image.h"

#define FUZZ_SECRET "sk-fuzzimage-0123456789abcdef"

static json_t *fuzz_run(const sb_image_req_t *req, const json_t *route, size_t max, long status, const char *p,
                        size_t n, size_t step)
{
    json_t *events = json_array();
    if (step == 0) {
        sb_image_parse(req, route, max, status, p, n, events);
        return events;
    }
    sb_image_parser_t *ps = sb_image_parser_new(req, route, max);
    for (size_t i = 0; i < n; i += step) {
        size_t k = n - i < step ? n - i : step;
        int rc = sb_image_parser_feed(ps, status, p + i, k, events);
        FUZZ_REQUIRE(rc == 0 || rc == 1);
        const char *t = json_string_value(json_object_get(json_array_get(events, json_array_size(events) - 1), "type"));
        FUZZ_REQUIRE((rc == 1) == (t && strcmp(t, SB_IMAGE_EV_PARTIAL) != 0));
        if (rc == 1)
            break;
    }
    sb_image_parser_finish(ps, status, events);
    FUZZ_REQUIRE(sb_image_parser_feed(ps, status, "x", 1, events) == 1);
    sb_image_parser_destroy(&ps);
    return events;
}

static void fuzz_check_image(const json_t *ev, size_t max)
{
    const json_t *b64 = json_object_get(ev, "b64");
    FUZZ_REQUIRE(json_is_string(b64));
    enum sb_image_format f;
    FUZZ_REQUIRE(sb_image_check_b64(json_string_value(b64), json_string_length(b64), max, &f) == 0);
    const char *name = json_string_value(json_object_get(ev, "output_format"));
    const char *mime = json_string_value(json_object_get(ev, "mime"));
    FUZZ_REQUIRE(name && !strcmp(name, sb_image_format_name(f)));
    FUZZ_REQUIRE(mime && !strcmp(mime, sb_image_format_mime(f)));
}

static void fuzz_check_events(const json_t *events, const sb_image_req_t *req, long status, size_t max)
{
    size_t n = json_array_size(events);
    FUZZ_REQUIRE(n >= 1);
    int partials = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *ev = json_array_get(events, i);
        const char *t = json_string_value(json_object_get(ev, "type"));
        FUZZ_REQUIRE(t != NULL);
        if (!strcmp(t, SB_IMAGE_EV_PARTIAL)) {
            FUZZ_REQUIRE(i < n - 1);
            FUZZ_REQUIRE(json_integer_value(json_object_get(ev, "partial_image_index")) == partials);
            fuzz_check_image(ev, max);
            partials++;
            continue;
        }
        FUZZ_REQUIRE(i == n - 1);
        if (!strcmp(t, SB_IMAGE_EV_IMAGE)) {
            FUZZ_REQUIRE(status >= 200 && status < 300);
            fuzz_check_image(ev, max);
        } else {
            FUZZ_REQUIRE(!strcmp(t, SB_IMAGE_EV_ERROR));
            json_int_t s = json_integer_value(json_object_get(ev, "status"));
            FUZZ_REQUIRE(s == (status >= 200 && status < 300 ? 502 : status));
            const char *m = json_string_value(json_object_get(ev, "message"));
            FUZZ_REQUIRE(m && *m && strlen(m) <= SB_IMAGE_MESSAGE_MAX);
        }
    }
    FUZZ_REQUIRE(partials <= (req->stream ? req->partial_images : 0));
}

static void fuzz_build(const char *p, size_t n, size_t max, int partials)
{
    json_t *in = json_loadb(p, n, 0, NULL);
    if (!json_is_object(in)) {
        json_decref(in);
        return;
    }
    const char *provider = json_string_value(json_object_get(in, "provider"));
    json_t *route =
        json_pack("{s:s, s:s, s:s, s:s}", "provider", provider ? provider : "openai-chat", "base_url",
                  "http://127.0.0.1:18650/v1", "upstream_model", "gpt-image-1", "credential_ref", "SB_FUZZ_IMAGE_KEY");
    const char *images[SB_IMAGE_MAX_INPUTS + 2];
    size_t n_images = 0;
    size_t i;
    const json_t *v;
    json_array_foreach (json_object_get(in, "images"), i, v) {
        if (n_images < SB_IMAGE_MAX_INPUTS + 2 && json_is_string(v))
            images[n_images++] = json_string_value(v);
    }
    sb_image_call_t call = {.route = route,
                            .tool = json_object_get(in, "tool"),
                            .prompt = json_string_value(json_object_get(in, "prompt")),
                            .images = images,
                            .n_images = n_images,
                            .mask = json_string_value(json_object_get(in, "mask")),
                            .partials = partials > 0 || json_is_true(json_object_get(in, "partials")),
                            .max_b64 = max};
    sb_image_req_t r = {0};
    char why[256];
    int rc = sb_image_build(&call, &r, why, sizeof why);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL || rc == -E2BIG || rc == -ENOTSUP || rc == -ENOENT);
    if (rc == 0) {
        FUZZ_REQUIRE(r.http.url && r.http.body && r.http.body_len > 0);
        FUZZ_REQUIRE(r.api == SB_IMAGE_API_OPENAI || r.api == SB_IMAGE_API_GEMINI);
        FUZZ_REQUIRE(!r.stream || (r.api == SB_IMAGE_API_OPENAI && r.partial_images >= 1 &&
                                   r.partial_images <= SB_IMAGE_MAX_PARTIALS));
        if (r.edit && r.api == SB_IMAGE_API_OPENAI)
            FUZZ_REQUIRE(r.http.body_len > 4 && !memcmp(r.http.body + r.http.body_len - 4, "--\r\n", 4));
        else {
            json_t *body = json_loadb(r.http.body, r.http.body_len, 0, NULL);
            FUZZ_REQUIRE(json_is_object(body));
            json_decref(body);
        }
    } else {
        FUZZ_REQUIRE(why[0] != '\0' && strstr(why, FUZZ_SECRET) == NULL);
        FUZZ_REQUIRE(r.http.url == NULL && r.http.body == NULL && r.http.headers == NULL);
    }
    sb_image_req_clear(&r);
    json_decref(route);
    json_decref(in);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const long statuses[] = {200, 400, 401, 500};
    static const size_t maxes[] = {64, 1024, 65536, 0};
    if (size < 2)
        return 0;
    setenv("SB_FUZZ_IMAGE_KEY", FUZZ_SECRET, 0);
    int mode = data[0] & 3;
    long status = statuses[(data[0] >> 2) & 3];
    size_t max = maxes[(data[0] >> 4) & 3];
    int partials = data[0] >> 6;
    size_t step = data[1];
    const char *p = (const char *)data + 2;
    size_t n = size - 2;
    if (mode == 3) {
        fuzz_build(p, n, max, partials);
        return 0;
    }
    sb_image_req_t req = {0};
    req.api = mode == 2 ? SB_IMAGE_API_GEMINI : SB_IMAGE_API_OPENAI;
    req.stream = mode == 1 && partials > 0;
    req.partial_images = req.stream ? partials : 0;
    json_t *route = json_pack("{s:s}", "credential_ref", "SB_FUZZ_IMAGE_KEY");
    json_t *a = fuzz_run(&req, route, max, status, p, n, 0);
    json_t *b = fuzz_run(&req, route, max, status, p, n, step ? step : 1);
    FUZZ_REQUIRE(json_equal(a, b));
    fuzz_check_events(a, &req, status, max ? max : SB_IMAGE_MAX_B64);
    char *all = json_dumps(a, 0);
    FUZZ_REQUIRE(all && strstr(all, FUZZ_SECRET) == NULL);
    free(all);
    json_decref(a);
    json_decref(b);
    json_decref(route);
    return 0;
}
