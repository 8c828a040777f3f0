/*
 * fe_router: path matching: maps method + path to a route of a table (the
 * table naming every endpoint is frontend/fe_routes.c; the server hands it
 * to each request). A path that matches nothing (e.g. a base address given
 * with the endpoint path twice, /v1/chat/completions/v1/chat/completions)
 * is a 404, one that matches with another method a 405.
 */
#ifndef FE_ROUTER_H
#define FE_ROUTER_H

#include <stdbool.h>
#include <stddef.h>

#include "fe_request.h"
#include "sb_http.h"

typedef struct fe_route {
    const char *method;      /* "GET", "POST", "DELETE" */
    const char *pattern;     /* exact path; each "{}" stands for one id segment */
    const fe_style_t *style; /* its errors' and its reply's style */
    fe_endpoint_fn fn;
    /* For a path two APIs share (/v1/models): the style of this request
     * (style is its default). NULL: always style. */
    const fe_style_t *(*style_of)(sb_http_req_t *http, const fe_style_t *dflt);
    bool file_body; /* the body is a file upload: up to max_file_bytes plus multipart framing */
} fe_route_t;

/* Which style's error body a path gets when no route matched: the first
 * entry whose prefix starts it; the last entry's prefix is "" (any path). */
typedef struct fe_route_prefix {
    const char *prefix;
    const fe_style_t *style;
} fe_route_prefix_t;

typedef struct fe_route_table {
    const fe_route_t *routes;
    size_t n_routes;
    const fe_route_prefix_t *prefixes;
    size_t n_prefixes;
} fe_route_table_t;

enum fe_route_match { FE_ROUTE_OK, FE_ROUTE_NO_PATH, FE_ROUTE_BAD_METHOD };

/* On FE_ROUTE_OK sets *route (borrowed from t) and *arg (a new string or
 * NULL). */
enum fe_route_match fe_router_match(const fe_route_table_t *t, const char *method, const char *path,
                                    const fe_route_t **route, char **arg);

/* The k-th (0-based) "{}" segment of path, which rt matched, into buf: 0,
 * or -1 when there is none or it does not fit. Routes with two ids
 * (/v1/vector_stores/{}/files/{}) read the second this way; the first is
 * also the request's path_arg. */
int fe_router_path_arg(const fe_route_t *rt, const char *path, int k, char *buf, size_t len);

/* The style whose error body a path gets when no route matched. */
const fe_style_t *fe_router_style_for_path(const fe_route_table_t *t, const char *path);

#endif
