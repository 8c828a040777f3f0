/*
 * Unit tests for fe_router's path matching over the gateway's route table
 * (fe_routes.c): ids as one segment, methods (405 vs 404), an encoded slash
 * or a doubled base path matching nothing, the style a shared or unknown
 * path is answered in, and the route flags the request layer reads.
 */
#include <stdlib.h>

#include "fe_chat_stored.h"
#include "fe_files_api.h"
#include "fe_generate.h"
#include "fe_models.h"
#include "fe_responses_stored.h"
#include "fe_router.h"
#include "fe_routes.h"
#include "sb_test.h"

/* Moved from test_items.c with the table: the same assertions. */
static void test_match(void)
{
    const fe_route_t *rt;
    char *arg;
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/responses/resp_1/input_items", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_responses_input_items);
    CHECK_STR(arg, "resp_1");
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/files/file-9/content", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_files_content);
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1/chat/completions/chatcmpl-1", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_chat_stored_update);
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/chat/completions", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_chat_stored_list && arg == NULL);
    CHECK_INT(fe_router_match(&fe_routes, "PUT", "/v1/files/x", &rt, &arg), FE_ROUTE_BAD_METHOD);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/files/a/b/content", &rt, &arg), FE_ROUTE_NO_PATH);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/files/../content", &rt, &arg),
              FE_ROUTE_OK); /* ".." is one id segment */
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/responses//input_items", &rt, &arg), FE_ROUTE_NO_PATH);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/responses/a%2Fb", &rt, &arg), FE_ROUTE_NO_PATH);
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1/chat/completions/v1/chat/completions", &rt, &arg),
              FE_ROUTE_NO_PATH);
}

/* Google's custom methods end the {model} segment at ':'; the count routes
 * run the generation pipeline with a count-only job. */
static void test_custom_methods(void)
{
    const fe_route_t *rt;
    char *arg;
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1beta/models/gemini-x:generateContent", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_generate_start && rt->style == &fe_style_gemini);
    CHECK_STR(arg, "gemini-x");
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1beta/models/gemini-x:countTokens", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_generate_count_tokens);
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1/messages/count_tokens", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_generate_count_tokens && rt->style == &fe_style_messages && arg == NULL);
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1beta/models/gemini-x:unknownMethod", &rt, &arg),
              FE_ROUTE_NO_PATH);
}

/* What the request layer reads from a route instead of naming endpoints:
 * the upload's file-sized body, and /v1/models's per-request style. */
static void test_flags(void)
{
    const fe_route_t *rt;
    char *arg;
    CHECK_INT(fe_router_match(&fe_routes, "POST", "/v1/files", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_files_upload && rt->file_body && rt->style_of == NULL);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/files", &rt, &arg), FE_ROUTE_OK);
    CHECK(!rt->file_body);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/models/m1", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->fn == fe_models_list && rt->style_of == fe_models_style && !rt->file_body);
    free(arg);
    CHECK_INT(fe_router_match(&fe_routes, "GET", "/v1/models", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt->style_of == fe_models_style);
}

/* A path no route matches is answered in the style of its prefix. */
static void test_style_for_path(void)
{
    CHECK(fe_router_style_for_path(&fe_routes, "/v1/chat/nothing") == &fe_style_chat);
    CHECK(fe_router_style_for_path(&fe_routes, "/v1/messages/x") == &fe_style_messages);
    CHECK(fe_router_style_for_path(&fe_routes, "/v1beta/nothing") == &fe_style_gemini);
    CHECK(fe_router_style_for_path(&fe_routes, "/v1/unknown") == &fe_style_responses);
    CHECK(fe_router_style_for_path(&fe_routes, "/") == &fe_style_responses);
}

/* A pattern with two ids (/v1/vector_stores/{}/files/{}): each hole takes
 * one segment; the first is the request's arg, the later ones are read
 * with fe_router_path_arg. */
static void fe_test_endpoint(fe_request_t *r)
{
    (void)r;
}

static void test_two_ids(void)
{
    static const fe_route_t routes[] = {
        {"GET", "/v1/s/{}/files/{}", &fe_style_responses, fe_test_endpoint, NULL, false},
        {"GET", "/v1/s/{}/files/{}/content", &fe_style_responses, fe_test_endpoint, NULL, false},
    };
    const fe_route_table_t t = {.routes = routes, .n_routes = 2};
    const fe_route_t *rt;
    char *arg;
    char buf[16];
    CHECK_INT(fe_router_match(&t, "GET", "/v1/s/vs_1/files/file-2", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt == &routes[0]);
    CHECK_STR(arg, "vs_1");
    free(arg);
    CHECK_INT(fe_router_path_arg(rt, "/v1/s/vs_1/files/file-2", 0, buf, sizeof buf), 0);
    CHECK_STR(buf, "vs_1");
    CHECK_INT(fe_router_path_arg(rt, "/v1/s/vs_1/files/file-2", 1, buf, sizeof buf), 0);
    CHECK_STR(buf, "file-2");
    CHECK_INT(fe_router_path_arg(rt, "/v1/s/vs_1/files/file-2", 2, buf, sizeof buf), -1);
    CHECK_INT(fe_router_path_arg(rt, "/v1/s/vs_1/files/a-very-long-file-id", 1, buf, sizeof buf), -1);
    CHECK_INT(fe_router_match(&t, "GET", "/v1/s/vs_1/files/file-2/content", &rt, &arg), FE_ROUTE_OK);
    CHECK(rt == &routes[1]);
    free(arg);
    CHECK_INT(fe_router_path_arg(rt, "/v1/s/vs_1/files/file-2/content", 1, buf, sizeof buf), 0);
    CHECK_STR(buf, "file-2");
    CHECK_INT(fe_router_match(&t, "GET", "/v1/s/vs_1/files/", &rt, &arg), FE_ROUTE_NO_PATH);
    CHECK_INT(fe_router_match(&t, "GET", "/v1/s/vs_1/files/a/b", &rt, &arg), FE_ROUTE_NO_PATH);
    CHECK_INT(fe_router_match(&t, "GET", "/v1/s/vs_1/other/file-2", &rt, &arg), FE_ROUTE_NO_PATH);
    CHECK_INT(fe_router_match(&t, "POST", "/v1/s/vs_1/files/file-2", &rt, &arg), FE_ROUTE_BAD_METHOD);
}

int main(void)
{
    test_match();
    test_custom_methods();
    test_flags();
    test_style_for_path();
    test_two_ids();
    return sb_test_finish("router");
}
