/* test_stream_gemini: the Generate Content stream renderers
 * (style/gemini/fe_stream_gemini.c) fed canonical events through their
 * narrow hooks: the exact chunks @google/genai reads, each a whole
 * GenerateContentResponse with the candidates it updates and their new
 * parts, as server-sent events (?alt=sse, "\r\n\r\n" between them) or as one
 * streamed JSON array; the last chunk with finishReason and the usage;
 * thought parts and signatures; several candidates; Google's error object;
 * groundingMetadata on the last chunk. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_event.h"

/* One chunk's JSON: candidates (JSON text, taken and freed) and the usage
 * counts. */
static char *chunk(char *candidates, int prompt, int cand, int total)
{
    char *out =
        sb_xasprintf("{\"candidates\":[%s],\"usageMetadata\":{\"promptTokenCount\":%d,\"candidatesTokenCount\":%d,"
                     "\"totalTokenCount\":%d},\"modelVersion\":\"m\",\"responseId\":\"r1\"}",
                     candidates, prompt, cand, total);
    free(candidates);
    return out;
}

/* A candidate with new parts (JSON text) and no finishReason. */
static char *cand(int index, const char *parts)
{
    return sb_xasprintf("{\"content\":{\"parts\":[%s],\"role\":\"model\"},\"index\":%d}", parts, index);
}

/* The last chunk's candidate. */
static char *last(int index, const char *parts, const char *finish)
{
    return sb_xasprintf("{\"content\":{\"parts\":[%s],\"role\":\"model\"},\"finishReason\":\"%s\",\"index\":%d}", parts,
                        finish, index);
}

/* Appends "data: " + c + "\r\n\r\n" (sse) or c with the array's separator. */
static void add(char *buf, size_t len, bool sse, bool first, char *c)
{
    if (sse)
        strncat(buf, "data: ", len - strlen(buf) - 1);
    else if (!first)
        strncat(buf, ",\r\n", len - strlen(buf) - 1);
    strncat(buf, c, len - strlen(buf) - 1);
    if (sse)
        strncat(buf, "\r\n\r\n", len - strlen(buf) - 1);
    free(c);
}

/* Text deltas, one chunk each; the whole item adds nothing; a function call
 * goes out whole at its end; the last chunk has the finishReason, an empty
 * text part and the final usage. Both framings. */
static void test_text_and_call(void)
{
    for (int sse = 1; sse >= 0; sse--) {
        fe_sh_t h;
        fe_sh_init(&h, &fe_style_gemini, sse ? &fe_stream_gemini : &fe_stream_gemini_array, "r1", NULL);
        fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"role\":"
                       "\"assistant\",\"content\":[]}}");
        fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hi\"}");
        fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\" there\"}");
        fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"role\":"
                       "\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hi there\"}]}}");
        fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":"
                       "\"call_1\",\"name\":\"f\",\"arguments\":\"{\\\"a\\\":1}\"}}");
        fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":4,\"output_tokens\":2,\"reasoning_tokens\":0}");
        CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
        json_decref(fe_sh_complete(&h));
        char *got = fe_sh_take(&h);
        char expect[8192] = "";
        if (!sse)
            strncat(expect, "[", sizeof expect - 1);
        add(expect, sizeof expect, sse, true, chunk(cand(0, "{\"text\":\"Hi\"}"), 0, 0, 0));
        add(expect, sizeof expect, sse, false, chunk(cand(0, "{\"text\":\" there\"}"), 0, 0, 0));
        add(expect, sizeof expect, sse, false,
            chunk(cand(0, "{\"functionCall\":{\"name\":\"f\",\"args\":{\"a\":1},\"id\":\"call_1\"}}"), 0, 0, 0));
        add(expect, sizeof expect, sse, false, chunk(last(0, "{\"text\":\"\"}", "STOP"), 4, 2, 6));
        if (!sse)
            strncat(expect, "]", sizeof expect - strlen(expect) - 1);
        FE_SH_CHECK_BYTES(got, expect);
        free(got);
        fe_sh_free(&h);
    }
    CHECK_STR(fe_stream_gemini.content_type, "text/event-stream");
    CHECK_STR(fe_stream_gemini_array.content_type, "application/json; charset=UTF-8");
}

/* Whatever of an item's text the deltas did not bring goes out at its end,
 * and a text that came whole; two candidates interleave, each chunk naming
 * its index; a cut candidate ends MAX_TOKENS. */
static void test_rest_and_candidates(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_gemini, &fe_stream_gemini, "r1", NULL);
    h.parsed.n = 2;
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hel\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"choice\":1,\"item_index\":0,\"item\":{\"type\":\"message\","
                   "\"content\":[{\"type\":\"refusal\",\"refusal\":\"No.\"}]}}");
    fe_sh_feed(&h, "{\"type\":\"choice_done\",\"choice\":1,\"status\":\"incomplete\",\"incomplete_reason\":"
                   "\"max_output_tokens\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"content\":[{\"type\":"
                   "\"output_text\",\"text\":\"Hello\"}]}}");
    fe_sh_feed(&h, "{\"type\":\"choice_done\",\"choice\":0,\"status\":\"completed\"}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":"
                         "\"max_output_tokens\"}"));
    json_decref(fe_sh_complete(&h));
    char *got = fe_sh_take(&h);
    char expect[8192] = "";
    add(expect, sizeof expect, true, true, chunk(cand(0, "{\"text\":\"Hel\"}"), 0, 0, 0));
    add(expect, sizeof expect, true, false, chunk(cand(1, "{\"text\":\"No.\"}"), 0, 0, 0));
    add(expect, sizeof expect, true, false, chunk(cand(0, "{\"text\":\"lo\"}"), 0, 0, 0));
    char *c0 = last(0, "{\"text\":\"\"}", "STOP"), *c1 = last(1, "{\"text\":\"\"}", "MAX_TOKENS");
    char *both = sb_xasprintf("%s,%s", c0, c1);
    free(c0);
    free(c1);
    add(expect, sizeof expect, true, false, chunk(both, 0, 0, 0));
    FE_SH_CHECK_BYTES(got, expect);
    free(got);
    fe_sh_free(&h);
}

/* includeThoughts: reasoning deltas are thought parts, and the reasoning's
 * end a last thought part with its thoughtSignature. Without it, the
 * reasoning's signature rides on the candidate's next part. */
static void test_thoughts(void)
{
    sb_seal_key_t key;
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0)
        abort();
    static const char *const rs_done = "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"reasoning\","
                                       "\"id\":\"rs_1\",\"summary\":[],\"content\":[{\"type\":\"reasoning_text\","
                                       "\"text\":\"hmm\"}]}}";
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_gemini, &fe_stream_gemini, "r1", &key);
    json_object_set_new(h.parsed.style_state, "include_thoughts", json_true());
    fe_sh_feed(&h, "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"}");
    fe_sh_feed(&h, rs_done);
    char *got = fe_sh_take(&h);
    const char *p = got;
    char name[16];
    json_t *first = fe_sh_next_sse(&p, "\r\n\r\n", name, sizeof name);
    json_t *second = fe_sh_next_sse(&p, "\r\n\r\n", name, sizeof name);
    CHECK(*p == '\0');
    json_t *part = json_array_get(
        json_object_get(json_object_get(json_array_get(json_object_get(first, "candidates"), 0), "content"), "parts"),
        0);
    char *text = json_dumps(part, JSON_COMPACT);
    CHECK_STR(text, "{\"text\":\"hmm\",\"thought\":true}");
    free(text);
    part = json_array_get(
        json_object_get(json_object_get(json_array_get(json_object_get(second, "candidates"), 0), "content"), "parts"),
        0);
    CHECK_STR(json_string_value(json_object_get(part, "text")), "");
    CHECK(json_is_true(json_object_get(part, "thought")));
    CHECK(json_string_length(json_object_get(part, "thoughtSignature")) > 20);
    json_decref(first);
    json_decref(second);
    free(got);
    fe_sh_free(&h);

    fe_sh_init(&h, &fe_style_gemini, &fe_stream_gemini, "r1", &key);
    fe_sh_feed(&h, "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"hmm\"}");
    fe_sh_feed(&h, rs_done);
    got = fe_sh_take(&h);
    CHECK_STR(got, ""); /* no thoughts shown; the signature waits */
    free(got);
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"ok\"}");
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"!\"}");
    got = fe_sh_take(&h);
    p = got;
    first = fe_sh_next_sse(&p, "\r\n\r\n", name, sizeof name);
    second = fe_sh_next_sse(&p, "\r\n\r\n", name, sizeof name);
    part = json_array_get(
        json_object_get(json_object_get(json_array_get(json_object_get(first, "candidates"), 0), "content"), "parts"),
        0);
    CHECK_STR(json_string_value(json_object_get(part, "text")), "ok");
    CHECK(json_string_length(json_object_get(part, "thoughtSignature")) > 20);
    part = json_array_get(
        json_object_get(json_object_get(json_array_get(json_object_get(second, "candidates"), 0), "content"), "parts"),
        0);
    text = json_dumps(part, JSON_COMPACT);
    CHECK_STR(text, "{\"text\":\"!\"}"); /* carried once */
    free(text);
    json_decref(first);
    json_decref(second);
    free(got);
    fe_sh_free(&h);
}

/* A failure after the stream started is Google's error object: an SSE
 * chunk, or the array's last element. Keep-alives: an SSE comment, or
 * whitespace between the array's elements. */
static void test_failure_and_keepalive(void)
{
    for (int sse = 1; sse >= 0; sse--) {
        fe_sh_t h;
        fe_sh_init(&h, &fe_style_gemini, sse ? &fe_stream_gemini : &fe_stream_gemini_array, "r1", NULL);
        fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"x\"}");
        free(fe_sh_take(&h));
        h.stream->keepalive(&h.sc, h.out);
        char *got = fe_sh_take(&h);
        CHECK_STR(got, sse ? ": keep-alive\r\n\r\n" : "\r\n");
        free(got);
        fe_error_t e;
        fe_error_set(&e, 503, SB_ERR_OVERLOADED, NULL, NULL, "The model is overloaded.");
        fe_sh_fail(&h, &e);
        got = fe_sh_take(&h);
        const char *body = "{\"error\":{\"code\":503,\"message\":\"The model is overloaded.\",\"status\":"
                           "\"UNAVAILABLE\"}}";
        char *expect = sse ? sb_xasprintf("data: %s\r\n\r\n", body) : sb_xasprintf(",\r\n%s]", body);
        FE_SH_CHECK_BYTES(got, expect);
        free(expect);
        free(got);
        fe_sh_free(&h);
    }
}

/* Built-in tools the gateway ran make no part (Google searches silently):
 * the text streams as usual and the last chunk carries the candidate's
 * groundingMetadata, the non-streamed response's. */
static void test_grounding(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_gemini, &fe_stream_gemini, "r1", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                   "\"status\":\"in_progress\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"searching\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"web_search_call\",\"id\":\"ws_1\","
                   "\"status\":\"completed\",\"action\":{\"type\":\"search\",\"query\":\"q\",\"sources\":[{\"type\":"
                   "\"url\",\"url\":\"https://e.x/\",\"title\":\"Ex\"}]}}}");
    fe_sh_feed(&h, "{\"type\":\"tool_log\",\"kind\":\"web_search\",\"server\":\"searxng\",\"outcome\":\"ok\"}");
    char *got = fe_sh_take(&h);
    CHECK_STR(got, "");
    free(got);
    fe_sh_feed(&h,
               "{\"type\":\"text_delta\",\"item_index\":1,\"content_index\":0,\"delta\":\"See [Ex](https://e.x/)\"}");
    fe_sh_feed(&h, "{\"type\":\"annotation_added\",\"item_index\":1,\"content_index\":0,\"annotation_index\":0,"
                   "\"annotation\":{\"type\":\"url_citation\",\"start_index\":4,\"end_index\":22,\"url\":"
                   "\"https://e.x/\",\"title\":\"Ex\"}}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"role\":\"assistant\","
                   "\"content\":[{\"type\":\"output_text\",\"text\":\"See [Ex](https://e.x/)\",\"annotations\":[{"
                   "\"type\":\"url_citation\",\"start_index\":4,\"end_index\":22,\"url\":\"https://e.x/\",\"title\":"
                   "\"Ex\"}]}]}}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_t *rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    char expect[4096] = "";
    add(expect, sizeof expect, true, true, chunk(cand(0, "{\"text\":\"See [Ex](https://e.x/)\"}"), 0, 0, 0));
    add(expect, sizeof expect, true, false,
        chunk(sb_xasprintf("{\"content\":{\"parts\":[{\"text\":\"\"}],\"role\":\"model\"},\"finishReason\":\"STOP\","
                           "\"groundingMetadata\":{\"groundingChunks\":[{\"web\":{\"uri\":\"https://e.x/\",\"title\":"
                           "\"Ex\"}}],\"groundingSupports\":[{\"segment\":{\"startIndex\":4,\"endIndex\":22,\"text\":"
                           "\"[Ex](https://e.x/)\"},\"groundingChunkIndices\":[0]}],\"webSearchQueries\":[\"q\"]},"
                           "\"index\":0}"),
              0, 0, 0));
    FE_SH_CHECK_BYTES(got, expect);
    json_t *gm = json_object_get(json_array_get(json_object_get(rendered, "candidates"), 0), "groundingMetadata");
    CHECK(gm && strstr(got, "\"groundingSupports\"") != NULL);
    json_decref(rendered);
    free(got);
    fe_sh_free(&h);
}

int main(void)
{
    test_text_and_call();
    test_rest_and_candidates();
    test_thoughts();
    test_failure_and_keepalive();
    test_grounding();
    return sb_test_finish("stream_gemini");
}
