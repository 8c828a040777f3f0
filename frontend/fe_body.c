/* fe_body: bounded JSON request bodies. */
#include "fe_body.h"

#include <event2/buffer.h>

#include "sb_event.h"

int fe_body_depth(const char *buf, size_t len)
{
    int depth = 0, max = 0;
    bool in_str = false, esc = false;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        if (c == '"')
            in_str = true;
        else if (c == '{' || c == '[') {
            if (++depth > max)
                max = depth;
        } else if (c == '}' || c == ']')
            depth--;
    }
    return max;
}

json_t *fe_body_json(struct evhttp_request *http, size_t max_bytes, int max_depth, fe_error_t *err)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(http);
    size_t len = evbuffer_get_length(in);
    if (len > max_bytes) {
        fe_error_set(err, 413, SB_ERR_TOO_LARGE, "request_too_large", NULL,
                     "Request body of %zu bytes exceeds the limit of %zu bytes", len, max_bytes);
        return NULL;
    }
    if (len == 0) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_json", NULL,
                     "We could not parse the JSON body of your request: the body is empty.");
        return NULL;
    }
    const char *buf = (const char *)evbuffer_pullup(in, -1);
    if (fe_body_depth(buf, len) > max_depth) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "json_too_deep", NULL,
                     "We could not parse the JSON body of your request: nesting deeper than %d levels.", max_depth);
        return NULL;
    }
    json_error_t jerr;
    json_t *body = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_json", NULL,
                     "We could not parse the JSON body of your request: %s (line %d, column %d).", jerr.text,
                     jerr.line, jerr.column);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_json", NULL,
                     "The request body must be a JSON object.");
        return NULL;
    }
    return body;
}
