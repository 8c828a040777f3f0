/*
 * sb_sse: Server-Sent Events (text/event-stream), read and written, once for
 * every component: the worker's provider adapters and the stream benchmark
 * read what an upstream or the gateway sends; the frontend and the upstream
 * emulator write it.
 *
 * Reading follows the WHATWG event-stream rules the four upstreams use:
 *  - a line ends in CRLF, LF or CR (anywhere in a chunk, or split across
 *    chunks: a CR that ends one chunk and an LF that opens the next are one
 *    line end); with SB_SSE_LF_ONLY only LF ends a line and a CR right
 *    before it is dropped (a lone CR stays in the line);
 *  - "name: value" is a field (one space after the colon is dropped; a line
 *    without a colon is a field with an empty value); a line starting with
 *    ':' is a comment;
 *  - "data" fields accumulate, joined by LF; "event" names the event; "id",
 *    "retry" and unknown fields are ignored;
 *  - a blank line dispatches the event when it had at least one data field
 *    (its data may be empty: whether "data:" alone means anything, and what
 *    "[DONE]" means, is for the caller) and clears the event name.
 * Unlike a browser, the reader dispatches a last event that the stream ended
 * without its blank line (sb_sse_finish), as every reader here always did;
 * it strips no byte-order mark, as none of them did.
 *
 * Bytes come from a network peer, so nothing is asserted on them: a pending
 * line, or an event's joined data, longer than the reader's limit is
 * refused with -E2BIG before it is stored.
 */
#ifndef SB_SSE_H
#define SB_SSE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "sb_buf.h"

struct evbuffer;

/* ---- reading ----------------------------------------------------------------------------- */

/* Reader flags. */
#define SB_SSE_LF_ONLY 0x1u /* only LF ends a line (a CR before it is dropped); a lone CR is line content */

/* A callback's "stop": the reader ignores every byte after this event. */
#define SB_SSE_STOP 1

/*
 * One event. event is its "event" field ("" when it had none), data its data
 * lines joined by LF (len bytes, NUL-terminated, may hold NUL bytes); both
 * are borrowed until the callback returns. Returns 0 to go on, SB_SSE_STOP to
 * end the reading (the rest of this chunk and every later one is ignored),
 * or a negative errno-style code that the feed returns at once.
 */
typedef int (*sb_sse_event_fn)(void *arg, const char *event, const char *data, size_t len);

/* An incremental reader; embed it (all of its buffers are its own). */
typedef struct sb_sse_reader {
    sb_buf_t line;  /* the line being read, its end not seen yet */
    sb_buf_t data;  /* this event's data lines, joined by LF */
    sb_buf_t event; /* this event's "event" field */
    size_t max;     /* limit in bytes on one line and on one event's data (may be changed between feeds) */
    unsigned flags; /* SB_SSE_* */
    bool have_data; /* a data field came in this event (its data may be empty) */
    bool skip_lf;   /* the last byte was a CR that ended a line: an LF right after it ends nothing */
    bool stopped;   /* a callback said SB_SSE_STOP */
} sb_sse_reader_t;

/* Initialises r with a size limit (0: SB_SSE_MAX_DEFAULT) and flags. */
#define SB_SSE_MAX_DEFAULT (4u * 1024u * 1024u)
void sb_sse_init(sb_sse_reader_t *r, size_t max, unsigned flags);
/* Forgets a partial line and event and a stop (a new stream on the same
 * reader); keeps the buffers, the limit and the flags. */
void sb_sse_reset(sb_sse_reader_t *r);
/* Frees the buffers; r may be initialised again. */
void sb_sse_free(sb_sse_reader_t *r);

/*
 * Reads n bytes, any part of a stream: fn runs once per event, as the blank
 * line that ends it is read; a partial line or event is kept for the next
 * call. Returns the number of events delivered by this call, -E2BIG when a
 * line or an event's data would pass the limit (nothing of it is kept, the
 * reader is then only fit for sb_sse_reset or sb_sse_free), or fn's negative
 * return. After SB_SSE_STOP it returns 0 and reads nothing.
 */
int sb_sse_feed(sb_sse_reader_t *r, const char *p, size_t n, sb_sse_event_fn fn, void *arg)
    __attribute__((warn_unused_result));

/*
 * The stream ended: a last line without its line end is read as a line, and
 * a last event without its blank line is dispatched. Returns what
 * sb_sse_feed does. The reader is then empty (as after sb_sse_reset).
 */
int sb_sse_finish(sb_sse_reader_t *r, sb_sse_event_fn fn, void *arg) __attribute__((warn_unused_result));

/* ---- writing ------------------------------------------------------------------------------ */

/*
 * One event: "event: NAME" (when name is not NULL), then "data: LINE" per
 * line of data (a CR, LF or CRLF in data starts a new data line, so a reader
 * gets LF there), each line ended by eol, and a blank line (eol again).
 * eol is "\n" or Google's "\r\n". With name NULL, eol "\n" and data "[DONE]"
 * that is "data: [DONE]\n\n".
 */
void sb_sse_buf_event(sb_buf_t *out, const char *name, const char *data, size_t len, const char *eol);
void sb_sse_ev_event(struct evbuffer *out, const char *name, const char *data, size_t len, const char *eol);

/*
 * The same with data the JSON text of v, json_dumps(v, flags) (compact flags
 * give one line). Returns 0, or -ENOMEM when v cannot be encoded; nothing is
 * written then.
 */
int sb_sse_buf_json(sb_buf_t *out, const char *name, const json_t *v, size_t flags, const char *eol)
    __attribute__((warn_unused_result));
int sb_sse_ev_json(struct evbuffer *out, const char *name, const json_t *v, size_t flags, const char *eol)
    __attribute__((warn_unused_result));

/* A comment, ": TEXT" + eol + eol (a line of its own per line of text): every
 * reader ignores it, so it keeps an idle connection alive. */
void sb_sse_buf_comment(sb_buf_t *out, const char *text, const char *eol);
void sb_sse_ev_comment(struct evbuffer *out, const char *text, const char *eol);

#endif
