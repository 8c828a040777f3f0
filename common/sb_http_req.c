/*
 * sb_http_req: a request's memory. A request is several KiB (its parsed
 * head, up to SB_HTTP_MAX_FIELDS fields), and allocating that much for every
 * request made glibc consolidate its small-chunk bins each time; freed
 * requests are kept (up to SB_HTTP_SPARE_MAX per server) and reused.
 */
#include "sb_http_internal.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

sb_http_req_t *sb_http_req_new(sb_http_conn_t *c)
{
    sb_http_t *srv = c ? c->srv : NULL; /* none: a detached request (tests) */
    sb_http_req_t *r = srv ? srv->spare : NULL;
    if (r) {
        struct evbuffer *out = r->out_headers;
        srv->spare = r->next_spare;
        srv->n_spare--;
        memset(r, 0, sizeof *r);
        r->out_headers = out;
    } else {
        r = sb_xcalloc(1, sizeof *r);
        r->out_headers = evbuffer_new();
    }
    r->c = c;
    r->body_read = true; /* until a head declares a body */
    return r;
}

#define SB_HTTP_SPARE_MAX SB_SPARES(64)

void sb_http_req_free(sb_http_req_t *r)
{
    if (!r)
        return;
    sb_http_t *srv = r->c ? r->c->srv : NULL;
    if (srv)
        srv->body_used -= r->reserved;
    if (r->body)
        evbuffer_free(r->body);
    free(r->head);
    free(r->path);
    free(r->target);
    if (srv && srv->n_spare < SB_HTTP_SPARE_MAX && r->out_headers) {
        evbuffer_drain(r->out_headers, evbuffer_get_length(r->out_headers));
        r->next_spare = srv->spare;
        srv->spare = r;
        srv->n_spare++;
        return;
    }
    if (r->out_headers)
        evbuffer_free(r->out_headers);
    free(r);
}

void sb_http_spare_free(sb_http_t *h)
{
    while (h->spare) {
        sb_http_req_t *r = h->spare;
        h->spare = r->next_spare;
        evbuffer_free(r->out_headers);
        free(r);
    }
    h->n_spare = 0;
}
