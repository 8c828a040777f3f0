/*
 * wtool_web: web search for the tool loop: a query to the deployment's
 * search backend (SearXNG's JSON API, Brave Search, Tavily; the job's
 * tools_config.web_search), and pages opened and searched for the model
 * (fetched through the SSRF guard, HTML turned into text with libxml2's
 * HTML parser, size and time bounded). Everything runs on the worker's
 * loop through sb_upstream_fetch; callbacks run exactly once, later.
 */
#ifndef WTOOL_WEB_H
#define WTOOL_WEB_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "upstream.h"

struct sb_ssrf;
typedef struct sb_web_op sb_web_op_t;

typedef struct sb_web_cfg {
    const json_t *backend; /* borrowed {"kind","base_url","credential_ref"} (tools_config.web_search) */
    const json_t *tool;    /* borrowed: the request's web_search tool (filters, user_location, search_context_size) */
    const struct sb_ssrf *guard; /* borrowed; for pages (the backend itself is the operator's) */
    int64_t timeout_ms;
    int64_t connect_timeout_ms;
    size_t max_bytes; /* most bytes read of one answer or page */
} sb_web_cfg_t;

/* A search's result: sources (new reference, array of {"type":"url","url","title"}),
 * text (malloc'd: what the model is given: numbered results with title, URL
 * and snippet, sized by search_context_size), error (NULL, or a short
 * message, borrowed). On error sources and text are NULL. sources and text
 * belong to the callback. */
typedef void (*sb_web_search_cb)(void *arg, json_t *sources, char *text, const char *error, size_t bytes_in);
/* An opened page (or a find_in_page): text (malloc'd; the page's text, or
 * the lines matching pattern with context; "pattern not found" when none
 * does, which is not an error), title (malloc'd or NULL), error (as above;
 * text and title NULL then). text and title belong to the callback. */
typedef void (*sb_web_page_cb)(void *arg, char *text, char *title, const char *error, size_t bytes_in);

/* cfg copied. 0, or a negative code with why set (no callback): no backend,
 * a missing credential, a URL the guard refuses. The callback runs exactly
 * once, later (never inside this call); *out stays valid until it returns
 * (the op frees itself then) or until sb_web_cancel. */
int sb_web_search(sb_upstream_t *up, const sb_web_cfg_t *cfg, const char *query, sb_web_search_cb cb, void *arg,
                  sb_web_op_t **out, char *why, size_t why_len) __attribute__((warn_unused_result));
/* pattern NULL: open_page; else find_in_page. The URL must be http(s), pass
 * cfg->guard (required: no guard, no page) and, when the tool has
 * filters.allowed_domains, be on one of them; external_web_access:false
 * refuses every page (-EPERM). Redirects (at most 5) are re-checked by the
 * guard. text/html (and xhtml) goes through sb_web_html_text, text/plain as
 * is; anything else is the error "unsupported content type". A page longer
 * than cfg->max_bytes is read up to that and used cut. */
int sb_web_page(sb_upstream_t *up, const sb_web_cfg_t *cfg, const char *url, const char *pattern, sb_web_page_cb cb,
                void *arg, sb_web_op_t **out, char *why, size_t why_len) __attribute__((warn_unused_result));
/* Cancels (no callback) and frees; NULL-safe. Not from inside its callback. */
void sb_web_cancel(sb_web_op_t **op);

/* The tool_log outcome an error of the callbacks stands for: "ok" (NULL),
 * "timeout", "blocked" (the SSRF guard refused an address or redirect), or
 * "error". */
const char *sb_web_outcome(const char *error);

/* Pure helpers, unit-tested and fuzzed: */
/* A backend's JSON answer -> sources array + text (allowed_domains applied). 0 or -EINVAL. */
int sb_web_parse_results(const char *kind, const char *body, size_t len, const json_t *tool, json_t **sources,
                         char **text) __attribute__((warn_unused_result));
/* HTML -> readable text (scripts, styles dropped; blocks become lines) and <title>. 0 or -EINVAL. */
int sb_web_html_text(const char *html, size_t len, char **text, char **title) __attribute__((warn_unused_result));
/* The same, with the charset the page's Content-Type names (NULL: from the
 * page itself; an unknown one is ignored). text is at most SB_WEB_HTML_TEXT_MAX bytes. */
#define SB_WEB_HTML_TEXT_MAX (512 * 1024)
int sb_web_html_text_enc(const char *html, size_t len, const char *encoding, char **text, char **title)
    __attribute__((warn_unused_result));
/* find_in_page on a page's text: the lines holding pattern (ASCII
 * case-insensitive), each with the line before and after, at most max_bytes
 * (malloc'd into *out). 0, -ENOENT when no line holds it, -EINVAL for an
 * empty pattern. */
int sb_web_find_in_text(const char *text, const char *pattern, size_t max_bytes, char **out)
    __attribute__((warn_unused_result));
/* Whether url's host passes the tool's filters: not one of
 * filters.blocked_domains (or a subdomain of one), and one of
 * filters.allowed_domains or a subdomain of one (when it has any). */
bool sb_web_url_allowed(const json_t *tool, const char *url);

#endif
