/*
 * wtool_web_internal: what the web tool's files share (wtool_web.c, the
 * requests; wtool_web_parse.c, the backends' answers; wtool_html.c, pages):
 * how much a search_context_size lets through, and text helpers.
 */
#ifndef WTOOL_WEB_INTERNAL_H
#define WTOOL_WEB_INTERNAL_H

#include <jansson.h>
#include <stddef.h>

/* What search_context_size ("low", "medium" (the default), "high") means. */
struct sb_web_sizes {
    size_t results;     /* results given to the model */
    size_t snippet_max; /* bytes of each result's snippet */
    size_t page_max;    /* bytes of an opened page's text (and of a find_in_page answer) */
};

/* The callbacks' errors that sb_web_outcome tells apart. */
#define SB_WEB_ERR_TIMEOUT_SEARCH "search backend timed out"
#define SB_WEB_ERR_TIMEOUT_PAGE "page timed out"
#define SB_WEB_ERR_BLOCKED "blocked: the page's address is not allowed"

void sb_web_sizes_of(const json_t *tool, struct sb_web_sizes *out);

/* The longest prefix of s[0..len) of at most max bytes that does not split a
 * UTF-8 sequence. */
size_t sb_web_utf8_prefix(const char *s, size_t len, size_t max);

/* The host of an http(s) URL, lower-cased, without port, brackets or a
 * trailing dot, into host (NUL-terminated). 0, or -EINVAL when url is not
 * an http(s) URL with a host that fits. */
int sb_web_url_host(const char *url, char *host, size_t host_len);

#endif
