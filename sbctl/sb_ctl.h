/*
 * sb_ctl: sbctl's commands, one sb_ctl_<area>_<verb> function per command
 * (one file per area: migrate, account, group, key, model, prompt, limits,
 * search backends and the tool call log),
 * each named in the command table (sb_cli.c), which is how a parsed command
 * line finds it; what the files share is in sb_ctl_lookup.h. Every function
 * returns 0 or a negative errno-style code after printing the reason to
 * stderr: -ENOENT for a name or id that does not exist, -EEXIST for a
 * duplicate, -EINVAL for a fallback list naming a model itself or a model
 * twice, -EIO for a database error.
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

int sb_ctl_migrate(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_account_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_account_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_account_disable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_account_enable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_group_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_group_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_group_allow(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_group_deny(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_key_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_key_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_key_disable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_key_enable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_key_set_group(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_admin_key_create(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_admin_key_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_admin_key_disable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_admin_key_enable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_model_add(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_model_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_model_disable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_model_enable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
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

int sb_ctl_search_backend_add(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_search_backend_list(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_search_backend_remove(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_search_backend_set_default(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_search_backend_disable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;
int sb_ctl_search_backend_enable(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

int sb_ctl_tools_log(struct sb_ctldb *db, const struct sb_cli *cli) SB_CTL_MUSTCHECK;

#endif
