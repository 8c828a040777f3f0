/*
 * sb_errkind: the error-kind table and its lookups (see sb_errkind.h). The
 * answers are the ones frontend/http/fe_error.c and the Anthropic adapter
 * gave before the table existed, row for row.
 */
#include "sb_errkind.h"

#include <string.h>

#include "sb_event.h"

/* clang-format off */
static const sb_errkind_row_t sb_errkind_table[] = {
    /* kind                    status  openai type              by st.  anthropic type           by st.  a.st.  google status */
    {SB_ERR_INVALID_REQUEST,   400,    "invalid_request_error", false,  "invalid_request_error", false,  400,   "INVALID_ARGUMENT"},
    {SB_ERR_AUTHENTICATION,    401,    "invalid_request_error", false,  "authentication_error",  false,  401,   "UNAUTHENTICATED"},
    {SB_ERR_PERMISSION,        403,    "permission_error",      false,  "permission_error",      false,  403,   "PERMISSION_DENIED"},
    {SB_ERR_NOT_FOUND,         404,    "invalid_request_error", false,  "not_found_error",       false,  404,   "NOT_FOUND"},
    {SB_ERR_RATE_LIMIT,        429,    "rate_limit_error",      true,   "rate_limit_error",      false,  429,   "RESOURCE_EXHAUSTED"},
    {SB_ERR_QUOTA,             429,    "insufficient_quota",    false,  "rate_limit_error",      false,  429,   "RESOURCE_EXHAUSTED"},
    {SB_ERR_TOO_LARGE,         413,    "invalid_request_error", false,  "request_too_large",     false,  413,   "INVALID_ARGUMENT"},
    {SB_ERR_TIMEOUT,           504,    "timeout_error",         false,  "timeout_error",         false,  504,   "DEADLINE_EXCEEDED"},
    {SB_ERR_UPSTREAM,          502,    "server_error",          false,  "api_error",             true,   500,   "UNAVAILABLE"},
    {SB_ERR_OVERLOADED,        503,    "server_error",          true,   "overloaded_error",      false,  529,   "UNAVAILABLE"},
    {SB_ERR_SERVER,            500,    "server_error",          false,  "api_error",             true,   500,   "INTERNAL"},
};
/* clang-format on */

#define SB_ERRKIND_N (sizeof sb_errkind_table / sizeof sb_errkind_table[0])
#define SB_ERRKIND_SERVER (&sb_errkind_table[SB_ERRKIND_N - 1])

/* google.rpc.Code names by HTTP status, as Google's REST APIs send them;
 * statuses not listed: INVALID_ARGUMENT for 4xx, INTERNAL otherwise. */
static const struct {
    int status;
    const char *name;
} sb_errkind_google[] = {
    {400, "INVALID_ARGUMENT"},
    {401, "UNAUTHENTICATED"},
    {403, "PERMISSION_DENIED"},
    {404, "NOT_FOUND"},
    {405, "INVALID_ARGUMENT"},
    {408, "DEADLINE_EXCEEDED"}, /* the client's request did not arrive in time */
    {409, "ABORTED"},
    {413, "INVALID_ARGUMENT"},
    {417, "FAILED_PRECONDITION"}, /* an Expect the gateway does not meet: the request's fault */
    {422, "INVALID_ARGUMENT"},
    {429, "RESOURCE_EXHAUSTED"},
    {431, "INVALID_ARGUMENT"},
    {499, "CANCELLED"},
    {501, "UNIMPLEMENTED"},
    {502, "UNAVAILABLE"},
    {503, "UNAVAILABLE"},
    {504, "DEADLINE_EXCEEDED"},
    {505, "FAILED_PRECONDITION"}, /* an HTTP version the gateway does not speak: the request's fault */
};

const sb_errkind_row_t *sb_errkind_rows(size_t *n)
{
    *n = SB_ERRKIND_N;
    return sb_errkind_table;
}

const sb_errkind_row_t *sb_errkind_row(const char *kind)
{
    for (size_t i = 0; kind && i < SB_ERRKIND_N; i++)
        if (!strcmp(kind, sb_errkind_table[i].kind))
            return &sb_errkind_table[i];
    return NULL;
}

const sb_errkind_row_t *sb_errkind_by_status(int status)
{
    for (size_t i = 0; i < SB_ERRKIND_N; i++)
        if (sb_errkind_table[i].status == status)
            return &sb_errkind_table[i];
    return NULL;
}

const sb_errkind_row_t *sb_errkind_by_anthropic_type(const char *type)
{
    for (size_t i = 0; type && i < SB_ERRKIND_N; i++)
        if (!strcmp(type, sb_errkind_table[i].anthropic_type))
            return &sb_errkind_table[i];
    return NULL;
}

const sb_errkind_row_t *sb_errkind_by_google_status(const char *name)
{
    for (size_t i = 0; name && i < SB_ERRKIND_N; i++)
        if (!strcmp(name, sb_errkind_table[i].google_status))
            return &sb_errkind_table[i];
    return NULL;
}

const char *sb_errkind_intern(const char *kind)
{
    const sb_errkind_row_t *row = sb_errkind_row(kind);
    return (row ? row : SB_ERRKIND_SERVER)->kind;
}

const char *sb_errkind_openai_type(const char *kind, int status)
{
    const sb_errkind_row_t *row = sb_errkind_row(kind);
    if (!row)
        row = SB_ERRKIND_SERVER;
    if (row->openai_by_status)
        return status == 429 ? "rate_limit_error" : "server_error";
    return row->openai_type;
}

const char *sb_errkind_anthropic_type(const char *kind, int status)
{
    const sb_errkind_row_t *row = sb_errkind_row(kind);
    if (!row)
        row = SB_ERRKIND_SERVER;
    if (row->anthropic_by_status && (status == 400 || status == 405 || status == 422))
        return "invalid_request_error";
    return row->anthropic_type;
}

int sb_errkind_anthropic_status(const char *type)
{
    const sb_errkind_row_t *row = sb_errkind_by_anthropic_type(type);
    return row ? row->anthropic_status : 502;
}

const char *sb_errkind_google_status(int status)
{
    for (size_t i = 0; i < sizeof sb_errkind_google / sizeof sb_errkind_google[0]; i++)
        if (sb_errkind_google[i].status == status)
            return sb_errkind_google[i].name;
    return status >= 400 && status < 500 ? "INVALID_ARGUMENT" : "INTERNAL";
}
