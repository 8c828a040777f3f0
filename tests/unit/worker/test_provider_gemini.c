/* Unit tests for the gemini adapter: canonical job -> exact
 * GenerateContentRequest, GenerateContentResponse (whole or streamed as SSE)
 * -> exact canonical event sequences, error mapping.
 *
 * JSON in this file is written with single quotes, turned into double quotes
 * by J() (so a literal quote inside a JSON string is written \\'). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "provider.h"
#include "sb_event.h"
#include "sb_provider_test.h"

/* The route of every job here. */
static const char route[] = "{'provider':'gemini','base_url':'http://127.0.0.1:18080/v1beta/',"
                            "'upstream_model':'gemini-2.5-flash','credential_ref':null,'timeout_ms':60000}";

/* A user message with these (single-quoted) content parts. */
#define USER(parts) "{'type':'message','role':'user','content':[" parts "]}"
#define ASSISTANT(parts) "{'type':'message','role':'assistant','content':[" parts "]}"
#define TEXT(t) "{'type':'input_text','text':'" t "'}"
#define OTEXT(t) "{'type':'output_text','text':'" t "'}"

static void test_request_basic(void)
{
    /* instructions, then system and developer messages in order, make
     * systemInstruction; sampling goes into generationConfig; user,
     * metadata and parallel_tool_calls have no Gemini field. */
    /* clang-format off */
    CHECK_BODY("{'instructions':'Be brief.','input':["
               "{'type':'message','role':'developer','content':[" TEXT("Rules") "]},"
               USER(TEXT("Hi")) ","
               "{'type':'message','role':'system','content':[" TEXT("S1") "," TEXT("S2") "]}],"
               "'max_output_tokens':64,'temperature':0.5,'top_p':1,'stop':'END','seed':7,'n':1,'user':'u1',"
               "'metadata':{'k':'v'},'parallel_tool_calls':false,'frequency_penalty':0.25,"
               "'text':{'format':{'type':'text'}},'stream':false}",
               "{'systemInstruction':{'parts':[{'text':'Be brief.'},{'text':'Rules'},{'text':'S1'},{'text':'S2'}]},"
               "'contents':[{'role':'user','parts':[{'text':'Hi'}]}],"
               "'generationConfig':{'maxOutputTokens':64,'temperature':0.5,'topP':1,'stopSequences':['END'],"
               "'seed':7,'candidateCount':1,'frequencyPenalty':0.25}}");
    /* Nothing optional: no systemInstruction, no generationConfig. */
    CHECK_BODY("{'input':[" USER(TEXT("Hi")) "]}",
               "{'contents':[{'role':'user','parts':[{'text':'Hi'}]}]}");
    /* clang-format on */
    CHECK_BODY("{'input':[],'stop':['a','b']}", "{'contents':[],'generationConfig':{'stopSequences':['a','b']}}");

    /* URL and headers: no credential_ref, no key header. */
    json_t *job = job_with("{'input':[]}");
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1beta/models/gemini-2.5-flash:generateContent");
    CHECK_INT(req.n_headers, 2);
    CHECK_STR(req.headers[0], "Content-Type: application/json");
    CHECK_STR(req.headers[1], "Accept: application/json");
    json_decref(body);
    sb_provider_request_clear(&req);

    /* The key goes in x-goog-api-key, never in the URL or the body. */
    json_object_set_new((json_t *)json_object_get(job, "route"), "credential_ref", json_string("SB_TEST_GEMINI_KEY"));
    setenv("SB_TEST_GEMINI_KEY", "AIza-test-123", 1);
    body = build(job, &req, &err);
    CHECK(body != NULL);
    CHECK_INT(req.n_headers, 3);
    CHECK_STR(req.headers[2], "x-goog-api-key: AIza-test-123");
    CHECK(strstr(req.url, "AIza") == NULL);
    CHECK(strstr(req.body, "AIza") == NULL);
    json_decref(body);
    sb_provider_request_clear(&req);
    unsetenv("SB_TEST_GEMINI_KEY");
    body = build(job, &req, &err);
    CHECK(body == NULL);
    CHECK_INT(json_integer_value(json_object_get(err, "status")), 502);
    CHECK_STR(json_string_value(json_object_get(err, "message")),
              "upstream credential 'SB_TEST_GEMINI_KEY' is not configured");
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);

    /* A stream asks for SSE. */
    job = job_with("{'input':[],'stream':true}");
    body = build(job, &req, &err);
    CHECK(body != NULL && !json_object_get(body, "stream"));
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse");
    CHECK_STR(req.headers[1], "Accept: text/event-stream");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);

    /* upstream_model: a resource name is used as is; anything that could
     * reshape the URL is refused. */
    static const struct {
        const char *model, *url;
    } models[] = {
        {"models/gemini-2.0-flash", "http://127.0.0.1:18080/v1beta/models/gemini-2.0-flash:generateContent"},
        {"tunedModels/my-model-1", "http://127.0.0.1:18080/v1beta/tunedModels/my-model-1:generateContent"},
        {"../files/x", NULL},
        {"gemini?key=1", NULL},
        {"/x", NULL},
    };
    for (size_t i = 0; i < sizeof models / sizeof models[0]; i++) {
        job = job_with("{'input':[]}");
        json_object_set_new((json_t *)json_object_get(job, "route"), "upstream_model", json_string(models[i].model));
        body = build(job, &req, &err);
        if (models[i].url) {
            CHECK_STR(req.url, models[i].url);
        } else {
            CHECK(body == NULL);
            CHECK_STR(json_string_value(json_object_get(err, "message")),
                      "route upstream_model is not a valid Gemini model name");
        }
        json_decref(body);
        json_decref(err);
        sb_provider_request_clear(&req);
        json_decref(job);
    }
}

static void test_request_roles_and_parts(void)
{
    /* clang-format off */
    /* Consecutive turns of one role merge (a system message between them
     * goes to systemInstruction and does not split them); assistant is
     * "model"; an empty message adds nothing. */
    CHECK_BODY("{'input':[" USER(TEXT("a")) "," USER(TEXT("b")) ","
               "{'type':'message','role':'system','content':[" TEXT("sys") "]}," USER(TEXT("c")) ","
               ASSISTANT(OTEXT("x")) "," ASSISTANT(OTEXT("y")) "," USER("") "," USER(TEXT("d")) "]}",
               "{'systemInstruction':{'parts':[{'text':'sys'}]},'contents':["
               "{'role':'user','parts':[{'text':'a'},{'text':'b'},{'text':'c'}]},"
               "{'role':'model','parts':[{'text':'x'},{'text':'y'}]},"
               "{'role':'user','parts':[{'text':'d'}]}]}");

    /* Every part kind. */
    CHECK_BODY("{'input':[" USER(TEXT("What is this?") ","
               "{'type':'input_image','image_url':'data:image/png;base64,iVBORw0K','detail':'low'},"
               "{'type':'input_image','image_url':'https://example.com/a/cat.JPG?size=big#x'},"
               "{'type':'input_image','image_url':'https://example.com/dog.webp'},"
               "{'type':'input_file','filename':'paper.pdf','file_data':'data:application/pdf;base64,JVBERi0xLjQ='},"
               "{'type':'input_file','filename':'notes.md','file_data':'data:application/octet-stream;base64,IyBU'},"
               "{'type':'input_file','filename':'t.csv','file_data':'data:text/csv;charset=utf-8;base64,YSxi'},"
               "{'type':'input_audio','input_audio':{'data':'UklGRg==','format':'wav'}},"
               "{'type':'input_audio','input_audio':{'data':'SUQz','format':'mp3'}}") ","
               ASSISTANT(OTEXT("Partly") ",{'type':'refusal','refusal':'not all'}") "]}",
               "{'contents':[{'role':'user','parts':[{'text':'What is this?'},"
               "{'inlineData':{'mimeType':'image/png','data':'iVBORw0K'}},"
               "{'fileData':{'mimeType':'image/jpeg','fileUri':'https://example.com/a/cat.JPG?size=big#x'}},"
               "{'fileData':{'mimeType':'image/webp','fileUri':'https://example.com/dog.webp'}},"
               "{'inlineData':{'mimeType':'application/pdf','data':'JVBERi0xLjQ='}},"
               "{'inlineData':{'mimeType':'text/markdown','data':'IyBU'}},"
               "{'inlineData':{'mimeType':'text/csv','data':'YSxi'}},"
               "{'inlineData':{'mimeType':'audio/wav','data':'UklGRg=='}},"
               "{'inlineData':{'mimeType':'audio/mp3','data':'SUQz'}}]},"
               "{'role':'model','parts':[{'text':'Partly'},{'text':'not all'}]}]}");

    const char *no_type = "input_image (content part 0): provider gemini needs the image type, and the URL does not "
                          "end in .png, .jpg, .jpeg, .webp, .heic or .heif; send the image as a data URL";
    CHECK_REFUSED("{'input':[" USER("{'type':'input_image','image_url':'https://example.com/img?id=3'}") "]}",
                  400, no_type);
    CHECK_REFUSED("{'input':[" USER("{'type':'input_image','image_url':'https://example.com/x.pdf'}") "]}",
                  400, no_type);
    CHECK_REFUSED("{'input':[" USER(TEXT("x") ",{'type':'input_image','image_url':'ftp://h/x.png'}") "]}",
                  400, "input_image (content part 1) needs an http(s) URL or a base64 data URL");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_image','image_url':'data:text/plain;base64,YQ=='}") "]}",
                  400, "input_image (content part 0) is a data URL without an image MIME type");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_image','file_id':'file_1'}") "]}",
                  400, "input_image without image_url is not supported by provider gemini");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_file','file_id':'file_1'}") "]}",
                  400, "input_file (content part 0) without file_data is not supported by provider gemini");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_file','filename':'blob.bin',"
                                    "'file_data':'data:application/octet-stream;base64,AAAA'}") "]}",
                  400, "input_file 'blob.bin' (content part 0) has no MIME type provider gemini can read");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_file','filename':'a.txt','file_data':'aGk='}") "]}",
                  400, "input_file 'a.txt' (content part 0) file_data is not a base64 data URL");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_audio','input_audio':{'data':'AA==','format':'pcm16'}}") "]}",
                  400, "input_audio format 'pcm16' is not supported by provider gemini");
    CHECK_REFUSED("{'input':[" USER("{'type':'input_audio','input_audio':{'data':'AA=='}}") "]}",
                  400, "input_audio (content part 0) needs input_audio.data and .format");
    CHECK_REFUSED("{'input':[" USER("{'type':'refusal','refusal':'x'}") "]}",
                  400, "content part type 'refusal' is not supported by provider gemini");
    /* clang-format on */
    CHECK_REFUSED("{'input':[{'type':'message','role':'system','content':[{'type':'input_image',"
                  "'image_url':'data:image/png;base64,AA=='}]}]}",
                  400, "input item 0: system and developer messages may hold only text with provider gemini");
    CHECK_REFUSED("{'input':[{'type':'message','role':'robot','content':[]}]}", 400,
                  "input item 0 has an unsupported role");
    CHECK_REFUSED("{'input':[{'type':'message','role':'user','content':7}]}", 400,
                  "message content must be an array of parts");
    CHECK_REFUSED("{'input':[{'type':'web_search_call'}]}", 400,
                  "input item type 'web_search_call' is not supported by provider gemini");
    CHECK_REFUSED("{'input':'hi'}", 400, "request.input must be an array of items");
}

/* A request refused with route.capabilities caps: status and message. */
static void check_refused_caps(const char *request, const char *caps, int status, const char *msg, int line)
{
    json_t *job = job_with_route(request, NULL);
    json_object_set_new((json_t *)json_object_get(job, "route"), "capabilities", J(caps));
    sb_provider_request_t req;
    json_t *err;
    json_t *body = build(job, &req, &err);
    const char *got = json_string_value(json_object_get(err, "message"));
    CHECK(!body && err && json_integer_value(json_object_get(err, "status")) == status && got && !strcmp(got, msg));
    if (!got || strcmp(got, msg))
        fprintf(stderr, "  line %d: got %s\n", line, got ? got : "(no error)");
    json_decref(body);
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job);
}

static void test_request_tools(void)
{
    /* web_search goes to Gemini as googleSearch only when the model says
     * "native" (docs/tools.md); otherwise the worker's loop runs it, and one
     * reaching the adapter is refused like any other built-in tool. */
    CHECK_BODY_CAPS("{'input':[],'tools':[{'type':'function','name':'get_weather','description':'Weather',"
                    "'parameters':{'type':'object','properties':{'city':{'type':'string'}}},'strict':true},"
                    "{'type':'function','name':'now'},{'type':'web_search'}],"
                    "'tool_choice':{'type':'function','name':'get_weather'},'parallel_tool_calls':false}",
                    "{'web_search':'native'}",
                    "{'contents':[],'tools':[{'functionDeclarations':["
                    "{'name':'get_weather','description':'Weather','parametersJsonSchema':{'type':'object',"
                    "'properties':{'city':{'type':'string'}}}},{'name':'now'}]},{'googleSearch':{}}],"
                    "'toolConfig':{'functionCallingConfig':{'mode':'ANY','allowedFunctionNames':['get_weather']}}}");
    static const struct {
        const char *choice, *mode;
    } modes[] = {{"auto", "AUTO"}, {"required", "ANY"}, {"none", "NONE"}};
    for (size_t i = 0; i < 3; i++) {
        char request[256], expected[256];
        snprintf(request, sizeof request, "{'input':[],'tools':[{'type':'function','name':'f'}],'tool_choice':'%s'}",
                 modes[i].choice);
        snprintf(expected, sizeof expected,
                 "{'contents':[],'tools':[{'functionDeclarations':[{'name':'f'}]}],"
                 "'toolConfig':{'functionCallingConfig':{'mode':'%s'}}}",
                 modes[i].mode);
        CHECK_BODY(request, expected);
    }
    /* Without functions, tool_choice means nothing and is not sent. */
    CHECK_BODY("{'input':[],'tools':[],'tool_choice':'required'}", "{'contents':[]}");
    CHECK_BODY_CAPS("{'input':[],'tools':[{'type':'web_search_preview'}],'tool_choice':'auto'}",
                    "{'web_search':'native'}", "{'contents':[],'tools':[{'googleSearch':{}}]}");
    CHECK_BODY_CAPS("{'input':[],'tools':[{'type':'web_search_2025_08_26'}]}", "{'web_search':'native'}",
                    "{'contents':[],'tools':[{'googleSearch':{}}]}");
    CHECK_REFUSED("{'input':[],'tools':[{'type':'web_search'}]}", 400,
                  "unsupported parameter: tool type 'web_search' is not supported by provider gemini");
    check_refused_caps("{'input':[],'tools':[{'type':'web_search_preview'}]}", "{'web_search':true}", 400,
                       "unsupported parameter: tool type 'web_search_preview' is not supported by provider gemini",
                       __LINE__);
    CHECK_REFUSED("{'input':[],'tools':[{'type':'file_search','vector_store_ids':['vs_1']}]}", 400,
                  "unsupported parameter: tool type 'file_search' is not supported by provider gemini");
    check_refused_caps("{'input':[],'tools':[{'type':'web_search','filters':{'allowed_domains':['a.com']}}]}",
                       "{'web_search':'native'}", 400,
                       "unsupported parameter: web_search filters are not supported by provider gemini", __LINE__);
    CHECK_REFUSED("{'input':[],'tools':[{'type':'function','name':'f'}],'tool_choice':{'type':'allowed_tools'}}", 400,
                  "tool_choice 'allowed_tools' is not supported by provider gemini");
    CHECK_REFUSED("{'input':[],'tools':[{'type':'function'}]}", 400, "function tool 0 has no name");
    CHECK_REFUSED("{'input':[],'tools':{}}", 400, "request.tools must be an array");
}

static void test_request_function_calls(void)
{
    /* Text then two parallel calls: one model turn; both responses one user
     * turn, named after their calls by call_id (not by position). Gemini's
     * own ids go back; call_ + 24 hex ids were made up here and do not. A
     * JSON-object output is the response itself; anything else is wrapped. */
    /* clang-format off */
    CHECK_BODY("{'input':[" USER(TEXT("weather?")) "," ASSISTANT(OTEXT("Checking.")) ","
               "{'type':'function_call','call_id':'fc-gem-1','name':'get_weather',"
               "'arguments':'{\\'city\\':\\'Paris\\'}','thought_signature':'sig-A'},"
               "{'type':'function_call','call_id':'call_0123456789abcdef01234567','name':'get_time','arguments':''},"
               "{'type':'function_call_output','call_id':'call_0123456789abcdef01234567','output':'noon'},"
               "{'type':'function_call_output','call_id':'fc-gem-1','output':'{\\'temp\\':18}'},"
               "{'type':'function_call','call_id':'c3','name':'lookup','arguments':{'q':1}},"
               "{'type':'function_call_output','call_id':'c3','output':[" TEXT("line1") "," TEXT("line2") "]},"
               "{'type':'function_call','call_id':'c4','name':'lookup','arguments':'{}'},"
               "{'type':'function_call_output','call_id':'c4','output':'[1,2]'}," USER(TEXT("thanks")) "]}",
               "{'contents':[{'role':'user','parts':[{'text':'weather?'}]},"
               "{'role':'model','parts':[{'text':'Checking.'},"
               "{'functionCall':{'name':'get_weather','args':{'city':'Paris'},'id':'fc-gem-1'},"
               "'thoughtSignature':'sig-A'},"
               "{'functionCall':{'name':'get_time','args':{}}}]},"
               "{'role':'user','parts':[{'functionResponse':{'name':'get_time','response':{'result':'noon'}}},"
               "{'functionResponse':{'name':'get_weather','response':{'temp':18},'id':'fc-gem-1'}}]},"
               "{'role':'model','parts':[{'functionCall':{'name':'lookup','args':{'q':1},'id':'c3'}}]},"
               "{'role':'user','parts':[{'functionResponse':{'name':'lookup','response':{'result':'line1\\nline2'},"
               "'id':'c3'}}]},"
               "{'role':'model','parts':[{'functionCall':{'name':'lookup','args':{},'id':'c4'}}]},"
               "{'role':'user','parts':[{'functionResponse':{'name':'lookup','response':{'result':'[1,2]'},"
               "'id':'c4'}},{'text':'thanks'}]}]}");
    /* clang-format on */

    const char *no_call = "function_call_output 'c1' has no function_call with that call_id earlier in input "
                          "(provider gemini needs the function's name)";
    CHECK_REFUSED("{'input':[{'type':'function_call_output','call_id':'c1','output':'1'}]}", 400, no_call);
    /* The call must come before its output. */
    CHECK_REFUSED("{'input':[{'type':'function_call_output','call_id':'c1','output':'1'},"
                  "{'type':'function_call','call_id':'c1','name':'f','arguments':'{}'}]}",
                  400, no_call);
    CHECK_REFUSED("{'input':[{'type':'function_call','call_id':'c1','name':'f','arguments':'[1]'}]}", 400,
                  "function_call 'f': arguments must be a JSON object for provider gemini");
    CHECK_REFUSED("{'input':[{'type':'function_call','call_id':'c1','name':'f','arguments':'{oops'}]}", 400,
                  "function_call 'f': arguments must be a JSON object for provider gemini");
    CHECK_REFUSED("{'input':[{'type':'function_call','name':'f'}]}", 400, "function_call items need call_id and name");
    CHECK_REFUSED("{'input':[{'type':'function_call','call_id':'c1','name':'f','arguments':'{}'},"
                  "{'type':'function_call_output','call_id':'c1','output':[{'type':'input_image',"
                  "'image_url':'https://x/a.png'}]}]}",
                  400, "function_call_output with non-text content is not supported by provider gemini");
}

static void test_request_reasoning(void)
{
    /* Signed reasoning goes back as a thought part; unsigned reasoning (from
     * another model) is dropped and does not split the model turn; a signed
     * message puts its signature on its last text part. */
    /* clang-format off */
    CHECK_BODY("{'input':[" USER(TEXT("q")) ","
               "{'type':'reasoning','id':'rs_1','summary':[],'content':[{'type':'reasoning_text','text':'think'}],"
               "'thought_signature':'sig-R'},"
               "{'type':'reasoning','id':'rs_2','summary':[{'type':'summary_text','text':'foreign'}]},"
               "{'type':'message','role':'assistant','content':[" OTEXT("4") "," OTEXT("2") "],"
               "'thought_signature':'sig-M'},"
               "{'type':'reasoning','id':'rs_3','summary':[{'type':'summary_text','text':'sum'}],"
               "'thought_signature':'sig-S'},"
               "{'type':'message','role':'assistant','content':[],'thought_signature':'sig-E'}]}",
               "{'contents':[{'role':'user','parts':[{'text':'q'}]},{'role':'model','parts':["
               "{'thought':true,'text':'think','thoughtSignature':'sig-R'},"
               "{'text':'4'},{'text':'2','thoughtSignature':'sig-M'},"
               "{'thought':true,'text':'sum','thoughtSignature':'sig-S'},"
               "{'text':'','thoughtSignature':'sig-E'}]}]}");
    /* clang-format on */

    static const struct {
        const char *effort;
        int budget;
    } budgets[] = {{"none", 0},     {"minimal", 512}, {"low", 1024}, {"medium", 8192},
                   {"high", 24576}, {"xhigh", 32768}, {"max", 32768}};
    for (size_t i = 0; i < sizeof budgets / sizeof budgets[0]; i++) {
        char request[128], expected[256];
        snprintf(request, sizeof request, "{'input':[],'reasoning':{'effort':'%s'}}", budgets[i].effort);
        snprintf(expected, sizeof expected,
                 "{'contents':[],'generationConfig':{'thinkingConfig':{'thinkingBudget':%d,'includeThoughts':true}}}",
                 budgets[i].budget);
        CHECK_BODY(request, expected);
    }
    CHECK_REFUSED("{'input':[],'reasoning':{'effort':'maximum'}}", 400,
                  "reasoning.effort 'maximum' is not supported by provider gemini");
}

static void test_request_format_and_n(void)
{
    CHECK_BODY("{'input':[],'text':{'format':{'type':'json_schema','name':'person','strict':true,"
               "'schema':{'type':'object','properties':{'name':{'type':'string'}},'required':['name'],"
               "'additionalProperties':false}}}}",
               "{'contents':[],'generationConfig':{'responseMimeType':'application/json','responseJsonSchema':"
               "{'type':'object','properties':{'name':{'type':'string'}},'required':['name'],"
               "'additionalProperties':false}}}");
    CHECK_BODY("{'input':[],'text':{'format':{'type':'json_object'}}}",
               "{'contents':[],'generationConfig':{'responseMimeType':'application/json'}}");
    CHECK_REFUSED("{'input':[],'text':{'format':{'type':'json_schema','name':'x'}}}", 400,
                  "text.format json_schema needs a schema");
    CHECK_REFUSED("{'input':[],'text':{'format':{'type':'grammar'}}}", 400,
                  "text.format 'grammar' is not supported by provider gemini");

    /* n -> candidateCount, unless the route says the model cannot (the
     * worker then fans out). */
    CHECK_BODY("{'input':[],'n':3}", "{'contents':[],'generationConfig':{'candidateCount':3}}");
    CHECK_BODY_CAPS("{'input':[],'n':3}", "{'n':true}", "{'contents':[],'generationConfig':{'candidateCount':3}}");
    CHECK_BODY_CAPS("{'input':[],'n':3}", "{'n':false}", "{'contents':[]}");
    CHECK_REFUSED("{'input':[],'n':0}", 400, "request.n must be at least 1");
    CHECK_REFUSED("{'input':[],'n':'2'}", 400, "request.n has the wrong type");
    CHECK_REFUSED("{'input':[],'temperature':'hot'}", 400, "request.temperature has the wrong type");
    CHECK_REFUSED("{'input':[],'stop':5}", 400, "request.stop has the wrong type");
}

/*
 * Response side.
 */

/* Replaces ids by their prefix after checking their form (prefix + 32 hex;
 * made-up call ids "call_" + 24 hex), so event sequences compare exactly. */
static bool is_hex(const char *s, size_t n)
{
    if (strlen(s) != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
            return false;
    return true;
}

static void normalize_ids(json_t *events)
{
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        json_t *item = json_object_get(ev, "item");
        const char *id = json_string_value(json_object_get(item, "id"));
        const char *prefixes[] = {"msg_", "fc_", "rs_"};
        for (size_t k = 0; id && k < 3; k++) {
            size_t n = strlen(prefixes[k]);
            if (!strncmp(id, prefixes[k], n) && is_hex(id + n, 32)) {
                json_object_set_new(item, "id", json_string(prefixes[k]));
                break;
            }
        }
        const char *call_id = json_string_value(json_object_get(item, "call_id"));
        if (call_id && !strncmp(call_id, "call_", 5) && is_hex(call_id + 5, 24))
            json_object_set_new(item, "call_id", json_string("call_"));
    }
}

/* Event shapes, to keep expectations short. */
#define MSG_ADDED(i)                                                                                                   \
    "{'type':'item_added','item_index':" #i ",'item':{'type':'message','id':'msg_','role':'assistant',"                \
    "'status':'in_progress','content':[]}}"
#define TEXT_DELTA(i, d) "{'type':'text_delta','item_index':" #i ",'content_index':0,'delta':'" d "'}"
#define MSG_DONE(i, t, extra)                                                                                          \
    "{'type':'item_done','item_index':" #i ",'item':{'type':'message','id':'msg_',"                                    \
    "'role':'assistant','status':'completed','content':[{'type':'output_text','text':'" t "','annotations':[]}]" extra \
    "}}"
#define RS_ADDED(i)                                                                                                    \
    "{'type':'item_added','item_index':" #i ",'item':{'type':'reasoning','id':'rs_','summary':[],'content':[]}}"
#define RS_DELTA(i, d) "{'type':'reasoning_delta','item_index':" #i ",'delta':'" d "'}"
#define RS_DONE(i, t, extra)                                                                                           \
    "{'type':'item_done','item_index':" #i ",'item':{'type':'reasoning','id':'rs_',"                                   \
    "'summary':[],'content':[{'type':'reasoning_text','text':'" t "'}]" extra "}}"
#define FC(i, call_id, name, args, extra)                                                                              \
    "{'type':'item_added','item_index':" #i ",'item':{'type':'function_call','id':'fc_','call_id':'" call_id "',"      \
    "'name':'" name "','arguments':'','status':'in_progress'" extra "}},"                                              \
    "{'type':'args_delta','item_index':" #i ",'delta':'" args "'},"                                                    \
    "{'type':'item_done','item_index':" #i ",'item':{'type':'function_call','id':'fc_','call_id':'" call_id "',"       \
    "'name':'" name "','arguments':'" args "','status':'completed'" extra "}}"
#define USAGE(in, out, reasoning)                                                                                      \
    "{'type':'usage','input_tokens':" #in ",'output_tokens':" #out ",'reasoning_tokens':" #reasoning "}"
#define COMPLETED(model)                                                                                               \
    "{'type':'completed','status':'completed','incomplete_reason':null,'model':'" model "','upstream_us':42}"
#define INCOMPLETE(reason, model)                                                                                      \
    "{'type':'completed','status':'incomplete','incomplete_reason':'" reason "','model':'" model "','upstream_us':42}"
#define ERROR(status, kind, message)                                                                                   \
    "{'type':'error','status':" #status ",'kind':'" kind "','code':null,'message':'" message "'}"

static void test_response_text(void)
{
    /* Consecutive text parts are one message; modelVersion is the model
     * that answered; thoughts count as output and as reasoning. */
    CHECK_EVENTS(200,
                 "{'candidates':[{'content':{'role':'model','parts':[{'text':'Hello '},{'text':'there'}]},"
                 "'finishReason':'STOP','index':0}],"
                 "'usageMetadata':{'promptTokenCount':9,'candidatesTokenCount':3,'thoughtsTokenCount':4,"
                 "'totalTokenCount':16},'modelVersion':'gemini-2.5-flash-001','responseId':'r1'}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "Hello "), TEXT_DELTA(0, "there"), MSG_DONE(0, "Hello there", ""),
                        USAGE(9, 7, 4), COMPLETED("gemini-2.5-flash-001")));
    /* No modelVersion: the job's model; no usageMetadata: no usage event;
     * no finishReason: what came is the answer. */
    CHECK_EVENTS(200, "{'candidates':[{'content':{'parts':[{'text':'x'}]}}]}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "x"), MSG_DONE(0, "x", ""), COMPLETED("public-model")));

    /* item_added and item_done share one id. */
    json_t *job = job_with("{'input':[]}");
    json_t *raw = json_array();
    const char *body = "{\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"x\"}]}}]}";
    sb_provider_response_t resp = {.status = 200, .body = body, .body_len = strlen(body), .retry_after = -1};
    sb_provider_gemini.parse_response(job, &resp, raw);
    const char *a = json_string_value(json_object_get(json_object_get(json_array_get(raw, 0), "item"), "id"));
    const char *b = json_string_value(json_object_get(json_object_get(json_array_get(raw, 2), "item"), "id"));
    CHECK(a && b && !strncmp(a, "msg_", 4) && !strcmp(a, b));
    json_decref(raw);
    json_decref(job);
}

static void test_response_thoughts_and_calls(void)
{
    /* Thought parts -> one reasoning item; a signature ends its item and
     * rides on it; a call's id becomes its call_id, a call without one gets
     * call_ + hex; args are compact JSON; an empty part that only carries a
     * signature signs the item before it; other part kinds are skipped;
     * tool-use prompt tokens are input. */
    CHECK_EVENTS(
        200,
        "{'candidates':[{'content':{'role':'model','parts':["
        "{'text':'Let me ','thought':true},{'text':'think.','thought':true,'thoughtSignature':'sig-T'},"
        "{'text':'Checking.'},"
        "{'functionCall':{'id':'gem-1','name':'get_weather','args':{'city':'Paris','days':2}},"
        "'thoughtSignature':'sig-F'},"
        "{'functionCall':{'name':'now'}},"
        "{'text':'More'},{'text':'','thoughtSignature':'sig-E'},"
        "{'executableCode':{'language':'PYTHON','code':'1'}}]},"
        "'finishReason':'STOP'}],"
        "'usageMetadata':{'promptTokenCount':20,'candidatesTokenCount':15,'toolUsePromptTokenCount':5}}",
        EVENTS(RS_ADDED(0), RS_DELTA(0, "Let me "), RS_DELTA(0, "think."),
               RS_DONE(0, "Let me think.", ",'thought_signature':'sig-T'"), MSG_ADDED(1), TEXT_DELTA(1, "Checking."),
               MSG_DONE(1, "Checking.", ""),
               FC(2, "gem-1", "get_weather", "{\\'city\\':\\'Paris\\',\\'days\\':2}", ",'thought_signature':'sig-F'"),
               FC(3, "call_", "now", "{}", ""), MSG_ADDED(4), TEXT_DELTA(4, "More"),
               MSG_DONE(4, "More", ",'thought_signature':'sig-E'"), USAGE(25, 15, 0), COMPLETED("public-model")));
    /* A signature-only part with nothing open before it makes an empty item
     * of its own kind (so the signature still goes back). */
    CHECK_EVENTS(200,
                 "{'candidates':[{'content':{'parts':[{'functionCall':{'name':'f','args':{}}},"
                 "{'text':'','thoughtSignature':'sig-X'}]},'finishReason':'STOP'}]}",
                 EVENTS(FC(0, "call_", "f", "{}", ""), MSG_ADDED(1), MSG_DONE(1, "", ",'thought_signature':'sig-X'"),
                        COMPLETED("public-model")));
    CHECK_EVENTS(200, "{'candidates':[{'content':{'parts':[{'functionCall':{'args':{}}}]},'finishReason':'STOP'}]}",
                 EVENTS(ERROR(502, "upstream_error", "upstream returned a malformed function call")));
    CHECK_EVENTS(200,
                 "{'candidates':[{'content':{'parts':[{'functionCall':{'name':'f','args':[1]}}]},"
                 "'finishReason':'STOP'}]}",
                 EVENTS(ERROR(502, "upstream_error", "upstream returned a malformed function call")));
}

/* Items from a response, passed back as input, give Gemini its own parts
 * back, signatures where they were. */
static void test_signature_round_trip(void)
{
    const char *parts =
        "[{'text':'plan','thought':true,'thoughtSignature':'sig-T'},"
        "{'text':'Answer','thoughtSignature':'sig-M'},"
        "{'functionCall':{'id':'g1','name':'f','args':{'a':[1,{'b':null}]}},'thoughtSignature':'sig-F'},"
        "{'functionCall':{'name':'g','args':{}}}]";
    char body[1024];
    snprintf(body, sizeof body, "{'candidates':[{'content':{'role':'model','parts':%s},'finishReason':'STOP'}]}",
             parts);
    json_t *job = job_with("{'input':[]}");
    json_t *events = json_array();
    char *b = Q(body);
    sb_provider_response_t resp = {.status = 200, .body = b, .body_len = strlen(b), .retry_after = -1};
    sb_provider_gemini.parse_response(job, &resp, events);
    free(b);

    /* The next request: the items, then an output for each call, by call_id. */
    json_t *input = json_array();
    json_t *outputs = json_array();
    json_array_append_new(input, J(USER(TEXT("q"))));
    size_t i;
    json_t *ev;
    json_array_foreach (events, i, ev) {
        if (sb_event_type_of(ev) != SB_EV_ITEM_DONE)
            continue;
        json_t *item = json_object_get(ev, "item");
        json_array_append(input, item);
        if (!strcmp(json_string_value(json_object_get(item, "type")), "function_call"))
            json_array_append_new(outputs, json_pack("{s:s, s:O, s:s}", "type", "function_call_output", "call_id",
                                                     json_object_get(item, "call_id"), "output", "ok"));
    }
    json_array_extend(input, outputs);
    json_decref(outputs);
    json_t *job2 = job_with("{}");
    json_object_set_new((json_t *)json_object_get(job2, "request"), "input", input);
    sb_provider_request_t req;
    json_t *err;
    json_t *sent = build(job2, &req, &err);
    char expected[1024];
    snprintf(expected, sizeof expected,
             "{'contents':[{'role':'user','parts':[{'text':'q'}]},{'role':'model','parts':%s},"
             "{'role':'user','parts':[{'functionResponse':{'name':'f','response':{'result':'ok'},'id':'g1'}},"
             "{'functionResponse':{'name':'g','response':{'result':'ok'}}}]}]}",
             parts);
    CHECK_JSON(sent, expected);
    json_decref(sent);
    json_decref(err);
    sb_provider_request_clear(&req);
    json_decref(job2);
    json_decref(events);
    json_decref(job);
}

static void test_response_finish_reasons(void)
{
    CHECK_EVENTS(200, "{'candidates':[{'content':{'parts':[{'text':'Once upon'}]},'finishReason':'MAX_TOKENS'}]}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "Once upon"), MSG_DONE(0, "Once upon", ""),
                        INCOMPLETE("max_output_tokens", "public-model")));
    static const char *const filtered[] = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII"};
    for (size_t i = 0; i < sizeof filtered / sizeof filtered[0]; i++) {
        char body[128];
        snprintf(body, sizeof body, "{'candidates':[{'finishReason':'%s','index':0}]}", filtered[i]);
        CHECK_EVENTS(200, body, EVENTS(INCOMPLETE("content_filter", "public-model")));
    }
    CHECK_EVENTS(200, "{'candidates':[{'content':{'parts':[{'text':'hm'}]},'finishReason':'OTHER'}]}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "hm"), MSG_DONE(0, "hm", ""), COMPLETED("public-model")));
    CHECK_EVENTS(200, "{'candidates':[{'content':{'parts':[{'text':'x'}]},'finishReason':'MALFORMED_FUNCTION_CALL'}]}",
                 EVENTS(ERROR(502, "upstream_error",
                              "the model produced an unusable function call (finishReason MALFORMED_FUNCTION_CALL)")));
    /* A blocked prompt has no candidates. */
    CHECK_EVENTS(200, "{'promptFeedback':{'blockReason':'SAFETY','safetyRatings':[]},'usageMetadata':{}}",
                 "[{'type':'error','status':400,'kind':'invalid_request','code':'content_filter',"
                 "'message':'Gemini blocked the prompt (blockReason SAFETY)'}]");
}

/* n candidates: tagged, item indices per choice, choice_done each, one
 * usage, incomplete when one was cut. */
static void test_response_candidates(void)
{
    CHECK_EVENTS_FOR(
        "{'input':[],'n':3}",
        "{'candidates':[{'index':0,'content':{'parts':[{'text':'A'}]},'finishReason':'STOP'},"
        "{'index':1,'content':{'parts':[{'text':'r','thought':true},{'text':'B'}]},'finishReason':'MAX_TOKENS'},"
        "{'index':2,'content':{'parts':[{'functionCall':{'id':'x1','name':'f','args':{}}}]},'finishReason':'STOP'}],"
        "'usageMetadata':{'promptTokenCount':4,'candidatesTokenCount':12},'modelVersion':'gemini-2.5-pro'}",
        "[{'type':'item_added','choice':0,'item_index':0,'item':{'type':'message','id':'msg_','role':'assistant',"
        "'status':'in_progress','content':[]}},"
        "{'type':'text_delta','choice':0,'item_index':0,'content_index':0,'delta':'A'},"
        "{'type':'item_done','choice':0,'item_index':0,'item':{'type':'message','id':'msg_','role':'assistant',"
        "'status':'completed','content':[{'type':'output_text','text':'A','annotations':[]}]}},"
        "{'type':'choice_done','choice':0,'status':'completed','incomplete_reason':null},"
        "{'type':'item_added','choice':1,'item_index':0,'item':{'type':'reasoning','id':'rs_','summary':[],"
        "'content':[]}},"
        "{'type':'reasoning_delta','choice':1,'item_index':0,'delta':'r'},"
        "{'type':'item_done','choice':1,'item_index':0,'item':{'type':'reasoning','id':'rs_','summary':[],"
        "'content':[{'type':'reasoning_text','text':'r'}]}},"
        "{'type':'item_added','choice':1,'item_index':1,'item':{'type':'message','id':'msg_','role':'assistant',"
        "'status':'in_progress','content':[]}},"
        "{'type':'text_delta','choice':1,'item_index':1,'content_index':0,'delta':'B'},"
        "{'type':'item_done','choice':1,'item_index':1,'item':{'type':'message','id':'msg_','role':'assistant',"
        "'status':'completed','content':[{'type':'output_text','text':'B','annotations':[]}]}},"
        "{'type':'choice_done','choice':1,'status':'incomplete','incomplete_reason':'max_output_tokens'},"
        "{'type':'item_added','choice':2,'item_index':0,'item':{'type':'function_call','id':'fc_','call_id':'x1',"
        "'name':'f','arguments':'','status':'in_progress'}},"
        "{'type':'args_delta','choice':2,'item_index':0,'delta':'{}'},"
        "{'type':'item_done','choice':2,'item_index':0,'item':{'type':'function_call','id':'fc_','call_id':'x1',"
        "'name':'f','arguments':'{}','status':'completed'}},"
        "{'type':'choice_done','choice':2,'status':'completed','incomplete_reason':null},"
        "{'type':'usage','input_tokens':4,'output_tokens':12,'reasoning_tokens':0},"
        "{'type':'completed','status':'incomplete','incomplete_reason':'max_output_tokens',"
        "'model':'gemini-2.5-pro','upstream_us':42}]");
    /* n asked for, one candidate back: still tagged, with its choice_done. */
    CHECK_EVENTS_FOR("{'input':[],'n':2}", "{'candidates':[{'finishReason':'STOP'}]}",
                     EVENTS("{'type':'choice_done','choice':0,'status':'completed','incomplete_reason':null}",
                            COMPLETED("public-model")));
    /* One choice asked for, two came: both pass on as choices (as chat does). */
    CHECK_EVENTS_FOR(
        "{'input':[]}", "{'candidates':[{'index':0,'finishReason':'STOP'},{'index':1,'finishReason':'SAFETY'}]}",
        EVENTS("{'type':'choice_done','choice':0,'status':'completed','incomplete_reason':null}",
               "{'type':'choice_done','choice':1,'status':'incomplete','incomplete_reason':'content_filter'}",
               INCOMPLETE("content_filter", "public-model")));
    /* A bad candidate anywhere fails the response, with nothing else. */
    CHECK_EVENTS_FOR("{'input':[],'n':2}",
                     "{'candidates':[{'index':0,'content':{'parts':[{'text':'a'}]},'finishReason':'STOP'},"
                     "{'index':1,'content':{'parts':[{'functionCall':{}}]}}]}",
                     EVENTS(ERROR(502, "upstream_error", "upstream returned a malformed function call")));
    CHECK_EVENTS_FOR("{'input':[],'n':2}", "{'candidates':[{'index':100000,'finishReason':'STOP'}]}",
                     EVENTS(ERROR(502, "upstream_error", "upstream returned a candidate out of range")));
}

static void test_response_errors(void)
{
    /* The gateway's key rejected: a 502 with a generic text, never a 401. */
    json_t *events = parse_for("{'input':[]}", 400,
                               "{'error':{'code':400,'message':'API key not valid. Please pass a valid API key.',"
                               "'status':'INVALID_ARGUMENT','details':[{'@type':'type.googleapis.com/"
                               "google.rpc.ErrorInfo','reason':'API_KEY_INVALID','domain':'googleapis.com',"
                               "'metadata':{'service':'generativelanguage.googleapis.com'}}]}}",
                               -1);
    json_t *ev = json_array_get(events, 0);
    CHECK_INT(json_array_size(events), 1);
    CHECK_INT(json_integer_value(json_object_get(ev, "status")), 502);
    CHECK_STR(json_string_value(json_object_get(ev, "kind")), "upstream_error");
    CHECK_STR(json_string_value(json_object_get(ev, "message")), "upstream authentication failed");
    json_decref(events);
    CHECK_EVENTS(400, "{'error':{'code':400,'message':'Invalid JSON payload received.','status':'INVALID_ARGUMENT'}}",
                 EVENTS(ERROR(400, "invalid_request", "Invalid JSON payload received.")));
    /* Retry-After wins; else RetryInfo's retryDelay, rounded up. */
    CHECK_EVENTS_RETRY(429,
                       "{'error':{'code':429,'message':'Resource has been exhausted (e.g. check quota).',"
                       "'status':'RESOURCE_EXHAUSTED','details':[{'@type':'type.googleapis.com/google.rpc.RetryInfo',"
                       "'retryDelay':'37s'}]}}",
                       20,
                       "[{'type':'error','status':429,'kind':'rate_limit','code':null,"
                       "'message':'Resource has been exhausted (e.g. check quota).','retry_after':20}]");
    CHECK_EVENTS(429,
                 "{'error':{'code':429,'message':'You exceeded your current quota.','status':'RESOURCE_EXHAUSTED',"
                 "'details':[{'@type':'type.googleapis.com/google.rpc.QuotaFailure','violations':[]},"
                 "{'@type':'type.googleapis.com/google.rpc.RetryInfo','retryDelay':'36.2s'}]}}",
                 "[{'type':'error','status':429,'kind':'rate_limit','code':null,"
                 "'message':'You exceeded your current quota.','retry_after':37}]");
    CHECK_EVENTS(429, "{'error':{'code':429,'message':'Slow down','status':'RESOURCE_EXHAUSTED'}}",
                 EVENTS(ERROR(429, "rate_limit", "Slow down")));
    CHECK_EVENTS(403, "{'error':{'code':403,'message':'Permission denied','status':'PERMISSION_DENIED'}}",
                 EVENTS(ERROR(502, "upstream_error", "upstream authentication failed")));
    CHECK_EVENTS(404, "[{'error':{'code':404,'message':'models/x is not found','status':'NOT_FOUND'}}]",
                 EVENTS(ERROR(404, "not_found", "models/x is not found")));
    CHECK_EVENTS(500, "{'error':{'code':500,'message':'An internal error has occurred.','status':'INTERNAL'}}",
                 EVENTS(ERROR(500, "upstream_error", "An internal error has occurred.")));
    CHECK_EVENTS(503, "{'error':{'code':503,'message':'The model is overloaded.','status':'UNAVAILABLE'}}",
                 EVENTS(ERROR(503, "overloaded", "The model is overloaded.")));
    CHECK_EVENTS(504, "<html>timeout</html>", EVENTS(ERROR(502, "upstream_error", "upstream returned HTTP 504")));
    CHECK_EVENTS(
        200, "{'candidates':[{'content':", EVENTS(ERROR(502, "upstream_error", "upstream returned malformed JSON")));
    CHECK_EVENTS(200, "", EVENTS(ERROR(502, "upstream_error", "upstream returned malformed JSON")));
    CHECK_EVENTS(200, "{'candidates':[],'modelVersion':'m'}",
                 EVENTS(ERROR(502, "upstream_error", "upstream response has no candidates")));
    CHECK_EVENTS(200, "{'error':{'code':500,'message':'proxy says no'}}",
                 EVENTS(ERROR(500, "upstream_error", "proxy says no")));
}

/*
 * Streaming: the same response as SSE gives the same events, however the
 * bytes are cut.
 */

/* Runs a stream (single-quoted) for a job with this request through the
 * generic parser, fed `step` bytes at a time (0: all at once). Returns the
 * events, or NULL when a feed failed (*feed_rc set). */
static json_t *stream(const char *request, const char *sse, size_t step, int *feed_rc)
{
    json_t *job = job_with(request);
    json_object_set_new((json_t *)json_object_get(job, "request"), "stream", json_true());
    json_t *events = json_array();
    char *s = Q(sse);
    size_t len = strlen(s);
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_gemini, job);
    *feed_rc = 0;
    for (size_t pos = 0; pos < len && *feed_rc == 0;) {
        size_t n = step && step < len - pos ? step : len - pos;
        *feed_rc = sb_provider_parser_feed(p, 200, s + pos, n, events);
        pos += n;
    }
    if (*feed_rc == 0) {
        sb_provider_response_t resp = {.status = 200, .retry_after = -1, .upstream_us = 42};
        sb_provider_parser_finish(p, &resp, events);
        normalize_ids(events);
    } else {
        json_decref(events);
        events = NULL;
    }
    sb_provider_parser_destroy(&p);
    free(s);
    json_decref(job);
    return events;
}

#define CHECK_STREAM(request, sse, expected) check_stream((request), (sse), (expected), __FILE__, __LINE__)
static void check_stream(const char *request, const char *sse, const char *expected, const char *file, int line)
{
    static const size_t steps[] = {0, 1, 7, 64};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        int rc;
        json_t *events = stream(request, sse, steps[i], &rc);
        if (!events)
            fprintf(stderr, "%s:%d: feed failed (%d) at step %zu\n", file, line, rc, steps[i]);
        check_json(events, expected, file, line);
        json_decref(events);
    }
}

static void test_stream(void)
{
    /* Thoughts, then text across chunks (CRLF framing, a comment line),
     * then a call with the final chunk; usage from the last chunk. */
    CHECK_STREAM("{'input':[]}",
                 ": keep-alive\r\n\r\n"
                 "data: {'candidates':[{'content':{'role':'model','parts':[{'text':'Hm','thought':true}]},"
                 "'index':0}],'usageMetadata':{'promptTokenCount':3},'modelVersion':'gemini-2.5-flash'}\r\n\r\n"
                 "data: {'candidates':[{'content':{'role':'model','parts':[{'text':'.','thought':true,"
                 "'thoughtSignature':'sig-T'}]},'index':0}]}\r\n\r\n"
                 "data: {'candidates':[{'content':{'role':'model','parts':[{'text':'Hel'}]},'index':0}]}\r\n\r\n"
                 "data: {'candidates':[{'content':{'role':'model','parts':[{'text':'lo'},"
                 "{'functionCall':{'name':'f','args':{'a':1}},'thoughtSignature':'sig-F'}]},"
                 "'finishReason':'STOP','index':0}],"
                 "'usageMetadata':{'promptTokenCount':3,'candidatesTokenCount':5,'thoughtsTokenCount':2},"
                 "'modelVersion':'gemini-2.5-flash'}\r\n\r\n",
                 EVENTS(RS_ADDED(0), RS_DELTA(0, "Hm"), RS_DELTA(0, "."),
                        RS_DONE(0, "Hm.", ",'thought_signature':'sig-T'"), MSG_ADDED(1), TEXT_DELTA(1, "Hel"),
                        TEXT_DELTA(1, "lo"), MSG_DONE(1, "Hello", ""),
                        FC(2, "call_", "f", "{\\'a\\':1}", ",'thought_signature':'sig-F'"), USAGE(3, 7, 2),
                        COMPLETED("gemini-2.5-flash")));
    /* LF framing, a data field split over two lines, a last event without
     * its blank line, a signature in an empty part of its own chunk. */
    CHECK_STREAM("{'input':[]}",
                 "data: {'candidates':[{'content':\ndata: {'parts':[{'text':'A'}]}}]}\n\n"
                 "data: {'candidates':[{'content':{'parts':[{'text':'','thoughtSignature':'sig-E'}]},"
                 "'finishReason':'MAX_TOKENS'}]}",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "A"), MSG_DONE(0, "A", ",'thought_signature':'sig-E'"),
                        INCOMPLETE("max_output_tokens", "public-model")));
    /* Two candidates interleaved; each closes when its finishReason comes. */
    CHECK_STREAM("{'input':[],'n':2}",
                 "data: {'candidates':[{'index':0,'content':{'parts':[{'text':'a'}]}},"
                 "{'index':1,'content':{'parts':[{'text':'b'}]}}]}\n\n"
                 "data: {'candidates':[{'index':1,'content':{'parts':[{'text':'!'}]},'finishReason':'SAFETY'}]}\n\n"
                 "data: {'candidates':[{'index':0,'content':{'parts':[]},'finishReason':'STOP'}]}\n\n",
                 "[{'type':'item_added','choice':0,'item_index':0,'item':{'type':'message','id':'msg_',"
                 "'role':'assistant','status':'in_progress','content':[]}},"
                 "{'type':'text_delta','choice':0,'item_index':0,'content_index':0,'delta':'a'},"
                 "{'type':'item_added','choice':1,'item_index':0,'item':{'type':'message','id':'msg_',"
                 "'role':'assistant','status':'in_progress','content':[]}},"
                 "{'type':'text_delta','choice':1,'item_index':0,'content_index':0,'delta':'b'},"
                 "{'type':'text_delta','choice':1,'item_index':0,'content_index':0,'delta':'!'},"
                 "{'type':'item_done','choice':1,'item_index':0,'item':{'type':'message','id':'msg_',"
                 "'role':'assistant','status':'completed','content':[{'type':'output_text','text':'b!',"
                 "'annotations':[]}]}},"
                 "{'type':'choice_done','choice':1,'status':'incomplete','incomplete_reason':'content_filter'},"
                 "{'type':'item_done','choice':0,'item_index':0,'item':{'type':'message','id':'msg_',"
                 "'role':'assistant','status':'completed','content':[{'type':'output_text','text':'a',"
                 "'annotations':[]}]}},"
                 "{'type':'choice_done','choice':0,'status':'completed','incomplete_reason':null},"
                 "{'type':'completed','status':'incomplete','incomplete_reason':'content_filter',"
                 "'model':'public-model','upstream_us':42}]");
    /* An error in the stream ends it with that error. */
    CHECK_STREAM("{'input':[]}",
                 "data: {'candidates':[{'content':{'parts':[{'text':'A'}]}}]}\n\n"
                 "data: {'error':{'code':503,'message':'The model is overloaded.','status':'UNAVAILABLE'}}\n\n"
                 "data: {'candidates':[{'content':{'parts':[{'text':'B'}]},'finishReason':'STOP'}]}\n\n",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "A"), ERROR(503, "overloaded", "The model is overloaded.")));
    /* Cut before the finishReason. */
    CHECK_STREAM("{'input':[]}", "data: {'candidates':[{'content':{'parts':[{'text':'A'}]}}]}\n\n",
                 EVENTS(MSG_ADDED(0), TEXT_DELTA(0, "A"),
                        ERROR(502, "upstream_error", "upstream stream ended before the response did")));
    CHECK_STREAM("{'input':[]}", "", EVENTS(ERROR(502, "upstream_error", "upstream returned an empty response")));
    CHECK_STREAM("{'input':[]}", "data: {'promptFeedback':{'blockReason':'PROHIBITED_CONTENT'}}\n\n",
                 "[{'type':'error','status':400,'kind':'invalid_request','code':'content_filter',"
                 "'message':'Gemini blocked the prompt (blockReason PROHIBITED_CONTENT)'}]");
    CHECK_STREAM("{'input':[]}", "data: {'candidates':[{'content':",
                 EVENTS(ERROR(502, "upstream_error", "upstream returned a malformed stream event")));
    /* A chunk that is not JSON aborts the transfer. */
    int rc;
    json_t *events = stream("{'input':[]}", "data: nope\n\ndata: {}\n\n", 0, &rc);
    CHECK(events == NULL);
    CHECK_INT(rc, -EBADMSG);

    /* The non-streaming response with the same parts gives the same events. */
    json_t *whole = parse_for("{'input':[]}", 200,
                              "{'candidates':[{'content':{'parts':[{'text':'Hel'},{'text':'lo'}]},"
                              "'finishReason':'STOP'}],'modelVersion':'m'}",
                              -1);
    json_t *streamed = stream("{'input':[]}",
                              "data: {'candidates':[{'content':{'parts':[{'text':'Hel'}]}}],'modelVersion':'m'}\n\n"
                              "data: {'candidates':[{'content':{'parts':[{'text':'lo'}]},'finishReason':'STOP'}],"
                              "'modelVersion':'m'}\n\n",
                              3, &rc);
    CHECK(whole && streamed && json_equal(whole, streamed));
    json_decref(whole);
    json_decref(streamed);

    /* A non-2xx stream response is an ordinary error body. */
    json_t *job = job_with("{'input':[],'stream':true}");
    json_t *evs = json_array();
    sb_provider_parser_t *p = sb_provider_parser_new(&sb_provider_gemini, job);
    const char *body = "{\"error\":{\"code\":429,\"message\":\"Slow down\",\"status\":\"RESOURCE_EXHAUSTED\"}}";
    CHECK_INT(sb_provider_parser_feed(p, 429, body, strlen(body), evs), 0);
    sb_provider_response_t resp = {.status = 429, .retry_after = 5, .upstream_us = 1};
    sb_provider_parser_finish(p, &resp, evs);
    CHECK_JSON(evs, "[{'type':'error','status':429,'kind':'rate_limit','code':null,'message':'Slow down',"
                    "'retry_after':5}]");
    sb_provider_parser_destroy(&p);
    json_decref(evs);
    json_decref(job);
}

/* Token counting: :countTokens with the generation's mapping wrapped as
 * generateContentRequest (with the model's resource name); totalTokens ->
 * usage + completed. */
static void test_count(void)
{
    CHECK(sb_provider_gemini.build_count_request != NULL && sb_provider_gemini.parse_count_response != NULL);
    /* clang-format off */
    json_t *job = job_with("{'op':'count_tokens','instructions':'Be brief.','input':[" USER(TEXT("Hi")) "],"
                           "'temperature':0.5,'stream':true,"
                           "'tools':[{'type':'function','name':'f','parameters':{'type':'object'}}],"
                           "'tool_choice':'required'}");
    /* clang-format on */
    sb_provider_request_t req;
    memset(&req, 0, sizeof req);
    json_t *err = NULL;
    CHECK(sb_provider_gemini.build_count_request(job, &req, &err) == 0);
    CHECK(err == NULL);
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1beta/models/gemini-2.5-flash:countTokens");
    CHECK_STR(req.headers[1], "Accept: application/json");
    json_t *body = req.body ? json_loads(req.body, 0, NULL) : NULL;
    CHECK_JSON(body, "{'generateContentRequest':{'model':'models/gemini-2.5-flash',"
                     "'systemInstruction':{'parts':[{'text':'Be brief.'}]},"
                     "'contents':[{'role':'user','parts':[{'text':'Hi'}]}],"
                     "'tools':[{'functionDeclarations':[{'name':'f','parametersJsonSchema':{'type':'object'}}]}],"
                     "'toolConfig':{'functionCallingConfig':{'mode':'ANY'}},"
                     "'generationConfig':{'temperature':0.5}}}");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);
    /* A resource name is kept as given. */
    job = job_with("{'op':'count_tokens','input':[]}");
    json_object_set_new((json_t *)json_object_get(job, "route"), "upstream_model", json_string("tunedModels/t1"));
    memset(&req, 0, sizeof req);
    CHECK(sb_provider_gemini.build_count_request(job, &req, &err) == 0);
    CHECK_STR(req.url, "http://127.0.0.1:18080/v1beta/tunedModels/t1:countTokens");
    body = req.body ? json_loads(req.body, 0, NULL) : NULL;
    CHECK_JSON(body, "{'generateContentRequest':{'model':'tunedModels/t1','contents':[]}}");
    json_decref(body);
    sb_provider_request_clear(&req);
    json_decref(job);

    json_t *events = parse_count(200, "{'totalTokens':31,'promptTokensDetails':[{'modality':'TEXT','tokenCount':31}]}");
    CHECK_JSON(events, EVENTS(USAGE(31, 0, 0), COMPLETED("public-model")));
    json_decref(events);
    /* proto3 JSON leaves a zero count out. */
    events = parse_count(200, "{}");
    CHECK_JSON(events, EVENTS(USAGE(0, 0, 0), COMPLETED("public-model")));
    json_decref(events);
    events = parse_count(200, "{'totalTokens':'many'}");
    CHECK_JSON(events, EVENTS(ERROR(502, "upstream_error", "upstream returned a malformed countTokens response")));
    json_decref(events);
    events = parse_count(404, "{'error':{'code':404,'message':'models/x is not found','status':'NOT_FOUND'}}");
    CHECK_JSON(events, EVENTS(ERROR(404, "not_found", "models/x is not found")));
    json_decref(events);
}

/* Gemini's context-length error (400 INVALID_ARGUMENT "... exceeds the
 * maximum number of tokens ...") becomes the canonical one. */
static void test_context_length(void)
{
    CHECK_EVENTS(400,
                 "{'error':{'code':400,'message':'The input token count (1500000) exceeds the maximum number of "
                 "tokens allowed (1048576).','status':'INVALID_ARGUMENT'}}",
                 "[{'type':'error','status':400,'kind':'invalid_request','code':'context_length_exceeded',"
                 "'message':'context length exceeded: The input token count (1500000) exceeds the maximum number "
                 "of tokens allowed (1048576).'}]");
    /* Another INVALID_ARGUMENT is not. */
    CHECK_EVENTS(400, "{'error':{'code':400,'message':'Invalid value at contents','status':'INVALID_ARGUMENT'}}",
                 EVENTS(ERROR(400, "invalid_request", "Invalid value at contents")));
}

int main(void)
{
    sb_ptest = (sb_ptest_t){.provider = &sb_provider_gemini,
                            .route = route,
                            .single_quotes = true,
                            .upstream_body = Q,
                            .normalize_ids = normalize_ids};
    CHECK(sb_provider_lookup("gemini") == &sb_provider_gemini);
    CHECK(sb_provider_gemini.supports_n);
    test_request_basic();
    test_request_roles_and_parts();
    test_request_tools();
    test_request_function_calls();
    test_request_reasoning();
    test_request_format_and_n();
    test_response_text();
    test_response_thoughts_and_calls();
    test_signature_round_trip();
    test_response_finish_reasons();
    test_response_candidates();
    test_response_errors();
    test_stream();
    test_context_length();
    test_count();
    return sb_test_finish("provider_gemini");
}
