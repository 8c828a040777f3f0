/*
 * wtool_image_multipart: the multipart/form-data body of an image edit
 * (OpenAI's POST /images/edits takes its images and mask as file parts, the
 * other settings as plain fields). The boundary is random and checked
 * against every part's bytes: the prompt is a model's text and the images
 * are a client's bytes, so a fixed boundary could be planted in either to
 * split the body into parts of someone else's choosing.
 */
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "sb_alloc.h"
#include "sb_buf.h"
#include "wtool_image_internal.h"

/* Draws a boundary: "sb-image-" and 32 hex digits of random bytes. When the
 * kernel has no randomness to give (it always has, after boot), a counter
 * stands in; the check against the parts still holds. */
static void sb_image_boundary_draw(char out[SB_IMAGE_BOUNDARY_MAX + 1])
{
    static uint64_t fallback;
    unsigned char r[16];
    if (getrandom(r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
        uint64_t c = ++fallback * 0x9e3779b97f4a7c15ull;
        for (size_t i = 0; i < sizeof r; i++)
            r[i] = (unsigned char)(c >> ((i % 8) * 8)) ^ (unsigned char)i;
    }
    static const char pre[] = "sb-image-";
    memcpy(out, pre, sizeof pre - 1);
    char *p = out + sizeof pre - 1;
    for (size_t i = 0; i < sizeof r; i++) {
        *p++ = "0123456789abcdef"[r[i] >> 4];
        *p++ = "0123456789abcdef"[r[i] & 15];
    }
    *p = '\0';
}

static int sb_image_boundary_in(const sb_image_part_t *parts, size_t n, const char *b)
{
    size_t bl = strlen(b);
    for (size_t i = 0; i < n; i++)
        if (parts[i].len >= bl && memmem(parts[i].data, parts[i].len, b, bl))
            return 1;
    return 0;
}

static void sb_image_add_str(sb_buf_t *out, const char *s)
{
    sb_buf_add(out, s, strlen(s));
}

void sb_image_multipart(const sb_image_part_t *parts, size_t n, char **body, size_t *len,
                        char boundary[SB_IMAGE_BOUNDARY_MAX + 1])
{
    do
        sb_image_boundary_draw(boundary);
    while (sb_image_boundary_in(parts, n, boundary));

    sb_buf_t out = {0};
    for (size_t i = 0; i < n; i++) {
        const sb_image_part_t *p = &parts[i];
        sb_image_add_str(&out, "--");
        sb_image_add_str(&out, boundary);
        sb_image_add_str(&out, "\r\nContent-Disposition: form-data; name=\"");
        sb_image_add_str(&out, p->name);
        sb_image_add_str(&out, "\"");
        if (p->filename) {
            sb_image_add_str(&out, "; filename=\"");
            sb_image_add_str(&out, p->filename);
            sb_image_add_str(&out, "\"");
        }
        sb_image_add_str(&out, "\r\n");
        if (p->content_type) {
            sb_image_add_str(&out, "Content-Type: ");
            sb_image_add_str(&out, p->content_type);
            sb_image_add_str(&out, "\r\n");
        }
        sb_image_add_str(&out, "\r\n");
        if (p->len)
            sb_buf_add(&out, p->data, p->len);
        sb_image_add_str(&out, "\r\n");
    }
    sb_image_add_str(&out, "--");
    sb_image_add_str(&out, boundary);
    sb_image_add_str(&out, "--\r\n");
    *body = out.p;
    *len = out.len;
}
