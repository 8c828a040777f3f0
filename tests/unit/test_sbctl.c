/* Unit tests for sbctl's argument parsing, validation and migration-file
 * scanning (no database: the DB paths are covered by the integration tests). */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void)
{
    test_help();
    test_commands();
    test_keys();
    test_models();
    test_validators();
    test_migrations();
    return sb_test_finish("sbctl");
}
