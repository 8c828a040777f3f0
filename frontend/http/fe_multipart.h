/*
 * fe_multipart: a strict, bounded multipart/form-data parser (RFC 7578 on top
 * of RFC 2046 section 5.1) for uploads such as OpenAI's POST /v1/files
 * (fields "purpose" and "file").
 *
 * The whole body is already in memory (sb_http buffers it, capped by the
 * server's body limit), so the parser is a single pass over one buffer: each
 * part's data is located with memmem() for "\r\n--boundary" and returned as a
 * borrowed slice of that buffer; only the small per-part header values are
 * copied. Work is linear in the body size; part count and header block size
 * are bounded.
 *
 * What is accepted, and why:
 *  - Delimiters follow RFC 2046: "--boundary" at the start of the body or
 *    after CRLF, then optional spaces/tabs, then a line end; "--boundary--"
 *    closes. A delimiter that ends a part's data must be preceded by CRLF:
 *    binary data may legitimately contain "\n--boundary", so a bare LF there
 *    would be ambiguous and is treated as data. A line that starts with
 *    "--boundary" but continues with anything else is malformed (RFC 2046
 *    says the boundary need only appear in full after CRLF), and is rejected
 *    rather than silently read as data, so that two parsers cannot disagree
 *    about where a part ends.
 *  - Inside a part's header block (and at the end of the delimiter line that
 *    opens it) a bare LF is accepted as a line end as well as CRLF. This is
 *    unambiguous: header bytes may not contain CR or LF otherwise (a bare CR
 *    is rejected), and the block ends at the first empty line. If that empty
 *    line is a bare LF and "--boundary" follows at once, the body is refused
 *    (it is neither a delimiter, which needs CRLF, nor allowed as data).
 *  - Preamble and epilogue are ignored. A body with zero parts is rejected.
 *  - Each part needs exactly one "Content-Disposition: form-data" with a
 *    non-empty name. Content-Type appears at most once. Content-Transfer-
 *    Encoding (deprecated by RFC 7578) is accepted only as 7bit/8bit/binary.
 *    Other headers are ignored. Header lines need a token name and ':'; folded
 *    (obs-fold) lines and control characters are rejected.
 *  - Parameter values may be tokens or quoted-strings (backslash escapes
 *    honoured). filename*=UTF-8''percent-encoded (RFC 8187) is accepted and
 *    wins over filename, although RFC 7578 says senders must not use it.
 *    WHATWG-style %22/%0D/%0A escapes in plain filename="..." are NOT decoded:
 *    the receiver cannot tell them from a literal '%'. Returned strings are
 *    valid UTF-8 without control characters (content_type may hold a tab),
 *    so they are safe to put in JSON; but a filename is whatever the client
 *    sent: never use it as a path.
 *  - Several parts may share a name (HTML forms allow it); fe_multipart_get
 *    returns the first, and a caller that needs uniqueness checks mp->parts.
 */
#ifndef FE_MULTIPART_H
#define FE_MULTIPART_H

#include <stddef.h>

/* RFC 2046: a boundary is 1..70 characters. */
#define FE_MULTIPART_BOUNDARY_MAX 70
/* Largest header block accepted for one part (delimiter line excluded). */
#define FE_MULTIPART_HEADER_MAX 8192

typedef struct fe_multipart_part {
    char *name;                /* Content-Disposition name (owned, non-empty) */
    char *filename;            /* filename* (decoded) or filename, or NULL (owned) */
    char *content_type;        /* the part's Content-Type value, trimmed, or NULL (owned) */
    const unsigned char *data; /* the part's data, inside the parsed body (borrowed) */
    size_t len;
} fe_multipart_part_t;

typedef struct fe_multipart {
    fe_multipart_part_t *parts; /* owned array of n parts, in body order */
    size_t n;
} fe_multipart_t;

/*
 * Extracts the boundary parameter from a Content-Type header value such as
 * "multipart/form-data; boundary=abc" (type and parameter names compared
 * case-insensitively; value a token or a quoted-string). The media type must
 * be multipart/form-data and the boundary must be a valid RFC 2046 boundary.
 * out receives it NUL-terminated; outsz must be at least its length + 1
 * (FE_MULTIPART_BOUNDARY_MAX + 1 always suffices). Returns 0 or -EINVAL.
 */
int fe_multipart_boundary(const char *content_type, char *out, size_t outsz) __attribute__((warn_unused_result));

/*
 * Parses body[0..len) with the given boundary (without the leading "--").
 * *mp is overwritten (clear any previous result first); on success it holds
 * the parts, whose data point into body, so body must outlive *mp. At most
 * max_parts parts are accepted. Returns 0, or -EINVAL with *mp empty and a
 * short human-readable reason in err (when err and errsz are non-zero),
 * suitable for a 400 message. Never reads outside body.
 */
int fe_multipart_parse(const unsigned char *body, size_t len, const char *boundary, size_t max_parts,
                       fe_multipart_t *mp, char *err, size_t errsz) __attribute__((warn_unused_result));

/* Frees what parse allocated and empties *mp. NULL-safe, idempotent. */
void fe_multipart_clear(fe_multipart_t *mp);

/* The first part named name, or NULL (borrowed from mp). */
const fe_multipart_part_t *fe_multipart_get(const fe_multipart_t *mp, const char *name);

#endif
