/*
 * Unit test of the upstream emulator: libsbemulator runs in-process on an
 * ephemeral loopback port (its event loop on a helper thread, which alone
 * touches the event_base), and libcurl drives it over real HTTP. Covers the
 * OpenAI Chat Completions emulation: echo, validation, auth and limits,
 * directives, streaming, journal and aborts, structured output and schema
 * violations, reasoning, attachments, n, parameters, tool_choice, refusal.
 * The fault modes are test_emulator_faults.c; the shared harness is
 * sb_emu_test.h.
 * Responses are checked field by field (no JSON Schema validator here).
 */
#include "sb_emu_test.h"

/* ---- tests ------------------------------------------------------------------------- */

static void test_echo(struct sb_emu *emu)
{
    long st;
    json_t *j = chat(emu,
                     "{\"model\":\"gpt-x\",\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},"
                     "{\"role\":\"user\",\"content\":\"hello  world\"}]}",
                     &st);
    CHECK_INT(st, 200);
    CHECK(j != NULL);
    CHECK(!strncmp(jstr(j, "id") ? jstr(j, "id") : "", "chatcmpl-", 9));
    CHECK_STR(jstr(j, "object"), "chat.completion");
    CHECK_STR(jstr(j, "model"), "gpt-x");
    CHECK(json_is_integer(json_object_get(j, "created")));
    CHECK(json_is_null(json_object_get(j, "system_fingerprint")));
    json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_INT(json_integer_value(json_object_get(choice, "index")), 0);
    CHECK_STR(jstr(choice, "finish_reason"), "stop");
    CHECK(json_is_null(json_object_get(choice, "logprobs")));
    json_t *msg = first_message(j);
    CHECK_STR(jstr(msg, "role"), "assistant");
    CHECK_STR(jstr(msg, "content"), "You said: hello  world");
    CHECK(json_is_null(json_object_get(msg, "refusal")));
    json_t *u = json_object_get(j, "usage");
    CHECK_INT(json_integer_value(json_object_get(u, "prompt_tokens")), (4 + 2) + (4 + 2));
    CHECK_INT(json_integer_value(json_object_get(u, "completion_tokens")), 4);
    CHECK_INT(json_integer_value(json_object_get(u, "total_tokens")), 16);
    CHECK_INT(json_integer_value(json_object_get(json_object_get(u, "completion_tokens_details"), "reasoning_tokens")),
              0);
    json_decref(j);

    /* Text parts are joined by one space, attachments acknowledged after them; n gives n choices. */
    j = chat(emu,
             "{\"model\":\"m\",\"n\":3,\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"text\","
             "\"text\":\"a\"},{\"type\":\"image_url\",\"image_url\":{\"url\":\"https://example.com/c.png\"}},"
             "{\"type\":\"text\",\"text\":\"b\"}]}]}",
             &st);
    CHECK_INT(st, 200);
    CHECK_INT(json_array_size(json_object_get(j, "choices")), 3);
    CHECK_INT(json_integer_value(json_object_get(json_array_get(json_object_get(j, "choices"), 2), "index")), 2);
    CHECK_STR(jstr(first_message(j), "content"), "You said: a b [image: https://example.com/c.png]");
    json_decref(j);
}

static void test_validation(struct sb_emu *emu)
{
    long st;
    json_t *j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"robot\",\"content\":\"hi\"}]}", &st);
    CHECK_INT(st, 400);
    json_t *err = json_object_get(j, "error");
    CHECK_STR(jstr(err, "type"), "invalid_request_error");
    CHECK_STR(jstr(err, "param"), "messages[0].role");
    CHECK(jstr(err, "message") && strstr(jstr(err, "message"), "robot"));
    json_decref(j);

    static const char *const bad[] = {
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",                /* no model */
        "{\"model\":\"\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", /* empty model */
        "{\"model\":\"m\",\"messages\":[]}",                                     /* empty messages */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":5}]}",    /* content type */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\"}]}",                  /* no content */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"video\"}]}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\"}]}", /* no tool_call_id */
        "{\"model\":\"m\",\"messages\":[{\"role\":\"tool\",\"content\":\"x\",\"tool_call_id\":\"c\"}]}",
        "{\"model\":\"m\",\"bogus\":1,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"temperature\":3,\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}",
        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\",\"extra\":1}]}",
        "[1,2]",
        "{not json",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        j = chat(emu, bad[i], &st);
        CHECK_INT(st, 400);
        CHECK(json_is_object(json_object_get(j, "error")));
        if (st != 400)
            fprintf(stderr, "  case %zu: %s\n", i, bad[i]);
        json_decref(j);
    }

    /* Wrong content type. */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x\"}]}", NULL,
                         "Content-Type: text/plain", 0);
    CHECK_INT(r.status, 400);
    resp_free(&r);

    /* Assistant with tool_calls and null content, answered by a tool message. */
    j = chat(emu,
             "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"f\"}}],"
             "\"messages\":[{\"role\":\"user\",\"content\":\"CALL f {}\"},{\"role\":\"assistant\","
             "\"content\":null,\"tool_calls\":[{\"id\":\"call_1\",\"type\":\"function\",\"function\":{"
             "\"name\":\"f\",\"arguments\":\"{}\"}}]},{\"role\":\"tool\",\"tool_call_id\":\"call_1\","
             "\"content\":\"sunny\"}]}",
             &st);
    CHECK_INT(st, 200);
    CHECK_STR(jstr(first_message(j), "content"), "Tool result: sunny");
    json_decref(j);
}

static void test_auth_and_limits(struct sb_emu *keyed)
{
    const char *body = "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}";
    struct resp r = http(keyed, "POST", "/v1/chat/completions", body, NULL, NULL, 0);
    CHECK_INT(r.status, 401);
    CHECK_STR(r.body, "{\"error\":{\"message\":\"Incorrect API key provided\",\"type\":\"invalid_request_error\","
                      "\"param\":null,\"code\":\"invalid_api_key\"}}");
    resp_free(&r);
    r = http(keyed, "POST", "/v1/chat/completions", body, "Authorization: Bearer wrong", NULL, 0);
    CHECK_INT(r.status, 401);
    resp_free(&r);
    r = http(keyed, "POST", "/v1/chat/completions", body, "Authorization: Bearer " KEY, NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(keyed, "GET", "/v1/models", NULL, "Authorization: Bearer " KEY, NULL, 0);
    CHECK_INT(r.status, 200);
    json_t *j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(j, "object"), "list");
    CHECK(json_array_size(json_object_get(j, "data")) > 0);
    CHECK_STR(jstr(json_array_get(json_object_get(j, "data"), 0), "owned_by"), "emulator");
    json_decref(j);
    resp_free(&r);
    /* The control endpoints need no key. */
    r = http(keyed, "GET", "/_emu/health", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK_STR(r.body, "{\"ok\":true}");
    resp_free(&r);
    /* Body over the limit (4 KiB here). */
    char *big = malloc(8192);
    memset(big, 'a', 8191);
    big[8191] = '\0';
    memcpy(big, "{\"x\":\"", 6);
    r = http(keyed, "POST", "/v1/chat/completions", big, "Authorization: Bearer " KEY, NULL, 0);
    CHECK_INT(r.status, 413);
    resp_free(&r);
    free(big);
}

static void test_directives(struct sb_emu *emu)
{
    long st;
    /* CALL with the tool declared. */
    json_t *j = chat(emu,
                     "{\"model\":\"m\",\"tools\":[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\","
                     "\"parameters\":{\"type\":\"object\"}}}],\"messages\":[{\"role\":\"user\",\"content\":"
                     "\"CALL get_weather {\\\"city\\\":\\\"Paris\\\"}\"}]}",
                     &st);
    CHECK_INT(st, 200);
    json_t *choice = json_array_get(json_object_get(j, "choices"), 0);
    CHECK_STR(jstr(choice, "finish_reason"), "tool_calls");
    json_t *msg = json_object_get(choice, "message");
    CHECK(json_is_null(json_object_get(msg, "content")));
    json_t *tc = json_array_get(json_object_get(msg, "tool_calls"), 0);
    CHECK(!strncmp(jstr(tc, "id") ? jstr(tc, "id") : "", "call_", 5));
    CHECK_STR(jstr(tc, "type"), "function");
    CHECK_STR(jstr(json_object_get(tc, "function"), "name"), "get_weather");
    CHECK_STR(jstr(json_object_get(tc, "function"), "arguments"), "{\"city\":\"Paris\"}");
    json_decref(j);

    /* CALL of an undeclared tool. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"CALL nope {}\"}]}", &st);
    CHECK_INT(st, 400);
    json_decref(j);

    /* status=503 and status=429 (with Retry-After). */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"x [[emu:status=503]]\"}]}",
                         NULL, NULL, 0);
    CHECK_INT(r.status, 503);
    j = json_loads(r.body, 0, NULL);
    CHECK_STR(jstr(json_object_get(j, "error"), "message"), "emulated upstream error 503");
    CHECK_STR(jstr(json_object_get(j, "error"), "type"), "server_error");
    json_decref(j);
    resp_free(&r);
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:status=429]]\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 429);
    CHECK(strstr(r.headers, "Retry-After: 1\r\n") != NULL);
    resp_free(&r);

    /* length, max_tokens. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a b c [[emu:length]]\"}]}", &st);
    CHECK_STR(jstr(first_message(j), "content"), "You");
    CHECK_STR(jstr(json_array_get(json_object_get(j, "choices"), 0), "finish_reason"), "length");
    json_decref(j);
    j = chat(emu, "{\"model\":\"m\",\"max_tokens\":3,\"messages\":[{\"role\":\"user\",\"content\":\"a b c\"}]}", &st);
    CHECK_STR(jstr(first_message(j), "content"), "You said: a");
    CHECK_STR(jstr(json_array_get(json_object_get(j, "choices"), 0), "finish_reason"), "length");
    CHECK_INT(json_integer_value(json_object_get(json_object_get(j, "usage"), "completion_tokens")), 3);
    json_decref(j);

    /* Directives are removed from the echo. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"a [[emu:latency=200]] b\"}]}", &st);
    CHECK_STR(jstr(first_message(j), "content"), "You said: a b");
    json_decref(j);

    /* latency. */
    int64_t t0 = sb_mono_ms();
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:latency=250]]\"}]}", &st);
    CHECK_INT(st, 200);
    CHECK(sb_mono_ms() - t0 >= 250);
    json_decref(j);

    /* malformed. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:malformed]]\"}]}", NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    j = json_loads(r.body, 0, NULL);
    CHECK(j == NULL);
    json_decref(j);
    resp_free(&r);

    /* Unknown directive. */
    j = chat(emu, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:bogus]]\"}]}", &st);
    CHECK_INT(st, 400);
    json_decref(j);
}

static void test_stream(struct sb_emu *emu)
{
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"stream_options\":{\"include_usage\":true},"
                         "\"messages\":[{\"role\":\"user\",\"content\":\"one two\"}]}",
                         NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    CHECK(strstr(r.headers, "text/event-stream") != NULL);
    char content[256] = "";
    int events = 0, usage_seen = 0;
    const char *finish = NULL;
    json_t *last_finish = NULL;
    for (char *line = strtok(r.body, "\n"); line; line = strtok(NULL, "\n")) {
        if (strncmp(line, "data: ", 6) != 0)
            continue;
        events++;
        if (!strcmp(line + 6, "[DONE]"))
            break;
        json_t *c = json_loads(line + 6, 0, NULL);
        CHECK(c != NULL);
        CHECK_STR(jstr(c, "object"), "chat.completion.chunk");
        json_t *ch = json_array_get(json_object_get(c, "choices"), 0);
        const char *piece = json_string_value(json_object_get(json_object_get(ch, "delta"), "content"));
        if (piece)
            strncat(content, piece, sizeof content - strlen(content) - 1);
        if (json_is_string(json_object_get(ch, "finish_reason"))) {
            json_decref(last_finish);
            last_finish = json_incref(json_object_get(ch, "finish_reason"));
        }
        if (json_is_object(json_object_get(c, "usage")))
            usage_seen = 1;
        json_decref(c);
    }
    finish = json_string_value(last_finish);
    CHECK_STR(content, "You said: one two");
    CHECK_STR(finish, "stop");
    CHECK(usage_seen);
    CHECK(events >= 6);
    json_decref(last_finish);
    resp_free(&r);
}

static void test_journal_and_hang(struct sb_emu *emu)
{
    struct resp r = http(emu, "DELETE", "/_emu/requests", NULL, NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"journal-model\",\"messages\":[{\"role\":\"user\",\"content\":\"remember me\"}]}",
             "Authorization: Bearer upstream-key", NULL, 0);
    CHECK_INT(r.status, 200);
    resp_free(&r);
    r = http(emu, "GET", "/_emu/requests?limit=5", NULL, NULL, NULL, 0);
    json_t *j = json_loads(r.body, 0, NULL);
    json_t *reqs = json_object_get(j, "requests");
    CHECK_INT(json_array_size(reqs), 1);
    json_t *e = json_array_get(reqs, 0);
    CHECK_STR(jstr(e, "method"), "POST");
    CHECK_STR(jstr(e, "path"), "/v1/chat/completions");
    /* Credential headers are journalled by name only. */
    CHECK_STR(jstr(json_object_get(e, "headers"), "authorization"), "[redacted]");
    CHECK_STR(jstr(e, "auth_header"), "authorization");
    CHECK_STR(jstr(e, "protocol"), "openai-chat");
    CHECK_STR(jstr(json_object_get(e, "headers"), "content-type"), "application/json");
    CHECK_STR(jstr(json_object_get(e, "body"), "model"), "journal-model");
    CHECK_STR(jstr(json_array_get(json_object_get(json_object_get(e, "body"), "messages"), 0), "content"),
              "remember me");
    CHECK_INT(json_integer_value(json_object_get(e, "status")), 200);
    CHECK(json_is_integer(json_object_get(e, "time")));
    json_decref(j);
    resp_free(&r);

    /* A hung request whose client gives up: closed_by_client, nothing left open. */
    long long closed_before = stat_of(emu, "closed_by_client");
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:hang]]\"}]}", NULL, NULL, 300);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    resp_free(&r);
    long long open = -1, closed = -1;
    for (int i = 0; i < 100; i++) {
        open = stat_of(emu, "open_requests");
        closed = stat_of(emu, "closed_by_client");
        if (open == 0 && closed == closed_before + 1)
            break;
        usleep(20000);
    }
    CHECK_INT(open, 0);
    CHECK_INT(closed, closed_before + 1);

    /* A stream that hangs mid-way, then the client leaves. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"a b c "
             "[[emu:hang_after=2]]\"}]}",
             NULL, NULL, 300);
    CHECK(r.rc == CURLE_OPERATION_TIMEDOUT);
    CHECK(strstr(r.body, "data: ") != NULL);
    resp_free(&r);
    for (int i = 0; i < 100; i++) {
        open = stat_of(emu, "open_requests");
        closed = stat_of(emu, "closed_by_client");
        if (open == 0 && closed == closed_before + 2)
            break;
        usleep(20000);
    }
    CHECK_INT(open, 0);
    CHECK_INT(closed, closed_before + 2);

    /* drop: the connection closes with no reply. */
    r = http(emu, "POST", "/v1/chat/completions",
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[[emu:drop]]\"}]}", NULL, NULL, 0);
    CHECK(r.rc == CURLE_GOT_NOTHING);
    resp_free(&r);
    CHECK_INT(stat_of(emu, "open_requests"), 0);
}

/* ---- structured output, reasoning, attachments, n, parameters, tools, refusal ---------- */

/* chat() with a body written with single quotes (no quote inside strings), for readability. */
static json_t *chat_sq(struct sb_emu *emu, const char *sq, long *status)
{
    char *body = strdup(sq);
    for (char *p = body; *p; p++)
        if (*p == '\'')
            *p = '"';
    json_t *j = chat(emu, body, status);
    free(body);
    return j;
}

static json_t *choice_at(json_t *resp, size_t i)
{
    return json_array_get(json_object_get(resp, "choices"), i);
}

static const char *content_at(json_t *resp, size_t i)
{
    return json_string_value(json_object_get(json_object_get(choice_at(resp, i), "message"), "content"));
}

static const char *error_message(json_t *resp)
{
    return json_string_value(json_object_get(json_object_get(resp, "error"), "message"));
}

static const char *error_param(json_t *resp)
{
    return json_string_value(json_object_get(json_object_get(resp, "error"), "param"));
}

static bool starts_with(const char *s, const char *prefix)
{
    return s && !strncmp(s, prefix, strlen(prefix));
}

/* The first choice's content parsed as JSON (new reference), or NULL. */
static json_t *content_json(json_t *resp)
{
    const char *c = content_at(resp, 0);
    return c ? json_loads(c, JSON_DECODE_ANY, NULL) : NULL;
}

/* Expects a 400 whose error message starts with msg_prefix and whose param is param (NULL: not checked). */
static void expect_400(struct sb_emu *emu, const char *sq, const char *msg_prefix, const char *param)
{
    long st;
    json_t *j = chat_sq(emu, sq, &st);
    CHECK_INT(st, 400);
    CHECK_STR(jstr(json_object_get(j, "error"), "type"), "invalid_request_error");
    if (!starts_with(error_message(j), msg_prefix))
        fprintf(stderr, "  message: %s\n  wanted:  %s...\n", error_message(j) ? error_message(j) : "(null)",
                msg_prefix);
    CHECK(starts_with(error_message(j), msg_prefix));
    if (param)
        CHECK_STR(error_param(j), param);
    json_decref(j);
}

#define PERSON_SCHEMA                                                                                                  \
    "{'type':'object','properties':{"                                                                                  \
    "'title':{'type':'string'},"                                                                                       \
    "'code':{'type':'string','minLength':12},"                                                                         \
    "'status':{'type':'string','enum':['active','retired']},"                                                          \
    "'age':{'type':'integer','minimum':18,'maximum':99},"                                                              \
    "'ratio':{'type':'number','exclusiveMinimum':0,'maximum':0.5},"                                                    \
    "'nickname':{'type':['null','string'],'maxLength':2},"                                                             \
    "'owner':{'$ref':'#/$defs/person'},"                                                                               \
    "'team':{'type':'array','minItems':2,'maxItems':5,'items':{'$ref':'#/$defs/person'}},"                             \
    "'kind':{'const':'human'},"                                                                                        \
    "'born':{'type':'string','format':'date'}},"                                                                       \
    "'required':['title','code','status','age','ratio','nickname','owner','team','kind','born'],"                      \
    "'additionalProperties':false,"                                                                                    \
    "'$defs':{'person':{'type':'object','properties':{'name':{'type':'string'},'active':{'type':'boolean'},"           \
    "'parent':{'anyOf':[{'$ref':'#/$defs/person'},{'type':'null'}]}},"                                                 \
    "'required':['name','active','parent'],'additionalProperties':false}}}"

static void check_person(json_t *p, int depth)
{
    CHECK(json_is_object(p));
    CHECK_STR(jstr(p, "name"), "emu");
    CHECK(json_is_true(json_object_get(p, "active")));
    json_t *parent = json_object_get(p, "parent");
    CHECK(json_is_null(parent) || json_is_object(parent));
    if (json_is_object(parent) && depth < 40)
        check_person(parent, depth + 1);
}

static void test_structured_output(struct sb_emu *emu)
{
    long st;
    json_t *j = chat_sq(emu,
                        "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'person-card',"
                        "'strict':true,'schema':" PERSON_SCHEMA "}},"
                        "'messages':[{'role':'user','content':'Ada Lovelace [[emu:latency=1]]'}]}",
                        &st);
    CHECK_INT(st, 200);
    CHECK_STR(jstr(choice_at(j, 0), "finish_reason"), "stop");
    json_t *o = content_json(j);
    CHECK(json_is_object(o));
    /* Every property, in schema order, and nothing else. */
    static const char *const order[] = {"title",    "code",  "status", "age",  "ratio",
                                        "nickname", "owner", "team",   "kind", "born"};
    CHECK_INT(json_object_size(o), 10);
    void *it = json_object_iter(o);
    for (size_t i = 0; i < 10 && it; i++, it = json_object_iter_next(o, it))
        CHECK_STR(json_object_iter_key(it), order[i]);
    CHECK_STR(jstr(o, "title"), "Ada Lovelace"); /* first string: the user's text, directives removed */
    CHECK_STR(jstr(o, "code"), "emuxxxxxxxxx");  /* "emu" padded to minLength 12 */
    CHECK_STR(jstr(o, "status"), "active");      /* first enum value */
    CHECK_INT(json_integer_value(json_object_get(o, "age")), 18); /* smallest allowed >= 0 */
    CHECK(json_is_integer(json_object_get(o, "age")));
    double ratio = json_number_value(json_object_get(o, "ratio"));
    CHECK(ratio > 0 && ratio <= 0.5);
    CHECK_STR(jstr(o, "nickname"), "em"); /* first non-null type, cut to maxLength */
    CHECK_STR(jstr(o, "kind"), "human");
    CHECK_STR(jstr(o, "born"), "2024-01-01");
    check_person(json_object_get(o, "owner"), 0);
    json_t *team = json_object_get(o, "team");
    CHECK_INT(json_array_size(team), 2); /* max(minItems, 1) */
    check_person(json_array_get(team, 0), 0);
    check_person(json_array_get(team, 1), 0);
    json_decref(o);
    json_decref(j);

    /* "#" and "#/definitions/..." references, a recursive array: bounded. */
    j = chat_sq(emu,
                "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'tree','schema':"
                "{'$ref':'#/definitions/node','definitions':{'node':{'type':'object','properties':{"
                "'label':{'type':'string'},'kids':{'type':'array','items':{'$ref':'#/definitions/node'}}},"
                "'required':['label','kids']}}}}},'messages':[{'role':'user','content':'root'}]}",
                &st);
    CHECK_INT(st, 200);
    o = content_json(j);
    CHECK_STR(jstr(o, "label"), "root");
    json_t *node = o;
    int levels = 0;
    while (json_array_size(json_object_get(node, "kids")) > 0 && levels < 100) {
        node = json_array_get(json_object_get(node, "kids"), 0);
        CHECK_STR(jstr(node, "label"), "emu");
        levels++;
    }
    CHECK(levels > 0 && levels < 20);
    json_decref(o);
    json_decref(j);

    /* Integers below zero, multipleOf, exclusive bounds, a pattern from the table. */
    j = chat_sq(emu,
                "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'nums','schema':"
                "{'type':'object','properties':{'neg':{'type':'integer','minimum':-10,'maximum':-3},"
                "'mul':{'type':'integer','exclusiveMinimum':5,'multipleOf':4},'cur':{'type':'string',"
                "'pattern':'^[A-Z]{3}$'},'s':{'type':'string'}}}}},"
                "'messages':[{'role':'user','content':'json please'}]}",
                &st);
    CHECK_INT(st, 200);
    CHECK_STR(content_at(j, 0), "{\"neg\":-3,\"mul\":8,\"cur\":\"EMU\",\"s\":\"json please\"}");
    json_decref(j);

    /* json_object: {"echo": text}; it needs the word "json" in the messages, as upstream. */
    j = chat_sq(emu,
                "{'model':'m','response_format':{'type':'json_object'},'messages':[{'role':'system','content':"
                "'Answer in JSON.'},{'role':'user','content':'hi there'}]}",
                &st);
    CHECK_INT(st, 200);
    CHECK_STR(content_at(j, 0), "{\"echo\":\"hi there\"}");
    json_decref(j);
    expect_400(emu, "{'model':'m','response_format':{'type':'json_object'},'messages':[{'role':'user','content':'x'}]}",
               "'messages' must contain the word 'json'", "messages");

    /* Shape checks. */
    expect_400(emu, "{'model':'m','response_format':{'type':'yaml'},'messages':[{'role':'user','content':'x'}]}",
               "Invalid value: 'yaml'. Supported values are: 'text', 'json_object', and 'json_schema'.",
               "response_format.type");
    expect_400(emu, "{'model':'m','response_format':{'type':'json_schema'},'messages':[{'role':'user','content':'x'}]}",
               "Missing required parameter: 'response_format.json_schema'.", "response_format.json_schema");
    expect_400(emu,
               "{'model':'m','response_format':{'type':'json_schema','json_schema':{'schema':{}}},"
               "'messages':[{'role':'user','content':'x'}]}",
               "Missing required parameter: 'response_format.json_schema.name'.", "response_format.json_schema.name");
    expect_400(emu,
               "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'a b','schema':{}}},"
               "'messages':[{'role':'user','content':'x'}]}",
               "Invalid 'response_format.json_schema.name': string does not match pattern.",
               "response_format.json_schema.name");
    expect_400(emu,
               "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'a','schema':[1]}},"
               "'messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'response_format.json_schema.schema': expected an object",
               "response_format.json_schema.schema");
    expect_400(emu,
               "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'a','strict':true,"
               "'schema':{'type':'object','properties':{'a':{'type':'string'}}}}},"
               "'messages':[{'role':'user','content':'x'}]}",
               "Invalid schema for response_format 'a': In context=(), 'additionalProperties' is required to be "
               "supplied and to be false.",
               "response_format");
}

#define VIOLATION_FORMAT                                                                                               \
    "'response_format':{'type':'json_schema','json_schema':{'name':'v','schema':{'type':'object','properties':{"       \
    "'answer':{'type':'string'},'score':{'type':'integer'}},'required':['answer','score'],"                            \
    "'additionalProperties':false}}}"

static void test_schema_violation(struct sb_emu *emu)
{
    long st;
    /* Always: the first required property is missing. */
    for (int i = 0; i < 2; i++) {
        json_t *j = chat_sq(emu,
                            "{'model':'m'," VIOLATION_FORMAT ",'messages':[{'role':'user','content':"
                            "'q [[emu:schema_violation]]'}]}",
                            &st);
        CHECK_INT(st, 200);
        json_t *o = content_json(j);
        CHECK(json_is_object(o));
        CHECK(json_object_get(o, "answer") == NULL);
        CHECK(json_is_integer(json_object_get(o, "score")));
        json_decref(o);
        json_decref(j);
    }
    /* Once per tag: the first request breaks the schema, the retry is valid, another tag breaks again. */
    static const char *const tags[] = {"retry-A", "retry-A", "retry-A", "retry-B"};
    static const bool broken[] = {true, false, false, true};
    for (size_t i = 0; i < 4; i++) {
        char body[1024];
        snprintf(body, sizeof body,
                 "{'model':'m'," VIOLATION_FORMAT ",'messages':[{'role':'user','content':'q "
                 "[[emu:schema_violation_once=%s]]'}]}",
                 tags[i]);
        json_t *j = chat_sq(emu, body, &st);
        CHECK_INT(st, 200);
        json_t *o = content_json(j);
        CHECK(json_is_object(o));
        CHECK((json_object_get(o, "answer") == NULL) == broken[i]);
        if (!broken[i])
            CHECK_STR(jstr(o, "answer"), "q");
        json_decref(o);
        json_decref(j);
    }
    /* A schema whose root is not an object: the wrong type. */
    json_t *j = chat_sq(emu,
                        "{'model':'m','response_format':{'type':'json_schema','json_schema':{'name':'s',"
                        "'schema':{'type':'string'}}},'messages':[{'role':'user','content':"
                        "'q [[emu:schema_violation]]'}]}",
                        &st);
    CHECK_INT(st, 200);
    json_t *o = content_json(j);
    CHECK(o != NULL && !json_is_string(o));
    json_decref(o);
    json_decref(j);
    /* Bad value. */
    expect_400(emu, "{'model':'m','messages':[{'role':'user','content':'[[emu:schema_violation_once=]]'}]}",
               "bad value in emulator directive", "messages");
}

static void test_reasoning(struct sb_emu *emu)
{
    long st;
    json_t *j = chat_sq(emu,
                        "{'model':'m','reasoning_effort':'high','messages':[{'role':'user','content':"
                        "'why is the sky blue'}]}",
                        &st);
    CHECK_INT(st, 200);
    json_t *msg = first_message(j);
    CHECK_STR(jstr(msg, "reasoning_content"), "Reasoning (high) about: why is the sky blue");
    CHECK_STR(jstr(msg, "content"), "You said: why is the sky blue");
    json_t *details = json_object_get(json_object_get(j, "usage"), "completion_tokens_details");
    CHECK_INT(json_integer_value(json_object_get(details, "reasoning_tokens")), 8);
    CHECK_INT(usage_of(j, "completion_tokens"), 7 + 8);
    CHECK_INT(usage_of(j, "total_tokens"), usage_of(j, "prompt_tokens") + 15);
    json_decref(j);

    /* "none" (and no reasoning_effort): no reasoning. */
    j = chat_sq(emu, "{'model':'m','reasoning_effort':'none','messages':[{'role':'user','content':'hi'}]}", &st);
    CHECK_INT(st, 200);
    CHECK(json_object_get(first_message(j), "reasoning_content") == NULL);
    CHECK_INT(usage_of(j, "completion_tokens"), 3);
    json_decref(j);

    expect_400(emu, "{'model':'m','reasoning_effort':'maximum','messages':[{'role':'user','content':'x'}]}",
               "Invalid value: 'maximum'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', 'xhigh', "
               "and 'max'.",
               "reasoning_effort");
    expect_400(emu, "{'model':'m','reasoning_effort':3,'messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'reasoning_effort': expected a string", "reasoning_effort");

    /* Streaming: every reasoning delta comes before the first content delta. */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"reasoning_effort\":\"low\",\"stream_options\":"
                         "{\"include_usage\":true},\"messages\":[{\"role\":\"user\",\"content\":\"one two\"}]}",
                         NULL, NULL, 0);
    CHECK_INT(r.status, 200);
    struct streamed s;
    parse_stream(r.body, &s);
    CHECK_STR(s.reasoning[0], "Reasoning (low) about: one two");
    CHECK_STR(s.content[0], "You said: one two");
    CHECK(s.last_reasoning_event[0] > 0 && s.first_content_event[0] > s.last_reasoning_event[0]);
    CHECK_STR(s.finish[0], "stop");
    CHECK(s.usage && s.done);
    json_decref(s.finish_keep);
    resp_free(&r);
}

static void test_content_parts(struct sb_emu *emu)
{
    long st;
    /* png "\x89PNG\r\n\x1a\n" (8 bytes); wav "RIFF" (4); pdf "%PDF-1.4" (8); text "hello\nworld" (11). */
    json_t *j = chat_sq(emu,
                        "{'model':'m','messages':[{'role':'user','content':["
                        "{'type':'text','text':'look at these'},"
                        "{'type':'image_url','image_url':{'url':'https://example.com/cat.png','detail':'low'}},"
                        "{'type':'image_url','image_url':{'url':'data:image/png;base64,iVBORw0KGgo='}},"
                        "{'type':'input_audio','input_audio':{'data':'UklGRg==','format':'wav'}},"
                        "{'type':'file','file':{'filename':'doc.pdf','file_data':"
                        "'data:application/pdf;base64,JVBERi0xLjQ='}},"
                        "{'type':'file','file':{'filename':'notes.txt','file_data':"
                        "'data:text/plain;base64,aGVsbG8Kd29ybGQ='}},"
                        "{'type':'file','file':{'file_id':'file-abc123'}}]}]}",
                        &st);
    CHECK_INT(st, 200);
    CHECK_STR(content_at(j, 0), "You said: look at these [image: https://example.com/cat.png] "
                                "[image: data:image/png, 8 bytes] [audio: wav, 4 bytes] "
                                "[file: doc.pdf, application/pdf, 8 bytes] "
                                "[file: notes.txt, text/plain, 11 bytes: hello\nworld] [file: file-abc123]");
    /* 4 + 3 words + 2 images * 85 + (small files: 0 per 100 bytes). */
    CHECK_INT(usage_of(j, "prompt_tokens"), 4 + 3 + 170);
    json_decref(j);

    /* A larger text file: bytes/100 prompt tokens, and only the first 200 characters shown. */
    char text[301];
    memset(text, 'a', 300);
    text[300] = '\0';
    char b64[401 + 1];
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < 300; i += 3) {
        unsigned v = ((unsigned)(unsigned char)text[i] << 16) | ((unsigned)(unsigned char)text[i + 1] << 8) |
                     (unsigned char)text[i + 2];
        b64[o++] = alphabet[(v >> 18) & 63];
        b64[o++] = alphabet[(v >> 12) & 63];
        b64[o++] = alphabet[(v >> 6) & 63];
        b64[o++] = alphabet[v & 63];
    }
    b64[o] = '\0';
    char body[1024];
    snprintf(body, sizeof body,
             "{'model':'m','messages':[{'role':'user','content':[{'type':'file','file':{'filename':'a.txt',"
             "'file_data':'data:text/plain;base64,%s'}}]}]}",
             b64);
    j = chat_sq(emu, body, &st);
    CHECK_INT(st, 200);
    char want[400];
    snprintf(want, sizeof want, "You said: [file: a.txt, text/plain, 300 bytes: %.200s]", text);
    CHECK_STR(content_at(j, 0), want);
    CHECK_INT(usage_of(j, "prompt_tokens"), 4 + 0 + 3);
    json_decref(j);

    /* Bad attachments. */
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url','image_url':"
               "{'url':'ftp://example.com/a.png'}}]}]}",
               "Invalid image URL: 'messages[0].content[0].image_url.url'.", "messages[0].content[0].image_url.url");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'text','text':'x'},"
               "{'type':'image_url','image_url':{'url':'data:image/bmp;base64,Qk0='}}]}]}",
               "Invalid image URL: 'messages[0].content[1].image_url.url'.", "messages[0].content[1].image_url.url");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url','image_url':"
               "{'url':'data:image/png;base64,@@@@'}}]}]}",
               "Invalid image URL", "messages[0].content[0].image_url.url");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url','image_url':"
               "{'url':'data:,'}}]}]}",
               "Invalid image URL", "messages[0].content[0].image_url.url");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'image_url','image_url':"
               "{'url':'https://example.com/a.png','detail':'max'}}]}]}",
               "Invalid value: 'max'.", "messages[0].content[0].image_url.detail");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'input_audio','input_audio':"
               "{'data':'not base64!','format':'wav'}}]}]}",
               "Invalid 'messages[0].content[0].input_audio.data'.", "messages[0].content[0].input_audio.data");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'input_audio','input_audio':"
               "{'data':'UklGRg==','format':'ogg'}}]}]}",
               "Invalid value: 'ogg'.", "messages[0].content[0].input_audio.format");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'file','file':{'filename':'a.pdf',"
               "'file_data':'JVBERi0xLjQ='}}]}]}",
               "Invalid file data: 'messages[0].content[0].file.file_data'.", "messages[0].content[0].file.file_data");
    expect_400(emu,
               "{'model':'m','messages':[{'role':'user','content':[{'type':'file','file':"
               "{'filename':'a.pdf'}}]}]}",
               "Invalid 'messages[0].content[0].file'", "messages[0].content[0].file");
}

static void test_n_choices(struct sb_emu *emu)
{
    long st;
    json_t *j = chat_sq(emu, "{'model':'m','n':3,'messages':[{'role':'user','content':'hi there'}]}", &st);
    CHECK_INT(st, 200);
    CHECK_INT(json_array_size(json_object_get(j, "choices")), 3);
    CHECK_STR(content_at(j, 0), "You said: hi there");
    CHECK_STR(content_at(j, 1), "You said: hi there #1");
    CHECK_STR(content_at(j, 2), "You said: hi there #2");
    for (size_t i = 0; i < 3; i++)
        CHECK_INT(json_integer_value(json_object_get(choice_at(j, i), "index")), i);
    CHECK_INT(usage_of(j, "completion_tokens"), 4 + 5 + 5);
    json_decref(j);

    /* Structured output keeps valid JSON: the suffix goes into the first string. */
    j = chat_sq(emu,
                "{'model':'m','n':2,'response_format':{'type':'json_object'},'messages':[{'role':'user',"
                "'content':'json'}]}",
                &st);
    CHECK_STR(content_at(j, 0), "{\"echo\":\"json\"}");
    CHECK_STR(content_at(j, 1), "{\"echo\":\"json #1\"}");
    json_decref(j);

    expect_400(emu, "{'model':'emu-single-7b','n':2,'messages':[{'role':'user','content':'x'}]}",
               "n > 1 is not supported by this model", "n");
    j = chat_sq(emu, "{'model':'emu-single-7b','n':1,'messages':[{'role':'user','content':'x'}]}", &st);
    CHECK_INT(st, 200);
    json_decref(j);
    expect_400(emu, "{'model':'m','n':9,'messages':[{'role':'user','content':'x'}]}",
               "Invalid 'n': integer above maximum value. Expected a value <= 8, but got 9 instead.", "n");
    expect_400(emu, "{'model':'m','n':0,'messages':[{'role':'user','content':'x'}]}", "Invalid 'n'", "n");

    /* Streaming: each choice's chunks carry its index. */
    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"n\":2,\"messages\":[{\"role\":\"user\","
                         "\"content\":\"a b\"}]}",
                         NULL, NULL, 0);
    struct streamed s;
    parse_stream(r.body, &s);
    CHECK_STR(s.content[0], "You said: a b");
    CHECK_STR(s.content[1], "You said: a b #1");
    CHECK_STR(s.finish[0], "stop");
    CHECK_STR(s.finish[1], "stop");
    json_decref(s.finish_keep);
    resp_free(&r);
}

static void test_parameters(struct sb_emu *emu)
{
    long st;
    /* stop: cut before the earliest stop sequence, finish_reason "stop". */
    json_t *j = chat_sq(emu,
                        "{'model':'m','stop':['gamma','beta'],'messages':[{'role':'user','content':"
                        "'alpha beta gamma'}]}",
                        &st);
    CHECK_INT(st, 200);
    CHECK_STR(content_at(j, 0), "You said: alpha ");
    CHECK_STR(jstr(choice_at(j, 0), "finish_reason"), "stop");
    CHECK_INT(usage_of(j, "completion_tokens"), 3);
    json_decref(j);
    j = chat_sq(emu, "{'model':'m','stop':'said','messages':[{'role':'user','content':'x'}]}", &st);
    CHECK_STR(content_at(j, 0), "You ");
    json_decref(j);
    /* max_completion_tokens: words, finish_reason "length". */
    j = chat_sq(emu,
                "{'model':'m','max_completion_tokens':3,'seed':7,'user':'u1','store':false,'temperature':2,"
                "'top_p':0,'presence_penalty':-2,'frequency_penalty':2,'parallel_tool_calls':true,"
                "'tools':[{'type':'function','function':{'name':'f'}}],'service_tier':'flex',"
                "'prompt_cache_key':'k1','safety_identifier':'s1','metadata':{'a':'b'},'verbosity':'low',"
                "'messages':[{'role':'user','content':'one two three four'}]}",
                &st);
    CHECK_INT(st, 200);
    CHECK_STR(content_at(j, 0), "You said: one");
    CHECK_STR(jstr(choice_at(j, 0), "finish_reason"), "length");
    CHECK_STR(jstr(j, "service_tier"), "flex");
    json_decref(j);
    /* logprobs: one entry per word, top_logprobs lists the token itself. */
    j = chat_sq(emu, "{'model':'m','logprobs':true,'top_logprobs':1,'messages':[{'role':'user','content':'x'}]}", &st);
    CHECK_INT(st, 200);
    json_t *lp = json_object_get(json_object_get(choice_at(j, 0), "logprobs"), "content");
    CHECK_INT(json_array_size(lp), 3);
    CHECK_STR(jstr(json_array_get(lp, 1), "token"), " said:");
    CHECK_INT(json_array_size(json_object_get(json_array_get(lp, 1), "top_logprobs")), 1);
    json_decref(j);
    /* Audio output: only for models whose name contains "audio". */
    j = chat_sq(emu,
                "{'model':'gpt-4o-audio-preview','modalities':['text','audio'],'audio':{'voice':'alloy',"
                "'format':'wav'},'messages':[{'role':'user','content':'x'}]}",
                &st);
    CHECK_INT(st, 200);
    json_decref(j);

    expect_400(emu, "{'model':'m','stream_options':{'include_usage':true},'messages':[{'role':'user','content':'x'}]}",
               "The 'stream_options' parameter is only allowed when 'stream' is enabled.", "stream_options");
    expect_400(emu,
               "{'model':'m','stream':false,'stream_options':{'include_usage':true},"
               "'messages':[{'role':'user','content':'x'}]}",
               "The 'stream_options' parameter is only allowed", "stream_options");
    expect_400(emu,
               "{'model':'m','stream':true,'stream_options':{'include_usage':1},"
               "'messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'stream_options.include_usage'", "stream_options.include_usage");
    expect_400(emu, "{'model':'m','bogus_param':1,'messages':[{'role':'user','content':'x'}]}",
               "Unrecognized request argument supplied: bogus_param", NULL);
    expect_400(emu, "{'model':'m','stop':['a','b','c','d','e'],'messages':[{'role':'user','content':'x'}]}",
               "Invalid 'stop': array too long.", "stop");
    expect_400(emu, "{'model':'m','stop':5,'messages':[{'role':'user','content':'x'}]}", "Invalid type for 'stop'",
               "stop");
    expect_400(emu, "{'model':'m','seed':'7','messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'seed': expected an integer, but got a string instead.", "seed");
    expect_400(emu, "{'model':'m','store':'yes','messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'store'", "store");
    expect_400(emu, "{'model':'m','temperature':2.5,'messages':[{'role':'user','content':'x'}]}",
               "Invalid 'temperature': decimal above maximum value.", "temperature");
    expect_400(emu, "{'model':'m','top_p':1.5,'messages':[{'role':'user','content':'x'}]}", "Invalid 'top_p'", "top_p");
    expect_400(emu, "{'model':'m','frequency_penalty':-3,'messages':[{'role':'user','content':'x'}]}",
               "Invalid 'frequency_penalty'", "frequency_penalty");
    expect_400(emu, "{'model':'m','metadata':{'a':1},'messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'metadata.a': expected a string", "metadata.a");
    expect_400(emu,
               "{'model':'m','metadata':{'a':'1','b':'1','c':'1','d':'1','e':'1','f':'1','g':'1','h':'1',"
               "'i':'1','j':'1','k':'1','l':'1','m':'1','n':'1','o':'1','p':'1','q':'1'},"
               "'messages':[{'role':'user','content':'x'}]}",
               "Invalid 'metadata': too many properties.", "metadata");
    expect_400(emu, "{'model':'m','service_tier':'gold','messages':[{'role':'user','content':'x'}]}",
               "Invalid value: 'gold'.", "service_tier");
    expect_400(emu, "{'model':'m','parallel_tool_calls':true,'messages':[{'role':'user','content':'x'}]}",
               "Invalid value for 'parallel_tool_calls'", "parallel_tool_calls");
    expect_400(emu,
               "{'model':'m','modalities':['text','audio'],'audio':{'voice':'alloy','format':'wav'},"
               "'messages':[{'role':'user','content':'x'}]}",
               "This model does not support audio output.", "modalities");
    expect_400(emu, "{'model':'m','prompt_cache_key':5,'messages':[{'role':'user','content':'x'}]}",
               "Invalid type for 'prompt_cache_key'", "prompt_cache_key");
}

#define WEATHER_TOOL                                                                                                   \
    "{'type':'function','function':{'name':'get_weather','strict':true,'parameters':{'type':'object',"                 \
    "'properties':{'city':{'type':'string'},'unit':{'type':'string','enum':['celsius','fahrenheit']},"                 \
    "'days':{'type':'integer','minimum':1,'maximum':14},'hourly':{'type':'boolean'}},"                                 \
    "'required':['city','unit','days','hourly'],'additionalProperties':false}}}"

static json_t *tool_call_args(json_t *resp, const char **name)
{
    json_t *tc = json_array_get(json_object_get(first_message(resp), "tool_calls"), 0);
    json_t *fn = json_object_get(tc, "function");
    *name = jstr(fn, "name");
    const char *args = jstr(fn, "arguments");
    return args ? json_loads(args, JSON_DECODE_ANY, NULL) : NULL;
}

static void test_tool_choice(struct sb_emu *emu)
{
    long st;
    const char *name = NULL;
    json_t *j = chat_sq(emu,
                        "{'model':'m','tools':[" WEATHER_TOOL ",{'type':'function','function':{'name':'noop'}}],"
                        "'tool_choice':'required','messages':[{'role':'user','content':'Paris'}]}",
                        &st);
    CHECK_INT(st, 200);
    CHECK_STR(jstr(choice_at(j, 0), "finish_reason"), "tool_calls");
    CHECK(json_is_null(json_object_get(first_message(j), "content")));
    json_t *args = tool_call_args(j, &name);
    CHECK_STR(name, "get_weather");
    CHECK_STR(jstr(args, "city"), "Paris");
    CHECK_STR(jstr(args, "unit"), "celsius");
    CHECK_INT(json_integer_value(json_object_get(args, "days")), 1);
    CHECK(json_is_true(json_object_get(args, "hourly")));
    CHECK_INT(json_object_size(args), 4);
    json_decref(args);
    json_decref(j);

    /* A named function; one without parameters gets "{}". */
    j = chat_sq(emu,
                "{'model':'m','tools':[" WEATHER_TOOL ",{'type':'function','function':{'name':'noop'}}],"
                "'tool_choice':{'type':'function','function':{'name':'noop'}},"
                "'messages':[{'role':'user','content':'anything'}]}",
                &st);
    CHECK_INT(st, 200);
    CHECK_STR(jstr(json_object_get(json_array_get(json_object_get(first_message(j), "tool_calls"), 0), "function"),
                   "arguments"),
              "{}");
    json_decref(j);

    /* A CALL directive still wins. */
    j = chat_sq(emu,
                "{'model':'m','tools':[" WEATHER_TOOL ",{'type':'function','function':{'name':'noop'}}],"
                "'tool_choice':'required','messages':[{'role':'user','content':'CALL noop {}'}]}",
                &st);
    args = tool_call_args(j, &name);
    CHECK_STR(name, "noop");
    json_decref(args);
    json_decref(j);

    /* Violation on generated arguments: the first required property is missing. */
    j = chat_sq(emu,
                "{'model':'m','tools':[" WEATHER_TOOL "],'tool_choice':'required',"
                "'messages':[{'role':'user','content':'Paris [[emu:schema_violation]]'}]}",
                &st);
    args = tool_call_args(j, &name);
    CHECK(json_is_object(args) && json_object_get(args, "city") == NULL);
    json_decref(args);
    json_decref(j);

    expect_400(emu,
               "{'model':'m','tools':[" WEATHER_TOOL "],'tool_choice':{'type':'function','function':"
               "{'name':'nope'}},'messages':[{'role':'user','content':'x'}]}",
               "Invalid value for 'tool_choice'", "tool_choice");
    expect_400(emu,
               "{'model':'m','tools':[{'type':'function','function':{'name':'f','strict':true,'parameters':"
               "{'type':'object','properties':{'a':{'type':'string'},'b':{'type':'string'}},'required':['a'],"
               "'additionalProperties':false}}}],'messages':[{'role':'user','content':'x'}]}",
               "Invalid schema for function 'f': In context=(), 'required' is required to be supplied and to be an "
               "array including every key in properties. Missing 'b'.",
               "tools[0].function.parameters");
    expect_400(emu,
               "{'model':'m','tools':[{'type':'function','function':{'name':'f','strict':true,'parameters':"
               "{'type':'object','properties':{'a':{'type':'object','properties':{'x':{'type':'string'}},"
               "'required':['x']}},'required':['a'],'additionalProperties':false}}}],"
               "'messages':[{'role':'user','content':'x'}]}",
               "Invalid schema for function 'f': In context=('properties', 'a'), 'additionalProperties' is required "
               "to be supplied and to be false.",
               "tools[0].function.parameters");
}

static void test_refusal(struct sb_emu *emu)
{
    long st;
    json_t *j = chat_sq(emu, "{'model':'m','messages':[{'role':'user','content':'do bad [[emu:refuse]]'}]}", &st);
    CHECK_INT(st, 200);
    json_t *msg = first_message(j);
    CHECK(json_is_null(json_object_get(msg, "content")));
    CHECK_STR(jstr(msg, "refusal"), "I'm sorry, I can't help with that.");
    CHECK_STR(jstr(choice_at(j, 0), "finish_reason"), "stop");
    CHECK_INT(usage_of(j, "completion_tokens"), 7);
    json_decref(j);

    struct resp r = http(emu, "POST", "/v1/chat/completions",
                         "{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":"
                         "\"x [[emu:refuse]]\"}]}",
                         NULL, NULL, 0);
    struct streamed s;
    parse_stream(r.body, &s);
    CHECK_STR(s.refusal[0], "I'm sorry, I can't help with that.");
    CHECK_STR(s.content[0], "");
    CHECK_STR(s.finish[0], "stop");
    CHECK(s.done);
    json_decref(s.finish_keep);
    resp_free(&r);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN); /* the emulator may write to a client that already left */
    curl_global_init(CURL_GLOBAL_DEFAULT);
    struct server s;
    if (server_start(&s) < 0) {
        fprintf(stderr, "cannot start the emulator\n");
        return 1;
    }
    CHECK(port_of(s.open_emu) > 0);
    test_echo(s.open_emu);
    test_validation(s.open_emu);
    test_auth_and_limits(s.keyed_emu);
    test_directives(s.open_emu);
    test_stream(s.open_emu);
    test_journal_and_hang(s.open_emu);
    test_structured_output(s.open_emu);
    test_schema_violation(s.open_emu);
    test_reasoning(s.open_emu);
    test_content_parts(s.open_emu);
    test_n_choices(s.open_emu);
    test_parameters(s.open_emu);
    test_tool_choice(s.open_emu);
    test_refusal(s.open_emu);
    server_stop(&s);
    curl_global_cleanup();
    return sb_test_finish("emulator");
}
