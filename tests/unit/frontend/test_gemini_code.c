/* test_gemini_code: code execution in the Generate Content style
 * (style/gemini/fe_gemini_code.c), through the style's hooks: tools
 * {codeExecution:{}} -> the canonical code_interpreter tool; a model turn's
 * executableCode, codeExecutionResult and image parts -> a
 * code_interpreter_call item; the item -> those parts (outcome from the run:
 * OK, FAILED for a traceback or a sandbox that could not start,
 * DEADLINE_EXCEEDED), the result part's thoughtSignature restoring the item
 * the model saw (its container, what it was told) on the next turn; and the
 * stream: executableCode at the interpreting step, the result and images at
 * the end, the parts joined being the non-streamed ones. JSON in this file
 * is written with ' for " (J()). */
#include <jansson.h>
#include <stdlib.h>

#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_test.h"

static sb_seal_key_t key;

static json_t *J(const char *text)
{
    char *s = sb_xstrdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t jerr;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &jerr);
    if (!v) {
        fprintf(stderr, "bad test JSON: %s: %s\n", jerr.text, s);
        abort();
    }
    free(s);
    return v;
}

static void check_json(const json_t *got, const char *expect)
{
    json_t *want = J(expect);
    bool same = got ? json_equal((json_t *)got, want) : json_is_null(want);
    CHECK(same);
    if (!same) {
        char *g = got ? json_dumps(got, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
        char *w = json_dumps(want, JSON_COMPACT | JSON_ENCODE_ANY);
        fprintf(stderr, "  got:      %s\n  expected: %s\n", g ? g : "(null)", w);
        free(g);
        free(w);
    }
    json_decref(want);
}

typedef struct {
    fe_style_in_t in;
    fe_parsed_t parsed;
    fe_collect_t result;
} req_t;

static void req_init(req_t *r, bool sealing)
{
    memset(r, 0, sizeof *r);
    r->in.path = "/v1beta/models/m1:generateContent";
    r->in.path_arg = "m1";
    r->in.seal.key = sealing ? &key : NULL;
    r->in.seal.account_id = 7;
    fe_parsed_init(&r->parsed);
    fe_collect_init(&r->result);
}

static void req_free(req_t *r)
{
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
}

/* Parses a body (a JSON value, borrowed) with a fresh request. */
static int parse_json(req_t *r, bool sealing, const json_t *body, fe_error_t *err)
{
    req_init(r, sealing);
    memset(err, 0, sizeof *err);
    return fe_style_gemini.parse(&r->in, (json_t *)body, &r->parsed, err);
}

static int parse(req_t *r, const char *text, fe_error_t *err)
{
    json_t *body = J(text);
    int rc = parse_json(r, false, body, err);
    json_decref(body);
    return rc;
}

static void fails(const char *text, const char *needle)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, text, &err), -1);
    CHECK_INT(err.status, 400);
    CHECK(strstr(err.message, needle) != NULL);
    if (!strstr(err.message, needle))
        fprintf(stderr, "  body %s\n  message \"%s\" lacks \"%s\"\n", text, err.message, needle);
    req_free(&r);
}

#define USER "{'role':'user','parts':[{'text':'q'}]}"

static void test_request(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r,
                    "{'contents':[" USER "],'tools':[{'codeExecution':{}},{'code_execution':{}},{'googleSearch':{}},"
                    "{'functionDeclarations':[{'name':'f'}]}]}",
                    &err),
              0);
    json_t *tools = json_object_get(r.parsed.canonical, "tools");
    CHECK_INT(json_array_size(tools), 3);
    check_json(json_array_get(tools, 0), "{'type':'code_interpreter','container':{'type':'auto'}}");
    check_json(json_array_get(tools, 1), "{'type':'web_search'}");
    req_free(&r);
    fails("{'contents':[" USER "],'tools':[{'codeExecution':{'timeout':5}}]}",
          "Unknown name \"timeout\" at 'tools[0].code_execution'");
    /* A built-in tool is no function to force. */
    fails("{'contents':[" USER "],'tools':[{'codeExecution':{}}],'toolConfig':{'functionCallingConfig':{'mode':"
          "'ANY'}}}",
          "ANY needs function declarations");
}

/* The input items of a parse, each code item's generated id checked and
 * taken out (new reference). */
static json_t *items_without_ids(const req_t *r)
{
    json_t *items = json_deep_copy(json_object_get(r->parsed.canonical, "input"));
    size_t i;
    json_t *it;
    json_array_foreach (items, i, it) {
        const char *type = json_string_value(json_object_get(it, "type"));
        if (type && !strcmp(type, "code_interpreter_call")) {
            const char *id = json_string_value(json_object_get(it, "id"));
            CHECK(id && !strncmp(id, "ci_", 3));
            json_object_del(it, "id");
        }
    }
    return items;
}

static void test_history(void)
{
    req_t r;
    fe_error_t err;
    int rc = parse(&r,
                   "{'contents':[" USER ",{'role':'model','parts':[{'text':'Computing.'},"
                   "{'executableCode':{'language':'PYTHON','code':'print(6*7)'}},"
                   "{'codeExecutionResult':{'outcome':'OUTCOME_OK','output':'42\\n'}},"
                   "{'inlineData':{'mimeType':'image/png','data':'iVBORw0KGgo='}},"
                   "{'executable_code':{'language':'PYTHON','code':'while 1: pass'}},"
                   "{'code_execution_result':{'outcome':'OUTCOME_DEADLINE_EXCEEDED'}},"
                   "{'executableCode':{'code':'1/0'}},"
                   "{'codeExecutionResult':{'outcome':'OUTCOME_FAILED','output':'ZeroDivisionError'}},"
                   "{'text':'It is 42.'}]}," USER "]}",
                   &err);
    CHECK_INT(rc, 0);
    if (rc != 0)
        fprintf(stderr, "  error %s\n", err.message);
    json_t *items = items_without_ids(&r);
    check_json(items, "[{'type':'message','role':'user','content':[{'type':'input_text','text':'q'}]},"
                      "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'Computing.'}]},"
                      "{'type':'code_interpreter_call','status':'completed','code':'print(6*7)','outputs':["
                      "{'type':'logs','logs':'42\\n'},{'type':'image','url':'data:image/png;base64,iVBORw0KGgo='}]},"
                      "{'type':'code_interpreter_call','status':'completed','code':'while 1: pass','outputs':["
                      "{'type':'logs','logs':'[The code was stopped: it ran out of time.]'}]},"
                      "{'type':'code_interpreter_call','status':'completed','code':'1/0','outputs':["
                      "{'type':'logs','logs':'ZeroDivisionError'}]},"
                      "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'It is 42.'}]},"
                      "{'type':'message','role':'user','content':[{'type':'input_text','text':'q'}]}]");
    json_decref(items);
    req_free(&r);

    fails("{'contents':[" USER ",{'role':'model','parts':[{'codeExecutionResult':{'outcome':'OUTCOME_OK'}}]}]}",
          "must follow the executableCode part");
    fails("{'contents':[" USER ",{'role':'model','parts':[{'text':'a'},{'codeExecutionResult':{'outcome':"
          "'OUTCOME_OK'}}]}]}",
          "must follow the executableCode part");
    fails("{'contents':[" USER ",{'role':'model','parts':[{'executableCode':{'language':'JS','code':'1'}}]}]}",
          "Invalid value at 'contents[1].parts[0].executable_code.language'");
    fails("{'contents':[" USER ",{'role':'model','parts':[{'executableCode':{'code':'1'}},{'codeExecutionResult':"
          "{'outcome':'MAYBE'}}]}]}",
          "outcome");
    fails("{'contents':[" USER ",{'role':'model','parts':[{'executableCode':{'code':'1'}},{'codeExecutionResult':"
          "{'outcome':'OUTCOME_OK'}},{'inlineData':{'mimeType':'audio/wav','data':'AAAA'}}]}]}",
          "must be an image");
    /* An image with no code result before it is what it was. */
    fails("{'contents':[" USER ",{'role':'model','parts':[{'inlineData':{'mimeType':'image/png','data':'AAAA'}}]}]}",
          "'inlineData' parts in a model turn");
    fails("{'contents':[{'role':'user','parts':[{'executableCode':{'code':'1'}}]}]}", "(code execution)");
}

#define ITEM_OK                                                                                                        \
    "{'type':'code_interpreter_call','id':'ci_g1','status':'completed','code':'print(6*7)','container_id':"            \
    "'cntr_7','outputs':[{'type':'logs','logs':'42\\n'},{'type':'image','url':'data:image/png;base64,iVBO'}],"         \
    "'sb_output':'42\\n[1 image(s) shown to the user.]'}"
#define ITEM_RAISE                                                                                                     \
    "{'type':'code_interpreter_call','id':'ci_g2','status':'completed','code':'1/0','container_id':'cntr_7',"          \
    "'outputs':[{'type':'logs','logs':'Traceback (most recent call last):\\n  File \\u0022<cell>\\u0022, line 1\\n"    \
    "ZeroDivisionError: division by zero\\n'}]}"
#define ITEM_FAILED                                                                                                    \
    "{'type':'code_interpreter_call','id':'ci_g3','status':'failed','code':'x','container_id':'cntr_7',"               \
    "'outputs':[],'sb_output':'Error: the code could not be run: bwrap missing'}"
#define ITEM_TIMEOUT                                                                                                   \
    "{'type':'code_interpreter_call','id':'ci_g4','status':'completed','code':'while 1: pass','container_id':"         \
    "'cntr_7','outputs':[],'sb_output':'[The code was stopped: it ran out of time.]'}"
#define ITEM_MSG                                                                                                       \
    "{'type':'message','id':'m1','role':'assistant','content':[{'type':'output_text','text':'42','annotations':[]}]}"

#define PARTS_NO_SIG                                                                                                   \
    "[{'executableCode':{'language':'PYTHON','code':'print(6*7)'}},"                                                   \
    "{'codeExecutionResult':{'outcome':'OUTCOME_OK','output':'42\\n'}},"                                               \
    "{'inlineData':{'mimeType':'image/png','data':'iVBO'}},"                                                           \
    "{'executableCode':{'language':'PYTHON','code':'1/0'}},"                                                           \
    "{'codeExecutionResult':{'outcome':'OUTCOME_FAILED','output':'Traceback (most recent call last):\\n  File "        \
    "\\u0022<cell>\\u0022, line 1\\nZeroDivisionError: division by zero\\n'}},"                                        \
    "{'executableCode':{'language':'PYTHON','code':'x'}},"                                                             \
    "{'codeExecutionResult':{'outcome':'OUTCOME_FAILED','output':'The code could not be run: the sandbox is "          \
    "unavailable.'}},"                                                                                                 \
    "{'executableCode':{'language':'PYTHON','code':'while 1: pass'}},"                                                 \
    "{'codeExecutionResult':{'outcome':'OUTCOME_DEADLINE_EXCEEDED'}},"                                                 \
    "{'text':'42'}]"

/* parts with every thoughtSignature taken out (new reference); *signed_
 * counts them. */
static json_t *unsigned_parts(const json_t *parts, int *signed_)
{
    json_t *copy = json_deep_copy(parts);
    size_t i;
    json_t *p;
    *signed_ = 0;
    json_array_foreach (copy, i, p)
        *signed_ += json_object_del(p, "thoughtSignature") == 0;
    return copy;
}

static void test_render(void)
{
    for (int sealing = 0; sealing < 2; sealing++) {
        req_t r;
        fe_error_t err;
        json_t *body = J("{'contents':[" USER "],'tools':[{'codeExecution':{}}]}");
        CHECK_INT(parse_json(&r, sealing, body, &err), 0);
        json_decref(body);
        json_t *items = J("[" ITEM_OK "," ITEM_RAISE "," ITEM_FAILED "," ITEM_TIMEOUT "," ITEM_MSG "]");
        json_array_extend(r.result.items, items);
        json_decref(items);
        snprintf(r.result.status, sizeof r.result.status, "completed");
        fe_render_ctx_t ctx = {
            .parsed = &r.parsed, .start_ms = 1700000000000, .request_id = "req_1", .seal = r.in.seal};
        json_t *res = fe_style_gemini.render(&r.result, &ctx);
        json_t *cand = json_array_get(json_object_get(res, "candidates"), 0);
        int sigs = 0;
        json_t *parts = unsigned_parts(json_object_get(json_object_get(cand, "content"), "parts"), &sigs);
        check_json(parts, PARTS_NO_SIG);
        /* One signature per result part, with a key; none without. */
        CHECK_INT(sigs, sealing ? 4 : 0);
        CHECK_STR(json_string_value(json_object_get(cand, "finishReason")), "STOP");
        char *text = json_dumps(res, JSON_COMPACT);
        CHECK(strstr(text, "sb_output") == NULL && strstr(text, "bwrap") == NULL && strstr(text, "cntr_7") == NULL);
        free(text);
        json_decref(parts);

        /* The next turn sends the candidate's content back: with a key the
         * items come back as the model saw them (what it was told, the
         * container), else as the parts say. */
        json_t *next = json_pack("{s:[o, O, o]}", "contents", J(USER), json_object_get(cand, "content"), J(USER));
        req_t r2;
        CHECK_INT(parse_json(&r2, sealing, next, &err), 0);
        if (err.status)
            fprintf(stderr, "  error %s\n", err.message);
        json_t *in = json_object_get(r2.parsed.canonical, "input");
        json_t *first = json_array_get(in, 1);
        CHECK_STR(json_string_value(json_object_get(first, "type")), "code_interpreter_call");
        CHECK_STR(json_string_value(json_object_get(first, "code")), "print(6*7)");
        check_json(json_object_get(first, "outputs"),
                   "[{'type':'logs','logs':'42\\n'},{'type':'image','url':'data:image/png;base64,iVBO'}]");
        if (sealing) {
            CHECK_STR(json_string_value(json_object_get(first, "id")), "ci_g1");
            CHECK_STR(json_string_value(json_object_get(first, "container_id")), "cntr_7");
            CHECK_STR(json_string_value(json_object_get(first, "sb_output")), "42\n[1 image(s) shown to the user.]");
            CHECK_STR(json_string_value(json_object_get(json_array_get(in, 3), "status")), "failed");
        } else {
            CHECK(json_object_get(first, "container_id") == NULL);
        }
        CHECK_INT(json_array_size(in), 7); /* user, 4 code items, the answer, user */
        json_decref(next);
        req_free(&r2);
        json_decref(res);
        req_free(&r);
    }

    /* A signature from another account does not open. */
    req_t r;
    fe_error_t err;
    json_t *body = J("{'contents':[" USER "]}");
    CHECK_INT(parse_json(&r, true, body, &err), 0);
    json_decref(body);
    json_t *items = J("[" ITEM_OK "]");
    json_array_extend(r.result.items, items);
    json_decref(items);
    fe_render_ctx_t ctx = {.parsed = &r.parsed, .request_id = "req_1", .seal = r.in.seal};
    json_t *res = fe_style_gemini.render(&r.result, &ctx);
    json_t *content = json_object_get(json_array_get(json_object_get(res, "candidates"), 0), "content");
    json_t *next = json_pack("{s:[o, O]}", "contents", J(USER), content);
    req_t r2;
    req_init(&r2, true);
    r2.in.seal.account_id = 8;
    memset(&err, 0, sizeof err);
    CHECK_INT(fe_style_gemini.parse(&r2.in, next, &r2.parsed, &err), -1);
    CHECK(strstr(err.message, "could not be verified") != NULL);
    json_decref(next);
    req_free(&r2);
    json_decref(res);
    req_free(&r);
}

/* ---- the stream ---------------------------------------------------------------------- */

/* The parts of every chunk of an SSE stream, joined (new reference). */
static json_t *stream_parts(const char *text)
{
    json_t *all = json_array();
    const char *p = text;
    char name[32];
    json_t *chunk;
    while ((chunk = fe_sh_next_sse(&p, "\r\n\r\n", name, sizeof name)) != NULL) {
        json_t *parts = json_object_get(
            json_object_get(json_array_get(json_object_get(chunk, "candidates"), 0), "content"), "parts");
        size_t i;
        json_t *part;
        json_array_foreach (parts, i, part) {
            json_t *t = json_object_get(part, "text");
            if (json_is_string(t) && json_string_length(t) == 0 && !json_object_get(part, "thoughtSignature"))
                continue; /* the last chunk's empty part */
            json_array_append(all, part);
        }
        json_decref(chunk);
    }
    return all;
}

static void test_stream(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_gemini, NULL, "resp_1", NULL);
    fe_sh_feed(&h, "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"code_interpreter_call\",\"id\":"
                   "\"ci_g1\",\"status\":\"in_progress\",\"code\":\"\",\"container_id\":\"cntr_7\",\"outputs\":null}}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"print(\"}");
    char *got = fe_sh_take(&h);
    CHECK_STR(got, ""); /* Gemini sends a code part whole */
    free(got);
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"interpreting\",\"code\":\"print(6*7)\"}");
    got = fe_sh_take(&h);
    json_t *parts = stream_parts(got);
    check_json(parts, "[{'executableCode':{'language':'PYTHON','code':'print(6*7)'}}]");
    json_decref(parts);
    free(got);
    json_t *done = J("{'type':'item_done','item_index':0,'item':" ITEM_OK "}");
    fe_sh_event(&h, done);
    got = fe_sh_take(&h);
    parts = stream_parts(got);
    check_json(parts, "[{'codeExecutionResult':{'outcome':'OUTCOME_OK','output':'42\\n'}},"
                      "{'inlineData':{'mimeType':'image/png','data':'iVBO'}}]");
    json_decref(parts);
    CHECK(strstr(got, "sb_output") == NULL);
    free(got);
    fe_sh_free(&h);

    /* Every item, streamed, makes the non-streamed parts. */
    for (int progress = 0; progress < 2; progress++) {
        fe_sh_init(&h, &fe_style_gemini, NULL, "resp_1", NULL);
        const char *all[] = {ITEM_OK, ITEM_RAISE, ITEM_FAILED, ITEM_TIMEOUT, ITEM_MSG};
        for (int i = 0; i < 5; i++) {
            if (progress && i < 4) {
                json_t *it = J(all[i]);
                json_t *ev = json_pack("{s:s, s:i, s:s, s:O}", "type", "item_progress", "item_index", i, "status",
                                       "interpreting", "code", json_object_get(it, "code"));
                fe_sh_event(&h, ev);
                json_decref(it);
            }
            json_t *ev = json_pack("{s:s, s:i, s:o}", "type", "item_done", "item_index", i, "item", J(all[i]));
            fe_sh_event(&h, ev);
        }
        fe_sh_feed(&h, "{\"type\":\"completed\"}");
        json_t *rendered = fe_sh_complete(&h);
        got = fe_sh_take(&h);
        parts = stream_parts(got);
        check_json(parts, PARTS_NO_SIG);
        check_json(json_object_get(
                       json_object_get(json_array_get(json_object_get(rendered, "candidates"), 0), "content"), "parts"),
                   PARTS_NO_SIG);
        json_decref(parts);
        free(got);
        json_decref(rendered);
        fe_sh_free(&h);
    }
}

int main(void)
{
    if (sb_seal_key_parse("000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f", &key) != 0) {
        fprintf(stderr, "key parse failed\n");
        return 1;
    }
    test_request();
    test_history();
    test_render();
    test_stream();
    return sb_test_finish("test_gemini_code");
}
