/* fe_body: bounded JSON request bodies: size, depth and element count. */
#include "fe_body.h"

#include <event2/buffer.h>

#include "sb_event.h"

static size_t fe_body_max_elements = 200000;

void fe_body_set_max_elements(size_t max_elements)
{
    fe_body_max_elements = max_elements;
}

/* One pass: depth by brackets, elements by commas plus one for each container
 * that is not empty (the first non-blank character after its opener is not
 * its closer). */
void fe_body_scan(const char *buf, size_t len, fe_body_stats_t *out)
{
    int depth = 0, max = 0;
    size_t elements = 0;
    bool in_str = false, esc = false, opened = false;
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
        if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        if (opened) {
            opened = false;
            if (c != ']' && c != '}')
                elements++;
        }
        if (c == '"') {
            in_str = true;
        } else if (c == '{' || c == '[') {
            if (++depth > max)
                max = depth;
            opened = true;
        } else if (c == '}' || c == ']') {
            depth--;
        } else if (c == ',') {
            elements++;
        }
    }
    out->depth = max;
    out->elements = elements;
}

int fe_body_depth(const char *buf, size_t len)
{
    fe_body_stats_t st;
    fe_body_scan(buf, len, &st);
    return st.depth;
}

json_t *fe_body_json(struct evbuffer *in, size_t max_bytes, int max_depth, fe_error_t *err)
{
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
    fe_body_stats_t st;
    fe_body_scan(buf, len, &st);
    if (st.depth > max_depth) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "json_too_deep", NULL,
                     "We could not parse the JSON body of your request: nesting deeper than %d levels.", max_depth);
        return NULL;
    }
    if (st.elements > fe_body_max_elements) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "json_too_many_elements", NULL,
                     "We could not parse the JSON body of your request: more than %zu values (array elements and "
                     "object members).",
                     fe_body_max_elements);
        return NULL;
    }
    json_error_t jerr;
    json_t *body = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!body) {
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_json", NULL,
                     "We could not parse the JSON body of your request: %s (line %d, column %d).", jerr.text, jerr.line,
                     jerr.column);
        return NULL;
    }
    if (!json_is_object(body)) {
        json_decref(body);
        fe_error_set(err, 400, SB_ERR_INVALID_REQUEST, "invalid_json", NULL, "The request body must be a JSON object.");
        return NULL;
    }
    return body;
}
