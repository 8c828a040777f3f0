/*
 * sb_evbase: the libevent base every component's loop runs on.
 *
 * It is epoll with its change list: an fd's interest changes are applied at
 * the next wait, so a change undone within one turn of the loop (reading
 * paused while a request is handed over and resumed when its body is
 * already in, a write armed and then not needed) costs no epoll_ctl at all.
 * Nothing here dup()s an fd, which is what the change list cannot follow;
 * an fd closed and its number reused within one turn is re-added by libevent
 * when its MOD meets ENOENT.
 */
#ifndef SB_EVBASE_H
#define SB_EVBASE_H

#include <event2/event.h>

/* A new base, or NULL. */
struct event_base *sb_evbase_new(void);

#endif
