/*
 * fe_style_gemini: the Generate Content style (POST
 * /v1beta/models/{model}:generateContent, Google's wire format):
 * x-goog-api-key or ?key= auth, contents and parts -> canonical request,
 * result -> GenerateContentResponse, Google's error body.
 *
 * STUB: auth and errors are real; parse/render arrive with issue 4.
 */
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "fe_request.h"
#include "fe_router.h"
#include "sb_event.h"

/* "x-goog-api-key: KEY", or the query parameter key=KEY. The query value
 * lives in a per-thread buffer: the caller hashes it at once. */
static const char *fe_gemini_key(struct evhttp_request *http, size_t *len)
{
    const char *k = evhttp_find_header(evhttp_request_get_input_headers(http), "x-goog-api-key");
    if (k && *k) {
        *len = strlen(k);
        return k;
    }
    static _Thread_local char buf[256];
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(http);
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    if (!query)
        return NULL;
    struct evkeyvalq q;
    TAILQ_INIT(&q);
    const char *v = NULL;
    if (evhttp_parse_query_str(query, &q) == 0)
        v = evhttp_find_header(&q, "key");
    size_t n = v ? strlen(v) : 0;
    if (n > 0 && n < sizeof buf)
        memcpy(buf, v, n + 1);
    evhttp_clear_headers(&q);
    if (n == 0 || n >= sizeof buf)
        return NULL;
    *len = n;
    return buf;
}

static json_t *fe_gemini_error_body(const fe_request_t *r, const fe_error_t *e)
{
    (void)r;
    return fe_error_google_body(e);
}

static int fe_gemini_parse(fe_request_t *r, json_t *body, fe_error_t *err)
{
    (void)r;
    (void)body;
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, NULL, NULL, "The Generate Content style is not available yet.");
    return -1;
}

static json_t *fe_gemini_render(fe_request_t *r)
{
    (void)r;
    return NULL;
}

void fe_gemini_models_list(fe_request_t *r)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Not available yet.");
}

void fe_gemini_model_get(fe_request_t *r)
{
    fe_request_failf(r, 404, SB_ERR_NOT_FOUND, NULL, NULL, "Not available yet.");
}

void fe_gemini_count_tokens(fe_request_t *r)
{
    fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, NULL, NULL, "countTokens is not available yet.");
}

const fe_style_t fe_style_gemini = {
    .name = "gemini",
    .key = fe_gemini_key,
    .error_body = fe_gemini_error_body,
    .parse = fe_gemini_parse,
    .render = fe_gemini_render,
};
