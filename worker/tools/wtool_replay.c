/*
 * wtool_replay: the two items an earlier turn's built-in call is replayed
 * as, for the model (wtool.h): the function call it made and the output it
 * was given. The plan (wtool_plan.c) and the data tools (wtool_builtin.c)
 * both replay through here.
 */
#include <jansson.h>

#include "wtool.h"

json_t *sb_tool_call_item(const char *call_id, const char *name, const char *arguments, const json_t *from)
{
    json_t *fc = json_pack("{s:s, s:s, s:s, s:s}", "type", "function_call", "call_id", call_id, "name", name,
                           "arguments", arguments ? arguments : "{}");
    /* A Gemini call's signature goes back with it. */
    json_t *sig = json_object_get(from, "thought_signature");
    if (json_is_string(sig))
        json_object_set(fc, "thought_signature", sig);
    return fc;
}

json_t *sb_tool_output_item(const char *call_id, const char *output)
{
    return json_pack("{s:s, s:s, s:s}", "type", "function_call_output", "call_id", call_id, "output", output);
}
