/*
 * sb_evbatch: several events of one job in one EVENT message.
 *
 * An EVENT body is either one event (a msgpack map) or a batch: a msgpack
 * array of events, in order, of which only the last may be final (the
 * header's "final" says whether it is). A worker batches what it has ready at
 * one moment (a non-streamed job's whole answer, or everything one upstream
 * read produced), so a job costs one message per hop rather than one per
 * event; batches are cut at SB_EVBATCH_MAX_BYTES so no frame nears the
 * protocol's frame limit (docs/protocol.md).
 */
#ifndef SB_EVBATCH_H
#define SB_EVBATCH_H

#include <jansson.h>
#include <stddef.h>

/* A batch closes once its encoded events reach this many bytes. */
#define SB_EVBATCH_MAX_BYTES (1024u * 1024u)

/* Called with each encoded batch of events [from, to) (body: a msgpack map
 * when to - from == 1, else an array); non-zero stops the walk and is
 * returned. */
typedef int (*sb_evbatch_send_fn)(const char *body, size_t len, size_t from, size_t to, void *arg);

/* Encodes events[from..to) (a json array of event objects) into as few
 * batches as SB_EVBATCH_MAX_BYTES allows, calling send for each in order.
 * Returns 0, or the first non-zero send result. */
int sb_evbatch_encode(const json_t *events, size_t from, size_t to, sb_evbatch_send_fn send, void *arg);

/* Decodes an EVENT body: *out is a new array of the events it holds (one for
 * a single event). Returns 0, or -EINVAL when the body is not an event or an
 * array of one to SB_EVBATCH_MAX_EVENTS events (objects), with *out NULL. */
#define SB_EVBATCH_MAX_EVENTS 65536
int sb_evbatch_decode(const void *data, size_t len, json_t **out) __attribute__((warn_unused_result));

#endif
