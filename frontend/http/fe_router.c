/* fe_router: path matching over a route table (see fe_router.h). */
#include "fe_router.h"

#include <string.h>

#include "sb_alloc.h"

/* A path argument is one segment of safe id characters, ending at '/', ':'
 * (Google's custom methods, models/{model}:generateContent) or the end;
 * returns its length. */
static size_t fe_router_arg_len(const char *s)
{
    size_t n = 0;
    for (; s[n] && s[n] != '/' && s[n] != ':'; n++) {
        char c = s[n];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return 0;
    }
    return n <= 128 ? n : 0;
}

/* Matches path against pattern, whose every "{}" takes one id segment; on
 * a match sets *arg_at and *arg_len to the first hole's segment (NULL, 0
 * when the pattern has none). A pattern may have several holes
 * (/v1/vector_stores/{}/files/{}): the later ones are read with
 * fe_router_path_arg. */
static bool fe_router_hit(const char *pattern, const char *path, const char **arg_at, size_t *arg_len)
{
    *arg_at = NULL;
    *arg_len = 0;
    for (;;) {
        const char *hole = strstr(pattern, "{}");
        if (!hole)
            return strcmp(pattern, path) == 0;
        size_t head = (size_t)(hole - pattern);
        if (strncmp(pattern, path, head) != 0)
            return false;
        size_t n = fe_router_arg_len(path + head);
        if (n == 0)
            return false;
        if (!*arg_at) {
            *arg_at = path + head;
            *arg_len = n;
        }
        pattern = hole + 2;
        path += head + n;
    }
}

int fe_router_path_arg(const fe_route_t *rt, const char *path, int k, char *buf, size_t len)
{
    const char *pattern = rt ? rt->pattern : NULL;
    if (!pattern || !path || k < 0 || len == 0)
        return -1;
    for (int i = 0;; i++) {
        const char *hole = strstr(pattern, "{}");
        if (!hole)
            return -1;
        size_t head = (size_t)(hole - pattern);
        if (strncmp(pattern, path, head) != 0)
            return -1;
        size_t n = fe_router_arg_len(path + head);
        if (n == 0)
            return -1;
        if (i == k) {
            if (n >= len)
                return -1;
            memcpy(buf, path + head, n);
            buf[n] = '\0';
            return 0;
        }
        pattern = hole + 2;
        path += head + n;
    }
}

enum fe_route_match fe_router_match(const fe_route_table_t *t, const char *method, const char *path,
                                    const fe_route_t **route, char **arg)
{
    bool path_known = false;
    *route = NULL;
    *arg = NULL;
    for (size_t i = 0; i < t->n_routes; i++) {
        const fe_route_t *rt = &t->routes[i];
        const char *at = NULL;
        size_t len = 0;
        if (!fe_router_hit(rt->pattern, path, &at, &len))
            continue;
        path_known = true;
        if (strcmp(method, rt->method) != 0)
            continue;
        *route = rt;
        *arg = at ? sb_xstrndup(at, len) : NULL;
        return FE_ROUTE_OK;
    }
    return path_known ? FE_ROUTE_BAD_METHOD : FE_ROUTE_NO_PATH;
}

const fe_style_t *fe_router_style_for_path(const fe_route_table_t *t, const char *path)
{
    for (size_t i = 0; i < t->n_prefixes; i++)
        if (strncmp(path, t->prefixes[i].prefix, strlen(t->prefixes[i].prefix)) == 0)
            return t->prefixes[i].style;
    return t->n_prefixes ? t->prefixes[t->n_prefixes - 1].style : NULL;
}
