/*
 * sb_dataurl: splitting a data URL (RFC 2397), "data:<mime>[;param=v...]
 * [;base64],<payload>", as clients send images and files inline. The split
 * is all this does: whether the URL must be base64, which MIME types are
 * welcome, and what the payload must decode to, is each caller's policy
 * (sb_base64 checks or decodes the payload).
 *
 * The scheme and the ";base64" marker are matched without regard to case
 * (as browsers and the upstreams read them); the metadata ends at the first
 * comma (RFC 2397: a comma cannot be part of it), so the payload is all that
 * follows it. Every pointer in the result borrows from the URL.
 */
#ifndef SB_DATAURL_H
#define SB_DATAURL_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sb_dataurl {
    const char *mime; /* the media type as written, up to the first ';' or ',' ("" when none) */
    size_t mime_len;
    const char *params; /* ";a=b;c=d" between the type and ";base64" or the comma ("" when none) */
    size_t params_len;
    bool base64;         /* the metadata ends in ";base64" */
    const char *payload; /* everything after the first comma (NUL-terminated, as url is) */
    size_t payload_len;
} sb_dataurl_t;

/* Splits url (NUL-terminated). Returns 0, or -EINVAL when it is not a data
 * URL ("data:" at the start, a comma after it). */
int sb_dataurl_parse(const char *url, sb_dataurl_t *out) __attribute__((warn_unused_result));

/* The media type lower-cased into out (size bytes). Returns 0, or
 * -ENAMETOOLONG with out "" when it does not fit. */
int sb_dataurl_mime(const sb_dataurl_t *u, char *out, size_t size);

/* Whether the media type starts with prefix, ignoring case ("" always). */
bool sb_dataurl_mime_is(const sb_dataurl_t *u, const char *prefix);

#endif
