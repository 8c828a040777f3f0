/*
 * test_tokens: the gateway's token estimate (frontend/pipeline/fe_tokens.c). The
 * expected counts are the pieces each text really splits into under a
 * GPT-style pre-tokenizer, worked out by hand; the estimate must equal them
 * and never depend on how the text is cut into deltas.
 */
#include <jansson.h>
#include <string.h>

#include "fe_tokens.h"
#include "sb_test.h"

static void test_text(void)
{
    CHECK_INT(fe_tokens_text(""), 0);
    CHECK_INT(fe_tokens_text(NULL), 0);
    CHECK_INT(fe_tokens_text("hello"), 1);
    CHECK_INT(fe_tokens_text("hello world"), 2);   /* " world" joins the space */
    CHECK_INT(fe_tokens_text("hello, world!"), 4); /* hello , world ! */
    CHECK_INT(fe_tokens_text("   \n\t "), 0);      /* whitespace alone: a lower bound counts nothing */
    CHECK_INT(fe_tokens_text("1234567"), 3);       /* 123 456 7 */
    CHECK_INT(fe_tokens_text("123"), 1);
    CHECK_INT(fe_tokens_text("a1b2"), 4);                     /* letters and digits never merge */
    CHECK_INT(fe_tokens_text("(hello)"), 2);                  /* "(hello" is one o200k piece, ")" another */
    CHECK_INT(fe_tokens_text("don't"), 2);                    /* don 't */
    CHECK_INT(fe_tokens_text("x == y"), 3);                   /* x == y */
    CHECK_INT(fe_tokens_text("{\"a\":1}"), 5);                /* {" a ": 1 } */
    CHECK_INT(fe_tokens_text("caf\xc3\xa9 na\xc3\xafve"), 2); /* non-ASCII bytes are letters */
    CHECK_INT(fe_tokens_text("\xe4\xbd\xa0\xe5\xa5\xbd"), 1); /* a CJK run counts once (documented) */
}

/* The same text in every split gives the same count. */
static void test_pieces(void)
{
    const char *texts[] = {"The quick brown fox, 12345 times; don't stop!", "a1b2c3 ((x)) 9999999 caf\xc3\xa9",
                           "{\"k\": [1, 22, 333], \"s\": \"--\"}"};
    for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
        const char *s = texts[t];
        size_t n = strlen(s);
        int64_t whole = fe_tokens_text(s);
        CHECK(whole > 0);
        for (size_t cut = 1; cut < n; cut++) {
            fe_tokens_counter_t c;
            fe_tokens_counter_init(&c);
            fe_tokens_feed(&c, s, cut);
            fe_tokens_feed(&c, s + cut, n - cut);
            CHECK_INT(fe_tokens_total(&c), whole);
        }
        fe_tokens_counter_t c;
        fe_tokens_counter_init(&c);
        for (size_t i = 0; i < n; i++) /* one byte per delta */
            fe_tokens_feed(&c, s + i, 1);
        CHECK_INT(fe_tokens_total(&c), whole);
    }
}

static void test_request(void)
{
    json_t *req = json_pack("{s:s, s:[{s:s, s:s, s:o}]}", "instructions", "Be brief.", "tools", "type", "function",
                            "name", "get_weather", "parameters", json_pack("{s:s}", "type", "object"));
    json_t *input =
        json_pack("[{s:s, s:s, s:[{s:s, s:s}, {s:s, s:s}]}, {s:s, s:s, s:s, s:s}, {s:s, s:s, s:s}, {s:s, s:s}]", "type",
                  "message", "role", "user", "content", "type", "input_text", "text", "What is the weather in Paris?",
                  "type", "input_image", "image_url", "data:image/png;base64,AAAA", "type", "function_call", "call_id",
                  "c1", "name", "get_weather", "arguments", "{\"city\":\"Paris\"}", "type", "function_call_output",
                  "call_id", "c1", "output", "sunny", "type", "reasoning", "id", "rs_1");
    /* reply 3; instructions 3 + 3 (Be brief .); message 3 + 7 (What is the weather in Paris ?) + 85 image;
     * call 3 + 2 (get _weather: the "_" joins the word after it) + 5 ({" city ":" Paris "});
     * output 3 + 1; reasoning 0; tool: name 2 + schema {"type":"object"} 5 ({" type ":" object "}). */
    CHECK(req && input);
    int64_t expected = 3 + (3 + 3) + (3 + 7 + 85) + (3 + 2 + 5) + (3 + 1) + 0 + (2 + 5);
    CHECK_INT(fe_tokens_request(req, input), expected);
    json_t *text_input = json_string("Hello there");
    json_t *bare = json_object();
    CHECK_INT(fe_tokens_request(bare, text_input), 3 + 3 + 2);
    json_decref(text_input);
    json_decref(bare);
    json_decref(input);
    json_decref(req);
}

int main(void)
{
    test_text();
    test_pieces();
    test_request();
    return sb_test_finish("tokens");
}
