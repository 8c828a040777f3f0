/*
 * fuzz_items: libFuzzer harness for the request pieces every style shares
 * once a client's JSON body is parsed: fe_items (Responses `input` items
 * normalised into canonical items, ids, call/output matching), fe_structured
 * (text.format and function tools carrying client JSON schemas, tool_choice),
 * fe_responses_tools (the built-in web search and mcp tools' checks, the
 * reserved function names, the secret-free echo) and fe_tokens (the input
 * token estimate the limits admit on).
 *
 * Input: one JSON object shaped like a Responses request: "input" (a string
 * or items), "text": {"format": ...}, "tools": [...], "tool_choice", and
 * "auto_strict" (true: tools get the Responses default, FE_STRICT_AUTO).
 * Checked besides "no crash, no leak, no UB": each step gives its result or
 * NULL/-1 with a 4xx error and a message; normalised items form an array of
 * objects with a string "type", and after fe_items_assign_ids every item
 * has a string id; a built-in tool that passes its check goes on unchanged
 * and its echo has no headers or authorization; the token estimate is not
 * negative and does not shrink when the tools are counted too.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fe_items.h"
#include "fe_responses_tools.h"
#include "fe_structured.h"
#include "fe_tokens.h"
#include "fuzz.h"

static void fuzz_items_refused(const fe_error_t *err)
{
    FUZZ_REQUIRE(err->status >= 400 && err->status < 500);
    FUZZ_REQUIRE(err->message[0] != '\0');
}

static bool fuzz_items_count_part(json_t *part, void *arg)
{
    FUZZ_REQUIRE(part != NULL);
    (*(size_t *)arg)++;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_t *body = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_object(body)) {
        json_decref(body);
        return 0;
    }
    fe_error_t err;
    json_t *request = json_object(); /* the canonical request being built */

    const json_t *input = json_object_get(body, "input");
    json_t *items = NULL;
    if (input) {
        memset(&err, 0, sizeof err);
        items = fe_items_normalize(input, "input", &err);
        if (!items) {
            fuzz_items_refused(&err);
        } else {
            FUZZ_REQUIRE(json_is_array(items));
            size_t i;
            json_t *it;
            json_array_foreach (items, i, it)
                FUZZ_REQUIRE(json_is_object(it) && json_is_string(json_object_get(it, "type")));
            fe_items_assign_ids(items);
            json_array_foreach (items, i, it)
                FUZZ_REQUIRE(json_is_string(json_object_get(it, "id")));
            size_t parts = 0;
            fe_items_foreach_part(items, fuzz_items_count_part, &parts);
            memset(&err, 0, sizeof err);
            if (fe_items_check_calls(items, &err) < 0)
                fuzz_items_refused(&err);
        }
    }

    const json_t *format = json_object_get(json_object_get(body, "text"), "format");
    if (format) {
        memset(&err, 0, sizeof err);
        json_t *f = fe_structured_format(format, "text.format", &err);
        if (!f)
            fuzz_items_refused(&err);
        else
            json_object_set_new(request, "text", json_pack("{s:o}", "format", f));
    }

    json_t *tools = json_array();
    fe_strict_default_t dflt = json_is_true(json_object_get(body, "auto_strict")) ? FE_STRICT_AUTO : FE_STRICT_OFF;
    size_t i;
    json_t *t;
    json_array_foreach (json_object_get(body, "tools"), i, t) {
        memset(&err, 0, sizeof err);
        if (fe_responses_tool_checked(json_string_value(json_object_get(t, "type")))) {
            json_t *bt = fe_responses_tool_check(t, "tools[0]", &err);
            if (!bt) {
                fuzz_items_refused(&err);
                continue;
            }
            FUZZ_REQUIRE(json_equal(bt, t)); /* on to the worker unchanged */
            json_t *one = json_pack("[o]", bt);
            json_t *shown = fe_responses_tools_public(one);
            FUZZ_REQUIRE(json_array_size(shown) == 1);
            FUZZ_REQUIRE(!json_object_get(json_array_get(shown, 0), "headers"));
            FUZZ_REQUIRE(!json_object_get(json_array_get(shown, 0), "authorization"));
            json_decref(shown);
            json_decref(one);
            continue;
        }
        if (fe_responses_tool_name_check(json_string_value(json_object_get(t, "name")), "tools[0]", &err) < 0) {
            fuzz_items_refused(&err);
            continue;
        }
        json_t *fn = fe_structured_function(t, dflt, "tools", &err);
        if (!fn) {
            fuzz_items_refused(&err);
            continue;
        }
        FUZZ_REQUIRE(json_is_boolean(json_object_get(fn, "strict")));
        json_array_append_new(tools, fn);
    }
    memset(&err, 0, sizeof err);
    if (fe_responses_tools_check_labels(json_object_get(body, "tools"), &err) < 0)
        fuzz_items_refused(&err);
    memset(&err, 0, sizeof err);
    if (fe_structured_tool_choice(json_object_get(body, "tool_choice"), tools, request, &err) < 0)
        fuzz_items_refused(&err);

    json_object_set(request, "instructions", json_object_get(body, "instructions"));
    int64_t bare = fe_tokens_request(request, items);
    FUZZ_REQUIRE(bare >= 0);
    json_object_set_new(request, "tools", tools);
    int64_t with_tools = fe_tokens_request(request, items);
    FUZZ_REQUIRE(with_tools >= bare);

    json_decref(request);
    json_decref(items);
    json_decref(body);
    return 0;
}
