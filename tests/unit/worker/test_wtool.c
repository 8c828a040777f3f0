/*
 * test_wtool: the pure half of the worker's tool loop (wtool_plan.c,
 * wtool_cite.c; docs/tools.md): which built-in tools the gateway runs and
 * which stay with the upstream (route.capabilities "native"), the 400s of
 * a request the loop cannot serve, the reserved functions the model is
 * offered (allowed_tools, long and odd MCP tool names) and what a called
 * name means, require_approval, the input of earlier turns rewritten into
 * function calls and outputs (approvals answered in the input among them),
 * and url_citation annotations counted in code points.
 *
 * JSON in this file is written with single quotes (J() turns them into
 * double quotes), so no text below may need a real apostrophe.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sb_alloc.h"
#include "sb_job.h"
#include "sb_test.h"
#include "wtool.h"

/* JSON text with ' for ", parsed (a failure to parse fails the test). */
static json_t *J(const char *text)
{
    char *s = sb_xstrdup(text);
    for (char *c = s; *c; c++)
        if (*c == '\'')
            *c = '"';
    json_error_t e;
    json_t *v = json_loads(s, JSON_DECODE_ANY, &e);
    if (!v)
        fprintf(stderr, "test JSON does not parse: %s: %s\n", e.text, s);
    CHECK(v != NULL);
    free(s);
    return v;
}

/* A job with route.capabilities caps (JSON text or NULL) and request req. */
static json_t *job_of(const char *caps, const char *req)
{
    char *text = sb_xasprintf("{'request_id':'req_1','model':'m','account_id':1,"
                              "'route':{'provider':'openai-chat','capabilities':%s},'request':%s}",
                              caps ? caps : "{}", req);
    json_t *job = J(text);
    free(text);
    return job;
}

/* The plan of a job: rc of sb_tool_plan_new; *err is NULL unless it failed. */
static int plan_of(const json_t *job, sb_tool_plan_t **p, json_t **err)
{
    *err = NULL;
    int rc = sb_tool_plan_new(job, p, err);
    if (rc == 0)
        CHECK(*err == NULL);
    return rc;
}

/* Expects job to be refused with a 400 error event. */
static void check_400(const char *caps, const char *req)
{
    json_t *job = job_of(caps, req);
    sb_tool_plan_t *p = (sb_tool_plan_t *)1;
    json_t *err = NULL;
    CHECK_INT(sb_tool_plan_new(job, &p, &err), -EINVAL);
    CHECK(p == NULL);
    CHECK_STR(json_string_value(json_object_get(err, "type")), "error");
    CHECK_INT(json_integer_value(json_object_get(err, "status")), 400);
    CHECK(json_string_length(json_object_get(err, "message")) > 0);
    json_decref(err);
    json_decref(job);
}

static const char *str_at(const json_t *arr, size_t i, const char *field)
{
    return json_string_value(json_object_get(json_array_get(arr, i), field));
}

static void test_plan_none(void)
{
    const char *reqs[] = {
        "{'input':[]}",
        "{'input':[{'type':'message','role':'user','content':[{'type':'input_text','text':'hi'}]}],"
        "'tools':[{'type':'function','name':'f','parameters':{'type':'object'}}]}",
        /* client function calls are not the gateway's */
        "{'input':[{'type':'function_call','call_id':'c1','name':'f','arguments':'{}'},"
        "{'type':'function_call_output','call_id':'c1','output':'x'}],"
        "'tools':[{'type':'function','name':'f'}]}",
    };
    for (size_t i = 0; i < sizeof reqs / sizeof *reqs; i++) {
        json_t *job = job_of(NULL, reqs[i]);
        sb_tool_plan_t *p = (sb_tool_plan_t *)1;
        json_t *err;
        CHECK_INT(plan_of(job, &p, &err), 0);
        CHECK(p == NULL);
        json_decref(job);
    }
    /* every built-in native, and none of its items in the input: no plan */
    json_t *job =
        job_of("{'web_search':'native','mcp':'native'}",
               "{'input':[{'type':'web_search_call','id':'ws_1','status':'completed',"
               "'action':{'type':'search','query':'q'}}],"
               "'tools':[{'type':'web_search'},{'type':'mcp','server_label':'s','server_url':'https://m.test/'}]}");
    sb_tool_plan_t *p = (sb_tool_plan_t *)1;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p == NULL);
    json_decref(job);
}

static void test_plan_web_search(void)
{
    const char *types[] = {"web_search", "web_search_2025_08_26", "web_search_preview",
                           "web_search_preview_2025_03_11"};
    for (size_t i = 0; i < 4; i++) {
        char *req = sb_xasprintf("{'input':[],'tools':[{'type':'function','name':'f'},{'type':'%s'}]}", types[i]);
        /* absent capabilities, true, and anything but "native": the gateway runs it */
        const char *capss[] = {NULL, "{'web_search':true}", "{'mcp':'native'}"};
        for (size_t c = 0; c < 3; c++) {
            json_t *job = job_of(capss[c], req);
            sb_tool_plan_t *p = NULL;
            json_t *err;
            CHECK_INT(plan_of(job, &p, &err), 0);
            CHECK(p != NULL);
            if (p) {
                CHECK(p->web_search == json_array_get(json_object_get(sb_job_request(job), "tools"), 1));
                CHECK(p->pages);
                CHECK_INT(p->n_servers, 0);
                CHECK_INT(json_array_size(p->other_tools), 1);
                CHECK_STR(str_at(p->other_tools, 0, "name"), "f");
                CHECK(p->forced == NULL);
            }
            sb_tool_plan_destroy(&p);
            CHECK(p == NULL);
            json_decref(job);
        }
        /* native: it goes to the upstream among the other tools (an mcp
         * tool keeps a plan alive to look at) */
        char *req2 = sb_xasprintf("{'input':[],'tools':[{'type':'%s'},"
                                  "{'type':'mcp','server_label':'s','server_url':'https://m.test/mcp'}]}",
                                  types[i]);
        json_t *job = job_of("{'web_search':'native'}", req2);
        sb_tool_plan_t *p = NULL;
        json_t *err;
        CHECK_INT(plan_of(job, &p, &err), 0);
        CHECK(p != NULL);
        if (p) {
            CHECK(p->web_search == NULL);
            CHECK_INT(json_array_size(p->other_tools), 1);
            CHECK_STR(str_at(p->other_tools, 0, "type"), types[i]);
            CHECK_INT(p->n_servers, 1);
        }
        sb_tool_plan_destroy(&p);
        json_decref(job);
        free(req2);
        free(req);
    }

    /* external_web_access:false: no pages; true (or absent) offers them */
    json_t *job = job_of(NULL, "{'input':[],'tools':[{'type':'web_search','external_web_access':false}]}");
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p && p->web_search && !p->pages);
    sb_tool_plan_destroy(&p);
    json_decref(job);
    job = job_of(NULL, "{'input':[],'tools':[{'type':'web_search','external_web_access':true}]}");
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p && p->pages);
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void test_plan_mcp(void)
{
    const char *req = "{'input':[],'tools':[{'type':'mcp','server_label':'a','server_url':'https://a.test/mcp'},"
                      "{'type':'function','name':'f'},"
                      "{'type':'mcp','server_label':'b','server_url':'https://b.test/mcp'}]}";
    json_t *job = job_of(NULL, req);
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p != NULL);
    if (p) {
        const json_t *tools = json_object_get(json_object_get(job, "request"), "tools");
        CHECK_INT(p->n_servers, 2);
        CHECK_STR(p->servers[0].label, "a");
        CHECK_STR(p->servers[1].label, "b");
        CHECK(p->servers[0].tool == json_array_get(tools, 0));
        CHECK(p->servers[1].tool == json_array_get(tools, 2));
        CHECK(!p->servers[0].listed && p->servers[0].tools == NULL);
        CHECK(p->web_search == NULL);
        CHECK_INT(json_array_size(p->other_tools), 1);
        CHECK_INT(json_array_size(p->input), 0);
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* native: stays among the other tools */
    job = job_of("{'mcp':'native'}", "{'input':[],'tools':[{'type':'web_search'},"
                                     "{'type':'mcp','server_label':'a','server_url':'https://a.test/mcp'}]}");
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p != NULL);
    if (p) {
        CHECK_INT(p->n_servers, 0);
        CHECK(p->web_search != NULL);
        CHECK_INT(json_array_size(p->other_tools), 1);
        CHECK_STR(str_at(p->other_tools, 0, "type"), "mcp");
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);
    /* native and alone: no plan at all */
    job = job_of("{'mcp':'native'}",
                 "{'input':[],'tools':[{'type':'mcp','server_label':'a','server_url':'https://a.test/mcp'}]}");
    p = (sb_tool_plan_t *)1;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p == NULL);
    json_decref(job);
}

static void test_plan_errors(void)
{
    check_400(NULL, "{'input':[],'tools':[{'type':'function','name':'sb__x'}]}");
    /* reserved even beside nothing the gateway runs, and even when native */
    check_400("{'web_search':'native'}",
              "{'input':[],'tools':[{'type':'web_search'},{'type':'function','name':'sb__web_search'}]}");
    check_400(NULL, "{'input':[],'tools':[{'type':'mcp','server_label':'a'}]}");
    check_400(NULL, "{'input':[],'tools':[{'type':'mcp','server_label':'a','server_url':7}]}");
    check_400(NULL, "{'input':[],'tools':[{'type':'mcp','server_url':'https://a.test/'}]}");
    check_400(NULL, "{'input':[],'tools':[{'type':'mcp','server_label':'a','server_url':'https://a.test/'},"
                    "{'type':'web_search'},{'type':'mcp','server_label':'a','server_url':'https://b.test/'}]}");
    /* a function merely starting with "sb_" is the client's */
    json_t *job = job_of(NULL, "{'input':[],'tools':[{'type':'function','name':'sb_x'},{'type':'web_search'}]}");
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p != NULL);
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void test_plan_forced(void)
{
    struct {
        const char *choice;
        const char *forced; /* JSON text of p->forced, or NULL */
    } cases[] = {
        {"{'type':'web_search'}", "{'type':'function','name':'sb__web_search'}"},
        {"{'type':'web_search_preview'}", "{'type':'function','name':'sb__web_search'}"},
        {"{'type':'mcp','server_label':'a'}", "'required'"},
        {"'auto'", NULL},
        {"'required'", NULL},
        {"{'type':'function','name':'f'}", NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *req =
            sb_xasprintf("{'input':[],'tool_choice':%s,'tools':[{'type':'function','name':'f'},"
                         "{'type':'web_search'},{'type':'mcp','server_label':'a','server_url':'https://a.t/'}]}",
                         cases[i].choice);
        json_t *job = job_of(NULL, req);
        sb_tool_plan_t *p = NULL;
        json_t *err;
        CHECK_INT(plan_of(job, &p, &err), 0);
        CHECK(p != NULL);
        if (p && cases[i].forced) {
            json_t *want = J(cases[i].forced);
            CHECK(json_equal(p->forced, want));
            json_decref(want);
        } else if (p) {
            CHECK(p->forced == NULL);
        }
        sb_tool_plan_destroy(&p);
        json_decref(job);
        free(req);
    }
    /* forcing a web search the upstream runs is the upstream's business */
    json_t *job = job_of("{'web_search':'native'}",
                         "{'input':[],'tool_choice':{'type':'web_search'},'tools':[{'type':'web_search'},"
                         "{'type':'mcp','server_label':'a','server_url':'https://a.t/'}]}");
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p && p->forced == NULL);
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

/* A 55-character tool name: "sb__mcp0__" + it is 65, one over the limit. */
#define LONG55 "abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdefghijk"
/* 54 characters: exactly 64 in all. */
#define LONG54 "abcdefghij_abcdefghij_abcdefghij_abcdefghij_abcdefghij"

/* The listing of server 'srv' as an earlier turn's mcp_list_tools item. */
#define SRV_LIST                                                                                                       \
    "{'type':'mcp_list_tools','id':'mcpl_1','server_label':'srv','tools':["                                            \
    "{'name':'get_weather','description':'Weather now.','input_schema':{'type':'object','properties':"                 \
    "{'city':{'type':'string'}}},'annotations':{'readOnlyHint':true}},"                                                \
    "{'name':'" LONG55 "','input_schema':{'properties':{}}},"                                                          \
    "{'name':'odd.name'},"                                                                                             \
    "{'name':'" LONG54 "','annotations':{'readOnlyHint':false}},"                                                      \
    "{'name':'set-x','description':'Sets x.','input_schema':{'type':'object'}}],'error':null}"

/* The plan of a job with web search (pages per ext) and servers srv (listed
 * by SRV_LIST, allowed_tools `allowed` JSON or NULL) and other (not listed). */
static sb_tool_plan_t *offer_plan(json_t **job, const char *allowed, bool pages)
{
    char *req =
        sb_xasprintf("{'input':[" SRV_LIST "],'tools':[{'type':'function','name':'f','parameters':{'type':'object'}},"
                     "{'type':'web_search','external_web_access':%s},"
                     "{'type':'mcp','server_label':'srv','server_url':'https://srv.test/mcp'%s%s},"
                     "{'type':'mcp','server_label':'other','server_url':'https://other.test/mcp'}]}",
                     pages ? "true" : "false", allowed ? ",'allowed_tools':" : "", allowed ? allowed : "");
    *job = job_of(NULL, req);
    free(req);
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(*job, &p, &err), 0);
    CHECK(p != NULL);
    return p;
}

/* The names of an offer, joined by spaces. */
static char *names_of(const json_t *offer)
{
    char *s = sb_xstrdup("");
    size_t i;
    const json_t *t;
    json_array_foreach (offer, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        char *next = sb_xasprintf("%s%s%s", s, i ? " " : "", n ? n : "?");
        free(s);
        s = next;
    }
    return s;
}

static const json_t *offered(const json_t *offer, const char *name)
{
    size_t i;
    const json_t *t;
    json_array_foreach (offer, i, t)
        if (json_is_string(json_object_get(t, "name")) && !strcmp(json_string_value(json_object_get(t, "name")), name))
            return t;
    return NULL;
}

static void test_offer(void)
{
    json_t *job;
    sb_tool_plan_t *p = offer_plan(&job, NULL, true);
    if (!p) {
        json_decref(job);
        return;
    }
    CHECK(p->servers[0].listed);
    CHECK_INT(json_array_size(p->servers[0].tools), 5);
    CHECK(!p->servers[1].listed && p->servers[1].tools == NULL);
    CHECK_INT(json_array_size(p->input), 0); /* a listing is no turn of the model's */

    json_t *offer = sb_tool_plan_offer(p, false);
    CHECK(json_equal(offer, p->other_tools));
    CHECK(offer != p->other_tools);
    json_decref(offer);

    offer = sb_tool_plan_offer(p, true);
    char *names = names_of(offer);
    CHECK_STR(names, "f sb__web_search sb__open_page sb__find_in_page sb__mcp0__get_weather sb__mcp0_1 sb__mcp0_2 "
                     "sb__mcp0__" LONG54 " sb__mcp0__set-x");
    free(names);
    size_t i;
    const json_t *t;
    json_array_foreach (offer, i, t) {
        const char *n = json_string_value(json_object_get(t, "name"));
        CHECK(strlen(n) <= SB_TOOL_NAME_MAX);
        CHECK_STR(json_string_value(json_object_get(t, "type")), "function");
        CHECK(json_is_object(json_object_get(t, "parameters")));
        CHECK_STR(json_string_value(json_object_get(json_object_get(t, "parameters"), "type")), "object");
        /* what resolve says of every offered name */
        size_t k = 99;
        const char *tool = NULL;
        enum sb_tool_kind kind = sb_tool_plan_resolve(p, n, &k, &tool);
        if (i == 0) {
            CHECK_INT(kind, SB_TOOL_NONE);
        } else if (i == 1) {
            CHECK_INT(kind, SB_TOOL_WEB_SEARCH);
        } else if (i == 2) {
            CHECK_INT(kind, SB_TOOL_OPEN_PAGE);
        } else if (i == 3) {
            CHECK_INT(kind, SB_TOOL_FIND_IN_PAGE);
        } else {
            CHECK_INT(kind, SB_TOOL_MCP);
            CHECK_INT(k, 0);
            /* the tool's own name, borrowed from the server's list */
            CHECK(tool == json_string_value(json_object_get(json_array_get(p->servers[0].tools, i - 4), "name")));
            const char *d = json_string_value(json_object_get(t, "description"));
            CHECK(d && strstr(d, "'srv'") && strstr(d, "MCP server"));
            char fn[SB_TOOL_NAME_MAX + 1];
            sb_tool_mcp_name(p, 0, tool, fn, sizeof fn);
            CHECK_STR(fn, n);
        }
    }
    /* the server's schema and description go to the model */
    const json_t *w = offered(offer, "sb__mcp0__get_weather");
    CHECK(w && strstr(json_string_value(json_object_get(w, "description")), "Weather now.") ==
                   json_string_value(json_object_get(w, "description")));
    CHECK_STR(json_string_value(json_object_get(
                  json_object_get(json_object_get(json_object_get(w, "parameters"), "properties"), "city"), "type")),
              "string");
    /* a schema without a type gets "object", the server's list is untouched */
    const json_t *l = offered(offer, "sb__mcp0_1");
    CHECK(json_is_object(json_object_get(json_object_get(l, "parameters"), "properties")));
    CHECK(json_object_get(json_object_get(json_array_get(p->servers[0].tools, 1), "input_schema"), "type") == NULL);
    /* the web search's query argument */
    const json_t *ws = offered(offer, "sb__web_search");
    const json_t *req = json_object_get(json_object_get(ws, "parameters"), "required");
    CHECK_INT(json_array_size(req), 1);
    CHECK_STR(json_string_value(json_array_get(req, 0)), "query");
    json_decref(offer);

    /* names nobody was offered */
    const char *unknown[] = {"sb__nope",
                             "sb__mcp",
                             "sb__mcpx__get_weather",
                             "sb__mcp1__get_weather",
                             "sb__mcp2__x",
                             "sb__mcp0__",
                             "sb__mcp0__missing",
                             "sb__mcp0_99",
                             "sb__mcp0_5",
                             "get_weather",
                             "sb__mcp00__get_weather",
                             "sb__mcp0__odd.name",
                             "sb__web_search2",
                             "",
                             "sb__mcp18446744073709551616__x"};
    for (i = 0; i < sizeof unknown / sizeof *unknown; i++) {
        size_t k = 99;
        const char *tool = NULL;
        CHECK_INT(sb_tool_plan_resolve(p, unknown[i], &k, &tool), SB_TOOL_NONE);
        CHECK(tool == NULL);
    }
    size_t k;
    const char *tool = NULL;
    CHECK_INT(sb_tool_plan_resolve(p, NULL, &k, &tool), SB_TOOL_NONE);
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* without pages: the web search alone, and its pages are nobody's */
    p = offer_plan(&job, NULL, false);
    if (p) {
        offer = sb_tool_plan_offer(p, true);
        CHECK(offered(offer, "sb__web_search") != NULL);
        CHECK(offered(offer, "sb__open_page") == NULL);
        CHECK(offered(offer, "sb__find_in_page") == NULL);
        CHECK_INT(sb_tool_plan_resolve(p, "sb__open_page", &k, &tool), SB_TOOL_NONE);
        CHECK_INT(sb_tool_plan_resolve(p, "sb__find_in_page", &k, &tool), SB_TOOL_NONE);
        CHECK_INT(sb_tool_plan_resolve(p, "sb__web_search", &k, &tool), SB_TOOL_WEB_SEARCH);
        json_decref(offer);
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void check_allowed(const char *allowed, const char *want_names)
{
    json_t *job;
    sb_tool_plan_t *p = offer_plan(&job, allowed, false);
    if (!p) {
        json_decref(job);
        return;
    }
    json_t *offer = sb_tool_plan_offer(p, true);
    char *names = names_of(offer);
    CHECK_STR(names, want_names);
    free(names);
    /* a listed tool outside allowed_tools cannot be called */
    size_t k;
    const char *tool = NULL;
    enum sb_tool_kind kind = sb_tool_plan_resolve(p, "sb__mcp0__set-x", &k, &tool);
    CHECK_INT(kind, strstr(want_names, "set-x") ? SB_TOOL_MCP : SB_TOOL_NONE);
    /* sb_tool_allowed: the same filter on the list */
    json_t *al = sb_tool_allowed(p->servers[0].tool, p->servers[0].tools);
    CHECK(json_is_array(al));
    CHECK_INT(json_array_size(al) + 2, json_array_size(offer));
    json_decref(al);
    json_decref(offer);
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void test_allowed(void)
{
    check_allowed("['get_weather','set-x','not_listed']", "f sb__web_search sb__mcp0__get_weather sb__mcp0__set-x");
    check_allowed("{'tool_names':['odd.name']}", "f sb__web_search sb__mcp0_2");
    check_allowed("{'read_only':true}", "f sb__web_search sb__mcp0__get_weather");
    check_allowed("{'read_only':true,'tool_names':['set-x']}", "f sb__web_search");
    check_allowed("[]", "f sb__web_search");
    check_allowed("{}",
                  "f sb__web_search sb__mcp0__get_weather sb__mcp0_1 sb__mcp0_2 sb__mcp0__" LONG54 " sb__mcp0__set-x");
}

static void test_needs_approval(void)
{
    struct {
        const char *ra; /* require_approval JSON, or NULL for absent */
        bool a, b;      /* what tools a and b need */
    } cases[] = {
        {NULL, true, true},
        {"'never'", false, false},
        {"'always'", true, true},
        {"{'never':{'tool_names':['a']}}", false, true},
        {"{'always':{'tool_names':['a']}}", true, true},
        {"{'always':{'tool_names':['b']},'never':{'tool_names':['a','c']}}", false, true},
        {"{}", true, true},
        {"7", true, true},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *req =
            sb_xasprintf("{'input':[],'tools':[{'type':'mcp','server_label':'s','server_url':'https://s.t/'%s%s}]}",
                         cases[i].ra ? ",'require_approval':" : "", cases[i].ra ? cases[i].ra : "");
        json_t *job = job_of(NULL, req);
        sb_tool_plan_t *p = NULL;
        json_t *err;
        CHECK_INT(plan_of(job, &p, &err), 0);
        CHECK(p != NULL);
        if (p) {
            if (sb_tool_needs_approval(p, 0, "a") != cases[i].a || sb_tool_needs_approval(p, 0, "b") != cases[i].b)
                fprintf(stderr, "require_approval case %zu\n", i);
            CHECK(sb_tool_needs_approval(p, 0, "a") == cases[i].a);
            CHECK(sb_tool_needs_approval(p, 0, "b") == cases[i].b);
            CHECK(sb_tool_needs_approval(p, 1, "a")); /* no such server */
        }
        sb_tool_plan_destroy(&p);
        json_decref(job);
        free(req);
    }
}

/* The plan of a request with web search and server srv (listed by SRV_LIST
 * unless the input says otherwise), with `input` (items, JSON) and caps. */
static sb_tool_plan_t *rewrite_plan(json_t **job, const char *caps, const char *input)
{
    char *req = sb_xasprintf("{'input':[%s],'tools':[{'type':'web_search'},"
                             "{'type':'mcp','server_label':'srv','server_url':'https://srv.test/mcp'}]}",
                             input);
    *job = job_of(caps, req);
    free(req);
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(*job, &p, &err), 0);
    CHECK(p != NULL);
    return p;
}

/* Expects p->input to equal want (JSON text). */
static void check_input(const sb_tool_plan_t *p, const char *want)
{
    json_t *w = J(want);
    if (!json_equal(p->input, w)) {
        char *got = json_dumps(p->input, JSON_COMPACT);
        fprintf(stderr, "input rewritten as %s\n", got);
        free(got);
    }
    CHECK(json_equal(p->input, w));
    json_decref(w);
}

#define USER_MSG "{'type':'message','role':'user','content':[{'type':'input_text','text':'hi'}]}"

static void test_rewrite_web(void)
{
    json_t *job;
    sb_tool_plan_t *p = rewrite_plan(
        &job, NULL,
        USER_MSG ",{'type':'web_search_call','id':'ws_1','status':'completed','action':{'type':'search','query':'q 1',"
                 "'sources':[{'type':'url','url':'https://a.test/'}]},'sb_output':'[1] A\\nURL: https://a.test/'},"
                 "{'type':'web_search_call','id':'ws_2','status':'completed','action':{'type':'search','query':'q2',"
                 "'sources':[{'type':'url','url':'https://b.test/'}]}},"
                 "{'type':'web_search_call','id':'ws_3','status':'failed','action':{'type':'search','query':'q3'}},"
                 "{'type':'web_search_call','id':'ws_4','status':'completed','action':{'type':'open_page',"
                 "'url':'https://a.test/p'},'sb_output':'page text','thought_signature':'sig4'},"
                 "{'type':'web_search_call','id':'ws_5','status':'completed','action':{'type':'find_in_page',"
                 "'url':'https://a.test/p','pattern':'x'},'sb_output':'lines'},"
                 "{'type':'web_search_call','status':'completed','action':{'type':'search','query':'q6'},"
                 "'sb_output':'six'},"
                 "{'role':'assistant','content':'no type'}");
    if (p) {
        check_input(
            p,
            "[" USER_MSG ","
            "{'type':'function_call','call_id':'ws_1','name':'sb__web_search','arguments':'{\\'query\\':\\'q 1\\'}'},"
            "{'type':'function_call_output','call_id':'ws_1','output':'[1] A\\nURL: https://a.test/'},"
            "{'type':'function_call','call_id':'ws_2','name':'sb__web_search','arguments':'{\\'query\\':\\'q2\\'}'},"
            "{'type':'function_call_output','call_id':'ws_2','output':"
            "'Searched the web for \\'q2\\'. Sources: https://b.test/. The results themselves are not kept in this "
            "conversation.'},"
            "{'type':'function_call','call_id':'ws_3','name':'sb__web_search','arguments':'{\\'query\\':\\'q3\\'}'},"
            "{'type':'function_call_output','call_id':'ws_3','output':'Searched the web for \\'q3\\', which failed.'},"
            "{'type':'function_call','call_id':'ws_4','name':'sb__open_page',"
            "'arguments':'{\\'url\\':\\'https://a.test/p\\'}','thought_signature':'sig4'},"
            "{'type':'function_call_output','call_id':'ws_4','output':'page text'},"
            "{'type':'function_call','call_id':'ws_5','name':'sb__find_in_page',"
            "'arguments':'{\\'url\\':\\'https://a.test/p\\',\\'pattern\\':\\'x\\'}'},"
            "{'type':'function_call_output','call_id':'ws_5','output':'lines'},"
            "{'type':'function_call','call_id':'ws_replayed','name':'sb__web_search',"
            "'arguments':'{\\'query\\':\\'q6\\'}'},"
            "{'type':'function_call_output','call_id':'ws_replayed','output':'six'},"
            "{'role':'assistant','content':'no type'}]");
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* a chain replayed without its tools still reads as the model's calls */
    job = job_of(NULL, "{'input':[{'type':'web_search_call','id':'ws_1','status':'completed',"
                       "'action':{'type':'search','query':'q'},'sb_output':'r'}]}");
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p && !p->web_search && p->n_servers == 0);
    if (p)
        check_input(
            p, "[{'type':'function_call','call_id':'ws_1','name':'sb__web_search','arguments':'{\\'query\\':\\'q\\'}'},"
               "{'type':'function_call_output','call_id':'ws_1','output':'r'}]");
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void test_rewrite_mcp(void)
{
    json_t *job;
    sb_tool_plan_t *p = rewrite_plan(
        &job, NULL,
        SRV_LIST
        ","
        "{'type':'mcp_call','id':'mcp_1','server_label':'srv','name':'get_weather','arguments':'{\\'city\\':\\'Oslo\\'}"
        "',"
        "'output':'cold','error':null,'status':'completed','approval_request_id':null,'thought_signature':'sig'},"
        "{'type':'mcp_call','id':'mcp_2','server_label':'srv','name':'odd.name','arguments':'{}',"
        "'output':null,'error':'boom','status':'failed'},"
        "{'type':'mcp_call','id':'mcp_3','server_label':'gone','name':'t','output':'o'},"
        "{'type':'mcp_call','server_label':'gone','name':'bad name','arguments':'{}','output':null}");
    if (p) {
        check_input(p, "[{'type':'function_call','call_id':'mcp_1','name':'sb__mcp0__get_weather',"
                       "'arguments':'{\\'city\\':\\'Oslo\\'}','thought_signature':'sig'},"
                       "{'type':'function_call_output','call_id':'mcp_1','output':'cold'},"
                       "{'type':'function_call','call_id':'mcp_2','name':'sb__mcp0_2','arguments':'{}'},"
                       "{'type':'function_call_output','call_id':'mcp_2','output':'Error: boom'},"
                       "{'type':'function_call','call_id':'mcp_3','name':'sb__mcp__t','arguments':'{}'},"
                       "{'type':'function_call_output','call_id':'mcp_3','output':'o'},"
                       "{'type':'function_call','call_id':'mcp_replayed','name':'sb__mcp__tool','arguments':'{}'},"
                       "{'type':'function_call_output','call_id':'mcp_replayed','output':''}]");
        CHECK(p->servers[0].listed);
        CHECK_INT(p->n_approvals, 0);
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* an errored listing lists nothing (the server is listed again), nor
     * does one of another label or without tools */
    p = rewrite_plan(&job, NULL,
                     "{'type':'mcp_list_tools','id':'mcpl_1','server_label':'srv','tools':[{'name':'t'}],"
                     "'error':'connection refused'},"
                     "{'type':'mcp_list_tools','id':'mcpl_2','server_label':'nope','tools':[{'name':'t'}]},"
                     "{'type':'mcp_list_tools','id':'mcpl_3','server_label':'srv'}");
    if (p) {
        CHECK(!p->servers[0].listed);
        CHECK(p->servers[0].tools == NULL);
        CHECK_INT(json_array_size(p->input), 0);
        json_t *offer = sb_tool_plan_offer(p, true);
        char *names = names_of(offer);
        CHECK_STR(names, "sb__web_search sb__open_page sb__find_in_page");
        free(names);
        json_decref(offer);
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* the first good listing counts; the tools are the plan's own copy */
    p = rewrite_plan(&job, NULL,
                     "{'type':'mcp_list_tools','id':'mcpl_1','server_label':'srv','tools':[{'name':'first'}]},"
                     "{'type':'mcp_list_tools','id':'mcpl_2','server_label':'srv','tools':[{'name':'second'}]}");
    if (p) {
        CHECK(p->servers[0].listed);
        CHECK_INT(json_array_size(p->servers[0].tools), 1);
        CHECK_STR(str_at(p->servers[0].tools, 0, "name"), "first");
        const json_t *in = json_array_get(json_object_get(json_object_get(job, "request"), "input"), 0);
        CHECK(p->servers[0].tools != json_object_get(in, "tools"));
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

#define APPROVAL_REQ(id)                                                                                               \
    "{'type':'mcp_approval_request','id':'" id "','server_label':'srv','name':'get_weather',"                          \
    "'arguments':'{\\'city\\':\\'Oslo\\'}'}"

static void test_rewrite_approvals(void)
{
    json_t *job;
    /* approved: run before the first model call, its output filled in then */
    sb_tool_plan_t *p =
        rewrite_plan(&job, NULL,
                     USER_MSG "," SRV_LIST "," APPROVAL_REQ(
                         "mcpr_1") ","
                                   "{'type':'mcp_approval_response','approval_request_id':'mcpr_1','approve':true},"
                                   "{'type':'message','role':'user','content':[{'type':'input_text','text':'go'}]}");
    if (p) {
        CHECK_INT(json_array_size(p->input), 4);
        CHECK_INT(p->n_approvals, 1);
        if (p->n_approvals == 1) {
            const sb_tool_approval_t *a = &p->approvals[0];
            CHECK(a->approve);
            CHECK_INT(a->server, 0);
            CHECK_STR(json_string_value(json_object_get(a->request, "id")), "mcpr_1");
            CHECK_STR(json_string_value(json_object_get(a->request, "name")), "get_weather");
            const json_t *fc = json_array_get(p->input, 1);
            CHECK_STR(json_string_value(json_object_get(fc, "type")), "function_call");
            CHECK_STR(json_string_value(json_object_get(fc, "call_id")), "mcpr_1");
            CHECK_STR(json_string_value(json_object_get(fc, "name")), "sb__mcp0__get_weather");
            CHECK_STR(json_string_value(json_object_get(fc, "arguments")), "{\"city\":\"Oslo\"}");
            /* the placeholder is the very object in the input, right after its call */
            CHECK(a->output == json_array_get(p->input, 2));
            CHECK_STR(json_string_value(json_object_get(a->output, "type")), "function_call_output");
            CHECK_STR(json_string_value(json_object_get(a->output, "call_id")), "mcpr_1");
            CHECK_STR(json_string_value(json_object_get(a->output, "output")), "");
            json_object_set_new(a->output, "output", json_string("ran"));
            CHECK_STR(str_at(p->input, 2, "output"), "ran");
            CHECK_STR(str_at(p->input, 3, "type"), "message");
        }
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* denied (with and without a reason), unanswered, for a server this
     * request does not have, and already settled by its mcp_call */
    p = rewrite_plan(
        &job, NULL,
        SRV_LIST "," APPROVAL_REQ("mcpr_d") "," APPROVAL_REQ("mcpr_n") "," APPROVAL_REQ(
            "mcpr_u") ","
                      "{'type':'mcp_approval_request','id':'mcpr_g','server_label':'gone','name':'t','arguments':'{}'},"
                      "{'type':'mcp_approval_response','approval_request_id':'mcpr_g','approve':true},"
                      "{'type':'mcp_approval_response','approval_request_id':'mcpr_d','approve':false,'reason':'not "
                      "now'},"
                      "{'type':'mcp_approval_response','approval_request_id':'mcpr_n','approve':false,'reason':null}"
                      "," APPROVAL_REQ(
                          "mcpr_s") ","
                                    "{'type':'mcp_approval_response','approval_request_id':'mcpr_s','approve':true},"
                                    "{'type':'mcp_call','id':'mcp_s','server_label':'srv','name':'get_weather','"
                                    "arguments':'{}',"
                                    "'output':'done','approval_request_id':'mcpr_s'},"
                                    "{'type':'mcp_approval_request','server_label':'srv','name':'get_weather','"
                                    "arguments':'{}'}");
    if (p) {
        CHECK_INT(p->n_approvals, 0);
        check_input(
            p,
            "[{'type':'function_call','call_id':'mcpr_d','name':'sb__mcp0__get_weather','arguments':'{\\'city\\':\\'"
            "Oslo\\'}'},"
            "{'type':'function_call_output','call_id':'mcpr_d','output':'The user denied this tool call: not now.'},"
            "{'type':'function_call','call_id':'mcpr_n','name':'sb__mcp0__get_weather','arguments':'{\\'city\\':\\'"
            "Oslo\\'}'},"
            "{'type':'function_call_output','call_id':'mcpr_n','output':'The user denied this tool call.'},"
            "{'type':'function_call','call_id':'mcpr_u','name':'sb__mcp0__get_weather','arguments':'{\\'city\\':\\'"
            "Oslo\\'}'},"
            "{'type':'function_call_output','call_id':'mcpr_u','output':'The user has not approved this tool call.'},"
            "{'type':'function_call','call_id':'mcpr_g','name':'sb__mcp__t','arguments':'{}'},"
            "{'type':'function_call_output','call_id':'mcpr_g','output':"
            "'The tool could not be called: its MCP server is not among this request\\u0027s tools.'},"
            "{'type':'function_call','call_id':'mcp_s','name':'sb__mcp0__get_weather','arguments':'{}'},"
            "{'type':'function_call_output','call_id':'mcp_s','output':'done'}]");
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

/* A request replayed twice (a chain and the client's own copy) runs once:
 * one call, one output, one approval. */
static void test_rewrite_approval_twice(void)
{
    json_t *job;
    sb_tool_plan_t *p =
        rewrite_plan(&job, NULL,
                     SRV_LIST "," APPROVAL_REQ("mcpr_1") "," APPROVAL_REQ(
                         "mcpr_1") ","
                                   "{'type':'mcp_approval_response','approval_request_id':'mcpr_1','approve':true},"
                                   "{'type':'mcp_approval_response','approval_request_id':'mcpr_1','approve':false}");
    if (p) {
        CHECK_INT(p->n_approvals, 1);
        CHECK_INT(json_array_size(p->input), 2);
        CHECK(p->n_approvals == 1 && p->approvals[0].output == json_array_get(p->input, 1));
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

/* 40000 approval requests (what a client's body may hold), each answered
 * or settled: the rewrite looks answers up, it does not rescan the input
 * per request (which took minutes). What is checked is the result; time is
 * not asserted here (the standards: speed is a benchmark's), but a quadratic
 * rewrite makes this test run for minutes, which ctest's timeout ends. */
static void test_rewrite_linear(void)
{
    size_t n = 40000;
    json_t *input = json_array();
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "mcpr_%zu", i);
        json_array_append_new(input, json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "mcp_approval_request", "id", id,
                                               "server_label", "srv", "name", "t", "arguments", "{}"));
    }
    for (size_t i = 0; i < n; i++) {
        char id[32];
        snprintf(id, sizeof id, "mcpr_%zu", i);
        if (i % 2)
            json_array_append_new(input, json_pack("{s:s, s:s, s:b}", "type", "mcp_approval_response",
                                                   "approval_request_id", id, "approve", 0));
        else
            json_array_append_new(input,
                                  json_pack("{s:s, s:s, s:s, s:s, s:s}", "type", "mcp_call", "approval_request_id", id,
                                            "server_label", "srv", "name", "t", "output", "ok"));
    }
    json_t *job = job_of(NULL, "{'tools':[{'type':'mcp','server_label':'srv','server_url':'https://srv.test/mcp'}]}");
    json_object_set_new(json_object_get(job, "request"), "input", input);
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    /* the denied half as calls and outputs, the settled half as their mcp_calls */
    CHECK(p && json_array_size(p->input) == 2 * n);
    CHECK(p && p->n_approvals == 0);
    if (p) {
        CHECK_STR(str_at(p->input, 0, "call_id"), "mcpr_1");
        CHECK_STR(str_at(p->input, 1, "output"), "The user denied this tool call.");
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void test_rewrite_native(void)
{
    const char *items =
        USER_MSG "," SRV_LIST ",{'type':'mcp_call','id':'mcp_1','server_label':'srv','name':'get_weather',"
                 "'arguments':'{}','output':'x'}," APPROVAL_REQ(
                     "mcpr_1") ","
                               "{'type':'mcp_approval_response','approval_request_id':'mcpr_1','approve':true},"
                               "{'type':'web_search_call','id':'ws_1','status':'completed','action':{'type':'search','"
                               "query':'q'}}";
    json_t *job;
    /* mcp native: its items go to the upstream as they are; the web search is rewritten */
    sb_tool_plan_t *p = rewrite_plan(&job, "{'mcp':'native'}", items);
    if (p) {
        const json_t *in = json_object_get(json_object_get(job, "request"), "input");
        CHECK_INT(p->n_servers, 0);
        CHECK_INT(p->n_approvals, 0);
        CHECK_INT(json_array_size(p->input), 7);
        for (size_t i = 0; i < 5; i++)
            CHECK(json_equal(json_array_get(p->input, i), json_array_get(in, i)));
        CHECK_STR(str_at(p->input, 5, "name"), "sb__web_search");
        CHECK_STR(str_at(p->input, 6, "type"), "function_call_output");
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* web search native: the reverse */
    p = rewrite_plan(&job, "{'web_search':'native'}", items);
    if (p) {
        const json_t *in = json_object_get(json_object_get(job, "request"), "input");
        CHECK(p->web_search == NULL);
        CHECK_INT(p->n_approvals, 1);
        CHECK(json_equal(json_array_get(p->input, json_array_size(p->input) - 1), json_array_get(in, 5)));
        CHECK_STR(str_at(p->input, 1, "name"), "sb__mcp0__get_weather");
    }
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* both native beside a gateway-run nothing: no plan, the input untouched */
    char *req = sb_xasprintf("{'input':[%s],'tools':[{'type':'web_search'},"
                             "{'type':'mcp','server_label':'srv','server_url':'https://srv.test/mcp'}]}",
                             items);
    job = job_of("{'mcp':'native','web_search':'native'}", req);
    free(req);
    json_t *err;
    p = (sb_tool_plan_t *)1;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p == NULL);
    json_decref(job);
}

/* Citations of text for sources (JSON); checks them against want (JSON). */
static void check_cites(const char *text, const char *sources, const char *want)
{
    json_t *src = J(sources);
    json_t *got = sb_tool_citations(text, src);
    json_t *w = J(want);
    if (!json_equal(got, w)) {
        char *g = json_dumps(got, JSON_COMPACT);
        fprintf(stderr, "citations of \"%s\": %s\n", text, g);
        free(g);
    }
    CHECK(json_equal(got, w));
    json_decref(w);
    json_decref(got);
    json_decref(src);
}

#define SRC_Z "[{'type':'url','url':'https://a.test/z','title':'Zed'}]"

static void test_citations(void)
{
    check_cites("See [Z](https://a.test/z) now.", SRC_Z,
                "[{'type':'url_citation','start_index':4,'end_index':25,'url':'https://a.test/z','title':'Zed'}]");
    /* code points, not bytes: o-diaeresis is 2 bytes, the em dash 3 */
    check_cites("Zo\xc3\xab \xe2\x80\x94 see [Z](https://a.test/z)", SRC_Z,
                "[{'type':'url_citation','start_index':10,'end_index':31,'url':'https://a.test/z','title':'Zed'}]");
    /* a 4-byte character before a bare URL */
    check_cites("\xf0\x9f\x94\x8e https://a.test/z", SRC_Z,
                "[{'type':'url_citation','start_index':2,'end_index':18,'url':'https://a.test/z','title':'Zed'}]");
    /* a trailing slash on either side */
    check_cites("[Z](https://a.test/z/)", SRC_Z,
                "[{'type':'url_citation','start_index':0,'end_index':22,'url':'https://a.test/z','title':'Zed'}]");
    check_cites("[Z](https://a.test/z)", "[{'url':'https://a.test/z/','title':'Zed'}]",
                "[{'type':'url_citation','start_index':0,'end_index':21,'url':'https://a.test/z/','title':'Zed'}]");
    /* bare URLs: sentence punctuation after it is not the URL's */
    check_cites("Read https://a.test/z.", SRC_Z,
                "[{'type':'url_citation','start_index':5,'end_index':21,'url':'https://a.test/z','title':'Zed'}]");
    check_cites("Read https://a.test/z, https://a.test/z?!", SRC_Z,
                "[{'type':'url_citation','start_index':5,'end_index':21,'url':'https://a.test/z','title':'Zed'},"
                "{'type':'url_citation','start_index':23,'end_index':39,'url':'https://a.test/z','title':'Zed'}]");
    check_cites("<https://a.test/z>", SRC_Z,
                "[{'type':'url_citation','start_index':1,'end_index':17,'url':'https://a.test/z','title':'Zed'}]");
    /* not a source: nothing, and no citation of a source's prefix or extension */
    check_cites("See [Z](https://b.test/z).", SRC_Z, "[]");
    check_cites("See [Z](https://a.test/zz) and https://a.test/z/more and https://a.test", SRC_Z, "[]");
    check_cites("See [Z](https://a.test/z.).", SRC_Z, "[]");
    check_cites("See [Z](https://a.test/z x) [Z](https://a.test/z", SRC_Z, "[]");
    /* two citations, in order; a source without a title is titled by its URL */
    check_cites(
        "[A](https://a.test/a) and [B](http://b.test/b)",
        "[{'url':'http://b.test/b'},{'url':'https://a.test/a','title':'Aa'}]",
        "[{'type':'url_citation','start_index':0,'end_index':21,'url':'https://a.test/a','title':'Aa'},"
        "{'type':'url_citation','start_index':26,'end_index':46,'url':'http://b.test/b','title':'http://b.test/b'}]");
    /* a label cannot span lines or hold a bracket; the link after one still counts */
    check_cites("[a\n[Z](https://a.test/z)", SRC_Z,
                "[{'type':'url_citation','start_index':3,'end_index':24,'url':'https://a.test/z','title':'Zed'}]");
    /* parentheses: a URL keeps its balanced ones (Wikipedia's), a bare URL
     * in parentheses is cited without them, a link's own are not the URL's */
    check_cites(
        "[Foo](https://w.test/wiki/Foo_(bar)) and (https://w.test/wiki/Foo_(bar)).",
        "[{'url':'https://w.test/wiki/Foo_(bar)','title':'Foo'}]",
        "[{'type':'url_citation','start_index':0,'end_index':36,'url':'https://w.test/wiki/Foo_(bar)','title':'Foo'},"
        "{'type':'url_citation','start_index':42,'end_index':71,'url':'https://w.test/wiki/Foo_(bar)','title':'Foo'}]");
    check_cites("Blue (https://a.test/z). Or (see https://a.test/z)", SRC_Z,
                "[{'type':'url_citation','start_index':6,'end_index':22,'url':'https://a.test/z','title':'Zed'},"
                "{'type':'url_citation','start_index':33,'end_index':49,'url':'https://a.test/z','title':'Zed'}]");
    check_cites("[Z](https://a.test/z.) [Z](https://a.test/z(x)", SRC_Z, "[]");
    /* empty sources, no text, no sources */
    check_cites("See [Z](https://a.test/z).", "[]", "[]");
    check_cites("", SRC_Z, "[]");
    json_t *c = sb_tool_citations(NULL, NULL);
    CHECK(json_is_array(c) && json_array_size(c) == 0);
    json_decref(c);
    json_t *src = J(SRC_Z);
    c = sb_tool_citations(NULL, src);
    CHECK(json_is_array(c) && json_array_size(c) == 0);
    json_decref(c);
    c = sb_tool_citations("https://a.test/z", NULL);
    CHECK(json_is_array(c) && json_array_size(c) == 0);
    json_decref(c);
    json_decref(src);
}

/* Texts a model could write to stall the worker's loop (each used to take
 * time quadratic in its length): many citations, and many links left open
 * with no ')' after them. Half a megabyte each; the results are checked, and
 * a quadratic scan would run past ctest's timeout. */
static void test_citations_linear(void)
{
    size_t n = 512 * 1024;
    char *text = sb_xmalloc(n + 1);
    const char *pats[] = {"[Z](https://a.test/z) ", "[a](", "(https://a.test/z(", "[a](https://a.test/z("};
    json_t *src = J(SRC_Z);
    for (size_t k = 0; k < sizeof pats / sizeof *pats; k++) {
        size_t pl = strlen(pats[k]), l = 0;
        for (; l + pl <= n; l += pl)
            memcpy(text + l, pats[k], pl);
        text[l] = '\0';
        json_t *c = sb_tool_citations(text, src);
        if (k == 0) {
            CHECK_INT(json_array_size(c), l / pl);
            /* the last one still counted from the start */
            const json_t *last = json_array_get(c, json_array_size(c) - 1);
            CHECK_INT(json_integer_value(json_object_get(last, "start_index")), l - pl);
        } else {
            CHECK_INT(json_array_size(c), 0);
        }
        json_decref(c);
    }
    json_decref(src);
    free(text);
}

/* Server k's tools as if listed (the plan takes ownership). */
static void list_tools(sb_tool_plan_t *p, size_t k, const char *tools)
{
    json_decref(p->servers[k].tools);
    p->servers[k].tools = J(tools);
    p->servers[k].listed = true;
}

/* A name listed twice is offered once; {never:{read_only:true}} spares the
 * read-only tools approval; sb_tool_may_call follows allowed_tools on the
 * list when known, on the names otherwise. */
static void test_approval_read_only_and_may_call(void)
{
    json_t *job = job_of(NULL, "{'tools':[{'type':'mcp','server_label':'s','server_url':'https://s.test/mcp',"
                               "'require_approval':{'never':{'read_only':true}},'allowed_tools':['ro','rw','dup']}]}");
    sb_tool_plan_t *p = NULL;
    json_t *err;
    CHECK_INT(plan_of(job, &p, &err), 0);
    CHECK(p != NULL);
    if (!p) {
        json_decref(job);
        return;
    }
    /* Before the list is known: the names allowed_tools gives. */
    CHECK(sb_tool_may_call(p, 0, "rw"));
    CHECK(!sb_tool_may_call(p, 0, "other"));
    CHECK(!sb_tool_may_call(p, 1, "rw"));
    list_tools(p, 0,
               "[{'name':'ro','annotations':{'readOnlyHint':true}},{'name':'rw'},{'name':'dup'},{'name':'dup'},"
               "{'name':'other'}]");
    CHECK(!sb_tool_needs_approval(p, 0, "ro"));
    CHECK(sb_tool_needs_approval(p, 0, "rw"));
    CHECK(sb_tool_may_call(p, 0, "dup"));
    CHECK(!sb_tool_may_call(p, 0, "other"));
    json_t *allowed = sb_tool_allowed(p->servers[0].tool, p->servers[0].tools);
    CHECK_INT(json_array_size(allowed), 3);
    json_decref(allowed);
    json_t *offer = sb_tool_plan_offer(p, true);
    size_t dups = 0;
    for (size_t i = 0; i < json_array_size(offer); i++)
        dups += !strcmp(str_at(offer, i, "name"), "sb__mcp0__dup");
    CHECK_INT(dups, 1);
    json_decref(offer);
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

/* The code interpreter, file search and image generation (wtool_builtin.c). */
static void test_builtin_plan(void)
{
    sb_tool_plan_t *p = NULL;
    json_t *err = NULL;
    json_t *job = job_of(NULL, "{'input':[],'tools':[{'type':'code_interpreter','container':{'type':'auto'}},"
                               "{'type':'file_search','vector_store_ids':['vs_1']},{'type':'image_generation'},"
                               "{'type':'function','name':'f','parameters':{}}],"
                               "'tool_choice':{'type':'code_interpreter'}}");
    CHECK(plan_of(job, &p, &err) == 0 && p);
    CHECK(p->code_interpreter && p->file_search && p->image_generation);
    json_t *offer = sb_tool_plan_offer(p, true);
    CHECK(json_array_size(offer) == 4);
    CHECK_STR(json_string_value(json_object_get(json_array_get(offer, 1), "name")), SB_TOOL_PYTHON_FN);
    CHECK_STR(json_string_value(json_object_get(json_array_get(offer, 2), "name")), SB_TOOL_FILE_SEARCH_FN);
    CHECK_STR(json_string_value(json_object_get(json_array_get(offer, 3), "name")), SB_TOOL_IMAGE_FN);
    json_decref(offer);
    offer = sb_tool_plan_offer(p, false);
    CHECK(json_array_size(offer) == 1); /* the last allowed call: the client function only */
    json_decref(offer);
    size_t k = 0;
    const char *t = NULL;
    CHECK(sb_tool_plan_resolve(p, SB_TOOL_PYTHON_FN, &k, &t) == SB_TOOL_CODE);
    CHECK(sb_tool_plan_resolve(p, SB_TOOL_FILE_SEARCH_FN, &k, &t) == SB_TOOL_FILE_SEARCH);
    CHECK(sb_tool_plan_resolve(p, SB_TOOL_IMAGE_FN, &k, &t) == SB_TOOL_IMAGE);
    CHECK_STR(json_string_value(json_object_get(p->forced, "name")), SB_TOOL_PYTHON_FN);
    sb_tool_plan_destroy(&p);
    json_decref(job);

    /* "native": the upstream runs it, and the name means nothing here. */
    job = job_of("{'code_interpreter':'native'}", "{'input':[],'tools':[{'type':'code_interpreter'}]}");
    CHECK(plan_of(job, &p, &err) == 0 && p == NULL);
    json_decref(job);

    /* An earlier turn's items become calls and outputs; the newest image and
     * the containers are kept for this turn. */
    job = job_of(NULL, "{'tools':[{'type':'image_generation'}],'input':["
                       "{'type':'code_interpreter_call','id':'ci_1','code':'print(1)','container_id':'cntr_a',"
                       "'status':'completed','outputs':[{'type':'logs','logs':'1\\n'}]},"
                       "{'type':'file_search_call','id':'fs_1','queries':['q'],'status':'completed',"
                       "'sb_output':'kept text'},"
                       "{'type':'image_generation_call','id':'ig_1','status':'completed','result':'AAAA'},"
                       "{'type':'image_generation_call','id':'ig_2','status':'completed','result':'BBBB'}]}");
    CHECK(plan_of(job, &p, &err) == 0 && p);
    CHECK(json_array_size(p->input) == 8);
    json_t *fc = json_array_get(p->input, 0), *out = json_array_get(p->input, 1);
    CHECK_STR(json_string_value(json_object_get(fc, "name")), SB_TOOL_PYTHON_FN);
    CHECK_STR(json_string_value(json_object_get(fc, "arguments")), "{\"code\":\"print(1)\"}");
    CHECK_STR(json_string_value(json_object_get(out, "output")), "1\n");
    CHECK_STR(json_string_value(json_object_get(json_array_get(p->input, 3), "output")), "kept text");
    CHECK_STR(json_string_value(p->last_image), "BBBB");
    CHECK_STR(json_string_value(json_array_get(p->containers, 0)), "cntr_a");
    sb_tool_plan_destroy(&p);
    json_decref(job);
}

static void check_partial(const char *args, const char *want)
{
    char *got = sb_tool_code_partial(args, strlen(args));
    CHECK_STR(got, want);
    free(got);
}

static void test_code_partial(void)
{
    check_partial("", "");
    check_partial("{\"co", "");
    check_partial("{\"code\": \"pri", "pri");
    check_partial("{\"code\":\"a\\nb\\", "a\nb"); /* a cut escape waits */
    check_partial("{\"code\":\"x\\u00e9y\"}", "x\xc3\xa9y");
    check_partial("{\"code\":\"\\ud83d", ""); /* half a surrogate pair waits */
    check_partial("{\"code\":\"\\ud83d\\ude00!", "\xf0\x9f\x98\x80!");
    check_partial("{\"code\":\"\xc3", ""); /* a cut UTF-8 sequence waits */
    check_partial("{\"other\":\"code\",\"code\":\"z\"}", "z");
}

static void test_file_citations(void)
{
    json_t *files = J("[{'file_id':'file-1','filename':'a.txt'},{'file_id':'file-2','filename':'b.pdf'}]");
    json_t *c = sb_tool_file_citations("\xc3\xa9t\xc3\xa9 [a.txt]. See [b.pdf] and [c.md] or [a.txt](x).", files);
    CHECK(json_array_size(c) == 2);
    CHECK(json_integer_value(json_object_get(json_array_get(c, 0), "index")) == 4);
    CHECK_STR(json_string_value(json_object_get(json_array_get(c, 0), "file_id")), "file-1");
    CHECK(json_integer_value(json_object_get(json_array_get(c, 1), "index")) == 17);
    CHECK_STR(json_string_value(json_object_get(json_array_get(c, 1), "type")), "file_citation");
    json_decref(c);
    json_decref(files);
}

int main(void)
{
    test_plan_none();
    test_plan_web_search();
    test_plan_mcp();
    test_plan_errors();
    test_plan_forced();
    test_offer();
    test_allowed();
    test_needs_approval();
    test_rewrite_web();
    test_rewrite_mcp();
    test_rewrite_approvals();
    test_rewrite_approval_twice();
    test_rewrite_linear();
    test_rewrite_native();
    test_citations();
    test_citations_linear();
    test_approval_read_only_and_may_call();
    test_builtin_plan();
    test_code_partial();
    test_file_citations();
    return sb_test_finish("test_wtool");
}
