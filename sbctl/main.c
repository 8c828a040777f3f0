/*
 * sbctl: the Switchboard admin CLI. Parses the command line, connects with
 * SB_PG_DSN (or libpq's PG* variables), runs one command (the handler its row
 * of the command table names). Exit status: 0 ok, 1 error, 2 usage error.
 */
#include <stdio.h>
#include <stdlib.h>

#include "sb_cli.h"
#include "sb_ctldb.h"

int main(int argc, char **argv)
{
    struct sb_cli cli;
    char err[512];
    if (sb_cli_parse(&cli, argc, argv, err, sizeof err) != 0) {
        fprintf(stderr, "sbctl: %s\n", err);
        if (argc < 2)
            sb_cli_usage(stderr, NULL, NULL);
        return 2;
    }
    if (cli.cmd == SB_CLI_HELP) {
        sb_cli_usage(stdout, cli.help_group, cli.help_verb);
        return 0;
    }
    struct sb_ctldb *db = sb_ctldb_new(getenv("SB_PG_DSN"));
    if (!db)
        return 1;
    int rc = cli.run(db, &cli);
    sb_ctldb_destroy(&db);
    if (fflush(stdout) != 0 && rc == 0) {
        perror("sbctl: stdout");
        rc = -1;
    }
    return rc == 0 ? 0 : 1;
}
