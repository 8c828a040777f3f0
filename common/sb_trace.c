/*
 * sb_trace: see sb_trace.h.
 */
#include "sb_trace.h"

#include <stdio.h>
#include <string.h>

#include "sb_id.h"

static bool sb_trace_hex(const char *s, size_t n, bool nonzero)
{
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
            return false;
        any |= c != '0';
    }
    return any || !nonzero;
}

int sb_trace_parse(const char *v, sb_trace_t *t)
{
    if (!v)
        return -1;
    size_t len = strlen(v);
    if (len < SB_TRACEPARENT_LEN || !sb_trace_hex(v, 2, false) || !strncmp(v, "ff", 2))
        return -1;
    bool v00 = !strncmp(v, "00", 2);
    if ((v00 && len != SB_TRACEPARENT_LEN) || (!v00 && len > SB_TRACEPARENT_LEN && v[SB_TRACEPARENT_LEN] != '-'))
        return -1;
    if (v[2] != '-' || v[35] != '-' || v[52] != '-')
        return -1;
    if (!sb_trace_hex(v + 3, 32, true) || !sb_trace_hex(v + 36, 16, true) || !sb_trace_hex(v + 53, 2, false))
        return -1;
    memcpy(t->trace_id, v + 3, 32);
    t->trace_id[32] = '\0';
    memcpy(t->span_id, v + 36, 16);
    t->span_id[16] = '\0';
    memcpy(t->flags, v + 53, 2);
    t->flags[2] = '\0';
    return 0;
}

bool sb_tracestate_ok(const char *v)
{
    if (!v)
        return false;
    size_t n = 0;
    for (; v[n]; n++)
        if (n >= SB_TRACESTATE_MAX || v[n] < 0x20 || v[n] > 0x7e)
            return false;
    return n > 0;
}

void sb_trace_start(sb_trace_t *t)
{
    char id[SB_ID_MAX];
    sb_id_new_ordered(id, sizeof id, "", 10); /* 12 hex of time + 20 random = 32 */
    memcpy(t->trace_id, id, 33);
    snprintf(t->flags, sizeof t->flags, "00");
    t->span_id[0] = '\0';
}

void sb_trace_span(sb_trace_t *t)
{
    char id[SB_ID_MAX];
    sb_id_new(id, sizeof id, "", 8);
    memcpy(t->span_id, id, 17);
}

void sb_trace_format(const sb_trace_t *t, char *out, size_t len)
{
    snprintf(out, len, "00-%s-%s-%s", t->trace_id, t->span_id, t->flags);
}
