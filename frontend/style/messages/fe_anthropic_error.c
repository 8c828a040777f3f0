/*
 * fe_anthropic_error: Anthropic's error body (fe_anthropic_error.h).
 */
#include "fe_anthropic_error.h"

#include <string.h>

#include "sb_event.h"

/* Anthropic's error types by cause; the status stays the HTTP one. */
static const char *fe_anthropic_error_type(const fe_error_t *e)
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

json_t *fe_anthropic_error_body(const fe_error_t *e, const char *request_id)
{
    return json_pack("{s:s, s:{s:s, s:s}, s:s?}", "type", "error", "error", "type", fe_anthropic_error_type(e),
                     "message", e->message, "request_id", request_id);
}
