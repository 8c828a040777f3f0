/*
 * wtool_cite: url_citation annotations for a message that cites the web
 * search results it was given (wtool.h). The model is told to cite a
 * source as a markdown link [title](url); OpenAI's own answers carry such
 * links and annotate exactly their span. A bare URL of a source counts
 * too. Indexes are Unicode code points of the text.
 */
#include <ctype.h>
#include <string.h>

#include "wtool.h"

/* Code points before byte offsets of UTF-8 text, asked in rising order:
 * counted on from the last answer, so a text with many citations is read
 * once, not once per citation. */
typedef struct sb_tool_cp {
    size_t off; /* bytes counted */
    long n;     /* code points among them */
} sb_tool_cp_t;

static long sb_tool_cp(sb_tool_cp_t *c, const char *text, size_t off)
{
    for (; c->off < off; c->off++)
        if (((unsigned char)text[c->off] & 0xC0) != 0x80)
            c->n++;
    return c->n;
}

/* The source whose URL is url[0..len) (a trailing slash aside), or NULL. */
static const json_t *sb_tool_source(const json_t *sources, const char *url, size_t len)
{
    size_t i;
    const json_t *s;
    json_array_foreach (sources, i, s) {
        const char *u = json_string_value(json_object_get(s, "url"));
        if (!u)
            continue;
        size_t ul = strlen(u);
        size_t a = len, b = ul;
        if (a > 0 && url[a - 1] == '/')
            a--;
        if (b > 0 && u[b - 1] == '/')
            b--;
        if (a == b && !strncmp(url, u, a))
            return s;
    }
    return NULL;
}

static void sb_tool_cite(json_t *out, sb_tool_cp_t *cp, const char *text, size_t start, size_t end, const json_t *src)
{
    const json_t *title = json_object_get(src, "title");
    json_int_t a = sb_tool_cp(cp, text, start), b = sb_tool_cp(cp, text, end);
    const json_t *as = json_object_get(src, "annotation");
    if (json_is_object(as)) {
        /* A source that is not a web page (a container's file) cites as
         * its own annotation over the same span. */
        json_t *an = json_deep_copy(as);
        json_object_set_new(an, "start_index", json_integer(a));
        json_object_set_new(an, "end_index", json_integer(b));
        json_array_append_new(out, an);
        return;
    }
    json_array_append_new(out, json_pack("{s:s, s:I, s:I, s:O, s:O}", "type", "url_citation", "start_index", a,
                                         "end_index", b, "url", json_object_get(src, "url"), "title",
                                         json_is_string(title) ? title : json_object_get(src, "url")));
}

/* The end of a URL starting at u: before whitespace, or before a ')' that
 * closes no '(' of the URL (a Wikipedia URL has its parentheses; the
 * markdown link's closing one is not the URL's), stop characters aside.
 * Past `max` bytes no source can match: the scan ends there, which keeps
 * the whole text's scan linear whatever the model wrote. */
static size_t sb_tool_url_end(const char *text, size_t n, size_t u, size_t max, const char *stop)
{
    size_t e = u;
    size_t depth = 0;
    for (; e < n && e - u <= max && !isspace((unsigned char)text[e]) && !strchr(stop, text[e]); e++) {
        if (text[e] == '(') {
            depth++;
        } else if (text[e] == ')') {
            if (depth == 0)
                break;
            depth--;
        }
    }
    return e;
}

json_t *sb_tool_citations(const char *text, const json_t *sources)
{
    json_t *out = json_array();
    if (!text || json_array_size(sources) == 0)
        return out;
    size_t max = 0, i;
    const json_t *s;
    json_array_foreach (sources, i, s)
        if (json_is_string(json_object_get(s, "url")) && json_string_length(json_object_get(s, "url")) + 1 > max)
            max = json_string_length(json_object_get(s, "url")) + 1; /* + a trailing slash */
    sb_tool_cp_t cp = {0, 0};
    size_t n = strlen(text);
    for (i = 0; i < n; i++) {
        if (text[i] == '[') {
            /* [label](url): the label has no newline and no nested bracket. */
            size_t j = i + 1;
            while (j < n && text[j] != ']' && text[j] != '[' && text[j] != '\n')
                j++;
            if (j + 1 < n && text[j] == ']' && text[j + 1] == '(') {
                size_t u = j + 2, e = sb_tool_url_end(text, n, u, max, "");
                if (e < n && text[e] == ')') {
                    const json_t *src = sb_tool_source(sources, text + u, e - u);
                    if (src) {
                        sb_tool_cite(out, &cp, text, i, e + 1, src);
                        i = e;
                    }
                    continue;
                }
            }
        } else if ((!strncmp(text + i, "https://", 8) || !strncmp(text + i, "http://", 7)) &&
                   (i == 0 || text[i - 1] != '/') && (i < 2 || text[i - 1] != '(' || text[i - 2] != ']')) {
            /* A bare URL (one in a link's parentheses was the link's). */
            size_t e = sb_tool_url_end(text, n, i, n, "]>\"");
            size_t end = e;
            while (end > i && strchr(".,;:!?", text[end - 1])) /* sentence punctuation is not the URL's */
                end--;
            const json_t *src = sb_tool_source(sources, text + i, end - i);
            if (src)
                sb_tool_cite(out, &cp, text, i, end, src);
            i = e > i ? e - 1 : i;
        }
    }
    return out;
}
