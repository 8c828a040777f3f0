/*
 * fe_broker_stats: one view of the live state of several brokers (the admin
 * API's /admin/v1/live, docs/operations.md).
 */
#ifndef FE_BROKER_STATS_H
#define FE_BROKER_STATS_H

#include <jansson.h>

/* answers: [{endpoint, epoch, stats}], each stats as one broker's STATS
 * answer (docs/protocol.md). Returns (new reference) the same shape as one
 * broker's, for all of them: jobs, queues, credits used and circuits opened
 * for one client are summed; workers (each serves every broker) and credits
 * free (shared by the brokers) are the fullest and the scarcest view; a
 * model's circuit is the least healthy one; and "brokers" lists the answers. */
json_t *fe_broker_stats_merge(const json_t *answers);

#endif
