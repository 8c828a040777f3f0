/* Unit tests for the tool commands of sbctl (search-backend, tools log) and
 * the rows and statements around them: the argument parsing, then the built
 * sbctl against a throwaway PostgreSQL cluster (sbctl_test_pg.h): search
 * backends and their NOTIFY, the default backend in the frontend's model
 * lookup, the tool_calls rows the frontend's request-log statement writes
 * (replay included), the view and `tools log`. Skipped without PostgreSQL
 * server binaries. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_sql.h"
#include "sb_cli.h"
#include "sb_migrate.h"
#include "sb_test.h"
#include "sbctl_test_pg.h"

static void test_search_cli(void)
{
    struct sb_cli c;
    CHECK_INT(
        parse(&c, "search-backend", "add", "web", "--kind", "searxng", "--base-url", "http://127.0.0.1:8888", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_SEARCH_BACKEND_ADD);
    CHECK_STR(c.arg[0], "web");
    CHECK_STR(c.kind, "searxng");
    CHECK_STR(c.base_url, "http://127.0.0.1:8888");
    CHECK(c.credential_ref == NULL && !c.make_default && !c.if_not_exists);
    CHECK_INT(parse(&c, "search-backend", "add", "b", "--kind=brave", "--base-url", "https://api.search.brave.com",
                    "--credential-ref", "BRAVE_API_KEY", "--default", "--if-not-exists", NULL),
              0);
    CHECK_STR(c.kind, "brave");
    CHECK_STR(c.credential_ref, "BRAVE_API_KEY");
    CHECK(c.make_default && c.if_not_exists);
    CHECK_INT(parse(&c, "search-backend", "add", "t", "--kind", "tavily", "--base-url", "https://api.tavily.com", NULL),
              0);

    CHECK_INT(parse(&c, "search-backend", "add", "web", "--base-url", "http://x", NULL), -EINVAL);
    CHECK(strstr(err, "--kind is required") != NULL);
    CHECK_INT(parse(&c, "search-backend", "add", "web", "--kind", "searxng", NULL), -EINVAL);
    CHECK(strstr(err, "--base-url is required") != NULL);
    CHECK_INT(parse(&c, "search-backend", "add", "web", "--kind", "google", "--base-url", "http://x", NULL), -EINVAL);
    CHECK(strstr(err, "'google' is not one of searxng, brave, tavily") != NULL);
    CHECK_INT(parse(&c, "search-backend", "add", "web", "--kind", "searxng", "--base-url", "file:///x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "search-backend", "add", "a b", "--kind", "searxng", "--base-url", "http://x", NULL), -EINVAL);
    CHECK(strstr(err, "invalid search backend name 'a b'") != NULL);
    CHECK_INT(
        parse(&c, "search-backend", "add", "web", "--kind", "searxng", "--base-url", "http://x", "--default=yes", NULL),
        -EINVAL);
    CHECK_INT(parse(&c, "search-backend", "add", "web", "--kind", "searxng", "--base-url", "http://x", "--provider",
                    "gemini", NULL),
              -EINVAL);
    /* A pasted key is refused and not echoed. */
    CHECK_INT(parse(&c, "search-backend", "add", "web", "--kind", "brave", "--base-url", "http://x", "--credential-ref",
                    "BSAsecret-value-123", NULL),
              -EINVAL);
    CHECK(strstr(err, "secret-value") == NULL);

    CHECK_INT(parse(&c, "search-backend", "list", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_SEARCH_BACKEND_LIST);
    CHECK_INT(parse(&c, "search-backend", "list", "x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "search-backend", "remove", "web", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_SEARCH_BACKEND_REMOVE);
    CHECK_INT(parse(&c, "search-backend", "remove", NULL), -EINVAL);
    CHECK_INT(parse(&c, "search-backend", "set-default", "web", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_SEARCH_BACKEND_SET_DEFAULT);
    CHECK_INT(parse(&c, "search-backend", "set-default", "we/b", NULL), -EINVAL);
    CHECK_INT(parse(&c, "search-backend", "disable", "web", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_SEARCH_BACKEND_DISABLE);
    CHECK_INT(parse(&c, "search-backend", "enable", "web", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_SEARCH_BACKEND_ENABLE);
    CHECK_INT(parse(&c, "search-backend", "frob", NULL), -EINVAL);

    CHECK_INT(parse(&c, "tools", "log", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_TOOLS_LOG);
    CHECK_INT(c.limit, 0);
    CHECK(c.account == NULL);
    CHECK_INT(parse(&c, "tools", "log", "--account", "acme", "--limit", "5", NULL), 0);
    CHECK_STR(c.account, "acme");
    CHECK_INT(c.limit, 5);
    CHECK_INT(parse(&c, "tools", "log", "--limit", "0", NULL), -EINVAL);
    CHECK_INT(parse(&c, "tools", "log", "--limit", "10001", NULL), -EINVAL);
    CHECK_INT(parse(&c, "tools", "log", "--limit", "10000", NULL), 0);
    CHECK_INT(parse(&c, "tools", "log", "--kind", "brave", NULL), -EINVAL);

    /* Who runs a built-in tool: true, false or "native" only (docs/tools.md). */
    CHECK_INT(parse(&c, "model", "set", "m", "--capabilities", "{\"web_search\":\"native\",\"mcp\":false}", NULL), 0);
    CHECK_INT(parse(&c, "model", "set", "m", "--capabilities", "{\"web_search\":true,\"file_search\":true}", NULL), 0);
    CHECK_INT(parse(&c, "model", "set", "m", "--capabilities", "{\"web_search\":\"Native\"}", NULL), -EINVAL);
    CHECK(strstr(err, "\"web_search\" must be true, false or \"native\"") != NULL);
    CHECK_INT(parse(&c, "model", "set", "m", "--capabilities", "{\"mcp\":1}", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "set", "m", "--capabilities", "{\"local_shell\":null}", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "set", "m", "--capabilities", "{\"n\":false,\"top_k\":\"x\"}", NULL), 0);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sb_cli_usage(f, NULL, NULL);
    fclose(f);
    CHECK(strstr(buf, "sbctl search-backend add NAME --kind searxng|brave|tavily --base-url URL") != NULL);
    CHECK(strstr(buf, "sbctl search-backend set-default NAME") != NULL);
    CHECK(strstr(buf, "sbctl tools log [--account NAME] [--limit N]") != NULL);
    free(buf);
    f = open_memstream(&buf, &len);
    sb_cli_usage(f, "search-backend", NULL);
    fclose(f);
    CHECK(strstr(buf, "sbctl search-backend remove NAME") != NULL);
    CHECK(strstr(buf, "tools log") == NULL);
    CHECK(strstr(buf, "uses the default backend") != NULL); /* the note on the default */
    free(buf);
    CHECK_INT(parse(&c, "search-backend", "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_STR(c.help_group, "search-backend");
    CHECK_INT(parse(&c, "help", "tools", "log", NULL), 0);
    CHECK_STR(c.help_verb, "log");
}

/* ---- search backends, the tool_calls rows and the frontend's statements ---- */

#define IS_DEFAULT "SELECT is_default::text FROM search_backends WHERE name = $1"

/* The frontend's prepared statement of this name (fe_sql.c). */
static const char *fe_statement(const char *name)
{
    int n = 0;
    const sb_db_stmt_t *all = fe_sql_all(&n);
    for (int i = 0; i < n; i++)
        if (!strcmp(all[i].name, name))
            return all[i].sql;
    return NULL;
}

/* tools_config.web_search of model id's record, as the frontend reads it
 * (compact JSON, "null" when none). Malloc'ed. */
static char *model_search_backend(const char *id)
{
    char *rec = query1(fe_statement("model_lookup"), id);
    json_t *v = json_loads(rec ? rec : "", 0, NULL);
    free(rec);
    json_t *b = json_object_get(json_object_get(v, "tools_config"), "web_search");
    char *s = b ? json_dumps(b, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY) : strdup("(absent)");
    json_decref(v);
    return s;
}

#define CHECK_BACKEND(want)                                                                                            \
    do {                                                                                                               \
        char *b_ = model_search_backend("sm");                                                                         \
        CHECK_STR(b_, want);                                                                                           \
        free(b_);                                                                                                      \
    } while (0)

static void test_search_db(void)
{
    char *out = NULL, *e = NULL;
    /* Every statement the frontend prepares at connect fits the migrated schema. */
    int nstmts = 0;
    const sb_db_stmt_t *stmts = fe_sql_all(&nstmts);
    CHECK(nstmts > 24 && nstmts < FE_SQL_MAX_STATEMENTS);
    for (int i = 0; i < nstmts; i++) {
        PGresult *res = PQprepare(pg.conn, stmts[i].name, stmts[i].sql, 0, NULL);
        CHECK(PQresultStatus(res) == PGRES_COMMAND_OK);
        if (PQresultStatus(res) != PGRES_COMMAND_OK)
            fprintf(stderr, "test_sbctl: %s: %s", stmts[i].name, PQerrorMessage(pg.conn));
        PQclear(res);
    }
    CHECK(exec_sql("DEALLOCATE ALL", 0, NULL));

    add_model("sm");
    CHECK_BACKEND("null");
    CHECK(exec_sql("LISTEN sb_config", 0, NULL));
    notified(NULL, true);

    /* add: not the default unless asked; a note says web search is off. */
    CHECK_INT(SBCTL(&out, &e, "search-backend", "add", "s1", "--kind", "searxng", "--base-url", "http://127.0.0.1:9/"),
              0);
    CHECK_STR(out, "search backend s1 added (searxng, http://127.0.0.1:9/)\n");
    CHECK(e && strstr(e, "there is no default search backend") != NULL);
    free(out);
    free(e);
    CHECK(notified("search_backends", false));
    CHECK_QUERY(IS_DEFAULT, "s1", "false");
    CHECK_QUERY("SELECT COALESCE(credential_ref, 'null') FROM search_backends WHERE name = $1", "s1", "null");
    CHECK_BACKEND("null");
    CHECK_FAILS(1, "search backend 's1' already exists", "search-backend", "add", "s1", "--kind", "brave", "--base-url",
                "http://127.0.0.1:9");
    CHECK_PRINTS("search backend s1 already exists\n", "search-backend", "add", "s1", "--kind", "brave", "--base-url",
                 "http://127.0.0.1:9", "--if-not-exists", "--default");
    CHECK_QUERY("SELECT kind || ' ' || is_default FROM search_backends WHERE name = $1", "s1", "searxng false");

    /* --default on add, then set-default moves it: one default at a time. */
    CHECK_PRINTS("search backend s2 added (brave, https://127.0.0.1:9/b), the default\n", "search-backend", "add", "s2",
                 "--kind", "brave", "--base-url", "https://127.0.0.1:9/b", "--credential-ref", "SB_TEST_BRAVE_KEY",
                 "--default");
    CHECK_QUERY(IS_DEFAULT, "s2", "true");
    CHECK_BACKEND(
        "{\"base_url\":\"https://127.0.0.1:9/b\",\"credential_ref\":\"SB_TEST_BRAVE_KEY\",\"kind\":\"brave\"}");
    CHECK_PRINTS("search backend s1 is the default\n", "search-backend", "set-default", "s1");
    CHECK(notified("search_backends", false));
    CHECK_QUERY(IS_DEFAULT, "s1", "true");
    CHECK_QUERY(IS_DEFAULT, "s2", "false");
    CHECK_BACKEND("{\"base_url\":\"http://127.0.0.1:9/\",\"credential_ref\":null,\"kind\":\"searxng\"}");
    CHECK_PRINTS("search backend s1 is the default\n", "search-backend", "set-default", "s1"); /* again: no change */
    CHECK_QUERY("SELECT count(*)::text FROM search_backends WHERE is_default", NULL, "1");
    CHECK_FAILS(1, "search backend 'nosuch' does not exist", "search-backend", "set-default", "nosuch");
    CHECK_QUERY(IS_DEFAULT, "s1", "true");
    /* The schema holds the rules too. */
    PGresult *res = PQexec(pg.conn, "UPDATE search_backends SET is_default = true WHERE name = 's2'");
    CHECK(PQresultStatus(res) == PGRES_FATAL_ERROR);
    PQclear(res);
    res = PQexec(pg.conn, "INSERT INTO search_backends (name, kind, base_url) VALUES ('s9', 'google', 'http://x')");
    CHECK(PQresultStatus(res) == PGRES_FATAL_ERROR);
    PQclear(res);

    /* list */
    CHECK_INT(SBCTL(&out, NULL, "search-backend", "list"), 0);
    CHECK(out && !strncmp(out, "id  name  kind     base_url", 27));
    /* table_row matches on the first two cells: id and name. */
    char *id1 = query1("SELECT id::text FROM search_backends WHERE name = 's1'", NULL);
    char *id2 = query1("SELECT id::text FROM search_backends WHERE name = 's2'", NULL);
    CHECK(strstr(table_row(out, id1 ? id1 : "?", "s1"), " s1 searxng http://127.0.0.1:9/ - true true ") != NULL);
    CHECK(strstr(table_row(out, id2 ? id2 : "?", "s2"),
                 " s2 brave https://127.0.0.1:9/b SB_TEST_BRAVE_KEY false true ") != NULL);
    free(id1);
    free(id2);
    CHECK(table_aligned(out));
    free(out);

    /* Disabling the default turns web search off (said), enabling back on. */
    CHECK_INT(SBCTL(&out, &e, "search-backend", "disable", "s1"), 0);
    CHECK_STR(out, "search backend s1 disabled\n");
    CHECK(e && strstr(e, "warning: search backend 's1' is disabled") != NULL);
    free(out);
    free(e);
    CHECK_BACKEND("null");
    CHECK_PRINTS("search backend s1 enabled\n", "search-backend", "enable", "s1");
    CHECK_BACKEND("{\"base_url\":\"http://127.0.0.1:9/\",\"credential_ref\":null,\"kind\":\"searxng\"}");
    CHECK_PRINTS("search backend s2 disabled\n", "search-backend", "disable", "s2"); /* not the default: no warning */
    CHECK_FAILS(1, "search backend 'nosuch' does not exist", "search-backend", "enable", "nosuch");
    CHECK_INT(SBCTL(&out, &e, "search-backend", "set-default", "s2"), 0);
    CHECK_STR(out, "search backend s2 is the default\n");
    CHECK(e && strstr(e, "is disabled: web search stays off") != NULL);
    free(out);
    free(e);
    CHECK_BACKEND("null");
    CHECK_INT(SBCTL(NULL, NULL, "search-backend", "enable", "s2"), 0);

    /* remove */
    CHECK_PRINTS("search backend s2 removed (it was the default: gateway web search is off until another is "
                 "set-default)\n",
                 "search-backend", "remove", "s2");
    CHECK(notified("search_backends", false));
    CHECK_BACKEND("null");
    CHECK_PRINTS("search backend s1 removed\n", "search-backend", "remove", "s1");
    CHECK_FAILS(1, "search backend 's1' does not exist", "search-backend", "remove", "s1");
    CHECK_QUERY("SELECT count(*)::text FROM search_backends", NULL, "0");
    CHECK(exec_sql("UNLISTEN sb_config", 0, NULL));
}

/* Runs the frontend's request-log insert (fe_sql.c) with batch as $1. */
static bool reqlog_insert(const char *batch)
{
    const char *params[] = {batch};
    return exec_sql(fe_sql_reqlog_insert_sql, 1, params);
}

static void test_tool_rows_db(void)
{
    char *out = NULL;
    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "tacct"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "tother"), 0);
    char *acct = query1("SELECT id::text FROM accounts WHERE name = 'tacct'", NULL);
    char *other = query1("SELECT id::text FROM accounts WHERE name = 'tother'", NULL);
    char batch[4096];
    /* Two requests of tacct: the first made a listing (by the model it fell
     * back from) and a failed call, and was stored; the second none. A third,
     * of tother, one search. 2024-05-01T10:00:00Z = 1714557600000. */
    snprintf(batch, sizeof batch,
             "[{\"request_id\":\"req_t1\",\"ts_ms\":1714557600000,\"key_id\":null,\"account_id\":%s,"
             "\"model\":\"m-final\",\"path\":\"/v1/responses\",\"status\":200,\"latency_ms\":900,"
             "\"tokens_in\":10,\"tokens_out\":5,\"reasoning_tokens\":0,\"stream\":true,\"frontend\":\"t\","
             "\"tool_calls\":[{\"ts_ms\":1714557600100,\"kind\":\"mcp_list_tools\",\"outcome\":\"ok\","
             "\"server\":\"deepwiki\",\"item_id\":\"mcpl_1\",\"duration_ms\":120,\"bytes_in\":2048,\"bytes_out\":90,"
             "\"model\":\"m-first\",\"response_id\":\"resp_1\"},"
             "{\"ts_ms\":1714557600500,\"kind\":\"mcp_call\",\"outcome\":\"timeout\",\"server\":\"deepwiki\","
             "\"name\":\"ask\",\"item_id\":\"mcp_2\",\"duration_ms\":300,\"bytes_in\":0,\"bytes_out\":40,"
             "\"error\":\"timed out after 300 ms\",\"response_id\":\"resp_1\"}]},"
             "{\"request_id\":\"req_t2\",\"ts_ms\":1714557601000,\"account_id\":%s,\"model\":\"m-final\","
             "\"path\":\"/v1/responses\",\"status\":200,\"latency_ms\":10,\"tokens_in\":1,\"tokens_out\":1,"
             "\"reasoning_tokens\":0,\"stream\":false,\"frontend\":\"t\"},"
             "{\"request_id\":\"req_t3\",\"ts_ms\":1714557602000,\"account_id\":%s,\"model\":\"m-other\","
             "\"path\":\"/v1/responses\",\"status\":200,\"latency_ms\":10,\"tokens_in\":1,\"tokens_out\":1,"
             "\"reasoning_tokens\":0,\"stream\":false,\"frontend\":\"t\",\"tool_calls\":{\"not\":\"an array\"}}]",
             acct ? acct : "0", acct ? acct : "0", other ? other : "0");
    CHECK(reqlog_insert(batch));
    CHECK_QUERY("SELECT count(*)::text FROM request_log WHERE request_id IN ('req_t1', 'req_t2', 'req_t3')", NULL, "3");
    CHECK_QUERY("SELECT count(*)::text FROM tool_calls WHERE request_id = $1", "req_t1", "2");
    CHECK_QUERY("SELECT count(*)::text FROM tool_calls WHERE request_id IN ('req_t2', 'req_t3')", NULL, "0");
    CHECK_QUERY("SELECT string_agg(format('%s/%s/%s/%s/%s/%s/%s/%s/%s/%s/%s/%s', kind, server, name, item_id, model, "
                "response_id, outcome, duration_ms, bytes_in, bytes_out, error, "
                "to_char(created_at AT TIME ZONE 'UTC', 'HH24:MI:SS.MS')), ' | ' ORDER BY id) "
                "FROM tool_calls WHERE request_id = $1",
                "req_t1",
                "mcp_list_tools/deepwiki//mcpl_1/m-first/resp_1/ok/120/2048/90//10:00:00.100 | "
                "mcp_call/deepwiki/ask/mcp_2/m-final/resp_1/timeout/300/0/40/timed out after 300 ms/10:00:00.500");
    CHECK_QUERY("SELECT (account_id = $1::bigint AND key_id IS NULL)::text FROM tool_calls WHERE item_id = 'mcp_2'",
                acct, "true");
    /* The quota draw (request_log's statement trigger) still sees the rows. */
    CHECK_QUERY("SELECT tokens_used::text FROM account_usage WHERE account_id = $1::bigint", acct, "17");

    /* A replayed batch (the spool after a crash) writes nothing twice. */
    CHECK(reqlog_insert(batch));
    CHECK_QUERY("SELECT count(*)::text FROM tool_calls WHERE request_id = $1", "req_t1", "2");
    CHECK_QUERY("SELECT tokens_used::text FROM account_usage WHERE account_id = $1::bigint", acct, "17");
    /* A row without a kind or an outcome is left out (the frontend never makes one). */
    CHECK(reqlog_insert("[{\"request_id\":\"req_t4\",\"ts_ms\":1714557603000,\"path\":\"/v1/responses\","
                        "\"status\":200,\"latency_ms\":1,\"tokens_in\":0,\"tokens_out\":0,\"reasoning_tokens\":0,"
                        "\"stream\":false,\"frontend\":\"t\",\"tool_calls\":[{\"kind\":\"web_search\"},"
                        "{\"kind\":\"web_search\",\"outcome\":\"blocked\",\"server\":\"searxng\"}]}]"));
    CHECK_QUERY("SELECT string_agg(outcome || ' ' || server || ' ' || to_char(created_at AT TIME ZONE 'UTC', "
                "'HH24:MI:SS'), ',') FROM tool_calls WHERE request_id = $1",
                "req_t4", "blocked searxng 10:00:03"); /* no ts_ms of its own: the request's */

    /* The ops view: per account, day, kind and server. */
    CHECK_QUERY("SELECT string_agg(format('%s %s %s %s %s %s', day, account, kind, server, calls, errors, "
                "avg_duration_ms), ' | ' ORDER BY kind) FROM tool_use_daily WHERE account_id = $1::bigint",
                acct, "2024-05-01 tacct mcp_call deepwiki 1 1 | 2024-05-01 tacct mcp_list_tools deepwiki 1 0");
    CHECK_QUERY("SELECT avg_duration_ms::text FROM tool_use_daily WHERE account_id = $1::bigint AND kind = 'mcp_call'",
                acct, "300");

    /* tools log: newest first, filtered by account, limited. */
    CHECK_INT(SBCTL(&out, NULL, "tools", "log"), 0);
    CHECK(out && !strncmp(out, "time ", 5));
    const char *t4 = out ? strstr(out, "req_t4") : NULL, *t1 = out ? strstr(out, "req_t1") : NULL;
    CHECK(t4 && t1 && t4 < t1);
    CHECK(out && strstr(out, "timed out after 300 ms\n") != NULL); /* last: it may hold spaces */
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "tools", "log", "--account", "tacct", "--limit", "1"), 0);
    CHECK_STR(table_row(out, "2024-05-01T10:00:00Z", "req_t1"),
              "2024-05-01T10:00:00Z req_t1 tacct m-final mcp_call deepwiki ask timeout 300 0 40 timed out after 300 "
              "ms");
    CHECK(out && strstr(out, "mcp_list_tools") == NULL);
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "tools", "log", "--account", "tother"), 0);
    CHECK(out && strchr(out, '\n') && strchr(out, '\n')[1] == '\0'); /* the header only */
    free(out);
    CHECK_FAILS(1, "account 'nosuch' does not exist", "tools", "log", "--account", "nosuch");
    free(acct);
    free(other);
}

int main(void)
{
    test_search_cli();
    if (pg_setup_migrated()) {
        test_search_db();
        test_tool_rows_db();
    }
    pg_cleanup();
    return sb_test_finish("sbctl_tools");
}
