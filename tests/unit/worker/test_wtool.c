/*
 * test_wtool: the pure half of the worker's tool loop (wtool_plan.c,
 * wtool_cite.c; docs/tools.md): which built-in tools the gateway runs, the
 * reserved functions the model is offered and what a called name means,
 * require_approval, the input rewritten for the model, and url_citation
 * annotations.
 */
#include <jansson.h>
#include <stdlib.h>

#include "sb_test.h"
#include "wtool.h"

static void test_citations_empty(void)
{
    json_t *sources = json_array();
    json_t *c = sb_tool_citations("see [Z](https://a.test/z)", sources);
    CHECK(json_is_array(c));
    CHECK_INT(json_array_size(c), 0);
    json_decref(c);
    json_decref(sources);
}

int main(void)
{
    test_citations_empty();
    return sb_test_finish("test_wtool");
}
