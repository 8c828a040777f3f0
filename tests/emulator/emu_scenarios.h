/*
 * emu_scenarios: scripted behaviour per upstream model, so the emulator can
 * play the model for real coding-agent clients.
 *
 * Those clients (Codex CLI, Claude Code, Gemini CLI, the Agents SDK) start
 * every prompt with their own text (<environment_context>,
 * <system-reminder>), so a "CALL name {json}" line at the start of the last
 * user text cannot be used. A test installs a scenario for an upstream model
 * instead (PUT /_emu/scenarios/{model}): which tool to call and with what
 * arguments, how many times more to call it after its results ("repeat"),
 * what to say once that tool's result comes back, and what to say otherwise. emu_server.c owns the table and routes the
 * control endpoints here; emu_answer.c asks it for the answer of every generation request (sb_emu_scenarios_decide). A
 * scenario only changes what the model says: validation, faults, usage and streaming stay as for any answer. Everything
 * is documented at the top of main.c.
 */
#ifndef SB_EMU_SCENARIOS_H
#define SB_EMU_SCENARIOS_H

#include <jansson.h>
#include <stddef.h>

#include "emu_internal.h"

/* Scenarios installed at one time (a bound, not a limit tests meet). */
#define SB_EMU_SCENARIOS_MAX 1024
/* Bytes of a tool result that {{result}} takes in (cut on a UTF-8 boundary). */
#define SB_EMU_SCENARIO_RESULT_MAX 200
/* Most calls a scenario's "repeat" asks for. */
#define SB_EMU_SCENARIO_REPEAT_MAX 10000

struct sb_emu_scenarios;

struct sb_emu_scenarios *sb_emu_scenarios_new(void);
/* NULL-safe; sets *s to NULL. */
void sb_emu_scenarios_destroy(struct sb_emu_scenarios **s);

/*
 * The /_emu/scenarios control endpoint. method "GET", "PUT" or "DELETE";
 * model the decoded path after "/_emu/scenarios/", or NULL for
 * "/_emu/scenarios"; body the request body (borrowed). Sets *status and
 * returns the JSON reply (a new reference, never NULL).
 */
json_t *sb_emu_scenarios_control(struct sb_emu_scenarios *s, const char *method, const char *model, const char *body,
                                 size_t body_len, int *status);

enum sb_emu_scene {
    SB_EMU_SCENE_NONE, /* no scenario for the model, or it leaves this request to the usual behaviour */
    SB_EMU_SCENE_TEXT, /* the model says *text (rule 1: after_result, rule 3: answer) */
    SB_EMU_SCENE_CALL, /* the model calls *call (rule 2) */
};

/*
 * What the scenario of model (NULL: none) makes the model say to ask. body
 * is the request's JSON (any protocol; its history is where "repeat" counts
 * the tool's results). On SB_EMU_SCENE_TEXT *text is owned by the caller; on
 * SB_EMU_SCENE_CALL *call is filled (owned strings; custom set for a
 * Responses custom tool, whose arguments field then holds the raw input text).
 */
enum sb_emu_scene sb_emu_scenarios_decide(const struct sb_emu_scenarios *s, const char *model,
                                          const struct sb_emu_ask *ask, const json_t *body, char **text,
                                          struct sb_emu_tool_call *call);

#endif
