/* fe_router: the route table. */
#include "fe_router.h"

#include <string.h>

#include "sb_alloc.h"

static const fe_route_t fe_routes[] = {
    {"POST", "/v1/responses", &fe_style_responses, fe_generate_start},
    {"GET", "/v1/responses/{}", &fe_style_responses, fe_responses_get},
    {"DELETE", "/v1/responses/{}", &fe_style_responses, fe_responses_delete},
    {"GET", "/v1/responses/{}/input_items", &fe_style_responses, fe_responses_input_items},
    {"POST", "/v1/chat/completions", &fe_style_chat, fe_generate_start},
    {"GET", "/v1/chat/completions", &fe_style_chat, fe_chat_stored_list},
    {"GET", "/v1/chat/completions/{}", &fe_style_chat, fe_chat_stored_get},
    {"POST", "/v1/chat/completions/{}", &fe_style_chat, fe_chat_stored_update},
    {"DELETE", "/v1/chat/completions/{}", &fe_style_chat, fe_chat_stored_delete},
    {"GET", "/v1/chat/completions/{}/messages", &fe_style_chat, fe_chat_stored_messages},
    {"POST", "/v1/files", &fe_style_responses, fe_files_upload},
    {"GET", "/v1/files", &fe_style_responses, fe_files_list},
    {"GET", "/v1/files/{}", &fe_style_responses, fe_files_get},
    {"DELETE", "/v1/files/{}", &fe_style_responses, fe_files_delete},
    {"GET", "/v1/files/{}/content", &fe_style_responses, fe_files_content},
    {"GET", "/v1/models", &fe_style_responses, fe_models_list},
    {"GET", "/v1/models/{}", &fe_style_responses, fe_models_list},
    {"POST", "/v1/messages", &fe_style_messages, fe_generate_start},
    {"POST", "/v1/messages/count_tokens", &fe_style_messages, fe_messages_count_tokens},
    {"GET", "/v1beta/models", &fe_style_gemini, fe_gemini_models_list},
    {"GET", "/v1beta/models/{}", &fe_style_gemini, fe_gemini_model_get},
    {"POST", "/v1beta/models/{}:generateContent", &fe_style_gemini, fe_generate_start},
    {"POST", "/v1beta/models/{}:streamGenerateContent", &fe_style_gemini, fe_generate_start},
    {"POST", "/v1beta/models/{}:countTokens", &fe_style_gemini, fe_gemini_count_tokens},
};

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

/* Matches path against pattern; on a match with "{}" sets *arg_at and *arg_len. */
static bool fe_router_hit(const char *pattern, const char *path, const char **arg_at, size_t *arg_len)
{
    const char *hole = strstr(pattern, "{}");
    if (!hole)
        return strcmp(pattern, path) == 0;
    size_t head = (size_t)(hole - pattern);
    if (strncmp(pattern, path, head) != 0)
        return false;
    size_t n = fe_router_arg_len(path + head);
    if (n == 0)
        return false;
    if (strcmp(hole + 2, path + head + n) != 0)
        return false;
    *arg_at = path + head;
    *arg_len = n;
    return true;
}

enum fe_route_match fe_router_match(const char *method, const char *path, const fe_route_t **route, char **arg)
{
    bool path_known = false;
    *route = NULL;
    *arg = NULL;
    for (size_t i = 0; i < sizeof fe_routes / sizeof fe_routes[0]; i++) {
        const fe_route_t *rt = &fe_routes[i];
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

const fe_style_t *fe_router_style_for_path(const char *path)
{
    if (strncmp(path, "/v1/chat/", 9) == 0)
        return &fe_style_chat;
    if (strncmp(path, "/v1/messages", 12) == 0)
        return &fe_style_messages;
    if (strncmp(path, "/v1beta/", 8) == 0)
        return &fe_style_gemini;
    return &fe_style_responses;
}
