/*
 * fe_google_error: Google's error body (fe_google_error.h); its status name is
 * google.rpc.Code's for the HTTP status, from the one error-kind table,
 * sb_errkind.
 */
#include "fe_google_error.h"

#include "sb_errkind.h"

json_t *fe_google_error_body(const fe_error_t *e, const char *request_id)
{
    (void)request_id;
    return json_pack("{s:{s:i, s:s, s:s}}", "error", "code", e->status, "message", e->message, "status",
                     sb_errkind_google_status(e->status));
}
