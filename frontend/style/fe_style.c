/*
 * fe_style: what every request style's hooks share (fe_style.h): reading the
 * HTTP input a parse is given, and the parsed request's life.
 */
#include "fe_style.h"

#include <stdlib.h>
#include <string.h>

const char *fe_style_in_header(const fe_style_in_t *in, const char *name)
{
    return in->http ? sb_http_req_header(in->http, name) : NULL;
}

int fe_style_in_query(const fe_style_in_t *in, const char *name, char *buf, size_t len)
{
    return in->http ? sb_http_query_get(sb_http_req_query(in->http), name, buf, len) : -1;
}

void fe_parsed_init(fe_parsed_t *p)
{
    memset(p, 0, sizeof *p);
    p->store = true;
    p->n = 1;
    p->style_state = json_object();
}

void fe_parsed_free(fe_parsed_t *p)
{
    json_decref(p->canonical);
    free(p->model_id);
    free(p->previous_response_id);
    free(p->conversation_id);
    json_decref(p->prompt_ref);
    json_decref(p->style_state);
    memset(p, 0, sizeof *p);
}
