/*
 * emu_call: one request as a protocol handler sees it (struct sb_emu_call,
 * emu_internal.h): its headers and query parameters, the upstream model it
 * names, and the parts of the emulator's state a handler may read (the
 * required key, the fault table, the scenarios, the tags of
 * [[emu:schema_violation_once=TAG]]). The handlers, the answer engine and the
 * fault stage call in here; nothing here calls a handler, so the server's
 * routing (emu_routes.c) and the protocols never form a circle.
 */
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdlib.h>
#include <string.h>

#include "emu_internal.h"
#include "emu_server.h"
#include "sb_alloc.h"

void sb_emu_call_set_model(struct sb_emu_call *call, const char *model)
{
    free(call->model);
    call->model = model && *model ? sb_xstrdup(model) : NULL;
}

void sb_emu_call_set_model_from_body(struct sb_emu_call *call)
{
    sb_emu_call_set_model(call, json_string_value(json_object_get(call->json, "model")));
}

struct sb_emu_faults *sb_emu_faults_of(struct sb_emu *emu)
{
    return emu->faults;
}

struct sb_emu_scenarios *sb_emu_scenarios_of(struct sb_emu *emu)
{
    return emu->scenarios;
}

const char *sb_emu_call_header(const struct sb_emu_call *call, const char *name)
{
    return evhttp_find_header(evhttp_request_get_input_headers(call->req), name);
}

char *sb_emu_call_query_param(const struct sb_emu_call *call, const char *name)
{
    if (!call->query)
        return NULL;
    struct evkeyvalq params;
    params.tqh_first = NULL;
    params.tqh_last = &params.tqh_first;
    char *out = NULL;
    if (evhttp_parse_query_str(call->query, &params) == 0) {
        const char *v = evhttp_find_header(&params, name);
        if (v)
            out = sb_xstrdup(v);
    }
    evhttp_clear_headers(&params);
    return out;
}

const char *sb_emu_required_key(const struct sb_emu *emu)
{
    return emu->require_key;
}

/* A linear scan: at most SB_EMU_MAX_TAGS short strings, once per request that carries a tag. */
bool sb_emu_tag_first_use(struct sb_emu *emu, const char *tag)
{
    for (size_t i = 0; i < emu->ntags; i++)
        if (!strcmp(emu->tags[i], tag))
            return false;
    free(emu->tags[emu->tag_next]);
    emu->tags[emu->tag_next] = sb_xstrdup(tag);
    emu->tag_next = (emu->tag_next + 1) % SB_EMU_MAX_TAGS;
    if (emu->ntags < SB_EMU_MAX_TAGS)
        emu->ntags++;
    return true;
}
