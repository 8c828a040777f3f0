/*
 * strict: the check behind strict structured output. A job whose
 * text.format is json_schema with "strict": true, or that has a function tool
 * with "strict": true, promises its client output that satisfies the schema;
 * not every upstream enforces that (vLLM and llama.cpp guide decoding only
 * when they can, proxies drop the field), so the worker checks each upstream
 * attempt's output before passing it on (worker.c does the retry).
 *
 * The schemas are compiled once per job (sb_strict_new) with sb_jschema.
 * Pure: no I/O, no logging.
 */
#ifndef SB_STRICT_H
#define SB_STRICT_H

#include <jansson.h>
#include <stddef.h>

typedef struct sb_strict sb_strict_t;

/* Compiles the strict schemas of a canonical request (borrowed; the schemas
 * are referenced, so request must outlive the checker). Returns 0 with *out
 * NULL when nothing in it is strict, 0 with *out set (owned), or -EINVAL with
 * *err a final 400 invalid_request error event (new reference) when a strict
 * schema is not a usable JSON Schema. */
int sb_strict_new(const json_t *request, sb_strict_t **out, json_t **err) __attribute__((warn_unused_result));

/* NULL-safe; sets *s to NULL. */
void sb_strict_destroy(sb_strict_t **s);

/*
 * Checks one attempt: `events` are its non-final events (sb_event.h), `final`
 * its completed event. Checked: the joined output_text of every message item
 * against text.format.schema (when that is strict), and the arguments of
 * every call of a strict tool against the tool's parameters. Not checked:
 * messages with a refusal part (the model declined, which is not a
 * violation), and items of a choice that ended incomplete (output cut by a
 * token limit or a filter is reported as such, not as a violation).
 *
 * Returns 0 when everything checked is valid, or -1 with `what` set to the
 * schema that failed ("the JSON schema 'NAME'", "the parameters schema of
 * tool 'NAME'"; no model output in it, so it may be logged) and `why` to the
 * reason ("$.x: expected string, got integer"; may quote model output).
 */
int sb_strict_check(const sb_strict_t *s, const json_t *events, const json_t *final, char *what, size_t whatsz,
                    char *why, size_t whysz);

#endif
