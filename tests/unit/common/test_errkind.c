/*
 * Unit test of sb_errkind: every kind's vendor names at its own status and at
 * the statuses where a vendor's answer turns (OpenAI's 429, Anthropic's
 * 400/405/422), Google's status names (501 is UNIMPLEMENTED), the Anthropic
 * type -> status mapping the adapter uses, the reverse lookups, and that the
 * table's columns agree with the functions.
 */
#include <string.h>

#include "sb_errkind.h"
#include "sb_event.h"
#include "sb_test.h"

static void test_vendor_names(void)
{
    /* What frontend/http/fe_error.c answered for each kind at its own status. */
    static const struct {
        const char *kind;
        int status;
        const char *openai, *anthropic, *google;
    } want[] = {
        {SB_ERR_INVALID_REQUEST, 400, "invalid_request_error", "invalid_request_error", "INVALID_ARGUMENT"},
        {SB_ERR_AUTHENTICATION, 401, "invalid_request_error", "authentication_error", "UNAUTHENTICATED"},
        {SB_ERR_PERMISSION, 403, "permission_error", "permission_error", "PERMISSION_DENIED"},
        {SB_ERR_NOT_FOUND, 404, "invalid_request_error", "not_found_error", "NOT_FOUND"},
        {SB_ERR_RATE_LIMIT, 429, "rate_limit_error", "rate_limit_error", "RESOURCE_EXHAUSTED"},
        {SB_ERR_QUOTA, 429, "insufficient_quota", "rate_limit_error", "RESOURCE_EXHAUSTED"},
        {SB_ERR_TOO_LARGE, 413, "invalid_request_error", "request_too_large", "INVALID_ARGUMENT"},
        {SB_ERR_TIMEOUT, 504, "timeout_error", "timeout_error", "DEADLINE_EXCEEDED"},
        {SB_ERR_UPSTREAM, 502, "server_error", "api_error", "UNAVAILABLE"},
        {SB_ERR_OVERLOADED, 503, "server_error", "overloaded_error", "UNAVAILABLE"},
        {SB_ERR_SERVER, 500, "server_error", "api_error", "INTERNAL"},
        /* The status turns some answers. */
        {SB_ERR_OVERLOADED, 429, "rate_limit_error", "overloaded_error", "RESOURCE_EXHAUSTED"},
        {SB_ERR_RATE_LIMIT, 503, "server_error", "rate_limit_error", "UNAVAILABLE"},
        {SB_ERR_UPSTREAM, 400, "server_error", "invalid_request_error", "INVALID_ARGUMENT"},
        {SB_ERR_SERVER, 405, "server_error", "invalid_request_error", "INVALID_ARGUMENT"},
        {SB_ERR_SERVER, 422, "server_error", "invalid_request_error", "INVALID_ARGUMENT"},
        {SB_ERR_UPSTREAM, 501, "server_error", "api_error", "UNIMPLEMENTED"},
        {SB_ERR_INVALID_REQUEST, 501, "invalid_request_error", "invalid_request_error", "UNIMPLEMENTED"},
        {SB_ERR_TIMEOUT, 408, "timeout_error", "timeout_error", "DEADLINE_EXCEEDED"},
        /* NULL or unknown kinds answer as server_error. */
        {NULL, 500, "server_error", "api_error", "INTERNAL"},
        {"bogus", 400, "server_error", "invalid_request_error", "INVALID_ARGUMENT"},
        {"", 503, "server_error", "api_error", "UNAVAILABLE"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK_STR(sb_errkind_openai_type(want[i].kind, want[i].status), want[i].openai);
        CHECK_STR(sb_errkind_anthropic_type(want[i].kind, want[i].status), want[i].anthropic);
        CHECK_STR(sb_errkind_google_status(want[i].status), want[i].google);
    }
}

static void test_google(void)
{
    static const struct {
        int status;
        const char *name;
    } want[] = {
        {400, "INVALID_ARGUMENT"},
        {401, "UNAUTHENTICATED"},
        {403, "PERMISSION_DENIED"},
        {404, "NOT_FOUND"},
        {405, "INVALID_ARGUMENT"},
        {408, "DEADLINE_EXCEEDED"},
        {409, "ABORTED"},
        {410, "INVALID_ARGUMENT"},
        {413, "INVALID_ARGUMENT"},
        {417, "FAILED_PRECONDITION"},
        {422, "INVALID_ARGUMENT"},
        {429, "RESOURCE_EXHAUSTED"},
        {431, "INVALID_ARGUMENT"},
        {499, "CANCELLED"},
        {500, "INTERNAL"},
        {501, "UNIMPLEMENTED"},
        {502, "UNAVAILABLE"},
        {503, "UNAVAILABLE"},
        {504, "DEADLINE_EXCEEDED"},
        {505, "FAILED_PRECONDITION"},
        {507, "INTERNAL"},
        {200, "INTERNAL"},
        {0, "INTERNAL"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        CHECK_STR(sb_errkind_google_status(want[i].status), want[i].name);
}

static void test_anthropic_status(void)
{
    /* The adapter's reading of an error type in an SSE error event or a 200 error body. */
    CHECK_INT(sb_errkind_anthropic_status("invalid_request_error"), 400);
    CHECK_INT(sb_errkind_anthropic_status("authentication_error"), 401);
    CHECK_INT(sb_errkind_anthropic_status("permission_error"), 403);
    CHECK_INT(sb_errkind_anthropic_status("not_found_error"), 404);
    CHECK_INT(sb_errkind_anthropic_status("request_too_large"), 413);
    CHECK_INT(sb_errkind_anthropic_status("rate_limit_error"), 429);
    CHECK_INT(sb_errkind_anthropic_status("api_error"), 500);
    CHECK_INT(sb_errkind_anthropic_status("overloaded_error"), 529);
    CHECK_INT(sb_errkind_anthropic_status("timeout_error"), 504);
    CHECK_INT(sb_errkind_anthropic_status("insufficient_quota"), 502); /* OpenAI's, not Anthropic's */
    CHECK_INT(sb_errkind_anthropic_status("bogus"), 502);
    CHECK_INT(sb_errkind_anthropic_status(NULL), 502);
}

static void test_lookups(void)
{
    size_t n = 0;
    const sb_errkind_row_t *rows = sb_errkind_rows(&n);
    CHECK_INT(n, 11);
    for (size_t i = 0; i < n; i++) {
        /* Each row is found by its kind, and its columns are what the functions answer at its status. */
        CHECK(sb_errkind_row(rows[i].kind) == &rows[i]);
        CHECK_STR(sb_errkind_intern(rows[i].kind), rows[i].kind);
        CHECK_STR(rows[i].google_status, sb_errkind_google_status(rows[i].status));
        CHECK_STR(rows[i].openai_type, sb_errkind_openai_type(rows[i].kind, rows[i].status));
        CHECK_STR(rows[i].anthropic_type, sb_errkind_anthropic_type(rows[i].kind, rows[i].status));
        CHECK_INT(rows[i].anthropic_status, sb_errkind_anthropic_status(rows[i].anthropic_type));
    }
    /* intern gives a pointer that outlives the JSON a kind was read from. */
    char copy[32];
    snprintf(copy, sizeof copy, "%s", SB_ERR_QUOTA);
    CHECK(sb_errkind_intern(copy) != copy);
    CHECK_STR(sb_errkind_intern(copy), SB_ERR_QUOTA);
    CHECK_STR(sb_errkind_intern("bogus"), SB_ERR_SERVER);
    CHECK_STR(sb_errkind_intern(NULL), SB_ERR_SERVER);
    CHECK(sb_errkind_row(NULL) == NULL && sb_errkind_row("bogus") == NULL);

    CHECK_STR(sb_errkind_by_status(400)->kind, SB_ERR_INVALID_REQUEST);
    CHECK_STR(sb_errkind_by_status(429)->kind, SB_ERR_RATE_LIMIT);
    CHECK_STR(sb_errkind_by_status(500)->kind, SB_ERR_SERVER);
    CHECK_STR(sb_errkind_by_status(502)->kind, SB_ERR_UPSTREAM);
    CHECK_STR(sb_errkind_by_status(503)->kind, SB_ERR_OVERLOADED);
    CHECK(sb_errkind_by_status(418) == NULL);

    CHECK_STR(sb_errkind_by_anthropic_type("overloaded_error")->kind, SB_ERR_OVERLOADED);
    CHECK_STR(sb_errkind_by_anthropic_type("rate_limit_error")->kind, SB_ERR_RATE_LIMIT);
    CHECK_STR(sb_errkind_by_anthropic_type("api_error")->kind, SB_ERR_UPSTREAM);
    CHECK_STR(sb_errkind_by_anthropic_type("not_found_error")->kind, SB_ERR_NOT_FOUND);
    CHECK(sb_errkind_by_anthropic_type("bogus") == NULL && sb_errkind_by_anthropic_type(NULL) == NULL);

    CHECK_STR(sb_errkind_by_google_status("INVALID_ARGUMENT")->kind, SB_ERR_INVALID_REQUEST);
    CHECK_STR(sb_errkind_by_google_status("RESOURCE_EXHAUSTED")->kind, SB_ERR_RATE_LIMIT);
    CHECK_STR(sb_errkind_by_google_status("DEADLINE_EXCEEDED")->kind, SB_ERR_TIMEOUT);
    CHECK_STR(sb_errkind_by_google_status("UNAVAILABLE")->kind, SB_ERR_UPSTREAM);
    CHECK_STR(sb_errkind_by_google_status("INTERNAL")->kind, SB_ERR_SERVER);
    CHECK(sb_errkind_by_google_status("UNIMPLEMENTED") == NULL && sb_errkind_by_google_status(NULL) == NULL);
}

int main(void)
{
    test_vendor_names();
    test_google();
    test_anthropic_status();
    test_lookups();
    return sb_test_finish("test_errkind");
}
