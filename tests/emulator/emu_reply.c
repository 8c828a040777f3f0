/*
 * emu_reply: the reply description a protocol handler fills (struct
 * sb_emu_reply, emu_internal.h): status, headers and a JSON body, or a stream
 * of chunks (SSE events), an endless tail, a malformed body. It only
 * describes; emu_server.c delivers it (at once, after a delay, chunk by
 * chunk, or never) and frees it with sb_emu_reply_clear.
 */
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "sb_alloc.h"
#include "sb_buf.h"
#include "sb_sse.h"

void sb_emu_reply_init(struct sb_emu_reply *r)
{
    memset(r, 0, sizeof *r);
    r->content_type = "application/json";
    r->hang_after = -1;
    r->drop_after = -1;
    r->reset_after = -1;
}

void sb_emu_reply_clear(struct sb_emu_reply *r)
{
    free(r->body);
    for (size_t i = 0; i < r->nheaders; i++)
        free(r->headers[i].value);
    for (size_t i = 0; i < r->nchunks; i++)
        free(r->chunks[i]);
    free(r->chunks);
    json_decref(r->endless_json);
    sb_emu_reply_init(r);
}

void sb_emu_reply_json(struct sb_emu_reply *r, int status, const json_t *json)
{
    free(r->body);
    r->status = status;
    r->content_type = "application/json";
    r->body = json_dumps(json, JSON_COMPACT | JSON_PRESERVE_ORDER);
    if (!r->body)
        r->body = sb_xstrdup("{}");
    r->body_len = strlen(r->body);
}

void sb_emu_reply_header(struct sb_emu_reply *r, const char *name, const char *value)
{
    if (r->nheaders >= SB_EMU_MAX_HEADERS)
        return;
    r->headers[r->nheaders].name = name;
    r->headers[r->nheaders].value = sb_xstrdup(value);
    r->nheaders++;
}

static void reply_push_chunk(struct sb_emu_reply *r, char *owned)
{
    if (r->nchunks == r->chunks_cap) {
        r->chunks_cap = r->chunks_cap ? r->chunks_cap * 2 : 16;
        r->chunks = sb_xrealloc(r->chunks, r->chunks_cap * sizeof *r->chunks);
    }
    r->chunks[r->nchunks++] = owned;
}

void sb_emu_reply_chunk(struct sb_emu_reply *r, const char *data)
{
    reply_push_chunk(r, sb_xstrdup(data));
}

void sb_emu_reply_sse_json(struct sb_emu_reply *r, const json_t *json)
{
    sb_emu_reply_sse(r, NULL, json, "\n\n");
}

void sb_emu_reply_sse(struct sb_emu_reply *r, const char *event, const json_t *json, const char *terminator)
{
    /* The terminator is the blank line: two of the event's line ends. */
    const char *eol = !strcmp(terminator, "\r\n\r\n") ? "\r\n" : "\n";
    sb_buf_t chunk = {0};
    if (sb_sse_buf_json(&chunk, event, json, JSON_COMPACT | JSON_PRESERVE_ORDER, eol) < 0) {
        sb_buf_free(&chunk);
        return;
    }
    reply_push_chunk(r, chunk.p); /* the chunk list owns it now */
}

void sb_emu_reply_stream_start(struct sb_emu_reply *r)
{
    r->status = 200;
    r->stream = true;
    r->content_type = "text/event-stream; charset=utf-8";
}

void sb_emu_reply_endless(struct sb_emu_reply *r, const char *pre, json_t *json, const char *post,
                          const char *seq_field, long long first_seq)
{
    json_decref(r->endless_json);
    r->endless_json = json;
    r->endless_pre = pre;
    r->endless_post = post;
    r->endless_seq_field = seq_field;
    r->endless_seq = first_seq;
}

void sb_emu_reply_malformed(struct sb_emu_reply *r, const char *text)
{
    free(r->body);
    r->status = 200;
    r->content_type = "application/json";
    r->body = sb_xstrdup(text);
    r->body_len = strlen(r->body);
}
