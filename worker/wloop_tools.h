/*
 * wloop_tools: what the data tools' steps share (wloop_tools.c) and each
 * tool's entry points: the code interpreter (wloop_code.c) and file search
 * (wloop_fsearch.c). Private to the loop's files.
 */
#ifndef SB_WLOOP_TOOLS_H
#define SB_WLOOP_TOOLS_H

#include <libpq-fe.h>

#include "wloop_internal.h"

/* A query of a step on the worker's database. The answer reaches cb with
 * owner unless sb_wdbq_forget ran first (the step went away): the token
 * frees itself when the answer comes. */
typedef struct sb_wdbq sb_wdbq_t;
typedef void (*sb_wdbq_cb)(const PGresult *res, const char *err, void *owner);
/* Needs l->j->w->db. Returns the token (borrowed: valid until the answer). */
sb_wdbq_t *sb_wdbq_run(sb_wloop_t *l, const char *stmt, int n, const char *const *params, sb_wdbq_cb cb, void *owner);
/* The answer of *q is dropped; sets *q to NULL. NULL-safe. */
void sb_wdbq_forget(sb_wdbq_t **q);

/* wloop_code.c */
json_t *sb_wloop_code_item(sb_wloop_t *l, sb_wexec_t *e);
void sb_wloop_code_args(sb_wexec_t *e, const char *args, size_t len);
void sb_wloop_code_start(sb_wexec_t *e, const json_t *args);
void sb_wloop_code_cancel(sb_wexec_t *e);
void sb_wloop_code_free(sb_wloop_t *l);

/* wloop_fsearch.c */
void sb_wloop_fsearch_start(sb_wexec_t *e, const json_t *args);
void sb_wloop_fsearch_cancel(sb_wexec_t *e);

#endif
