/* fe_router: the route table. */
#include "fe_router.h"

#include <string.h>

#include "sb_alloc.h"

static const fe_route_t fe_routes[] = {
    {"POST", "/v1/responses", false, &fe_style_responses, fe_generate_start},
    {"GET", "/v1/responses/", true, &fe_style_responses, fe_responses_get},
    {"DELETE", "/v1/responses/", true, &fe_style_responses, fe_responses_delete},
    {"POST", "/v1/chat/completions", false, &fe_style_chat, fe_generate_start},
    {"GET", "/v1/models", false, &fe_style_responses, fe_models_list},
};

/* A path argument is one segment of safe id characters. */
static bool fe_router_arg_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.'))
            return false;
    }
    return true;
}

enum fe_route_match fe_router_match(const char *method, const char *path, const fe_route_t **route, char **arg)
{
    bool path_known = false;
    *route = NULL;
    *arg = NULL;
    for (size_t i = 0; i < sizeof fe_routes / sizeof fe_routes[0]; i++) {
        const fe_route_t *rt = &fe_routes[i];
        size_t plen = strlen(rt->prefix);
        bool hit;
        if (rt->has_arg)
            hit = strncmp(path, rt->prefix, plen) == 0 && fe_router_arg_ok(path + plen);
        else
            hit = strcmp(path, rt->prefix) == 0;
        if (!hit)
            continue;
        path_known = true;
        if (strcmp(method, rt->method) != 0)
            continue;
        *route = rt;
        *arg = rt->has_arg ? sb_xstrdup(path + plen) : NULL;
        return FE_ROUTE_OK;
    }
    return path_known ? FE_ROUTE_BAD_METHOD : FE_ROUTE_NO_PATH;
}

const fe_style_t *fe_router_style_for_path(const char *path)
{
    if (strncmp(path, "/v1/chat/", 9) == 0)
        return &fe_style_chat;
    return &fe_style_responses;
}
