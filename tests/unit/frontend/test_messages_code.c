/* test_messages_code: the code execution server tool in the Messages style
 * (style/messages/fe_messages_code.c, with fe_code_outcome.c), through the
 * style's hooks: code_execution_20250522 and the request's container ->
 * the canonical code_interpreter tool, later versions refused; assistant
 * turns with server_tool_use + code_execution_tool_result blocks -> a
 * code_interpreter_call item; the item -> its blocks, return_code, error
 * codes and the message's container; and the stream: the code as
 * input_json_delta pieces while it is written, the block closed at the
 * interpreting step, the result block at the end, the same message as the
 * non-streamed one. JSON in this file is written with ' for " (jq()). */
#include <jansson.h>
#include <stdlib.h>

#include "fe_code_outcome.h"
#include "fe_messages_code.h"
#include "fe_stream_harness.h"
#include "sb_alloc.h"
#include "sb_test.h"

/* text with every ' turned into " (caller frees). */
static char *jq(const char *text)
{
    char *s = sb_xstrdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    return s;
}

static json_t *J(const char *text)
{
    char *s = jq(text);
    json_error_t jerr;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &jerr);
    if (!v) {
        fprintf(stderr, "bad test JSON: %s: %s\n", jerr.text, s);
        abort();
    }
    free(s);
    return v;
}

/* got equals the JSON text expect (both printed when not). */
static void check_json(const json_t *got, const char *expect)
{
    json_t *want = J(expect);
    bool same = got ? json_equal((json_t *)got, want) : json_is_null(want); /* absent: null */
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
    sb_http_req_t *http;
    fe_style_in_t in;
    fe_parsed_t parsed;
    fe_collect_t result;
} req_t;

/* Parses a Messages body (' for "); 0 or -1 with err. */
static int parse(req_t *r, const char *body, fe_error_t *err)
{
    memset(r, 0, sizeof *r);
    static const char head[] = "POST /v1/messages HTTP/1.1\r\nHost: t\r\nanthropic-version: 2023-06-01\r\n\r\n";
    r->http = sb_http_req_parse_detached(head, sizeof head - 1);
    r->in.http = r->http;
    r->in.path = "/v1/messages";
    r->in.seal.account_id = 7;
    fe_parsed_init(&r->parsed);
    fe_collect_init(&r->result);
    json_t *b = J(body);
    memset(err, 0, sizeof *err);
    int rc = fe_style_messages.parse(&r->in, b, &r->parsed, err);
    json_decref(b);
    return rc;
}

static void req_free(req_t *r)
{
    sb_http_req_destroy(r->http);
    fe_parsed_free(&r->parsed);
    fe_collect_free(&r->result);
}

#define MIN "'model':'m','max_tokens':100,'messages':[{'role':'user','content':'hi'}]"
#define CODE_TOOL "{'type':'code_execution_20250522','name':'code_execution'}"

/* The canonical request's field after parsing MIN plus extra. */
static void parses_to(const char *extra, const char *field, const char *expect)
{
    req_t r;
    fe_error_t err;
    char *body = sb_xasprintf("{" MIN ",%s}", extra);
    int rc = parse(&r, body, &err);
    CHECK_INT(rc, 0);
    if (rc != 0)
        fprintf(stderr, "  body %s\n  error %s\n", body, err.message);
    else
        check_json(json_object_get(r.parsed.canonical, field), expect);
    free(body);
    req_free(&r);
}

static void fails(const char *body, const char *needle)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, body, &err), -1);
    CHECK_INT(err.status, 400);
    CHECK(strstr(err.message, needle) != NULL);
    if (!strstr(err.message, needle))
        fprintf(stderr, "  body %s\n  message \"%s\" lacks \"%s\"\n", body, err.message, needle);
    req_free(&r);
}

static void test_request(void)
{
    parses_to("'tools':[" CODE_TOOL "]", "tools", "[{'type':'code_interpreter','container':{'type':'auto'}}]");
    /* The top-level container names the one the code runs in. */
    parses_to("'tools':[" CODE_TOOL "],'container':'cntr_abc'", "tools",
              "[{'type':'code_interpreter','container':'cntr_abc'}]");
    parses_to("'tools':[" CODE_TOOL "],'container':{'id':'cntr_x','skills':[]}", "tools",
              "[{'type':'code_interpreter','container':'cntr_x'}]");
    parses_to("'tools':[" CODE_TOOL "],'container':{'id':null}", "tools",
              "[{'type':'code_interpreter','container':{'type':'auto'}}]");
    /* Without the tool a container asks for nothing. */
    parses_to("'container':'cntr_abc'", "tools", "null");
    /* The hints are accepted. */
    parses_to("'tools':[{'type':'code_execution_20250522','name':'code_execution','cache_control':{'type':"
              "'ephemeral'},'defer_loading':false,'strict':true,'allowed_callers':['direct']},{'name':'f',"
              "'input_schema':{'type':'object'}}]",
              "tools",
              "[{'type':'code_interpreter','container':{'type':'auto'}},{'type':'function','name':'f','parameters':"
              "{'type':'object'},'strict':false}]");
    parses_to("'tools':[" CODE_TOOL "],'tool_choice':{'type':'tool','name':'code_execution'}", "tool_choice",
              "{'type':'code_interpreter'}");

    fails("{" MIN ",'tools':[{'type':'code_execution_20250825','name':'code_execution'}]}",
          "tools.0.type: unsupported parameter: the code execution tool 'code_execution_20250825'");
    fails("{" MIN ",'tools':[{'type':'code_execution_20260120','name':'code_execution'}]}",
          "use 'code_execution_20250522'");
    fails("{" MIN ",'tools':[{'type':'code_execution_20250522','name':'python'}]}",
          "tools.0.name: Input should be 'code_execution'");
    fails("{" MIN ",'tools':[{'type':'code_execution_20250522','name':'code_execution','x':1}]}",
          "tools.0.x: Extra inputs are not permitted");
    fails("{" MIN ",'tools':[" CODE_TOOL "," CODE_TOOL "]}", "Tool names must be unique: 'code_execution'");
    fails("{" MIN ",'tools':[" CODE_TOOL "],'container':{'id':'c','skills':[{'type':'anthropic','skill_id':'pdf'}]}}",
          "container.skills: unsupported parameter");
    fails("{" MIN ",'container':{'id':'c','memory':1}}", "container.memory: Extra inputs are not permitted");
    fails("{" MIN ",'container':''}", "container: Input should be a valid string");
}

#define TURN_Q "{'role':'user','content':'q'}"

static void test_history(void)
{
    req_t r;
    fe_error_t err;
    int rc = parse(
        &r,
        "{'model':'m','max_tokens':5,'tools':[" CODE_TOOL "],'messages':[" TURN_Q ",{'role':'assistant','content':["
        "{'type':'server_tool_use','id':'srvtoolu_1','name':'code_execution','input':{'code':'print(6*7)'}},"
        "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_1','content':{'type':'code_execution_result',"
        "'stdout':'42\\n','stderr':'warn\\n','return_code':0,'content':[]}},"
        "{'type':'server_tool_use','id':'srvtoolu_2','name':'code_execution','input':{'code':'x'}},"
        "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_2','content':{'type':"
        "'code_execution_tool_result_error','error_code':'unavailable'}},"
        "{'type':'server_tool_use','id':'srvtoolu_3','name':'code_execution','input':{'code':'while 1: pass'}},"
        "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_3','content':{'type':"
        "'code_execution_tool_result_error','error_code':'execution_time_exceeded'}},"
        "{'type':'server_tool_use','id':'srvtoolu_4','name':'code_execution','input':{'code':'1'}},"
        "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_4','content':{'type':"
        "'encrypted_code_execution_result','encrypted_stdout':'zz','stderr':'','return_code':0,'content':[]}},"
        "{'type':'text','text':'It is 42.'}]}," TURN_Q "]}",
        &err);
    CHECK_INT(rc, 0);
    if (rc != 0)
        fprintf(stderr, "  error %s\n", err.message);
    check_json(json_object_get(r.parsed.canonical, "input"),
               "[{'type':'message','role':'user','content':[{'type':'input_text','text':'q'}]},"
               "{'type':'code_interpreter_call','id':'ci_1','status':'completed','code':'print(6*7)','outputs':"
               "[{'type':'logs','logs':'42\\nwarn\\n'}]},"
               "{'type':'code_interpreter_call','id':'ci_2','status':'failed','code':'x','outputs':[]},"
               "{'type':'code_interpreter_call','id':'ci_3','status':'completed','code':'while 1: pass','outputs':"
               "[{'type':'logs','logs':'[The code was stopped: it ran out of time.]'}]},"
               "{'type':'code_interpreter_call','id':'ci_4','status':'completed','code':'1','outputs':[]},"
               "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'It is 42.'}]},"
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'q'}]}]");
    req_free(&r);

    fails("{'model':'m','max_tokens':5,'messages':[" TURN_Q ",{'role':'assistant','content':["
          "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_9','content':{'type':'code_execution_result',"
          "'stdout':'','stderr':'','return_code':0,'content':[]}}]}]}",
          "must follow the server_tool_use block");
    fails("{'model':'m','max_tokens':5,'messages':[" TURN_Q ",{'role':'assistant','content':["
          "{'type':'server_tool_use','id':'srvtoolu_1','name':'code_execution','input':{}}]}]}",
          "input {\"code\": string}");
    fails("{'model':'m','max_tokens':5,'messages':[" TURN_Q ",{'role':'assistant','content':["
          "{'type':'server_tool_use','id':'srvtoolu_1','name':'code_execution','input':{'code':'1'}},"
          "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_1','content':{'type':'bash_code_execution_"
          "result'}}]}]}",
          "Input should be 'code_execution_result'");
    fails("{'model':'m','max_tokens':5,'messages':[" TURN_Q ",{'role':'assistant','content':["
          "{'type':'server_tool_use','id':'srvtoolu_1','name':'bash_code_execution','input':{'command':'ls'}}]}]}",
          "only web_search and code_execution are");
    fails("{'model':'m','max_tokens':5,'messages':[{'role':'user','content':[{'type':'code_execution_tool_result',"
          "'tool_use_id':'srvtoolu_1','content':{}}]}]}",
          "only allowed in assistant messages");
}

/* Items of a run: a print, a raise, a sandbox that could not start, a
 * timeout, and an answer. */
#define ITEM_OK                                                                                                        \
    "{'type':'code_interpreter_call','id':'ci_a1','status':'completed','code':'print(6*7)','container_id':"            \
    "'cntr_1','outputs':[{'type':'logs','logs':'42\\n'},{'type':'image','url':'data:image/png;base64,iVBO'}],"         \
    "'sb_output':'42\\n[1 image(s) shown to the user.]'}"
#define ITEM_RAISE                                                                                                     \
    "{'type':'code_interpreter_call','id':'ci_a2','status':'completed','code':'1/0','container_id':'cntr_1',"          \
    "'outputs':[{'type':'logs','logs':'Traceback (most recent call last):\\n  File \\u0022<cell>\\u0022, line 1, "     \
    "in <module>\\nZeroDivisionError: division by zero\\n'}]}"
#define ITEM_FAILED                                                                                                    \
    "{'type':'code_interpreter_call','id':'ci_a3','status':'failed','code':'x','container_id':'cntr_1',"               \
    "'outputs':[]}"
#define ITEM_TIMEOUT                                                                                                   \
    "{'type':'code_interpreter_call','id':'ci_a4','status':'completed','code':'while 1: pass','container_id':"         \
    "'cntr_2','outputs':[],'sb_output':'\\n[The code was stopped: it ran out of time.]'}"

static void test_render(void)
{
    req_t r;
    fe_error_t err;
    CHECK_INT(parse(&r, "{" MIN ",'tools':[" CODE_TOOL "]}", &err), 0);
    json_t *items = J("[" ITEM_OK "," ITEM_RAISE "," ITEM_FAILED "," ITEM_TIMEOUT ",{'type':'message','id':'m1',"
                      "'role':'assistant','content':[{'type':'output_text','text':'42','annotations':[]}]}]");
    json_array_extend(r.result.items, items);
    json_decref(items);
    snprintf(r.result.status, sizeof r.result.status, "completed");
    fe_render_ctx_t ctx = {.parsed = &r.parsed, .start_ms = 1700000000000, .request_id = "req_1"};
    json_t *msg = fe_style_messages.render(&r.result, &ctx);
    check_json(json_object_get(msg, "content"),
               "[{'type':'server_tool_use','id':'srvtoolu_a1','name':'code_execution','input':{'code':'print(6*7)'}},"
               "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_a1','content':{'type':"
               "'code_execution_result','stdout':'42\\n','stderr':'','return_code':0,'content':[]}},"
               "{'type':'server_tool_use','id':'srvtoolu_a2','name':'code_execution','input':{'code':'1/0'}},"
               "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_a2','content':{'type':"
               "'code_execution_result','stdout':'Traceback (most recent call last):\\n  File \\u0022<cell>\\u0022, "
               "line 1, in <module>\\nZeroDivisionError: division by zero\\n','stderr':'','return_code':1,"
               "'content':[]}},"
               "{'type':'server_tool_use','id':'srvtoolu_a3','name':'code_execution','input':{'code':'x'}},"
               "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_a3','content':{'type':"
               "'code_execution_tool_result_error','error_code':'unavailable'}},"
               "{'type':'server_tool_use','id':'srvtoolu_a4','name':'code_execution','input':{'code':"
               "'while 1: pass'}},"
               "{'type':'code_execution_tool_result','tool_use_id':'srvtoolu_a4','content':{'type':"
               "'code_execution_tool_result_error','error_code':'execution_time_exceeded'}},"
               "{'type':'text','text':'42'}]");
    CHECK_STR(json_string_value(json_object_get(msg, "stop_reason")), "end_turn");
    /* No counter of code runs in Anthropic's usage; the container is the
     * last run's, with an expiry. */
    CHECK(json_object_get(json_object_get(msg, "usage"), "server_tool_use") == NULL);
    json_t *container = json_object_get(msg, "container");
    CHECK_STR(json_string_value(json_object_get(container, "id")), "cntr_2");
    const char *exp = json_string_value(json_object_get(container, "expires_at"));
    CHECK(exp && strlen(exp) == 20 && exp[4] == '-' && exp[10] == 'T' && exp[19] == 'Z');
    CHECK(json_is_null(json_object_get(container, "skills")));
    char *text = json_dumps(msg, JSON_COMPACT);
    CHECK(strstr(text, "sb_output") == NULL && strstr(text, "iVBO") == NULL); /* private fields, images */
    free(text);
    json_decref(msg);

    req_free(&r);

    /* The container is there only when code ran. */
    CHECK_INT(parse(&r, "{" MIN "}", &err), 0);
    snprintf(r.result.status, sizeof r.result.status, "completed");
    msg = fe_style_messages.render(&r.result, &ctx);
    CHECK(json_object_get(msg, "container") == NULL);
    json_decref(msg);
    req_free(&r);
}

/* fe_code_traceback's heuristic, and the outcome read from an item. */
static void test_outcome(void)
{
    static const struct {
        const char *logs;
        bool raised;
    } cases[] = {
        {"", false},
        {"42\n", false},
        {"Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\nValueError: bad\n", true},
        {"Traceback (most recent call last):\r\n  File \"x\", line 2\r\nKeyError: 'k'\r\n", true},
        {"x\nTraceback (most recent call last):\n  File \"<cell>\", line 3, in f\n    g()\n\n"
         "numpy.linalg.LinAlgError: Singular matrix",
         true},
        {"Traceback (most recent call last):\n  File \"a\", line 1\nKeyboardInterrupt\n", true},
        {"Traceback (most recent call last):\n  File \"a\"\nA\n\nDuring handling of the above exception, another "
         "exception occurred:\n\nTraceback (most recent call last):\n  File \"b\"\nmod.B: two words\n",
         true},
        /* A SyntaxError shown without frames. */
        {"  File \"<cell>\", line 1\n    print(\n         ^\nSyntaxError: '(' was never closed\n", true},
        /* Printed words, not a traceback. */
        {"printing Traceback (most recent call last): here\nValueError: no\n", false},
        {"Traceback (most recent call last):\n", false},
        {"Traceback (most recent call last):\n  File \"a\"\nnot an exception line\n", false},
        {"Traceback (most recent call last):\n  File \"a\"\n1Error: x\n", false},
        {"Traceback (most recent call last):\n  File \"a\"\nError:x\n", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bool got = fe_code_traceback(cases[i].logs, strlen(cases[i].logs));
        CHECK(got == cases[i].raised);
        if (got != cases[i].raised)
            fprintf(stderr, "  case %zu: %s\n", i, cases[i].logs);
    }
    CHECK(!fe_code_traceback(NULL, 0));
    CHECK(!fe_code_traceback("Traceback (most recent call last):\nE", 35)); /* cut before the name */

    static const struct {
        const char *item;
        fe_code_outcome_t how;
    } items[] = {
        {ITEM_OK, FE_CODE_OK},
        {ITEM_RAISE, FE_CODE_ERROR},
        {ITEM_FAILED, FE_CODE_FAILED},
        {ITEM_TIMEOUT, FE_CODE_TIMEOUT},
        {"{'status':'completed','sb_outcome':'timeout'}", FE_CODE_TIMEOUT},
        {"{'status':'completed','sb_outcome':'killed'}", FE_CODE_ERROR},
        {"{'status':'completed','sb_outcome':'unavailable'}", FE_CODE_FAILED},
        {"{'status':'completed','sb_outcome':'ok','outputs':[{'type':'logs','logs':'Traceback (most recent call "
         "last):\\n  File \\u0022a\\u0022\\nE: x'}]}",
         FE_CODE_OK},
        {"{'status':'completed','outputs':[{'type':'logs','logs':'Traceback (most recent call last):\\n'},{'type':"
         "'logs','logs':'  File \\u0022a\\u0022\\nE: x'}]}",
         FE_CODE_ERROR},
    };
    for (size_t i = 0; i < sizeof items / sizeof items[0]; i++) {
        json_t *it = J(items[i].item);
        CHECK_INT(fe_code_outcome(it), items[i].how);
        json_decref(it);
    }
    json_t *it = J("{'outputs':[{'type':'logs','logs':'a'},{'type':'image','url':'u'},{'type':'logs','logs':'b'}]}");
    json_t *logs = fe_code_logs(it);
    CHECK_STR(json_string_value(logs), "ab");
    json_decref(logs);
    json_decref(it);
}

/* ---- the stream ---------------------------------------------------------------------- */

#define EV_ADDED                                                                                                       \
    "{\"type\":\"item_added\",\"item_index\":0,\"item\":{\"type\":\"code_interpreter_call\",\"id\":\"ci_s1\","         \
    "\"status\":\"in_progress\",\"code\":\"\",\"container_id\":\"cntr_9\",\"outputs\":null}}"
#define EV_DONE                                                                                                        \
    "{\"type\":\"item_done\",\"item_index\":0,\"item\":{\"type\":\"code_interpreter_call\",\"id\":\"ci_s1\","          \
    "\"status\":\"completed\",\"code\":\"x = \\\"\\u00e9\\\"\\nprint(6*7)\",\"container_id\":\"cntr_9\","              \
    "\"outputs\":[{\"type\":\"logs\",\"logs\":\"42\\n\"}],\"sb_output\":\"42\\n\"}}"

/* The content blocks a stream's events build, as the SDK accumulates
 * them: starts, input_json_delta pieces joined and parsed into input. */
static json_t *accumulate(const char *text)
{
    json_t *blocks = json_array(), *bufs = json_array(), *delta_container = NULL;
    const char *p = text;
    char name[64];
    json_t *d;
    while ((d = fe_sh_next_sse(&p, "\n\n", name, sizeof name)) != NULL) {
        if (!strcmp(name, "content_block_start")) {
            json_array_append(blocks, json_object_get(d, "content_block"));
            json_array_append_new(bufs, json_string(""));
        } else if (!strcmp(name, "content_block_delta")) {
            size_t i = (size_t)json_integer_value(json_object_get(d, "index"));
            json_t *delta = json_object_get(d, "delta");
            if (!strcmp(json_string_value(json_object_get(delta, "type")), "text_delta")) {
                json_t *b = json_array_get(blocks, i);
                char *joined = sb_xasprintf("%s%s", json_string_value(json_object_get(b, "text")),
                                            json_string_value(json_object_get(delta, "text")));
                json_object_set_new(b, "text", json_string(joined));
                free(joined);
            } else if (!strcmp(json_string_value(json_object_get(delta, "type")), "input_json_delta")) {
                char *joined = sb_xasprintf("%s%s", json_string_value(json_array_get(bufs, i)),
                                            json_string_value(json_object_get(delta, "partial_json")));
                json_array_set_new(bufs, i, json_string(joined));
                free(joined);
            }
        } else if (!strcmp(name, "message_delta")) {
            delta_container = json_incref(json_object_get(json_object_get(d, "delta"), "container"));
        }
        json_decref(d);
    }
    size_t i;
    json_t *b;
    json_array_foreach (blocks, i, b) {
        const char *buf = json_string_value(json_array_get(bufs, i));
        if (*buf) {
            json_t *input = json_loads(buf, 0, NULL);
            CHECK(input != NULL);
            json_object_set_new(b, "input", input ? input : json_null());
        }
    }
    json_decref(bufs);
    json_t *out = json_pack("{s:o, s:o?}", "content", blocks, "container", delta_container);
    return out;
}

static void test_stream(void)
{
    fe_sh_t h;
    fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
    fe_sh_feed(&h, EV_ADDED);
    /* The block starts as soon as the call shows, its input empty. */
    char *start = fe_sh_take(&h);
    CHECK(strstr(start, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
                        "\"content_block\":{\"type\":\"server_tool_use\",\"id\":\"srvtoolu_s1\",\"name\":"
                        "\"code_execution\",\"input\":{}}}\n\n") != NULL);
    free(start);
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"x = \\\"\"}");
    fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"\\u00e9\\\"\\n\"}");
    char *got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                           "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"code\\\":\\\"x = "
                           "\\\\\\\"\"}}\n\n"
                           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                           "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\xc3\xa9\\\\\\\"\\\\n\"}}\n\n");
    free(got);
    /* The interpreting step brings the whole code: the rest goes out and
     * the block ends, before the run's result. */
    fe_sh_feed(&h, "{\"type\":\"item_progress\",\"item_index\":0,\"status\":\"interpreting\",\"code\":\"x = "
                   "\\\"\\u00e9\\\"\\nprint(6*7)\"}");
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                           "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"print(6*7)\"}}\n\n"
                           "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                           "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"\\\"}\"}}\n\n"
                           "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
    free(got);
    fe_sh_feed(&h, EV_DONE);
    got = fe_sh_take(&h);
    FE_SH_CHECK_BYTES(got, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":1,"
                           "\"content_block\":{\"type\":\"code_execution_tool_result\",\"tool_use_id\":\"srvtoolu_s1\","
                           "\"content\":{\"type\":\"code_execution_result\",\"stdout\":\"42\\n\",\"stderr\":\"\","
                           "\"return_code\":0,\"content\":[]}}}\n\n"
                           "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n");
    free(got);
    fe_sh_feed(&h, "{\"type\":\"usage\",\"input_tokens\":3,\"output_tokens\":4}");
    fe_sh_feed(&h, "{\"type\":\"completed\"}");
    json_t *rendered = fe_sh_complete(&h);
    got = fe_sh_take(&h);
    CHECK(strstr(got, "event: message_delta") != NULL);
    CHECK(strstr(got, "\"container\":{\"id\":\"cntr_9\"") != NULL);
    free(got);
    json_decref(rendered);
    fe_sh_free(&h);

    /* The same run, streamed whole and not: the SDK's joined blocks are the
     * message's, with or without code deltas and the interpreting step. */
    for (int variant = 0; variant < 3; variant++) {
        fe_sh_init(&h, &fe_style_messages, NULL, "msg_1", NULL);
        if (variant != 2)
            fe_sh_feed(&h, EV_ADDED);
        if (variant == 0)
            fe_sh_feed(&h, "{\"type\":\"args_delta\",\"item_index\":0,\"delta\":\"x = \"}");
        fe_sh_feed(&h, EV_DONE);
        fe_sh_feed(&h, "{\"type\":\"item_done\",\"item_index\":1,\"item\":{\"type\":\"message\",\"id\":\"m\","
                       "\"role\":\"assistant\",\"content\":[{\"type\":\"output_text\",\"text\":\"42\"}]}}");
        fe_sh_feed(&h, "{\"type\":\"completed\"}");
        rendered = fe_sh_complete(&h);
        got = fe_sh_take(&h);
        json_t *acc = accumulate(got);
        CHECK(json_equal(json_object_get(acc, "content"), json_object_get(rendered, "content")));
        CHECK(json_equal(json_object_get(acc, "container"), json_object_get(rendered, "container")));
        if (!json_equal(json_object_get(acc, "content"), json_object_get(rendered, "content")))
            fprintf(stderr, "  variant %d stream:\n%s\n", variant, got);
        CHECK(strstr(got, "sb_output") == NULL);
        json_decref(acc);
        free(got);
        json_decref(rendered);
        fe_sh_free(&h);
    }
}

/* The escaping of stream pieces. */
static void test_json_piece(void)
{
    size_t n = 0;
    char *s = fe_messages_code_json("a\"b\\\n\xc3\xa9/", 8, &n);
    CHECK_STR(s, "a\\\"b\\\\\\n\xc3\xa9/");
    CHECK_INT(n, strlen(s));
    free(s);
    CHECK(fe_messages_code_json("\xff", 1, &n) == NULL);
    s = fe_messages_code_json("", 0, &n);
    CHECK_STR(s, "");
    free(s);
}

int main(void)
{
    test_request();
    test_history();
    test_render();
    test_outcome();
    test_stream();
    test_json_piece();
    return sb_test_finish("test_messages_code");
}
