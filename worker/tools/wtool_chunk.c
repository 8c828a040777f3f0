/*
 * wtool_chunk: a file's text cut into chunks by approximate tokens (see
 * wtool_chunk.h for the approximation and where chunks end).
 */
#include "wtool_chunk.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

static bool space(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

static bool continuation(char c)
{
    return ((unsigned char)c & 0xC0) == 0x80;
}

static void why_set(char *why, size_t why_len, const char *msg)
{
    if (why && why_len)
        snprintf(why, why_len, "%s", msg);
}

/* An integer member in [lo, hi]: 0, 1 when absent (or null), -EINVAL otherwise. */
static int int_member(const json_t *o, const char *key, int lo, int hi, int *out)
{
    const json_t *v = json_object_get(o, key);
    if (!v || json_is_null(v))
        return 1;
    /* A float with an integral value (JSON has one number type) is taken too. */
    double d = json_is_integer(v) ? (double)json_integer_value(v) : json_is_real(v) ? json_real_value(v) : -1e300;
    if (d < lo || d > hi || d != (double)(long long)d)
        return -EINVAL;
    *out = (int)d;
    return 0;
}

int sb_chunk_params(const json_t *strategy, int *max_tokens, int *overlap_tokens, char *why, size_t why_len)
{
    *max_tokens = SB_CHUNK_DEFAULT_MAX_TOKENS;
    *overlap_tokens = SB_CHUNK_DEFAULT_OVERLAP_TOKENS;
    if (!strategy || json_is_null(strategy))
        return 0;
    if (!json_is_object(strategy)) {
        why_set(why, why_len, "chunking_strategy must be an object");
        return -EINVAL;
    }
    const char *type = json_string_value(json_object_get(strategy, "type"));
    if (!type || !strcmp(type, "auto"))
        return 0;
    if (strcmp(type, "static")) {
        why_set(why, why_len, "chunking_strategy.type must be 'auto' or 'static'");
        return -EINVAL;
    }
    const json_t *st = json_object_get(strategy, "static");
    if (!json_is_object(st)) {
        why_set(why, why_len, "chunking_strategy.static must be an object");
        return -EINVAL;
    }
    if (int_member(st, "max_chunk_size_tokens", SB_CHUNK_MIN_TOKENS, SB_CHUNK_MAX_TOKENS, max_tokens) < 0) {
        why_set(why, why_len, "chunking_strategy.static.max_chunk_size_tokens must be an integer from 100 to 4096");
        return -EINVAL;
    }
    /* Without an overlap, OpenAI's default: 400, or half the size when that is smaller. */
    if (*overlap_tokens > *max_tokens / 2)
        *overlap_tokens = *max_tokens / 2;
    if (int_member(st, "chunk_overlap_tokens", 0, *max_tokens / 2, overlap_tokens) < 0) {
        why_set(why, why_len,
                "chunking_strategy.static.chunk_overlap_tokens must be an integer from 0 to half of "
                "max_chunk_size_tokens");
        return -EINVAL;
    }
    return 0;
}

size_t sb_chunk_tokens(size_t len)
{
    return (len + SB_CHUNK_BYTES_PER_TOKEN - 1) / SB_CHUNK_BYTES_PER_TOKEN;
}

/* Where the chunk starting at s (with more than max bytes left) ends: the
 * best break in [s + max/2, s + max], by the order of wtool_chunk.h. */
static size_t chunk_end(const char *t, size_t s, size_t max)
{
    size_t limit = s + max, lo = s + max / 2;
    size_t line = 0, sentence = 0, blank = 0;
    for (size_t p = limit; p > lo; p--) {
        /* A break between t[p-1] and t[p]: the chunk would be [s, p). */
        char c = t[p - 1];
        if (c == '\n') {
            if (p - 1 > s && t[p - 2] == '\n')
                return p; /* the last paragraph break: the best there is */
            if (!line)
                line = p;
        } else if (!sentence && (c == '.' || c == '!' || c == '?') && space(t[p])) {
            sentence = p;
        }
        if (!blank && space(c))
            blank = p;
    }
    if (line)
        return line;
    if (sentence)
        return sentence;
    if (blank)
        return blank;
    /* One long word: cut it between characters. */
    size_t e = limit;
    while (e > s + 1 && continuation(t[e]))
        e--;
    return e;
}

/* The next chunk's start: overlap bytes before e, at a word's start, after s. */
static size_t next_start(const char *t, size_t s, size_t e, size_t overlap)
{
    if (overlap == 0 || e - s <= overlap)
        return e;
    size_t ns = e - overlap;
    if (!space(t[ns - 1])) {
        size_t w = ns;
        while (w < e && !space(t[w]))
            w++;
        if (w < e)
            return w; /* the whitespace before the next word; skipped by the caller */
        /* No word break in the overlap: start between characters. */
        while (ns < e && continuation(t[ns]))
            ns++;
    }
    return ns;
}

void sb_chunk_split(const char *text, size_t len, int max_tokens, int overlap_tokens, sb_chunk_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    if (max_tokens < 1)
        max_tokens = 1;
    if (overlap_tokens < 0 || overlap_tokens >= max_tokens)
        overlap_tokens = 0;
    size_t max = (size_t)max_tokens * SB_CHUNK_BYTES_PER_TOKEN;
    size_t overlap = (size_t)overlap_tokens * SB_CHUNK_BYTES_PER_TOKEN;
    size_t cap = 0, s = 0;
    for (;;) {
        while (s < len && space(text[s]))
            s++;
        if (s >= len)
            break;
        size_t e = len - s <= max ? len : chunk_end(text, s, max);
        size_t end = e;
        while (end > s && space(text[end - 1]))
            end--;
        if (*n == cap) {
            cap = cap ? 2 * cap : 16;
            *out = sb_xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = (sb_chunk_t){.off = s, .len = end - s};
        size_t rest = e;
        while (rest < len && space(text[rest]))
            rest++;
        if (rest >= len)
            break; /* nothing new after this chunk: an overlap alone is no chunk */
        s = next_start(text, s, e, overlap);
    }
}
