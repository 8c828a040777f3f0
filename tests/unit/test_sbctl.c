/* Unit tests for sbctl's argument parsing, validation and migration-file
 * scanning, and for the prompt commands end to end: the built sbctl binary
 * against a throwaway PostgreSQL cluster (initdb in a temporary directory,
 * reachable only through a unix socket there), skipped when no PostgreSQL
 * server binaries are installed. The other commands' database paths are
 * covered by the integration tests. */
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

#include "sb_cli.h"
#include "sb_migrate.h"
#include "sb_test.h"

static char err[512];

/* Parses a NULL-terminated list of words after "sbctl". */
static int parse(struct sb_cli *cli, const char *first, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = "sbctl";
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    return sb_cli_parse(cli, argc, argv, err, sizeof err);
}

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

/* ---- the prompt commands against a real PostgreSQL ---------------------- */

/* The throwaway cluster: pg.dir holds data/, the server log and its socket. */
static struct {
    char bindir[256];
    char dir[64];
    char dsn[256];
    uid_t uid; /* the server runs as this user: initdb refuses to run as root */
    gid_t gid;
    bool started;
    PGconn *conn; /* the test's own connection, for checking what sbctl wrote */
} pg;

/* A child process with its stdout and stderr in temporary files. */
struct proc {
    pid_t pid;
    FILE *out, *err;
};

/* Starts argv[0] (a path) with stdin from the string in (NULL: /dev/null).
 * as_pg: as the cluster's user. Returns 0, or -1 if it could not start. */
static int proc_start(struct proc *p, char *const argv[], const char *in, bool as_pg)
{
    FILE *fin = tmpfile();
    p->out = tmpfile();
    p->err = tmpfile();
    if (!fin || !p->out || !p->err)
        goto fail;
    if (in && fputs(in, fin) < 0)
        goto fail;
    fflush(fin);
    rewind(fin);
    fflush(stdout);
    fflush(stderr);
    p->pid = fork();
    if (p->pid < 0)
        goto fail;
    if (p->pid == 0) {
        if (dup2(fileno(fin), 0) < 0 || dup2(fileno(p->out), 1) < 0 || dup2(fileno(p->err), 2) < 0)
            _exit(126);
        if (as_pg && geteuid() == 0 && (setgroups(0, NULL) != 0 || setgid(pg.gid) != 0 || setuid(pg.uid) != 0))
            _exit(126);
        if (chdir("/") != 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    fclose(fin);
    return 0;

fail:
    if (fin)
        fclose(fin);
    if (p->out)
        fclose(p->out);
    if (p->err)
        fclose(p->err);
    p->out = p->err = NULL;
    return -1;
}

static char *slurp(FILE *f)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    size_t n;
    rewind(f);
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, n, m);
    fclose(m);
    fclose(f);
    return buf;
}

/* Waits for p; returns its exit status (-1 if it did not exit normally) and
 * its output in *out and *errout (malloc'ed; either may be NULL to discard). */
static int proc_finish(struct proc *p, char **out, char **errout)
{
    int status = 0;
    while (waitpid(p->pid, &status, 0) < 0 && errno == EINTR)
        ;
    char *o = slurp(p->out), *e = slurp(p->err);
    if (out)
        *out = o;
    else
        free(o);
    if (errout)
        *errout = e;
    else
        free(e);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static int run(char *const argv[], const char *in, bool as_pg, char **out, char **errout)
{
    struct proc p;
    if (proc_start(&p, argv, in, as_pg) != 0) {
        if (out)
            *out = strdup("");
        if (errout)
            *errout = strdup("could not start");
        return -1;
    }
    return proc_finish(&p, out, errout);
}

static int pg_tool(const char *tool, char *const args[], char **errout)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", pg.bindir, tool);
    char *argv[16] = {path};
    for (int i = 0; args[i] && i < 14; i++)
        argv[i + 1] = args[i];
    return run(argv, NULL, true, NULL, errout);
}

/* Stops and deletes the cluster; runs at exit too, so a failing test leaves no server behind. */
static void pg_cleanup(void)
{
    if (pg.conn) {
        PQfinish(pg.conn);
        pg.conn = NULL;
    }
    if (pg.started) {
        char data[128];
        snprintf(data, sizeof data, "%s/data", pg.dir);
        char *const args[] = {"stop", "-D", data, "-m", "immediate", "-w", NULL};
        if (pg_tool("pg_ctl", args, NULL) != 0)
            fprintf(stderr, "test_sbctl: could not stop the test cluster in %s\n", pg.dir);
        pg.started = false;
    }
    if (pg.dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof cmd, "rm -rf '%s'", pg.dir);
        if (system(cmd) != 0)
            fprintf(stderr, "test_sbctl: could not remove %s\n", pg.dir);
        pg.dir[0] = '\0';
    }
}

/* Makes and starts the cluster and points SB_PG_DSN at it. Returns 1 when it
 * is up, 0 to skip (no server binaries, or root without a postgres user),
 * -1 on failure. */
static int pg_setup(void)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        globfree(&g);
        printf("sbctl: SKIP prompt database tests: no /usr/lib/postgresql/*/bin/initdb\n");
        return 0;
    }
    /* The newest version: compare the numbers, "9.6" sorts after "16" as text. */
    size_t best = 0;
    for (size_t i = 1; i < g.gl_pathc; i++)
        if (strtol(g.gl_pathv[i] + strlen("/usr/lib/postgresql/"), NULL, 10) >
            strtol(g.gl_pathv[best] + strlen("/usr/lib/postgresql/"), NULL, 10))
            best = i;
    snprintf(pg.bindir, sizeof pg.bindir, "%s", g.gl_pathv[best]);
    *strrchr(pg.bindir, '/') = '\0';
    globfree(&g);

    pg.uid = geteuid();
    pg.gid = getegid();
    if (pg.uid == 0) {
        struct passwd *pw = getpwnam("postgres");
        if (!pw) {
            printf("sbctl: SKIP prompt database tests: running as root and there is no postgres user\n");
            return 0;
        }
        pg.uid = pw->pw_uid;
        pg.gid = pw->pw_gid;
    }

    snprintf(pg.dir, sizeof pg.dir, "/tmp/test_sbctl_pg.XXXXXX");
    if (!mkdtemp(pg.dir)) {
        pg.dir[0] = '\0';
        perror("test_sbctl: mkdtemp");
        return -1;
    }
    atexit(pg_cleanup);
    if (chown(pg.dir, pg.uid, pg.gid) != 0) {
        perror("test_sbctl: chown");
        return -1;
    }
    char data[128], log[128], conf[160];
    snprintf(data, sizeof data, "%s/data", pg.dir);
    snprintf(log, sizeof log, "%s/server.log", pg.dir);
    snprintf(conf, sizeof conf, "%s/postgresql.conf", data);
    char *e = NULL;
    char *const initdb[] = {"-D",         data, "-U", "sbtest", "--auth=trust", "--no-sync", "--encoding=UTF8",
                            "--locale=C", NULL};
    if (pg_tool("initdb", initdb, &e) != 0) {
        fprintf(stderr, "test_sbctl: initdb failed:\n%s\n", e);
        free(e);
        return -1;
    }
    free(e);
    /* No TCP at all: the socket in our own directory cannot clash with anything. */
    FILE *f = fopen(conf, "a");
    if (!f) {
        perror("test_sbctl: postgresql.conf");
        return -1;
    }
    fprintf(f, "\nlisten_addresses = ''\nunix_socket_directories = '%s'\nfsync = off\nmax_connections = 40\n", pg.dir);
    fclose(f);
    char *const start[] = {"start", "-D", data, "-l", log, "-w", "-t", "60", NULL};
    if (pg_tool("pg_ctl", start, &e) != 0) {
        fprintf(stderr, "test_sbctl: pg_ctl start failed (log in %s):\n%s\n", log, e);
        free(e);
        pg.started = true; /* it may be half up: stop it */
        return -1;
    }
    free(e);
    pg.started = true;
    snprintf(pg.dsn, sizeof pg.dsn, "host=%s dbname=postgres user=sbtest", pg.dir);
    setenv("SB_PG_DSN", pg.dsn, 1);
    pg.conn = PQconnectdb(pg.dsn);
    if (PQstatus(pg.conn) != CONNECTION_OK) {
        fprintf(stderr, "test_sbctl: cannot connect to the test cluster: %s", PQerrorMessage(pg.conn));
        return -1;
    }
    return 1;
}

/* Runs sbctl with the given arguments (NULL-terminated); stdin from in. */
static int sbctl_in(const char *in, char **out, char **errout, const char *first, ...)
{
    char *argv[32];
    int argc = 0;
    argv[argc++] = SB_SBCTL_BIN;
    va_list ap;
    va_start(ap, first);
    for (const char *a = first; a && argc < 31; a = va_arg(ap, const char *))
        argv[argc++] = (char *)a;
    va_end(ap);
    argv[argc] = NULL;
    return run(argv, in, false, out, errout);
}

#define SBCTL(out, errout, ...) sbctl_in(NULL, out, errout, __VA_ARGS__, NULL)

/* The first column of the first row of a one-parameter query, malloc'ed; NULL if no row. */
static char *query1(const char *sql, const char *param)
{
    const char *params[] = {param};
    PGresult *res = PQexecParams(pg.conn, sql, param ? 1 : 0, NULL, param ? params : NULL, NULL, NULL, 0);
    char *v = NULL;
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
        fprintf(stderr, "test_sbctl: %s: %s", sql, PQerrorMessage(pg.conn));
    else if (PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
        v = strdup(PQgetvalue(res, 0, 0));
    PQclear(res);
    return v;
}

/* Checks that query1(sql, param) is want. */
#define CHECK_QUERY(sql, param, want)                                                                                  \
    do {                                                                                                               \
        char *q_ = query1(sql, param);                                                                                 \
        CHECK_STR(q_, want);                                                                                           \
        free(q_);                                                                                                      \
    } while (0)

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
    int up = pg_setup();
    CHECK(up >= 0);
    if (up <= 0)
        return;
    char *out = NULL, *e = NULL;

    CHECK_INT(SBCTL(NULL, &e, "migrate", "--dir", SB_TEST_SCHEMA_DIR), 0);
    if (e && *e)
        fprintf(stderr, "%s", e);
    free(e);
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

    pg_cleanup();
}

int main(void)
{
    test_help();
    test_commands();
    test_keys();
    test_models();
    test_validators();
    test_prompts_cli();
    test_migrations();
    test_prompts_db();
    return sb_test_finish("sbctl");
}
