/* Unit tests for sbctl's argument parsing, validation and migration-file
 * scanning, and for the prompt, limits and model fallback commands end to
 * end: the built sbctl binary against a throwaway PostgreSQL cluster
 * (sbctl_test_pg.h), skipped when no PostgreSQL server binaries are
 * installed. The tool commands are test_sbctl_tools.c's; the other commands'
 * database paths are covered by the integration tests. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <grp.h>
#include <jansson.h>
#include <libpq-fe.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fe_sql.h"
#include "sb_cli.h"
#include "sb_migrate.h"
#include "sb_test.h"
#include "sbctl_test_pg.h"

static void test_help(void)
{
    struct sb_cli c;
    CHECK_INT(parse(&c, "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK(c.help_group == NULL && c.help_verb == NULL);
    CHECK_INT(parse(&c, "-h", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_INT(parse(&c, "key", "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_STR(c.help_group, "key");
    CHECK(c.help_verb == NULL);
    CHECK_INT(parse(&c, "model", "add", "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_STR(c.help_verb, "add");
    CHECK_INT(parse(&c, "help", "migrate", NULL), 0);
    CHECK(c.help_group == NULL);
    CHECK_STR(c.help_verb, "migrate");
    CHECK_INT(parse(&c, "help", "key", "create", NULL), 0);
    CHECK_STR(c.help_group, "key");
    CHECK_STR(c.help_verb, "create");
    CHECK_INT(parse(&c, "help", "bogus", NULL), -EINVAL);
    CHECK_INT(parse(&c, "help", "key", "bogus", NULL), -EINVAL);

    /* Usage text mentions every group and is non-empty for one command. */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sb_cli_usage(f, NULL, NULL);
    fclose(f);
    CHECK(strstr(buf, "sbctl account create NAME") != NULL);
    CHECK(strstr(buf, "sbctl key set-group ID GROUP") != NULL);
    CHECK(strstr(buf, "sbctl migrate [--dir DIR]") != NULL);
    free(buf);
    f = open_memstream(&buf, &len);
    sb_cli_usage(f, "model", "set");
    fclose(f);
    CHECK(strstr(buf, "sbctl model set ID") != NULL);
    CHECK(strstr(buf, "model add") == NULL);
    free(buf);
}

static void test_commands(void)
{
    struct sb_cli c;
    CHECK_INT(parse(&c, NULL), -EINVAL);
    CHECK_INT(parse(&c, "bogus", NULL), -EINVAL);
    CHECK(strstr(err, "unknown command 'bogus'") != NULL);
    CHECK_INT(parse(&c, "account", NULL), -EINVAL);
    CHECK_INT(parse(&c, "account", "frobnicate", NULL), -EINVAL);

    CHECK_INT(parse(&c, "migrate", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_MIGRATE);
    CHECK(c.dir == NULL);
    CHECK_INT(parse(&c, "migrate", "--dir", "/x/schema", NULL), 0);
    CHECK_STR(c.dir, "/x/schema");
    CHECK_INT(parse(&c, "migrate", "--dir=/y", NULL), 0);
    CHECK_STR(c.dir, "/y");
    CHECK_INT(parse(&c, "migrate", "--dir", NULL), -EINVAL);
    CHECK_INT(parse(&c, "migrate", "extra", NULL), -EINVAL);

    CHECK_INT(parse(&c, "account", "create", "acme", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_ACCOUNT_CREATE);
    CHECK_STR(c.arg[0], "acme");
    CHECK(!c.zdr);
    CHECK_INT(parse(&c, "account", "create", "--zdr", "acme", NULL), 0);
    CHECK(c.zdr);
    CHECK_STR(c.arg[0], "acme");
    CHECK_INT(parse(&c, "account", "create", "acme", "--zdr=yes", NULL), -EINVAL);
    CHECK_INT(parse(&c, "account", "create", "acme", "--zdr", "--zdr", NULL), -EINVAL);
    CHECK_INT(parse(&c, "account", "create", NULL), -EINVAL);
    CHECK_INT(parse(&c, "account", "create", "a", "b", NULL), -EINVAL);
    CHECK_INT(parse(&c, "account", "create", "bad name", NULL), -EINVAL);
    CHECK_INT(parse(&c, "account", "create", "-x", NULL), -EINVAL);       /* an unknown option */
    CHECK_INT(parse(&c, "account", "create", "--", "-x", NULL), -EINVAL); /* an invalid name */
    CHECK_INT(parse(&c, "account", "create", "acme", "--group", "g", NULL), -EINVAL);
    CHECK(strstr(err, "unknown option '--group'") != NULL);
    CHECK_INT(parse(&c, "account", "create", "acme", "--if-not-exists", NULL), 0);
    CHECK(c.if_not_exists);
    CHECK_INT(parse(&c, "account", "list", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_ACCOUNT_LIST);
    CHECK_INT(parse(&c, "account", "disable", "acme", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_ACCOUNT_DISABLE);
    CHECK_INT(parse(&c, "account", "enable", "acme", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_ACCOUNT_ENABLE);

    CHECK_INT(parse(&c, "group", "allow", "default", "*", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_GROUP_ALLOW);
    CHECK_STR(c.arg[1], "*");
    CHECK_INT(parse(&c, "group", "allow", "default", "openai/gpt-4o", NULL), 0);
    CHECK_INT(parse(&c, "group", "deny", "default", "m x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "group", "deny", "default", NULL), -EINVAL);
    CHECK_INT(parse(&c, "group", "list", NULL), 0);
}

static void test_keys(void)
{
    struct sb_cli c;
    CHECK_INT(parse(&c, "key", "create", "--account", "dev", "--group", "default", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_KEY_CREATE);
    CHECK_STR(c.account, "dev");
    CHECK_STR(c.group, "default");
    CHECK(c.name == NULL);
    CHECK_INT(parse(&c, "key", "create", "--account=dev", "--group=default", "--name", "ci runner", NULL), 0);
    CHECK_STR(c.name, "ci runner");
    CHECK_INT(parse(&c, "key", "create", "--account", "dev", NULL), -EINVAL);
    CHECK(strstr(err, "--group") != NULL);
    CHECK_INT(parse(&c, "key", "create", "--group", "default", NULL), -EINVAL);
    CHECK(strstr(err, "--account") != NULL);
    CHECK_INT(parse(&c, "key", "create", "--account", "dev", "--group", "default", "--name", "a\tb", NULL), -EINVAL);

    CHECK_INT(parse(&c, "key", "list", NULL), 0);
    CHECK(c.account == NULL);
    CHECK_INT(parse(&c, "key", "list", "--account", "dev", NULL), 0);
    CHECK_STR(c.account, "dev");

    CHECK_INT(parse(&c, "key", "disable", "42", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_KEY_DISABLE);
    CHECK_INT(c.key_id, 42);
    CHECK_INT(parse(&c, "key", "enable", "9223372036854775807", NULL), 0);
    CHECK(c.key_id == LLONG_MAX);
    CHECK_INT(parse(&c, "key", "enable", "9223372036854775808", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "disable", "0", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "disable", "-3", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "disable", "12x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "disable", "", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "disable", "sk-sb-abc", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "set-group", "7", "gold", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_KEY_SET_GROUP);
    CHECK_INT(c.key_id, 7);
    CHECK_STR(c.arg[1], "gold");
    CHECK_INT(parse(&c, "key", "set-group", "7", NULL), -EINVAL);
    CHECK_INT(parse(&c, "key", "set-group", "x", "gold", NULL), -EINVAL);
}

static void test_models(void)
{
    struct sb_cli c;
    CHECK_INT(parse(&c, "model", "add", "emu-chat", "--provider", "openai-chat", "--base-url",
                    "http://127.0.0.1:18080/v1", NULL),
              0);
    CHECK_INT(c.cmd, SB_CLI_MODEL_ADD);
    CHECK_STR(c.upstream_model, "emu-chat"); /* defaults to the id */
    CHECK(c.credential_ref == NULL);
    CHECK_INT(c.context_length, 0);

    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "anthropic", "--base-url", "https://api.example.com",
                    "--upstream-model", "claude-x@2024", "--credential-ref", "ANTHROPIC_API_KEY", "--context-length",
                    "200000", "--max-output-tokens", "8192", "--timeout-ms", "120000", "--capabilities",
                    "{\"tools\": true, \"vision\": false}", NULL),
              0);
    CHECK_STR(c.upstream_model, "claude-x@2024");
    CHECK_STR(c.credential_ref, "ANTHROPIC_API_KEY");
    CHECK_INT(c.context_length, 200000);
    CHECK_INT(c.max_output_tokens, 8192);
    CHECK_INT(c.timeout_ms, 120000);

    CHECK_INT(parse(&c, "model", "add", "m", "--base-url", "http://x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "openai", "--base-url", "http://x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "ftp://x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://a b", NULL), -EINVAL);
    CHECK_INT(
        parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--context-length", "0", NULL),
        -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--timeout-ms",
                    "2147483648", NULL),
              -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--max-output-tokens",
                    "10k", NULL),
              -EINVAL);
    CHECK_INT(
        parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--capabilities", "[1]", NULL),
        -EINVAL);
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--capabilities",
                    "{\"a\":1,\"a\":2}", NULL),
              -EINVAL);
    CHECK_INT(
        parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--capabilities", "{", NULL),
        -EINVAL);

    /* A pasted secret is rejected, and the error does not echo it. */
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--credential-ref",
                    "sk-live-SECRETSECRET", NULL),
              -EINVAL);
    CHECK(strstr(err, "SECRETSECRET") == NULL);
    CHECK(strstr(err, "--credential-ref") != NULL);

    CHECK_INT(parse(&c, "model", "set", "m", NULL), -EINVAL);
    CHECK(strstr(err, "nothing to change") != NULL);
    CHECK_INT(parse(&c, "model", "set", "m", "--timeout-ms", "5000", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_MODEL_SET);
    CHECK_INT(c.timeout_ms, 5000);
    CHECK(c.provider == NULL && c.base_url == NULL && c.upstream_model == NULL);
    CHECK_INT(parse(&c, "model", "set", "m", "--credential-ref", "", NULL), 0); /* clears it */
    CHECK_STR(c.credential_ref, "");
    CHECK_INT(parse(&c, "model", "set", "m", "--if-not-exists", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "disable", "openai/gpt-4o", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_MODEL_DISABLE);
    CHECK_INT(parse(&c, "model", "enable", "*", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "list", NULL), 0);
}

static void test_validators(void)
{
    long long v = 0;
    CHECK_INT(sb_cli_parse_int("5", 1, 10, &v), 0);
    CHECK_INT(v, 5);
    CHECK_INT(sb_cli_parse_int("-5", -10, 10, &v), 0);
    CHECK_INT(v, -5);
    CHECK_INT(sb_cli_parse_int("11", 1, 10, &v), -ERANGE);
    CHECK_INT(sb_cli_parse_int("0", 1, 10, &v), -ERANGE);
    CHECK_INT(sb_cli_parse_int(" 5", 1, 10, &v), -EINVAL);
    CHECK_INT(sb_cli_parse_int("+5", 1, 10, &v), -EINVAL);
    CHECK_INT(sb_cli_parse_int("5 ", 1, 10, &v), -EINVAL);
    CHECK_INT(sb_cli_parse_int("", 1, 10, &v), -EINVAL);
    CHECK_INT(sb_cli_parse_int("0x10", 0, 100, &v), -EINVAL);
    CHECK_INT(sb_cli_parse_int("99999999999999999999", 0, LLONG_MAX, &v), -ERANGE);

    CHECK(sb_cli_valid_name("dev"));
    CHECK(sb_cli_valid_name("team.a_b-c@x:y+z"));
    CHECK(!sb_cli_valid_name(""));
    CHECK(!sb_cli_valid_name("-dev"));
    CHECK(!sb_cli_valid_name("a/b"));
    CHECK(!sb_cli_valid_name("caf\xc3\xa9"));
    char longname[SB_CLI_NAME_MAX + 2];
    memset(longname, 'a', sizeof longname - 1);
    longname[sizeof longname - 1] = '\0';
    CHECK(!sb_cli_valid_name(longname));
    longname[SB_CLI_NAME_MAX] = '\0';
    CHECK(sb_cli_valid_name(longname));

    CHECK(sb_cli_valid_model_id("openai/gpt-4o-mini"));
    CHECK(!sb_cli_valid_model_id("*"));
    CHECK(sb_cli_valid_upstream_model("models/gemini-1.5-pro"));
    CHECK(!sb_cli_valid_upstream_model("a b"));
    CHECK(sb_cli_valid_label(""));
    CHECK(sb_cli_valid_label("caf\xc3\xa9 key"));
    CHECK(!sb_cli_valid_label("a\nb"));
    CHECK(sb_cli_valid_env_name("SB_EMU_UPSTREAM_KEY"));
    CHECK(sb_cli_valid_env_name("_x1"));
    CHECK(!sb_cli_valid_env_name("1X"));
    CHECK(!sb_cli_valid_env_name("A-B"));
    CHECK(sb_cli_valid_url("http://127.0.0.1:18080/v1"));
    CHECK(sb_cli_valid_url("https://api.openai.com/v1"));
    CHECK(!sb_cli_valid_url("https:///v1"));
    CHECK(!sb_cli_valid_url("127.0.0.1:18080"));
    CHECK(sb_cli_valid_provider("openai-responses"));
    CHECK(!sb_cli_valid_provider("OpenAI-chat"));
    CHECK(sb_cli_valid_json_object("{}"));
    CHECK(!sb_cli_valid_json_object("null"));
}

static void test_prompts_cli(void)
{
    struct sb_cli c;
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "support bot", "--instructions",
                    "Help {{customer}}.", NULL),
              0);
    CHECK_INT(c.cmd, SB_CLI_PROMPT_CREATE);
    CHECK_STR(c.account, "acme");
    CHECK_STR(c.name, "support bot");
    CHECK_STR(c.instructions, "Help {{customer}}.");
    CHECK(c.body == NULL && c.body_file == NULL && !c.if_not_exists);
    CHECK_INT(
        parse(&c, "prompt", "create", "--account", "acme", "--name", "n", "--body-file", "-", "--if-not-exists", NULL),
        0);
    CHECK_STR(c.body_file, "-");
    CHECK(c.if_not_exists);
    CHECK_INT(parse(&c, "prompt", "create", "--name", "n", "--instructions", "x", NULL), -EINVAL);
    CHECK(strstr(err, "--account") != NULL);
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--instructions", "x", NULL), -EINVAL);
    CHECK(strstr(err, "--name") != NULL);
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "", "--instructions", "x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "n", NULL), -EINVAL);
    CHECK(strstr(err, "exactly one of") != NULL);
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "n", "--instructions", "x", "--body",
                    "{\"instructions\":\"y\"}", NULL),
              -EINVAL);
    CHECK(strstr(err, "exactly one of") != NULL);
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "n", "--instructions", "caf\xe9", NULL),
              -EINVAL); /* Latin-1, not UTF-8 */
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "n", "--body", "{\"instructions\":1}", NULL),
              -EINVAL);
    CHECK(strstr(err, "--body:") != NULL && strstr(err, "must be a string") != NULL);
    CHECK_INT(parse(&c, "prompt", "create", "--account", "acme", "--name", "n", "--version", "2", "--instructions", "x",
                    NULL),
              -EINVAL); /* --version is show's */

    CHECK_INT(parse(&c, "prompt", "version", "pmpt_0123abcd", "--body",
                    "{\"input\":[{\"role\":\"user\",\"content\":\"{{q}}\"}]}", "--no-set-current", NULL),
              0);
    CHECK_INT(c.cmd, SB_CLI_PROMPT_VERSION);
    CHECK_STR(c.arg[0], "pmpt_0123abcd");
    CHECK(c.no_set_current);
    CHECK_INT(parse(&c, "prompt", "version", "support", "--instructions", "x", NULL), -EINVAL);
    CHECK(strstr(err, "invalid prompt id") != NULL);
    CHECK_INT(parse(&c, "prompt", "version", "pmpt_x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "prompt", "version", "pmpt_x", "--instructions", "x", "--if-not-exists", NULL), -EINVAL);

    CHECK_INT(parse(&c, "prompt", "set-current", "pmpt_x", "3", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_PROMPT_SET_CURRENT);
    CHECK_INT(c.version, 3);
    CHECK_INT(parse(&c, "prompt", "set-current", "pmpt_x", "0", NULL), -EINVAL);
    CHECK_INT(parse(&c, "prompt", "set-current", "pmpt_x", "2x", NULL), -EINVAL);
    CHECK_INT(parse(&c, "prompt", "set-current", "pmpt_x", NULL), -EINVAL);

    CHECK_INT(parse(&c, "prompt", "show", "pmpt_x", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_PROMPT_SHOW);
    CHECK_INT(c.version, 0);
    CHECK_INT(parse(&c, "prompt", "show", "pmpt_x", "--version=4", NULL), 0);
    CHECK_INT(c.version, 4);
    CHECK_INT(parse(&c, "prompt", "show", "pmpt_x", "--version", "0", NULL), -EINVAL);
    CHECK_INT(parse(&c, "prompt", "show", "pmpt_", NULL), -EINVAL);
    CHECK_INT(parse(&c, "prompt", "list", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_PROMPT_LIST);
    CHECK_INT(parse(&c, "prompt", "list", "--account", "acme", NULL), 0);
    CHECK_STR(c.account, "acme");

    CHECK(sb_cli_valid_prompt_id("pmpt_0123456789abcdef0123456789abcdef"));
    CHECK(!sb_cli_valid_prompt_id("pmpt_a b"));
    CHECK(!sb_cli_valid_prompt_id("resp_abc"));

    /* The body checker, directly. */
    static const char *const good[] = {
        "{\"instructions\":\"Hi {{name}}\"}",
        "{\"input\":[]}",
        "{\"instructions\":\"\",\"input\":[{\"role\":\"user\",\"content\":[{\"type\":\"input_text\",\"text\":\"{{q}}\"}"
        "]}]}",
        "{\"input\":[{\"type\":\"message\",\"role\":\"user\",\"content\":\"n=123456789012345678901234567890\"}],"
        "\"instructions\":\"x\"}",
        "{\"input\":[{\"n\":123456789012345678901234567890}]}", /* beyond json_int_t, fine for jsonb */
    };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        CHECK_INT(sb_cli_check_prompt_body(good[i], strlen(good[i]), err, sizeof err), 0);
    static const struct {
        const char *json, *reason;
    } bad[] = {
        {"", "not valid JSON"},
        {"{\"instructions\":", "not valid JSON"},
        {"[]", "expected a JSON object"},
        {"\"text\"", "not valid JSON"},
        {"{}", "needs"},
        {"{\"instructions\":\"a\",\"instructions\":\"b\"}", "not valid JSON"},
        {"{\"instructions\":null}", "must be a string"},
        {"{\"input\":\"hello\"}", "must be an array"},
        {"{\"input\":[{\"role\":\"user\"},\"x\"]}", "\"input\"[1]"},
        {"{\"instructions\":\"x\",\"model\":\"gpt\"}", "unknown key \"model\""},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(sb_cli_check_prompt_body(bad[i].json, strlen(bad[i].json), err, sizeof err), -EINVAL);
        CHECK(strstr(err, bad[i].reason) != NULL);
    }
    static const char nul[] = "{\"instructions\":\"a\0b\"}";
    CHECK_INT(sb_cli_check_prompt_body(nul, sizeof nul - 1, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "NUL") != NULL);
    size_t biglen = SB_CLI_BODY_MAX + 1;
    char *big = malloc(biglen);
    CHECK(big != NULL);
    if (big) {
        memset(big, ' ', biglen);
        memcpy(big, "{\"instructions\":\"x\"}", 20);
        CHECK_INT(sb_cli_check_prompt_body(big, biglen, err, sizeof err), -EINVAL);
        CHECK(strstr(err, "larger than") != NULL);
        CHECK_INT(sb_cli_check_prompt_body(big, biglen - 1, err, sizeof err), 0);
        free(big);
    }

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sb_cli_usage(f, NULL, NULL);
    fclose(f);
    CHECK(strstr(buf, "sbctl prompt create --account NAME --name NAME") != NULL);
    CHECK(strstr(buf, "sbctl prompt version PROMPT_ID") != NULL);
    CHECK(strstr(buf, "sbctl prompt set-current PROMPT_ID VERSION") != NULL);
    CHECK(strstr(buf, "sbctl prompt list [--account NAME]") != NULL);
    CHECK(strstr(buf, "sbctl prompt show PROMPT_ID [--version N]") != NULL);
    CHECK(strstr(buf, "{{name}}") != NULL);
    free(buf);
    f = open_memstream(&buf, &len);
    sb_cli_usage(f, "prompt", "version");
    fclose(f);
    CHECK(strstr(buf, "--no-set-current") != NULL);
    CHECK(strstr(buf, "\"instructions\"") != NULL); /* the body format note */
    CHECK(strstr(buf, "prompt create") == NULL);
    free(buf);
    CHECK_INT(parse(&c, "prompt", "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_STR(c.help_group, "prompt");
}

static void test_limits_cli(void)
{
    struct sb_cli c;
    CHECK_INT(parse(&c, "limits", "set", "--key", "7", "--rpm", "60", "--tpm", "none", "--concurrency", "4", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_LIMITS_SET);
    CHECK_INT(c.key_id, 7);
    CHECK_INT(c.rpm, 60);
    CHECK_INT(c.tpm, SB_CLI_LIMIT_NONE);
    CHECK_INT(c.concurrency, 4);
    CHECK_INT(c.given, SB_OPT_KEY | SB_OPT_RPM | SB_OPT_TPM | SB_OPT_CONCURRENCY);
    CHECK_INT(parse(&c, "limits", "set", "--group=gold", "--rpm=2147483647", NULL), 0);
    CHECK_STR(c.group, "gold");
    CHECK_INT(c.rpm, 2147483647);
    CHECK_INT(c.given, SB_OPT_GROUP | SB_OPT_RPM);
    CHECK_INT(parse(&c, "limits", "set", "--group", "gold", "--tpm", "9223372036854775807", NULL), 0);
    CHECK(c.tpm == LLONG_MAX);
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", "--quota-tokens", "0", NULL), 0); /* quota may be 0 */
    CHECK_STR(c.account, "acme");
    CHECK_INT(c.quota_tokens, 0);
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", "--quota-tokens", "none", NULL), 0);
    CHECK_INT(c.quota_tokens, SB_CLI_LIMIT_NONE);

    /* Scope: exactly one; limits: at least one, and only the scope's. */
    CHECK_INT(parse(&c, "limits", "set", "--rpm", "5", NULL), -EINVAL);
    CHECK(strstr(err, "exactly one of --key ID, --group NAME, --account NAME") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "1", "--group", "gold", "--rpm", "5", NULL), -EINVAL);
    CHECK(strstr(err, "exactly one of") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--group", "gold", "--account", "acme", "--quota-tokens", "5", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "1", NULL), -EINVAL);
    CHECK(strstr(err, "nothing to set") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", NULL), -EINVAL);
    CHECK(strstr(err, "nothing to set") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", "--rpm", "5", NULL), -EINVAL);
    CHECK(strstr(err, "not an account") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", "--quota-tokens", "5", "--concurrency", "2", NULL),
              -EINVAL);
    CHECK(strstr(err, "not an account") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "1", "--quota-tokens", "5", NULL), -EINVAL);
    CHECK(strstr(err, "--quota-tokens applies to an account") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--group", "gold", "--rpm", "5", "--quota-tokens", "5", NULL), -EINVAL);
    CHECK(strstr(err, "--quota-tokens applies to an account") != NULL);

    /* Values: positive integers (quota: >= 0) within the column's type, or none. */
    static const char *const bad[][2] = {
        {"--rpm", "0"},
        {"--rpm", "-1"},
        {"--rpm", "2147483648"},
        {"--rpm", "1.5"},
        {"--rpm", "ten"},
        {"--rpm", ""},
        {"--rpm", "None"},
        {"--tpm", "0"},
        {"--tpm", "9223372036854775808"},
        {"--concurrency", "0"},
        {"--concurrency", "2147483648"},
        {"--concurrency", "+3"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_INT(parse(&c, "limits", "set", "--key", "1", bad[i][0], bad[i][1], NULL), -EINVAL);
        CHECK(strstr(err, bad[i][0]) != NULL && strstr(err, "or none") != NULL);
    }
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", "--quota-tokens", "-1", NULL), -EINVAL);
    CHECK(strstr(err, "between 0 and") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--account", "acme", "--quota-tokens", "1e6", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "0", "--rpm", "5", NULL), -EINVAL);
    CHECK(strstr(err, "--key: invalid key id") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "sk-sb-abc", "--rpm", "5", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "set", "--group", "bad name", "--rpm", "5", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "1", "--rpm", "5", "--rpm", "6", NULL), -EINVAL);
    CHECK(strstr(err, "--rpm given twice") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "1", "--rpm", NULL), -EINVAL);
    CHECK(strstr(err, "--rpm needs a value") != NULL);
    CHECK_INT(parse(&c, "limits", "set", "7", "--rpm", "5", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "set", "--key", "1", "--rpm", "5", "--fallbacks", "a", NULL), -EINVAL);

    CHECK_INT(parse(&c, "limits", "show", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_LIMITS_SHOW);
    CHECK(c.account == NULL);
    CHECK_INT(parse(&c, "limits", "show", "--account", "acme", NULL), 0);
    CHECK_STR(c.account, "acme");
    CHECK_INT(parse(&c, "limits", "show", "--key", "1", NULL), -EINVAL);
    CHECK(strstr(err, "unknown option '--key'") != NULL);
    CHECK_INT(parse(&c, "limits", "show", "acme", NULL), -EINVAL);

    CHECK_INT(parse(&c, "limits", "reset-usage", "--account", "acme", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_LIMITS_RESET_USAGE);
    CHECK_STR(c.account, "acme");
    CHECK_INT(parse(&c, "limits", "reset-usage", NULL), -EINVAL);
    CHECK(strstr(err, "--account NAME is required") != NULL);
    CHECK_INT(parse(&c, "limits", "reset-usage", "--account", "acme", "--quota-tokens", "0", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "reset", NULL), -EINVAL);
    CHECK_INT(parse(&c, "limits", "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_STR(c.help_group, "limits");
    CHECK_INT(parse(&c, "limits", "set", "--help", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_HELP);
    CHECK_STR(c.help_verb, "set");

    /* model fallback: ID then up to SB_CLI_FALLBACK_MAX fallbacks, in order. */
    CHECK_INT(parse(&c, "model", "fallback", "gpt-4o", NULL), 0);
    CHECK_INT(c.cmd, SB_CLI_MODEL_FALLBACK);
    CHECK_INT(c.nargs, 1);
    CHECK_INT(parse(&c, "model", "fallback", "gpt-4o", "claude/sonnet", "gemini-pro", NULL), 0);
    CHECK_INT(c.nargs, 3);
    CHECK_STR(c.arg[1], "claude/sonnet");
    CHECK_STR(c.arg[2], "gemini-pro");
    CHECK_INT(parse(&c, "model", "fallback", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "fallback", "gpt-4o", "a b", NULL), -EINVAL);
    CHECK(strstr(err, "invalid fallback model id 'a b'") != NULL);
    CHECK_INT(parse(&c, "model", "fallback", "gpt-4o", "*", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "fallback", "*", "a", NULL), -EINVAL);
    CHECK_INT(parse(&c, "model", "fallback", "gpt-4o", "--fallbacks", "a", NULL), -EINVAL);
    CHECK(strstr(err, "unknown option '--fallbacks'") != NULL);
    CHECK_INT(parse(&c, "model", "fallback", "m", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11",
                    "a12", "a13", "a14", "a15", "a16", NULL),
              0);
    CHECK_INT(c.nargs, 1 + SB_CLI_FALLBACK_MAX);
    CHECK_INT(parse(&c, "model", "fallback", "m", "a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9", "a10", "a11",
                    "a12", "a13", "a14", "a15", "a16", "a17", NULL),
              -EINVAL);
    CHECK(strstr(err, "at most 16 fallbacks") != NULL);

    /* --fallbacks on add and set: ids separated by commas; "" clears. */
    CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", "a,b/c", NULL), 0);
    CHECK_STR(c.fallbacks, "a,b/c");
    CHECK_INT(c.given, SB_OPT_FALLBACKS);
    CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", "", NULL), 0);
    CHECK_STR(c.fallbacks, "");
    CHECK_INT(parse(&c, "model", "add", "m", "--provider", "gemini", "--base-url", "http://x", "--fallbacks=a", NULL),
              0);
    CHECK_STR(c.fallbacks, "a");
    CHECK_INT(parse(&c, "model", "set", "m", "--timeout-ms", "5", NULL), 0);
    CHECK(c.fallbacks == NULL);
    static const char *const badlists[] = {",", "a,", ",a", "a,,b", "a, b", "a,*", "a;b"};
    for (size_t i = 0; i < sizeof badlists / sizeof badlists[0]; i++) {
        CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", badlists[i], NULL), -EINVAL);
        CHECK(strstr(err, "--fallbacks") != NULL);
    }
    char longid[SB_CLI_MODEL_MAX + 2];
    memset(longid, 'm', sizeof longid - 1);
    longid[sizeof longid - 1] = '\0';
    CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", longid, NULL), -EINVAL);
    longid[SB_CLI_MODEL_MAX] = '\0';
    CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", longid, NULL), 0);
    CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", "a,b,c,d,e,f,g,h,i,j,k,l,m2,n,o,p", NULL), 0);
    CHECK_INT(parse(&c, "model", "set", "m", "--fallbacks", "a,b,c,d,e,f,g,h,i,j,k,l,m2,n,o,p,q", NULL), -EINVAL);
    CHECK(strstr(err, "at most 16") != NULL);

    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sb_cli_usage(f, NULL, NULL);
    fclose(f);
    CHECK(strstr(buf, "sbctl limits set (--key ID | --group NAME) [--rpm N] [--tpm N] [--concurrency N]") != NULL);
    CHECK(strstr(buf, "sbctl limits set --account NAME --quota-tokens N") != NULL);
    CHECK(strstr(buf, "sbctl limits show [--account NAME]") != NULL);
    CHECK(strstr(buf, "sbctl limits reset-usage --account NAME") != NULL);
    CHECK(strstr(buf, "sbctl model fallback ID [FALLBACK ...]") != NULL);
    CHECK(strstr(buf, "[--fallbacks ID,ID...]") != NULL);
    free(buf);
    f = open_memstream(&buf, &len);
    sb_cli_usage(f, "limits", "reset-usage");
    fclose(f);
    CHECK(strstr(buf, "sbctl limits reset-usage --account NAME") != NULL);
    CHECK(strstr(buf, "limits set") == NULL);
    CHECK(strstr(buf, "shared by all the group's") != NULL); /* the note on how limits combine */
    free(buf);
}

static void touch(const char *dir, const char *name)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f)
        fclose(f);
}

static void test_migrations(void)
{
    int v = -1;
    CHECK_INT(sb_migrate_parse_name("001_init.sql", &v), 0);
    CHECK_INT(v, 1);
    CHECK_INT(sb_migrate_parse_name("12_x.sql", &v), 0);
    CHECK_INT(v, 12);
    CHECK_INT(sb_migrate_parse_name("001_.sql", &v), -EINVAL);
    CHECK_INT(sb_migrate_parse_name("001init.sql", &v), -EINVAL);
    CHECK_INT(sb_migrate_parse_name("_init.sql", &v), -EINVAL);
    CHECK_INT(sb_migrate_parse_name("001_init.sql~", &v), -EINVAL);
    CHECK_INT(sb_migrate_parse_name("001_init.SQL", &v), -EINVAL);
    CHECK_INT(sb_migrate_parse_name("README", &v), -EINVAL);
    CHECK_INT(sb_migrate_parse_name("1234567890_big.sql", &v), -EINVAL);

    char tmpl[] = "/tmp/test_sbctl.XXXXXX";
    char *dir = mkdtemp(tmpl);
    CHECK(dir != NULL);
    if (!dir)
        return;
    touch(dir, "010_later.sql");
    touch(dir, "002_second.sql");
    touch(dir, "001_init.sql");
    touch(dir, "README.md");
    touch(dir, "notes.sql");
    struct sb_migration *m = NULL;
    size_t n = 0;
    CHECK_INT(sb_migrate_scan(dir, &m, &n), 0);
    CHECK_INT(n, 3);
    if (n == 3) {
        CHECK_INT(m[0].version, 1);
        CHECK_STR(m[0].file, "001_init.sql");
        CHECK_INT(m[1].version, 2);
        CHECK_INT(m[2].version, 10);
        CHECK(strstr(m[2].path, "/010_later.sql") != NULL);
    }
    sb_migrate_free(&m, n);
    CHECK(m == NULL);

    touch(dir, "2_duplicate.sql"); /* same version as 002_second.sql */
    CHECK_INT(sb_migrate_scan(dir, &m, &n), -EEXIST);
    CHECK(m == NULL);

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK_INT(system(cmd), 0);
    CHECK(sb_migrate_scan("/nonexistent/schema", &m, &n) < 0);
}

static bool is_prompt_id_line(const char *s)
{
    if (strncmp(s, "pmpt_", 5) != 0 || strlen(s) != 5 + 32 + 1 || s[37] != '\n')
        return false;
    for (int i = 5; i < 37; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

/* The line of a "prompt list" output that starts with id, split on spaces
 * into at most n fields; returns how many. Fields point into a static copy. */
static int list_row(const char *listing, const char *id, char **field, int n)
{
    static char line[1024];
    const char *p = listing ? strstr(listing, id) : NULL;
    if (!p || (p != listing && p[-1] != '\n'))
        return 0;
    size_t len = strcspn(p, "\n");
    if (len >= sizeof line)
        return 0;
    memcpy(line, p, len);
    line[len] = '\0';
    int k = 0;
    for (char *save = NULL, *t = strtok_r(line, " ", &save); t && k < n; t = strtok_r(NULL, " ", &save))
        field[k++] = t;
    return k;
}

/* The "instructions" of a JSON body text, or NULL. */
static char *body_instructions(const char *text)
{
    json_t *v = json_loads(text ? text : "", 0, NULL);
    const char *s = json_string_value(json_object_get(v, "instructions"));
    char *r = s ? strdup(s) : NULL;
    json_decref(v);
    return r;
}

#define SELECT_CURRENT "SELECT current_version::text FROM prompts WHERE id = $1"
#define COUNT_VERSIONS "SELECT count(*)::text FROM prompt_versions WHERE prompt_id = $1"

static void test_prompts_db(void)
{
    char *out = NULL, *e = NULL;

    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "acme"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "globex"), 0);

    /* create: stdout is the id alone. */
    static const char instr1[] = "You help {{customer_name}} with {{topic}}. Be brief.";
    CHECK_INT(
        SBCTL(&out, &e, "prompt", "create", "--account", "acme", "--name", "support bot", "--instructions", instr1), 0);
    CHECK(is_prompt_id_line(out));
    char id[64] = "";
    if (out && strlen(out) < sizeof id)
        snprintf(id, sizeof id, "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    free(e);
    CHECK_QUERY(SELECT_CURRENT, id, "1");
    CHECK_QUERY(COUNT_VERSIONS, id, "1");

    /* show prints the body, placeholders intact. */
    CHECK_INT(SBCTL(&out, NULL, "prompt", "show", id), 0);
    char *ins = body_instructions(out);
    CHECK_STR(ins, instr1);
    free(ins);
    free(out);

    /* version: max + 1, and current. */
    static const char body2[] = "{\"instructions\": \"Answer as {{persona}}.\", \"input\": [{\"role\": \"user\", "
                                "\"content\": [{\"type\": \"input_text\", \"text\": \"Question: {{question}}\"}]}]}";
    CHECK_INT(SBCTL(&out, NULL, "prompt", "version", id, "--body", body2), 0);
    CHECK_STR(out, "2\n");
    free(out);
    CHECK_QUERY(SELECT_CURRENT, id, "2");
    CHECK_INT(SBCTL(&out, NULL, "prompt", "show", id), 0);
    {
        json_t *want = json_loads(body2, 0, NULL), *got = json_loads(out ? out : "", 0, NULL);
        CHECK(want && got && json_equal(want, got));
        json_decref(want);
        json_decref(got);
    }
    CHECK(out && strstr(out, "Question: {{question}}") != NULL);
    free(out);

    /* --no-set-current adds a version without switching to it. */
    CHECK_INT(SBCTL(&out, NULL, "prompt", "version", id, "--instructions", "v3 {{x}}", "--no-set-current"), 0);
    CHECK_STR(out, "3\n");
    free(out);
    CHECK_QUERY(SELECT_CURRENT, id, "2");
    CHECK_INT(SBCTL(&out, NULL, "prompt", "show", id, "--version", "3"), 0);
    ins = body_instructions(out);
    CHECK_STR(ins, "v3 {{x}}");
    free(ins);
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "prompt", "show", id, "--version", "1"), 0);
    ins = body_instructions(out);
    CHECK_STR(ins, instr1);
    free(ins);
    free(out);
    CHECK_INT(SBCTL(&out, &e, "prompt", "show", id, "--version", "9"), 1);
    CHECK_STR(out, "");
    CHECK(e && strstr(e, "no version 9") != NULL);
    free(out);
    free(e);

    /* set-current: to an existing version, not to a missing one. */
    CHECK_INT(SBCTL(&out, NULL, "prompt", "set-current", id, "3"), 0);
    CHECK(out && strstr(out, "version 3") != NULL);
    free(out);
    CHECK_QUERY(SELECT_CURRENT, id, "3");
    CHECK_INT(SBCTL(NULL, &e, "prompt", "set-current", id, "4"), 1);
    CHECK(e && strstr(e, "no version 4") != NULL && strstr(e, "latest is 3") != NULL);
    free(e);
    CHECK_QUERY(SELECT_CURRENT, id, "3");
    CHECK_INT(SBCTL(NULL, &e, "prompt", "set-current", "pmpt_00000000000000000000000000000000", "1"), 1);
    CHECK(e && strstr(e, "does not exist") != NULL);
    free(e);
    CHECK_INT(SBCTL(NULL, &e, "prompt", "version", "pmpt_00000000000000000000000000000000", "--instructions", "x"), 1);
    CHECK(e && strstr(e, "does not exist") != NULL);
    free(e);
    CHECK_INT(SBCTL(NULL, &e, "prompt", "show", "pmpt_00000000000000000000000000000000"), 1);
    CHECK(e && strstr(e, "does not exist") != NULL);
    free(e);

    /* Bad bodies: nonzero exit, nothing written. */
    CHECK_QUERY("SELECT count(*)::text FROM prompts", NULL, "1");
    CHECK_INT(SBCTL(&out, &e, "prompt", "create", "--account", "acme", "--name", "bad", "--body", "{\"instructions\":"),
              2);
    CHECK_STR(out, "");
    CHECK(e && strstr(e, "not valid JSON") != NULL);
    free(out);
    free(e);
    CHECK_INT(SBCTL(NULL, &e, "prompt", "create", "--account", "acme", "--name", "bad", "--body",
                    "{\"instructions\":\"x\",\"temperature\":0.2}"),
              2);
    CHECK(e && strstr(e, "unknown key \"temperature\"") != NULL);
    free(e);
    char bodyfile[] = "/tmp/test_sbctl_body.XXXXXX";
    int fd = mkstemp(bodyfile);
    CHECK(fd >= 0);
    if (fd >= 0) {
        static const char filebody[] = "{\"input\": [{\"role\": \"user\", \"content\": \"{{q}}\"}], \"tools\": []}\n";
        CHECK_INT(write(fd, filebody, sizeof filebody - 1), sizeof filebody - 1);
        close(fd);
        CHECK_INT(SBCTL(&out, &e, "prompt", "create", "--account", "acme", "--name", "bad", "--body-file", bodyfile),
                  1);
        CHECK_STR(out, "");
        CHECK(e && strstr(e, "unknown key \"tools\"") != NULL);
        free(out);
        free(e);
        CHECK_INT(SBCTL(NULL, &e, "prompt", "version", id, "--body-file", bodyfile), 1);
        free(e);
        unlink(bodyfile);
    }
    CHECK_INT(SBCTL(NULL, &e, "prompt", "create", "--account", "acme", "--name", "bad", "--body-file",
                    "/nonexistent/body.json"),
              1);
    CHECK(e && strstr(e, "/nonexistent/body.json") != NULL);
    free(e);
    CHECK_INT(SBCTL(NULL, NULL, "prompt", "version", id, "--body", "{\"input\":{}}"), 2);
    CHECK_QUERY("SELECT count(*)::text FROM prompts", NULL, "1");
    CHECK_QUERY(COUNT_VERSIONS, id, "3");
    CHECK_QUERY(SELECT_CURRENT, id, "3");

    /* An unknown account. */
    CHECK_INT(SBCTL(&out, &e, "prompt", "create", "--account", "nobody", "--name", "x", "--instructions", "x"), 1);
    CHECK_STR(out, "");
    CHECK(e && strstr(e, "account 'nobody' does not exist") != NULL);
    free(out);
    free(e);
    CHECK_QUERY("SELECT count(*)::text FROM prompts", NULL, "1");

    /* A duplicate name fails; with --if-not-exists it prints the existing id
     * and changes nothing. Names are per account. */
    CHECK_INT(SBCTL(&out, &e, "prompt", "create", "--account", "acme", "--name", "support bot", "--instructions", "y"),
              1);
    CHECK_STR(out, "");
    CHECK(e && strstr(e, "already exists") != NULL);
    free(out);
    free(e);
    char idline[80];
    snprintf(idline, sizeof idline, "%s\n", id);
    CHECK_INT(SBCTL(&out, NULL, "prompt", "create", "--account", "acme", "--name", "support bot", "--instructions", "y",
                    "--if-not-exists"),
              0);
    CHECK_STR(out, idline);
    free(out);
    CHECK_QUERY(COUNT_VERSIONS, id, "3");
    CHECK_QUERY(SELECT_CURRENT, id, "3");
    /* Another account, the same name, the body from stdin. */
    CHECK_INT(sbctl_in("{\"input\": [{\"role\": \"developer\", \"content\": \"Be {{tone}}.\"}]}", &out, NULL, "prompt",
                       "create", "--account", "globex", "--name", "support bot", "--body-file", "-", NULL),
              0);
    CHECK(is_prompt_id_line(out));
    CHECK(out && strcmp(out, idline) != 0);
    char id2[64] = "";
    if (out && strlen(out) < sizeof id2)
        snprintf(id2, sizeof id2, "%.*s", (int)strcspn(out, "\n"), out);
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "prompt", "show", id2), 0);
    CHECK(out && strstr(out, "Be {{tone}}.") != NULL);
    free(out);

    /* Concurrent "version" runs each get their own number. */
    enum { NCONC = 8 };
    struct proc procs[NCONC];
    bool started[NCONC];
    for (int i = 0; i < NCONC; i++) {
        char *argv[] = {SB_SBCTL_BIN, "prompt", "version", id, "--instructions", "concurrent", NULL};
        started[i] = proc_start(&procs[i], argv, NULL, false) == 0;
        CHECK(started[i]);
    }
    bool seen[NCONC] = {false};
    for (int i = 0; i < NCONC; i++) {
        if (!started[i])
            continue;
        char *o = NULL, *pe = NULL;
        CHECK_INT(proc_finish(&procs[i], &o, &pe), 0);
        long v = o ? strtol(o, NULL, 10) : 0;
        CHECK(v >= 4 && v < 4 + NCONC && !seen[v - 4]);
        if (v >= 4 && v < 4 + NCONC)
            seen[v - 4] = true;
        if (pe && *pe)
            fprintf(stderr, "concurrent prompt version: %s", pe);
        free(o);
        free(pe);
    }
    CHECK_QUERY(COUNT_VERSIONS, id, "11");
    CHECK_QUERY("SELECT max(version)::text FROM prompt_versions WHERE prompt_id = $1", id, "11");
    CHECK_INT(SBCTL(NULL, NULL, "prompt", "set-current", id, "2"), 0);

    /* list: id, account, current version, number of versions, created, name. */
    CHECK_INT(SBCTL(&out, NULL, "prompt", "list"), 0);
    CHECK(out && !strncmp(out, "id ", 3) && strstr(out, "versions") != NULL);
    char *f[8];
    int nf = list_row(out, id, f, 8);
    CHECK_INT(nf, 7); /* the name "support bot" is two words */
    if (nf == 7) {
        CHECK_STR(f[1], "acme");
        CHECK_STR(f[2], "2");
        CHECK_STR(f[3], "11");
        CHECK_STR(f[5], "support");
        CHECK_STR(f[6], "bot");
    }
    nf = list_row(out, id2, f, 8);
    CHECK_INT(nf, 7);
    if (nf == 7) {
        CHECK_STR(f[1], "globex");
        CHECK_STR(f[2], "1");
        CHECK_STR(f[3], "1");
    }
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "prompt", "list", "--account", "globex"), 0);
    CHECK(out && strstr(out, id2) != NULL && strstr(out, id) == NULL);
    free(out);
    CHECK_INT(SBCTL(NULL, &e, "prompt", "list", "--account", "nobody"), 1);
    CHECK(e && strstr(e, "does not exist") != NULL);
    free(e);
}

/* ---- the limits and fallback commands against the same cluster ---------- */

static void test_limits_db(void)
{
    char *out = NULL;
    char want[512];
    char k1[24], k2[24], k3[24];
    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "lim-a"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "lim-b"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "account", "create", "lim-c"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "group", "create", "gold"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "group", "create", "silver"), 0);
    new_key("lim-a", "gold", k1);
    new_key("lim-a", "silver", k2);
    new_key("lim-b", "gold", k3);
    char *p1 = query1("SELECT display_prefix FROM api_keys WHERE id = $1::bigint", k1);
    char *p3 = query1("SELECT display_prefix FROM api_keys WHERE id = $1::bigint", k3);
    char name1[128], name3[128];
    snprintf(name1, sizeof name1, "%s:%s", k1, p1 ? p1 : "?");
    snprintf(name3, sizeof name3, "%s:%s", k3, p3 ? p3 : "?");
    CHECK(exec_sql("LISTEN sb_config", 0, NULL));

    /* Nothing limited yet: the header alone. */
    CHECK_PRINTS(LIMITS_HEADER, "limits", "show");

    /* A key: the options given change, the others stay; none clears. */
    notified(NULL, true);
    snprintf(want, sizeof want, "key %s (%s) limits: rpm 60, tpm 100000, concurrency 4\n", k1, p1 ? p1 : "?");
    CHECK_PRINTS(want, "limits", "set", "--key", k1, "--rpm", "60", "--tpm", "100000", "--concurrency", "4");
    CHECK(notified("api_keys", false)); /* running frontends hear of it */
    CHECK_QUERY(KEY_LIMITS, k1, "60/100000/4");
    snprintf(want, sizeof want, "key %s (%s) limits: rpm 60, tpm none, concurrency 4\n", k1, p1 ? p1 : "?");
    CHECK_PRINTS(want, "limits", "set", "--key", k1, "--tpm", "none");
    CHECK_QUERY(KEY_LIMITS, k1, "60//4");
    snprintf(want, sizeof want, "key %s (%s) limits: rpm 30, tpm none, concurrency none\n", k1, p1 ? p1 : "?");
    CHECK_PRINTS(want, "limits", "set", "--key", k1, "--rpm", "30", "--concurrency", "none");
    CHECK_QUERY(KEY_LIMITS, k1, "30//");
    CHECK_INT(SBCTL(NULL, NULL, "limits", "set", "--key", k2, "--tpm", "9223372036854775807"), 0);
    CHECK_QUERY(KEY_LIMITS, k2, "/9223372036854775807/");
    CHECK_QUERY(KEY_LIMITS, k3, "//");

    /* A group. */
    notified(NULL, true);
    CHECK_PRINTS("group gold limits: rpm 600, tpm none, concurrency 8\n", "limits", "set", "--group", "gold", "--rpm",
                 "600", "--concurrency", "8");
    CHECK(notified("token_groups", false));
    CHECK_QUERY(GROUP_LIMITS, "gold", "600//8");
    CHECK_QUERY(GROUP_LIMITS, "silver", "//");

    /* An account's quota: 0 is a quota (nothing may run), none is no quota. */
    notified(NULL, true);
    CHECK_PRINTS("account lim-a quota: 1000 tokens (0 used, 1000 remaining)\n", "limits", "set", "--account", "lim-a",
                 "--quota-tokens", "1000");
    CHECK(notified("accounts", false));
    CHECK_QUERY(QUOTA, "lim-a", "1000");
    CHECK_PRINTS("account lim-b quota: 0 tokens (0 used, 0 remaining)\n", "limits", "set", "--account", "lim-b",
                 "--quota-tokens", "0");
    CHECK_QUERY(QUOTA, "lim-b", "0");
    CHECK_PRINTS("account lim-b quota: none (0 tokens used)\n", "limits", "set", "--account", "lim-b", "--quota-tokens",
                 "none");
    CHECK_QUERY(QUOTA, "lim-b", "");

    /* Unknown scopes: exit 1. Usage errors: exit 2. Nothing changes. */
    CHECK_FAILS(1, "key 999999 does not exist", "limits", "set", "--key", "999999", "--rpm", "5");
    CHECK_FAILS(1, "group 'nosuch' does not exist", "limits", "set", "--group", "nosuch", "--rpm", "5");
    CHECK_FAILS(1, "account 'nosuch' does not exist", "limits", "set", "--account", "nosuch", "--quota-tokens", "5");
    CHECK_FAILS(2, "nothing to set", "limits", "set", "--key", k1);
    CHECK_FAILS(2, "exactly one of", "limits", "set", "--key", k1, "--group", "gold", "--rpm", "5");
    CHECK_FAILS(2, "not an account", "limits", "set", "--account", "lim-a", "--rpm", "5");
    CHECK_FAILS(2, "--quota-tokens applies to an account", "limits", "set", "--key", k1, "--quota-tokens", "5");
    CHECK_FAILS(2, "--quota-tokens applies to an account", "limits", "set", "--group", "gold", "--quota-tokens", "5");
    CHECK_FAILS(2, "--rpm: expected an integer between 1 and", "limits", "set", "--key", k1, "--rpm", "0");
    CHECK_FAILS(2, "--concurrency: expected", "limits", "set", "--group", "gold", "--concurrency", "-2");
    CHECK_FAILS(2, "--tpm: expected", "limits", "set", "--key", k1, "--tpm", "lots");
    CHECK_FAILS(2, "--quota-tokens: expected an integer between 0 and", "limits", "set", "--account", "lim-a",
                "--quota-tokens", "-1");
    CHECK_FAILS(2, "--account NAME is required", "limits", "reset-usage");
    CHECK_QUERY(KEY_LIMITS, k1, "30//");
    CHECK_QUERY(GROUP_LIMITS, "gold", "600//8");
    CHECK_QUERY(QUOTA, "lim-a", "1000");

    /* Usage: lim-a drew 123 tokens (a landed log row), holds 50 in a running
     * request's lease; an expired lease counts for nothing. lim-b drew 7. */
    char *aa = query1("SELECT id::text FROM accounts WHERE name = $1", "lim-a");
    char *ab = query1("SELECT id::text FROM accounts WHERE name = $1", "lim-b");
    char *gg = query1("SELECT id::text FROM token_groups WHERE name = $1", "gold");
    static const char log_sql[] =
        "INSERT INTO request_log (request_id, ts, key_id, account_id, model, path, status, latency_ms, tokens_in, "
        "tokens_out) VALUES ($1, now(), $2::bigint, $3::bigint, 'm', '/v1/responses', 200, 5, $4::int, $5::int)";
    static const char lease_sql[] =
        "INSERT INTO limit_leases (request_id, key_id, group_id, account_id, estimated, tokens, expires_at) "
        "VALUES ($1, $2::bigint, $3::bigint, $4::bigint, $5::bigint, $5::bigint, now() + $6::interval)";
    const char *l1[] = {"req-1", k1, aa, "100", "23"};
    const char *l2[] = {"req-4", k3, ab, "7", "0"};
    const char *lease1[] = {"req-2", k1, gg, aa, "50", "1 hour"};
    const char *lease2[] = {"req-3", k1, gg, aa, "1000", "-1 hour"};
    CHECK(exec_sql(log_sql, 5, l1));
    CHECK(exec_sql(log_sql, 5, l2));
    CHECK(exec_sql(lease_sql, 6, lease1));
    CHECK(exec_sql(lease_sql, 6, lease2));
    CHECK_QUERY(USED, "lim-a", "123");
    CHECK_QUERY(USED, "lim-b", "7");

    /* show: accounts with a quota, then groups, then keys with a limit; the
     * quota's use from quota_remaining. k2 and silver have no limit, lim-b
     * and lim-c no quota. */
    CHECK_INT(SBCTL(NULL, NULL, "limits", "set", "--key", k2, "--tpm", "none"), 0);
    CHECK_INT(SBCTL(&out, NULL, "limits", "show"), 0);
    CHECK(out && !strncmp(out, "scope ", 6) && strstr(out, " in_flight ") != NULL);
    CHECK_STR(table_row(out, "account", "lim-a"), "account lim-a lim-a - - - 1000 123 50 827");
    CHECK_STR(table_row(out, "group", "gold"), "group gold - 600 - 8 - - - -");
    snprintf(want, sizeof want, "key %s lim-a 30 - - - - - -", name1);
    CHECK_STR(table_row(out, "key", name1), want);
    CHECK(table_aligned(out));
    {
        const char *a = out ? strstr(out, "\naccount ") : NULL, *g = out ? strstr(out, "\ngroup ") : NULL;
        const char *k = out ? strstr(out, "\nkey ") : NULL;
        CHECK(a && g && k && a < g && g < k);
        int lines = 0;
        for (const char *p = out; p && *p; p++)
            lines += *p == '\n';
        CHECK_INT(lines, 4);
    }
    free(out);

    /* --account: that account (quota or not), the limited groups its keys are
     * in, its limited keys. */
    CHECK_INT(SBCTL(NULL, NULL, "limits", "set", "--key", k3, "--rpm", "5"), 0);
    CHECK_INT(SBCTL(NULL, NULL, "limits", "set", "--group", "silver", "--concurrency", "2"), 0);
    CHECK_INT(SBCTL(&out, NULL, "limits", "show", "--account", "lim-b"), 0);
    CHECK(out && !strncmp(out, "scope ", 6));
    CHECK_STR(table_row(out, "account", "lim-b"), "account lim-b lim-b - - - - 7 0 -");
    CHECK_STR(table_row(out, "group", "gold"), "group gold - 600 - 8 - - - -");
    snprintf(want, sizeof want, "key %s lim-b 5 - - - - - -", name3);
    CHECK_STR(table_row(out, "key", name3), want);
    CHECK(strstr(out ? out : "", "lim-a") == NULL);
    CHECK(strstr(out ? out : "", "silver") == NULL);
    CHECK(table_aligned(out));
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "limits", "show", "--account", "lim-a"), 0);
    CHECK_STR(table_row(out, "account", "lim-a"), "account lim-a lim-a - - - 1000 123 50 827");
    CHECK_STR(table_row(out, "group", "silver"), "group silver - - - 2 - - - -");
    CHECK(strstr(out ? out : "", "lim-b") == NULL);
    free(out);
    CHECK_INT(SBCTL(&out, NULL, "limits", "show", "--account", "lim-c"), 0);
    CHECK_STR(out, "scope    name   account  rpm  tpm  concurrency  quota  used  in_flight  remaining\n"
                   "account  lim-c  lim-c    -    -    -            -      0     0          -\n");
    free(out);
    CHECK_FAILS(1, "account 'nosuch' does not exist", "limits", "show", "--account", "nosuch");
    /* The global listing now has silver and k3 too. */
    CHECK_INT(SBCTL(&out, NULL, "limits", "show"), 0);
    CHECK(strstr(table_row(out, "group", "silver"), " 2 ") != NULL);
    CHECK(*table_row(out, "key", name3) != '\0');
    CHECK(*table_row(out, "account", "lim-b") == '\0');
    free(out);

    /* reset-usage: the drawn tokens go to 0, the previous value is printed;
     * running requests' leases still count; other accounts are untouched. */
    CHECK_PRINTS("account lim-a usage reset to 0 tokens (was 123)\n", "limits", "reset-usage", "--account", "lim-a");
    CHECK_QUERY(USED, "lim-a", "0");
    CHECK_QUERY(USED, "lim-b", "7");
    CHECK_INT(SBCTL(&out, NULL, "limits", "show", "--account", "lim-a"), 0);
    CHECK_STR(table_row(out, "account", "lim-a"), "account lim-a lim-a - - - 1000 0 50 950");
    free(out);
    CHECK_PRINTS("account lim-a usage reset to 0 tokens (was 0)\n", "limits", "reset-usage", "--account", "lim-a");
    CHECK_PRINTS("account lim-c usage reset to 0 tokens (was 0)\n", "limits", "reset-usage", "--account", "lim-c");
    CHECK_FAILS(1, "account 'nosuch' does not exist", "limits", "reset-usage", "--account", "nosuch");
    /* Requests that land after the reset draw from 0. */
    const char *l3[] = {"req-5", k1, aa, "10", "2"};
    CHECK(exec_sql(log_sql, 5, l3));
    CHECK_QUERY(USED, "lim-a", "12");

    /* Clearing every limit of a key, or an account's quota, drops it from show. */
    snprintf(want, sizeof want, "key %s (%s) limits: rpm none, tpm none, concurrency none\n", k1, p1 ? p1 : "?");
    CHECK_PRINTS(want, "limits", "set", "--key", k1, "--rpm", "none", "--tpm", "none", "--concurrency", "none");
    CHECK_QUERY(KEY_LIMITS, k1, "//");
    CHECK_PRINTS("account lim-a quota: none (12 tokens used)\n", "limits", "set", "--account", "lim-a",
                 "--quota-tokens", "none");
    CHECK_INT(SBCTL(&out, NULL, "limits", "show"), 0);
    CHECK(*table_row(out, "key", name1) == '\0');
    CHECK(*table_row(out, "account", "lim-a") == '\0');
    CHECK(*table_row(out, "group", "gold") != '\0');
    free(out);

    CHECK(exec_sql("UNLISTEN sb_config", 0, NULL));
    free(aa);
    free(ab);
    free(gg);
    free(p1);
    free(p3);
}

#define FALLBACKS "SELECT fallbacks::text FROM models WHERE id = $1"

static void test_fallbacks_db(void)
{
    char *out = NULL, *e = NULL;
    add_model("fa");
    add_model("fb");
    add_model("fc");
    add_model("fd");
    CHECK(exec_sql("LISTEN sb_config", 0, NULL));

    /* The list, in the order given. */
    notified(NULL, true);
    CHECK_PRINTS("model fa falls back to fc,fb (in this order)\n", "model", "fallback", "fa", "fc", "fb");
    CHECK(notified("models", false));
    CHECK_QUERY(FALLBACKS, "fa", "{fc,fb}");
    CHECK_PRINTS("model fa falls back to fb,fc (in this order)\n", "model", "fallback", "fa", "fb", "fc");
    CHECK_QUERY(FALLBACKS, "fa", "{fb,fc}");

    /* model list: a fallbacks column, '-' when empty. */
    CHECK_INT(SBCTL(&out, NULL, "model", "list"), 0);
    CHECK(out && strstr(out, " enabled  fallbacks  capabilities\n") != NULL);
    CHECK_STR(table_row(out, "fa", "openai-chat"),
              "fa openai-chat fa http://127.0.0.1:9/v1 - 128000 16384 60000 true fb,fc {}");
    CHECK_STR(table_row(out, "fb", "openai-chat"),
              "fb openai-chat fb http://127.0.0.1:9/v1 - 128000 16384 60000 true - {}");
    CHECK(table_aligned(out));
    free(out);

    /* Itself, twice, unknown: exit 1, list unchanged. A bad id: exit 2. */
    CHECK_FAILS(1, "model 'fa' cannot be its own fallback", "model", "fallback", "fa", "fb", "fa");
    CHECK_FAILS(1, "fallback 'fb' is listed more than once", "model", "fallback", "fa", "fb", "fc", "fb");
    CHECK_FAILS(1, "fallback model 'nosuch' does not exist", "model", "fallback", "fa", "fb", "nosuch");
    CHECK_FAILS(1, "model 'nosuch' does not exist", "model", "fallback", "nosuch", "fa");
    CHECK_FAILS(2, "invalid fallback model id 'f b'", "model", "fallback", "fa", "f b");
    CHECK_FAILS(2, "usage: sbctl model fallback ID [FALLBACK ...]", "model", "fallback");
    CHECK_QUERY(FALLBACKS, "fa", "{fb,fc}");

    /* A disabled fallback is accepted with a warning (the frontend skips it). */
    CHECK_INT(SBCTL(NULL, NULL, "model", "disable", "fd"), 0);
    CHECK_INT(SBCTL(&out, &e, "model", "fallback", "fa", "fd", "fb"), 0);
    CHECK_STR(out, "model fa falls back to fd,fb (in this order)\n");
    CHECK(e && strstr(e, "warning: fallback model 'fd' is disabled") != NULL);
    free(out);
    free(e);
    CHECK_QUERY(FALLBACKS, "fa", "{fd,fb}");

    /* No FALLBACK clears the list. */
    CHECK_PRINTS("model fa has no fallbacks\n", "model", "fallback", "fa");
    CHECK_QUERY(FALLBACKS, "fa", "{}");
    CHECK_INT(SBCTL(&out, NULL, "model", "list"), 0);
    CHECK(strstr(table_row(out, "fa", "openai-chat"), " true - {}") != NULL);
    free(out);

    /* --fallbacks on add (in add's transaction: a bad list adds nothing) and set. */
    CHECK_INT(SBCTL(NULL, NULL, "model", "add", "fe", "--provider", "gemini", "--base-url", "http://127.0.0.1:9",
                    "--fallbacks", "fb,fa"),
              0);
    CHECK_QUERY(FALLBACKS, "fe", "{fb,fa}");
    CHECK_FAILS(1, "model 'ff' cannot be its own fallback", "model", "add", "ff", "--provider", "gemini", "--base-url",
                "http://127.0.0.1:9", "--fallbacks", "fa,ff");
    CHECK_FAILS(1, "fallback model 'nosuch' does not exist", "model", "add", "fg", "--provider", "gemini", "--base-url",
                "http://127.0.0.1:9", "--fallbacks", "fa,nosuch");
    CHECK_QUERY("SELECT count(*)::text FROM models WHERE id IN ('ff', 'fg')", NULL, "0");
    CHECK_PRINTS("model fe updated\n", "model", "set", "fe", "--fallbacks", "fc");
    CHECK_QUERY(FALLBACKS, "fe", "{fc}");
    CHECK_INT(SBCTL(NULL, NULL, "model", "set", "fe", "--timeout-ms", "5000"), 0); /* leaves the list alone */
    CHECK_QUERY(FALLBACKS, "fe", "{fc}");
    CHECK_FAILS(1, "model 'fe' cannot be its own fallback", "model", "set", "fe", "--fallbacks", "fe");

    /* A reasoning model gets a ten-minute timeout unless one is given; others the 60 s default. */
    CHECK_INT(SBCTL(NULL, NULL, "model", "add", "fr1", "--provider", "anthropic", "--base-url", "http://127.0.0.1:9",
                    "--capabilities", "{\"reasoning\":true}"),
              0);
    CHECK_INT(SBCTL(NULL, NULL, "model", "add", "fr2", "--provider", "anthropic", "--base-url", "http://127.0.0.1:9",
                    "--capabilities", "{\"reasoning\":true}", "--timeout-ms", "90000"),
              0);
    CHECK_INT(SBCTL(NULL, NULL, "model", "add", "fr3", "--provider", "anthropic", "--base-url", "http://127.0.0.1:9",
                    "--capabilities", "{\"reasoning\":false}"),
              0);
    CHECK_QUERY("SELECT timeout_ms::text FROM models WHERE id = $1", "fr1", "600000");
    CHECK_QUERY("SELECT timeout_ms::text FROM models WHERE id = $1", "fr2", "90000");
    CHECK_QUERY("SELECT timeout_ms::text FROM models WHERE id = $1", "fr3", "60000");
    CHECK_FAILS(1, "fallback 'fa' is listed more than once", "model", "set", "fe", "--fallbacks", "fa,fb,fa");
    CHECK_FAILS(1, "model 'nosuch' does not exist", "model", "set", "nosuch", "--fallbacks", "fa");
    CHECK_FAILS(2, "--fallbacks", "model", "set", "fe", "--fallbacks", "fa,");
    CHECK_QUERY(FALLBACKS, "fe", "{fc}");
    CHECK_INT(SBCTL(NULL, NULL, "model", "set", "fe", "--fallbacks", ""), 0);
    CHECK_QUERY(FALLBACKS, "fe", "{}");

    CHECK(exec_sql("UNLISTEN sb_config", 0, NULL));
}

int main(void)
{
    test_help();
    test_commands();
    test_keys();
    test_models();
    test_validators();
    test_prompts_cli();
    test_limits_cli();
    test_migrations();
    if (pg_setup_migrated()) {
        test_prompts_db();
        test_limits_db();
        test_fallbacks_db();
    }
    pg_cleanup();
    return sb_test_finish("sbctl");
}
