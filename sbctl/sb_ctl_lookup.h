/*
 * sb_ctl_lookup: the helpers every sbctl command file shares (name-to-id
 * lookups, printing a query, inserting a new named row). Like the commands,
 * each prints its reason to stderr and returns 0 or a negative errno-style
 * code; it calls no command.
 */
#ifndef SB_CTL_LOOKUP_H
#define SB_CTL_LOOKUP_H

#include <stdbool.h>

#include "sb_cli.h"
#include "sb_ctldb.h"

/* Looks up an account or token group by name; writes its id (decimal) into
 * id[32]. Returns 0, -ENOENT (printed), or -EIO. */
/* Who makes sbctl's changes, for the audit (schema/014_admin.sql):
 * "sbctl:<os user>". */
const char *sb_ctl_actor(void);

int sb_ctl_account_id(struct sb_ctldb *db, const char *name, char id[32], bool *enabled) SB_CLI_MUSTCHECK;
int sb_ctl_group_id(struct sb_ctldb *db, const char *name, char id[32]) SB_CLI_MUSTCHECK;

/* Runs a SELECT and prints its result as a table; 0 or -EIO. */
int sb_ctl_print_query(struct sb_ctldb *db, const char *sql, int nparams, const char *const *params) SB_CLI_MUSTCHECK;

/* Runs an INSERT ... ON CONFLICT DO NOTHING RETURNING statement for a new
 * WHAT named NAME. Returns 1 when the row was inserted; 0 when it existed and
 * --if-not-exists accepts that (said on stdout); -EEXIST (said on stderr) or
 * -EIO otherwise. hint follows both messages ("" for none). */
int sb_ctl_insert_new(struct sb_ctldb *db, const struct sb_cli *cli, const char *what, const char *name,
                      const char *hint, const char *sql, int nparams, const char *const *params) SB_CLI_MUSTCHECK;

#endif
