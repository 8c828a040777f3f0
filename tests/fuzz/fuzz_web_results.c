/*
 * fuzz_web_results: libFuzzer harness for sb_web_parse_results, which reads
 * a search backend's answer (SearXNG, Brave, Tavily) in the worker: bytes
 * from a network peer (the operator's backend, or anything between it and
 * the worker).
 *
 * Input: one byte of settings, then the answer. Bits 0-1 pick the kind
 * (searxng, brave, tavily, and an unknown one), bits 2-3 the
 * search_context_size (absent, low, medium, high), bit 4 an allowed_domains
 * filter ("example.com", "127.0.0.1"). Checked besides "no crash, no leak,
 * no UB": the answer is 0 or -EINVAL (and an unknown kind is always
 * -EINVAL); on -EINVAL nothing is returned; on 0 the text is valid UTF-8,
 * there are no more sources than the context size lets through, each is
 * {"type":"url","url","title"} with a URL the filter allows and no URL
 * twice, and the text numbers exactly that many results.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "sb_alloc.h"
#include "sb_utf8.h"
#include "wtool_web.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    static const char *const kinds[] = {"searxng", "brave", "tavily", "bing"};
    static const char *const sizes[] = {NULL, "low", "medium", "high"};
    static const size_t max_results[] = {5, 3, 5, 8};
    unsigned s = data[0];
    const char *kind = kinds[s & 3];
    json_t *tool = json_object();
    if (sizes[(s >> 2) & 3])
        json_object_set_new(tool, "search_context_size", json_string(sizes[(s >> 2) & 3]));
    if (s & 16)
        json_object_set_new(tool, "filters", json_pack("{s:[s,s]}", "allowed_domains", "example.com", "127.0.0.1"));

    json_t *sources = NULL;
    char *text = NULL;
    int rc = sb_web_parse_results(kind, (const char *)data + 1, size - 1, tool, &sources, &text);
    FUZZ_REQUIRE(rc == 0 || rc == -EINVAL);
    if ((s & 3) == 3)
        FUZZ_REQUIRE(rc == -EINVAL);
    if (rc < 0) {
        FUZZ_REQUIRE(sources == NULL && text == NULL);
        json_decref(tool);
        return 0;
    }
    FUZZ_REQUIRE(json_is_array(sources) && text != NULL);
    FUZZ_REQUIRE(sb_utf8_fix(text) == 0);
    size_t n = json_array_size(sources);
    FUZZ_REQUIRE(n <= max_results[(s >> 2) & 3]);
    /* The text is exactly: per source "[k] <title>\nURL: <url>\n" + ("<snippet>\n" or nothing) + "\n",
     * then the closing line (titles and snippets hold no line end). */
    const char *p = text;
    for (size_t i = 0; i < n; i++) {
        const json_t *src = json_array_get(sources, i);
        const char *url = json_string_value(json_object_get(src, "url"));
        const char *title = json_string_value(json_object_get(src, "title"));
        FUZZ_REQUIRE(url && title && !strcmp(json_string_value(json_object_get(src, "type")), "url"));
        FUZZ_REQUIRE(sb_web_url_allowed(tool, url));
        for (size_t j = 0; j < i; j++)
            FUZZ_REQUIRE(strcmp(url, json_string_value(json_object_get(json_array_get(sources, j), "url"))));
        char *head = sb_xasprintf("[%zu] %s\nURL: %s\n", i + 1, title, url);
        FUZZ_REQUIRE(!strncmp(p, head, strlen(head)));
        p += strlen(head);
        free(head);
        if (*p != '\n') {
            p += strcspn(p, "\n");
            FUZZ_REQUIRE(*p == '\n');
            p++;
        }
        FUZZ_REQUIRE(*p == '\n');
        p++;
    }
    FUZZ_REQUIRE(!strcmp(p, n ? "Cite the sources you use as markdown links [title](url).\n" : "No search results.\n"));
    json_decref(sources);
    free(text);
    json_decref(tool);
    return 0;
}
