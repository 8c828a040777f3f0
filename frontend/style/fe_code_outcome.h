/*
 * fe_code_outcome: what a code_interpreter_call's run came to, read from the
 * canonical item, for the styles whose own shapes say it (the Messages
 * style's return_code and error codes, Generate Content's outcome); the
 * Responses style shows the item as it is. Also the item's logs joined.
 *
 * The canonical item says less than those shapes: an error in the code is
 * not a failed item (status "completed", the traceback in the logs), and
 * "failed" means the sandbox could not run the code at all. So the outcome
 * is read as follows, first match wins:
 *   status "failed"                                  -> FE_CODE_FAILED
 *   private sb_outcome "timeout" (sb_sandbox_status_name's names; "killed"
 *     and "error" are FE_CODE_ERROR, "unavailable" FE_CODE_FAILED, "ok"
 *     FE_CODE_OK)
 *   private sb_output holding the worker's note that the code ran out of
 *     time                                           -> FE_CODE_TIMEOUT
 *   logs holding a Python traceback (fe_code_traceback) -> FE_CODE_ERROR
 *   otherwise                                        -> FE_CODE_OK
 */
#ifndef FE_CODE_OUTCOME_H
#define FE_CODE_OUTCOME_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

typedef enum fe_code_outcome {
    FE_CODE_OK,      /* the code ran to its end */
    FE_CODE_ERROR,   /* it raised (a traceback), or went over a resource limit */
    FE_CODE_TIMEOUT, /* it ran out of time and was stopped */
    FE_CODE_FAILED,  /* the sandbox could not run it (the item's status is "failed") */
} fe_code_outcome_t;

/* The outcome of a code_interpreter_call item (borrowed). */
fe_code_outcome_t fe_code_outcome(const json_t *item);

/* Whether logs (n bytes, not necessarily NUL-terminated) end in a Python
 * traceback: after the last line that is "Traceback (most recent call
 * last):" (or, when there is none, the first line starting with '  File "',
 * as a SyntaxError shows without frames), the first line that is not
 * indented and not empty names an exception: a dotted Python identifier,
 * alone or followed by ':'. A program that merely prints the word
 * "Traceback" mid-line, or prints such a header without an exception line
 * under it, does not count. */
bool fe_code_traceback(const char *logs, size_t n);

/* The item's "logs" outputs joined in their order (a new string; "" when it
 * has none). */
json_t *fe_code_logs(const json_t *item);

#endif
