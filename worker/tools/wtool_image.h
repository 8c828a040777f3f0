/*
 * wtool_image: image generation for the tool loop, the pure half. It builds
 * the upstream request for one image from the request's image_generation
 * tool, the prompt the model wrote and the input images (OpenAI's Images
 * API: generations as JSON, edits as multipart/form-data; or Gemini's
 * generateContent with an image model), and reads the upstream's answer (one
 * JSON body, or an event stream of partial images) into image events. No
 * I/O and no logging: the loop sends the request with sb_upstream_start and
 * feeds the body here as it arrives.
 *
 * Files: wtool_image.c (image bytes: sniffing, base64 checks, input images),
 * wtool_image_build.c (the requests), wtool_image_multipart.c (the edit
 * body), wtool_image_parse.c (the answers).
 *
 * What each upstream gets:
 *  - openai-chat, openai-responses, openai-compatible: POST
 *    {base_url}/images/generations (JSON) when there is no input image,
 *    POST {base_url}/images/edits (multipart/form-data, image[] parts and a
 *    mask part) when there is one; "Authorization: Bearer <credential>".
 *    n is always 1. With partial images wanted (call->partials and
 *    tool.partial_images > 0) the request has stream:true and
 *    partial_images, and the answer is an event stream.
 *  - gemini: POST {base_url}/models/{upstream_model}:generateContent, the
 *    prompt and the input images as parts, responseModalities TEXT+IMAGE,
 *    imageConfig.aspectRatio when tool.size maps onto one of Gemini's
 *    ratios (within 3%); "x-goog-api-key: <credential>". Gemini has no
 *    partial images (never streamed), no mask, and no setting for quality,
 *    background, output format or compression, moderation or input
 *    fidelity: those are not sent.
 *  - anthropic (and any other kind): no image generation: -ENOTSUP.
 *
 * Untrusted bytes are the tool's fields and images (a client's), the prompt
 * (a model's) and the answer (an upstream's): nothing is asserted on them.
 * Every image that comes in or goes out is checked to be standard padded
 * base64 of a PNG, JPEG or WEBP image (its magic bytes), within a size cap.
 * Credentials: the request's headers hold the route's secret (never log
 * them); the parser's error messages are scrubbed of it and of every
 * credential the worker knows (sb_provider_scrub).
 */
#ifndef WTOOL_IMAGE_H
#define WTOOL_IMAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "provider_util.h"

/* Default cap on one image, in bytes of base64 (an answer's image or an input image). */
#define SB_IMAGE_MAX_B64 (20u * 1024u * 1024u)
/* Most input images of one edit (OpenAI's limit). */
#define SB_IMAGE_MAX_INPUTS 16
/* Most base64 bytes of all input images and the mask of one request together. */
#define SB_IMAGE_MAX_INPUT_TOTAL (64u * 1024u * 1024u)
/* Longest prompt sent, in bytes. */
#define SB_IMAGE_MAX_PROMPT (128u * 1024u)
/* partial_images goes from 0 to this (OpenAI's range). */
#define SB_IMAGE_MAX_PARTIALS 3
/* Longest upstream text kept in an error message or in an image's text. */
#define SB_IMAGE_MESSAGE_MAX 1024

/* ---- image bytes ----------------------------------------------------------------------------- */

enum sb_image_format {
    SB_IMAGE_NONE = 0, /* not an image this module takes */
    SB_IMAGE_PNG,
    SB_IMAGE_JPEG,
    SB_IMAGE_WEBP,
};

/* What the first bytes of an image say it is (PNG signature, JPEG SOI
 * marker FF D8 FF, RIFF....WEBP); len may be the whole image or a prefix. */
enum sb_image_format sb_image_sniff(const void *bytes, size_t len);
/* "png", "jpeg", "webp" (OpenAI's output_format values); NULL for NONE. */
const char *sb_image_format_name(enum sb_image_format f);
/* "image/png", "image/jpeg", "image/webp"; NULL for NONE. */
const char *sb_image_format_mime(enum sb_image_format f);

/*
 * Whether b64[0..len) is an image: standard padded base64 (no line breaks)
 * of at most max bytes of text (0: SB_IMAGE_MAX_B64) whose decoded bytes
 * start with a known magic. Decodes only the first bytes (the check costs
 * no allocation). 0 with *fmt set (fmt may be NULL), -E2BIG over max,
 * -EINVAL not base64, -EMEDIUMTYPE base64 of something else.
 */
int sb_image_check_b64(const char *b64, size_t len, size_t max, enum sb_image_format *fmt)
    __attribute__((warn_unused_result));

/*
 * An input image as the loop holds it: a base64 data URL
 * ("data:<any type>;base64,<payload>", the type as written is ignored: the
 * bytes say what it is) or bare base64 (an earlier image_generation_call's
 * result). *b64 and *len borrow the base64 from s. Same codes as
 * sb_image_check_b64; -EINVAL also for a data URL that is not base64 or any
 * other URL (an http(s) URL or a file id must be resolved to bytes by the
 * caller).
 */
int sb_image_input(const char *s, size_t max, const char **b64, size_t *len, enum sb_image_format *fmt)
    __attribute__((warn_unused_result));

/* ---- the request --------------------------------------------------------------------------- */

/* One image to make. Everything is borrowed for the call of sb_image_build only. */
typedef struct sb_image_call {
    /* The image route: {"provider","base_url","upstream_model","credential_ref"} (as a
     * job's route, sb_job.h). upstream_model names the model; without one, tool.model. */
    const json_t *route;
    /* The request's {"type":"image_generation", model, size, quality, output_format,
     * output_compression, background, moderation, partial_images, input_fidelity,
     * input_image_mask, action}; NULL: all defaults. A null field is an absent one. */
    const json_t *tool;
    const char *prompt;        /* what the model asked for; required, not empty */
    const char *const *images; /* input images (sb_image_input forms), the one to edit first; may be NULL */
    size_t n_images;
    /* The mask, resolved by the caller (sb_image_input forms), or NULL: then
     * tool.input_image_mask.image_url when that is a data URL. A mask given
     * only by file_id must be resolved here (-EINVAL otherwise). Used only
     * when the request edits (OpenAI). */
    const char *mask;
    /* The loop will show partial images (the client's response streams):
     * only then are partial_images asked for and the answer streamed. */
    bool partials;
    size_t max_b64; /* cap per input image, in base64 bytes; 0: SB_IMAGE_MAX_B64 */
} sb_image_call_t;

enum sb_image_api {
    SB_IMAGE_API_OPENAI = 1, /* the Images API */
    SB_IMAGE_API_GEMINI,     /* generateContent */
};

/* A built request. Zero it before sb_image_build; clear it with sb_image_req_clear. */
typedef struct sb_image_req {
    /* Owned. Always a POST of body (body_len bytes; JSON text NUL-terminated,
     * or a multipart body holding binary bytes), ready for sb_upstream_start.
     * headers may hold the route's credential: never log them. */
    sb_provider_request_t http;
    enum sb_image_api api;
    bool edit;          /* OpenAI: /images/edits (input images); Gemini: the prompt came with images */
    bool stream;        /* the answer will be an event stream with partial images */
    int partial_images; /* partial images asked for (0 unless stream) */
} sb_image_req_t;

/*
 * Builds the upstream request. Returns 0 with *out filled, or a negative
 * code with a short message in why (no secret, no image bytes; always set):
 *   -ENOTSUP  the route's provider has no image generation (anthropic,
 *             unknown kinds): the loop makes that a tool error
 *   -EINVAL   the route lacks base_url or a model; a tool field of the wrong
 *             type or out of range (output_compression 0-100,
 *             partial_images 0-3, action generate|edit|auto); an empty
 *             prompt; action "edit" without an input image; an input
 *             image or mask that is not base64 of a PNG, JPEG or WEBP
 *             image (-EMEDIUMTYPE is reported as -EINVAL here)
 *   -E2BIG    a prompt, an image, the images together, or their number over the caps
 *   -ENOENT   the route's credential_ref names no usable environment variable
 * action "generate" ignores the input images; "edit" and "auto" (the
 * default) edit when there are any. On failure *out is cleared.
 */
int sb_image_build(const sb_image_call_t *call, sb_image_req_t *out, char *why, size_t why_len)
    __attribute__((warn_unused_result));
/* Frees what *r owns and zeroes it; safe on a zeroed one. */
void sb_image_req_clear(sb_image_req_t *r);

/* The Gemini aspect ratio ("16:9", ...) nearest to size "WxH" within 3%, or
 * NULL ("auto", anything else, a ratio too far from all of Gemini's). */
const char *sb_image_aspect_ratio(const char *size);

/* ---- the answer ------------------------------------------------------------------------------ */

/*
 * The parser appends JSON objects (new references) to the caller's events
 * array, in order:
 *
 *   {"type":"partial_image", "partial_image_index": n (0-based), "b64": "...",
 *    "output_format": "png"|"jpeg"|"webp", "mime": "image/...",
 *    "background"?, "quality"?, "size"?}
 *       OpenAI streams only; at most req->partial_images of them, each before
 *       the image. output_format and mime are what the bytes are.
 *   {"type":"image", "b64": "...", "output_format", "mime",
 *    "background"?, "quality"?, "size"?         (as the upstream says it made them)
 *    "revised_prompt"?                          (OpenAI data[0].revised_prompt)
 *    "text"?                                    (Gemini: the model's text parts, joined, cut
 *                                                to SB_IMAGE_MESSAGE_MAX bytes)
 *    "usage"?: {"input_tokens","output_tokens","total_tokens",
 *               "input_tokens_details"?:{"image_tokens","text_tokens"},
 *               "output_tokens_details"?:{...}}} (integers only; Gemini's
 *                                                 usageMetadata mapped to these)
 *   {"type":"error", "status": n, "message": "...", "code"?, "operator_detail"?}
 *       status: the upstream's HTTP status when it was not 2xx, else 502 (a
 *       2xx answer without a usable image: malformed, cut short, not an
 *       image, over the cap, an error event in the stream, refused by
 *       Gemini's safety settings). message: the upstream's own message
 *       (scrubbed, cut to SB_IMAGE_MESSAGE_MAX bytes) or the gateway's
 *       words; fit for the model and the client. code: the upstream's
 *       error.code (OpenAI, e.g. "moderation_blocked") or error.status
 *       (Gemini), or "blocked" for a Gemini safety block. On a 401 or 403 the
 *       message is generic (the route's credential failed: the operator's
 *       problem) and operator_detail holds the upstream's words (scrubbed),
 *       for the worker's log only.
 *
 * Exactly one outcome ("image" or "error") is appended over the parser's
 * life, always last; the b64 strings are the upstream's JSON strings (no
 * copy of the image is made).
 */
#define SB_IMAGE_EV_PARTIAL "partial_image"
#define SB_IMAGE_EV_IMAGE "image"
#define SB_IMAGE_EV_ERROR "error"

typedef struct sb_image_parser sb_image_parser_t;

/* A parser for the answer to req (read, not kept) on route (its
 * credential_ref is copied, for scrubbing). max_b64: cap on one image of the
 * answer (0: SB_IMAGE_MAX_B64); a JSON answer may be up to 2 x max_b64 +
 * 1 MiB, an error body is read up to 1 MiB. Never NULL. */
sb_image_parser_t *sb_image_parser_new(const sb_image_req_t *req, const json_t *route, size_t max_b64);
/* NULL-safe; sets *p to NULL. Any time (a transfer that failed or was
 * cancelled need not be finished). */
void sb_image_parser_destroy(sb_image_parser_t **p);

/*
 * Body bytes as they arrive; status is the response's HTTP status (the
 * first feed's counts). May append partial images and the outcome. Returns
 * 1 once the outcome is appended (later bytes are ignored: the caller may
 * stop the transfer), else 0.
 */
int sb_image_parser_feed(sb_image_parser_t *p, long status, const char *data, size_t len, json_t *events);
/*
 * The body is complete (status as for feed; used when no byte came). Appends
 * the outcome unless a feed did; an answer that ended before its image is
 * an error. Call at most once; no feed after it.
 */
void sb_image_parser_finish(sb_image_parser_t *p, long status, json_t *events);

/* A whole answer at once: new, one feed, finish, destroy. */
void sb_image_parse(const sb_image_req_t *req, const json_t *route, size_t max_b64, long status, const char *body,
                    size_t len, json_t *events);

#endif
