/*
 * sbctl_test_pg: what the sbctl unit tests share: the argument parser
 * driven like the binary, and a throwaway PostgreSQL cluster (initdb in a
 * temporary directory, reachable only through a unix socket there) with the
 * built sbctl run against it and the test's own connection to check what it
 * wrote. Included by test_sbctl.c and test_sbctl_tools.c; each test binary
 * makes its own cluster.
 */
#ifndef SBCTL_TEST_PG_H
#define SBCTL_TEST_PG_H

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
#include "sb_test.h"

static char err[512];

/* Parses a NULL-terminated list of words after "sbctl". */
static __attribute__((unused)) int parse(struct sb_cli *cli, const char *first, ...)
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
static __attribute__((unused)) int proc_start(struct proc *p, char *const argv[], const char *in, bool as_pg)
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

static __attribute__((unused)) char *slurp(FILE *f)
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
static __attribute__((unused)) int proc_finish(struct proc *p, char **out, char **errout)
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

static __attribute__((unused)) int run(char *const argv[], const char *in, bool as_pg, char **out, char **errout)
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

static __attribute__((unused)) int pg_tool(const char *tool, char *const args[], char **errout)
{
    char path[300];
    snprintf(path, sizeof path, "%s/%s", pg.bindir, tool);
    char *argv[16] = {path};
    for (int i = 0; args[i] && i < 14; i++)
        argv[i + 1] = args[i];
    return run(argv, NULL, true, NULL, errout);
}

/* Stops and deletes the cluster; runs at exit too, so a failing test leaves no server behind. */
static __attribute__((unused)) void pg_cleanup(void)
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
static __attribute__((unused)) int pg_setup(void)
{
    glob_t g;
    if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) != 0 || g.gl_pathc == 0) {
        globfree(&g);
        printf("sbctl: SKIP database tests: no /usr/lib/postgresql/*/bin/initdb\n");
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
            printf("sbctl: SKIP database tests: running as root and there is no postgres user\n");
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
static __attribute__((unused)) int sbctl_in(const char *in, char **out, char **errout, const char *first, ...)
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
static __attribute__((unused)) char *query1(const char *sql, const char *param)
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

/* Runs a statement with text parameters on the test's connection; true when it succeeded. */
static __attribute__((unused)) bool exec_sql(const char *sql, int nparams, const char *const *params)
{
    PGresult *res = PQexecParams(pg.conn, sql, nparams, NULL, params, NULL, NULL, 0);
    bool ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;
    if (!ok)
        fprintf(stderr, "test_sbctl: %s: %s", sql, PQerrorMessage(pg.conn));
    PQclear(res);
    return ok;
}

/* Reads the sb_config notifications that reached the test's connection (it
 * LISTENs): true when one named table. drain: just empty the queue. A commit
 * signals listeners before it returns, so sbctl having exited means the
 * notification is on its way; a few round trips pick it up. */
static __attribute__((unused)) bool notified(const char *table, bool drain)
{
    bool seen = false;
    for (int i = 0; i < (drain ? 1 : 50) && !seen; i++) {
        if (i > 0)
            usleep(20000);
        PQclear(PQexec(pg.conn, "SELECT 1"));
        PGnotify *n;
        while ((n = PQnotifies(pg.conn)) != NULL) {
            if (table && !strcmp(n->relname, "sb_config") && !strcmp(n->extra, table))
                seen = true;
            PQfreemem(n);
        }
    }
    return seen;
}

/* Creates a key with sbctl and writes its id into id[24]. */
static __attribute__((unused)) void new_key(const char *account, const char *group, char id[24])
{
    char *e = NULL;
    CHECK_INT(SBCTL(NULL, &e, "key", "create", "--account", account, "--group", group), 0);
    free(e);
    char *v = query1("SELECT max(id)::text FROM api_keys", NULL);
    snprintf(id, 24, "%s", v ? v : "0");
    free(v);
}

/* The line of an sbctl table whose first two cells are c0 and c1, with each
 * run of spaces collapsed to one ("" when there is none). Static storage. */
static __attribute__((unused)) const char *table_row(const char *table, const char *c0, const char *c1)
{
    static char row[1024];
    size_t n0 = strlen(c0), n1 = strlen(c1);
    for (const char *p = table; p && *p;) {
        size_t len = strcspn(p, "\n");
        size_t k = 0;
        for (size_t i = 0; i < len && k + 1 < sizeof row; i++)
            if (p[i] != ' ' || (k > 0 && row[k - 1] != ' '))
                row[k++] = p[i];
        row[k] = '\0';
        if (!strncmp(row, c0, n0) && row[n0] == ' ' && !strncmp(row + n0 + 1, c1, n1) &&
            (row[n0 + 1 + n1] == ' ' || row[n0 + 1 + n1] == '\0'))
            return row;
        p += len;
        if (*p == '\n')
            p++;
    }
    return "";
}

/* Where the cells of one table line start, in characters (UTF-8 aware; cells
 * hold no spaces). Returns how many cells, at most max. */
static __attribute__((unused)) int cell_starts(const char *line, size_t len, size_t *start, int max)
{
    int n = 0;
    size_t ch = 0;
    bool prev_space = true;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)line[i];
        if ((c & 0xC0) == 0x80)
            continue; /* a continuation byte: same character */
        bool space = c == ' ';
        if (!space && prev_space && n < max)
            start[n++] = ch;
        prev_space = space;
        ch++;
    }
    return n;
}

/* True when every row of a table has the header's cells, starting at the same columns. */
static __attribute__((unused)) bool table_aligned(const char *table)
{
    size_t head[32], cells[32];
    if (!table || !*table)
        return false;
    size_t len = strcspn(table, "\n");
    int nh = cell_starts(table, len, head, 32);
    for (const char *p = table + len; *p == '\n' && p[1];) {
        p++;
        len = strcspn(p, "\n");
        if (cell_starts(p, len, cells, 32) != nh || memcmp(cells, head, (size_t)nh * sizeof head[0]) != 0) {
            fprintf(stderr, "test_sbctl: misaligned row: %.*s\n", (int)len, p);
            return false;
        }
        p += len;
    }
    return true;
}

#define KEY_LIMITS                                                                                                     \
    "SELECT format('%s/%s/%s', rpm_limit, tpm_limit, concurrency_limit) FROM api_keys WHERE id = $1::bigint"
#define GROUP_LIMITS                                                                                                   \
    "SELECT format('%s/%s/%s', rpm_limit, tpm_limit, concurrency_limit) FROM token_groups WHERE name = $1"
#define QUOTA "SELECT format('%s', quota_tokens) FROM accounts WHERE name = $1"
#define USED                                                                                                           \
    "SELECT COALESCE((SELECT tokens_used::text FROM account_usage u JOIN accounts a ON a.id = u.account_id "           \
    "WHERE a.name = $1), 'none')"
#define LIMITS_HEADER "scope  name  account  rpm  tpm  concurrency  quota  used  in_flight  remaining\n"

/* Expects sbctl to fail with status: nothing on stdout, why on stderr. */
#define CHECK_FAILS(status, why, ...)                                                                                  \
    do {                                                                                                               \
        char *o_ = NULL, *e_ = NULL;                                                                                   \
        CHECK_INT(SBCTL(&o_, &e_, __VA_ARGS__), status);                                                               \
        CHECK_STR(o_, "");                                                                                             \
        CHECK(e_ != NULL && strstr(e_, why) != NULL);                                                                  \
        if (!e_ || !strstr(e_, why))                                                                                   \
            fprintf(stderr, "  stderr was: %s\n", e_ ? e_ : "(null)");                                                 \
        free(o_);                                                                                                      \
        free(e_);                                                                                                      \
    } while (0)

/* Expects sbctl to succeed printing exactly want, and nothing on stderr. */
#define CHECK_PRINTS(want, ...)                                                                                        \
    do {                                                                                                               \
        char *o_ = NULL, *e_ = NULL;                                                                                   \
        CHECK_INT(SBCTL(&o_, &e_, __VA_ARGS__), 0);                                                                    \
        CHECK_STR(o_, want);                                                                                           \
        CHECK_STR(e_, "");                                                                                             \
        free(o_);                                                                                                      \
        free(e_);                                                                                                      \
    } while (0)

/* The cluster up and migrated: 1, or 0 when no PostgreSQL server binaries
 * are installed (the database tests are skipped). A failure fails the test. */
static __attribute__((unused)) int pg_setup_migrated(void)
{
    int up = pg_setup();
    CHECK(up >= 0);
    if (up <= 0)
        return 0;
    char *e = NULL;
    CHECK_INT(SBCTL(NULL, &e, "migrate", "--dir", SB_TEST_SCHEMA_DIR), 0);
    if (e && *e)
        fprintf(stderr, "%s", e);
    free(e);
    return 1;
}

/* A model routed nowhere (its upstream is never called). */
static __attribute__((unused)) void add_model(const char *id)
{
    CHECK_INT(SBCTL(NULL, NULL, "model", "add", id, "--provider", "openai-chat", "--base-url", "http://127.0.0.1:9/v1"),
              0);
}

#endif
