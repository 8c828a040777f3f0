/*
 * fuzz_trace: sb_trace_parse and sb_tracestate_ok on a client's traceparent
 * and tracestate header values. Invariants: an accepted traceparent formats
 * back (as version 00) to one that parses to the same ids, and its ids are
 * lowercase hex of the right lengths; an accepted tracestate has no byte a
 * header line could be split on.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sb_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (!s)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    sb_trace_t t;
    if (sb_trace_parse(s, &t) == 0) {
        if (strlen(t.trace_id) != 32 || strlen(t.span_id) != 16 || strlen(t.flags) != 2)
            abort();
        char out[SB_TRACEPARENT_LEN + 1];
        sb_trace_format(&t, out, sizeof out);
        sb_trace_t back;
        if (sb_trace_parse(out, &back) != 0 || strcmp(back.trace_id, t.trace_id) || strcmp(back.span_id, t.span_id))
            abort();
    }
    if (sb_tracestate_ok(s) && (strchr(s, '\r') || strchr(s, '\n') || strlen(s) > SB_TRACESTATE_MAX))
        abort();
    free(s);
    return 0;
}
