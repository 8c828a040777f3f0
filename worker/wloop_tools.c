/*
 * wloop_tools: the steps of the tools that keep data (wloop_internal.h):
 * which of them a reserved call is, the item it shows from the start, and
 * image generation run here (the code interpreter is wloop_code.c's, file
 * search wloop_fsearch.c's; the database token their queries go through is
 * wloop_db.c's).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_alloc.h"
#include "sb_db.h"
#include "sb_id.h"
#include "sb_log.h"
#include "wloop_internal.h"
#include "wloop_tools.h"
#include "wsql_tools.h"
#include "wtool_image.h"

/* The image model used when the tool names none (OpenAI's default). */
#define SB_WLOOP_IMAGE_MODEL "gpt-image-1"

/*
 * The items.
 */

json_t *sb_wloop_tool_item(sb_wloop_t *l, sb_wexec_t *e)
{
    char id[SB_ID_MAX];
    if (e->kind == SB_TOOL_CODE)
        return sb_wloop_code_item(l, e);
    if (e->kind == SB_TOOL_FILE_SEARCH) {
        sb_id_new(id, sizeof id, "fs_", 24);
        e->log_server = "vector_store";
        return json_pack("{s:s, s:s, s:s, s:[], s:n}", "type", "file_search_call", "id", id, "status", "in_progress",
                         "queries", "results");
    }
    sb_id_new(id, sizeof id, "ig_", 24);
    return json_pack("{s:s, s:s, s:s, s:n}", "type", "image_generation_call", "id", id, "status", "in_progress",
                     "result");
}

void sb_wloop_tool_args(sb_wexec_t *e, const char *args, size_t len)
{
    if (e->kind == SB_TOOL_CODE)
        sb_wloop_code_args(e, args, len);
}

/*
 * Image generation: the route (the tool's model, a deployment model),
 * then one upstream request; partial images are shown as they come.
 */

typedef struct sb_wimg {
    sb_wexec_t *e;
    sb_wdbq_t *q;
    json_t *args;  /* owned: the call's arguments */
    json_t *route; /* owned */
    sb_image_req_t req;
    sb_image_parser_t *parser;
    sb_upstream_xfer_t *xfer;
    json_t *events; /* owned: what the parser found */
    size_t seen;    /* events of it handled */
    size_t bytes_in;
    bool over;
} sb_wimg_t;

static void sb_wimg_free(sb_wimg_t *g)
{
    if (!g)
        return;
    sb_wdbq_forget(&g->q);
    if (g->xfer)
        sb_upstream_cancel(g->e->l->j->w->upstream, &g->xfer);
    sb_image_parser_destroy(&g->parser);
    sb_image_req_clear(&g->req);
    json_decref(g->args);
    json_decref(g->route);
    json_decref(g->events);
    free(g);
}

/* The call is over: the item and what the model is told (outcome: the
 * parser's image or error event, or NULL with why). */
static void sb_wimg_end(sb_wimg_t *g, const json_t *outcome, const char *why)
{
    sb_wexec_t *e = g->e;
    sb_wloop_t *l = e->l;
    const char *type = json_string_value(json_object_get(outcome, "type"));
    bool ok = type && !strcmp(type, SB_IMAGE_EV_IMAGE);
    const char *msg = ok ? NULL : why ? why : json_string_value(json_object_get(outcome, "message"));
    if (!msg && !ok)
        msg = "the image could not be generated";
    char *text;
    if (ok) {
        json_object_set(e->item, "result", json_object_get(outcome, "b64"));
        static const char *const copied[] = {"revised_prompt", "size", "quality", "output_format", "background"};
        for (size_t i = 0; i < sizeof copied / sizeof copied[0]; i++) {
            json_t *v = json_object_get(outcome, copied[i]);
            if (json_is_string(v))
                json_object_set(e->item, copied[i], v);
        }
        json_object_set_new(e->item, "status", json_string("completed"));
        const char *rp = json_string_value(json_object_get(outcome, "revised_prompt"));
        text = sb_xasprintf("The image was generated and shown to the user.%s%.2000s", rp ? " Revised prompt: " : "",
                            rp ? rp : "");
    } else {
        json_object_set_new(e->item, "status", json_string("failed"));
        text = sb_xasprintf("Error: the image could not be generated: %s", msg);
    }
    json_object_set_new(e->item, "sb_output", json_string(text));
    sb_wloop_log(l, e, "image_generation", json_string_value(json_object_get(g->route, "upstream_model")),
                 ok ? "ok" : "error", g->bytes_in, msg);
    e->step = NULL;
    sb_wimg_free(g);
    sb_wexec_finish(e, text);
    free(text);
}

/* Shows the partial images found so far; returns the outcome once found. */
static const json_t *sb_wimg_drain(sb_wimg_t *g)
{
    sb_wexec_t *e = g->e;
    for (; g->seen < json_array_size(g->events); g->seen++) {
        const json_t *ev = json_array_get(g->events, g->seen);
        const char *type = json_string_value(json_object_get(ev, "type"));
        if (type && !strcmp(type, SB_IMAGE_EV_PARTIAL)) {
            json_t *p = sb_event_item_progress(e->index, "partial_image");
            json_object_set(p, "partial_image_b64", json_object_get(ev, "b64"));
            json_object_set(p, "partial_image_index", json_object_get(ev, "partial_image_index"));
            sb_wloop_emit(e->l, p);
        } else {
            return ev;
        }
    }
    return NULL;
}

static int sb_wimg_on_data(long status, const char *data, size_t len, void *arg)
{
    sb_wimg_t *g = arg;
    g->bytes_in += len;
    if (!g->over && sb_image_parser_feed(g->parser, status, data, len, g->events) == 1)
        g->over = true;
    sb_wimg_drain(g);
    return 0;
}

static void sb_wimg_on_done(const sb_upstream_result_t *res, void *arg)
{
    sb_wimg_t *g = arg;
    g->xfer = NULL; /* freed by the pool after this returns */
    if (res->outcome == SB_UPSTREAM_OK && !g->over)
        sb_image_parser_finish(g->parser, res->status, g->events);
    const json_t *outcome = sb_wimg_drain(g);
    if (res->outcome != SB_UPSTREAM_OK && !outcome) {
        sb_wimg_end(g, NULL,
                    res->outcome == SB_UPSTREAM_TIMEOUT ? "the image model did not answer in time"
                                                        : "the image model could not be reached");
        return;
    }
    json_t *keep = json_incref((json_t *)outcome);
    sb_wimg_end(g, keep, NULL);
    json_decref(keep);
}

/* The input images of an edit: the chain's newest generated image, else the
 * newest image the user gave in this request (a data URL). */
static const char *sb_wimg_input(const sb_wloop_t *l)
{
    const char *img = json_string_value(l->plan->last_image);
    for (sb_wexec_t *x = l->execs; x; x = x->next)
        if (x->kind == SB_TOOL_IMAGE && json_is_string(json_object_get(x->item, "result")))
            img = json_string_value(json_object_get(x->item, "result"));
    if (img)
        return img;
    size_t i, k;
    const json_t *it, *part;
    json_array_foreach (l->plan->input, i, it) {
        const char *role = json_string_value(json_object_get(it, "role"));
        if (!role || strcmp(role, "user") != 0)
            continue;
        json_array_foreach (json_object_get(it, "content"), k, part) {
            const char *type = json_string_value(json_object_get(part, "type"));
            const char *url = json_string_value(json_object_get(part, "image_url"));
            if (type && !strcmp(type, "input_image") && url && !strncmp(url, "data:", 5))
                img = url;
        }
    }
    return img;
}

static void sb_wimg_on_route(const PGresult *res, const char *err, void *arg)
{
    sb_wimg_t *g = arg;
    g->q = NULL;
    sb_wexec_t *e = g->e;
    sb_wloop_t *l = e->l;
    if (err || !res || PQntuples(res) != 1) {
        sb_wimg_end(g, NULL, err ? "the image route could not be read" : "no image model is configured");
        return;
    }
    g->route = json_loads(PQgetvalue(res, 0, 0), 0, NULL);
    const char *prompt = json_string_value(json_object_get(g->args, "prompt"));
    const char *action = json_string_value(json_object_get(l->plan->image_generation, "action"));
    bool edit = json_is_true(json_object_get(g->args, "edit")) || (action && !strcmp(action, "edit"));
    const char *image = edit ? sb_wimg_input(l) : NULL;
    sb_image_call_t call = {
        .route = g->route,
        .tool = l->plan->image_generation,
        .prompt = prompt ? prompt : "",
        .images = image ? &image : NULL,
        .n_images = image ? 1 : 0,
        .partials = json_is_true(json_object_get(sb_job_request(l->j->job), "stream")),
    };
    char why[256] = "";
    if (sb_image_build(&call, &g->req, why, sizeof why) < 0) {
        sb_wimg_end(g, NULL, why);
        return;
    }
    g->parser = sb_image_parser_new(&g->req, g->route, 0);
    g->events = json_array();
    sb_upstream_cbs_t cbs = {.on_data = sb_wimg_on_data, .on_done = sb_wimg_on_done};
    sb_wloop_emit(l, sb_event_item_progress(e->index, "generating"));
    if (sb_upstream_start(l->j->w->upstream, &g->req.http, sb_wloop_timeout(l), l->j->w->connect_timeout_ms, &cbs, g,
                          &g->xfer) < 0)
        sb_wimg_end(g, NULL, "the image request could not be started");
}

static void sb_wimg_start(sb_wexec_t *e, const json_t *args)
{
    sb_wloop_t *l = e->l;
    sb_wimg_t *g = sb_xcalloc(1, sizeof *g);
    g->e = e;
    g->args = json_deep_copy(args);
    e->step = g;
    const char *model = json_string_value(json_object_get(l->plan->image_generation, "model"));
    e->log_server = model ? model : SB_WLOOP_IMAGE_MODEL;
    if (!l->j->w->db) {
        sb_wimg_end(g, NULL, "image generation needs the worker's database (--database)");
        return;
    }
    const char *params[] = {e->log_server};
    g->q = sb_wdbq_run(l, SB_WSQL_TOOL_ROUTE, 1, params, sb_wimg_on_route, g);
}

/*
 * Dispatch.
 */

void sb_wloop_tool_start(sb_wexec_t *e, const json_t *args)
{
    if (e->kind == SB_TOOL_CODE)
        sb_wloop_code_start(e, args);
    else if (e->kind == SB_TOOL_FILE_SEARCH)
        sb_wloop_fsearch_start(e, args);
    else
        sb_wimg_start(e, args);
}

void sb_wloop_tool_cancel(sb_wexec_t *e)
{
    if (!e->step)
        return;
    if (e->kind == SB_TOOL_CODE)
        sb_wloop_code_cancel(e);
    else if (e->kind == SB_TOOL_FILE_SEARCH)
        sb_wloop_fsearch_cancel(e);
    else
        sb_wimg_free(e->step);
    e->step = NULL;
}

void sb_wloop_tools_free(sb_wloop_t *l)
{
    sb_wloop_code_free(l);
}

void sb_wloop_tools_cite(sb_wloop_t *l, int index, json_t *item)
{
    if (json_array_size(l->cited_files) == 0)
        return;
    size_t c;
    json_t *part;
    json_array_foreach (json_object_get(item, "content"), c, part) {
        const char *type = json_string_value(json_object_get(part, "type"));
        if (!type || strcmp(type, "output_text") != 0)
            continue;
        json_t *cites = sb_tool_file_citations(json_string_value(json_object_get(part, "text")), l->cited_files);
        json_t *all = json_object_get(part, "annotations");
        if (!json_is_array(all)) {
            all = json_array();
            json_object_set_new(part, "annotations", all);
        }
        size_t a;
        json_t *cite;
        json_array_foreach (cites, a, cite) {
            sb_wloop_emit(l, sb_event_annotation_added(index, (int)c, (int)json_array_size(all), json_incref(cite)));
            json_array_append(all, cite);
        }
        json_decref(cites);
    }
}
