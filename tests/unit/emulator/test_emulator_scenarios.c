/*
 * Unit test of the upstream emulator's scenarios (PUT /_emu/scenarios/{model},
 * emu_scenarios.c): the emulator playing the model for a coding-agent client
 * whose prompts start with its own text. Through all four protocols (Chat
 * Completions, Responses, Messages, Gemini), streamed and not: a request that
 * offers a matching tool gets one call with exactly the scenario's arguments,
 * the tool result sent back gets after_result with {{result}} substituted, a
 * request without a matching tool gets the answer, and once the scenario is
 * deleted the usual echo comes back. Also the control endpoint (list, get,
 * delete, 400 on a bad regex or arguments), precedence over CALL lines,
 * tool_choice, the 200-byte cut of {{result}}, requests the real API refuses
 * (still refused), the decision for Responses custom tools, and "repeat"
 * (a model that calls again after each result, counted over the whole
 * conversation, in every protocol). The emulator
 * runs in-process (sb_emu_test.h).
 */
#include "sb_emu_test.h"

#include "emu_scenarios.h"

/* ---- requests -------------------------------------------------------------------------- */

/* Bodies are written with single quotes: ' becomes " and a backtick \" (as in test_emulator_protocols.c). */
static char *unquote(const char *sq)
{
    size_t n = strlen(sq);
    char *out = malloc(2 * n + 1), *o = out;
    for (const char *p = sq; *p; p++) {
        if (*p == '\'') {
            *o++ = '"';
        } else if (*p == '`') {
            *o++ = '\\';
            *o++ = '"';
        } else {
            *o++ = *p;
        }
    }
    *o = '\0';
    return out;
}

static struct resp send_sq(struct sb_emu *emu, const char *method, const char *path, const char *sq, const char *header)
{
    char *body = sq ? unquote(sq) : NULL;
    struct resp r = http(emu, method, path, body, header, NULL, 0);
    free(body);
    return r;
}

static struct resp put_scenario(struct sb_emu *emu, const char *model, const char *sq)
{
    char path[256];
    snprintf(path, sizeof path, "/_emu/scenarios/%s", model);
    return send_sq(emu, "PUT", path, sq, NULL);
}

enum proto { CHAT, RESPONSES, MESSAGES, GEMINI };
static const char *const proto_names[] = {"chat", "responses", "messages", "gemini"};

/* The model each protocol's requests name (Gemini: in the path). */
static const char *const models[] = {"scn-chat", "scn-responses", "scn-messages", "scn-gemini"};

/* One generation request of protocol p; body is the single-quoted request, without model and stream. */
static struct resp generate(struct sb_emu *emu, enum proto p, bool stream, const char *sq_fields)
{
    char sq[8192], path[256];
    const char *header = NULL;
    switch (p) {
    case CHAT:
        snprintf(path, sizeof path, "/v1/chat/completions");
        snprintf(sq, sizeof sq, "{'model':'%s',%s%s}", models[p],
                 stream ? "'stream':true,'stream_options':{'include_usage':true}," : "", sq_fields);
        break;
    case RESPONSES:
        snprintf(path, sizeof path, "/v1/responses");
        snprintf(sq, sizeof sq, "{'model':'%s','stream':%s,%s}", models[p], stream ? "true" : "false", sq_fields);
        break;
    case MESSAGES:
        snprintf(path, sizeof path, "/v1/messages");
        snprintf(sq, sizeof sq, "{'model':'%s','max_tokens':1000,'stream':%s,%s}", models[p], stream ? "true" : "false",
                 sq_fields);
        header = "anthropic-version: 2023-06-01";
        break;
    case GEMINI:
        snprintf(path, sizeof path, "/v1beta/models/%s:%s", models[p],
                 stream ? "streamGenerateContent?alt=sse" : "generateContent");
        snprintf(sq, sizeof sq, "{%s}", sq_fields);
        break;
    }
    return send_sq(emu, "POST", path, sq, header);
}

/* ---- what the model said, read back from any protocol's reply ---------------------------- */

struct said {
    long status;
    char text[1024];
    int ncalls;
    char name[128];
    char args[1024]; /* compact JSON (Messages input / Gemini args re-serialised) */
    char id[128];    /* the call id: call_..., toolu_...; "" where the protocol has none */
    char item[64];   /* Responses: the call item's type */
    char finish[64]; /* finish_reason / status / stop_reason / finishReason */
    char reasoning[512];
    long long out_tokens;
};

static void cat(char *dst, size_t cap, const char *s)
{
    if (s)
        strncat(dst, s, cap - strlen(dst) - 1);
}

static void set(char *dst, size_t cap, const char *s)
{
    snprintf(dst, cap, "%s", s ? s : "");
}

static void set_json(char *dst, size_t cap, const json_t *v)
{
    char *s = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
    set(dst, cap, s);
    free(s);
}

#define CAT(f, s) cat(out->f, sizeof out->f, s)
#define SET(f, s) set(out->f, sizeof out->f, s)

static void said_chat(json_t *j, struct said *out)
{
    json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
    json_t *msg = json_object_get(ch, "message");
    CAT(text, json_string_value(json_object_get(msg, "content")));
    CAT(reasoning, json_string_value(json_object_get(msg, "reasoning_content")));
    json_t *calls = json_object_get(msg, "tool_calls");
    out->ncalls = (int)json_array_size(calls);
    json_t *c = json_array_get(calls, 0);
    SET(name, json_string_value(json_object_get(json_object_get(c, "function"), "name")));
    SET(args, json_string_value(json_object_get(json_object_get(c, "function"), "arguments")));
    SET(id, json_string_value(json_object_get(c, "id")));
    SET(finish, json_string_value(json_object_get(ch, "finish_reason")));
    out->out_tokens = usage_of(j, "completion_tokens");
}

static void said_responses_item(json_t *item, struct said *out)
{
    const char *t = json_string_value(json_object_get(item, "type"));
    if (!t)
        return;
    if (!strcmp(t, "message")) {
        CAT(text, json_string_value(json_object_get(json_array_get(json_object_get(item, "content"), 0), "text")));
    } else if (!strcmp(t, "function_call") || !strcmp(t, "custom_tool_call")) {
        out->ncalls++;
        SET(item, t);
        SET(name, json_string_value(json_object_get(item, "name")));
        SET(args, json_string_value(json_object_get(item, t[0] == 'f' ? "arguments" : "input")));
        SET(id, json_string_value(json_object_get(item, "call_id")));
    } else if (!strcmp(t, "reasoning")) {
        CAT(reasoning, json_string_value(json_object_get(json_array_get(json_object_get(item, "content"), 0), "text")));
    }
}

static void said_responses(json_t *j, struct said *out)
{
    size_t i;
    json_t *item;
    json_array_foreach (json_object_get(j, "output"), i, item)
        said_responses_item(item, out);
    SET(finish, json_string_value(json_object_get(j, "status")));
    out->out_tokens = usage_of(j, "output_tokens");
}

static void said_messages(json_t *j, struct said *out)
{
    size_t i;
    json_t *b;
    json_array_foreach (json_object_get(j, "content"), i, b) {
        const char *t = json_string_value(json_object_get(b, "type"));
        if (t && !strcmp(t, "text")) {
            CAT(text, json_string_value(json_object_get(b, "text")));
        } else if (t && !strcmp(t, "tool_use")) {
            out->ncalls++;
            SET(name, json_string_value(json_object_get(b, "name")));
            set_json(out->args, sizeof out->args, json_object_get(b, "input"));
            SET(id, json_string_value(json_object_get(b, "id")));
        } else if (t && !strcmp(t, "thinking")) {
            CAT(reasoning, json_string_value(json_object_get(b, "thinking")));
        }
    }
    SET(finish, json_string_value(json_object_get(j, "stop_reason")));
    out->out_tokens = usage_of(j, "output_tokens");
}

/* One GenerateContentResponse (a whole reply or one streamed chunk). */
static void said_gemini(json_t *j, struct said *out)
{
    json_t *cand = json_array_get(json_object_get(j, "candidates"), 0);
    size_t i;
    json_t *p;
    json_array_foreach (json_object_get(json_object_get(cand, "content"), "parts"), i, p) {
        json_t *fc = json_object_get(p, "functionCall");
        if (fc) {
            out->ncalls++;
            SET(name, json_string_value(json_object_get(fc, "name")));
            set_json(out->args, sizeof out->args, json_object_get(fc, "args"));
            SET(id, json_string_value(json_object_get(fc, "id")));
        } else if (json_is_true(json_object_get(p, "thought"))) {
            CAT(reasoning, json_string_value(json_object_get(p, "text")));
        } else {
            CAT(text, json_string_value(json_object_get(p, "text")));
        }
    }
    if (json_is_string(json_object_get(cand, "finishReason")))
        SET(finish, json_string_value(json_object_get(cand, "finishReason")));
    json_t *um = json_object_get(j, "usageMetadata");
    if (json_is_integer(json_object_get(um, "candidatesTokenCount")))
        out->out_tokens = json_integer_value(json_object_get(um, "candidatesTokenCount"));
}

/* One streamed event (its data JSON and, where the protocol names events, its name). */
static void said_event(enum proto p, const char *name, json_t *d, struct said *out)
{
    if (p == CHAT) {
        json_t *ch = json_array_get(json_object_get(d, "choices"), 0);
        json_t *delta = json_object_get(ch, "delta");
        CAT(text, json_string_value(json_object_get(delta, "content")));
        CAT(reasoning, json_string_value(json_object_get(delta, "reasoning_content")));
        json_t *tc = json_array_get(json_object_get(delta, "tool_calls"), 0);
        if (json_is_string(json_object_get(tc, "id"))) {
            out->ncalls++;
            SET(id, json_string_value(json_object_get(tc, "id")));
            SET(name, json_string_value(json_object_get(json_object_get(tc, "function"), "name")));
        }
        CAT(args, json_string_value(json_object_get(json_object_get(tc, "function"), "arguments")));
        if (json_is_string(json_object_get(ch, "finish_reason")))
            SET(finish, json_string_value(json_object_get(ch, "finish_reason")));
        if (json_is_object(json_object_get(d, "usage")))
            out->out_tokens = usage_of(d, "completion_tokens");
    } else if (p == RESPONSES) {
        CHECK_STR(jstr(d, "type"), name);
        if (!strcmp(name, "response.output_text.delta")) {
            CAT(text, jstr(d, "delta"));
        } else if (!strcmp(name, "response.function_call_arguments.delta") ||
                   !strcmp(name, "response.custom_tool_call_input.delta")) {
            CAT(args, jstr(d, "delta"));
        } else if (!strcmp(name, "response.output_item.added")) {
            json_t *item = json_object_get(d, "item");
            const char *t = jstr(item, "type");
            if (t && (!strcmp(t, "function_call") || !strcmp(t, "custom_tool_call"))) {
                out->ncalls++;
                SET(item, t);
                SET(name, jstr(item, "name"));
                SET(id, jstr(item, "call_id"));
            }
        } else if (!strcmp(name, "response.reasoning_text.delta")) {
            CAT(reasoning, jstr(d, "delta"));
        } else if (!strcmp(name, "response.completed") || !strcmp(name, "response.incomplete")) {
            json_t *r = json_object_get(d, "response");
            SET(finish, jstr(r, "status"));
            out->out_tokens = usage_of(r, "output_tokens");
        }
    } else if (p == MESSAGES) {
        CHECK_STR(jstr(d, "type"), name);
        json_t *delta = json_object_get(d, "delta");
        if (!strcmp(name, "content_block_start")) {
            json_t *b = json_object_get(d, "content_block");
            if (!strcmp(jstr(b, "type"), "tool_use")) {
                out->ncalls++;
                SET(name, jstr(b, "name"));
                SET(id, jstr(b, "id"));
            }
        } else if (!strcmp(name, "content_block_delta")) {
            const char *t = jstr(delta, "type");
            if (!strcmp(t, "text_delta"))
                CAT(text, jstr(delta, "text"));
            else if (!strcmp(t, "input_json_delta"))
                CAT(args, jstr(delta, "partial_json"));
            else if (!strcmp(t, "thinking_delta"))
                CAT(reasoning, jstr(delta, "thinking"));
        } else if (!strcmp(name, "message_delta")) {
            SET(finish, jstr(delta, "stop_reason"));
            out->out_tokens = usage_of(d, "output_tokens");
        }
    } else {
        said_gemini(d, out);
    }
}

/* Reads an SSE body event by event (named or not; "\n\n" or "\r\n\r\n" apart). */
static void said_stream(enum proto p, char *body, struct said *out)
{
    char *cur = body;
    while (*cur) {
        char *end = strstr(cur, "\n\n"), *crlf = strstr(cur, "\r\n\r\n");
        size_t sep = 2;
        if (crlf && (!end || crlf < end)) {
            end = crlf;
            sep = 4;
        }
        if (!end)
            break;
        *end = '\0';
        char name[96] = "";
        json_t *data = NULL;
        for (char *line = strtok(cur, "\r\n"); line; line = strtok(NULL, "\r\n")) {
            if (!strncmp(line, "event: ", 7))
                snprintf(name, sizeof name, "%s", line + 7);
            else if (!strncmp(line, "data: ", 6) && strcmp(line + 6, "[DONE]"))
                data = json_loads(line + 6, 0, NULL);
        }
        if (data)
            said_event(p, name, data, out);
        json_decref(data);
        cur = end + sep;
    }
}

static struct said ask_model(struct sb_emu *emu, enum proto p, bool stream, const char *sq_fields)
{
    struct said out;
    memset(&out, 0, sizeof out);
    struct resp r = generate(emu, p, stream, sq_fields);
    out.status = r.status;
    if (r.status != 200) {
        fprintf(stderr, "  %s%s: %ld %s\n", proto_names[p], stream ? " (stream)" : "", r.status, r.body);
    } else if (stream) {
        CHECK(strstr(r.headers, "text/event-stream") != NULL);
        said_stream(p, r.body, &out);
    } else {
        json_t *j = json_loads(r.body, 0, NULL);
        CHECK(j != NULL);
        if (p == CHAT)
            said_chat(j, &out);
        else if (p == RESPONSES)
            said_responses(j, &out);
        else if (p == MESSAGES)
            said_messages(j, &out);
        else
            said_gemini(j, &out);
        json_decref(j);
    }
    resp_free(&r);
    return out;
}

/* ---- the requests a client would send ------------------------------------------------------- */

/* The scenario under test: a shell tool, the arguments a coding agent would get, a summary, a plain answer. */
#define SCENARIO                                                                                                       \
    "{'tool':'^(shell|exec_command)$','arguments':{'command':['bash','-lc','echo hi > f.txt'],'workdir':'/tmp'},"      \
    "'after_result':'Done: {{result}} ({{result}})','answer':'Plain answer here.'}"
#define ARGS "{\"command\":[\"bash\",\"-lc\",\"echo hi > f.txt\"],\"workdir\":\"/tmp\"}"

#define PARAMS "{'type':'object','properties':{'command':{'type':'array','items':{'type':'string'}}}}"
/* The user turn starts with the client's own text, as Codex and Claude Code do. */
#define PROMPT "<environment_context>cwd /tmp</environment_context> create f.txt"

/* Fields of a request offering other_tool then shell (with_shell), or other_tool alone. */
static void offer(enum proto p, bool with_shell, char *sq, size_t cap)
{
    switch (p) {
    case CHAT:
        snprintf(sq, cap,
                 "'messages':[{'role':'system','content':'sys'},{'role':'user','content':'" PROMPT "'}],"
                 "'tools':[{'type':'function','function':{'name':'other_tool','parameters':" PARAMS "}}%s]",
                 with_shell ? ",{'type':'function','function':{'name':'shell','parameters':" PARAMS "}}" : "");
        break;
    case RESPONSES:
        snprintf(sq, cap,
                 "'instructions':'sys','input':[{'role':'user','content':[{'type':'input_text','text':'" PROMPT
                 "'}]}],'tools':[{'type':'function','name':'other_tool','parameters':" PARAMS "}%s]",
                 with_shell ? ",{'type':'function','name':'shell','parameters':" PARAMS "}" : "");
        break;
    case MESSAGES:
        snprintf(sq, cap,
                 "'system':'sys','messages':[{'role':'user','content':[{'type':'text','text':'" PROMPT "'}]}],"
                 "'tools':[{'name':'other_tool','input_schema':" PARAMS "}%s]",
                 with_shell ? ",{'name':'shell','input_schema':" PARAMS "}" : "");
        break;
    case GEMINI:
        snprintf(sq, cap,
                 "'systemInstruction':{'parts':[{'text':'sys'}]},'contents':[{'role':'user','parts':[{'text':'" PROMPT
                 "'}]}],'tools':[{'functionDeclarations':[{'name':'other_tool','parametersJsonSchema':" PARAMS "}%s]}]",
                 with_shell ? ",{'name':'shell','parametersJsonSchema':" PARAMS "}" : "");
        break;
    }
}

/* Fields of the request that sends tool's result back (the call it answers named tool). */
static void send_result(enum proto p, const char *tool, const char *result, char *sq, size_t cap)
{
    switch (p) {
    case CHAT:
        snprintf(sq, cap,
                 "'messages':[{'role':'user','content':'" PROMPT "'},{'role':'assistant','content':null,"
                 "'tool_calls':[{'id':'call_1','type':'function','function':{'name':'%s','arguments':'{}'}}]},"
                 "{'role':'tool','tool_call_id':'call_1','content':'%s'}],"
                 "'tools':[{'type':'function','function':{'name':'%s','parameters':" PARAMS "}}]",
                 tool, result, tool);
        break;
    case RESPONSES:
        snprintf(sq, cap,
                 "'input':[{'role':'user','content':'" PROMPT "'},"
                 "{'type':'function_call','call_id':'call_1','name':'%s','arguments':'{}'},"
                 "{'type':'function_call_output','call_id':'call_1','output':'%s'}],"
                 "'tools':[{'type':'function','name':'%s','parameters':" PARAMS "}]",
                 tool, result, tool);
        break;
    case MESSAGES:
        /* Claude Code puts a <system-reminder> text block beside the tool_result. */
        snprintf(sq, cap,
                 "'messages':[{'role':'user','content':'" PROMPT "'},{'role':'assistant','content':[{'type':"
                 "'tool_use','id':'toolu_1','name':'%s','input':{}}]},{'role':'user','content':[{'type':"
                 "'tool_result','tool_use_id':'toolu_1','content':'%s'},{'type':'text','text':"
                 "'<system-reminder>keep going</system-reminder>'}]}],'tools':[{'name':'%s','input_schema':" PARAMS
                 "}]",
                 tool, result, tool);
        break;
    case GEMINI:
        snprintf(sq, cap,
                 "'contents':[{'role':'user','parts':[{'text':'" PROMPT "'}]},{'role':'model','parts':"
                 "[{'functionCall':{'name':'%s','args':{}}}]},{'role':'user','parts':[{'functionResponse':"
                 "{'name':'%s','response':{'output':'%s'}}}]}],'tools':[{'functionDeclarations':[{'name':'%s',"
                 "'parametersJsonSchema':" PARAMS "}]}]",
                 tool, tool, result, tool);
        break;
    }
}

/* Finish reasons per protocol: for a call, for text. */
static const char *const finish_call[] = {"tool_calls", "completed", "tool_use", "STOP"};
static const char *const finish_text[] = {"stop", "completed", "end_turn", "STOP"};

/* ---- the tests --------------------------------------------------------------------------- */

static void test_round_trip(struct sb_emu *emu, enum proto p, bool stream)
{
    char sq[4096];
    fprintf(stderr, "round trip: %s%s\n", proto_names[p], stream ? " (stream)" : "");
    struct resp r = put_scenario(emu, models[p], SCENARIO);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"ok\":true") != NULL);
    resp_free(&r);

    /* 1. A request offering the tool: one call of it with exactly the arguments. */
    offer(p, true, sq, sizeof sq);
    struct said s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.status, 200);
    CHECK_INT(s.ncalls, 1);
    CHECK_STR(s.name, "shell");
    CHECK_STR(s.args, ARGS);
    CHECK_STR(s.text, "");
    CHECK_STR(s.finish, finish_call[p]);
    if (p == CHAT || p == RESPONSES)
        CHECK(!strncmp(s.id, "call_", 5));
    if (p == RESPONSES)
        CHECK_STR(s.item, "function_call");
    if (p == MESSAGES)
        CHECK(!strncmp(s.id, "toolu_", 6));
    CHECK(s.out_tokens > 0);

    /* 2. Its result sent back: after_result with {{result}} (every one) replaced. */
    send_result(p, "shell", "created f.txt", sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.status, 200);
    CHECK_INT(s.ncalls, 0);
    CHECK_STR(s.text, "Done: created f.txt (created f.txt)");
    CHECK_STR(s.finish, finish_text[p]);
    CHECK_INT(s.out_tokens, 5); /* "Done:" "created" "f.txt" "(created" "f.txt)" */

    /* The result of a tool the scenario does not name, no matching tool offered: the answer. */
    send_result(p, "other_tool", "x", sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_STR(s.text, "Plain answer here.");

    /* 3. No matching tool offered: the answer, with the usual usage count (3 words). */
    offer(p, false, sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.status, 200);
    CHECK_INT(s.ncalls, 0);
    CHECK_STR(s.text, "Plain answer here.");
    CHECK_STR(s.finish, finish_text[p]);
    CHECK_INT(s.out_tokens, 3);

    /* Deleted: the usual behaviour (an echo; the tool result read back as usual). */
    char path[128];
    snprintf(path, sizeof path, "/_emu/scenarios/%s", models[p]);
    r = send_sq(emu, "DELETE", path, NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"removed\":1") != NULL);
    resp_free(&r);
    offer(p, true, sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.ncalls, 0);
    CHECK_STR(s.text, "You said: " PROMPT);
    send_result(p, "shell", "created f.txt", sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    if (p == CHAT || p == RESPONSES || (p == GEMINI))
        CHECK_STR(s.text, "Tool result: created f.txt");
}

/* Requests the real API refuses are refused with a scenario installed, in the protocol's own error. */
static void test_still_validated(struct sb_emu *emu)
{
    for (int p = CHAT; p <= GEMINI; p++) {
        struct resp r = put_scenario(emu, models[p], SCENARIO);
        CHECK_INT(r.status, 200);
        resp_free(&r);
    }
    char sq[4096];
    /* Chat: an unknown parameter. */
    offer(CHAT, true, sq, sizeof sq);
    char bad[4200];
    snprintf(bad, sizeof bad, "%s,'bogus_field':1", sq);
    struct resp r = generate(emu, CHAT, false, bad);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "bogus_field") != NULL);
    resp_free(&r);
    /* Responses: a function_call_output without its call. */
    r = generate(emu, RESPONSES, false,
                 "'input':[{'role':'user','content':'x'},{'type':'function_call_output','call_id':'call_9',"
                 "'output':'x'}],'tools':[{'type':'function','name':'shell','parameters':" PARAMS "}]");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "No tool call found for function call output with call_id call_9.") != NULL);
    resp_free(&r);
    /* Responses: a tool type the emulator's API does not take stays refused (the scenario adds no acceptance). */
    r = generate(emu, RESPONSES, false,
                 "'input':'x','tools':[{'type':'function','name':'shell','parameters':" PARAMS
                 "},{'type':'no_such_tool_type','name':'shell'}]");
    CHECK_INT(r.status, 400);
    resp_free(&r);
    /* Messages: a tool_result whose tool_use is not in the previous message. */
    r = generate(emu, MESSAGES, false,
                 "'messages':[{'role':'user','content':'x'},{'role':'assistant','content':'ok'},{'role':'user',"
                 "'content':[{'type':'tool_result','tool_use_id':'toolu_9','content':'x'}]}],'tools':[{'name':"
                 "'shell','input_schema':" PARAMS "}]");
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "invalid_request_error") != NULL);
    resp_free(&r);
    /* Gemini: an unknown field. */
    offer(GEMINI, true, sq, sizeof sq);
    snprintf(bad, sizeof bad, "%s,'bogusField':1", sq);
    r = generate(emu, GEMINI, false, bad);
    CHECK_INT(r.status, 400);
    CHECK(strstr(r.body, "INVALID_ARGUMENT") != NULL);
    resp_free(&r);
    /* Faults still apply: a route fault answers before the scenario is asked. */
    r = send_sq(emu, "PUT", "/_emu/faults/scn-chat", "{'directives':'status=503','count':1}", NULL);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    offer(CHAT, true, sq, sizeof sq);
    r = generate(emu, CHAT, false, sq);
    CHECK_INT(r.status, 503);
    resp_free(&r);
    r = send_sq(emu, "DELETE", "/_emu/scenarios", NULL, NULL);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.body, "\"removed\":4") != NULL);
    resp_free(&r);
}

static void test_control(struct sb_emu *emu)
{
    /* Bad regex, bad arguments, bad types, unknown fields, not JSON: 400 with the usual error JSON. */
    static const char *const bad[] = {"{'tool':'(shell'}",
                                      "{'tool':'shell','arguments':[1]}",
                                      "{'tool':'shell','arguments':'{}'}",
                                      "{'tool':5}",
                                      "{'answer':true}",
                                      "{'after_results':'x'}",
                                      "{'repeat':-1}",
                                      "{'repeat':'2'}",
                                      "{'repeat':1.5}",
                                      "{'repeat':10001}",
                                      "{'repeat':true}",
                                      "[1]",
                                      "not json",
                                      NULL};
    for (size_t i = 0; bad[i]; i++) {
        struct resp r = put_scenario(emu, "m1", bad[i]);
        CHECK_INT(r.status, 400);
        json_t *j = json_loads(r.body, 0, NULL);
        CHECK(json_is_string(json_object_get(j, "error")));
        json_decref(j);
        resp_free(&r);
    }
    struct resp r = put_scenario(emu, "m1", "{'tool':'(shell'}");
    CHECK(strstr(r.body, "POSIX extended regular expression") != NULL);
    resp_free(&r);
    /* Nothing was installed by the failures. */
    r = send_sq(emu, "GET", "/_emu/scenarios/m1", NULL, NULL);
    CHECK_INT(r.status, 404);
    resp_free(&r);

    /* Every field optional; GET shows what was installed; a PUT replaces. */
    r = put_scenario(emu, "m1", "{}");
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"ok\":true}");
    resp_free(&r);
    r = put_scenario(emu, "org%2Fm2", "{'tool':'^a','arguments':{'x':[1,2]},'answer':'hi'}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = send_sq(emu, "GET", "/_emu/scenarios/org/m2", NULL, NULL);
    CHECK_INT(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(j, "tool"), "^a");
    CHECK_STR(jstr(j, "answer"), "hi");
    CHECK(json_is_null(json_object_get(j, "after_result")));
    CHECK(json_is_null(json_object_get(j, "repeat")));
    CHECK_INT(json_array_size(json_object_get(json_object_get(j, "arguments"), "x")), 2);
    json_decref(j);
    resp_free(&r);
    r = put_scenario(emu, "org/m2", "{'after_result':'r','repeat':7}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = send_sq(emu, "GET", "/_emu/scenarios", NULL, NULL);
    j = json_loads(r.body, 0, NULL);
    json_t *list = json_object_get(j, "scenarios");
    CHECK_INT(json_object_size(list), 2);
    CHECK_STR(jstr(json_object_get(list, "org/m2"), "after_result"), "r");
    CHECK(json_is_null(json_object_get(json_object_get(list, "org/m2"), "tool")));
    CHECK_INT(json_integer_value(json_object_get(json_object_get(list, "org/m2"), "repeat")), 7);
    CHECK_INT(json_object_size(json_object_get(json_object_get(list, "m1"), "arguments")), 0);
    json_decref(j);
    resp_free(&r);
    r = send_sq(emu, "DELETE", "/_emu/scenarios/nope", NULL, NULL);
    CHECK(strstr(r.body, "\"removed\":0") != NULL);
    resp_free(&r);
    r = send_sq(emu, "POST", "/_emu/scenarios/m1", "{}", NULL);
    CHECK_INT(r.status, 405);
    resp_free(&r);
    r = send_sq(emu, "DELETE", "/_emu/scenarios", NULL, NULL);
    CHECK(strstr(r.body, "\"removed\":2") != NULL);
    resp_free(&r);
    r = send_sq(emu, "GET", "/_emu/scenarios", NULL, NULL);
    CHECK_STR(r.body, "{\"scenarios\":{}}");
    resp_free(&r);
}

/* Chat details: precedence over CALL lines, the first matching tool, tool_choice, the {{result}} cut, reasoning. */
static void test_rules(struct sb_emu *emu)
{
    struct resp r = put_scenario(emu, "scn-chat",
                                 "{'tool':'^shell','arguments':{'a':1},'after_result':"
                                 "'<{{result}}>','answer':'fine'}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    static const char *tools = "'tools':[{'type':'function','function':{'name':'other_tool'}},"
                               "{'type':'function','function':{'name':'shell_b'}},"
                               "{'type':'function','function':{'name':'shell'}}]";
    char sq[2048];
    /* A CALL line gives way to the scenario; several matching tools: the first offered. */
    snprintf(sq, sizeof sq, "'messages':[{'role':'user','content':'CALL other_tool {}'}],%s", tools);
    struct said s = ask_model(emu, CHAT, false, sq);
    CHECK_INT(s.ncalls, 1);
    CHECK_STR(s.name, "shell_b");
    CHECK_STR(s.args, "{\"a\":1}");
    /* tool_choice none: no call, the answer. */
    snprintf(sq, sizeof sq, "'messages':[{'role':'user','content':'x'}],%s,'tool_choice':'none'", tools);
    s = ask_model(emu, CHAT, false, sq);
    CHECK_INT(s.ncalls, 0);
    CHECK_STR(s.text, "fine");
    /* A forced function the scenario names is called with the scenario's arguments... */
    snprintf(sq, sizeof sq,
             "'messages':[{'role':'user','content':'x'}],%s,'tool_choice':{'type':'function','function':"
             "{'name':'shell'}}",
             tools);
    s = ask_model(emu, CHAT, false, sq);
    CHECK_STR(s.name, "shell");
    CHECK_STR(s.args, "{\"a\":1}");
    /* ...one it does not name is called as usual (never text instead of a forced call). */
    snprintf(sq, sizeof sq,
             "'messages':[{'role':'user','content':'x'}],%s,'tool_choice':{'type':'function','function':"
             "{'name':'other_tool'}}",
             tools);
    s = ask_model(emu, CHAT, false, sq);
    CHECK_INT(s.ncalls, 1);
    CHECK_STR(s.name, "other_tool");
    /* Reasoning, when asked, is there as for any answer. */
    s = ask_model(emu, CHAT, false, "'messages':[{'role':'user','content':'x'}],'reasoning_effort':'low'");
    CHECK_STR(s.text, "fine");
    CHECK_STR(s.reasoning, "Reasoning (low) about: x");

    /* {{result}} gets at most 200 bytes of the result, never half a UTF-8 sequence. */
    char result[400], want[400];
    memset(result, 'a', 199);
    memcpy(result + 199, "\xc3\xa9zzz", 6); /* "é" at bytes 199-200 */
    snprintf(sq, sizeof sq,
             "'messages':[{'role':'user','content':'x'},{'role':'assistant','content':null,'tool_calls':[{'id':"
             "'call_1','type':'function','function':{'name':'shell','arguments':'{}'}}]},{'role':'tool',"
             "'tool_call_id':'call_1','content':'%s'}],%s",
             result, tools);
    s = ask_model(emu, CHAT, false, sq);
    memset(want, 0, sizeof want);
    want[0] = '<';
    memset(want + 1, 'a', 199);
    want[200] = '>';
    CHECK_STR(s.text, want);
    memset(result, 'b', 250);
    result[250] = '\0';
    snprintf(sq, sizeof sq,
             "'messages':[{'role':'user','content':'x'},{'role':'assistant','content':null,'tool_calls':[{'id':"
             "'call_1','type':'function','function':{'name':'shell','arguments':'{}'}}]},{'role':'tool',"
             "'tool_call_id':'call_1','content':'%s'}],%s",
             result, tools);
    s = ask_model(emu, CHAT, true, sq);
    CHECK_INT(strlen(s.text), 202);
    /* Several trailing results: the one whose call names a matching tool. */
    snprintf(sq, sizeof sq,
             "'messages':[{'role':'user','content':'x'},{'role':'assistant','content':null,'tool_calls':["
             "{'id':'call_1','type':'function','function':{'name':'other_tool','arguments':'{}'}},"
             "{'id':'call_2','type':'function','function':{'name':'shell','arguments':'{}'}}]},"
             "{'role':'tool','tool_call_id':'call_1','content':'one'},{'role':'tool','tool_call_id':'call_2',"
             "'content':'two'}],%s",
             tools);
    s = ask_model(emu, CHAT, false, sq);
    CHECK_STR(s.text, "<two>");

    /* Without after_result, a matching result gets the usual answer; without answer, other requests too. */
    r = put_scenario(emu, "scn-chat", "{'tool':'^shell$'}");
    resp_free(&r);
    s = ask_model(emu, CHAT, false, sq);
    CHECK_STR(s.text, "Tool result: two");
    s = ask_model(emu, CHAT, false, "'messages':[{'role':'user','content':'hello'}]");
    CHECK_STR(s.text, "You said: hello");

    /* Responses: reasoning items and usage as for any answer. */
    r = put_scenario(emu, "scn-responses", "{'answer':'fine'}");
    resp_free(&r);
    s = ask_model(emu, RESPONSES, true, "'input':'hi','reasoning':{'effort':'low'}");
    CHECK_STR(s.text, "fine");
    CHECK_STR(s.reasoning, "Reasoning (low) about: hi");
    /* Another model is not affected. */
    struct resp other = http(emu, "POST", "/v1/responses", "{\"model\":\"other\",\"input\":\"hi\"}", NULL, NULL, 0);
    CHECK(strstr(other.body, "You said: hi") != NULL);
    resp_free(&other);
    r = send_sq(emu, "DELETE", "/_emu/scenarios", NULL, NULL);
    resp_free(&r);
}

/*
 * Responses custom (freeform) tools, decided directly: the request validator
 * is the real API's and is not this test's subject, so the decision is asked
 * of the table with the struct a Responses request reduces to.
 */
static void test_custom_tools(void)
{
    struct sb_emu_scenarios *t = sb_emu_scenarios_new();
    int status = 0;
    const char *body = "{\"tool\":\"^apply_patch$\",\"arguments\":{\"input\":\"*** Begin Patch\\n\"},"
                       "\"after_result\":\"patched: {{result}}\"}";
    json_t *out = sb_emu_scenarios_control(t, "PUT", "m", body, strlen(body), &status);
    CHECK_INT(status, 200);
    json_decref(out);
    struct sb_emu_fn fns[] = {{.name = "shell"}, {.name = "apply_patch", .custom = true}};
    struct sb_emu_ask ask = {.user_text = "", .fns = fns, .nfns = 2, .n = 1};
    char *text = NULL;
    struct sb_emu_tool_call call;
    CHECK_INT(sb_emu_scenarios_decide(t, "m", &ask, NULL, &text, &call), SB_EMU_SCENE_CALL);
    CHECK_STR(call.name, "apply_patch");
    CHECK(call.custom);
    CHECK_STR(call.arguments, "*** Begin Patch\n");
    free(call.name);
    free(call.arguments);
    /* Without arguments.input, the custom call's input is the JSON text of the arguments. */
    body = "{\"tool\":\"^apply_patch$\",\"arguments\":{\"path\":\"a\"}}";
    json_decref(sb_emu_scenarios_control(t, "PUT", "m", body, strlen(body), &status));
    CHECK_INT(sb_emu_scenarios_decide(t, "m", &ask, NULL, &text, &call), SB_EMU_SCENE_CALL);
    CHECK_STR(call.arguments, "{\"path\":\"a\"}");
    free(call.name);
    free(call.arguments);
    /* A custom tool is never what tool_choice forces: a forced function is called as usual. */
    ask.forced = "shell";
    CHECK_INT(sb_emu_scenarios_decide(t, "m", &ask, NULL, &text, &call), SB_EMU_SCENE_NONE);
    ask.forced = NULL;
    /* Its result (custom_tool_call_output) comes back under its name. */
    body = "{\"tool\":\"^apply_patch$\",\"after_result\":\"patched: {{result}}\"}";
    json_decref(sb_emu_scenarios_control(t, "PUT", "m", body, strlen(body), &status));
    char rtext[] = "Success. Updated a.txt";
    struct sb_emu_tool_result res = {.name = "apply_patch", .text = rtext};
    ask.results = &res;
    ask.nresults = 1;
    CHECK_INT(sb_emu_scenarios_decide(t, "m", &ask, NULL, &text, &call), SB_EMU_SCENE_TEXT);
    CHECK_STR(text, "patched: Success. Updated a.txt");
    free(text);
    /* No scenario for the model: nothing decided. */
    CHECK_INT(sb_emu_scenarios_decide(t, "other", &ask, NULL, &text, &call), SB_EMU_SCENE_NONE);
    sb_emu_scenarios_destroy(&t);
    CHECK(t == NULL);
}

/* ---- repeat --------------------------------------------------------------------------------- */

/* One past call and its result of protocol p, appended to the conversation in sq (i: the call's number). */
static void add_round(enum proto p, const char *tool, int i, char *sq, size_t cap)
{
    size_t n = strlen(sq);
    switch (p) {
    case CHAT:
        snprintf(sq + n, cap - n,
                 ",{'role':'assistant','content':null,'tool_calls':[{'id':'call_%d','type':'function','function':"
                 "{'name':'%s','arguments':'{}'}}]},{'role':'tool','tool_call_id':'call_%d','content':'r%d'}",
                 i, tool, i, i);
        break;
    case RESPONSES:
        snprintf(sq + n, cap - n,
                 ",{'type':'function_call','call_id':'call_%d','name':'%s','arguments':'{}'},"
                 "{'type':'function_call_output','call_id':'call_%d','output':'r%d'}",
                 i, tool, i, i);
        break;
    case MESSAGES:
        snprintf(sq + n, cap - n,
                 ",{'role':'assistant','content':[{'type':'tool_use','id':'toolu_%d','name':'%s','input':{}}]},"
                 "{'role':'user','content':[{'type':'tool_result','tool_use_id':'toolu_%d','content':'r%d'}]}",
                 i, tool, i, i);
        break;
    case GEMINI:
        snprintf(sq + n, cap - n,
                 ",{'role':'model','parts':[{'functionCall':{'name':'%s','args':{}}}]},"
                 "{'role':'user','parts':[{'functionResponse':{'name':'%s','response':{'output':'r%d'}}}]}",
                 tool, tool, i);
        break;
    }
}

/* A conversation of `others` other_tool rounds then `shells` shell rounds, offering both tools (or
 * other_tool and helper_tool when !offer_shell). */
static void history(enum proto p, int others, int shells, bool offer_shell, char *sq, size_t cap)
{
    static const char *const open[] = {"'messages':[{'role':'user','content':'" PROMPT "'}",
                                       "'input':[{'role':'user','content':'" PROMPT "'}",
                                       "'messages':[{'role':'user','content':'" PROMPT "'}",
                                       "'contents':[{'role':'user','parts':[{'text':'" PROMPT "'}]}"};
    snprintf(sq, cap, "%s", open[p]);
    for (int i = 1; i <= others; i++)
        add_round(p, "other_tool", i, sq, cap);
    for (int i = 1; i <= shells; i++)
        add_round(p, "shell", others + i, sq, cap);
    size_t n = strlen(sq);
    const char *shell = offer_shell ? "shell" : "helper_tool";
    switch (p) {
    case CHAT:
        snprintf(sq + n, cap - n,
                 "],'tools':[{'type':'function','function':{'name':'other_tool'}},"
                 "{'type':'function','function':{'name':'%s'}}]",
                 shell);
        break;
    case RESPONSES:
        snprintf(sq + n, cap - n,
                 "],'tools':[{'type':'function','name':'other_tool','parameters':" PARAMS
                 "},{'type':'function','name':'%s','parameters':" PARAMS "}]",
                 shell);
        break;
    case MESSAGES:
        snprintf(sq + n, cap - n,
                 "],'tools':[{'name':'other_tool','input_schema':" PARAMS "},{'name':'%s','input_schema':" PARAMS "}]",
                 shell);
        break;
    case GEMINI:
        snprintf(sq + n, cap - n,
                 "],'tools':[{'functionDeclarations':[{'name':'other_tool','parametersJsonSchema':" PARAMS
                 "},{'name':'%s','parametersJsonSchema':" PARAMS "}]}]",
                 shell);
        break;
    }
}

/* repeat 2: the model calls shell after its first and second results, then says after_result; other
 * tools' results do not count; no shell offered, no call. */
static void test_repeat(struct sb_emu *emu, enum proto p, bool stream)
{
    fprintf(stderr, "repeat: %s%s\n", proto_names[p], stream ? " (stream)" : "");
    struct resp r = put_scenario(emu, models[p],
                                 "{'tool':'^shell$','arguments':{'n':1},'after_result':'finished after {{result}}',"
                                 "'repeat':2}");
    CHECK_INT(r.status, 200);
    resp_free(&r);
    char sq[8192];
    /* No result yet: the first call (rule 2, as without repeat). */
    history(p, 0, 0, true, sq, sizeof sq);
    struct said s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.ncalls, 1);
    CHECK_STR(s.name, "shell");
    CHECK_STR(s.args, "{\"n\":1}");
    for (int k = 1; k <= 3; k++) {
        history(p, 0, k, true, sq, sizeof sq);
        s = ask_model(emu, p, stream, sq);
        CHECK_INT(s.status, 200);
        if (k <= 2) {
            /* At most 2 results so far: another call. */
            CHECK_INT(s.ncalls, 1);
            CHECK_STR(s.name, "shell");
            CHECK_STR(s.finish, finish_call[p]);
        } else {
            char want[64];
            snprintf(want, sizeof want, "finished after r%d", k);
            CHECK_INT(s.ncalls, 0);
            CHECK_STR(s.text, want);
            CHECK_STR(s.finish, finish_text[p]);
        }
    }
    /* Two results of another tool before one of shell: only shell's count (1 <= 2: a call). */
    history(p, 2, 1, true, sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.ncalls, 1);
    CHECK_STR(s.name, "shell");
    /* shell no longer offered: nothing to call again, so after_result. */
    history(p, 0, 1, false, sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.ncalls, 0);
    CHECK_STR(s.text, "finished after r1");
    /* repeat 0 is no repeat. */
    r = put_scenario(emu, models[p], "{'tool':'^shell$','after_result':'done {{result}}','repeat':0}");
    resp_free(&r);
    history(p, 0, 1, true, sq, sizeof sq);
    s = ask_model(emu, p, stream, sq);
    CHECK_INT(s.ncalls, 0);
    CHECK_STR(s.text, "done r1");
    r = send_sq(emu, "DELETE", "/_emu/scenarios", NULL, NULL);
    resp_free(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    test_control(s.open_emu);
    for (int p = CHAT; p <= GEMINI; p++) {
        test_round_trip(s.open_emu, (enum proto)p, false);
        test_round_trip(s.open_emu, (enum proto)p, true);
    }
    test_rules(s.open_emu);
    for (int p = CHAT; p <= GEMINI; p++) {
        test_repeat(s.open_emu, (enum proto)p, false);
        test_repeat(s.open_emu, (enum proto)p, true);
    }
    test_still_validated(s.open_emu);
    test_custom_tools();
    server_stop(&s);
    curl_global_cleanup();
    return sb_test_finish("emulator_scenarios");
}
