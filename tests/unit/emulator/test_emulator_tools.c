/*
 * Unit test of the emulator's tool upstreams (issue 16): embeddings (OpenAI
 * POST /v1/embeddings, Gemini embedContent and batchEmbedContents), OpenAI's
 * Images API (generations and edits, plain and streamed) and Gemini's image
 * models. Over real HTTP against libsbemulator in-process (sb_emu_test.h):
 * the reply shapes, the validation errors in each provider's words, auth,
 * directives; and the properties the gateway's tests lean on: vectors that
 * are deterministic unit vectors in which texts sharing words are close (a
 * small retrieval set ranks every query's document first), images that are
 * real PNG/JPEG/WebP files of the asked size whose colour follows the prompt
 * and the input images (an edit differs from a generation), and partial
 * images that differ from the final one and arrive before it. The emulator's
 * own readers (multipart, image sniffing) are tested directly.
 */
#include <math.h>

#include "emu_embed.h"
#include "emu_image.h"
#include "emu_multipart.h"
#include "sb_base64.h"
#include "sb_emu_test.h"

#define AUTH "Authorization: Bearer " KEY

static json_t *post_json(struct sb_emu *emu, const char *path, const char *body, const char *auth, long want)
{
    struct resp r = http(emu, "POST", path, body, auth, NULL, 0);
    if (r.status != want)
        fprintf(stderr, "  POST %s: status %ld, wanted %ld: %.300s\n", path, r.status, want, r.body);
    CHECK_INT(r.status, want);
    json_t *j = json_loads(r.body, 0, NULL);
    resp_free(&r);
    return j;
}

static const char *err_msg(json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "error"), "message"));
}

static const char *err_param(json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "error"), "param"));
}

static const char *err_code(json_t *j)
{
    return json_string_value(json_object_get(json_object_get(j, "error"), "code"));
}

/* An OpenAI 400 whose message starts with prefix. */
static void expect_openai_400(struct sb_emu *emu, const char *path, const char *body, const char *prefix)
{
    json_t *j = post_json(emu, path, body, NULL, 400);
    const char *m = err_msg(j);
    if (!m || strncmp(m, prefix, strlen(prefix)) != 0)
        fprintf(stderr, "  %s: got \"%s\", wanted \"%s...\"\n", body, m ? m : "(none)", prefix);
    CHECK(m && !strncmp(m, prefix, strlen(prefix)));
    json_decref(j);
}

/* A Gemini error with this status whose message contains needle. */
static void expect_gemini(struct sb_emu *emu, const char *path, const char *body, long status, const char *needle)
{
    json_t *j = post_json(emu, path, body, NULL, status);
    const char *m = err_msg(j);
    if (!m || !strstr(m, needle))
        fprintf(stderr, "  %s: got \"%s\", wanted \"...%s...\"\n", body, m ? m : "(none)", needle);
    CHECK(m && strstr(m, needle));
    json_decref(j);
}

/* ---- embeddings -------------------------------------------------------------------------------- */

static double dot(json_t *a, json_t *b)
{
    double s = 0;
    for (size_t i = 0; i < json_array_size(a) && i < json_array_size(b); i++)
        s += json_number_value(json_array_get(a, i)) * json_number_value(json_array_get(b, i));
    return s;
}

static json_t *vector_at(json_t *resp, size_t i)
{
    return json_object_get(json_array_get(json_object_get(resp, "data"), i), "embedding");
}

static void test_embed_scheme(void)
{
    /* Directly: unit length, deterministic, stems fold, stop words do not count. */
    float a[64], b[64], c[64];
    sb_emu_embed_text("Searching the documents", 64, a);
    sb_emu_embed_text("searched documents", 64, b);
    sb_emu_embed_text("the of and", 64, c);
    double na = 0, ab = 0;
    for (int i = 0; i < 64; i++) {
        na += (double)a[i] * a[i];
        ab += (double)a[i] * b[i];
    }
    CHECK(fabs(na - 1.0) < 1e-5);
    CHECK(fabs(ab - 1.0) < 1e-5); /* same stems: search, document */
    double nc = 0;
    for (int i = 0; i < 64; i++)
        nc += (double)c[i] * c[i];
    CHECK(fabs(nc - 1.0) < 1e-5); /* only stop words: still a unit vector */
    float e[8];
    sb_emu_embed_text("", 8, e);
    double ne = 0;
    for (int i = 0; i < 8; i++)
        ne += (double)e[i] * e[i];
    CHECK(fabs(ne - 1.0) < 1e-5);
    CHECK_INT(sb_emu_embed_default_dims("emu-embed"), SB_EMU_EMBED_DIMS);
    CHECK_INT(sb_emu_embed_default_dims("text-embedding-3-small"), 1536);
    CHECK_INT(sb_emu_embed_default_dims("gemini-embedding-001"), 3072);
}

static void test_openai_embeddings(struct sb_emu *emu)
{
    json_t *j = post_json(emu, "/v1/embeddings",
                          "{\"model\":\"emu-embed\",\"input\":[\"The cat sat on the warm mat\",\"A cat is sitting on "
                          "a mat\",\"Quarterly revenue grew in the banking sector\"]}",
                          NULL, 200);
    CHECK_STR(jstr(j, "object"), "list");
    CHECK_STR(json_string_value(json_object_get(j, "model")), "emu-embed");
    CHECK_INT(json_array_size(json_object_get(j, "data")), 3);
    json_t *d1 = json_array_get(json_object_get(j, "data"), 1);
    CHECK_STR(json_string_value(json_object_get(d1, "object")), "embedding");
    CHECK_INT(json_integer_value(json_object_get(d1, "index")), 1);
    CHECK_INT(json_array_size(vector_at(j, 0)), SB_EMU_EMBED_DIMS);
    CHECK(fabs(dot(vector_at(j, 0), vector_at(j, 0)) - 1.0) < 1e-4);
    double close = dot(vector_at(j, 0), vector_at(j, 1)), far = dot(vector_at(j, 0), vector_at(j, 2));
    CHECK(close > 0.5);
    CHECK(fabs(far) < 0.2);
    json_t *usage = json_object_get(j, "usage");
    CHECK_INT(json_integer_value(json_object_get(usage, "prompt_tokens")), 21);
    CHECK_INT(json_integer_value(json_object_get(usage, "total_tokens")), 21);
    json_t *again = post_json(emu, "/v1/embeddings",
                              "{\"model\":\"emu-embed\",\"input\":\"The cat sat on the warm mat\"}", NULL, 200);
    CHECK(json_equal(vector_at(again, 0), vector_at(j, 0)));
    json_decref(again);
    json_decref(j);

    /* A small retrieval set: each query's own document ranks first. */
    static const char *const docs[] = {
        "The cat sat on the warm mat by the fire.",
        "Quarterly revenue grew in the banking sector despite rising interest rates.",
        "Photosynthesis converts sunlight, water and carbon dioxide into glucose in plant leaves.",
        "The football team won the championship after a dramatic penalty shootout.",
        "Install the package with apt-get and restart the nginx web server."};
    static const char *const queries[] = {
        "Which mat did the cat sit on?", "How did bank revenue change with interest rates?",
        "How do plants turn sunlight into glucose?", "Who won the football championship?",
        "How do I restart the web server after installing?"};
    json_t *req = json_pack("{s:s, s:[], s:i}", "model", "text-embedding-3-small", "input", "dimensions", 256);
    for (int i = 0; i < 5; i++)
        json_array_append_new(json_object_get(req, "input"), json_string(docs[i]));
    for (int i = 0; i < 5; i++)
        json_array_append_new(json_object_get(req, "input"), json_string(queries[i]));
    char *body = json_dumps(req, JSON_COMPACT);
    json_t *all = post_json(emu, "/v1/embeddings", body, NULL, 200);
    for (size_t q = 0; q < 5; q++) {
        size_t best = 0;
        double best_s = -2;
        for (size_t d = 0; d < 5; d++) {
            double s = dot(vector_at(all, 5 + q), vector_at(all, d));
            if (s > best_s) {
                best_s = s;
                best = d;
            }
        }
        CHECK_INT(best, q);
        CHECK_INT(json_array_size(vector_at(all, q)), 256);
    }
    json_decref(all);
    free(body);
    json_decref(req);

    /* The real models' sizes; base64 is the little-endian float32 of the same vector; token arrays. */
    j = post_json(emu, "/v1/embeddings", "{\"model\":\"text-embedding-3-large\",\"input\":\"hello\"}", NULL, 200);
    CHECK_INT(json_array_size(vector_at(j, 0)), 3072);
    json_decref(j);
    json_t *f = post_json(emu, "/v1/embeddings",
                          "{\"model\":\"emu-embed\",\"input\":\"hello world\",\"dimensions\":16}", NULL, 200);
    json_t *b = post_json(emu, "/v1/embeddings",
                          "{\"model\":\"emu-embed\",\"input\":\"hello world\",\"dimensions\":16,\"encoding_format\":"
                          "\"base64\"}",
                          NULL, 200);
    const char *b64 = json_string_value(vector_at(b, 0));
    size_t n = 0;
    unsigned char *raw = b64 ? sb_base64_decode(b64, strlen(b64), &n) : NULL;
    CHECK_INT(n, 16 * 4);
    for (size_t i = 0; raw && i < 16 && n == 64; i++) {
        uint32_t u = (uint32_t)raw[4 * i] | (uint32_t)raw[4 * i + 1] << 8 | (uint32_t)raw[4 * i + 2] << 16 |
                     (uint32_t)raw[4 * i + 3] << 24;
        float x;
        memcpy(&x, &u, 4);
        CHECK(fabs((double)x - json_number_value(json_array_get(vector_at(f, 0), i))) < 1e-6);
    }
    free(raw);
    json_decref(f);
    json_decref(b);
    j = post_json(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[[1,2,3],[4,5]],\"dimensions\":8}", NULL,
                  200);
    CHECK_INT(json_array_size(json_object_get(j, "data")), 2);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "prompt_tokens")), 5);
    json_decref(j);

    /* What the real API refuses. */
    const char *invalid = "'$.input' is invalid.";
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"\"}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[]}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[\"a\",\"\"]}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[\"a\",1]}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[[1],[]]}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[1,-2]}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":{\"a\":1}}", invalid);
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\"}", "Missing required parameter: 'input'.");
    expect_openai_400(emu, "/v1/embeddings", "{\"input\":\"x\"}", "you must provide a model parameter");
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"x\",\"foo\":1}",
                      "Unrecognized request argument supplied: foo");
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"text-embedding-ada-002\",\"input\":\"x\",\"dimensions\":8}",
                      "This model does not support specifying dimensions.");
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"x\",\"dimensions\":0}",
                      "Invalid 'dimensions': integer below minimum value.");
    expect_openai_400(emu, "/v1/embeddings",
                      "{\"model\":\"text-embedding-3-small\",\"input\":\"x\",\"dimensions\":1537}",
                      "Invalid 'dimensions': integer above maximum value.");
    expect_openai_400(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"x\",\"encoding_format\":\"int8\"}",
                      "Invalid value: 'int8'.");
    j = post_json(emu, "/v1/embeddings", "{\"model\":\"gpt-4o\",\"input\":\"x\"}", NULL, 404);
    CHECK_STR(err_code(j), "model_not_found");
    json_decref(j);
    /* 2049 inputs; one input of 8193 words. */
    size_t cap = 2049 * 4 + 64;
    char *many = malloc(cap);
    size_t o = (size_t)snprintf(many, cap, "{\"model\":\"emu-embed\",\"input\":[");
    for (int i = 0; i < 2049; i++)
        o += (size_t)snprintf(many + o, cap - o, "%s\"a\"", i ? "," : "");
    snprintf(many + o, cap - o, "]}");
    j = post_json(emu, "/v1/embeddings", many, NULL, 400);
    CHECK_STR(err_code(j), "array_above_max_length");
    json_decref(j);
    free(many);
    cap = 8193 * 2 + 64;
    char *longest = malloc(cap);
    o = (size_t)snprintf(longest, cap, "{\"model\":\"emu-embed\",\"input\":\"");
    for (int i = 0; i < 8193; i++)
        o += (size_t)snprintf(longest + o, cap - o, "w ");
    snprintf(longest + o, cap - o, "\"}");
    expect_openai_400(emu, "/v1/embeddings", longest, "This model's maximum context length is 8192 tokens");
    free(longest);

    /* Directives in an input, and a malformed body. */
    j = post_json(emu, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":[\"ok\",\"[[emu:status=503]] chunk\"]}",
                  NULL, 503);
    CHECK(err_msg(j) != NULL);
    json_decref(j);
    struct resp r = http(emu, "POST", "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"x\"}", NULL,
                         "Content-Type: text/plain", 0);
    CHECK_INT(r.status, 400);
    resp_free(&r);
}

static void test_embeddings_auth(struct sb_emu *keyed)
{
    json_t *j = post_json(keyed, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"x\"}", NULL, 401);
    CHECK_STR(err_code(j), "invalid_api_key");
    json_decref(j);
    j = post_json(keyed, "/v1/embeddings", "{\"model\":\"emu-embed\",\"input\":\"x\"}", AUTH, 200);
    CHECK_INT(json_array_size(vector_at(j, 0)), SB_EMU_EMBED_DIMS);
    json_decref(j);
    j = post_json(keyed, "/v1beta/models/gemini-embedding-001:embedContent",
                  "{\"content\":{\"parts\":[{\"text\":\"x\"}]}}", NULL, 403);
    CHECK_STR(json_string_value(json_object_get(json_object_get(j, "error"), "status")), "PERMISSION_DENIED");
    json_decref(j);
    j = post_json(keyed, "/v1beta/models/gemini-embedding-001:embedContent",
                  "{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"outputDimensionality\":8}", "x-goog-api-key: " KEY,
                  200);
    CHECK_INT(json_array_size(json_object_get(json_object_get(j, "embedding"), "values")), 8);
    json_decref(j);
}

static void test_gemini_embed(struct sb_emu *emu)
{
    const char *path = "/v1beta/models/gemini-embedding-001:embedContent";
    const char *batch = "/v1beta/models/gemini-embedding-001:batchEmbedContents";
    json_t *j = post_json(emu, path, "{\"content\":{\"parts\":[{\"text\":\"hello world\"}]}}", NULL, 200);
    json_t *values = json_object_get(json_object_get(j, "embedding"), "values");
    CHECK_INT(json_array_size(values), 3072);
    CHECK(fabs(dot(values, values) - 1.0) < 1e-4);
    json_decref(j);

    /* The same scheme as OpenAI's: one text, one dimension, one vector. */
    j = post_json(emu, path,
                  "{\"content\":{\"parts\":[{\"text\":\"hello\"},{\"text\":\"world\"}]},\"outputDimensionality\":32,"
                  "\"taskType\":\"RETRIEVAL_QUERY\"}",
                  NULL, 200);
    json_t *o = post_json(emu, "/v1/embeddings",
                          "{\"model\":\"emu-embed\",\"input\":\"hello world\",\"dimensions\":32}", NULL, 200);
    CHECK(json_equal(json_object_get(json_object_get(j, "embedding"), "values"), vector_at(o, 0)));
    json_decref(o);
    json_decref(j);

    j = post_json(emu, batch,
                  "{\"requests\":[{\"model\":\"models/gemini-embedding-001\",\"content\":{\"parts\":[{\"text\":\"a "
                  "cat\"}]},\"outputDimensionality\":16},{\"model\":\"models/gemini-embedding-001\",\"content\":{"
                  "\"parts\":[{\"text\":\"a dog\"}]},\"taskType\":\"RETRIEVAL_DOCUMENT\",\"title\":\"Dogs\","
                  "\"output_dimensionality\":8}]}",
                  NULL, 200);
    json_t *embs = json_object_get(j, "embeddings");
    CHECK_INT(json_array_size(embs), 2);
    CHECK_INT(json_array_size(json_object_get(json_array_get(embs, 0), "values")), 16);
    CHECK_INT(json_array_size(json_object_get(json_array_get(embs, 1), "values")), 8);
    json_decref(j);

    expect_gemini(emu, path, "{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"embedContentConfig\":{}}", 400,
                  "Unknown name \"embedContentConfig\": Cannot find field.");
    expect_gemini(emu, path, "{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"taskType\":\"NOPE\"}", 400,
                  "Invalid value at 'task_type'");
    expect_gemini(emu, path, "{}", 400, "* EmbedContentRequest.content: content is not specified");
    expect_gemini(emu, path, "{\"content\":{\"parts\":[]}}", 400, "contents.parts must not be empty");
    expect_gemini(emu, path, "{\"content\":{\"parts\":[{\"text\":\"\"}]}}", 400, "contains an empty Part");
    expect_gemini(emu, path, "{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"outputDimensionality\":4000}", 400,
                  "output_dimensionality");
    expect_gemini(emu, path, "{\"content\":{\"parts\":[{\"text\":\"x\"}]},\"title\":\"T\"}", 400,
                  "title is only applicable when task_type is RETRIEVAL_DOCUMENT");
    expect_gemini(emu, path,
                  "{\"content\":{\"parts\":[{\"inlineData\":{\"mimeType\":\"image/png\",\"data\":\"aGk=\"}}]}}", 400,
                  "only text parts are supported");
    expect_gemini(emu, batch, "{\"requests\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}", 400,
                  "* BatchEmbedContentsRequest.requests[0].model: unexpected model name format");
    expect_gemini(emu, batch,
                  "{\"requests\":[{\"model\":\"models/text-embedding-004\",\"content\":{\"parts\":[{\"text\":\"x\"}]}}"
                  "]}",
                  400, "must be the model of the URL");
    expect_gemini(emu, batch, "{\"requests\":[]}", 400, "requests is not specified");
    expect_gemini(emu, "/v1beta/models/gemini-2.5-flash:embedContent", "{\"content\":{\"parts\":[{\"text\":\"x\"}]}}",
                  404, "is not supported for embedContent");
    /* 101 requests. */
    json_t *big = json_pack("{s:[]}", "requests");
    for (int i = 0; i < 101; i++)
        json_array_append_new(
            json_object_get(big, "requests"),
            json_pack("{s:s, s:{s:[{s:s}]}}", "model", "models/gemini-embedding-001", "content", "parts", "text", "x"));
    char *body = json_dumps(big, JSON_COMPACT);
    expect_gemini(emu, batch, body, 400, "at most 100 requests can be in one batch");
    free(body);
    json_decref(big);
    expect_gemini(emu, path, "{\"content\":{\"parts\":[{\"text\":\"[[emu:status=429]] x\"}]}}", 429, "");
}

/* ---- images: reading the files back -------------------------------------------------------------------- */

struct picture_read {
    enum sb_emu_image_format format;
    unsigned w, h;
    bool alpha;
    unsigned char px[SB_EMU_PICTURE_MAX * SB_EMU_PICTURE_MAX][4]; /* PNG only: RGBA of every pixel */
    bool have_pixels;
    char text[512]; /* PNG tEXt chunks "key=value;..." */
};

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* A PNG of the emulator's: its tEXt chunks, and its pixels from the stored deflate blocks of IDAT. */
static void read_png(const unsigned char *d, size_t len, struct picture_read *out)
{
    size_t off = 8;
    unsigned char *raw = NULL;
    size_t rawn = 0;
    while (off + 12 <= len) {
        uint32_t n = be32(d + off);
        if (n > len - off - 12)
            break;
        const unsigned char *type = d + off + 4, *data = d + off + 8;
        if (!memcmp(type, "tEXt", 4)) {
            /* "key\0value" shown as "key=value;" */
            const unsigned char *nul = memchr(data, '\0', n);
            size_t at = strlen(out->text), k = nul ? (size_t)(nul - data) : n;
            snprintf(out->text + at, sizeof out->text - at, "%.*s=%.*s;", (int)k, (const char *)data,
                     nul ? (int)(n - k - 1) : 0, nul ? (const char *)nul + 1 : "");
        } else if (!memcmp(type, "IDAT", 4) && n > 6) {
            /* zlib header, then stored blocks: BFINAL/BTYPE byte, LEN, NLEN, data. */
            size_t p = 2;
            while (p + 5 <= n - 4) {
                unsigned bl = data[p + 1] | (unsigned)data[p + 2] << 8;
                CHECK_INT(bl ^ 0xffffu, data[p + 3] | (unsigned)data[p + 4] << 8);
                raw = realloc(raw, rawn + bl);
                memcpy(raw + rawn, data + p + 5, bl);
                rawn += bl;
                bool final = data[p] & 1;
                p += 5 + bl;
                if (final)
                    break;
            }
        }
        off += 12 + n;
    }
    unsigned ch = out->alpha ? 4 : 3;
    if (raw && rawn == (size_t)out->h * (1 + out->w * ch) && out->w <= SB_EMU_PICTURE_MAX &&
        out->h <= SB_EMU_PICTURE_MAX) {
        for (unsigned y = 0; y < out->h; y++)
            for (unsigned x = 0; x < out->w; x++) {
                const unsigned char *s = raw + (size_t)y * (1 + out->w * ch) + 1 + x * ch;
                unsigned char *t = out->px[y * out->w + x];
                memcpy(t, s, ch);
                t[3] = ch == 4 ? s[3] : 255;
            }
        out->have_pixels = true;
    }
    free(raw);
}

static void read_image(const char *b64, struct picture_read *out)
{
    memset(out, 0, sizeof *out);
    size_t n = 0;
    unsigned char *bytes = b64 ? sb_base64_decode(b64, strlen(b64), &n) : NULL;
    if (!bytes)
        return;
    out->format = sb_emu_image_sniff(bytes, n, &out->w, &out->h, &out->alpha);
    if (out->format == SB_EMU_IMAGE_PNG)
        read_png(bytes, n, out);
    free(bytes);
}

static const unsigned char *pixel_at(const struct picture_read *p, unsigned x, unsigned y)
{
    return p->px[y * p->w + x];
}

static bool same_pixel(const unsigned char *a, const unsigned char *b)
{
    return !memcmp(a, b, 4);
}

static const char *image_b64_at(json_t *resp, size_t i)
{
    return json_string_value(json_object_get(json_array_get(json_object_get(resp, "data"), i), "b64_json"));
}

/* ---- images: generations ---------------------------------------------------------------------------------- */

static void test_generations(struct sb_emu *emu)
{
    const char *path = "/v1/images/generations";
    json_t *j = post_json(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"a red fox in the snow\"}", NULL, 200);
    CHECK(json_integer_value(json_object_get(j, "created")) > 0);
    CHECK_STR(json_string_value(json_object_get(j, "background")), "opaque");
    CHECK_STR(json_string_value(json_object_get(j, "output_format")), "png");
    CHECK_STR(json_string_value(json_object_get(j, "quality")), "high");
    CHECK_STR(json_string_value(json_object_get(j, "size")), "1024x1024");
    json_t *u = json_object_get(j, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "input_tokens")), 6);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "input_tokens_details"), "text_tokens")), 6);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "input_tokens_details"), "image_tokens")), 0);
    CHECK_INT(json_integer_value(json_object_get(u, "output_tokens")), 4160);
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 4166);
    struct picture_read p;
    read_image(image_b64_at(j, 0), &p);
    CHECK_INT(p.format, SB_EMU_IMAGE_PNG);
    CHECK_INT(p.w, 16);
    CHECK_INT(p.h, 16);
    CHECK(!p.alpha);
    CHECK(p.have_pixels);
    CHECK(p.have_pixels && same_pixel(pixel_at(&p, 0, 0), pixel_at(&p, 15, 15)));
    CHECK(strstr(p.text, "a red fox in the snow") != NULL);
    CHECK(strstr(p.text, "generation by gpt-image-1") != NULL);
    unsigned char fox[4];
    memcpy(fox, pixel_at(&p, 0, 0), 4);

    /* Deterministic; another prompt, another colour; directives are not part of the prompt. */
    json_t *again = post_json(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"a red fox in the snow\"}", NULL, 200);
    CHECK_STR(image_b64_at(again, 0), image_b64_at(j, 0));
    json_decref(again);
    json_t *lat = post_json(
        emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"a red fox in the snow [[emu:latency=1]]\"}", NULL, 200);
    CHECK_STR(image_b64_at(lat, 0), image_b64_at(j, 0));
    json_decref(lat);
    json_t *other = post_json(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"a blue whale\"}", NULL, 200);
    read_image(image_b64_at(other, 0), &p);
    CHECK(!same_pixel(pixel_at(&p, 0, 0), fox));
    json_decref(other);
    json_decref(j);

    /* n images, each its own; sizes; formats; transparency; low quality. */
    j = post_json(emu, path,
                  "{\"model\":\"gpt-image-1-mini\",\"prompt\":\"tiles\",\"n\":3,\"size\":\"1536x1024\",\"quality\":"
                  "\"low\"}",
                  NULL, 200);
    CHECK_INT(json_array_size(json_object_get(j, "data")), 3);
    CHECK(strcmp(image_b64_at(j, 0), image_b64_at(j, 1)) != 0);
    CHECK(strcmp(image_b64_at(j, 1), image_b64_at(j, 2)) != 0);
    read_image(image_b64_at(j, 2), &p);
    CHECK_INT(p.w, 24);
    CHECK_INT(p.h, 16);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "output_tokens")), 3 * 408);
    json_decref(j);
    j = post_json(emu, path,
                  "{\"model\":\"gpt-image-1\",\"prompt\":\"tall\",\"size\":\"1024x1536\",\"output_format\":\"jpeg\","
                  "\"output_compression\":50}",
                  NULL, 200);
    read_image(image_b64_at(j, 0), &p);
    CHECK_INT(p.format, SB_EMU_IMAGE_JPEG);
    CHECK_INT(p.w, 16);
    CHECK_INT(p.h, 24);
    CHECK_STR(json_string_value(json_object_get(j, "output_format")), "jpeg");
    json_decref(j);
    j = post_json(emu, path,
                  "{\"model\":\"gpt-image-1.5\",\"prompt\":\"logo\",\"output_format\":\"webp\",\"background\":"
                  "\"transparent\"}",
                  NULL, 200);
    read_image(image_b64_at(j, 0), &p);
    CHECK_INT(p.format, SB_EMU_IMAGE_WEBP);
    CHECK(p.alpha);
    CHECK_STR(json_string_value(json_object_get(j, "background")), "transparent");
    json_decref(j);
    j = post_json(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"logo\",\"background\":\"transparent\"}", NULL,
                  200);
    read_image(image_b64_at(j, 0), &p);
    CHECK(p.alpha);
    json_decref(j);
    j = post_json(emu, path,
                  "{\"model\":\"gpt-image-2\",\"prompt\":\"wide\",\"size\":\"1536x864\",\"quality\":\"low\"}", NULL,
                  200);
    CHECK_STR(json_string_value(json_object_get(j, "size")), "1536x864");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "output_tokens")), 344);
    json_decref(j);
    /* No model but a GPT-only parameter: gpt-image-1. */
    j = post_json(emu, path, "{\"prompt\":\"x\",\"output_format\":\"png\"}", NULL, 200);
    json_decref(j);

    /* What the real API refuses. */
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\"}", "Missing required parameter: 'prompt'.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"\"}", "Invalid 'prompt': empty string.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"response_format\":\"b64_json\"}",
                      "Unknown parameter: 'response_format'.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"style\":\"vivid\"}",
                      "Unknown parameter: 'style'.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"input_fidelity\":\"high\"}",
                      "Unknown parameter: 'input_fidelity'.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-4o\",\"prompt\":\"x\"}", "Invalid value: 'gpt-4o'.");
    expect_openai_400(emu, path, "{\"prompt\":\"x\"}", "The emulator does not emulate dall-e-2");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"n\":11}",
                      "Invalid 'n': integer above maximum value.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"n\":0}",
                      "Invalid 'n': integer below minimum value.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"size\":\"512x512\"}",
                      "Invalid value: '512x512'. Supported values are: '1024x1024', '1536x1024', '1024x1536', and "
                      "'auto'.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-2\",\"prompt\":\"x\",\"size\":\"1000x1000\"}",
                      "Invalid value: '1000x1000'. Width and height must both be divisible by 16.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-2\",\"prompt\":\"x\",\"size\":\"3840x960\"}",
                      "Invalid value: '3840x960'. The aspect ratio");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"quality\":\"hd\"}",
                      "Invalid value: 'hd'.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"partial_images\":4}",
                      "Invalid 'partial_images': integer above maximum value.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"output_compression\":50}",
                      "Compression less than 100 is not supported for PNG output format.");
    expect_openai_400(emu, path,
                      "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"background\":\"transparent\",\"output_format\":"
                      "\"jpeg\"}",
                      "Transparent background is not supported for the jpeg output format");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-2\",\"prompt\":\"x\",\"background\":\"transparent\"}",
                      "Transparent background is not supported for this model.");
    expect_openai_400(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"stream\":\"yes\"}",
                      "Invalid type for 'stream': expected a boolean");
    json_t *e = post_json(emu, path, "{\"model\":\"gpt-image-1\",\"prompt\":\"x [[emu:status=500]]\"}", NULL, 500);
    json_decref(e);
}

/* The data of the SSE events of a body (names into names[], at most max). */
static size_t sse_events(char *body, char **names, json_t **data, size_t max)
{
    size_t n = 0;
    char *name = NULL;
    for (char *line = strtok(body, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        if (!strncmp(line, "event: ", 7)) {
            name = line + 7;
        } else if (!strncmp(line, "data: ", 6)) {
            names[n] = name;
            data[n] = json_loads(line + 6, 0, NULL);
            n++;
            name = NULL;
        }
    }
    return n;
}

static void test_generation_stream(struct sb_emu *emu)
{
    struct resp r =
        http(emu, "POST", "/v1/images/generations",
             "{\"model\":\"gpt-image-1\",\"prompt\":\"a red fox in the snow\",\"stream\":true,\"partial_images\":"
             "3}",
             NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.headers, "text/event-stream") != NULL);
    char *names[16];
    json_t *ev[16];
    size_t n = sse_events(r.body, names, ev, 16);
    CHECK_INT(n, 4);
    struct picture_read prev, cur;
    memset(&prev, 0, sizeof prev);
    for (size_t i = 0; i < n && i < 3; i++) {
        CHECK_STR(names[i], "image_generation.partial_image");
        CHECK_STR(json_string_value(json_object_get(ev[i], "type")), "image_generation.partial_image");
        CHECK_INT(json_integer_value(json_object_get(ev[i], "partial_image_index")), i);
        CHECK_STR(json_string_value(json_object_get(ev[i], "size")), "1024x1024");
        CHECK_STR(json_string_value(json_object_get(ev[i], "quality")), "high");
        CHECK_STR(json_string_value(json_object_get(ev[i], "background")), "opaque");
        CHECK_STR(json_string_value(json_object_get(ev[i], "output_format")), "png");
        CHECK(json_integer_value(json_object_get(ev[i], "created_at")) > 0);
        read_image(json_string_value(json_object_get(ev[i], "b64_json")), &cur);
        CHECK(cur.have_pixels);
        /* Partial k fills (k + 1) of the 4 blocks: block k+1 (raster order) is still background. */
        CHECK(!same_pixel(pixel_at(&cur, 0, 0), pixel_at(&cur, 15, 15)));
        if (i > 0)
            CHECK(memcmp(prev.px, cur.px, sizeof cur.px) != 0);
        prev = cur;
    }
    if (n == 4) {
        CHECK_STR(names[3], "image_generation.completed");
        CHECK_STR(json_string_value(json_object_get(ev[3], "type")), "image_generation.completed");
        CHECK(json_object_get(ev[3], "partial_image_index") == NULL);
        CHECK_INT(json_integer_value(json_object_get(json_object_get(ev[3], "usage"), "output_tokens")), 4160);
        /* The final image is the one a plain request gets. */
        json_t *plain = post_json(emu, "/v1/images/generations",
                                  "{\"model\":\"gpt-image-1\",\"prompt\":\"a red fox in the snow\"}", NULL, 200);
        CHECK_STR(json_string_value(json_object_get(ev[3], "b64_json")), image_b64_at(plain, 0));
        json_decref(plain);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(ev[i]);
    resp_free(&r);

    /* partial_images 0: the one completed event. */
    r = http(emu, "POST", "/v1/images/generations", "{\"model\":\"gpt-image-1\",\"prompt\":\"x\",\"stream\":true}",
             NULL, NULL, 0);
    n = sse_events(r.body, names, ev, 16);
    CHECK_INT(n, 1);
    CHECK(n == 1 && names[0] && !strcmp(names[0], "image_generation.completed"));
    for (size_t i = 0; i < n; i++)
        json_decref(ev[i]);
    resp_free(&r);
}

/* ---- images: edits ---------------------------------------------------------------------------------------- */

struct upload_file {
    const char *field;
    const unsigned char *data;
    size_t len;
    const char *type; /* NULL: no Content-Type */
};

static struct resp upload(struct sb_emu *emu, const char *const *fields, const struct upload_file *files, size_t nfiles)
{
    struct resp r = {0};
    r.body = calloc(1, 1);
    r.headers = calloc(1, 1);
    char url[256];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/v1/images/edits", sb_emu_port(emu));
    CURL *c = curl_easy_init();
    curl_mime *mime = curl_mime_init(c);
    for (size_t i = 0; fields && fields[i]; i += 2) {
        curl_mimepart *part = curl_mime_addpart(mime);
        curl_mime_name(part, fields[i]);
        curl_mime_data(part, fields[i + 1], CURL_ZERO_TERMINATED);
    }
    for (size_t i = 0; i < nfiles; i++) {
        curl_mimepart *part = curl_mime_addpart(mime);
        curl_mime_name(part, files[i].field);
        curl_mime_data(part, (const char *)files[i].data, files[i].len);
        curl_mime_filename(part, "upload");
        /* Without a type curl sends application/octet-stream for a file part. */
        curl_mime_type(part, files[i].type ? files[i].type : "application/octet-stream");
    }
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_MIMEPOST, mime);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &r);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &r);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    r.rc = curl_easy_perform(c);
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    curl_mime_free(mime);
    curl_easy_cleanup(c);
    return r;
}

static json_t *upload_json(struct sb_emu *emu, const char *const *fields, const struct upload_file *files, size_t n,
                           long want)
{
    struct resp r = upload(emu, fields, files, n);
    if (r.status != want)
        fprintf(stderr, "  edit: status %ld, wanted %ld: %.300s\n", r.status, want, r.body);
    CHECK_INT(r.status, want);
    json_t *j = json_loads(r.body, 0, NULL);
    resp_free(&r);
    return j;
}

static void expect_upload_400(struct sb_emu *emu, const char *const *fields, const struct upload_file *files, size_t n,
                              const char *prefix, const char *param, const char *code)
{
    json_t *j = upload_json(emu, fields, files, n, 400);
    const char *m = err_msg(j);
    if (!m || strncmp(m, prefix, strlen(prefix)) != 0)
        fprintf(stderr, "  edit: got \"%s\", wanted \"%s...\"\n", m ? m : "(none)", prefix);
    CHECK(m && !strncmp(m, prefix, strlen(prefix)));
    if (param)
        CHECK_STR(err_param(j), param);
    if (code)
        CHECK_STR(err_code(j), code);
    json_decref(j);
}

/* An input image of the emulator's own making: w x h, colour from seed, alpha or not, in format. */
static unsigned char *make_input(unsigned w, unsigned h, uint64_t seed, bool transparent,
                                 enum sb_emu_image_format format, size_t *len)
{
    struct sb_emu_picture p;
    sb_emu_picture_init(&p, w, h, seed, transparent);
    p.filled = 1;
    return sb_emu_picture_encode(&p, format, len);
}

static void test_edits(struct sb_emu *emu)
{
    size_t na, nb, nj, nmask, nsmall, nflat;
    unsigned char *a = make_input(16, 16, 1, false, SB_EMU_IMAGE_PNG, &na);
    unsigned char *b = make_input(16, 16, 2, false, SB_EMU_IMAGE_PNG, &nb);
    unsigned char *jpg = make_input(16, 16, 3, false, SB_EMU_IMAGE_JPEG, &nj);
    unsigned char *mask = make_input(16, 16, 4, true, SB_EMU_IMAGE_PNG, &nmask);
    unsigned char *small = make_input(8, 8, 4, true, SB_EMU_IMAGE_PNG, &nsmall);
    unsigned char *flat = make_input(16, 16, 5, false, SB_EMU_IMAGE_PNG, &nflat);
    const char *const fields[] = {"model", "gpt-image-1", "prompt", "a red fox in the snow", NULL};

    struct upload_file one[] = {{"image", a, na, "image/png"}};
    json_t *e1 = upload_json(emu, fields, one, 1, 200);
    CHECK_STR(json_string_value(json_object_get(e1, "size")), "1024x1024");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(json_object_get(e1, "usage"), "input_tokens_details"),
                                                 "image_tokens")),
              85);
    struct picture_read p;
    read_image(image_b64_at(e1, 0), &p);
    CHECK_INT(p.format, SB_EMU_IMAGE_PNG);
    CHECK(strstr(p.text, "edit by gpt-image-1") != NULL);
    /* An edit is not the generation of its prompt; the same edit again is the same image; another input, another. */
    json_t *gen = post_json(emu, "/v1/images/generations",
                            "{\"model\":\"gpt-image-1\",\"prompt\":\"a red fox in the snow\"}", NULL, 200);
    CHECK(strcmp(image_b64_at(e1, 0), image_b64_at(gen, 0)) != 0);
    json_decref(gen);
    json_t *e1b = upload_json(emu, fields, one, 1, 200);
    CHECK_STR(image_b64_at(e1b, 0), image_b64_at(e1, 0));
    json_decref(e1b);
    struct upload_file other[] = {{"image", b, nb, "image/png"}};
    json_t *e2 = upload_json(emu, fields, other, 1, 200);
    CHECK(strcmp(image_b64_at(e2, 0), image_b64_at(e1, 0)) != 0);
    json_decref(e2);

    /* image[] of two kinds, a mask, n, typed fields; then streamed. */
    struct upload_file two[] = {
        {"image[]", a, na, "image/png"}, {"image[]", jpg, nj, "image/jpeg"}, {"mask", mask, nmask, "image/png"}};
    const char *const more[] = {"model",          "gpt-image-1.5", "prompt",        "combine", "n", "2",
                                "input_fidelity", "high",          "output_format", "webp",    NULL};
    json_t *e3 = upload_json(emu, more, two, 3, 200);
    CHECK_INT(json_array_size(json_object_get(e3, "data")), 2);
    read_image(image_b64_at(e3, 1), &p);
    CHECK_INT(p.format, SB_EMU_IMAGE_WEBP);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(json_object_get(e3, "usage"), "input_tokens_details"),
                                                 "image_tokens")),
              170);
    json_decref(e3);
    const char *const streamed[] = {
        "model", "gpt-image-1", "prompt", "a red fox in the snow", "stream", "true", "partial_images", "1", NULL};
    struct resp r = upload(emu, streamed, one, 1);
    CHECK_INT(r.status, 200);
    char *names[8];
    json_t *ev[8];
    size_t n = sse_events(r.body, names, ev, 8);
    CHECK_INT(n, 2);
    if (n == 2) {
        CHECK_STR(names[0], "image_edit.partial_image");
        CHECK_STR(json_string_value(json_object_get(ev[0], "type")), "image_edit.partial_image");
        CHECK_STR(names[1], "image_edit.completed");
        CHECK_STR(json_string_value(json_object_get(ev[1], "b64_json")), image_b64_at(e1, 0));
        CHECK(strcmp(json_string_value(json_object_get(ev[0], "b64_json")), image_b64_at(e1, 0)) != 0);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(ev[i]);
    resp_free(&r);
    json_decref(e1);

    /* What the real API refuses. */
    expect_upload_400(emu, fields, NULL, 0, "Missing required parameter: 'image'.", "image",
                      "missing_required_parameter");
    struct upload_file untyped[] = {{"image", a, na, "application/octet-stream"}};
    expect_upload_400(emu, fields, untyped, 1,
                      "Invalid file 'image': unsupported mimetype ('application/octet-stream'). Supported file formats "
                      "are 'image/jpeg', 'image/png', and 'image/webp'.",
                      "image", "unsupported_file_mimetype");
    struct upload_file second_bad[] = {{"image[]", a, na, "image/png"}, {"image[]", a, na, "text/plain"}};
    expect_upload_400(emu, fields, second_bad, 2, "Invalid file 'image[1]': unsupported mimetype ('text/plain').",
                      "image[1]", "unsupported_file_mimetype");
    struct upload_file lying[] = {{"image", jpg, nj, "image/png"}};
    expect_upload_400(emu, fields, lying, 1, "Invalid image file or mode for image 1", "image", NULL);
    struct upload_file no_alpha[] = {{"image", a, na, "image/png"}, {"mask", flat, nflat, "image/png"}};
    expect_upload_400(emu, fields, no_alpha, 2, "Invalid mask image format - mask image missing alpha channel", "mask",
                      NULL);
    struct upload_file wrong_size[] = {{"image", a, na, "image/png"}, {"mask", small, nsmall, "image/png"}};
    expect_upload_400(emu, fields, wrong_size, 2, "Invalid mask image format - mask size (8x8)", "mask", NULL);
    struct upload_file jpeg_mask[] = {{"image", a, na, "image/png"}, {"mask", jpg, nj, "image/jpeg"}};
    expect_upload_400(emu, fields, jpeg_mask, 2, "Invalid file 'mask': unsupported mimetype ('image/jpeg').", "mask",
                      NULL);
    struct upload_file seventeen[17];
    for (int i = 0; i < 17; i++)
        seventeen[i] = (struct upload_file){"image[]", a, na, "image/png"};
    expect_upload_400(emu, fields, seventeen, 17, "Invalid 'image': array too long.", "image", NULL);
    const char *const text_image[] = {"model", "gpt-image-1", "prompt", "x", "image", "not a file", NULL};
    expect_upload_400(emu, text_image, NULL, 0, "Invalid type for 'image': expected one of an array of files or file",
                      "image", NULL);
    const char *const mini[] = {"model", "gpt-image-1-mini", "prompt", "x", "input_fidelity", "high", NULL};
    expect_upload_400(emu, mini, one, 1, "input_fidelity is not supported for gpt-image-1-mini.", "input_fidelity",
                      NULL);
    const char *const bad_n[] = {"model", "gpt-image-1", "prompt", "x", "n", "two", NULL};
    expect_upload_400(emu, bad_n, one, 1, "Invalid type for 'n': expected an integer, but got a string instead.", "n",
                      NULL);
    const char *const moderation[] = {"model", "gpt-image-1", "prompt", "x", "moderation", "low", NULL};
    expect_upload_400(emu, moderation, one, 1, "Unknown parameter: 'moderation'.", "moderation", NULL);
    /* A JSON body is not an upload. */
    expect_openai_400(emu, "/v1/images/edits", "{\"model\":\"gpt-image-1\",\"prompt\":\"x\"}",
                      "Invalid Content-Type header (application/json), expected multipart/form-data");
    free(a);
    free(b);
    free(jpg);
    free(mask);
    free(small);
    free(flat);
}

static void test_images_auth(struct sb_emu *keyed)
{
    json_t *j = post_json(keyed, "/v1/images/generations", "{\"model\":\"gpt-image-1\",\"prompt\":\"x\"}", NULL, 401);
    CHECK_STR(err_code(j), "invalid_api_key");
    json_decref(j);
    j = post_json(keyed, "/v1/images/generations", "{\"model\":\"gpt-image-1\",\"prompt\":\"x\"}", AUTH, 200);
    CHECK_INT(json_array_size(json_object_get(j, "data")), 1);
    json_decref(j);
    struct resp r = upload(keyed, NULL, NULL, 0);
    CHECK_INT(r.status, 401);
    resp_free(&r);
}

/* ---- Gemini image models ------------------------------------------------------------------------------------ */

static json_t *gemini_parts(json_t *resp)
{
    return json_object_get(json_object_get(json_array_get(json_object_get(resp, "candidates"), 0), "content"), "parts");
}

static const char *inline_data(json_t *parts, size_t i)
{
    json_t *blob = json_object_get(json_array_get(parts, i), "inlineData");
    if (blob)
        CHECK_STR(json_string_value(json_object_get(blob, "mimeType")), "image/png");
    return json_string_value(json_object_get(blob, "data"));
}

static void test_gemini_images(struct sb_emu *emu)
{
    const char *path = "/v1beta/models/gemini-2.5-flash-image:generateContent";
    json_t *j = post_json(emu, path,
                          "{\"contents\":[{\"role\":\"user\",\"parts\":[{\"text\":\"draw a red fox\"}]}],"
                          "\"generationConfig\":{\"responseModalities\":[\"TEXT\",\"IMAGE\"]}}",
                          NULL, 200);
    json_t *parts = gemini_parts(j);
    CHECK_INT(json_array_size(parts), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(parts, 0), "text")), "You said: draw a red fox");
    const char *img = inline_data(parts, 1);
    struct picture_read p;
    read_image(img, &p);
    CHECK_INT(p.format, SB_EMU_IMAGE_PNG);
    CHECK_INT(p.w, 16);
    CHECK(strstr(p.text, "draw a red fox") != NULL);
    json_t *usage = json_object_get(j, "usageMetadata");
    CHECK_INT(json_integer_value(json_object_get(usage, "candidatesTokenCount")), 6 + SB_EMU_GEMINI_IMAGE_TOKENS);
    json_t *details = json_array_get(json_object_get(usage, "candidatesTokensDetails"), 0);
    CHECK_STR(json_string_value(json_object_get(details, "modality")), "IMAGE");
    char *first = strdup(img ? img : "");

    /* Without responseModalities the image model still draws; IMAGE alone: the image is the only part. */
    json_t *k = post_json(emu, path, "{\"contents\":[{\"parts\":[{\"text\":\"draw a red fox\"}]}]}", NULL, 200);
    CHECK_INT(json_array_size(gemini_parts(k)), 2);
    CHECK_STR(inline_data(gemini_parts(k), 1), first);
    json_decref(k);
    k = post_json(emu, path,
                  "{\"contents\":[{\"parts\":[{\"text\":\"draw a red fox\"}]}],\"generationConfig\":{"
                  "\"responseModalities\":[\"IMAGE\"],\"imageConfig\":{\"aspectRatio\":\"16:9\"}}}",
                  NULL, 200);
    CHECK_INT(json_array_size(gemini_parts(k)), 1);
    read_image(inline_data(gemini_parts(k), 0), &p);
    CHECK_INT(p.w, 24);
    CHECK_INT(p.h, 16);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(k, "usageMetadata"), "candidatesTokenCount")),
              SB_EMU_GEMINI_IMAGE_TOKENS);
    json_decref(k);

    /* An edit: the earlier image sent back changes the output, deterministically. */
    json_t *edit_req =
        json_pack("{s:[{s:s, s:[{s:s}]}, {s:s, s:[{s:{s:s, s:s}}]}, {s:s, s:[{s:s}]}]}", "contents", "role", "user",
                  "parts", "text", "draw a red fox", "role", "model", "parts", "inlineData", "mimeType", "image/png",
                  "data", first, "role", "user", "parts", "text", "draw a red fox");
    char *body = json_dumps(edit_req, JSON_COMPACT);
    k = post_json(emu, path, body, NULL, 200);
    const char *edited = inline_data(gemini_parts(k), 1);
    CHECK(edited && strcmp(edited, first) != 0);
    read_image(edited, &p);
    CHECK(strstr(p.text, "gemini edit of 1 input image") != NULL);
    json_t *k2 = post_json(emu, path, body, NULL, 200);
    CHECK_STR(inline_data(gemini_parts(k2), 1), edited);
    json_decref(k2);
    json_decref(k);
    free(body);
    json_decref(edit_req);

    /* Streaming: the text word by word, the image with the last chunk. */
    struct resp r = http(emu, "POST", "/v1beta/models/gemini-2.5-flash-image:streamGenerateContent?alt=sse",
                         "{\"contents\":[{\"parts\":[{\"text\":\"draw a red fox\"}]}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    char *names[16];
    json_t *ev[16];
    size_t n = sse_events(r.body, names, ev, 16);
    CHECK(n >= 2);
    for (size_t i = 0; i < n; i++) {
        json_t *ps = gemini_parts(ev[i]);
        bool last = i + 1 == n;
        CHECK_INT(json_array_size(ps), last ? 2 : 1);
        if (last)
            CHECK_STR(inline_data(ps, 1), first);
        json_decref(ev[i]);
    }
    resp_free(&r);

    /* A text model keeps answering text, and refuses IMAGE as Google does. */
    k = post_json(emu, "/v1beta/models/gemini-2.5-flash:generateContent",
                  "{\"contents\":[{\"parts\":[{\"text\":\"draw a red fox\"}]}]}", NULL, 200);
    CHECK_INT(json_array_size(gemini_parts(k)), 1);
    json_decref(k);
    expect_gemini(emu, "/v1beta/models/gemini-2.5-flash:generateContent",
                  "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"responseModalities\":["
                  "\"IMAGE\"]}}",
                  400, "Model does not support the requested response modalities: image");
    expect_gemini(emu, path,
                  "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"imageConfig\":{\"foo\":1}}}",
                  400, "Unknown name \"foo\" at 'generation_config.image_config'");
    expect_gemini(emu, path,
                  "{\"contents\":[{\"parts\":[{\"text\":\"x\"}]}],\"generationConfig\":{\"imageConfig\":{"
                  "\"aspectRatio\":\"7:5\"}}}",
                  400, "aspect_ratio");
    /* A function call is not drawn. */
    k = post_json(emu, path,
                  "{\"contents\":[{\"parts\":[{\"text\":\"CALL f {}\"}]}],\"tools\":[{\"functionDeclarations\":[{"
                  "\"name\":\"f\"}]}]}",
                  NULL, 200);
    CHECK_INT(json_array_size(gemini_parts(k)), 1);
    CHECK(json_object_get(json_array_get(gemini_parts(k), 0), "functionCall") != NULL);
    json_decref(k);
    free(first);
    json_decref(j);
}

/* ---- the emulator's own readers -------------------------------------------------------------------------------- */

static void test_multipart(void)
{
    char b[80];
    CHECK_INT(sb_emu_multipart_boundary("multipart/form-data; boundary=abc", b, sizeof b), 0);
    CHECK_STR(b, "abc");
    CHECK_INT(sb_emu_multipart_boundary("Multipart/Form-Data; charset=x; boundary=\"a b\"", b, sizeof b), 0);
    CHECK_STR(b, "a b");
    CHECK(sb_emu_multipart_boundary("application/json", b, sizeof b) < 0);
    CHECK(sb_emu_multipart_boundary("multipart/form-data", b, sizeof b) < 0);

    struct sb_emu_part parts[4];
    size_t n = 0;
    char err[128];
    const char *ok = "preamble\r\n--XY\r\nContent-Disposition: form-data; name=\"prompt\"\r\n\r\nhello\r\n"
                     "--XY\nContent-Disposition: form-data; name=\"image[]\"; filename=\"a.png\"\n"
                     "Content-Type: image/png\n\n\x89PNG\r\n--XY--\r\n";
    CHECK_INT(sb_emu_multipart_parse((const unsigned char *)ok, strlen(ok), "XY", parts, 4, &n, err, sizeof err), 0);
    CHECK_INT(n, 2);
    CHECK_STR(parts[0].name, "prompt");
    CHECK(!parts[0].is_file);
    CHECK_INT(parts[0].len, 5);
    CHECK(!memcmp(parts[0].data, "hello", 5));
    CHECK_STR(parts[1].name, "image[]");
    CHECK(parts[1].is_file);
    CHECK_STR(parts[1].filename, "a.png");
    CHECK_STR(parts[1].content_type, "image/png");
    CHECK_INT(parts[1].len, 4);
    const char *unclosed = "--XY\r\nContent-Disposition: form-data; name=\"a\"\r\n\r\nhello";
    CHECK(sb_emu_multipart_parse((const unsigned char *)unclosed, strlen(unclosed), "XY", parts, 4, &n, err,
                                 sizeof err) < 0);
    const char *nameless = "--XY\r\nContent-Disposition: form-data\r\n\r\nx\r\n--XY--";
    CHECK(sb_emu_multipart_parse((const unsigned char *)nameless, strlen(nameless), "XY", parts, 4, &n, err,
                                 sizeof err) < 0);
    const char *empty = "--XY--\r\n";
    CHECK(sb_emu_multipart_parse((const unsigned char *)empty, strlen(empty), "XY", parts, 4, &n, err, sizeof err) < 0);
    const char *too_many = "--XY\r\nContent-Disposition: form-data; name=a\r\n\r\n1\r\n--XY\r\nContent-Disposition: "
                           "form-data; name=b\r\n\r\n2\r\n--XY--";
    CHECK(sb_emu_multipart_parse((const unsigned char *)too_many, strlen(too_many), "XY", parts, 1, &n, err,
                                 sizeof err) < 0);
}

static void test_sniff(void)
{
    static const enum sb_emu_image_format formats[] = {SB_EMU_IMAGE_PNG, SB_EMU_IMAGE_JPEG, SB_EMU_IMAGE_WEBP};
    for (int i = 0; i < 3; i++) {
        size_t len;
        unsigned char *bytes = make_input(24, 16, 9, formats[i] != SB_EMU_IMAGE_JPEG, formats[i], &len);
        unsigned w, h;
        bool alpha;
        CHECK_INT(sb_emu_image_sniff(bytes, len, &w, &h, &alpha), formats[i]);
        CHECK_INT(w, 24);
        CHECK_INT(h, 16);
        CHECK(alpha == (formats[i] != SB_EMU_IMAGE_JPEG));
        /* Cut short: still recognised by its signature, never read past the end. */
        CHECK_INT(sb_emu_image_sniff(bytes, 12, &w, &h, &alpha),
                  formats[i] == SB_EMU_IMAGE_WEBP ? SB_EMU_IMAGE_NONE : formats[i]);
        free(bytes);
    }
    unsigned w, h;
    bool alpha;
    CHECK_INT(sb_emu_image_sniff((const unsigned char *)"GIF89a", 6, &w, &h, &alpha), SB_EMU_IMAGE_NONE);
    CHECK_STR(sb_emu_image_mime(SB_EMU_IMAGE_WEBP), "image/webp");
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    test_embed_scheme();
    test_openai_embeddings(s.open_emu);
    test_embeddings_auth(s.keyed_emu);
    test_gemini_embed(s.open_emu);
    test_generations(s.open_emu);
    test_generation_stream(s.open_emu);
    test_edits(s.open_emu);
    test_images_auth(s.keyed_emu);
    test_gemini_images(s.open_emu);
    test_multipart();
    test_sniff();
    server_stop(&s);
    curl_global_cleanup();
    return sb_test_finish("emulator_tools");
}
