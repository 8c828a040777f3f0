/*
 * emu_embed: the deterministic vectors of the emulator's embedding models
 * (OpenAI's /v1/embeddings and Gemini's embedContent both answer with them).
 *
 * The gateway's file search is tested against these vectors (recall on a
 * small labelled set, score thresholds, hybrid ranking), so they must be more
 * than stable noise: two texts that share content words must come out close,
 * and texts that share none must come out nearly orthogonal. The scheme is a
 * hashed bag of words ("feature hashing"):
 *
 *   1. Words: maximal runs of ASCII letters and digits and of non-ASCII bytes
 *      (so UTF-8 words stay whole), ASCII lower-cased.
 *   2. A crude stemmer folds common English endings, in this order, keeping a
 *      stem of at least 3 bytes: "ies" -> "y", "sses" -> "ss", "ing", "ed",
 *      "ly", "es" after s/x/z/ch/sh, then a plain "s" (not "ss", "us", "is").
 *      "searching", "searched" and "searches" all become "search".
 *   3. Stop words (a short English list: the, a, of, and, is, ...) are dropped,
 *      so "the" in two texts does not make them look alike; a text made only of
 *      stop words keeps them, and a text without any word at all becomes one
 *      feature: its whole byte string.
 *   4. Each distinct stem gets weight 1 + ln(count) (sublinear, so one word
 *      repeated does not swamp the others) and is added at two coordinates,
 *      each chosen with its sign by a 64-bit hash of the stem (FNV-1a, then
 *      two rounds of the splitmix64 finaliser): two slots halve the damage
 *      of a collision between two words in a small dimension.
 *   5. The vector is scaled to unit length (L2).
 *
 * The cosine of two vectors is then close to the weighted share of stems the
 * two texts have in common, whatever the dimension; a request's `dimensions`
 * (or Gemini's outputDimensionality) hashes straight into that many slots
 * rather than cutting a longer vector, so short vectors keep their meaning
 * (unlike the real text-embedding-3 models, whose shortened vectors are
 * prefixes; nothing here depends on that). OpenAI's integer token input is
 * embedded the same way, each token id a word of its own.
 */
#include "emu_embed.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"

#define STEM_MIN 3

struct model_dims {
    const char *name;
    size_t dims;
};

/* The providers' models and their native sizes (a request may ask for fewer). */
static const struct model_dims known_models[] = {
    {"text-embedding-3-small", 1536}, {"text-embedding-3-large", 3072}, {"text-embedding-ada-002", 1536},
    {"gemini-embedding-001", 3072},   {"text-embedding-004", 768},      {"embedding-001", 768},
};

static const struct model_dims *known(const char *model)
{
    for (size_t i = 0; model && i < sizeof known_models / sizeof known_models[0]; i++)
        if (!strcmp(model, known_models[i].name))
            return &known_models[i];
    return NULL;
}

size_t sb_emu_embed_default_dims(const char *model)
{
    const struct model_dims *m = known(model);
    return m ? m->dims : SB_EMU_EMBED_DIMS;
}

size_t sb_emu_embed_max_dims(const char *model)
{
    const struct model_dims *m = known(model);
    return m ? m->dims : SB_EMU_EMBED_MAX_DIMS;
}

/* ---- hashing ---------------------------------------------------------------------------- */

static uint64_t fnv1a(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

static uint64_t mix(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Adds weight at the two signed slots of a feature. */
static void add_feature(double *acc, size_t dims, const void *bytes, size_t len, double weight)
{
    uint64_t h = mix(fnv1a(bytes, len));
    for (int k = 0; k < 2; k++) {
        acc[h % dims] += (h >> 63) ? -weight : weight;
        h = mix(h);
    }
}

static void normalise(const double *acc, size_t dims, float *out)
{
    double sum = 0;
    for (size_t i = 0; i < dims; i++)
        sum += acc[i] * acc[i];
    double norm = sqrt(sum);
    for (size_t i = 0; i < dims; i++)
        out[i] = norm > 0 ? (float)(acc[i] / norm) : 0.0f;
    if (norm == 0 && dims > 0)
        out[0] = 1.0f; /* a text whose features all cancelled still gets a unit vector */
}

/* ---- words ---------------------------------------------------------------------------------- */

static const char *const stop_words[] = {
    "a",    "an",   "and",   "are",  "as",    "at",    "be",    "but",  "by",   "do",    "for", "from",
    "had",  "has",  "have",  "he",   "her",   "his",   "i",     "if",   "in",   "into",  "is",  "it",
    "its",  "me",   "my",    "no",   "not",   "of",    "on",    "or",   "our",  "she",   "so",  "than",
    "that", "the",  "their", "them", "then",  "there", "these", "they", "this", "those", "to",  "was",
    "we",   "were", "what",  "when", "which", "who",   "will",  "with", "you",  "your",  NULL};

static bool is_stop(const char *w)
{
    for (const char *const *s = stop_words; *s; s++)
        if (!strcmp(w, *s))
            return true;
    return false;
}

static bool word_byte(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c >= 0x80;
}

static bool ends(const char *w, size_t n, const char *suffix)
{
    size_t k = strlen(suffix);
    return n >= k && !memcmp(w + n - k, suffix, k);
}

/* Folds the endings of w (NUL-terminated, length n) in place; see the file comment. */
static void stem(char *w)
{
    size_t n = strlen(w);
    if (ends(w, n, "ies") && n - 3 + 1 >= STEM_MIN) {
        w[n - 3] = 'y';
        w[n - 2] = '\0';
    } else if (ends(w, n, "sses")) {
        w[n - 2] = '\0';
    } else if (ends(w, n, "ing") && n - 3 >= STEM_MIN) {
        w[n - 3] = '\0';
    } else if (ends(w, n, "ed") && n - 2 >= STEM_MIN) {
        w[n - 2] = '\0';
    } else if (ends(w, n, "ly") && n - 2 >= STEM_MIN) {
        w[n - 2] = '\0';
    } else if (ends(w, n, "es") && n - 2 >= STEM_MIN &&
               (ends(w, n - 2, "s") || ends(w, n - 2, "x") || ends(w, n - 2, "z") || ends(w, n - 2, "ch") ||
                ends(w, n - 2, "sh"))) {
        w[n - 2] = '\0';
    } else if (ends(w, n, "s") && !ends(w, n, "ss") && !ends(w, n, "us") && !ends(w, n, "is") && n - 1 >= STEM_MIN) {
        w[n - 1] = '\0';
    }
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds each distinct word of words[0..n) with weight 1 + ln(count); sorts words. */
static void add_words(double *acc, size_t dims, char **words, size_t n)
{
    qsort(words, n, sizeof *words, cmp_str);
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && !strcmp(words[i], words[j]))
            j++;
        add_feature(acc, dims, words[i], strlen(words[i]), 1.0 + log((double)(j - i)));
        i = j;
    }
}

void sb_emu_embed_text(const char *text, size_t dims, float *out)
{
    if (dims == 0)
        return;
    double *acc = sb_xcalloc(dims, sizeof *acc);
    size_t len = strlen(text);
    char *copy = sb_xmalloc(len + 1);
    /* At most one word per two bytes of text (a word and its separator), plus one. */
    char **content = sb_xmalloc((len / 2 + 1) * sizeof *content);
    char **stops = sb_xmalloc((len / 2 + 1) * sizeof *stops);
    size_t ncontent = 0, nstops = 0;
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        if (!word_byte((unsigned char)text[i])) {
            i++;
            continue;
        }
        char *w = copy + o;
        while (i < len && word_byte((unsigned char)text[i])) {
            char c = text[i++];
            copy[o++] = (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
        }
        copy[o++] = '\0';
        if (is_stop(w)) {
            stops[nstops++] = w;
        } else {
            stem(w);
            content[ncontent++] = w;
        }
    }
    if (ncontent > 0)
        add_words(acc, dims, content, ncontent);
    else if (nstops > 0)
        add_words(acc, dims, stops, nstops);
    else
        add_feature(acc, dims, text, len, 1.0);
    normalise(acc, dims, out);
    free(stops);
    free(content);
    free(copy);
    free(acc);
}

void sb_emu_embed_tokens(const long long *tokens, size_t n, size_t dims, float *out)
{
    if (dims == 0)
        return;
    double *acc = sb_xcalloc(dims, sizeof *acc);
    for (size_t i = 0; i < n; i++) {
        unsigned char b[8];
        for (int k = 0; k < 8; k++)
            b[k] = (unsigned char)((unsigned long long)tokens[i] >> (8 * k));
        add_feature(acc, dims, b, sizeof b, 1.0);
    }
    normalise(acc, dims, out);
    free(acc);
}

json_t *sb_emu_embed_json(const float *v, size_t dims)
{
    json_t *a = json_array();
    for (size_t i = 0; i < dims; i++)
        json_array_append_new(a, json_real((double)v[i]));
    return a;
}
