/*
 * sb_http_lines: the HTTP/1.x response-head pieces both benchmark clients
 * parse (sb-load's response framer, sb-stream's body decoder): lines,
 * header names and tokens, the status line, Content-Length. Bytes come from
 * the server under test: nothing asserts, malformed input is an error.
 */
#ifndef SB_HTTP_LINES_H
#define SB_HTTP_LINES_H

#include <event2/buffer.h>
#include <stdbool.h>

/* Longest line accepted in a response head. */
#define SB_HTTP_LINE_MAX (64 * 1024)

/* Next CRLF (or LF) line (malloc'd), or NULL: none complete yet, with *err
 * set when the pending line is already too long. */
char *sb_http_read_line(struct evbuffer *in, bool *err);

/* Whether line is header `name` (any case); *value then points past the
 * colon and blanks. */
bool sb_http_header_is(const char *line, const char *name, const char **value);

/* Whether value contains token (any case). */
bool sb_http_has_token(const char *value, const char *token);

/* "HTTP/1.x NNN ..." -> *status and *http10. 0, or -EINVAL. */
int sb_http_status_line(const char *line, int *status, bool *http10);

/* A Content-Length value -> *n. 0, or -EINVAL. */
int sb_http_content_length(const char *value, long long *n);

#endif
