/*
 * sb_migrate: applies schema/NNN_name.sql files in version order, each in its
 * own transaction, recording them in schema_migrations. A session advisory
 * lock serialises concurrent runs; applied versions are skipped, so running it
 * again is a no-op.
 *
 * Scanning the directory (sb_migrate_scan) needs no database, so it is
 * unit-tested; sb_migrate_run is exercised by the integration tests.
 */
#ifndef SB_MIGRATE_H
#define SB_MIGRATE_H

#include <stddef.h>

#include "sb_ctldb.h"

#define SB_MIGRATE_MUSTCHECK __attribute__((warn_unused_result))

struct sb_migration {
    int version; /* the NNN prefix */
    char *file;  /* owned: base name, e.g. "001_init.sql" */
    char *path;  /* owned: dir + "/" + file */
};

/*
 * Parses a migration file name "NNN_anything.sql" (one or more digits, an
 * underscore, a non-empty rest, ".sql"). Returns 0 and the version, or
 * -EINVAL for any other name.
 */
int sb_migrate_parse_name(const char *file, int *version) SB_MIGRATE_MUSTCHECK;

/*
 * Lists dir's migration files sorted by version into *out (owned; free with
 * sb_migrate_free). Other files are ignored. Returns 0, -ENOENT/-errno when
 * dir cannot be read, or -EEXIST when two files share a version (printed).
 */
int sb_migrate_scan(const char *dir, struct sb_migration **out, size_t *n) SB_MIGRATE_MUSTCHECK;

void sb_migrate_free(struct sb_migration **m, size_t n);

/*
 * The schema directory to use when --dir is not given: $SB_SCHEMA_DIR, else
 * ../../schema relative to the executable (build/bin -> repo), else the source
 * tree's schema/ this binary was built from. Returns an owned string, or NULL
 * when none of them is a directory.
 */
char *sb_migrate_default_dir(void);

/* Applies every pending migration in dir; prints one line per applied file
 * (or that the schema is up to date) on stdout. Returns 0 or a negative code. */
int sb_migrate_run(struct sb_ctldb *db, const char *dir) SB_MIGRATE_MUSTCHECK;

#endif
