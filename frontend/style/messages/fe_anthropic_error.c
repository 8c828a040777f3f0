/*
 * fe_anthropic_error: Anthropic's error body (fe_anthropic_error.h); its type
 * comes from the one error-kind table, sb_errkind, by cause (the HTTP status
 * stays the reply's own).
 */
#include "fe_anthropic_error.h"

#include "sb_errkind.h"

json_t *fe_anthropic_error_body(const fe_error_t *e, const char *request_id)
{
    return json_pack("{s:s, s:{s:s, s:s}, s:s?}", "type", "error", "error", "type",
                     sb_errkind_anthropic_type(e->kind, e->status), "message", e->message, "request_id", request_id);
}
