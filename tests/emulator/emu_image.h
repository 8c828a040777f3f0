/*
 * emu_image: the emulator's image generation. emu_picture.c draws the small
 * deterministic pictures and writes them as PNG, JPEG or WebP;
 * emu_image_sniff.c recognises the images a request uploads (type, size,
 * alpha); emu_images.c serves OpenAI's Images API (POST /v1/images/generations
 * and /v1/images/edits, with emu_images_check.c validating them) and
 * emu_gemini_image.c puts an image part into the answers of Gemini's image
 * models.
 *
 * Every picture is a grid of 8x8 blocks (16x16 pixels for a square image,
 * 24x16 or 16x24 for the wide and tall sizes): the first `filled` blocks, in
 * raster order, are painted the foreground colour and the others the
 * background. The foreground colour is a hash of what the image was made
 * from (the prompt; for an edit also every input image's bytes), so a test
 * can tell an edit from a fresh generation and one prompt from another; a
 * final image has every block filled and a partial image fewer, so the two
 * always differ. PNGs carry the prompt and what was done in tEXt chunks
 * ("Description", "Comment"), JPEGs in a COM segment.
 */
#ifndef SB_EMU_IMAGE_H
#define SB_EMU_IMAGE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sb_emu_call;

enum sb_emu_image_format {
    SB_EMU_IMAGE_NONE, /* not an image the emulator recognises */
    SB_EMU_IMAGE_PNG,
    SB_EMU_IMAGE_JPEG,
    SB_EMU_IMAGE_WEBP,
};

#define SB_EMU_PICTURE_BLOCK 8
#define SB_EMU_PICTURE_MAX 64 /* largest side in pixels */

struct sb_emu_picture {
    unsigned w, h;       /* pixels: multiples of SB_EMU_PICTURE_BLOCK, at most SB_EMU_PICTURE_MAX */
    unsigned char fg[4]; /* RGBA of the filled blocks */
    unsigned char bg[4]; /* RGBA of the others (alpha 0: a transparent background) */
    unsigned filled;     /* blocks painted fg, in raster order */
    const char *desc;    /* borrowed, may be NULL: PNG tEXt "Description", JPEG comment (the prompt) */
    const char *comment; /* borrowed, may be NULL: PNG tEXt "Comment" (what was done) */
};

/* A 64-bit hash of bytes, chained from seed (FNV-1a then a splitmix64 round); stable across runs and machines. */
uint64_t sb_emu_image_hash(const void *data, size_t len, uint64_t seed);
/* A picture of w x h pixels, fully filled with the colour of seed on an opaque grey (or transparent) background. */
void sb_emu_picture_init(struct sb_emu_picture *p, unsigned w, unsigned h, uint64_t seed, bool transparent);
/* Blocks in the picture. */
unsigned sb_emu_picture_blocks(const struct sb_emu_picture *p);
/* The picture in format (not NONE); owned bytes, length in *len. JPEG has no alpha: it is dropped. */
unsigned char *sb_emu_picture_encode(const struct sb_emu_picture *p, enum sb_emu_image_format format, size_t *len);

/* The type of an uploaded image, by its signature; its size and whether it has alpha when those can be read
 * (else 0 and false). Reads at most len bytes. */
enum sb_emu_image_format sb_emu_image_sniff(const unsigned char *data, size_t len, unsigned *w, unsigned *h,
                                            bool *alpha);
/* "image/png", "image/jpeg", "image/webp", or NULL for NONE. */
const char *sb_emu_image_mime(enum sb_emu_image_format f);

/* POST /v1/images/generations (edit false) and /v1/images/edits (edit true): emu_images.c. */
void sb_emu_images_handle(struct sb_emu_call *call, bool edit);

struct sb_emu_part;

/* An Images API request once checked (emu_images_check.c): "auto" and defaults resolved as the reply reports them. */
struct sb_emu_images_req {
    bool edit;
    const char *model;      /* borrowed from the parameters */
    const char *prompt;     /* borrowed */
    int n;                  /* 1..10 */
    const char *size;       /* "1024x1024", "1536x1024", "1024x1536", or gpt-image-2's WxH (borrowed or static) */
    unsigned w, h;          /* the size's pixels */
    const char *quality;    /* "low", "medium", "high" */
    const char *background; /* "transparent", "opaque" */
    const char *format;     /* "png", "jpeg", "webp" */
    enum sb_emu_image_format image_format;
    int partial_images; /* 0..3 */
    bool stream;
    size_t ninputs;      /* edits: the input images */
    uint64_t input_hash; /* edits: a hash of every input image's bytes and the mask's, in order */
};

/*
 * Validates the parameters (a generations body, or an edit's text fields
 * typed: integers and booleans read from their text) and, for an edit, its
 * file parts, as the real API does; fills *out. False after the 400.
 */
bool sb_emu_images_check(struct sb_emu_call *call, const json_t *params, const struct sb_emu_part *parts, size_t nparts,
                         bool edit, struct sb_emu_images_req *out);

/*
 * Gemini's image models (emu_gemini_image.c). A model whose name contains
 * "image" answers with an image; sb_emu_gemini_image_check refuses IMAGE in
 * generationConfig.responseModalities for any other model, and checks
 * imageConfig (false after the 400). sb_emu_gemini_image_wanted says whether
 * the answer carries an image and, in *text, whether it carries text too.
 */
bool sb_emu_gemini_image_check(struct sb_emu_call *call, const char *model, const json_t *req);
bool sb_emu_gemini_image_wanted(const char *model, const json_t *req, bool *text);
/* The inlineData part of the answer: an image of the request's last user text (clean, without directives) and of
 * every inline image in its contents; a new reference. */
json_t *sb_emu_gemini_image_part(const json_t *req, const char *clean);
/* Output tokens Gemini counts for one generated image. */
#define SB_EMU_GEMINI_IMAGE_TOKENS 1290

#endif
