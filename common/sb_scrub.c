/*
 * sb_scrub: removes known secrets and key-shaped tokens from upstream text
 * (see sb_scrub.h for what counts and why). The text is scanned into a mask
 * of bytes to remove, then copied with each masked run replaced by one
 * marker, so that overlapping rules (a key that is both configured and
 * shaped like one) cannot leave a piece behind.
 */
#include "sb_scrub.h"

#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "sb_alloc.h"

extern char **environ;

struct sb_scrub {
    char **secrets; /* owned */
    size_t n, cap;
};

sb_scrub_t *sb_scrub_new(void)
{
    return sb_xcalloc(1, sizeof(sb_scrub_t));
}

void sb_scrub_destroy(sb_scrub_t **ps)
{
    if (!ps || !*ps)
        return;
    sb_scrub_t *s = *ps;
    for (size_t i = 0; i < s->n; i++) {
        /* Secrets do not linger in freed memory longer than they must. */
        explicit_bzero(s->secrets[i], strlen(s->secrets[i]));
        free(s->secrets[i]);
    }
    free(s->secrets);
    free(s);
    *ps = NULL;
}

bool sb_scrub_add(sb_scrub_t *s, const char *secret)
{
    if (!s || !secret || strlen(secret) < SB_SCRUB_MIN_SECRET || s->n >= SB_SCRUB_MAX_SECRETS ||
        strstr(SB_SCRUB_MARKER, secret)) /* part of the marker: no key, and it could never be removed */
        return false;
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->secrets[i], secret))
            return false;
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->secrets = sb_xrealloc(s->secrets, s->cap * sizeof *s->secrets);
    }
    s->secrets[s->n++] = sb_xstrdup(secret);
    return true;
}

size_t sb_scrub_count(const sb_scrub_t *s)
{
    return s ? s->n : 0;
}

/* Whether an environment variable's name says it holds a credential. */
static bool sb_scrub_secret_name(const char *name, size_t len)
{
    static const char *const words[] = {"KEY", "TOKEN", "SECRET", "PASSWORD", "CREDENTIAL"};
    for (size_t w = 0; w < sizeof words / sizeof words[0]; w++) {
        size_t wl = strlen(words[w]);
        for (size_t i = 0; i + wl <= len; i++)
            if (!strncasecmp(name + i, words[w], wl))
                return true;
    }
    return false;
}

size_t sb_scrub_add_env(sb_scrub_t *s)
{
    size_t added = 0;
    for (char **e = environ; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (eq && sb_scrub_secret_name(*e, (size_t)(eq - *e)) && sb_scrub_add(s, eq + 1))
            added++;
    }
    return added;
}

/*
 * The shapes.
 */

/* Characters of a key or token (base64url, base64, masked keys' '*'). */
static bool sb_scrub_tokch(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '*' || c == '.' || c == '~' || c == '+' || c == '/' || c == '=';
}

/* Characters of a provider key after its prefix: no '.', '/' or '=', so a
 * key at the end of a sentence or in a URL stops where it should. */
static bool sb_scrub_keych(unsigned char c)
{
    return isalnum(c) || c == '_' || c == '-' || c == '*';
}

static bool sb_scrub_star(unsigned char c)
{
    return c == '*';
}

/* A token may start at i: nothing token-like right before it. */
static bool sb_scrub_boundary(const char *t, size_t i)
{
    return i == 0 || !(isalnum((unsigned char)t[i - 1]) || t[i - 1] == '_' || t[i - 1] == '-');
}

static size_t sb_scrub_run(const char *t, size_t n, size_t i, bool (*cls)(unsigned char))
{
    size_t j = i;
    while (j < n && cls((unsigned char)t[j]))
        j++;
    return j - i;
}

/* A token that ends a sentence keeps its full stop. */
static size_t sb_scrub_trim_dots(const char *t, size_t i, size_t len)
{
    while (len > 0 && t[i + len - 1] == '.')
        len--;
    return len;
}

static void sb_scrub_mark(bool *mask, size_t from, size_t len)
{
    memset(mask + from, 1, len);
}

/* Provider key prefixes and how many key characters must follow. */
static const struct {
    const char *prefix;
    size_t min_rest;
} sb_scrub_prefixes[] = {
    {"sk-", 16},   /* OpenAI (sk-proj-, sk-svcacct-), Anthropic sk-ant-, OpenRouter sk-or- */
    {"AIza", 30},  /* Google API keys: AIza + 35 */
    {"gsk_", 20},  /* Groq */
    {"hf_", 30},   /* Hugging Face */
    {"xai-", 30},  /* xAI */
    {"pplx-", 30}, /* Perplexity */
    {"r8_", 30},   /* Replicate */
};

/* Header and parameter names whose value is always a credential. */
static const char *const sb_scrub_names[] = {
    "proxy-authorization", "authorization", "x-goog-api-key", "x-api-key", "api-key", "api_key", "apikey",
    "access_token",        "access-token",  "client_secret",  "password",  "passwd",
};

/* Words after which a long mixed token is taken to be a credential. */
static const char *const sb_scrub_words[] = {"key", "token", "secret", "password"};

/* The value after a name at t[i..i+nl): optional quotes and spaces, a ':' or
 * '=' (required when need_sep), more quotes and spaces. Returns the value's
 * start, or n when the separator is missing. */
static size_t sb_scrub_value_start(const char *t, size_t n, size_t i, bool need_sep)
{
    size_t j = i;
    bool sep = false;
    for (int k = 0; j < n && k < 6; k++, j++) {
        char c = t[j];
        if (c == ':' || c == '=') {
            if (sep)
                break;
            sep = true;
        } else if (c != ' ' && c != '\t' && c != '"' && c != '\'') {
            break;
        }
    }
    return need_sep && !sep ? n : j;
}

static bool sb_scrub_mixed(const char *t, size_t i, size_t len)
{
    bool alpha = false, digit = false;
    for (size_t k = i; k < i + len; k++) {
        alpha |= isalpha((unsigned char)t[k]) != 0;
        digit |= isdigit((unsigned char)t[k]) != 0;
    }
    return alpha && digit;
}

/* Whether a word starts at i: not in the middle of a longer word (an '_' or
 * '-' before it is fine: "max_tokens", "api-token"). */
static bool sb_scrub_word_at(const char *t, size_t n, size_t i, const char *w, size_t *end)
{
    size_t wl = strlen(w);
    if (i + wl > n || strncasecmp(t + i, w, wl) || (i > 0 && isalpha((unsigned char)t[i - 1])))
        return false;
    size_t j = i + wl;
    if (j < n && (t[j] == 's' || t[j] == 'S'))
        j++; /* keys, tokens */
    if (j < n && isalnum((unsigned char)t[j]))
        return false;
    *end = j;
    return true;
}

static void sb_scrub_shapes(const char *t, size_t n, bool *mask)
{
    for (size_t i = 0; i < n; i++) {
        /* key / token / secret followed by a long mixed token ("api_token" too). */
        for (size_t k = 0; k < sizeof sb_scrub_words / sizeof sb_scrub_words[0]; k++) {
            size_t end;
            if (!sb_scrub_word_at(t, n, i, sb_scrub_words[k], &end))
                continue;
            size_t j = sb_scrub_value_start(t, n, end, false);
            if (j >= n)
                continue;
            size_t run = sb_scrub_trim_dots(t, j, sb_scrub_run(t, n, j, sb_scrub_tokch));
            if (run >= 16 && sb_scrub_mixed(t, j, run))
                sb_scrub_mark(mask, j, run);
        }
        if (!sb_scrub_boundary(t, i))
            continue;
        /* Provider keys. */
        for (size_t p = 0; p < sizeof sb_scrub_prefixes / sizeof sb_scrub_prefixes[0]; p++) {
            size_t pl = strlen(sb_scrub_prefixes[p].prefix);
            if (i + pl <= n && !memcmp(t + i, sb_scrub_prefixes[p].prefix, pl)) {
                size_t run = sb_scrub_run(t, n, i + pl, sb_scrub_keych);
                if (run >= sb_scrub_prefixes[p].min_rest)
                    sb_scrub_mark(mask, i, pl + run);
            }
        }
        /* A key as providers show it masked ("0a1b2c****...wxyz"): its
         * visible ends are still pieces of the secret. */
        {
            size_t run = sb_scrub_run(t, n, i, sb_scrub_keych);
            if (run >= 12 && memmem(t + i, run, "****", 4) && run > sb_scrub_run(t, n, i, sb_scrub_star))
                sb_scrub_mark(mask, i, run);
        }
        /* JWTs: base64url JSON header "eyJ...", dot-separated parts. */
        if (i + 3 <= n && !memcmp(t + i, "eyJ", 3)) {
            size_t run = sb_scrub_trim_dots(t, i, sb_scrub_run(t, n, i, sb_scrub_tokch));
            if (run >= 30 && memchr(t + i, '.', run))
                sb_scrub_mark(mask, i, run);
        }
        /* Bearer <token>. */
        if (i + 7 <= n && !strncasecmp(t + i, "bearer", 6) && (t[i + 6] == ' ' || t[i + 6] == '\t')) {
            size_t j = i + 6;
            while (j < n && (t[j] == ' ' || t[j] == '\t'))
                j++;
            size_t run = sb_scrub_trim_dots(t, j, sb_scrub_run(t, n, j, sb_scrub_tokch));
            if (run >= SB_SCRUB_MIN_SECRET)
                sb_scrub_mark(mask, j, run);
        }
        /* name: value, name=value. */
        for (size_t k = 0; k < sizeof sb_scrub_names / sizeof sb_scrub_names[0]; k++) {
            size_t nl = strlen(sb_scrub_names[k]);
            if (i + nl > n || strncasecmp(t + i, sb_scrub_names[k], nl) ||
                (i + nl < n && (isalnum((unsigned char)t[i + nl]) || t[i + nl] == '_' || t[i + nl] == '-')))
                continue;
            size_t j = sb_scrub_value_start(t, n, i + nl, true);
            if (j >= n)
                continue;
            size_t run = sb_scrub_run(t, n, j, sb_scrub_tokch);
            /* "Authorization: Bearer x": the scheme is not the secret. */
            if (run > 0 && j + run < n && t[j + run] == ' ' && !strncasecmp(sb_scrub_names[k] + nl - 5, "ation", 5)) {
                j += run;
                while (j < n && t[j] == ' ')
                    j++;
                run = sb_scrub_run(t, n, j, sb_scrub_tokch);
            }
            run = sb_scrub_trim_dots(t, j, run);
            if (run >= SB_SCRUB_MIN_SECRET)
                sb_scrub_mark(mask, j, run);
        }
    }
}

/* Every occurrence of secret, and a tail of the text that is its start. */
static void sb_scrub_secret(const char *t, size_t n, const char *secret, bool *mask)
{
    size_t sl = strlen(secret);
    if (sl < SB_SCRUB_MIN_SECRET || strstr(SB_SCRUB_MARKER, secret))
        return;
    const char *p = t;
    while ((size_t)(p - t) + sl <= n) {
        const char *hit = memmem(p, n - (size_t)(p - t), secret, sl);
        if (!hit)
            break;
        sb_scrub_mark(mask, (size_t)(hit - t), sl);
        p = hit + 1;
    }
    /* A marker left by an earlier pass is not the start of a secret (one
     * that begins "edacted]" would otherwise grow the text pass after pass;
     * found by tests/fuzz/fuzz_scrub.c). */
    size_t ml = sizeof SB_SCRUB_MARKER - 1;
    bool marker_end = n >= ml && !memcmp(t + n - ml, SB_SCRUB_MARKER, ml);
    if (strstr(secret, SB_SCRUB_MARKER))
        return;
    for (size_t k = (sl - 1 < n ? sl - 1 : n); k >= SB_SCRUB_MIN_SECRET; k--) {
        if (marker_end && k < ml)
            break;
        if (!memcmp(t + n - k, secret, k)) {
            sb_scrub_mark(mask, n - k, k);
            break;
        }
    }
}

/* The mask of bytes to remove (owned), or NULL when there is none. */
static bool *sb_scrub_mask(const sb_scrub_t *s, const char *text, const char *extra, size_t n)
{
    bool *mask = sb_xcalloc(n ? n : 1, sizeof *mask);
    for (size_t i = 0; s && i < s->n; i++)
        sb_scrub_secret(text, n, s->secrets[i], mask);
    if (extra)
        sb_scrub_secret(text, n, extra, mask);
    sb_scrub_shapes(text, n, mask);
    for (size_t i = 0; i < n; i++)
        if (mask[i])
            return mask;
    free(mask);
    return NULL;
}

/* One pass of sb_scrub_text. */
static char *sb_scrub_once(const sb_scrub_t *s, const char *text, const char *extra)
{
    size_t n = strlen(text);
    bool *mask = sb_scrub_mask(s, text, extra, n);
    if (!mask)
        return sb_xstrdup(text);
    /* Worst case: every other byte masked, each becoming a marker. */
    size_t cap = n + (n / 2 + 1) * sizeof SB_SCRUB_MARKER + 1;
    char *out = sb_xmalloc(cap);
    size_t o = 0;
    for (size_t i = 0; i < n;) {
        if (!mask[i]) {
            out[o++] = text[i++];
            continue;
        }
        size_t ml = sizeof SB_SCRUB_MARKER - 1;
        if (o < ml || memcmp(out + o - ml, SB_SCRUB_MARKER, ml) != 0) { /* next to an earlier pass's: one */
            memcpy(out + o, SB_SCRUB_MARKER, ml);
            o += ml;
        }
        while (i < n && mask[i])
            i++;
    }
    out[o] = '\0';
    free(mask);
    return out;
}

/* A removal can expose a shape: a key glued to a secret ("...SECRETsk-...")
 * has no word boundary until the secret becomes a marker. So passes repeat
 * until nothing changes (a marker is never masked itself; found by
 * tests/fuzz/fuzz_scrub.c). */
char *sb_scrub_text(const sb_scrub_t *s, const char *text, const char *extra)
{
    if (!text)
        return NULL;
    char *out = sb_scrub_once(s, text, extra);
    for (int pass = 0; pass < 8; pass++) {
        char *next = sb_scrub_once(s, out, extra);
        bool same = strcmp(next, out) == 0;
        free(out);
        out = next;
        if (same)
            break;
    }
    return out;
}

bool sb_scrub_found(const sb_scrub_t *s, const char *text, const char *extra)
{
    if (!text)
        return false;
    bool *mask = sb_scrub_mask(s, text, extra, strlen(text));
    bool found = mask != NULL;
    free(mask);
    return found;
}
