/*
 * fe_openai: the Bearer key and OpenAI's error body, shared by the Responses
 * and Chat Completions styles (fe_openai.h).
 */
#include "fe_openai.h"

#include <string.h>
#include <strings.h>

#include "sb_event.h"

const char *fe_openai_bearer_key(fe_http_req_t *http, size_t *len)
{
    const char *h = fe_http_req_header(http, "Authorization");
    if (!h || strncasecmp(h, "Bearer ", 7) != 0)
        return NULL;
    h += 7;
    while (*h == ' ')
        h++;
    size_t n = strlen(h);
    while (n > 0 && h[n - 1] == ' ')
        n--;
    if (n == 0)
        return NULL;
    *len = n;
    return h;
}

/* OpenAI's "type" for each canonical kind. */
static const char *fe_openai_error_type(const fe_error_t *e)
{
    const char *k = e->kind ? e->kind : SB_ERR_SERVER;
    if (!strcmp(k, SB_ERR_INVALID_REQUEST) || !strcmp(k, SB_ERR_AUTHENTICATION) || !strcmp(k, SB_ERR_NOT_FOUND) ||
        !strcmp(k, SB_ERR_TOO_LARGE))
        return "invalid_request_error";
    if (!strcmp(k, SB_ERR_PERMISSION))
        return "permission_error";
    if (!strcmp(k, SB_ERR_QUOTA))
        return "insufficient_quota";
    if (!strcmp(k, SB_ERR_RATE_LIMIT) || !strcmp(k, SB_ERR_OVERLOADED))
        return e->status == 429 ? "rate_limit_error" : "server_error";
    if (!strcmp(k, SB_ERR_TIMEOUT))
        return "timeout_error";
    return "server_error";
}

json_t *fe_openai_error_body(const fe_error_t *e)
{
    json_t *code = e->code[0] ? json_string(e->code) : json_null();
    json_t *param = e->param[0] ? json_string(e->param) : json_null();
    return json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", e->message, "type", fe_openai_error_type(e),
                     "param", param, "code", code);
}
