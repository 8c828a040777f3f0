/*
 * sb_http_parse: strict HTTP/1.1 request framing (RFC 9110, RFC 9112) over
 * plain bytes, with no I/O: where a request head ends, what it says, and the
 * chunked body decoder. sb_http feeds it a connection's bytes; the libFuzzer
 * harness (tests/fuzz/fuzz_http.c) feeds it anything.
 *
 * Strict means a request is refused, never guessed at, where two readers of
 * the same bytes could disagree about where it ends (request smuggling) or
 * what it says:
 *   - line ends are CRLF; a bare LF or CR is 400;
 *   - a header line starting with whitespace (obs-fold), a field name that is
 *     empty or not a token, whitespace before the colon, a control character
 *     (NUL included) in a value: 400;
 *   - Content-Length: digits only; repeated (as headers or as a list) with
 *     different values: 400; with Transfer-Encoding: 400;
 *   - Transfer-Encoding: only "chunked" alone is understood; chunked not
 *     last ("chunked, identity"): 400; another coding: 501; in HTTP/1.0: 400;
 *   - Host: exactly one in HTTP/1.1 (none or two: 400);
 *   - HTTP versions other than 1.0 and 1.1: 505; an unknown method: 501;
 *   - Expect: only "100-continue"; anything else 417;
 *   - the request line plus headers over the ceiling, or over
 *     SB_HTTP_MAX_FIELDS fields: 431, decided as soon as the bytes say so.
 * Chunk extensions (";name=value") are valid and skipped; trailer fields are
 * checked as headers and dropped.
 */
#ifndef SB_HTTP_PARSE_H
#define SB_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define SB_HTTP_MAX_FIELDS 128
#define SB_HTTP_CHUNK_LINE_MAX 4096 /* a chunk-size line with its extensions */

/* Why a request is refused: the HTTP status, a machine code and a sentence. */
typedef struct {
    int status;
    const char *code;    /* e.g. "bad_request_framing", "headers_too_large" */
    const char *message; /* static text */
} sb_http_err_t;

typedef enum {
    SB_HTTP_M_GET,
    SB_HTTP_M_POST,
    SB_HTTP_M_PUT,
    SB_HTTP_M_DELETE,
    SB_HTTP_M_PATCH,
    SB_HTTP_M_HEAD,
    SB_HTTP_M_OPTIONS,
} sb_http_method_t;

typedef struct {
    const char *name, *value; /* into the parsed buffer; not NUL-terminated */
    size_t name_len, value_len;
} sb_http_field_t;

/* A parsed request head; every pointer is into the buffer given to
 * sb_http_head_parse. */
typedef struct {
    sb_http_method_t method;
    const char *method_name; /* "GET", ... (static) */
    const char *target;      /* the path and query as sent (absolute-form reduced to them) */
    size_t target_len;
    int minor; /* HTTP/1.minor: 0 or 1 */
    sb_http_field_t fields[SB_HTTP_MAX_FIELDS];
    size_t nfields;
    bool has_length;      /* Content-Length given */
    uint64_t length;      /* its value (UINT64_MAX when it does not fit) */
    bool chunked;         /* Transfer-Encoding: chunked */
    bool keep_alive;      /* the connection may carry another request */
    bool expect_continue; /* Expect: 100-continue (HTTP/1.1) */
} sb_http_head_t;

/* Looks for the end of a request head in buf[0..len), starting at *scanned
 * (0 at first; updated, so each byte is looked at once). Returns the head's
 * length (through its blank line) when complete, 0 when more bytes are
 * needed, -1 with *err when the bytes are refused (a bare LF or CR: 400; no
 * end within max bytes: 431). */
ssize_t sb_http_head_end(const char *buf, size_t len, size_t max, size_t *scanned, sb_http_err_t *err);

/* Parses a complete head buf[0..len) as found by sb_http_head_end. 0, or -1
 * with *err. On failure h->target is still set when the request line was
 * readable (so the refusal can be answered in the path's style). */
int sb_http_head_parse(const char *buf, size_t len, sb_http_head_t *h, sb_http_err_t *err);

/* The target of a head that was refused before it was complete (too large,
 * a bare LF in a header): taken from its request line when that line is
 * complete and readable, so that the refusal is answered in the path's
 * style. 0 with h->target set, or -1. */
int sb_http_peek_target(const char *buf, size_t len, sb_http_head_t *h);

/* The value of the first field named name (case-insensitive), or NULL; *len
 * set. */
const char *sb_http_head_field(const sb_http_head_t *h, const char *name, size_t *len);

/* The path of a target (up to '?'), percent-decoded except for "%2F" (an
 * encoded slash stays encoded, so it can never act as a path separator) into
 * out (NUL-terminated). -1 when it does not fit, is not absolute, or decodes
 * to a NUL or a bad escape. */
int sb_http_target_path(const char *target, size_t len, char *out, size_t outlen);

/* The value of the first parameter called name in a query string (both
 * decoded: %XX, '+' as a space) into buf: 0, or -1 when absent, malformed or
 * longer than len - 1. */
int sb_http_query_get(const char *query, const char *name, char *buf, size_t len);

/* The chunked body decoder. */
typedef struct {
    int state;
    uint64_t left;   /* data bytes left in the current chunk */
    uint64_t total;  /* data bytes declared so far */
    uint64_t max;    /* refused (413) above this many */
    size_t line_len; /* bytes of the current chunk-size or trailer line */
    size_t trailer;  /* trailer bytes so far */
    size_t trailer_max;
    int digits; /* hex digits of the current size */
    int ext;    /* 1: whitespace after the size; 2: in the extensions */
    bool cr;    /* a CR was the last byte of the line */
} sb_http_chunked_t;

void sb_http_chunked_init(sb_http_chunked_t *c, uint64_t max, size_t trailer_max);

/* Feeds in[0..len). Data bytes are handed to sink as they are found. Sets
 * *used to the bytes consumed. Returns 1 when the body is complete (bytes
 * past *used belong to the next request), 0 when more are needed (all of in
 * was used), -1 with *err. */
int sb_http_chunked_feed(sb_http_chunked_t *c, const char *in, size_t len, size_t *used,
                         void (*sink)(void *arg, const char *data, size_t n), void *arg, sb_http_err_t *err);

#endif
