/*
 * sb_evbase: the event base with epoll's change list (sb_evbase.h).
 */
#include "sb_evbase.h"

struct event_base *sb_evbase_new(void)
{
    struct event_config *cfg = event_config_new();
    if (!cfg)
        return NULL;
    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST);
    struct event_base *base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    return base;
}
