/*
 * emu_faults: the emulator's per-route fault table and per-model counters.
 *
 * A route is the upstream model a request asks for. A test configures faults
 * for it at runtime (PUT /_emu/faults/{model} with a directive list, for the
 * next `count` requests or until cleared), and reads how many requests each
 * model received and how many of them got an injected fault (GET
 * /_emu/stats, "by_model"). The protocols reach the table through
 * sb_emu_fault_stage (emu_internal.h); emu_server.c owns it and routes the
 * control endpoints here. Everything is documented at the top of main.c.
 */
#ifndef SB_EMU_FAULTS_H
#define SB_EMU_FAULTS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "emu_internal.h"

/* Distinct models the counters keep; later ones are not counted (a bound, not a limit tests meet). */
#define SB_EMU_FAULTS_MAX_MODELS 4096
/* Routes with faults at one time. */
#define SB_EMU_FAULTS_MAX_ROUTES 1024

struct sb_emu_faults;

struct sb_emu_faults *sb_emu_faults_new(void);
/* NULL-safe; sets *f to NULL. */
void sb_emu_faults_destroy(struct sb_emu_faults **f);

/*
 * The /_emu/faults control endpoint. method "GET", "PUT" or "DELETE"; model
 * the decoded path after "/_emu/faults/", or NULL for "/_emu/faults"; body
 * the request body (borrowed). Sets *status and returns the JSON reply (a
 * new reference, never NULL).
 */
json_t *sb_emu_faults_control(struct sb_emu_faults *f, const char *method, const char *model, const char *body,
                              size_t body_len, int *status);

/*
 * For one request to model: when the route has faults, copies their
 * directives into *out, uses up one of a counted route's requests (the route
 * goes away after its last) and returns true; false when it has none.
 */
bool sb_emu_faults_take(struct sb_emu_faults *f, const char *model, struct sb_emu_directives *out);

/* Counts one request to model in the per-model counters (and a fault when faulted). */
void sb_emu_faults_note(struct sb_emu_faults *f, const char *model, bool faulted);
/* {"<model>":{"requests":N,"faults":F},...}: a new object. */
json_t *sb_emu_faults_by_model(const struct sb_emu_faults *f);
/* Forgets the per-model counters (DELETE /_emu/stats). The routes stay. */
void sb_emu_faults_reset_stats(struct sb_emu_faults *f);

#endif
