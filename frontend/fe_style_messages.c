/*
 * fe_style_messages: the Messages style (POST /v1/messages, Anthropic's wire
 * format): x-api-key (or Bearer) auth, the anthropic-version header,
 * messages and content blocks -> canonical request, result -> message
 * object, Anthropic's error body.
 *
 * STUB: auth and errors are real; parse/render arrive with issue 4.
 */
#include <string.h>
#include <strings.h>

#include "fe_request.h"
#include "fe_router.h"
#include "sb_event.h"

/* "x-api-key: KEY", or "Authorization: Bearer KEY" (the 1.x SDK sends it). */
static const char *fe_messages_key(struct evhttp_request *http, size_t *len)
{
    const char *k = evhttp_find_header(evhttp_request_get_input_headers(http), "x-api-key");
    if (k && *k) {
        *len = strlen(k);
        return k;
    }
    return fe_bearer_key(http, len);
}

static json_t *fe_messages_error_body(const fe_request_t *r, const fe_error_t *e)
{
    return fe_error_anthropic_body(e, r->request_id);
}

static int fe_messages_parse(fe_request_t *r, json_t *body, fe_error_t *err)
{
    (void)r;
    (void)body;
    fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, NULL, NULL, "The Messages style is not available yet.");
    return -1;
}

static json_t *fe_messages_render(fe_request_t *r)
{
    (void)r;
    return NULL;
}

void fe_messages_count_tokens(fe_request_t *r)
{
    fe_request_failf(r, 400, SB_ERR_INVALID_REQUEST, NULL, NULL, "count_tokens is not available yet.");
}

const fe_style_t fe_style_messages = {
    .name = "messages",
    .key = fe_messages_key,
    .error_body = fe_messages_error_body,
    .parse = fe_messages_parse,
    .render = fe_messages_render,
};
