/*
 * sb_ctl_migrate: "sbctl migrate": applies the schema's pending migrations
 * (sb_migrate.h) from --dir, or from the directory sb_migrate finds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "sb_alloc.h"
#include "sb_ctl.h"
#include "sb_migrate.h"

int sb_ctl_migrate(struct sb_ctldb *db, const struct sb_cli *cli)
{
    char *dir = cli->dir ? sb_xstrdup(cli->dir) : sb_migrate_default_dir();
    if (!dir) {
        fprintf(stderr, "sbctl: cannot find the schema directory; pass --dir DIR or set SB_SCHEMA_DIR\n");
        return -ENOENT;
    }
    int rc = sb_migrate_run(db, dir);
    free(dir);
    return rc;
}
