/* fe_error: canonical errors and OpenAI's error body. */
#include "fe_error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "sb_event.h"
#include "sb_utf8.h"

/* vsnprintf may cut a multi-byte UTF-8 sequence at the buffer's end; drop the
 * partial tail so the message stays valid JSON text. */
static void fe_error_trim_utf8(char *s)
{
    size_t n = strlen(s);
    size_t i = n;
    while (i > 0 && ((unsigned char)s[i - 1] & 0xC0) == 0x80)
        i--;
    if (i == 0)
        return;
    unsigned char lead = (unsigned char)s[i - 1];
    size_t need = lead >= 0xF0 ? 4 : lead >= 0xE0 ? 3 : lead >= 0xC0 ? 2 : 1;
    if (n - (i - 1) < need)
        s[i - 1] = '\0';
}

void fe_error_set(fe_error_t *e, int status, const char *kind, const char *code, const char *param, const char *fmt,
                  ...)
{
    e->status = status;
    e->kind = kind;
    snprintf(e->code, sizeof e->code, "%s", code ? code : "");
    snprintf(e->param, sizeof e->param, "%s", param ? param : "");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    fe_error_trim_utf8(e->message);
    /* A message may quote a client's bytes (a decoded path): JSON needs
     * valid UTF-8, or the error would go out without its body. */
    sb_utf8_fix(e->message);
    sb_utf8_fix(e->param);
    e->retry_after = 0;
    e->no_retry = false;
}

static const char *fe_error_kind_intern(const char *k)
{
    static const char *const kinds[] = {SB_ERR_INVALID_REQUEST, SB_ERR_AUTHENTICATION, SB_ERR_PERMISSION,
                                        SB_ERR_NOT_FOUND,       SB_ERR_RATE_LIMIT,     SB_ERR_QUOTA,
                                        SB_ERR_TOO_LARGE,       SB_ERR_TIMEOUT,        SB_ERR_UPSTREAM,
                                        SB_ERR_OVERLOADED,      SB_ERR_SERVER};
    for (size_t i = 0; k && i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(k, kinds[i]))
            return kinds[i];
    return SB_ERR_SERVER;
}

void fe_error_from_event(fe_error_t *e, const json_t *ev)
{
    json_t *st = json_object_get(ev, "status");
    int status = json_is_integer(st) ? (int)json_integer_value(st) : 502;
    if (status < 400 || status > 599)
        status = 502;
    const char *msg = json_string_value(json_object_get(ev, "message"));
    fe_error_set(e, status, fe_error_kind_intern(json_string_value(json_object_get(ev, "kind"))),
                 json_string_value(json_object_get(ev, "code")), NULL, "%s", msg && *msg ? msg : "upstream error");
    json_t *ra = json_object_get(ev, "retry_after");
    if (json_is_integer(ra) && json_integer_value(ra) > 0)
        e->retry_after = (int)json_integer_value(ra);
    /* 429s say which one they are, as OpenAI's codes do. */
    if (e->status == 429 && !e->code[0])
        snprintf(e->code, sizeof e->code, "%s",
                 !strcmp(e->kind, SB_ERR_QUOTA) ? "insufficient_quota" : "rate_limit_exceeded");
    if (!strcmp(e->kind, SB_ERR_QUOTA))
        e->no_retry = true;
}

/* OpenAI's "type" for each canonical kind. */
static const char *fe_error_openai_type(const fe_error_t *e)
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

json_t *fe_error_openai_body(const fe_error_t *e)
{
    json_t *code = e->code[0] ? json_string(e->code) : json_null();
    json_t *param = e->param[0] ? json_string(e->param) : json_null();
    return json_pack("{s:{s:s, s:s, s:o, s:o}}", "error", "message", e->message, "type", fe_error_openai_type(e),
                     "param", param, "code", code);
}

/* Anthropic's error types by cause; the status stays the HTTP one. */
static const char *fe_error_anthropic_type(const fe_error_t *e)
{
    const char *k = e->kind ? e->kind : "";
    if (!strcmp(k, SB_ERR_INVALID_REQUEST))
        return "invalid_request_error";
    if (!strcmp(k, SB_ERR_AUTHENTICATION))
        return "authentication_error";
    if (!strcmp(k, SB_ERR_PERMISSION))
        return "permission_error";
    if (!strcmp(k, SB_ERR_NOT_FOUND))
        return "not_found_error";
    if (!strcmp(k, SB_ERR_TOO_LARGE))
        return "request_too_large";
    if (!strcmp(k, SB_ERR_RATE_LIMIT) || !strcmp(k, SB_ERR_QUOTA))
        return "rate_limit_error";
    if (!strcmp(k, SB_ERR_OVERLOADED))
        return "overloaded_error";
    if (!strcmp(k, SB_ERR_TIMEOUT))
        return "timeout_error"; /* Anthropic's 504 */
    if (e->status == 400 || e->status == 405 || e->status == 422)
        return "invalid_request_error";
    return "api_error";
}

json_t *fe_error_anthropic_body(const fe_error_t *e, const char *request_id)
{
    return json_pack("{s:s, s:{s:s, s:s}, s:s?}", "type", "error", "error", "type", fe_error_anthropic_type(e),
                     "message", e->message, "request_id", request_id);
}

/* google.rpc.Code names by HTTP status, as Google's REST APIs send them. */
static const char *fe_error_google_status(const fe_error_t *e)
{
    switch (e->status) {
    case 400:
    case 405:
    case 413:
    case 422:
    case 431:
        return "INVALID_ARGUMENT";
    case 401:
        return "UNAUTHENTICATED";
    case 403:
        return "PERMISSION_DENIED";
    case 404:
        return "NOT_FOUND";
    case 409:
        return "ABORTED";
    case 429:
        return "RESOURCE_EXHAUSTED";
    case 499:
        return "CANCELLED";
    case 501:
        return "UNIMPLEMENTED";
    case 502:
    case 503:
        return "UNAVAILABLE";
    case 408: /* the client's request did not arrive in time */
    case 504:
        return "DEADLINE_EXCEEDED";
    case 417: /* an Expect the gateway does not meet, an HTTP version it does not speak: the request's fault */
    case 505:
        return "FAILED_PRECONDITION";
    default:
        return e->status >= 400 && e->status < 500 ? "INVALID_ARGUMENT" : "INTERNAL";
    }
}

json_t *fe_error_google_body(const fe_error_t *e)
{
    return json_pack("{s:{s:i, s:s, s:s}}", "error", "code", e->status, "message", e->message, "status",
                     fe_error_google_status(e));
}
