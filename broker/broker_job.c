/*
 * broker_job: one job as the broker sees it (ids, deadline, who submitted it,
 * the untouched body while it waits) and its state machine. Where a job is
 * linked (queue or worker) is the business of broker_queue.c and
 * broker_worker.c; the job table in broker.c owns it.
 */
#include <assert.h>
#include <stdlib.h>

#include "broker_internal.h"
#include "sb_alloc.h"
#include "sb_log.h"

static const char *const sb_broker_job_state_names[] = {
    [SB_BJOB_NEW] = "new",
    [SB_BJOB_QUEUED] = "queued",
    [SB_BJOB_DISPATCHED] = "dispatched",
    [SB_BJOB_ABANDONED] = "abandoned",
    [SB_BJOB_DONE] = "done",
};

const char *sb_broker_job_state_name(enum sb_broker_job_state state)
{
    if ((size_t)state >= sizeof sb_broker_job_state_names / sizeof sb_broker_job_state_names[0])
        return "?";
    return sb_broker_job_state_names[state];
}

sb_broker_job_t *sb_broker_job_new(const char *id, const char *model, int64_t deadline_ms, const zframe_t *frontend,
                                   json_t **header, zframe_t **body)
{
    sb_broker_job_t *job = sb_xcalloc(1, sizeof *job);
    job->id = sb_xstrdup(id);
    job->model = sb_xstrdup(model);
    job->client = NULL;
    job->deadline_ms = deadline_ms;
    job->frontend = zframe_dup((zframe_t *)frontend);
    if (!job->frontend)
        abort(); /* czmq's own allocation failure: out of memory */
    job->header = *header;
    *header = NULL;
    job->body = *body;
    *body = NULL;
    job->state = SB_BJOB_NEW;
    return job;
}

void sb_broker_job_destroy(sb_broker_job_t **pjob)
{
    if (!pjob || !*pjob)
        return;
    sb_broker_job_t *job = *pjob;
    free(job->id);
    free(job->model);
    free(job->client);
    zframe_destroy(&job->frontend);
    json_decref(job->header);
    zframe_destroy(&job->body);
    free(job);
    *pjob = NULL;
}

static bool sb_broker_job_move_ok(enum sb_broker_job_state from, enum sb_broker_job_state to)
{
    switch (from) {
    case SB_BJOB_NEW:
        return to == SB_BJOB_QUEUED || to == SB_BJOB_DONE;
    case SB_BJOB_QUEUED:
        return to == SB_BJOB_DISPATCHED || to == SB_BJOB_DONE;
    case SB_BJOB_DISPATCHED:
        return to == SB_BJOB_ABANDONED || to == SB_BJOB_DONE;
    case SB_BJOB_ABANDONED:
        return to == SB_BJOB_DONE;
    case SB_BJOB_DONE:
        return false;
    }
    return false;
}

void sb_broker_job_set_state(sb_broker_job_t *job, enum sb_broker_job_state state)
{
    /* Only broker code moves jobs, so an illegal move is a programmer error. */
    bool ok = sb_broker_job_move_ok(job->state, state);
    assert(ok);
    (void)ok;
    sb_debug("job %s: %s -> %s", job->id, sb_broker_job_state_name(job->state), sb_broker_job_state_name(state));
    job->state = state;
}
