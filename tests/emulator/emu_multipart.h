/*
 * emu_multipart: the emulator's own reader of multipart/form-data bodies
 * (RFC 7578), for the Images API's edits, which are uploads. It is written
 * apart from the gateway's parser on purpose: the emulator is the tests'
 * oracle, and a bug shared by the two would hide itself.
 *
 * One pass over the body in memory: each part's data is a slice of the body
 * (borrowed), ending where "\r\n--<boundary>" starts. A part needs a
 * Content-Disposition of form-data with a name; its filename (present, even
 * empty, marks a file part) and Content-Type are kept. Header lines end in
 * CRLF or LF. What does not parse is refused with a short reason; nothing is
 * read outside the body (tests/fuzz/fuzz_emu_upload.c).
 */
#ifndef SB_EMU_MULTIPART_H
#define SB_EMU_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#define SB_EMU_MULTIPART_MAX_PARTS 64
#define SB_EMU_MULTIPART_NAME_MAX 128

struct sb_emu_part {
    char name[SB_EMU_MULTIPART_NAME_MAX]; /* form field name (non-empty) */
    char filename[256];                   /* the filename parameter ("" when absent or empty) */
    bool is_file;                         /* a filename parameter was given */
    char content_type[128];               /* the part's Content-Type, "" when absent */
    const unsigned char *data;            /* borrowed from the body */
    size_t len;
};

/* The boundary of a Content-Type header value "multipart/form-data; boundary=..." (token or quoted) into out
 * (at least 71 bytes). 0, or -EINVAL when the type is not multipart/form-data or has no valid boundary. */
int sb_emu_multipart_boundary(const char *content_type, char *out, size_t outlen) __attribute__((warn_unused_result));

/*
 * Parses body[0..len) into parts[0..*n) (at most max). 0, or -EINVAL with a
 * reason in err (the body does not open with the boundary, a part's headers
 * are malformed or lack a name, the closing delimiter is missing, too many
 * parts).
 */
int sb_emu_multipart_parse(const unsigned char *body, size_t len, const char *boundary, struct sb_emu_part *parts,
                           size_t max, size_t *n, char *err, size_t errlen) __attribute__((warn_unused_result));

#endif
