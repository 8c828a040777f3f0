/*
 * sb_migrate: the schema migration runner behind "sbctl migrate".
 */
#include "sb_migrate.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sb_alloc.h"

/* Held for the whole run; a fixed expression, so it is the same key for every
 * sbctl that migrates this database. */
#define SB_MIGRATE_LOCK_ARG "hashtext('switchboard:migrate')"

int sb_migrate_parse_name(const char *file, int *version)
{
    size_t len = strlen(file);
    size_t digits = 0;
    while (file[digits] >= '0' && file[digits] <= '9')
        digits++;
    /* digits, '_', at least one character, ".sql" */
    if (digits == 0 || digits > 9 || file[digits] != '_' || len < digits + 1 + 1 + 4 ||
        strcmp(file + len - 4, ".sql") != 0)
        return -EINVAL;
    long v = strtol(file, NULL, 10); /* at most 9 digits: cannot overflow */
    *version = (int)v;
    return 0;
}

static int sb_migrate_cmp(const void *a, const void *b)
{
    const struct sb_migration *x = a, *y = b;
    return (x->version > y->version) - (x->version < y->version);
}

void sb_migrate_free(struct sb_migration **m, size_t n)
{
    if (!m || !*m)
        return;
    for (size_t i = 0; i < n; i++) {
        free((*m)[i].file);
        free((*m)[i].path);
    }
    free(*m);
    *m = NULL;
}

int sb_migrate_scan(const char *dir, struct sb_migration **out, size_t *n)
{
    struct sb_migration *list = NULL;
    size_t count = 0, cap = 0;
    int rc = 0;
    DIR *d = opendir(dir);
    if (!d) {
        rc = -errno;
        fprintf(stderr, "sbctl: cannot read schema directory %s: %s\n", dir, strerror(errno));
        goto fail;
    }
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int version;
        if (sb_migrate_parse_name(de->d_name, &version) != 0)
            continue;
        if (count == cap) {
            cap = cap ? cap * 2 : 16;
            list = sb_xrealloc(list, cap * sizeof *list);
        }
        list[count].version = version;
        list[count].file = sb_xstrdup(de->d_name);
        list[count].path = sb_xasprintf("%s/%s", dir, de->d_name);
        count++;
    }
    closedir(d);
    if (count)
        qsort(list, count, sizeof *list, sb_migrate_cmp);
    for (size_t i = 1; i < count; i++) {
        if (list[i].version == list[i - 1].version) {
            fprintf(stderr, "sbctl: %s and %s have the same version %d\n", list[i - 1].file, list[i].file,
                    list[i].version);
            rc = -EEXIST;
            goto fail;
        }
    }
    *out = list;
    *n = count;
    return 0;

fail:
    sb_migrate_free(&list, count);
    return rc;
}

static bool sb_migrate_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

char *sb_migrate_default_dir(void)
{
    const char *env = getenv("SB_SCHEMA_DIR");
    if (env && *env)
        return sb_xstrdup(env);

    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n > 0) {
        exe[n] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0';
            char *dir = sb_xasprintf("%s/../../schema", exe);
            if (sb_migrate_is_dir(dir))
                return dir;
            free(dir);
        }
    }
#ifdef SB_SOURCE_SCHEMA_DIR
    if (sb_migrate_is_dir(SB_SOURCE_SCHEMA_DIR))
        return sb_xstrdup(SB_SOURCE_SCHEMA_DIR);
#endif
    return NULL;
}

static char *sb_migrate_read(const char *path)
{
    char *buf = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "sbctl: cannot open %s: %s\n", path, strerror(errno));
        goto fail;
    }
    size_t len = 0, cap = 8192;
    buf = sb_xmalloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) {
            cap *= 2;
            buf = sb_xrealloc(buf, cap);
        }
    }
    if (ferror(f)) {
        fprintf(stderr, "sbctl: cannot read %s: %s\n", path, strerror(errno));
        goto fail;
    }
    fclose(f);
    f = NULL;
    buf[len] = '\0';
    if (strlen(buf) != len) {
        fprintf(stderr, "sbctl: %s contains a NUL byte\n", path);
        goto fail;
    }
    return buf;

fail:
    if (f)
        fclose(f);
    free(buf);
    return NULL;
}

/* Applies one migration file in its own transaction. */
static int sb_migrate_apply(struct sb_ctldb *db, const struct sb_migration *m)
{
    int rc = -EIO;
    char *sql = sb_migrate_read(m->path);
    if (!sql)
        goto fail;
    if (sb_ctldb_run(db, "BEGIN", 0, NULL) != 0)
        goto fail;
    if (sb_ctldb_script(db, m->file, sql) != 0)
        goto fail;
    char version[16];
    snprintf(version, sizeof version, "%d", m->version);
    const char *params[] = {version, m->file};
    if (sb_ctldb_run(db, "INSERT INTO schema_migrations (version, name) VALUES ($1::int, $2)", 2, params) != 0)
        goto fail;
    if (sb_ctldb_run(db, "COMMIT", 0, NULL) != 0)
        goto fail;
    free(sql);
    return 0;

fail:
    sb_ctldb_rollback(db);
    free(sql);
    return rc;
}

/* Returns true when version is in the sorted-or-not list of applied versions. */
static bool sb_migrate_applied(const PGresult *res, int version)
{
    for (int r = 0; r < PQntuples(res); r++)
        if (strtol(PQgetvalue(res, r, 0), NULL, 10) == version)
            return true;
    return false;
}

int sb_migrate_run(struct sb_ctldb *db, const char *dir)
{
    struct sb_migration *list = NULL;
    size_t n = 0;
    PGresult *res = NULL;
    bool locked = false;
    int rc = sb_migrate_scan(dir, &list, &n);
    if (rc != 0)
        goto fail;
    if (n == 0) {
        fprintf(stderr, "sbctl: no NNN_*.sql migrations in %s\n", dir);
        rc = -ENOENT;
        goto fail;
    }

    rc = -EIO;
    res = sb_ctldb_exec(db, "SELECT pg_try_advisory_lock(" SB_MIGRATE_LOCK_ARG ")", 0, NULL);
    if (!res)
        goto fail;
    locked = !strcmp(PQgetvalue(res, 0, 0), "t");
    PQclear(res);
    res = NULL;
    if (!locked) {
        fprintf(stderr, "sbctl: another migration is running; waiting for it\n");
        if (sb_ctldb_run(db, "SELECT pg_advisory_lock(" SB_MIGRATE_LOCK_ARG ")", 0, NULL) != 0)
            goto fail;
        locked = true;
    }
    if (sb_ctldb_run(db,
                     "CREATE TABLE IF NOT EXISTS schema_migrations ("
                     " version int PRIMARY KEY,"
                     " name text NOT NULL,"
                     " applied_at timestamptz NOT NULL DEFAULT now())",
                     0, NULL) != 0)
        goto fail;
    res = sb_ctldb_exec(db, "SELECT version FROM schema_migrations", 0, NULL);
    if (!res)
        goto fail;

    int applied = 0, latest = 0;
    for (size_t i = 0; i < n; i++) {
        if (sb_migrate_applied(res, list[i].version)) {
            latest = list[i].version;
            continue;
        }
        if (sb_migrate_apply(db, &list[i]) != 0) {
            fprintf(stderr, "sbctl: migration %s failed; rolled back (%d applied before it)\n", list[i].file, applied);
            goto fail;
        }
        printf("applied %s\n", list[i].file);
        applied++;
        latest = list[i].version;
    }
    if (applied == 0)
        printf("schema up to date (version %d)\n", latest);
    rc = 0;

fail:
    PQclear(res);
    if (locked && sb_ctldb_run(db, "SELECT pg_advisory_unlock(" SB_MIGRATE_LOCK_ARG ")", 0, NULL) != 0)
        fprintf(stderr, "sbctl: could not release the migration lock (it goes with the connection)\n");
    sb_migrate_free(&list, n);
    return rc;
}
