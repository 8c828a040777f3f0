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

/* Code points before byte offset `off` of UTF-8 text. */
static long sb_tool_cp(const char *text, size_t off)
{
    long n = 0;
    for (size_t i = 0; i < off; i++)
        if (((unsigned char)text[i] & 0xC0) != 0x80)
            n++;
    return n;
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

static void sb_tool_cite(json_t *out, const char *text, size_t start, size_t end, const json_t *src)
{
    const json_t *title = json_object_get(src, "title");
    json_array_append_new(out, json_pack("{s:s, s:I, s:I, s:O, s:O}", "type", "url_citation", "start_index",
                                         (json_int_t)sb_tool_cp(text, start), "end_index",
                                         (json_int_t)sb_tool_cp(text, end), "url", json_object_get(src, "url"), "title",
                                         json_is_string(title) ? title : json_object_get(src, "url")));
}

json_t *sb_tool_citations(const char *text, const json_t *sources)
{
    json_t *out = json_array();
    if (!text || json_array_size(sources) == 0)
        return out;
    size_t n = strlen(text);
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '[') {
            /* [label](url): the label has no newline and no nested bracket. */
            size_t j = i + 1;
            while (j < n && text[j] != ']' && text[j] != '[' && text[j] != '\n')
                j++;
            if (j + 1 < n && text[j] == ']' && text[j + 1] == '(') {
                size_t u = j + 2, e = u;
                while (e < n && text[e] != ')' && !isspace((unsigned char)text[e]))
                    e++;
                if (e < n && text[e] == ')') {
                    const json_t *src = sb_tool_source(sources, text + u, e - u);
                    if (src) {
                        sb_tool_cite(out, text, i, e + 1, src);
                        i = e;
                    }
                    continue;
                }
            }
        } else if ((!strncmp(text + i, "https://", 8) || !strncmp(text + i, "http://", 7)) &&
                   (i == 0 || (text[i - 1] != '(' && text[i - 1] != '/'))) {
            size_t e = i;
            while (e < n && !isspace((unsigned char)text[e]) && text[e] != ')' && text[e] != ']' && text[e] != '>' &&
                   text[e] != '"')
                e++;
            size_t end = e;
            while (end > i && strchr(".,;:!?", text[end - 1])) /* sentence punctuation is not the URL's */
                end--;
            const json_t *src = sb_tool_source(sources, text + i, end - i);
            if (src)
                sb_tool_cite(out, text, i, end, src);
            i = e > i ? e - 1 : i;
        }
    }
    return out;
}
