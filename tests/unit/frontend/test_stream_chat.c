/* test_stream_chat: the Chat Completions stream renderer
 * (style/chat/fe_stream_chat.c) fed canonical events through its narrow
 * hooks: the exact "data: {chat.completion.chunk}" lines the OpenAI SDKs
 * accumulate (the role chunk first, content and tool_calls deltas, the
 * finish_reason chunk, the usage chunk of stream_options.include_usage,
 * [DONE]), n > 1 choices interleaved, and the error line of a failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_event.h"

/* "data: " + one chunk + "\n\n": delta is its choice's delta as JSON text
 * (NULL: a chunk with no choice), finish its finish_reason (NULL: null),
 * tail what follows "choices" (",\"usage\":null" with include_usage). */
static char *chunk(int index, const char *delta, const char *finish, const char *tail)
{
    char choice[512] = "";
    if (delta)
        snprintf(choice, sizeof choice, "{\"index\":%d,\"delta\":%s,\"logprobs\":null,\"finish_reason\":%s%s%s}", index,
                 delta, finish ? "\"" : "", finish ? finish : "null", finish ? "\"" : "");
    return sb_xasprintf(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
        "\"model\":\"m\",\"service_tier\":\"default\",\"system_fingerprint\":null,\"choices\":[%s]%s}\n\n",
        choice, tail);
}

#define ROLE "{\"role\":\"assistant\",\"content\":\"\",\"refusal\":null}"

/* Appends s to buf (len bytes). */
static void addc(char *buf, size_t len, const char *s)
{
    strncat(buf, s, len - strlen(buf) - 1);
}

/* Appends c (freed) to buf. */
static void add(char *buf, size_t len, char *c)
{
    addc(buf, len, c);
    free(c);
}

/* Text deltas: the role chunk before the first, one chunk per delta, the
 * whole item at its end adds nothing, and the close sends the finish_reason
 * chunk and [DONE]. */
static void test_text(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_chat, NULL, "chatcmpl-1", NULL);
    char expect[4096] = "";
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                   "\"role\":\"assistant\",\"content\":[]}}");
    char *got = fe_sh_take(&h);
    add(expect, sizeof expect, chunk(0, ROLE, NULL, ""));
    FE_SH_CHECK_BYTES(got, expect);
    free(got);

    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"Hel\"}");
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"lo \\\"x\\\"\"}");
    got = fe_sh_take(&h);
    expect[0] = '\0';
    add(expect, sizeof expect, chunk(0, "{\"content\":\"Hel\"}", NULL, ""));
    add(expect, sizeof expect, chunk(0, "{\"content\":\"lo \\\"x\\\"\"}", NULL, ""));
    FE_SH_CHECK_BYTES(got, expect);
    free(got);

    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\",\"id\":\"msg_1\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"Hello \\\"x\\\"\","
                   "\"annotations\":[]}]}}");
    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":3,\"reasoning_tokens\":0}");
    got = fe_sh_take(&h);
    CHECK_STR(got, ""); /* streamed text is not sent again; usage waits for the end */
    free(got);

    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\",\"model\":\"up\"}"));
    json_t *rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    expect[0] = '\0';
    add(expect, sizeof expect, chunk(0, "{}", "stop", ""));
    addc(expect, sizeof expect, "data: [DONE]\n\n");
    FE_SH_CHECK_BYTES(got, expect);
    free(got);
    /* The stream's text joins to the final message. */
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(json_array_get(json_object_get(rendered, "choices"), 0), "message"), "content")),
              "Hello \"x\"");
    json_decref(rendered);
    fe_sh_free(&h);
}

/* A tool call with stream_options.include_usage: every chunk has "usage":
 * null, the call starts with its id and name and empty arguments, its
 * arguments follow in pieces, finish_reason is tool_calls, and a last chunk
 * with no choice carries the usage. */
static void test_tool_call_usage(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_chat, NULL, "chatcmpl-1", NULL);
    json_object_set_new(h.parsed.style_state, "include_usage", json_true());
    const char *u = ",\"usage\":null";
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
                   "\"call_id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":\"\"}}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"{\\\"city\\\":\"}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"\\\"Paris\\\"}\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
                   "\"call_id\":\"call_1\",\"name\":\"get_weather\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\","
                   "\"status\":\"completed\"}}");
    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":5,\"output_tokens\":3,\"reasoning_tokens\":1}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"completed\"}"));
    json_decref(fe_sh_complete(&h));
    char *got = fe_sh_take(&h);
    char expect[8192] = "";
    add(expect, sizeof expect, chunk(0, ROLE, NULL, u));
    add(expect, sizeof expect,
        chunk(0,
              "{\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
              "\"arguments\":\"\"},\"index\":0}]}",
              NULL, u));
    add(expect, sizeof expect,
        chunk(0, "{\"tool_calls\":[{\"function\":{\"arguments\":\"{\\\"city\\\":\"},\"index\":0}]}", NULL, u));
    add(expect, sizeof expect,
        chunk(0, "{\"tool_calls\":[{\"function\":{\"arguments\":\"\\\"Paris\\\"}\"},\"index\":0}]}", NULL, u));
    add(expect, sizeof expect, chunk(0, "{}", "tool_calls", u));
    char *last = sb_xasprintf(
        "data: {\"id\":\"chatcmpl-1\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,"
        "\"model\":\"m\",\"service_tier\":\"default\",\"system_fingerprint\":null,\"choices\":[],\"usage\":"
        "{\"prompt_tokens\":5,\"completion_tokens\":3,\"total_tokens\":8,\"prompt_tokens_details\":"
        "{\"cached_tokens\":0,\"audio_tokens\":0},\"completion_tokens_details\":{\"reasoning_tokens\":1,"
        "\"audio_tokens\":0,\"accepted_prediction_tokens\":0,\"rejected_prediction_tokens\":0}}}\n\n");
    add(expect, sizeof expect, last);
    addc(expect, sizeof expect, "data: [DONE]\n\n");
    FE_SH_CHECK_BYTES(got, expect);
    free(got);
    fe_sh_free(&h);
}

/* Two choices interleave, each chunk naming its index; a choice ends with
 * its choice_done (length for a cut one); a refusal and text delivered whole
 * go out at the item's end. */
static void test_choices(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_chat, NULL, "chatcmpl-1", NULL);
    h.parsed.n = 2;
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"item_index\":0,\"content_index\":0,\"delta\":\"A\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"choice\":1,\"item_index\":0,\"item\":{\"type\":\"message\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"B\"},"
                   "{\"type\":\"refusal\",\"refusal\":\"no\"}]}}");
    fe_sh_feed(&h, "{\"type\":\"choice_done\",\"choice\":1,\"status\":\"incomplete\","
                   "\"incomplete_reason\":\"max_output_tokens\"}");
    fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"message\","
                   "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"A\"}]}}");
    fe_sh_feed(&h, "{\"type\":\"choice_done\",\"choice\":0,\"status\":\"completed\"}");
    /* a third choice the request did not ask for is not shown */
    fe_sh_feed(&h, "{\"type\":\"text_delta\",\"choice\":2,\"item_index\":0,\"content_index\":0,\"delta\":\"C\"}");
    CHECK(fe_sh_feed(&h, "{\"type\":\"completed\",\"status\":\"incomplete\",\"incomplete_reason\":"
                         "\"max_output_tokens\"}"));
    json_decref(fe_sh_complete(&h));
    char *got = fe_sh_take(&h);
    char expect[8192] = "";
    add(expect, sizeof expect, chunk(0, ROLE, NULL, ""));
    add(expect, sizeof expect, chunk(0, "{\"content\":\"A\"}", NULL, ""));
    add(expect, sizeof expect, chunk(1, ROLE, NULL, ""));
    add(expect, sizeof expect, chunk(1, "{\"content\":\"B\"}", NULL, ""));
    add(expect, sizeof expect, chunk(1, "{\"refusal\":\"no\"}", NULL, ""));
    add(expect, sizeof expect, chunk(1, "{}", "length", ""));
    add(expect, sizeof expect, chunk(0, "{}", "stop", ""));
    addc(expect, sizeof expect, "data: [DONE]\n\n");
    FE_SH_CHECK_BYTES(got, expect);
    free(got);
    fe_sh_free(&h);
}

/* Reasoning streams as reasoning_content deltas (as vLLM and DeepSeek). A
 * failure after the first chunk is one "data: {error}" line, no [DONE]. */
static void test_reasoning_and_failure(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_chat, NULL, "chatcmpl-1", NULL);
    fe_sh_feed(&h, "{\"type\":\"reasoning_delta\",\"item_index\":0,\"delta\":\"think\"}");
    fe_error_t e;
    fe_error_set(&e, 504, SB_ERR_TIMEOUT, "timeout", NULL, "timeout: the request exceeded its deadline");
    fe_sh_fail(&h, &e);
    char *got = fe_sh_take(&h);
    char expect[4096] = "";
    add(expect, sizeof expect, chunk(0, ROLE, NULL, ""));
    add(expect, sizeof expect, chunk(0, "{\"reasoning_content\":\"think\"}", NULL, ""));
    addc(expect, sizeof expect,
         "data: {\"error\":{\"message\":\"timeout: the request exceeded its deadline\",\"type\":"
         "\"timeout_error\",\"param\":null,\"code\":\"timeout\"}}\n\n");
    FE_SH_CHECK_BYTES(got, expect);
    free(got);
    /* Keep-alives are SSE comments. */
    fe_stream_chat.keepalive(&h.sc, h.out);
    got = fe_sh_take(&h);
    CHECK_STR(got, ": keep-alive\n\n");
    free(got);
    CHECK_STR(fe_stream_chat.content_type, "text/event-stream; charset=utf-8");
    fe_sh_free(&h);
}

int main(void)
{
    test_text();
    test_tool_call_usage();
    test_choices();
    test_reasoning_and_failure();
    return sb_test_finish("stream_chat");
}
