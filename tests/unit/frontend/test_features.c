/*
 * Unit tests for fe_features: which built-in tools a model may use and who
 * runs them (docs/tools.md): web_search (its four type names) and mcp are
 * the gateway's unless the model's capability says false or "native", and
 * gateway web search needs the deployment's default search backend (the
 * model record's tools_config); the other built-ins need their capability
 * true. A refused built-in is a 400 unless merely offered beside function
 * tools, where it is left out. And the job's tools_config.
 */
#include <stdlib.h>
#include <string.h>

#include "fe_features.h"
#include "sb_test.h"

static const fe_style_t style = {
    .name = "test", .format_param = "text.format", .effort_param = "reasoning.effort", .parts_param = "input"};

#define BACKEND "{'web_search':{'kind':'searxng','base_url':'http://127.0.0.1:9','credential_ref':null}}"
#define NO_BACKEND "{'web_search':null}"

/* JSON with ' for " (the tests' literals stay readable). */
static json_t *J(const char *text)
{
    char *s = strdup(text);
    for (char *p = s; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_error_t e;
    json_t *v = json_loads(s, 0, &e);
    if (!v)
        fprintf(stderr, "bad test JSON: %s: %s\n", s, e.text);
    free(s);
    return v;
}

/* A model record with these capabilities and tools_config (JSON texts). */
static json_t *model(const char *caps, const char *tools_config)
{
    json_t *m = J("{'id':'m1','provider':'openai-chat'}");
    json_object_set_new(m, "capabilities", J(caps));
    json_object_set_new(m, "tools_config", J(tools_config));
    return m;
}

/* Runs the check on a request with these tools (and tool_choice, or NULL);
 * returns its result, the error in *err, and the tools left in *left (the
 * types, comma-joined; static). */
static int check(const char *caps, const char *tools_config, const char *tools, const char *choice, fe_error_t *err,
                 const char **left)
{
    static char types[256];
    fe_request_t r;
    memset(&r, 0, sizeof r);
    r.style = &style;
    r.parsed.model_id = "m1";
    r.model = model(caps, tools_config);
    r.parsed.canonical = json_object();
    json_object_set_new(r.parsed.canonical, "tools", J(tools));
    if (choice)
        json_object_set_new(r.parsed.canonical, "tool_choice", J(choice));
    json_t *input = json_array();
    memset(err, 0, sizeof *err);
    int rc = fe_features_check(&r, input, err);
    types[0] = '\0';
    size_t i;
    json_t *t;
    json_array_foreach (json_object_get(r.parsed.canonical, "tools"), i, t) {
        const char *ty = json_string_value(json_object_get(t, "type"));
        size_t n = strlen(types);
        snprintf(types + n, sizeof types - n, "%s%s", n ? "," : "", ty ? ty : "?");
    }
    *left = types;
    json_decref(input);
    json_decref(r.parsed.canonical);
    json_decref(r.model);
    return rc;
}

static void expect_ok(const char *caps, const char *tc, const char *tools, const char *want_left, int line)
{
    fe_error_t err;
    const char *left;
    int rc = check(caps, tc, tools, NULL, &err, &left);
    CHECK_INT(rc, 0);
    CHECK_STR(left, want_left);
    if (rc != 0 || strcmp(left, want_left))
        fprintf(stderr, "  line %d: %s\n", line, rc ? err.message : left);
}

static void expect_refused(const char *caps, const char *tc, const char *tools, const char *choice, const char *what,
                           int line)
{
    fe_error_t err;
    const char *left;
    int rc = check(caps, tc, tools, choice, &err, &left);
    CHECK_INT(rc, -1);
    CHECK_INT(err.status, 400);
    CHECK_STR(err.code, "unsupported_parameter");
    CHECK_STR(err.param, "tools");
    CHECK(strstr(err.message, what) != NULL);
    if (rc != -1 || !strstr(err.message, what))
        fprintf(stderr, "  line %d: %s\n", line, err.message);
}

#define OK(caps, tc, tools, left) expect_ok((caps), (tc), (tools), (left), __LINE__)
#define REFUSED(caps, tc, tools, choice, what) expect_refused((caps), (tc), (tools), (choice), (what), __LINE__)
#define FN "{'type':'function','name':'f'}"

static void test_runner(void)
{
    static const char *const searches[] = {"web_search", "web_search_2025_08_26", "web_search_preview",
                                           "web_search_preview_2025_03_11"};
    for (size_t i = 0; i < 4; i++) {
        const char *ws = searches[i];
        CHECK(fe_features_builtin_tool(ws));
        CHECK(fe_features_web_search_tool(ws));
        json_t *m = model("{}", BACKEND);
        CHECK_INT(fe_features_tool_runner(m, ws), FE_TOOL_GATEWAY);
        json_decref(m);
        m = model("{'web_search':true}", BACKEND);
        CHECK_INT(fe_features_tool_runner(m, ws), FE_TOOL_GATEWAY);
        json_decref(m);
        m = model("{'web_search':'native'}", NO_BACKEND); /* the upstream searches: no backend needed */
        CHECK_INT(fe_features_tool_runner(m, ws), FE_TOOL_NATIVE);
        json_decref(m);
        m = model("{'web_search':false}", BACKEND);
        CHECK_INT(fe_features_tool_runner(m, ws), FE_TOOL_REFUSED);
        json_decref(m);
        m = model("{}", NO_BACKEND); /* nowhere to search: as false */
        CHECK_INT(fe_features_tool_runner(m, ws), FE_TOOL_REFUSED);
        json_decref(m);
        m = model("{}", "{'web_search':{'kind':'searxng'}}"); /* no base_url: not usable */
        CHECK_INT(fe_features_tool_runner(m, ws), FE_TOOL_REFUSED);
        json_decref(m);
    }
    CHECK(!fe_features_web_search_tool("web_search_20250305"));
    CHECK(!fe_features_web_search_tool(NULL));

    json_t *m = model("{}", NO_BACKEND);
    CHECK_INT(fe_features_tool_runner(m, "mcp"), FE_TOOL_GATEWAY); /* no backend needed */
    /* The data tools (issue 16): the worker's loop runs them by default. */
    CHECK_INT(fe_features_tool_runner(m, "file_search"), FE_TOOL_GATEWAY);
    CHECK_INT(fe_features_tool_runner(m, "code_interpreter"), FE_TOOL_GATEWAY);
    CHECK_INT(fe_features_tool_runner(m, "image_generation"), FE_TOOL_GATEWAY);
    CHECK_INT(fe_features_tool_runner(m, "function"), FE_TOOL_REFUSED); /* not a built-in */
    CHECK_INT(fe_features_tool_runner(m, "bogus"), FE_TOOL_REFUSED);
    CHECK_INT(fe_features_tool_runner(m, NULL), FE_TOOL_REFUSED);
    json_decref(m);
    m = model("{'mcp':'native','file_search':true,'code_interpreter':'native','image_generation':false}", NO_BACKEND);
    CHECK_INT(fe_features_tool_runner(m, "mcp"), FE_TOOL_NATIVE);
    CHECK_INT(fe_features_tool_runner(m, "file_search"), FE_TOOL_GATEWAY); /* true: the gateway, as absent */
    CHECK_INT(fe_features_tool_runner(m, "code_interpreter"), FE_TOOL_NATIVE);
    CHECK_INT(fe_features_tool_runner(m, "image_generation"), FE_TOOL_REFUSED);
    CHECK_INT(fe_features_tool_runner(m, "computer_use"), FE_TOOL_REFUSED);
    json_decref(m);
    m = model("{'mcp':false}", BACKEND);
    CHECK_INT(fe_features_tool_runner(m, "mcp"), FE_TOOL_REFUSED);
    json_decref(m);
    /* No capabilities at all (an old record): the gateway's defaults. */
    m = J("{'tools_config':" BACKEND "}");
    CHECK_INT(fe_features_tool_runner(m, "web_search"), FE_TOOL_GATEWAY);
    CHECK_INT(fe_features_tool_runner(m, "mcp"), FE_TOOL_GATEWAY);
    json_decref(m);
    m = J("{}");
    CHECK_INT(fe_features_tool_runner(m, "web_search"), FE_TOOL_REFUSED);
    json_decref(m);
}

static void test_check(void)
{
    /* Allowed for every model by default (the gateway runs them). */
    OK("{}", BACKEND, "[{'type':'web_search'},{'type':'mcp','server_label':'x'}]", "web_search,mcp");
    OK("{'tools':false}", BACKEND, "[{'type':'web_search_preview'}]", "web_search_preview");
    OK("{'web_search':'native'}", NO_BACKEND, "[{'type':'web_search'}]", "web_search");
    OK("{}", NO_BACKEND, "[{'type':'mcp','server_label':'x'}]", "mcp");
    OK("{'file_search':true}", NO_BACKEND, "[{'type':'file_search'}]", "file_search");
    OK("{'local_shell':'native'}", NO_BACKEND, "[{'type':'local_shell'}]", "local_shell");

    /* Refused alone or forced; left out when offered beside functions. */
    REFUSED("{'web_search':false}", BACKEND, "[{'type':'web_search'}]", NULL, "the built-in tool 'web_search'");
    REFUSED("{}", NO_BACKEND, "[{'type':'web_search_2025_08_26'}]", NULL, "the built-in tool 'web_search_2025_08_26'");
    REFUSED("{'mcp':false}", BACKEND, "[{'type':'mcp'}]", NULL, "the built-in tool 'mcp'");
    REFUSED("{'file_search':false}", BACKEND, "[{'type':'file_search'}]", NULL, "the built-in tool 'file_search'");
    OK("{}", BACKEND, "[{'type':'file_search'}]", "file_search");
    REFUSED("{}", NO_BACKEND, "[" FN ",{'type':'web_search'}]", "{'type':'web_search'}",
            "the built-in tool 'web_search'");
    OK("{}", NO_BACKEND, "[" FN ",{'type':'web_search'},{'type':'mcp'}]", "function,mcp");
    OK("{'web_search':false,'mcp':false}", BACKEND, "[{'type':'web_search'}," FN ",{'type':'mcp'}]", "function");
    OK("{}", BACKEND, "[" FN ",{'type':'code_interpreter'},{'type':'web_search'}]",
       "function,code_interpreter,web_search");
    OK("{'code_interpreter':false}", BACKEND, "[" FN ",{'type':'code_interpreter'},{'type':'web_search'}]",
       "function,web_search");
    /* A function tool still needs tools allowed. */
    REFUSED("{'tools':false}", BACKEND, "[" FN ",{'type':'web_search'}]", NULL, "tool calling");
}

static void test_tools_config(void)
{
    json_t *m = model("{}", "{'web_search':{'kind':'brave','base_url':'https://b','credential_ref':'SB_BRAVE'}}");
    json_t *tools = J("[{'type':'function','name':'f'},{'type':'web_search_preview'}]");
    json_t *tc = fe_features_tools_config(m, tools);
    char *s = tc ? json_dumps(tc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECK_STR(s, "{\"web_search\":{\"base_url\":\"https://b\",\"credential_ref\":\"SB_BRAVE\",\"kind\":\"brave\"}}");
    free(s);
    json_decref(tc);
    json_decref(tools);
    /* No gateway web search among the tools: none. */
    tools = J("[{'type':'mcp'},{'type':'function','name':'f'}]");
    CHECK(fe_features_tools_config(m, tools) == NULL);
    json_decref(tools);
    CHECK(fe_features_tools_config(m, NULL) == NULL);
    json_decref(m);
    /* Native web search: the upstream's own, no backend in the job. */
    m = model("{'web_search':'native'}", BACKEND);
    tools = J("[{'type':'web_search'}]");
    CHECK(fe_features_tools_config(m, tools) == NULL);
    json_decref(m);
    /* No credential_ref: null. */
    m = model("{}", BACKEND);
    tc = fe_features_tools_config(m, tools);
    s = tc ? json_dumps(tc, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    CHECK_STR(s, "{\"web_search\":{\"base_url\":\"http://127.0.0.1:9\",\"credential_ref\":null,\"kind\":\"searxng\"}}");
    free(s);
    json_decref(tc);
    json_decref(tools);
    json_decref(m);
}

int main(void)
{
    test_runner();
    test_check();
    test_tools_config();
    return sb_test_finish("features");
}
