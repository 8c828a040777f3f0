/*
 * sb_cli: the command table and the option table. Adding a command means one
 * row in sb_cli_specs (with its handler, sb_ctl.h) plus its checks in
 * sb_cli_check(); the value checks themselves are in sb_cli_check.c.
 */
#include "sb_cli.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "sb_ctl.h"

#define SB_CLI_STR_(x) #x
#define SB_CLI_STR(x) SB_CLI_STR_(x)

struct sb_cli_spec {
    enum sb_cli_cmd cmd;
    const char *group; /* NULL for top-level commands (migrate) */
    const char *verb;
    sb_cli_run_fn run; /* what runs it */
    int min_args, max_args;
    unsigned opts;        /* accepted sb_cli_opt_bit */
    const char *synopsis; /* arguments and options, after "sbctl GROUP VERB" */
    const char *summary;
};

#define SB_MODEL_OPTS                                                                                                  \
    (SB_OPT_PROVIDER | SB_OPT_BASE_URL | SB_OPT_UPSTREAM_MODEL | SB_OPT_CREDENTIAL_REF | SB_OPT_CONTEXT_LENGTH |       \
     SB_OPT_MAX_OUTPUT_TOKENS | SB_OPT_TIMEOUT_MS | SB_OPT_CAPABILITIES | SB_OPT_FALLBACKS)

#define SB_PROMPT_BODY_OPTS (SB_OPT_INSTRUCTIONS | SB_OPT_BODY | SB_OPT_BODY_FILE)
#define SB_PROMPT_BODY_HELP "(--instructions TEXT | --body JSON | --body-file PATH)"

#define SB_MODEL_OPTS_HELP                                                                                             \
    "[--upstream-model NAME] [--credential-ref ENVVAR]\n"                                                              \
    "        [--context-length N] [--max-output-tokens N] [--timeout-ms N] [--capabilities JSON]\n"                    \
    "        [--fallbacks ID,ID...]"

#define SB_LIMITS_SCOPE_OPTS (SB_OPT_KEY | SB_OPT_GROUP | SB_OPT_ACCOUNT)
#define SB_LIMITS_RATE_OPTS (SB_OPT_RPM | SB_OPT_TPM | SB_OPT_CONCURRENCY)

static const struct sb_cli_spec sb_cli_specs[] = {
    {SB_CLI_MIGRATE, NULL, "migrate", sb_ctl_migrate, 0, 0, SB_OPT_DIR, "[--dir DIR]",
     "apply pending schema/NNN_*.sql migrations (idempotent, safe to run concurrently)"},

    {SB_CLI_ACCOUNT_CREATE, "account", "create", sb_ctl_account_create, 1, 1, SB_OPT_ZDR | SB_OPT_IF_NOT_EXISTS,
     "NAME [--zdr] [--if-not-exists]", "create an account (--zdr: zero data retention)"},
    {SB_CLI_ACCOUNT_LIST, "account", "list", sb_ctl_account_list, 0, 0, 0, "", "list accounts"},
    {SB_CLI_ACCOUNT_DISABLE, "account", "disable", sb_ctl_account_disable, 1, 1, 0, "NAME",
     "disable an account (all its keys stop working)"},
    {SB_CLI_ACCOUNT_ENABLE, "account", "enable", sb_ctl_account_enable, 1, 1, 0, "NAME", "enable an account"},

    {SB_CLI_GROUP_CREATE, "group", "create", sb_ctl_group_create, 1, 1, SB_OPT_IF_NOT_EXISTS, "NAME [--if-not-exists]",
     "create a token group (allows no model until 'group allow')"},
    {SB_CLI_GROUP_LIST, "group", "list", sb_ctl_group_list, 0, 0, 0, "", "list token groups and the models they allow"},
    {SB_CLI_GROUP_ALLOW, "group", "allow", sb_ctl_group_allow, 2, 2, 0, "GROUP MODEL",
     "allow MODEL ('*' = every model) in GROUP"},
    {SB_CLI_GROUP_DENY, "group", "deny", sb_ctl_group_deny, 2, 2, 0, "GROUP MODEL", "remove MODEL (or '*') from GROUP"},

    {SB_CLI_KEY_CREATE, "key", "create", sb_ctl_key_create, 0, 0, SB_OPT_ACCOUNT | SB_OPT_GROUP | SB_OPT_NAME,
     "--account NAME --group NAME [--name LABEL]",
     "create an API key; prints only the secret (shown once, never stored)"},
    {SB_CLI_KEY_LIST, "key", "list", sb_ctl_key_list, 0, 0, SB_OPT_ACCOUNT, "[--account NAME]",
     "list keys (display prefixes only)"},
    {SB_CLI_KEY_DISABLE, "key", "disable", sb_ctl_key_disable, 1, 1, 0, "ID", "disable a key"},
    {SB_CLI_KEY_ENABLE, "key", "enable", sb_ctl_key_enable, 1, 1, 0, "ID", "enable a key"},
    {SB_CLI_KEY_SET_GROUP, "key", "set-group", sb_ctl_key_set_group, 2, 2, 0, "ID GROUP",
     "move a key to another token group"},

    {SB_CLI_ADMIN_KEY_CREATE, "admin-key", "create", sb_ctl_admin_key_create, 0, 0, SB_OPT_NAME, "[--name LABEL]",
     "create an admin key (the admin API and console; never for generation); prints only the secret"},
    {SB_CLI_ADMIN_KEY_LIST, "admin-key", "list", sb_ctl_admin_key_list, 0, 0, 0, "", "list admin keys"},
    {SB_CLI_ADMIN_KEY_DISABLE, "admin-key", "disable", sb_ctl_admin_key_disable, 1, 1, 0, "ID", "disable an admin key"},
    {SB_CLI_ADMIN_KEY_ENABLE, "admin-key", "enable", sb_ctl_admin_key_enable, 1, 1, 0, "ID", "enable an admin key"},

    {SB_CLI_MODEL_ADD, "model", "add", sb_ctl_model_add, 1, 1, SB_MODEL_OPTS | SB_OPT_IF_NOT_EXISTS,
     "ID --provider openai-chat|openai-responses|anthropic|gemini --base-url URL\n"
     "        " SB_MODEL_OPTS_HELP " [--if-not-exists]",
     "add a model and its upstream route (--upstream-model defaults to ID)"},
    {SB_CLI_MODEL_LIST, "model", "list", sb_ctl_model_list, 0, 0, 0, "", "list models"},
    {SB_CLI_MODEL_DISABLE, "model", "disable", sb_ctl_model_disable, 1, 1, 0, "ID", "disable a model"},
    {SB_CLI_MODEL_ENABLE, "model", "enable", sb_ctl_model_enable, 1, 1, 0, "ID", "enable a model"},
    {SB_CLI_MODEL_SET, "model", "set", sb_ctl_model_set, 1, 1, SB_MODEL_OPTS,
     "ID [--provider P] [--base-url URL] " SB_MODEL_OPTS_HELP,
     "change a model's settings (only the options given; --credential-ref '' and --fallbacks '' clear)"},
    {SB_CLI_MODEL_FALLBACK, "model", "fallback", sb_ctl_model_fallback, 1, SB_CLI_MAX_ARGS, 0, "ID [FALLBACK ...]",
     "set the models tried, in this order, when ID's upstream fails before the client has\n"
     "      seen a byte (existing models, not ID, no repeats; no FALLBACK clears the list)"},

    {SB_CLI_PROMPT_CREATE, "prompt", "create", sb_ctl_prompt_create, 0, 0,
     SB_OPT_ACCOUNT | SB_OPT_NAME | SB_PROMPT_BODY_OPTS | SB_OPT_IF_NOT_EXISTS,
     "--account NAME --name NAME " SB_PROMPT_BODY_HELP "\n        [--if-not-exists]",
     "create a prompt template whose version 1 is BODY; prints only its id (pmpt_...)\n"
     "      (--if-not-exists: print the id of the account's prompt of that name, body unchanged)"},
    {SB_CLI_PROMPT_VERSION, "prompt", "version", sb_ctl_prompt_version, 1, 1,
     SB_PROMPT_BODY_OPTS | SB_OPT_NO_SET_CURRENT, "PROMPT_ID " SB_PROMPT_BODY_HELP " [--no-set-current]",
     "add a version (the highest + 1) and make it current; prints only its number"},
    {SB_CLI_PROMPT_SET_CURRENT, "prompt", "set-current", sb_ctl_prompt_set_current, 2, 2, 0, "PROMPT_ID VERSION",
     "make an existing version the one used when a request names none"},
    {SB_CLI_PROMPT_LIST, "prompt", "list", sb_ctl_prompt_list, 0, 0, SB_OPT_ACCOUNT, "[--account NAME]",
     "list prompt templates: current version and number of versions"},
    {SB_CLI_PROMPT_SHOW, "prompt", "show", sb_ctl_prompt_show, 1, 1, SB_OPT_VERSION, "PROMPT_ID [--version N]",
     "print a version's body as JSON (default: the current version)"},

    {SB_CLI_LIMITS_SET, "limits", "set", sb_ctl_limits_set, 0, 0,
     SB_LIMITS_SCOPE_OPTS | SB_LIMITS_RATE_OPTS | SB_OPT_QUOTA_TOKENS,
     "(--key ID | --group NAME) [--rpm N] [--tpm N] [--concurrency N]\n"
     "  sbctl limits set --account NAME --quota-tokens N",
     "set a key's or a group's requests per minute, tokens per minute and concurrent\n"
     "      requests, or an account's token quota (only the options given; N = none clears it)"},
    {SB_CLI_LIMITS_SHOW, "limits", "show", sb_ctl_limits_show, 0, 0, SB_OPT_ACCOUNT, "[--account NAME]",
     "list the keys and groups with a limit and the accounts with a quota, with the quota's\n"
     "      use (--account: that account, and the limited keys and groups it uses)"},
    {SB_CLI_LIMITS_RESET_USAGE, "limits", "reset-usage", sb_ctl_limits_reset_usage, 0, 0, SB_OPT_ACCOUNT,
     "--account NAME",
     "set the tokens drawn from the account's quota back to 0 (a new period, or a top-up);\n"
     "      prints the previous value"},

    {SB_CLI_SEARCH_BACKEND_ADD, "search-backend", "add", sb_ctl_search_backend_add, 1, 1,
     SB_OPT_KIND | SB_OPT_BASE_URL | SB_OPT_CREDENTIAL_REF | SB_OPT_DEFAULT | SB_OPT_IF_NOT_EXISTS,
     "NAME --kind searxng|brave|tavily --base-url URL [--credential-ref ENVVAR]\n"
     "        [--default] [--if-not-exists]",
     "add a search backend for gateway-run web search (--default: the one web search uses;\n"
     "      --credential-ref: the workers' environment variable holding its API key)"},
    {SB_CLI_SEARCH_BACKEND_LIST, "search-backend", "list", sb_ctl_search_backend_list, 0, 0, 0, "",
     "list search backends"},
    {SB_CLI_SEARCH_BACKEND_REMOVE, "search-backend", "remove", sb_ctl_search_backend_remove, 1, 1, 0, "NAME",
     "remove a search backend (removing the default turns gateway web search off)"},
    {SB_CLI_SEARCH_BACKEND_SET_DEFAULT, "search-backend", "set-default", sb_ctl_search_backend_set_default, 1, 1, 0,
     "NAME", "make NAME the backend gateway-run web search uses"},
    {SB_CLI_SEARCH_BACKEND_DISABLE, "search-backend", "disable", sb_ctl_search_backend_disable, 1, 1, 0, "NAME",
     "disable a search backend (a disabled default turns gateway web search off)"},
    {SB_CLI_SEARCH_BACKEND_ENABLE, "search-backend", "enable", sb_ctl_search_backend_enable, 1, 1, 0, "NAME",
     "enable a search backend"},

    {SB_CLI_TOOLS_LOG, "tools", "log", sb_ctl_tools_log, 0, 0, SB_OPT_ACCOUNT | SB_OPT_LIMIT,
     "[--account NAME] [--limit N]",
     "list the latest gateway-run tool calls, newest first (default " SB_CLI_STR(
         SB_CLI_LOG_LIMIT_DEFAULT) ", at "
                                   "most " SB_CLI_STR(SB_CLI_LOG_LIMIT_MAX) ")"},
};

#define SB_CLI_NSPECS (sizeof sb_cli_specs / sizeof sb_cli_specs[0])

struct sb_cli_opt {
    const char *name;
    enum sb_cli_opt_bit bit;
    bool has_value;
};

static const struct sb_cli_opt sb_cli_opts[] = {
    {"--dir", SB_OPT_DIR, true},
    {"--zdr", SB_OPT_ZDR, false},
    {"--account", SB_OPT_ACCOUNT, true},
    {"--group", SB_OPT_GROUP, true},
    {"--name", SB_OPT_NAME, true},
    {"--provider", SB_OPT_PROVIDER, true},
    {"--base-url", SB_OPT_BASE_URL, true},
    {"--upstream-model", SB_OPT_UPSTREAM_MODEL, true},
    {"--credential-ref", SB_OPT_CREDENTIAL_REF, true},
    {"--context-length", SB_OPT_CONTEXT_LENGTH, true},
    {"--max-output-tokens", SB_OPT_MAX_OUTPUT_TOKENS, true},
    {"--timeout-ms", SB_OPT_TIMEOUT_MS, true},
    {"--capabilities", SB_OPT_CAPABILITIES, true},
    {"--if-not-exists", SB_OPT_IF_NOT_EXISTS, false},
    {"--instructions", SB_OPT_INSTRUCTIONS, true},
    {"--body", SB_OPT_BODY, true},
    {"--body-file", SB_OPT_BODY_FILE, true},
    {"--no-set-current", SB_OPT_NO_SET_CURRENT, false},
    {"--version", SB_OPT_VERSION, true},
    {"--key", SB_OPT_KEY, true},
    {"--rpm", SB_OPT_RPM, true},
    {"--tpm", SB_OPT_TPM, true},
    {"--concurrency", SB_OPT_CONCURRENCY, true},
    {"--quota-tokens", SB_OPT_QUOTA_TOKENS, true},
    {"--fallbacks", SB_OPT_FALLBACKS, true},
    {"--kind", SB_OPT_KIND, true},
    {"--default", SB_OPT_DEFAULT, false},
    {"--limit", SB_OPT_LIMIT, true},
};

#define SB_CLI_NOPTS (sizeof sb_cli_opts / sizeof sb_cli_opts[0])

static const char *const sb_cli_groups[] = {"account", "group",          "key",  "admin-key", "model", "prompt",
                                            "limits",  "search-backend", "tools"};

static bool sb_cli_is_help(const char *s)
{
    return !strcmp(s, "--help") || !strcmp(s, "-h");
}

static bool sb_cli_is_group(const char *s)
{
    for (size_t i = 0; i < sizeof sb_cli_groups / sizeof sb_cli_groups[0]; i++)
        if (!strcmp(s, sb_cli_groups[i]))
            return true;
    return false;
}

static const struct sb_cli_spec *sb_cli_find(const char *group, const char *verb)
{
    for (size_t i = 0; i < SB_CLI_NSPECS; i++) {
        const struct sb_cli_spec *s = &sb_cli_specs[i];
        if ((group == NULL) != (s->group == NULL))
            continue;
        if (group && strcmp(group, s->group))
            continue;
        if (!strcmp(verb, s->verb))
            return s;
    }
    return NULL;
}

static const struct sb_cli_opt *sb_cli_find_opt(const char *arg, size_t len)
{
    for (size_t i = 0; i < SB_CLI_NOPTS; i++)
        if (strlen(sb_cli_opts[i].name) == len && !strncmp(arg, sb_cli_opts[i].name, len))
            return &sb_cli_opts[i];
    return NULL;
}

static int sb_cli_positive(const char *opt, const char *val, int *out, char *err, size_t errsz)
{
    long long v;
    if (sb_cli_parse_int(val, 1, INT_MAX, &v) != 0)
        return sb_cli_fail(err, errsz, "%s: expected an integer between 1 and %d, got '%s'", opt, INT_MAX, val);
    *out = (int)v;
    return 0;
}

/* Parses a limit option's value: an integer in [min, max], or "none"
 * (SB_CLI_LIMIT_NONE: clear the limit). */
static int sb_cli_limit(const char *opt, const char *val, long long min, long long max, long long *out, char *err,
                        size_t errsz)
{
    if (!strcmp(val, "none")) {
        *out = SB_CLI_LIMIT_NONE;
        return 0;
    }
    if (sb_cli_parse_int(val, min, max, out) != 0)
        return sb_cli_fail(err, errsz, "%s: expected an integer between %lld and %lld, or none, got '%s'", opt, min,
                           max, val);
    return 0;
}

/* --fallbacks: "" or comma-separated model ids. Whether they exist, repeat or
 * name the model itself is the command's check (exit 1, like a missing name). */
static int sb_cli_model_list(const char *opt, const char *val, char *err, size_t errsz)
{
    if (!*val)
        return 0; /* clears the list */
    int n = 0;
    for (const char *p = val;;) {
        size_t len = strcspn(p, ",");
        char id[SB_CLI_MODEL_MAX + 1];
        if (len == 0 || len > SB_CLI_MODEL_MAX)
            return sb_cli_fail(err, errsz, "%s: expected model ids separated by commas, got '%s'", opt, val);
        memcpy(id, p, len);
        id[len] = '\0';
        if (!sb_cli_valid_model_id(id))
            return sb_cli_fail(err, errsz, "%s: invalid model id '%s'", opt, id);
        if (++n > SB_CLI_FALLBACK_MAX)
            return sb_cli_fail(err, errsz, "%s: at most %d fallbacks", opt, SB_CLI_FALLBACK_MAX);
        if (p[len] == '\0')
            break;
        p += len + 1;
    }
    return 0;
}

/* Stores one option's value in cli, validating it. */
static int sb_cli_set_opt(struct sb_cli *cli, const struct sb_cli_opt *o, const char *val, char *err, size_t errsz)
{
    switch (o->bit) {
    case SB_OPT_DIR:
        if (!*val)
            return sb_cli_fail(err, errsz, "--dir: empty directory");
        cli->dir = val;
        return 0;
    case SB_OPT_ZDR:
        cli->zdr = true;
        return 0;
    case SB_OPT_IF_NOT_EXISTS:
        cli->if_not_exists = true;
        return 0;
    case SB_OPT_ACCOUNT:
        if (!sb_cli_valid_name(val))
            return sb_cli_fail(err, errsz, "--account: invalid account name '%s'", val);
        cli->account = val;
        return 0;
    case SB_OPT_GROUP:
        if (!sb_cli_valid_name(val))
            return sb_cli_fail(err, errsz, "--group: invalid group name '%s'", val);
        cli->group = val;
        return 0;
    case SB_OPT_NAME:
        if (!sb_cli_valid_label(val))
            return sb_cli_fail(err, errsz, "--name: at most %d characters, no control characters", SB_CLI_LABEL_MAX);
        cli->name = val;
        return 0;
    case SB_OPT_PROVIDER:
        if (!sb_cli_valid_provider(val))
            return sb_cli_fail(err, errsz,
                               "--provider: '%s' is not one of openai-chat, openai-responses, anthropic, gemini", val);
        cli->provider = val;
        return 0;
    case SB_OPT_BASE_URL:
        if (!sb_cli_valid_url(val))
            return sb_cli_fail(err, errsz, "--base-url: expected an http:// or https:// URL, got '%s'", val);
        cli->base_url = val;
        return 0;
    case SB_OPT_UPSTREAM_MODEL:
        if (!sb_cli_valid_upstream_model(val))
            return sb_cli_fail(err, errsz, "--upstream-model: invalid model name '%s'", val);
        cli->upstream_model = val;
        return 0;
    case SB_OPT_CREDENTIAL_REF:
        /* Deliberately not echoed: someone may have pasted the secret itself. */
        if (*val && !sb_cli_valid_env_name(val))
            return sb_cli_fail(err, errsz,
                               "--credential-ref: expected the NAME of an environment variable holding the "
                               "upstream secret ([A-Za-z_][A-Za-z0-9_]*), not the secret itself");
        cli->credential_ref = val;
        return 0;
    case SB_OPT_CONTEXT_LENGTH:
        return sb_cli_positive(o->name, val, &cli->context_length, err, errsz);
    case SB_OPT_MAX_OUTPUT_TOKENS:
        return sb_cli_positive(o->name, val, &cli->max_output_tokens, err, errsz);
    case SB_OPT_TIMEOUT_MS:
        return sb_cli_positive(o->name, val, &cli->timeout_ms, err, errsz);
    case SB_OPT_CAPABILITIES:
        if (!sb_cli_valid_json_object(val))
            return sb_cli_fail(err, errsz, "--capabilities: expected a JSON object, e.g. '{\"tools\":true}'");
        if (sb_cli_check_capabilities(val, err, errsz) != 0)
            return -EINVAL;
        cli->capabilities = val;
        return 0;
    case SB_OPT_INSTRUCTIONS: {
        /* jsonb, like jansson, takes only UTF-8 strings. */
        json_t *s = json_string(val);
        bool ok = s != NULL;
        json_decref(s);
        if (!ok)
            return sb_cli_fail(err, errsz, "--instructions: not valid UTF-8");
        if (strlen(val) > SB_CLI_BODY_MAX)
            return sb_cli_fail(err, errsz, "--instructions: longer than %d bytes", SB_CLI_BODY_MAX);
        cli->instructions = val;
        return 0;
    }
    case SB_OPT_BODY: {
        char why[256];
        if (sb_cli_check_prompt_body(val, strlen(val), why, sizeof why) != 0)
            return sb_cli_fail(err, errsz, "--body: %s", why);
        cli->body = val;
        return 0;
    }
    case SB_OPT_BODY_FILE:
        if (!*val)
            return sb_cli_fail(err, errsz, "--body-file: empty path");
        cli->body_file = val;
        return 0;
    case SB_OPT_NO_SET_CURRENT:
        cli->no_set_current = true;
        return 0;
    case SB_OPT_VERSION:
        return sb_cli_positive(o->name, val, &cli->version, err, errsz);
    case SB_OPT_KEY:
        if (sb_cli_parse_int(val, 1, LLONG_MAX, &cli->key_id) != 0)
            return sb_cli_fail(err, errsz, "--key: invalid key id '%s' (a positive integer, see 'sbctl key list')",
                               val);
        return 0;
    case SB_OPT_RPM:
        return sb_cli_limit(o->name, val, 1, INT_MAX, &cli->rpm, err, errsz);
    case SB_OPT_TPM:
        return sb_cli_limit(o->name, val, 1, LLONG_MAX, &cli->tpm, err, errsz);
    case SB_OPT_CONCURRENCY:
        return sb_cli_limit(o->name, val, 1, INT_MAX, &cli->concurrency, err, errsz);
    case SB_OPT_QUOTA_TOKENS:
        return sb_cli_limit(o->name, val, 0, LLONG_MAX, &cli->quota_tokens, err, errsz);
    case SB_OPT_KIND:
        if (!sb_cli_valid_search_kind(val))
            return sb_cli_fail(err, errsz, "--kind: '%s' is not one of searxng, brave, tavily", val);
        cli->kind = val;
        return 0;
    case SB_OPT_DEFAULT:
        cli->make_default = true;
        return 0;
    case SB_OPT_LIMIT: {
        long long v;
        if (sb_cli_parse_int(val, 1, SB_CLI_LOG_LIMIT_MAX, &v) != 0)
            return sb_cli_fail(err, errsz, "--limit: expected an integer between 1 and %d, got '%s'",
                               SB_CLI_LOG_LIMIT_MAX, val);
        cli->limit = (int)v;
        return 0;
    }
    case SB_OPT_FALLBACKS: {
        int rc = sb_cli_model_list(o->name, val, err, errsz);
        if (rc == 0)
            cli->fallbacks = val;
        return rc;
    }
    }
    return sb_cli_fail(err, errsz, "internal error: unhandled option %s", o->name);
}

static int sb_cli_bad_prompt_id(const char *id, char *err, size_t errsz)
{
    return sb_cli_fail(err, errsz, "invalid prompt id '%s' (pmpt_..., see 'sbctl prompt list')", id);
}

/* prompt create/version take the new version's body from exactly one option. */
static int sb_cli_check_body_source(const struct sb_cli *cli, const char *verb, char *err, size_t errsz)
{
    if (!!cli->instructions + !!cli->body + !!cli->body_file != 1)
        return sb_cli_fail(err, errsz, "prompt %s: give exactly one of --instructions, --body, --body-file", verb);
    return 0;
}

/* limits set: one scope, at least one limit, and only the limits that scope has. */
static int sb_cli_check_limits_set(const struct sb_cli *cli, char *err, size_t errsz)
{
    unsigned scope = cli->given & SB_LIMITS_SCOPE_OPTS;
    if (scope == 0 || (scope & (scope - 1)) != 0)
        return sb_cli_fail(err, errsz, "limits set: give exactly one of --key ID, --group NAME, --account NAME");
    if (!(cli->given & (SB_LIMITS_RATE_OPTS | SB_OPT_QUOTA_TOKENS)))
        return sb_cli_fail(err, errsz,
                           "limits set: nothing to set (give --rpm, --tpm or --concurrency for a key or group, "
                           "--quota-tokens for an account)");
    if (scope == SB_OPT_ACCOUNT && (cli->given & SB_LIMITS_RATE_OPTS))
        return sb_cli_fail(err, errsz,
                           "limits set: --rpm, --tpm and --concurrency apply to a key or a group, not an account "
                           "(an account has --quota-tokens)");
    if (scope != SB_OPT_ACCOUNT && (cli->given & SB_OPT_QUOTA_TOKENS))
        return sb_cli_fail(err, errsz,
                           "limits set: --quota-tokens applies to an account (--account NAME), not to a key or a "
                           "group");
    return 0;
}

/* Per-command checks of positional arguments and required options. */
static int sb_cli_check(struct sb_cli *cli, char *err, size_t errsz)
{
    switch (cli->cmd) {
    case SB_CLI_ACCOUNT_CREATE:
    case SB_CLI_ACCOUNT_DISABLE:
    case SB_CLI_ACCOUNT_ENABLE:
        if (!sb_cli_valid_name(cli->arg[0]))
            return sb_cli_fail(err, errsz,
                               "invalid account name '%s' (1-%d characters of A-Z a-z 0-9 . _ @ : + -, starting "
                               "with a letter or digit)",
                               cli->arg[0], SB_CLI_NAME_MAX);
        return 0;
    case SB_CLI_GROUP_CREATE:
        if (!sb_cli_valid_name(cli->arg[0]))
            return sb_cli_fail(err, errsz,
                               "invalid group name '%s' (1-%d characters of A-Z a-z 0-9 . _ @ : + -, starting "
                               "with a letter or digit)",
                               cli->arg[0], SB_CLI_NAME_MAX);
        return 0;
    case SB_CLI_GROUP_ALLOW:
    case SB_CLI_GROUP_DENY:
        if (!sb_cli_valid_name(cli->arg[0]))
            return sb_cli_fail(err, errsz, "invalid group name '%s'", cli->arg[0]);
        if (strcmp(cli->arg[1], "*") && !sb_cli_valid_model_id(cli->arg[1]))
            return sb_cli_fail(err, errsz, "invalid model id '%s' (use '*' for every model)", cli->arg[1]);
        return 0;
    case SB_CLI_KEY_CREATE:
        if (!cli->account)
            return sb_cli_fail(err, errsz, "key create: --account NAME is required");
        if (!cli->group)
            return sb_cli_fail(err, errsz, "key create: --group NAME is required");
        return 0;
    case SB_CLI_KEY_SET_GROUP:
        if (!sb_cli_valid_name(cli->arg[1]))
            return sb_cli_fail(err, errsz, "invalid group name '%s'", cli->arg[1]);
        /* fall through */
    case SB_CLI_KEY_DISABLE:
    case SB_CLI_KEY_ENABLE:
    case SB_CLI_ADMIN_KEY_DISABLE:
    case SB_CLI_ADMIN_KEY_ENABLE:
        if (sb_cli_parse_int(cli->arg[0], 1, LLONG_MAX, &cli->key_id) != 0)
            return sb_cli_fail(err, errsz, "invalid key id '%s' (a positive integer, see 'sbctl key list')",
                               cli->arg[0]);
        return 0;
    case SB_CLI_MODEL_ADD:
        if (!cli->provider)
            return sb_cli_fail(err, errsz, "model add: --provider is required");
        if (!cli->base_url)
            return sb_cli_fail(err, errsz, "model add: --base-url is required");
        /* fall through */
    case SB_CLI_MODEL_DISABLE:
    case SB_CLI_MODEL_ENABLE:
    case SB_CLI_MODEL_SET:
    case SB_CLI_MODEL_FALLBACK:
        if (!sb_cli_valid_model_id(cli->arg[0]))
            return sb_cli_fail(err, errsz,
                               "invalid model id '%s' (1-%d characters of A-Z a-z 0-9 . _ @ : + - /, starting "
                               "with a letter or digit)",
                               cli->arg[0], SB_CLI_MODEL_MAX);
        if (cli->cmd == SB_CLI_MODEL_SET && cli->given == 0)
            return sb_cli_fail(err, errsz, "model set: nothing to change (give at least one option)");
        if (cli->cmd == SB_CLI_MODEL_ADD && !cli->upstream_model) {
            if (!sb_cli_valid_upstream_model(cli->arg[0]))
                return sb_cli_fail(err, errsz, "invalid model id '%s'", cli->arg[0]);
            cli->upstream_model = cli->arg[0];
        }
        for (int i = 1; cli->cmd == SB_CLI_MODEL_FALLBACK && i < cli->nargs; i++)
            if (!sb_cli_valid_model_id(cli->arg[i]))
                return sb_cli_fail(err, errsz, "invalid fallback model id '%s'", cli->arg[i]);
        return 0;
    case SB_CLI_PROMPT_CREATE:
        if (!cli->account)
            return sb_cli_fail(err, errsz, "prompt create: --account NAME is required");
        if (!cli->name || !*cli->name)
            return sb_cli_fail(err, errsz, "prompt create: --name NAME is required (not empty)");
        return sb_cli_check_body_source(cli, "create", err, errsz);
    case SB_CLI_PROMPT_VERSION:
        if (!sb_cli_valid_prompt_id(cli->arg[0]))
            return sb_cli_bad_prompt_id(cli->arg[0], err, errsz);
        return sb_cli_check_body_source(cli, "version", err, errsz);
    case SB_CLI_PROMPT_SET_CURRENT: {
        if (!sb_cli_valid_prompt_id(cli->arg[0]))
            return sb_cli_bad_prompt_id(cli->arg[0], err, errsz);
        long long v;
        if (sb_cli_parse_int(cli->arg[1], 1, INT_MAX, &v) != 0)
            return sb_cli_fail(err, errsz, "invalid version '%s' (a positive integer)", cli->arg[1]);
        cli->version = (int)v;
        return 0;
    }
    case SB_CLI_PROMPT_SHOW:
        if (!sb_cli_valid_prompt_id(cli->arg[0]))
            return sb_cli_bad_prompt_id(cli->arg[0], err, errsz);
        return 0;
    case SB_CLI_LIMITS_SET:
        return sb_cli_check_limits_set(cli, err, errsz);
    case SB_CLI_LIMITS_RESET_USAGE:
        if (!cli->account)
            return sb_cli_fail(err, errsz, "limits reset-usage: --account NAME is required");
        return 0;
    case SB_CLI_SEARCH_BACKEND_ADD:
        if (!cli->kind)
            return sb_cli_fail(err, errsz, "search-backend add: --kind is required");
        if (!cli->base_url)
            return sb_cli_fail(err, errsz, "search-backend add: --base-url is required");
        /* fall through */
    case SB_CLI_SEARCH_BACKEND_REMOVE:
    case SB_CLI_SEARCH_BACKEND_SET_DEFAULT:
    case SB_CLI_SEARCH_BACKEND_DISABLE:
    case SB_CLI_SEARCH_BACKEND_ENABLE:
        if (!sb_cli_valid_name(cli->arg[0]))
            return sb_cli_fail(err, errsz,
                               "invalid search backend name '%s' (1-%d characters of A-Z a-z 0-9 . _ @ : + -, "
                               "starting with a letter or digit)",
                               cli->arg[0], SB_CLI_NAME_MAX);
        return 0;
    case SB_CLI_HELP:
    case SB_CLI_MIGRATE:
    case SB_CLI_SEARCH_BACKEND_LIST:
    case SB_CLI_TOOLS_LOG:
    case SB_CLI_ADMIN_KEY_CREATE:
    case SB_CLI_ADMIN_KEY_LIST:
    case SB_CLI_ACCOUNT_LIST:
    case SB_CLI_GROUP_LIST:
    case SB_CLI_KEY_LIST:
    case SB_CLI_MODEL_LIST:
    case SB_CLI_PROMPT_LIST:
    case SB_CLI_LIMITS_SHOW:
        return 0;
    }
    return 0;
}

static void sb_cli_help(struct sb_cli *cli, const char *group, const char *verb)
{
    cli->cmd = SB_CLI_HELP;
    cli->help_group = group;
    cli->help_verb = verb;
}

int sb_cli_parse(struct sb_cli *cli, int argc, char **argv, char *err, size_t errsz)
{
    memset(cli, 0, sizeof *cli);
    if (errsz)
        err[0] = '\0';
    if (argc < 2)
        return sb_cli_fail(err, errsz, "missing command");

    const char *first = argv[1];
    int i;
    const struct sb_cli_spec *spec;
    if (sb_cli_is_help(first) || !strcmp(first, "help")) {
        /* "sbctl help [GROUP [VERB]]" */
        const char *g = argc > 2 ? argv[2] : NULL;
        const char *v = argc > 3 ? argv[3] : NULL;
        if (g && !sb_cli_is_group(g) && !sb_cli_find(NULL, g))
            return sb_cli_fail(err, errsz, "unknown command '%s'", g);
        if (g && sb_cli_find(NULL, g)) {
            v = g;
            g = NULL;
        } else if (g && v && !sb_cli_find(g, v)) {
            return sb_cli_fail(err, errsz, "unknown command '%s %s'", g, v);
        }
        sb_cli_help(cli, g, v);
        return 0;
    }
    if (sb_cli_is_group(first)) {
        if (argc < 3)
            return sb_cli_fail(err, errsz, "%s: missing subcommand (see 'sbctl %s --help')", first, first);
        if (sb_cli_is_help(argv[2])) {
            sb_cli_help(cli, first, NULL);
            return 0;
        }
        spec = sb_cli_find(first, argv[2]);
        if (!spec)
            return sb_cli_fail(err, errsz, "unknown command '%s %s' (see 'sbctl %s --help')", first, argv[2], first);
        i = 3;
    } else {
        spec = sb_cli_find(NULL, first);
        if (!spec)
            return sb_cli_fail(err, errsz, "unknown command '%s' (see 'sbctl --help')", first);
        i = 2;
    }
    cli->cmd = spec->cmd;
    cli->run = spec->run;
    const char *cmdname = spec->group ? spec->group : spec->verb;
    const char *sub = spec->group ? spec->verb : "";

    bool options_done = false;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!options_done && sb_cli_is_help(a)) {
            sb_cli_help(cli, spec->group, spec->verb);
            return 0;
        }
        if (!options_done && !strcmp(a, "--")) {
            options_done = true;
            continue;
        }
        if (!options_done && a[0] == '-' && a[1] != '\0') {
            const char *eq = strchr(a, '=');
            size_t len = eq ? (size_t)(eq - a) : strlen(a);
            const struct sb_cli_opt *o = sb_cli_find_opt(a, len);
            if (!o || !(spec->opts & o->bit))
                return sb_cli_fail(err, errsz, "%s %s: unknown option '%.*s'", cmdname, sub, (int)len, a);
            if (cli->given & o->bit)
                return sb_cli_fail(err, errsz, "%s given twice", o->name);
            const char *val = NULL;
            if (o->has_value) {
                if (eq)
                    val = eq + 1;
                else if (i + 1 < argc)
                    val = argv[++i];
                else
                    return sb_cli_fail(err, errsz, "%s needs a value", o->name);
            } else if (eq) {
                return sb_cli_fail(err, errsz, "%s takes no value", o->name);
            }
            int rc = sb_cli_set_opt(cli, o, val, err, errsz);
            if (rc != 0)
                return rc;
            cli->given |= o->bit;
            continue;
        }
        if (cli->nargs >= spec->max_args) {
            if (spec->cmd == SB_CLI_MODEL_FALLBACK)
                return sb_cli_fail(err, errsz, "model fallback: at most %d fallbacks", SB_CLI_FALLBACK_MAX);
            return sb_cli_fail(err, errsz, "%s %s: unexpected argument '%s'", cmdname, sub, a);
        }
        cli->arg[cli->nargs++] = a;
    }
    if (cli->nargs < spec->min_args)
        return sb_cli_fail(err, errsz, "usage: sbctl %s%s%s %s", spec->group ? spec->group : "", spec->group ? " " : "",
                           spec->verb, spec->synopsis);
    return sb_cli_check(cli, err, errsz);
}

static void sb_cli_usage_one(FILE *out, const struct sb_cli_spec *s)
{
    fprintf(out, "  sbctl %s%s%s%s%s\n", s->group ? s->group : "", s->group ? " " : "", s->verb,
            *s->synopsis ? " " : "", s->synopsis);
    fprintf(out, "      %s\n", s->summary);
}

/* The body format, after the prompt commands' usage and in the overview. */
static void sb_cli_usage_prompt_body(FILE *out)
{
    fprintf(out, "\nA prompt body is a JSON object {\"instructions\": TEXT, \"input\": [ITEMS]} with either\n"
                 "key or both; ITEMS are Responses input items. Texts may hold {{name}} placeholders\n"
                 "(name: A-Z a-z 0-9 _), filled from the request's prompt.variables. --instructions\n"
                 "TEXT is short for {\"instructions\": TEXT}; --body-file - reads standard input.\n");
}

/* How the limits combine, after the limits commands' usage. */
static void sb_cli_usage_limits(FILE *out)
{
    fprintf(out, "\nA request must pass its key's limits and its token group's (shared by all the group's\n"
                 "keys) and fit in its account's quota: input + output tokens, reasoning included, drawn\n"
                 "as requests finish and never reset by themselves. Changes apply to running frontends\n"
                 "at once.\n");
}

/* What the default backend is for, after the search-backend commands' usage. */
static void sb_cli_usage_search(FILE *out)
{
    fprintf(out, "\nWeb search run by the gateway (every model whose capabilities do not say\n"
                 "\"web_search\": false or \"native\") uses the default backend, when it is enabled; with\n"
                 "none, web search is unavailable (400, or left out when offered beside function tools).\n"
                 "Changes apply to running frontends at once.\n");
}

void sb_cli_usage(FILE *out, const char *group, const char *verb)
{
    if (verb) {
        const struct sb_cli_spec *s = sb_cli_find(group, verb);
        if (s) {
            fprintf(out, "usage:\n");
            sb_cli_usage_one(out, s);
            if (s->opts & SB_PROMPT_BODY_OPTS)
                sb_cli_usage_prompt_body(out);
            if (s->group && !strcmp(s->group, "limits"))
                sb_cli_usage_limits(out);
            if (s->group && !strcmp(s->group, "search-backend"))
                sb_cli_usage_search(out);
            return;
        }
    }
    if (!group) {
        fprintf(out, "sbctl: administer a Switchboard gateway (accounts, token groups, API keys, models,\n"
                     "prompt templates, rate limits and quotas, search backends, the tool call log).\n\n"
                     "Connects with the libpq connection string in SB_PG_DSN, or libpq's own PG*\n"
                     "variables when SB_PG_DSN is unset. Exit status: 0 ok, 1 error, 2 usage error.\n\n"
                     "commands:\n");
    } else {
        fprintf(out, "usage:\n");
    }
    for (size_t i = 0; i < SB_CLI_NSPECS; i++) {
        const struct sb_cli_spec *s = &sb_cli_specs[i];
        if (group && (!s->group || strcmp(group, s->group)))
            continue;
        sb_cli_usage_one(out, s);
    }
    if (!group || !strcmp(group, "prompt"))
        sb_cli_usage_prompt_body(out);
    if (group && !strcmp(group, "limits"))
        sb_cli_usage_limits(out);
    if (group && !strcmp(group, "search-backend"))
        sb_cli_usage_search(out);
    if (!group)
        fprintf(out, "\n'sbctl COMMAND --help' shows one command's usage. migrate finds schema/ via\n"
                     "--dir, then SB_SCHEMA_DIR, then ../../schema from the executable, then the\n"
                     "source tree it was built from.\n");
}
