/*
 * wtool_image_internal: what the image tool's files share besides the
 * public API (wtool_image.h): the multipart/form-data writer the edit
 * request is made with (wtool_image_multipart.c), exported for its unit
 * test.
 */
#ifndef WTOOL_IMAGE_INTERNAL_H
#define WTOOL_IMAGE_INTERNAL_H

#include <stddef.h>

/* One part of a multipart/form-data body. Everything borrowed. */
typedef struct sb_image_part {
    const char *name;         /* the form field ([A-Za-z0-9_[]-] only: it is written unquoted-safe) */
    const char *filename;     /* a file part's name (same characters), or NULL for a plain field */
    const char *content_type; /* a file part's type, or NULL */
    const char *data;         /* the part's bytes (any bytes) */
    size_t len;
} sb_image_part_t;

/* Longest boundary the writer makes (RFC 2046 allows 70). */
#define SB_IMAGE_BOUNDARY_MAX 48

/*
 * Writes the parts as one multipart/form-data body (RFC 7578: CRLF line
 * ends, "--boundary" delimiters, a closing "--boundary--"), with a boundary
 * that occurs in no part's bytes (random, checked, drawn again when it
 * does). *body (malloc'd; NUL-terminated after *len bytes, which may hold
 * NUL bytes) and boundary (NUL-terminated, SB_IMAGE_BOUNDARY_MAX + 1 bytes)
 * are set. Cannot fail (aborts on out of memory).
 */
void sb_image_multipart(const sb_image_part_t *parts, size_t n, char **body, size_t *len,
                        char boundary[SB_IMAGE_BOUNDARY_MAX + 1]);

#endif
