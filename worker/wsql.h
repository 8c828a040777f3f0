/*
 * wsql: every SQL statement the worker runs, on its tool data plane (the
 * worker's sb_db pool, made with --database): one set per tool that keeps
 * data (tools/wsql_<tool>.c), concatenated here. All values travel as
 * parameters; every statement that reads or writes a client's object takes
 * the job's account and scopes to it.
 */
#ifndef WSQL_H
#define WSQL_H

#include "sb_db.h"

/* Most statements the worker prepares (every set together). */
#define SB_WSQL_MAX_STATEMENTS 64

/* Every set, concatenated (static storage; *count is set). */
const sb_db_stmt_t *sb_wsql_all(int *count);

#endif
