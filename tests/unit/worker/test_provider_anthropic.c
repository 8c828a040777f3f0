/* Unit tests for the anthropic adapter: canonical job -> exact Messages
 * request, Messages responses (whole and streamed as SSE) -> exact canonical
 * event sequences, error mapping.
 *
 * JSON literals here are written with ' for " (J() swaps them), so no test
 * string contains an apostrophe. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "provider.h"
#include "sb_provider_test.h"

/* The route of every job here. */
static const char route[] = "{'provider':'anthropic','base_url':'http://127.0.0.1:18080/',"
                            "'upstream_model':'claude-test','credential_ref':null,'timeout_ms':60000}";

/* A one-message user input with these parts (a JSON text). */
#define USER(parts) "{'input':[{'type':'message','role':'user','content':" parts "}]}"

/*
 * Request side.
 */

static void test_request_basic(void)
{
    CHECK_BODY("{'instructions':'Be brief.','input':[{'type':'message','role':'user',"
               "'content':[{'type':'input_text','text':'Hi'}]}],"
               "'max_output_tokens':64,'temperature':0.5,'top_p':1,'stop':['END','STOP'],'n':1,"
               "'user':'u1','metadata':{'k':'v'},'reasoning':{'effort':'none'},"
               "'text':{'format':{'type':'text'}},'stream':false}",
               "{'model':'claude-test','max_tokens':64,'system':'Be brief.',"
               "'messages':[{'role':'user','content':[{'type':'text','text':'Hi'}]}],"
               "'temperature':0.5,'top_p':1,'stop_sequences':['END','STOP'],'metadata':{'user_id':'u1'},"
               "'stream':false}");
    /* max_tokens: the model record's when the request has none, else 4096;
     * a single stop string is a one-element list. */
    CHECK_BODY_ROUTE("{'input':[],'stop':'END'}", "{'max_output_tokens':8192}",
                     "{'model':'claude-test','max_tokens':8192,'messages':[],'stop_sequences':['END'],"
                     "'stream':false}");
    CHECK_BODY_ROUTE("{'input':[],'max_output_tokens':100}", "{'max_output_tokens':8192}",
                     "{'model':'claude-test','max_tokens':100,'messages':[],'stream':false}");
    CHECK_BODY_ROUTE("{'input':[]}", "{'max_output_tokens':null}",
                     "{'model':'claude-test','max_tokens':4096,'messages':[],'stream':false}");

    /* URL (the bare origin + /v1/messages) and headers: no credential_ref,
     * no x-api-key. */
    json_t *job = job_with("{'input':[]}");
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1/messages");
    CHECK_INT(req.n_headers, 3);
    CHECK_STR(req.headers[0], "Content-Type: application/json");
    CHECK_STR(req.headers[1], "Accept: application/json");
    CHECK_STR(req.headers[2], "anthropic-version: 2023-06-01");
    json_decref(body);
    sb_provider_request_clear(&req);

    /* credential_ref names an environment variable, sent as x-api-key (never
     * as a Bearer token). */
    json_object_set_new((json_t *)json_object_get(job, "route"), "credential_ref", json_string("SB_TEST_ANTH_KEY"));
    setenv("SB_TEST_ANTH_KEY", "sk-ant-test-123", 1);
    body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_INT(req.n_headers, 4);
    CHECK_STR(req.headers[3], "x-api-key: sk-ant-test-123");
    for (size_t i = 0; i < req.n_headers; i++)
        CHECK(strncasecmp(req.headers[i], "Authorization", 13) != 0);
    json_decref(body);
    sb_provider_request_clear(&req);
    /* Missing: a 502 naming the variable, not a value. */
    unsetenv("SB_TEST_ANTH_KEY");
    body = build(job, &req, &err);
    CHECK(body == NULL);
    CHECK_INT(json_integer_value(json_object_get(err, "status")), 502);
    CHECK_STR(json_string_value(json_object_get(err, "message")),
              "upstream credential 'SB_TEST_ANTH_KEY' is not configured");
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);

    /* A streaming job asks for a stream. */
    job = job_with("{'input':[],'stream':true}");
    body = build(job, &req, &err);
    CHECK(json_is_true(json_object_get(body, "stream")));
    CHECK_STR(req.headers[1], "Accept: text/event-stream");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);
}

/* instructions and every system/developer message, wherever it is, become
 * one system string: pieces joined with a blank line, parts of one message
 * with a newline. */
static void test_request_system(void)
{
    CHECK_BODY("{'instructions':'Be brief.','input':["
               "{'type':'message','role':'developer','content':[{'type':'input_text','text':'Rule 1'},"
               "{'type':'input_text','text':'Rule 2'}]},"
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'Hi'}]},"
               "{'type':'message','role':'system','content':[{'type':'input_text','text':''}]},"
               "{'type':'message','role':'system','content':[{'type':'input_text','text':'Late rule'}]},"
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'Again'}]}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,"
               "'system':'Be brief.\\n\\nRule 1\\nRule 2\\n\\nLate rule',"
               "'messages':[{'role':'user','content':[{'type':'text','text':'Hi'},{'type':'text','text':'Again'}]}]}");
    /* Only developer text, no instructions. */
    CHECK_BODY("{'instructions':null,'input':[{'type':'message','role':'developer',"
               "'content':[{'type':'input_text','text':'D'}]}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'system':'D','messages':[]}");
    CHECK_UNSUPPORTED("{'input':[{'type':'message','role':'system','content':[{'type':'input_image',"
                      "'image_url':'https://x/a.png'}]}]}",
                      "content part type 'input_image' in a system or developer message is not supported by "
                      "Anthropic upstreams (text only)");
}

/* Consecutive turns of one role merge into one message; empty text parts
 * (Anthropic rejects them) are left out, and a message left empty with them. */
static void test_request_alternation(void)
{
    CHECK_BODY("{'input':["
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'a'}]},"
               "{'type':'message','role':'user','content':[{'type':'input_text','text':''},"
               "{'type':'input_text','text':'b'}]},"
               "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'c'}]},"
               "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'d'}]},"
               "{'type':'message','role':'user','content':[]},"
               "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'e'}]},"
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'f'}]}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':["
               "{'role':'user','content':[{'type':'text','text':'a'},{'type':'text','text':'b'}]},"
               "{'role':'assistant','content':[{'type':'text','text':'c'},{'type':'text','text':'d'},"
               "{'type':'text','text':'e'}]},"
               "{'role':'user','content':[{'type':'text','text':'f'}]}]}");
}

static void test_request_parts(void)
{
    /* Images by URL and data URL (detail has no Anthropic equivalent); PDF
     * as base64; text files as text sources titled by filename; an assistant
     * refusal as text. */
    CHECK_BODY("{'input':[{'type':'message','role':'user','content':["
               "{'type':'input_text','text':'Look'},"
               "{'type':'input_image','image_url':'https://x/cat.png','detail':'low'},"
               "{'type':'input_image','image_url':'data:image/PNG;base64,iVBORw0K'},"
               "{'type':'input_file','filename':'paper.pdf','file_data':'data:application/pdf;base64,JVBERi0xLjQ='},"
               "{'type':'input_file','filename':'notes.txt','file_data':'data:text/plain;charset=utf-8;base64,"
               "aGVsbG8Kd29ybGQ='},"
               "{'type':'input_file','filename':'a.json','file_data':'data:application/json;base64,eyJhIjoxfQ=='}]},"
               "{'type':'message','role':'assistant','content':[{'type':'refusal','refusal':'No.'}]}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':["
               "{'role':'user','content':["
               "{'type':'text','text':'Look'},"
               "{'type':'image','source':{'type':'url','url':'https://x/cat.png'}},"
               "{'type':'image','source':{'type':'base64','media_type':'image/png','data':'iVBORw0K'}},"
               "{'type':'document','source':{'type':'base64','media_type':'application/pdf','data':'JVBERi0xLjQ='},"
               "'title':'paper.pdf'},"
               "{'type':'document','source':{'type':'text','media_type':'text/plain','data':'hello\\nworld'},"
               "'title':'notes.txt'},"
               "{'type':'document','source':{'type':'text','media_type':'text/plain','data':'{\\'a\\':1}'},"
               "'title':'a.json'}]},"
               "{'role':'assistant','content':[{'type':'text','text':'No.'}]}]}");
}

/* File type detection, and every way a part is refused. */
static void test_request_files(void)
{
    CHECK_BODY(USER("[{'type':'input_file','filename':'README.MD','file_data':'data:application/octet-stream;"
                    "base64,IyBUaXRsZQ=='}]"),
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[{'role':'user','content':["
               "{'type':'document','source':{'type':'text','media_type':'text/plain','data':'# Title'},"
               "'title':'README.MD'}]}]}");
    /* Without a filename: no title. */
    CHECK_BODY(USER("[{'type':'input_file','file_data':'data:text/markdown;base64,IyBUaXRsZQ=='}]"),
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[{'role':'user','content':["
               "{'type':'document','source':{'type':'text','media_type':'text/plain','data':'# Title'}}]}]}");
    CHECK_UNSUPPORTED(USER("[{'type':'input_file','file_data':'data:application/octet-stream;base64,IyBUaXRsZQ=='}]"),
                      "input_file 'file' of type 'application/octet-stream' is not supported by Anthropic "
                      "upstreams (PDF and text files only)");
    CHECK_UNSUPPORTED(USER("[{'type':'input_file','filename':'a.zip','file_data':'data:application/zip;base64,UEsD'}]"),
                      "input_file 'a.zip' of type 'application/zip' is not supported by Anthropic upstreams (PDF "
                      "and text files only)");
    CHECK_INVALID(USER("[{'type':'input_file','filename':'x.txt','file_data':'data:text/plain;base64,@@@'}]"), NULL,
                  "input_file 'x.txt' (content part 0) has malformed base64 file_data");
    CHECK_INVALID(USER("[{'type':'input_file','filename':'x.txt','file_data':'data:text/plain;base64,//4AYmlu'}]"),
                  NULL, "input_file 'x.txt' (content part 0) is not UTF-8 text");
    CHECK_INVALID(USER("[{'type':'input_text','text':'a'},{'type':'input_file','filename':'x.txt',"
                       "'file_data':'data:text/plain,hello'}]"),
                  NULL, "input_file 'x.txt' (content part 1) needs a base64 data URL");
    CHECK_INVALID(USER("[{'type':'input_file','file_id':'file_1'}]"), NULL,
                  "input_file 'file' (content part 0) without file_data is not supported by provider anthropic");
    CHECK_UNSUPPORTED(USER("[{'type':'input_audio','input_audio':{'data':'UklGRg==','format':'wav'}}]"),
                      "audio input is not supported by Anthropic upstreams");
    CHECK_UNSUPPORTED(USER("[{'type':'input_image','image_url':'data:image/bmp;base64,Qk0='}]"),
                      "image type 'image/bmp' is not supported by Anthropic upstreams");
    CHECK_INVALID(USER("[{'type':'input_image','image_url':'ftp://x/a.png'}]"), NULL,
                  "input_image (content part 0) needs an http(s) URL or a base64 data URL");
    CHECK_INVALID(USER("[{'type':'input_image','file_id':'file_1'}]"), NULL,
                  "input_image (content part 0) without image_url is not supported by provider anthropic");
    CHECK_INVALID(USER("[{'type':'refusal','refusal':'x'}]"), NULL,
                  "content part type 'refusal' is not supported by provider anthropic");
    CHECK_INVALID(USER("[{'type':'input_text'}]"), NULL, "content part 0 has no text");
}

/* function_call -> assistant tool_use (merged with the text turn before
 * it), function_call_output -> user tool_result (merged with the user turn
 * after it); ids are the call_ids, both ways. */
static void test_request_tool_round_trip(void)
{
    CHECK_BODY("{'input':["
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'weather?'}]},"
               "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'Checking.'}]},"
               "{'type':'function_call','call_id':'toolu_1','name':'get_weather',"
               "'arguments':'{\\'city\\':\\'Paris\\'}'},"
               "{'type':'function_call','call_id':'toolu_2','name':'now','arguments':''},"
               "{'type':'function_call_output','call_id':'toolu_1','output':'18C'},"
               "{'type':'function_call_output','call_id':'toolu_2','output':[{'type':'input_text','text':'noon'},"
               "{'type':'input_image','image_url':'https://x/clock.png'}]},"
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'thanks'}]},"
               "{'type':'function_call','call_id':'toolu_3','name':'f','arguments':'{}'},"
               "{'type':'function_call_output','call_id':'toolu_3','output':{'d':1}},"
               "{'type':'function_call','call_id':'toolu_4','name':'g'},"
               "{'type':'function_call_output','call_id':'toolu_4','output':''}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':["
               "{'role':'user','content':[{'type':'text','text':'weather?'}]},"
               "{'role':'assistant','content':[{'type':'text','text':'Checking.'},"
               "{'type':'tool_use','id':'toolu_1','name':'get_weather','input':{'city':'Paris'}},"
               "{'type':'tool_use','id':'toolu_2','name':'now','input':{}}]},"
               "{'role':'user','content':["
               "{'type':'tool_result','tool_use_id':'toolu_1','content':'18C'},"
               "{'type':'tool_result','tool_use_id':'toolu_2','content':[{'type':'text','text':'noon'},"
               "{'type':'image','source':{'type':'url','url':'https://x/clock.png'}}]},"
               "{'type':'text','text':'thanks'}]},"
               "{'role':'assistant','content':[{'type':'tool_use','id':'toolu_3','name':'f','input':{}}]},"
               "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_3','content':'{\\'d\\':1}'}]},"
               "{'role':'assistant','content':[{'type':'tool_use','id':'toolu_4','name':'g','input':{}}]},"
               "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_4'}]}]}");
    CHECK_INVALID("{'input':[{'type':'function_call','call_id':'toolu_1','name':'f','arguments':'{oops'}]}", NULL,
                  "function_call 'toolu_1' has arguments that are not a JSON object");
    CHECK_INVALID("{'input':[{'type':'function_call','call_id':'toolu_1','name':'f','arguments':'[1]'}]}", NULL,
                  "function_call 'toolu_1' has arguments that are not a JSON object");
    CHECK_INVALID("{'input':[{'type':'function_call','name':'f'}]}", NULL, "function_call items need call_id and name");
    CHECK_INVALID("{'input':[{'type':'function_call_output','output':'x'}]}", NULL,
                  "function_call_output items need call_id");
    CHECK_UNSUPPORTED("{'input':[{'type':'function_call_output','call_id':'c','output':[{'type':'input_audio',"
                      "'input_audio':{'data':'UklGRg==','format':'wav'}}]}]}",
                      "audio input is not supported by Anthropic upstreams");
}

/* Reasoning items go back as thinking blocks only with Anthropic's
 * signature (or redacted data); others are dropped without breaking the
 * assistant turn's merge. */
static void test_request_thinking_round_trip(void)
{
    CHECK_BODY("{'input':["
               "{'type':'message','role':'user','content':[{'type':'input_text','text':'q'}]},"
               "{'type':'reasoning','id':'rs_1','summary':[],'content':[{'type':'reasoning_text','text':'Let me '},"
               "{'type':'reasoning_text','text':'think.'}],'signature':'sig-abc'},"
               "{'type':'reasoning','id':'rs_2','summary':[],'content':[],'redacted':'opaque=='},"
               "{'type':'reasoning','id':'rs_3','summary':[{'type':'summary_text','text':'elsewhere'}],"
               "'content':[{'type':'reasoning_text','text':'from another provider'}]},"
               "{'type':'function_call','call_id':'toolu_1','name':'f','arguments':'{}'},"
               "{'type':'function_call_output','call_id':'toolu_1','output':'ok'},"
               "{'type':'reasoning','id':'rs_4','summary':[],'signature':'sig-2'},"
               "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'Done.'}]}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':["
               "{'role':'user','content':[{'type':'text','text':'q'}]},"
               "{'role':'assistant','content':["
               "{'type':'thinking','thinking':'Let me think.','signature':'sig-abc'},"
               "{'type':'redacted_thinking','data':'opaque=='},"
               "{'type':'tool_use','id':'toolu_1','name':'f','input':{}}]},"
               "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_1','content':'ok'}]},"
               "{'role':'assistant','content':[{'type':'thinking','thinking':'','signature':'sig-2'},"
               "{'type':'text','text':'Done.'}]}]}");
    /* Only foreign reasoning: nothing of it is sent. */
    CHECK_BODY("{'input':[{'type':'reasoning','id':'rs_1','summary':[],'content':[{'type':'reasoning_text',"
               "'text':'x'}],'encrypted_content':null}]}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]}");
}

static void test_request_tools(void)
{
    CHECK_BODY("{'input':[],'tools':[{'type':'function','name':'get_weather','description':'Weather',"
               "'parameters':{'type':'object','properties':{'city':{'type':'string'}}},'strict':true},"
               "{'type':'function','name':'now','strict':false}],"
               "'tool_choice':{'type':'function','name':'get_weather'},'parallel_tool_calls':false}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[],"
               "'tools':[{'name':'get_weather','description':'Weather',"
               "'input_schema':{'type':'object','properties':{'city':{'type':'string'}}},'strict':true},"
               "{'name':'now','input_schema':{'type':'object','properties':{}}}],"
               "'tool_choice':{'type':'tool','name':'get_weather','disable_parallel_tool_use':true}}");
#define TOOLS "'tools':[{'type':'function','name':'f'}]"
#define TOOLS_OUT "'tools':[{'name':'f','input_schema':{'type':'object','properties':{}}}]"
    CHECK_BODY("{'input':[]," TOOLS ",'tool_choice':'auto'}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]," TOOLS_OUT ","
               "'tool_choice':{'type':'auto'}}");
    CHECK_BODY("{'input':[]," TOOLS ",'tool_choice':'required'}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]," TOOLS_OUT ","
               "'tool_choice':{'type':'any'}}");
    CHECK_BODY("{'input':[]," TOOLS ",'tool_choice':'none','parallel_tool_calls':false}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]," TOOLS_OUT ","
               "'tool_choice':{'type':'none'}}");
    CHECK_BODY("{'input':[]," TOOLS ",'tool_choice':'required','parallel_tool_calls':false}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]," TOOLS_OUT ","
               "'tool_choice':{'type':'any','disable_parallel_tool_use':true}}");
    /* No tool_choice: the API default (auto, parallel) goes unsaid... */
    CHECK_BODY("{'input':[]," TOOLS ",'parallel_tool_calls':true}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]," TOOLS_OUT "}");
    /* ...unless parallel calls are off. */
    CHECK_BODY("{'input':[]," TOOLS ",'parallel_tool_calls':false}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]," TOOLS_OUT ","
               "'tool_choice':{'type':'auto','disable_parallel_tool_use':true}}");
    /* No tools: no tool_choice either. */
    CHECK_BODY("{'input':[],'tools':[],'tool_choice':'required','parallel_tool_calls':false}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[]}");
    CHECK_UNSUPPORTED("{'input':[],'tools':[{'type':'web_search'}]}",
                      "tool type 'web_search' is not supported by Anthropic upstreams");
    CHECK_UNSUPPORTED("{'input':[]," TOOLS ",'tool_choice':{'type':'allowed_tools','tools':[]}}",
                      "tool_choice 'allowed_tools' is not supported by Anthropic upstreams");
    CHECK_UNSUPPORTED("{'input':[]," TOOLS ",'tool_choice':'sometimes'}",
                      "tool_choice 'sometimes' is not supported by Anthropic upstreams");
    CHECK_INVALID("{'input':[],'tools':[{'type':'function'}]}", NULL, "function tool 0 has no name");
    CHECK_INVALID("{'input':[],'tools':{}}", NULL, "request.tools must be an array");
#undef TOOLS
#undef TOOLS_OUT
}

static void test_request_structured(void)
{
    CHECK_BODY("{'input':[],'text':{'format':{'type':'json_schema','name':'person','strict':true,"
               "'schema':{'type':'object','properties':{'name':{'type':'string'}},'required':['name'],"
               "'additionalProperties':false}}}}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[],"
               "'output_config':{'format':{'type':'json_schema','schema':{'type':'object',"
               "'properties':{'name':{'type':'string'}},'required':['name'],'additionalProperties':false}}}}");
    CHECK_UNSUPPORTED("{'input':[],'text':{'format':{'type':'json_object'}}}",
                      "text.format json_object is not supported by Anthropic upstreams (no JSON mode without a "
                      "schema; use json_schema)");
    CHECK_INVALID("{'input':[],'text':{'format':{'type':'json_schema','name':'x'}}}", NULL,
                  "text.format json_schema needs a schema");
    CHECK_INVALID("{'input':[],'text':{'format':{'type':'grammar'}}}", NULL,
                  "text.format 'grammar' is not supported by provider anthropic");
}

/* reasoning.effort -> a thinking budget below max_tokens. */
static void test_request_effort(void)
{
    static const struct {
        const char *effort;
        int budget;
    } cases[] = {{"minimal", 1024}, {"low", 2048}, {"medium", 8192}, {"high", 16384}, {"xhigh", 32000}, {"max", 32000}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char request[160], expected[256];
        snprintf(request, sizeof request, "{'input':[],'max_output_tokens':40000,'reasoning':{'effort':'%s'}}",
                 cases[i].effort);
        snprintf(expected, sizeof expected,
                 "{'model':'claude-test','max_tokens':40000,'stream':false,'messages':[],"
                 "'thinking':{'type':'enabled','budget_tokens':%d}}",
                 cases[i].budget);
        CHECK_BODY(request, expected);
    }
    /* No limit anywhere: the 4096 fallback is for the answer, next to the budget. */
    CHECK_BODY("{'input':[],'reasoning':{'effort':'high'}}",
               "{'model':'claude-test','max_tokens':20480,'stream':false,'messages':[],"
               "'thinking':{'type':'enabled','budget_tokens':16384}}");
    /* A caller's or the model's limit is kept; the budget shrinks to fit. */
    CHECK_BODY("{'input':[],'max_output_tokens':4096,'reasoning':{'effort':'high'}}",
               "{'model':'claude-test','max_tokens':4096,'stream':false,'messages':[],"
               "'thinking':{'type':'enabled','budget_tokens':4095}}");
    CHECK_BODY_ROUTE("{'input':[],'reasoning':{'effort':'medium'}}", "{'max_output_tokens':8192}",
                     "{'model':'claude-test','max_tokens':8192,'stream':false,'messages':[],"
                     "'thinking':{'type':'enabled','budget_tokens':8191}}");
    CHECK_BODY("{'input':[],'max_output_tokens':1025,'reasoning':{'effort':'minimal'}}",
               "{'model':'claude-test','max_tokens':1025,'stream':false,'messages':[],"
               "'thinking':{'type':'enabled','budget_tokens':1024}}");
    /* Too small for any budget. */
    CHECK_UNSUPPORTED("{'input':[],'max_output_tokens':1024,'reasoning':{'effort':'minimal'}}",
                      "max_output_tokens 1024 is too small for reasoning effort 'minimal' on Anthropic upstreams "
                      "(thinking needs more than 1024; use effort 'none' or a larger max_output_tokens)");
    CHECK_UNSUPPORTED("{'input':[],'max_output_tokens':500,'reasoning':{'effort':'high'}}",
                      "max_output_tokens 500 is too small for reasoning effort 'high' on Anthropic upstreams "
                      "(thinking needs more than 1024; use effort 'none' or a larger max_output_tokens)");
    /* none: no thinking, and no limit to check. */
    CHECK_BODY("{'input':[],'max_output_tokens':16,'reasoning':{'effort':'none'}}",
               "{'model':'claude-test','max_tokens':16,'stream':false,'messages':[]}");
    CHECK_INVALID("{'input':[],'reasoning':{'effort':'extreme'}}", NULL,
                  "reasoning.effort 'extreme' is not supported by provider anthropic");
}

static void test_request_refused(void)
{
    CHECK_UNSUPPORTED("{'input':[],'seed':7}", "seed is not supported by Anthropic upstreams");
    CHECK_UNSUPPORTED("{'input':[],'frequency_penalty':0.5}",
                      "frequency_penalty is not supported by Anthropic upstreams");
    CHECK_UNSUPPORTED("{'input':[],'presence_penalty':0.5}",
                      "presence_penalty is not supported by Anthropic upstreams");
    CHECK_UNSUPPORTED("{'input':[],'n':2}", "n > 1 is not supported by Anthropic upstreams");
    CHECK_INVALID("{'input':[],'n':0}", NULL, "request.n must be at least 1");
    CHECK_INVALID("{'input':[],'n':'2'}", NULL, "request.n has the wrong type");
    CHECK_INVALID("{'input':[],'temperature':'hot'}", NULL, "request.temperature has the wrong type");
    CHECK_INVALID("{'input':[],'stop':[1]}", NULL, "request.stop has the wrong type");
    CHECK_INVALID("{'input':[],'user':5}", NULL, "request.user has the wrong type");
    CHECK_INVALID("{'input':[],'max_output_tokens':'9'}", NULL, "request.max_output_tokens has the wrong type");
    CHECK_INVALID("{'input':[],'max_output_tokens':0}", NULL, "request.max_output_tokens must be at least 1");
    CHECK_INVALID("{'input':'hi'}", NULL, "request.input must be an array of items");
    CHECK_INVALID("{'input':[{'type':'web_search_call'}]}", NULL,
                  "input item type 'web_search_call' is not supported by provider anthropic");
    CHECK_INVALID("{'input':[{'role':'user'}]}", NULL, "input item 0 has no type");
    CHECK_INVALID("{'input':[{'type':'message','role':'robot','content':[]}]}", NULL,
                  "input item 0 has an unsupported role");
    CHECK_INVALID("{'input':[{'type':'message','role':'user','content':'hi'}]}", NULL,
                  "message content must be an array of parts");

    static const char *const missing[] = {"upstream_model", "base_url"};
    static const char *const messages[] = {"route has no upstream_model", "route has no base_url"};
    for (size_t i = 0; i < 2; i++) {
        json_t *job = job_with("{'input':[]}");
        json_object_del((json_t *)json_object_get(job, "route"), missing[i]);
        sb_provider_request_t req;
        json_t *err;
        CHECK(build(job, &req, &err) == NULL);
        CHECK_STR(json_string_value(json_object_get(err, "message")), messages[i]);
        json_decref(err);
        sb_provider_request_clear(&req);
        json_decref(job);
    }
}

/*
 * Response side.
 */

/* Replaces each item id by its prefix after checking it has that prefix and
 * 32 hex digits, so event sequences compare exactly. Checks that an item's
 * item_added and item_done carry the same id. */
static void normalize_ids(json_t *events)
{
    json_t *seen = json_object(); /* item_index -> id */
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        json_t *item = json_object_get(ev, "item");
        const char *id = json_string_value(json_object_get(item, "id"));
        if (!id)
            continue;
        char key[32];
        snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_object_get(ev, "item_index")));
        const char *before = json_string_value(json_object_get(seen, key));
        CHECK(!before || !strcmp(before, id));
        json_object_set_new(seen, key, json_string(id));
        const char *prefixes[] = {"msg_", "fc_", "rs_"};
        for (size_t k = 0; k < 3; k++) {
            size_t n = strlen(prefixes[k]);
            if (!strncmp(id, prefixes[k], n) && strlen(id) == n + 32) {
                json_object_set_new(item, "id", json_string(prefixes[k]));
                break;
            }
        }
    }
    json_decref(seen);
}

/* An upstream body written like the other JSON here (with '), sent as
 * compact JSON. */
static char *compact_body(const char *text)
{
    json_t *b = J(text);
    char *s = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(b);
    return s;
}

#define MSG_ADDED(i)                                                                                                   \
    "{'type':'item_added','item_index':" #i ",'item':{'type':'message','id':'msg_','role':'assistant',"                \
    "'status':'in_progress','content':[]}}"
#define MSG_DONE(i, parts)                                                                                             \
    "{'type':'item_done','item_index':" #i ",'item':{'type':'message','id':'msg_','role':'assistant',"                 \
    "'status':'completed','content':[" parts "]}}"
#define TEXT_PART(t) "{'type':'output_text','text':'" t "','annotations':[]}"
#define REFUSAL_PART(t) "{'type':'refusal','refusal':'" t "'}"
#define TEXT_DELTA(i, c, t) "{'type':'text_delta','item_index':" #i ",'content_index':" #c ",'delta':'" t "'}"
#define RS_ADDED(i)                                                                                                    \
    "{'type':'item_added','item_index':" #i ",'item':{'type':'reasoning','id':'rs_','summary':[],'content':[]}}"
#define RS_DELTA(i, t) "{'type':'reasoning_delta','item_index':" #i ",'delta':'" t "'}"
#define FC_ADDED(i, call, name)                                                                                        \
    "{'type':'item_added','item_index':" #i ",'item':{'type':'function_call','id':'fc_','call_id':'" call "',"         \
    "'name':'" name "','arguments':'','status':'in_progress'}}"
#define ARGS_DELTA(i, t) "{'type':'args_delta','item_index':" #i ",'delta':'" t "'}"
#define FC_DONE(i, call, name, args)                                                                                   \
    "{'type':'item_done','item_index':" #i ",'item':{'type':'function_call','id':'fc_','call_id':'" call "',"          \
    "'name':'" name "','arguments':'" args "','status':'completed'}}"
#define USAGE(in, out) "{'type':'usage','input_tokens':" #in ",'output_tokens':" #out ",'reasoning_tokens':0}"
#define COMPLETED                                                                                                      \
    "{'type':'completed','status':'completed','incomplete_reason':null,'model':'public-model','upstream_us':42}"
#define CUT                                                                                                            \
    "{'type':'completed','status':'incomplete','incomplete_reason':'max_output_tokens','model':'public-model',"        \
    "'upstream_us':42}"

static void test_response_text(void)
{
    /* Consecutive text blocks: one message, a part each; cache reads and
     * writes count as input; the public model id in completed. */
    CHECK_EVENTS(200,
                 "{'id':'msg_01','type':'message','role':'assistant','model':'claude-test-20250101',"
                 "'content':[{'type':'text','text':'Hello'},{'type':'text','text':' there'}],"
                 "'stop_reason':'end_turn','stop_sequence':null,"
                 "'usage':{'input_tokens':9,'cache_creation_input_tokens':2,'cache_read_input_tokens':3,"
                 "'output_tokens':4}}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "Hello"), TEXT_DELTA(0, 1, " there"),
                        MSG_DONE(0, TEXT_PART("Hello") "," TEXT_PART(" there")), USAGE(14, 4), COMPLETED));
    /* Empty text blocks are nothing; without usage, no usage event. */
    CHECK_EVENTS(200, "{'content':[{'type':'text','text':''},{'type':'text','text':'x'}],'stop_reason':'end_turn'}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "x"), MSG_DONE(0, TEXT_PART("x")), COMPLETED));
    CHECK_EVENTS(200, "{'content':[],'stop_reason':'end_turn','usage':{'input_tokens':1,'output_tokens':0}}",
                 EVENTS(USAGE(1, 0), COMPLETED));
    /* Block types without a canonical form (server tools) are skipped. */
    CHECK_EVENTS(200,
                 "{'content':[{'type':'server_tool_use','id':'srvtoolu_1','name':'web_search','input':{}},"
                 "{'type':'text','text':'x'}],'stop_reason':'end_turn'}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "x"), MSG_DONE(0, TEXT_PART("x")), COMPLETED));
}

/* The thinking item of the thinking -> text -> tool_use turn below (and of
 * its stream in test_stream). */
#define RS_DONE_SIG                                                                                                    \
    "{'type':'item_done','item_index':0,'item':{'type':'reasoning','id':'rs_','summary':[],"                           \
    "'content':[{'type':'reasoning_text','text':'Let me think.'}],'signature':'sig123'}}"

static void test_response_thinking_and_tools(void)
{
    CHECK_EVENTS(200,
                 "{'id':'msg_01','type':'message','role':'assistant','model':'claude-test',"
                 "'content':[{'type':'thinking','thinking':'Let me think.','signature':'sig123'},"
                 "{'type':'text','text':'Hello'},"
                 "{'type':'tool_use','id':'toolu_1','name':'get_weather','input':{'city':'Paris','days':2}}],"
                 "'stop_reason':'tool_use','usage':{'input_tokens':10,'cache_read_input_tokens':5,'output_tokens':30}}",
                 EVENTS(RS_ADDED(0), RS_DELTA(0, "Let me think."), RS_DONE_SIG, MSG_ADDED(1), TEXT_DELTA(1, 0, "Hello"),
                        MSG_DONE(1, TEXT_PART("Hello")), FC_ADDED(2, "toolu_1", "get_weather"),
                        ARGS_DELTA(2, "{\\'city\\':\\'Paris\\',\\'days\\':2}"),
                        FC_DONE(2, "toolu_1", "get_weather", "{\\'city\\':\\'Paris\\',\\'days\\':2}"), USAGE(15, 30),
                        COMPLETED));
    /* Redacted thinking: an item with the opaque data and no content; text
     * on both sides of a tool call makes two messages. */
    CHECK_EVENTS(200,
                 "{'content':[{'type':'redacted_thinking','data':'EmwKAhgB'},"
                 "{'type':'text','text':'A'},{'type':'tool_use','id':'toolu_2','name':'now','input':{}},"
                 "{'type':'text','text':'B'}],'stop_reason':'end_turn'}",
                 EVENTS(RS_ADDED(0),
                        "{'type':'item_done','item_index':0,'item':{'type':'reasoning','id':'rs_','summary':[],"
                        "'content':[],'redacted':'EmwKAhgB'}}",
                        MSG_ADDED(1), TEXT_DELTA(1, 0, "A"), MSG_DONE(1, TEXT_PART("A")), FC_ADDED(2, "toolu_2", "now"),
                        ARGS_DELTA(2, "{}"), FC_DONE(2, "toolu_2", "now", "{}"), MSG_ADDED(3), TEXT_DELTA(3, 0, "B"),
                        MSG_DONE(3, TEXT_PART("B")), COMPLETED));
}

/* A reasoning item, a tool call and its id survive the whole round trip:
 * response -> canonical items -> the next request's blocks. */
static void test_round_trip(void)
{
    json_t *events =
        parse_for("{'input':[]}", 200,
                  "{'content':[{'type':'thinking','thinking':'T','signature':'S'},"
                  "{'type':'tool_use','id':'toolu_9','name':'f','input':{'a':1}}],'stop_reason':'tool_use'}",
                  -1);
    CHECK_INT(json_array_size(events), 7);
    json_t *input = json_array();
    json_array_append_new(input, J("{'type':'message','role':'user','content':[{'type':'input_text','text':'q'}]}"));
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        if (!strcmp(json_string_value(json_object_get(ev, "type")), "item_done"))
            json_array_append(input, json_object_get(ev, "item"));
    }
    json_array_append_new(input, J("{'type':'function_call_output','call_id':'toolu_9','output':'42'}"));
    json_t *job = job_with("{}");
    json_object_set_new((json_t *)json_object_get(job, "request"), "input", input);
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK_JSON(json_object_get(body, "messages"),
               "[{'role':'user','content':[{'type':'text','text':'q'}]},"
               "{'role':'assistant','content':[{'type':'thinking','thinking':'T','signature':'S'},"
               "{'type':'tool_use','id':'toolu_9','name':'f','input':{'a':1}}]},"
               "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_9','content':'42'}]}]");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);
    json_decref(events);
}

static void test_response_stop_reasons(void)
{
    static const char *const completed[] = {"end_turn", "stop_sequence", "tool_use", "pause_turn"};
    for (size_t i = 0; i < sizeof completed / sizeof completed[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "{'content':[],'stop_reason':'%s'}", completed[i]);
        CHECK_EVENTS(200, body, EVENTS(COMPLETED));
    }
    CHECK_EVENTS(200, "{'content':[{'type':'text','text':'Once upon'}],'stop_reason':'max_tokens'}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "Once upon"), MSG_DONE(0, TEXT_PART("Once upon")), CUT));
    CHECK_EVENTS(200, "{'content':[],'stop_reason':'model_context_window_exceeded'}", EVENTS(CUT));
    /* A refusal: the message says it in a refusal part, with the text the
     * model wrote, or a stock text when it wrote none. */
    CHECK_EVENTS(200,
                 "{'content':[{'type':'text','text':'I will not '},{'type':'text','text':'help with that.'}],"
                 "'stop_reason':'refusal'}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "I will not "), TEXT_DELTA(0, 1, "help with that."),
                        MSG_DONE(0, REFUSAL_PART("I will not help with that.")), COMPLETED));
    CHECK_EVENTS(200, "{'content':[],'stop_reason':'refusal'}",
                 EVENTS(MSG_ADDED(0), MSG_DONE(0, REFUSAL_PART("The model declined to respond.")), COMPLETED));
}

/* A final error event, alone; an Anthropic error body. */
#define ERR(status, kind, msg)                                                                                         \
    "[{'type':'error','status':" #status ",'kind':'" kind "','code':null,'message':'" msg "'}]"
#define ANTH_ERR(type, msg) "{'type':'error','error':{'type':'" type "','message':'" msg "'},'request_id':'req_011'}"

static void test_response_errors(void)
{
    CHECK_EVENTS(400, ANTH_ERR("invalid_request_error", "messages: roles must alternate"),
                 ERR(400, "invalid_request", "messages: roles must alternate"));
    CHECK_EVENTS(401, ANTH_ERR("authentication_error", "invalid x-api-key"),
                 ERR(502, "upstream_error", "upstream authentication failed"));
    CHECK_EVENTS(403, ANTH_ERR("permission_error", "not allowed"),
                 ERR(502, "upstream_error", "upstream authentication failed"));
    CHECK_EVENTS(404, ANTH_ERR("not_found_error", "model: claude-x"), ERR(404, "not_found", "model: claude-x"));
    CHECK_EVENTS(413, ANTH_ERR("request_too_large", "Request exceeds the maximum size"),
                 ERR(413, "request_too_large", "Request exceeds the maximum size"));
    CHECK_EVENTS_RETRY(429, ANTH_ERR("rate_limit_error", "Number of requests has exceeded your rate limit"), 17,
                       "[{'type':'error','status':429,'kind':'rate_limit','code':null,"
                       "'message':'Number of requests has exceeded your rate limit','retry_after':17}]");
    CHECK_EVENTS(500, ANTH_ERR("api_error", "Internal server error"),
                 ERR(500, "upstream_error", "Internal server error"));
    CHECK_EVENTS(529, ANTH_ERR("overloaded_error", "Overloaded"), ERR(503, "overloaded", "Overloaded"));
    CHECK_EVENTS_RAW(504, "<html>gateway timeout</html>", ERR(502, "upstream_error", "upstream returned HTTP 504"));
    CHECK_EVENTS_RAW(401, "", ERR(502, "upstream_error", "upstream authentication failed"));
    /* A 200 that is an error body. */
    CHECK_EVENTS(200, ANTH_ERR("overloaded_error", "Overloaded"), ERR(503, "overloaded", "Overloaded"));
    /* Malformed 2xx bodies. */
    CHECK_EVENTS_RAW(200, "{\"content\":[", ERR(502, "upstream_error", "upstream returned malformed JSON"));
    CHECK_EVENTS_RAW(200, "", ERR(502, "upstream_error", "upstream returned malformed JSON"));
    CHECK_EVENTS_RAW(200, "[]", ERR(502, "upstream_error", "upstream returned malformed JSON"));
    CHECK_EVENTS(200, "{'type':'message'}", ERR(502, "upstream_error", "upstream response has no content"));
    CHECK_EVENTS(200, "{'content':[{'type':'tool_use','name':'f','input':{}}]}",
                 ERR(502, "upstream_error", "upstream returned a malformed content block"));
    CHECK_EVENTS(200, "{'content':[{'type':'text','text':'x'},{'text':'y'}]}",
                 ERR(502, "upstream_error", "upstream returned a malformed content block"));
    CHECK_EVENTS(200, "{'content':[{'type':'redacted_thinking'}]}",
                 ERR(502, "upstream_error", "upstream returned a malformed content block"));
}

/*
 * Streaming: the parser, as the worker drives it.
 */

/* SSE text from lines written with ' for " in data (each line gets "\n";
 * an empty string is the blank line between events). */
static char *sse(const char *const *lines, size_t n, const char *eol)
{
    size_t total = 1;
    for (size_t i = 0; i < n; i++)
        total += strlen(lines[i]) + strlen(eol);
    char *out = malloc(total), *p = out;
    for (size_t i = 0; i < n; i++) {
        for (const char *s = lines[i]; *s; s++)
            *p++ = *s == '\'' ? '"' : *s;
        memcpy(p, eol, strlen(eol));
        p += strlen(eol);
    }
    *p = '\0';
    return out;
}

/* The events of streaming `text` to a streaming job in chunks of `chunk`
 * bytes (0: all at once). */
static json_t *stream_events(const char *text, size_t chunk)
{
    json_t *job = job_with("{'input':[],'stream':true}");
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_anthropic, job);
    json_t *events = json_array();
    size_t len = strlen(text), step = chunk ? chunk : (len ? len : 1);
    for (size_t off = 0; off < len; off += step) {
        size_t n = len - off < step ? len - off : step;
        CHECK(sb_provider_parser_feed(p, 200, text + off, n, events) == 0);
    }
    sb_provider_response_t resp = {.status = 200, .retry_after = -1, .upstream_us = 42};
    sb_provider_parser_finish(p, &resp, events);
    sb_provider_parser_destroy(&p);
    CHECK(p == NULL);
    json_decref(job);
    normalize_ids(events);
    return events;
}

static const char *const stream_lines[] = {
    "event: message_start",
    "data: {'type':'message_start','message':{'id':'msg_01','type':'message','role':'assistant','content':[],"
    "'model':'claude-test','stop_reason':null,'stop_sequence':null,'usage':{'input_tokens':10,"
    "'cache_read_input_tokens':5,'output_tokens':1}}}",
    "",
    "event: content_block_start",
    "data: {'type':'content_block_start','index':0,'content_block':{'type':'thinking','thinking':'','signature':''}}",
    "",
    ": a comment",
    "event: ping",
    "data: {'type': 'ping'}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':0,'delta':{'type':'thinking_delta','thinking':'Let me '}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':0,'delta':{'type':'thinking_delta','thinking':'think.'}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':0,'delta':{'type':'signature_delta','signature':'sig123'}}",
    "",
    "event: content_block_stop",
    "data: {'type':'content_block_stop','index':0}",
    "",
    "event: content_block_start",
    "data: {'type':'content_block_start','index':1,'content_block':{'type':'text','text':''}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':1,'delta':{'type':'text_delta','text':'Hel'}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':1,'delta':{'type':'text_delta','text':'lo'}}",
    "",
    "event: content_block_stop",
    "data: {'type':'content_block_stop','index':1}",
    "",
    "event: content_block_start",
    "data: {'type':'content_block_start','index':2,'content_block':{'type':'tool_use','id':'toolu_1',"
    "'name':'get_weather','input':{}}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':2,'delta':{'type':'input_json_delta','partial_json':''}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':2,'delta':{'type':'input_json_delta','partial_json':"
    "'{\\'city\\': \\'Paris\\','}}",
    "",
    "event: content_block_delta",
    "data: {'type':'content_block_delta','index':2,'delta':{'type':'input_json_delta','partial_json':"
    "' \\'days\\': 2}'}}",
    "",
    "event: content_block_stop",
    "data: {'type':'content_block_stop','index':2}",
    "",
    "event: message_delta",
    "data: {'type':'message_delta','delta':{'stop_reason':'tool_use','stop_sequence':null},"
    "'usage':{'output_tokens':30}}",
    "",
    "event: message_stop",
    "data: {'type':'message_stop'}",
    "",
};
#define N_STREAM_LINES (sizeof stream_lines / sizeof stream_lines[0])

static void test_stream(void)
{
    /* Whole, byte by byte, in odd chunks, with CRLF line ends: the same
     * events, which are those of the complete message but for the deltas. */
    static const char *const eols[] = {"\n", "\r\n"};
    static const size_t chunks[] = {0, 1, 7, 64};
    for (size_t e = 0; e < 2; e++) {
        char *text = sse(stream_lines, N_STREAM_LINES, eols[e]);
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++) {
            json_t *events = stream_events(text, chunks[c]);
            CHECK_JSON(events, EVENTS(RS_ADDED(0), RS_DELTA(0, "Let me "), RS_DELTA(0, "think."), RS_DONE_SIG,
                                      MSG_ADDED(1), TEXT_DELTA(1, 0, "Hel"), TEXT_DELTA(1, 0, "lo"),
                                      MSG_DONE(1, TEXT_PART("Hello")), FC_ADDED(2, "toolu_1", "get_weather"),
                                      ARGS_DELTA(2, "{\\'city\\': \\'Paris\\',"), ARGS_DELTA(2, " \\'days\\': 2}"),
                                      FC_DONE(2, "toolu_1", "get_weather", "{\\'city\\': \\'Paris\\', \\'days\\': 2}"),
                                      USAGE(15, 30), COMPLETED));
            json_decref(events);
        }
        free(text);
    }

    /* No blank line after the last event: it still counts. */
    const char *const tail[] = {
        "data: {'type':'message_start','message':{'usage':{'input_tokens':3,'output_tokens':1}}}",
        "",
        "data: {'type':'content_block_start','index':0,'content_block':{'type':'text','text':''}}",
        "",
        "data: {'type':'content_block_delta','index':0,'delta':{'type':'text_delta','text':'Hi'}}",
        "",
        "data: {'type':'content_block_stop','index':0}",
        "",
        "data: {'type':'message_delta','delta':{'stop_reason':'max_tokens'},'usage':{'output_tokens':2}}",
        "",
        "data: {'type':'message_stop'}",
    };
    char *text = sse(tail, sizeof tail / sizeof tail[0], "\n");
    text[strlen(text) - 1] = '\0';
    json_t *events = stream_events(text, 5);
    CHECK_JSON(events, EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "Hi"), MSG_DONE(0, TEXT_PART("Hi")), USAGE(3, 2), CUT));
    json_decref(events);
    free(text);

    /* A refusal: the streamed text, then the message as a refusal. */
    const char *const refusal[] = {
        "data: {'type':'message_start','message':{'usage':{'input_tokens':3,'output_tokens':1}}}",
        "",
        "data: {'type':'content_block_start','index':0,'content_block':{'type':'text','text':''}}",
        "",
        "data: {'type':'content_block_delta','index':0,'delta':{'type':'text_delta','text':'I will'}}",
        "",
        "data: {'type':'content_block_stop','index':0}",
        "",
        "data: {'type':'message_delta','delta':{'stop_reason':'refusal'},'usage':{'output_tokens':2}}",
        "",
        "data: {'type':'message_stop'}",
        "",
    };
    text = sse(refusal, sizeof refusal / sizeof refusal[0], "\n");
    events = stream_events(text, 0);
    CHECK_JSON(events, EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "I will"), MSG_DONE(0, REFUSAL_PART("I will")),
                              USAGE(3, 2), COMPLETED));
    json_decref(events);
    free(text);

    /* An error event mid-stream ends it: what came before stays, then the
     * error; anything after is ignored. */
    const char *const error[] = {
        "event: content_block_start",
        "data: {'type':'content_block_start','index':0,'content_block':{'type':'text','text':''}}",
        "",
        "data: {'type':'content_block_delta','index':0,'delta':{'type':'text_delta','text':'Hi'}}",
        "",
        "event: error",
        "data: {'type':'error','error':{'type':'overloaded_error','message':'Overloaded'}}",
        "",
        "data: {'type':'message_stop'}",
        "",
    };
    text = sse(error, sizeof error / sizeof error[0], "\n");
    events = stream_events(text, 3);
    CHECK_JSON(events, EVENTS(MSG_ADDED(0), TEXT_DELTA(0, 0, "Hi"),
                              "{'type':'error','status':503,'kind':'overloaded','code':null,'message':'Overloaded'}"));
    json_decref(events);
    free(text);

    /* Cut off before message_stop. */
    events = stream_events("data: {\"type\":\"message_start\",\"message\":{}}\n\n", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream stream ended before message_stop"));
    json_decref(events);
    events = stream_events("", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream stream ended before message_stop"));
    json_decref(events);

    /* Garbage in data. */
    events = stream_events("data: {not json\n\ndata: {\"type\":\"message_stop\"}\n\n", 0);
    CHECK_JSON(events, ERR(502, "upstream_error", "upstream sent a malformed stream event"));
    json_decref(events);

    /* A non-2xx answer to a streaming job is a plain error body. */
    json_t *job = job_with("{'input':[],'stream':true}");
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_anthropic, job);
    events = json_array();
    const char *body = "{\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}";
    CHECK(sb_provider_parser_feed(p, 429, body, strlen(body), events) == 0);
    sb_provider_response_t resp = {.status = 429, .retry_after = 3, .upstream_us = 42};
    sb_provider_parser_finish(p, &resp, events);
    CHECK_JSON(events, "[{'type':'error','status':429,'kind':'rate_limit','code':null,'message':'slow down',"
                       "'retry_after':3}]");
    json_decref(events);
    sb_provider_parser_destroy(&p);
    json_decref(job);

    /* The stream state is freed cleanly mid-event (a cancelled job). */
    job = job_with("{'input':[],'stream':true}");
    p = sb_provider_parser_new(&sb_provider_anthropic, job);
    events = json_array();
    const char *part = "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\","
                       "\"id\":\"t\",\"name\":\"f\",\"input\":{}}}\n\ndata: {\"type\":\"content_bl";
    CHECK(sb_provider_parser_feed(p, 200, part, strlen(part), events) == 0);
    CHECK_INT(json_array_size(events), 1);
    sb_provider_parser_destroy(&p);
    json_decref(events);
    json_decref(job);
}

/* Token counting: the message request's body minus max_tokens, stream,
 * sampling and metadata, to /v1/messages/count_tokens; {input_tokens} ->
 * usage + completed; errors as for a message. */
static void test_count(void)
{
    CHECK(sb_provider_anthropic.build_count_request != NULL && sb_provider_anthropic.parse_count_response != NULL);
    json_t *job =
        job_with_route("{'op':'count_tokens','instructions':'Be brief.','input':[{'type':'message','role':'user',"
                       "'content':[{'type':'input_text','text':'Hi'}]}],'temperature':0.5,'top_k':3,"
                       "'stop':['END'],'user':'u1','reasoning':{'effort':'low'},'stream':true,"
                       "'tools':[{'type':'function','name':'f','parameters':{'type':'object'}}],"
                       "'tool_choice':'auto',"
                       "'text':{'format':{'type':'json_schema','name':'o','schema':{'type':'object'}}}}",
                       "{'max_output_tokens':8192}");
    sb_provider_request_t req;
    memset(&req, 0, sizeof req);
    json_t *err = NULL;
    CHECK(sb_provider_anthropic.build_count_request(job, &req, &err) == 0);
    CHECK(err == NULL);
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1/messages/count_tokens");
    CHECK_INT(req.n_headers, 3);
    CHECK_STR(req.headers[1], "Accept: application/json");
    CHECK_STR(req.headers[2], "anthropic-version: 2023-06-01");
    json_t *body = req.body ? json_loads(req.body, 0, NULL) : NULL;
    CHECK_JSON(body, "{'model':'claude-test','system':'Be brief.',"
                     "'messages':[{'role':'user','content':[{'type':'text','text':'Hi'}]}],"
                     "'thinking':{'type':'enabled','budget_tokens':2048},"
                     "'tools':[{'name':'f','input_schema':{'type':'object'}}],'tool_choice':{'type':'auto'},"
                     "'output_config':{'format':{'type':'json_schema','schema':{'type':'object'}}}}");
    json_decref(body);
    sb_provider_request_clear(&req);

    /* The same refusals as a message request. */
    json_object_set_new((json_t *)json_object_get(job, "request"), "seed", json_integer(1));
    memset(&req, 0, sizeof req);
    CHECK(sb_provider_anthropic.build_count_request(job, &req, &err) < 0);
    CHECK_STR(json_string_value(json_object_get(err, "code")), "unsupported_parameter");
    json_decref(err);
    sb_provider_request_clear(&req);

    static const struct {
        long status;
        const char *body, *expected;
    } cases[] = {
        {200, "{\"input_tokens\":14}", "[" USAGE(14, 0) "," COMPLETED "]"},
        {200, "{\"input_tokens\":0}", "[" USAGE(0, 0) "," COMPLETED "]"},
        {200, "{\"tokens\":3}", ERR(502, "upstream_error", "upstream count response has no input_tokens")},
        {200, "not json", ERR(502, "upstream_error", "upstream count response has no input_tokens")},
        {400, "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad\"}}",
         ERR(400, "invalid_request", "bad")},
        {200, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
         ERR(503, "overloaded", "Overloaded")},
        {529, "{\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}",
         ERR(503, "overloaded", "Overloaded")},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *events = json_array();
        sb_provider_response_t resp = {.status = cases[i].status,
                                       .body = cases[i].body,
                                       .body_len = strlen(cases[i].body),
                                       .retry_after = -1,
                                       .upstream_us = 42};
        sb_provider_anthropic.parse_count_response(job, &resp, events);
        CHECK_JSON(events, cases[i].expected);
        json_decref(events);
    }
    json_decref(job);
}

/* Anthropic's context-length error (a 400 invalid_request_error "prompt is
 * too long: ...") becomes the canonical one, as a response and mid-stream. */
#define CTX_ERR(msg)                                                                                                   \
    "[{'type':'error','status':400,'kind':'invalid_request','code':'context_length_exceeded',"                         \
    "'message':'context length exceeded: " msg "'}]"
static void test_context_length(void)
{
    CHECK_EVENTS(400, ANTH_ERR("invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"),
                 CTX_ERR("prompt is too long: 208310 tokens > 200000 maximum"));
    const char *const lines[] = {
        "event: error",
        "data: {'type':'error','error':{'type':'invalid_request_error','message':'prompt is too long: 3 > 2'}}",
        "",
    };
    char *text = sse(lines, sizeof lines / sizeof lines[0], "\n");
    json_t *events = stream_events(text, 0);
    CHECK_JSON(events, CTX_ERR("prompt is too long: 3 > 2"));
    json_decref(events);
    free(text);
    /* The same words from another error type, or later in a message, are not it. */
    CHECK_EVENTS(500, ANTH_ERR("api_error", "prompt is too long"), ERR(500, "upstream_error", "prompt is too long"));
    CHECK_EVENTS(400, ANTH_ERR("invalid_request_error", "system: prompt is too long"),
                 ERR(400, "invalid_request", "system: prompt is too long"));
}

int main(void)
{
    sb_ptest = (sb_ptest_t){.provider = &sb_provider_anthropic,
                            .route = route,
                            .single_quotes = true,
                            .upstream_body = compact_body,
                            .normalize_ids = normalize_ids};
    CHECK_STR(sb_provider_anthropic.kind, "anthropic");
    CHECK(!sb_provider_anthropic.supports_n);
    CHECK(sb_provider_lookup("anthropic") == &sb_provider_anthropic);
    test_request_basic();
    test_request_system();
    test_request_alternation();
    test_request_parts();
    test_request_files();
    test_request_tool_round_trip();
    test_request_thinking_round_trip();
    test_request_tools();
    test_request_structured();
    test_request_effort();
    test_request_refused();
    test_response_text();
    test_response_thinking_and_tools();
    test_round_trip();
    test_response_stop_reasons();
    test_response_errors();
    test_stream();
    test_context_length();
    test_count();
    return sb_test_finish("provider_anthropic");
}
