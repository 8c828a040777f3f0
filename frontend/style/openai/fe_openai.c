/*
 * fe_openai: the Bearer key and OpenAI's error body, shared by the Responses
 * and Chat Completions styles (fe_openai.h). The error type comes from the
 * one error-kind table, sb_errkind.
 */
#include "fe_openai.h"

#include <string.h>
#include <strings.h>

#include "sb_errkind.h"

const char *fe_openai_bearer_key(sb_http_req_t *http, size_t *len)
{
    const char *h = sb_http_req_header(http, "Authorization");
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

json_t *fe_openai_error_body(const fe_error_t *e, const char *request_id)
{
    (void)request_id;
    json_t *code = e->code[0] ? json_string(e->code) : json_null();
    json_t *param = e->param[0] ? json_string(e->param) : json_null();
    return json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", e->message, "type",
                     sb_errkind_openai_type(e->kind, e->status), "param", param, "code", code);
}
