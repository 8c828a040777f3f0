/*
 * Unit test of sb_job_check: each shape problem the four provider adapters
 * refused, with the message they gave (the same inputs their own unit tests
 * use), the first problem winning; and the shapes every adapter accepted
 * pass, unknown item and tool types included (those are each adapter's).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "sb_event.h"
#include "sb_job.h"
#include "sb_test.h"

/* A job whose request is `request` (JSON with single quotes for double). */
static json_t *job_with(const char *request)
{
    char buf[2048];
    size_t n = strlen(request);
    if (n >= sizeof buf)
        return NULL;
    for (size_t i = 0; i <= n; i++)
        buf[i] = request[i] == '\'' ? '"' : request[i];
    json_t *req = json_loads(buf, JSON_DECODE_ANY, NULL);
    CHECK(req != NULL);
    json_t *route = json_pack("{s:s, s:s, s:s}", "provider", "openai-chat", "base_url", "http://127.0.0.1:1/v1",
                              "upstream_model", "m");
    return sb_job_new("req_1", "m", 1, route, req);
}

static void check_refused(int line, const char *request, const char *message)
{
    json_t *job = job_with(request);
    json_t *err = (json_t *)1;
    int rc = sb_job_check(job, &err);
    if (rc != -EINVAL || !err) {
        fprintf(stderr, "%s:%d: job_check accepted %s\n", __FILE__, line, request);
        sb_test_failures++;
    } else {
        /* The very event an adapter's sb_provider_invalid makes. */
        json_t *want = sb_event_error(400, SB_ERR_INVALID_REQUEST, NULL, message);
        if (!json_equal(err, want)) {
            char *got = json_dumps(err, JSON_COMPACT | JSON_SORT_KEYS);
            fprintf(stderr, "%s:%d: %s: got %s, want message '%s'\n", __FILE__, line, request, got, message);
            free(got);
            sb_test_failures++;
        }
        json_decref(want);
    }
    sb_test_checks++;
    json_decref(err);
    json_decref(job);
}

static void check_ok(int line, const char *request)
{
    json_t *job = job_with(request);
    json_t *err = (json_t *)1;
    int rc = sb_job_check(job, &err);
    if (rc != 0 || err) {
        char *got = err ? json_dumps(err, JSON_COMPACT) : NULL;
        fprintf(stderr, "%s:%d: job_check refused %s: %s\n", __FILE__, line, request, got ? got : "(no event)");
        free(got);
        sb_test_failures++;
        json_decref(err);
    }
    sb_test_checks++;
    json_decref(job);
}

#define REFUSED(request, message) check_refused(__LINE__, request, message)
#define OK(request) check_ok(__LINE__, request)

static void test_refused(void)
{
    REFUSED("{'input':'hi'}", "request.input must be an array of items");
    REFUSED("{'input':{}}", "request.input must be an array of items");
    REFUSED("{'input':[{'role':'user'}]}", "input item 0 has no type");
    REFUSED("{'input':[{'type':'message','role':'user','content':[]},{'type':7}]}", "input item 1 has no type");
    REFUSED("{'input':['hi']}", "input item 0 has no type");
    REFUSED("{'input':[null]}", "input item 0 has no type");
    REFUSED("{'input':[{'type':'message','role':'tool','content':[]}]}", "input item 0 has an unsupported role");
    REFUSED("{'input':[{'type':'message','content':[]}]}", "input item 0 has an unsupported role");
    REFUSED("{'input':[{'type':'message','role':'User','content':[]}]}", "input item 0 has an unsupported role");
    REFUSED("{'input':[{'type':'function_call','name':'f'}]}", "function_call items need call_id and name");
    REFUSED("{'input':[{'type':'function_call','call_id':'c'}]}", "function_call items need call_id and name");
    REFUSED("{'input':[{'type':'function_call','call_id':1,'name':'f'}]}", "function_call items need call_id and name");
    REFUSED("{'input':[{'type':'function_call_output','output':'x'}]}", "function_call_output items need call_id");
    REFUSED("{'input':[],'tools':{}}", "request.tools must be an array");
    REFUSED("{'input':[],'tools':'f'}", "request.tools must be an array");
    REFUSED("{'input':[],'tools':[{'type':'function'}]}", "function tool 0 has no name");
    REFUSED("{'input':[],'tools':[{'type':'web_search'},{'type':'function','name':3}]}", "function tool 1 has no name");
    /* The first problem in the adapters' order: input before tools, item by item. */
    REFUSED("{'input':[{'type':'message','role':'x'},{'role':'user'}],'tools':{}}",
            "input item 0 has an unsupported role");
    REFUSED("{'input':'hi','tools':{}}", "request.input must be an array of items");

    /* No request, or one that is not an object. */
    json_t *err = NULL;
    json_t *job = json_pack("{s:s}", "model", "m");
    CHECK_INT(sb_job_check(job, &err), -EINVAL);
    CHECK_STR(json_string_value(json_object_get(err, "message")), "job has no request");
    json_decref(err);
    json_object_set_new(job, "request", json_string("hi"));
    CHECK_INT(sb_job_check(job, &err), -EINVAL);
    CHECK_STR(json_string_value(json_object_get(err, "message")), "job has no request");
    json_decref(err);
    json_decref(job);
    job = json_array();
    CHECK_INT(sb_job_check(job, &err), -EINVAL);
    json_decref(err);
    json_decref(job);
    CHECK_INT(sb_job_check(NULL, &err), -EINVAL);
    CHECK_INT(sb_event_type_of(err), SB_EV_ERROR);
    json_decref(err);
}

static void test_ok(void)
{
    OK("{}");
    OK("{'input':null,'tools':null}");
    OK("{'input':[],'tools':[]}");
    OK("{'instructions':'be brief','input':["
       "{'type':'message','role':'system','content':[{'type':'input_text','text':'s'}]},"
       "{'type':'message','role':'developer','content':[]},"
       "{'type':'message','role':'user','content':[{'type':'input_text','text':'hi'},"
       "{'type':'input_image','image_url':'data:image/png;base64,AAAA'}]},"
       "{'type':'message','role':'assistant','content':[{'type':'output_text','text':'x'}]},"
       "{'type':'reasoning','summary':[],'content':[{'type':'reasoning_text','text':'r'}]},"
       "{'type':'function_call','call_id':'c1','name':'f','arguments':'{}'},"
       "{'type':'function_call_output','call_id':'c1','output':'42'},"
       "{'type':'web_search_call','id':'ws_1','status':'completed'}],"
       "'tools':[{'type':'function','name':'f','parameters':{}},{'type':'web_search'},{'name':'no type'},7],"
       "'tool_choice':'auto','stream':true}");
    /* Content shapes, unknown parts and item types are the adapters' to judge. */
    OK("{'input':[{'type':'message','role':'user','content':'a string'}]}");
    OK("{'input':[{'type':'message','role':'user'}]}");
    OK("{'input':[{'type':'message','role':'user','content':[{'type':'video'}]}]}");
    OK("{'input':[{'type':'item_reference','id':'x'}]}");
    OK("{'op':'count_tokens','input':[]}");
}

int main(void)
{
    test_refused();
    test_ok();
    return sb_test_finish("test_job_check");
}
