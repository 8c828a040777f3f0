/*
 * sb_cli: sbctl's command-line grammar. sb_cli_parse() turns argv into a
 * struct sb_cli (one command, its positional arguments, its options) and
 * validates every value — names, numbers, URLs, JSON — before anything touches
 * the database, so all of it is unit-testable without PostgreSQL.
 *
 * Every string in a parsed struct sb_cli is borrowed from argv. The command
 * table (sb_cli.c) names each command's handler (sb_ctl.h), so a parsed
 * command line knows what runs it; the value checks are in sb_cli_check.c.
 */
#ifndef SB_CLI_H
#define SB_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define SB_CLI_MUSTCHECK __attribute__((warn_unused_result))

struct sb_cli;
struct sb_ctldb;

/* A command's handler (sb_ctl.h): 0 or a negative errno-style code, the
 * reason printed to stderr. */
typedef int (*sb_cli_run_fn)(struct sb_ctldb *db, const struct sb_cli *cli);

enum sb_cli_cmd {
    SB_CLI_HELP, /* print usage (help_group/help_verb say for what) */
    SB_CLI_MIGRATE,
    SB_CLI_ACCOUNT_CREATE,
    SB_CLI_ACCOUNT_LIST,
    SB_CLI_ACCOUNT_DISABLE,
    SB_CLI_ACCOUNT_ENABLE,
    SB_CLI_GROUP_CREATE,
    SB_CLI_GROUP_LIST,
    SB_CLI_GROUP_ALLOW,
    SB_CLI_GROUP_DENY,
    SB_CLI_KEY_CREATE,
    SB_CLI_KEY_LIST,
    SB_CLI_KEY_DISABLE,
    SB_CLI_KEY_ENABLE,
    SB_CLI_KEY_SET_GROUP,
    SB_CLI_MODEL_ADD,
    SB_CLI_MODEL_LIST,
    SB_CLI_MODEL_DISABLE,
    SB_CLI_MODEL_ENABLE,
    SB_CLI_MODEL_SET,
    SB_CLI_MODEL_FALLBACK,
    SB_CLI_PROMPT_CREATE,
    SB_CLI_PROMPT_VERSION,
    SB_CLI_PROMPT_SET_CURRENT,
    SB_CLI_PROMPT_LIST,
    SB_CLI_PROMPT_SHOW,
    SB_CLI_LIMITS_SET,
    SB_CLI_LIMITS_SHOW,
    SB_CLI_LIMITS_RESET_USAGE,
    SB_CLI_SEARCH_BACKEND_ADD,
    SB_CLI_SEARCH_BACKEND_LIST,
    SB_CLI_SEARCH_BACKEND_REMOVE,
    SB_CLI_SEARCH_BACKEND_SET_DEFAULT,
    SB_CLI_SEARCH_BACKEND_DISABLE,
    SB_CLI_SEARCH_BACKEND_ENABLE,
    SB_CLI_TOOLS_LOG,
    SB_CLI_ADMIN_KEY_CREATE,
    SB_CLI_ADMIN_KEY_LIST,
    SB_CLI_ADMIN_KEY_DISABLE,
    SB_CLI_ADMIN_KEY_ENABLE,
};

/* Options a command may accept (bit mask in its spec). */
enum sb_cli_opt_bit {
    SB_OPT_DIR = 1u << 0,
    SB_OPT_ZDR = 1u << 1,
    SB_OPT_ACCOUNT = 1u << 2,
    SB_OPT_GROUP = 1u << 3,
    SB_OPT_NAME = 1u << 4,
    SB_OPT_PROVIDER = 1u << 5,
    SB_OPT_BASE_URL = 1u << 6,
    SB_OPT_UPSTREAM_MODEL = 1u << 7,
    SB_OPT_CREDENTIAL_REF = 1u << 8,
    SB_OPT_CONTEXT_LENGTH = 1u << 9,
    SB_OPT_MAX_OUTPUT_TOKENS = 1u << 10,
    SB_OPT_TIMEOUT_MS = 1u << 11,
    SB_OPT_CAPABILITIES = 1u << 12,
    SB_OPT_IF_NOT_EXISTS = 1u << 13,
    SB_OPT_INSTRUCTIONS = 1u << 14,
    SB_OPT_BODY = 1u << 15,
    SB_OPT_BODY_FILE = 1u << 16,
    SB_OPT_NO_SET_CURRENT = 1u << 17,
    SB_OPT_VERSION = 1u << 18,
    SB_OPT_KEY = 1u << 19,
    SB_OPT_RPM = 1u << 20,
    SB_OPT_TPM = 1u << 21,
    SB_OPT_CONCURRENCY = 1u << 22,
    SB_OPT_QUOTA_TOKENS = 1u << 23,
    SB_OPT_FALLBACKS = 1u << 24,
    SB_OPT_KIND = 1u << 25,
    SB_OPT_DEFAULT = 1u << 26,
    SB_OPT_LIMIT = 1u << 27,
};

#define SB_CLI_NAME_MAX 128  /* account, group names */
#define SB_CLI_MODEL_MAX 200 /* model ids, upstream model names */
#define SB_CLI_LABEL_MAX 200 /* key labels (--name) */
#define SB_CLI_URL_MAX 2048
#define SB_CLI_PROMPT_ID_MAX 80       /* "pmpt_" + suffix (sbctl makes 32 hex digits) */
#define SB_CLI_BODY_MAX (1024 * 1024) /* a prompt version's body, in bytes */
#define SB_CLI_LIMIT_NONE (-1LL)      /* limits set: "none", clear the limit */
#define SB_CLI_LOG_LIMIT_MAX 10000    /* tools log --limit */
#define SB_CLI_LOG_LIMIT_DEFAULT 50

#define SB_CLI_FALLBACK_MAX 16                    /* models in one fallback chain */
#define SB_CLI_MAX_ARGS (1 + SB_CLI_FALLBACK_MAX) /* model fallback ID FALLBACK... */

struct sb_cli {
    enum sb_cli_cmd cmd;
    sb_cli_run_fn run;      /* the command's handler; NULL for SB_CLI_HELP (main prints usage, no database) */
    const char *help_group; /* SB_CLI_HELP: NULL = overview, else "account", ... */
    const char *help_verb;  /* SB_CLI_HELP: NULL = the whole group */

    const char *arg[SB_CLI_MAX_ARGS]; /* positional arguments */
    int nargs;
    long long key_id; /* key disable/enable/set-group: arg[0] parsed; limits set: --key */
    int version;      /* prompt set-current: arg[1] parsed; prompt show: --version (0 = current) */

    unsigned given; /* sb_cli_opt_bit of every option present */
    const char *dir;
    const char *account;
    const char *group;
    const char *name; /* key label; prompt name */
    const char *provider;
    const char *base_url;
    const char *upstream_model;
    const char *credential_ref; /* "" clears it (model set) */
    const char *capabilities;   /* a JSON object, validated */
    int context_length;         /* > 0 when given */
    int max_output_tokens;
    int timeout_ms;
    /* A prompt version's body: exactly one of these for prompt create/version.
     * body is already checked with sb_cli_check_prompt_body; body_file is only
     * a path ("-" = stdin), read and checked by the command. */
    const char *instructions;
    const char *body;
    const char *body_file;
    /* limits set: the new limit when its option is given (see given), or
     * SB_CLI_LIMIT_NONE to clear it. Ranges as the schema's CHECKs: rpm and
     * concurrency 1..INT_MAX, tpm 1..LLONG_MAX, quota_tokens 0..LLONG_MAX. */
    long long rpm;
    long long tpm;
    long long concurrency;
    long long quota_tokens;
    /* model add/set --fallbacks: comma-separated model ids, each checked
     * with sb_cli_valid_model_id, at most SB_CLI_FALLBACK_MAX; "" clears. */
    const char *fallbacks;
    /* search-backend add --kind: searxng, brave or tavily. */
    const char *kind;
    /* tools log --limit: rows to show, 1..SB_CLI_LOG_LIMIT_MAX (0: not given). */
    int limit;
    bool zdr;
    bool if_not_exists;
    bool no_set_current;
    bool make_default; /* search-backend add --default */
};

/*
 * Parses argv (argv[0] is the program name) into cli. Returns 0, or -EINVAL
 * with a one-line reason in err (no trailing newline). A help request
 * ("--help", "-h", "help ...", "GROUP --help", "GROUP VERB --help") parses to
 * SB_CLI_HELP.
 */
int sb_cli_parse(struct sb_cli *cli, int argc, char **argv, char *err, size_t errsz) SB_CLI_MUSTCHECK;

/* Prints usage: the overview, one group's commands, or one command's. */
void sb_cli_usage(FILE *out, const char *group, const char *verb);

/*
 * Value checks (sb_cli_check.c).
 */

/* Writes a printf-formatted one-line reason into err; returns -EINVAL. */
int sb_cli_fail(char *err, size_t errsz, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Strict decimal integer in [min, max] (strtoll, whole string, no overflow).
 * Returns 0 or -EINVAL / -ERANGE. */
int sb_cli_parse_int(const char *s, long long min, long long max, long long *out) SB_CLI_MUSTCHECK;

/* Account and group names: 1..SB_CLI_NAME_MAX of [A-Za-z0-9._@:+-], starting
 * with a letter or digit. */
bool sb_cli_valid_name(const char *s);
/* Model ids: as names but also '/', up to SB_CLI_MODEL_MAX. */
bool sb_cli_valid_model_id(const char *s);
/* Upstream model names: printable ASCII without spaces, up to SB_CLI_MODEL_MAX. */
bool sb_cli_valid_upstream_model(const char *s);
/* Key labels: up to SB_CLI_LABEL_MAX bytes, no control characters (may be empty). */
bool sb_cli_valid_label(const char *s);
/* An environment variable name: [A-Za-z_][A-Za-z0-9_]*, up to 128. */
bool sb_cli_valid_env_name(const char *s);
/* http:// or https:// followed by a host, no whitespace or control characters. */
bool sb_cli_valid_url(const char *s);
/* One of the provider kinds the models table accepts. */
bool sb_cli_valid_provider(const char *s);
/* A JSON object (duplicate keys rejected). */
bool sb_cli_valid_json_object(const char *s);
/* One of the search backend kinds the search_backends table accepts. */
bool sb_cli_valid_search_kind(const char *s);
/*
 * Checks a --capabilities object's built-in tool keys (docs/tools.md): each of
 * web_search, mcp, file_search, code_interpreter, image_generation,
 * computer_use, computer_use_preview and local_shell, when present, is true,
 * false or "native". Other keys are not looked at. Returns 0, or -EINVAL
 * with a one-line reason in err.
 */
int sb_cli_check_capabilities(const char *json, char *err, size_t errsz) SB_CLI_MUSTCHECK;
/* A prompt id: "pmpt_" then 1.. of [A-Za-z0-9_-], up to SB_CLI_PROMPT_ID_MAX. */
bool sb_cli_valid_prompt_id(const char *s);

/*
 * Checks a prompt version's body, len bytes of JSON (need not be
 * NUL-terminated): an object with only the keys "instructions" (a string) and
 * "input" (an array of objects, the Responses input items), at least one of
 * them, no duplicate keys, at most SB_CLI_BODY_MAX bytes. Returns 0, or
 * -EINVAL with a one-line reason in err.
 */
int sb_cli_check_prompt_body(const char *json, size_t len, char *err, size_t errsz) SB_CLI_MUSTCHECK;

#endif
