/*
 * sb_sse: the Server-Sent Events reader and writer (see sb_sse.h for the
 * rules). The reader is a line splitter feeding a field interpreter; the
 * splitter is the only part that sees chunk boundaries, so an event comes out
 * the same however the stream was cut.
 */
#include "sb_sse.h"

#include <errno.h>
#include <event2/buffer.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

/* ---- reading ----------------------------------------------------------------------------- */

void sb_sse_init(sb_sse_reader_t *r, size_t max, unsigned flags)
{
    memset(r, 0, sizeof *r);
    r->max = max ? max : SB_SSE_MAX_DEFAULT;
    r->flags = flags;
}

void sb_sse_reset(sb_sse_reader_t *r)
{
    r->line.len = 0;
    r->data.len = 0;
    r->event.len = 0;
    r->have_data = false;
    r->skip_lf = false;
    r->stopped = false;
}

void sb_sse_free(sb_sse_reader_t *r)
{
    sb_buf_free(&r->line);
    sb_buf_free(&r->data);
    sb_buf_free(&r->event);
    sb_sse_init(r, r->max, r->flags);
}

/* The blank line: the event goes out if a data field came. Returns fn's
 * answer (SB_SSE_STOP is noted in r and becomes 0). */
static int sb_sse_dispatch(sb_sse_reader_t *r, sb_sse_event_fn fn, void *arg, int *events)
{
    int rc = 0;
    if (r->have_data) {
        if (*events < INT_MAX)
            (*events)++;
        /* data.p is NUL-terminated: every data field added to it, even an empty one. */
        rc = fn(arg, r->event.len ? r->event.p : "", r->data.p, r->data.len);
    }
    r->data.len = 0;
    r->event.len = 0;
    r->have_data = false;
    if (rc == SB_SSE_STOP) {
        r->stopped = true;
        rc = 0;
    }
    return rc < 0 ? rc : 0;
}

/* One whole line, without its line end. */
static int sb_sse_line(sb_sse_reader_t *r, const char *line, size_t n, sb_sse_event_fn fn, void *arg, int *events)
{
    if (n == 0)
        return sb_sse_dispatch(r, fn, arg, events);
    if (line[0] == ':')
        return 0; /* a comment */
    const char *colon = memchr(line, ':', n);
    size_t name_len = colon ? (size_t)(colon - line) : n;
    const char *value = colon ? colon + 1 : line + n;
    size_t vlen = (size_t)(line + n - value);
    if (vlen > 0 && *value == ' ') {
        value++;
        vlen--;
    }
    if (name_len == 4 && !memcmp(line, "data", 4)) {
        size_t sep = r->have_data ? 1 : 0;
        if (r->data.len > r->max || sep + vlen > r->max - r->data.len) /* (max may have shrunk) */
            return -E2BIG;
        if (sep)
            sb_buf_add(&r->data, "\n", 1);
        sb_buf_add(&r->data, value, vlen);
        r->have_data = true;
    } else if (name_len == 5 && !memcmp(line, "event", 5)) {
        r->event.len = 0;
        sb_buf_add(&r->event, value, vlen); /* a line is within the limit, so its value is */
    }
    return 0; /* id, retry and unknown fields carry nothing a reader here needs */
}

/* Where the line that starts at p ends (the index of its line end), or n. */
static size_t sb_sse_line_end(const sb_sse_reader_t *r, const char *p, size_t n)
{
    if (r->flags & SB_SSE_LF_ONLY) {
        const char *lf = memchr(p, '\n', n);
        return lf ? (size_t)(lf - p) : n;
    }
    size_t j = 0;
    while (j < n && p[j] != '\n' && p[j] != '\r')
        j++;
    return j;
}

int sb_sse_feed(sb_sse_reader_t *r, const char *p, size_t n, sb_sse_event_fn fn, void *arg)
{
    int events = 0;
    size_t i = 0;
    while (i < n && !r->stopped) {
        if (r->skip_lf) { /* the LF of a CRLF whose CR ended the last chunk */
            r->skip_lf = false;
            if (p[i] == '\n') {
                i++;
                continue;
            }
        }
        size_t j = i + sb_sse_line_end(r, p + i, n - i);
        if (r->line.len > r->max || j - i > r->max - r->line.len)
            return -E2BIG; /* a line that would pass the limit is not stored */
        if (j == n) {      /* the line goes on in the next chunk */
            sb_buf_add(&r->line, p + i, n - i);
            break;
        }
        const char *line = p + i;
        size_t len = j - i;
        if (r->line.len > 0) { /* it began in an earlier chunk */
            sb_buf_add(&r->line, line, len);
            line = r->line.p;
            len = r->line.len;
        }
        if (p[j] == '\r') {
            if (j + 1 < n && p[j + 1] == '\n')
                j++;
            else if (j + 1 == n)
                r->skip_lf = true;
        } else if ((r->flags & SB_SSE_LF_ONLY) && len > 0 && line[len - 1] == '\r') {
            len--;
        }
        i = j + 1;
        int rc = sb_sse_line(r, line, len, fn, arg, &events);
        r->line.len = 0;
        if (rc < 0)
            return rc;
    }
    return events;
}

int sb_sse_finish(sb_sse_reader_t *r, sb_sse_event_fn fn, void *arg)
{
    int events = 0, rc = 0;
    if (!r->stopped && r->line.len > 0) {
        size_t len = r->line.len;
        if ((r->flags & SB_SSE_LF_ONLY) && r->line.p[len - 1] == '\r')
            len--;
        rc = sb_sse_line(r, r->line.p, len, fn, arg, &events);
    }
    if (rc == 0 && !r->stopped)
        rc = sb_sse_dispatch(r, fn, arg, &events);
    sb_sse_reset(r);
    return rc < 0 ? rc : events;
}

/* ---- writing ------------------------------------------------------------------------------ */

/* Where the bytes go: an sb_buf or an evbuffer. */
typedef void (*sb_sse_put_fn)(void *sink, const char *p, size_t n);

static void sb_sse_put_buf(void *sink, const char *p, size_t n)
{
    sb_buf_add(sink, p, n);
}

static void sb_sse_put_ev(void *sink, const char *p, size_t n)
{
    /* Fails only when out of memory, where the connection is lost anyway. */
    (void)evbuffer_add(sink, p, n);
}

/* "PREFIX LINE eol" for each line of text (an empty text is one empty line). */
static void sb_sse_lines(sb_sse_put_fn put, void *sink, const char *prefix, const char *text, size_t len,
                         const char *eol)
{
    size_t plen = strlen(prefix), elen = strlen(eol), i = 0;
    for (;;) {
        size_t j = i;
        while (j < len && text[j] != '\n' && text[j] != '\r')
            j++;
        put(sink, prefix, plen);
        put(sink, text + i, j - i);
        put(sink, eol, elen);
        if (j == len)
            return;
        if (text[j] == '\r' && j + 1 < len && text[j + 1] == '\n')
            j++;
        i = j + 1;
    }
}

static void sb_sse_event_to(sb_sse_put_fn put, void *sink, const char *name, const char *data, size_t len,
                            const char *eol)
{
    if (name)
        sb_sse_lines(put, sink, "event: ", name, strlen(name), eol);
    sb_sse_lines(put, sink, "data: ", data, len, eol);
    put(sink, eol, strlen(eol));
}

static int sb_sse_json_to(sb_sse_put_fn put, void *sink, const char *name, const json_t *v, size_t flags,
                          const char *eol)
{
    char *text = json_dumps(v, flags);
    if (!text)
        return -ENOMEM;
    sb_sse_event_to(put, sink, name, text, strlen(text), eol);
    free(text);
    return 0;
}

static void sb_sse_comment_to(sb_sse_put_fn put, void *sink, const char *text, const char *eol)
{
    sb_sse_lines(put, sink, ": ", text, strlen(text), eol);
    put(sink, eol, strlen(eol));
}

void sb_sse_buf_event(sb_buf_t *out, const char *name, const char *data, size_t len, const char *eol)
{
    sb_sse_event_to(sb_sse_put_buf, out, name, data, len, eol);
}

void sb_sse_ev_event(struct evbuffer *out, const char *name, const char *data, size_t len, const char *eol)
{
    sb_sse_event_to(sb_sse_put_ev, out, name, data, len, eol);
}

int sb_sse_buf_json(sb_buf_t *out, const char *name, const json_t *v, size_t flags, const char *eol)
{
    return sb_sse_json_to(sb_sse_put_buf, out, name, v, flags, eol);
}

int sb_sse_ev_json(struct evbuffer *out, const char *name, const json_t *v, size_t flags, const char *eol)
{
    return sb_sse_json_to(sb_sse_put_ev, out, name, v, flags, eol);
}

void sb_sse_buf_comment(sb_buf_t *out, const char *text, const char *eol)
{
    sb_sse_comment_to(sb_sse_put_buf, out, text, eol);
}

void sb_sse_ev_comment(struct evbuffer *out, const char *text, const char *eol)
{
    sb_sse_comment_to(sb_sse_put_ev, out, text, eol);
}
