/*
 * fe_google_error: Google's error body (fe_google_error.h).
 */
#include "fe_google_error.h"

/* google.rpc.Code names by HTTP status, as Google's REST APIs send them. */
static const char *fe_google_error_status(const fe_error_t *e)
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

json_t *fe_google_error_body(const fe_error_t *e)
{
    return json_pack("{s:{s:i, s:s, s:s}}", "error", "code", e->status, "message", e->message, "status",
                     fe_google_error_status(e));
}
