/*
 * sb_ctl: sbctl's commands. sb_ctl_run dispatches a parsed command line to one
 * sb_ctl_<area>_<verb> function (one file per area: account, group, key,
 * model, prompt, limits). Every function returns 0 or a negative errno-style
 * code after printing the reason to stderr: -ENOENT for a name or id that does
 * not exist, -EEXIST for a duplicate, -EINVAL for a fallback list naming a
 * model itself or a model twice, -EIO for a database error.
 *
 * Output: listings are aligned tables with a header line on stdout; changes
 * print one confirmation line on stdout; "key create" prints only the secret,
 * "prompt create" only the prompt id, "prompt version" only the new number,
 * "prompt show" only the body JSON.
 * Key hashes are never selected, so they cannot be printed.
 */
#ifndef SB_CTL_H
#define SB_CTL_H

#include "sb_cli.h"
#include "sb_ctldb.h"

#define SB_CTL_MUSTCHECK __attribute__((warn_unused_result))

int sb_ctl_run(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

/* Looks up an account or token group by name; writes its id (decimal) into
 * id[32]. Returns 0, -ENOENT (printed), or -EIO. */
int sb_ctl_account_id(struct sb_ctldb *db, const char *name, char id[32], bool *enabled) SB_CTL_MUSTCHECK;
int sb_ctl_group_id(struct sb_ctldb *db, const char *name, char id[32]) SB_CTL_MUSTCHECK;

/* Runs a SELECT and prints its result as a table; 0 or -EIO. */
int sb_ctl_print_query(struct sb_ctldb *db, const char *sql, int nparams, const char *const *params) SB_CTL_MUSTCHECK;

/* Runs an INSERT ... ON CONFLICT DO NOTHING RETURNING statement for a new
 * WHAT named NAME. Returns 1 when the row was inserted; 0 when it existed and
 * --if-not-exists accepts that (said on stdout); -EEXIST (said on stderr) or
 * -EIO otherwise. hint follows both messages ("" for none). */
int sb_ctl_insert_new(struct sb_ctldb *db, const struct sb_cli *cli, const char *what, const char *name,
                      const char *hint, const char *sql, int nparams, const char *const *params) SB_CTL_MUSTCHECK;

int sb_ctl_account_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_account_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_account_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled) SB_CTL_MUSTCHECK;

int sb_ctl_group_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_group_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_group_allow(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_group_deny(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_key_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_key_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_key_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled) SB_CTL_MUSTCHECK;
int sb_ctl_key_set_group(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_model_add(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_model_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_model_set_enabled(struct sb_ctldb *db, const struct sb_cli *cli, bool enabled) SB_CTL_MUSTCHECK;
int sb_ctl_model_set(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_model_fallback(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_prompt_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_prompt_version(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_prompt_set_current(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_prompt_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_prompt_show(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_limits_set(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_limits_show(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_limits_reset_usage(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

#endif
