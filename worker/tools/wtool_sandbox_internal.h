/*
 * wtool_sandbox_internal: what the sandbox's files share (not for callers):
 * the resolved configuration and one interpreter process as
 * wtool_sandbox_spawn.c starts it.
 */
#ifndef WTOOL_SANDBOX_INTERNAL_H
#define WTOOL_SANDBOX_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "wtool_sandbox.h"

/* One bubblewrap process tree: bwrap, its init in the new pid namespace,
 * and the driver. The fds are ours (close-on-exec, non-blocking). */
typedef struct sb_sandbox_proc {
    pid_t pid;    /* bwrap's, in the worker's pid namespace */
    int pidfd;    /* readable once bwrap has exited */
    int fd_in;    /* the driver's requests (its fd 0) */
    int fd_reply; /* the driver's replies (its fd 3) */
    int fd_diag;  /* bwrap's and python's stdout and stderr before the driver takes them over */
    int slot_fd;  /* the uid slot's lock (an abstract unix socket), or -1 */
    uid_t uid;    /* what the sandbox runs as */
} sb_sandbox_proc_t;

/* Every field of in (NULL: none) with its default where 0; strings borrowed. */
void sb_sandbox_config_resolve(const sb_sandbox_config_t *in, sb_sandbox_config_t *out);

/*
 * Starts bwrap for cfg (resolved) with the driver and its limits (a JSON
 * object, see wtool_pydriver.h). 0 with p filled, or a negative errno with
 * why set (a short message for the result's logs: what is missing, or
 * what failed; never a path of the worker beyond bwrap's and python's).
 */
int sb_sandbox_spawn(const sb_sandbox_config_t *cfg, const char *limits_json, sb_sandbox_proc_t *p, char *why,
                     size_t why_len) __attribute__((warn_unused_result));

/* SIGKILL to bwrap (its --die-with-parent and the pid namespace take the rest). */
void sb_sandbox_proc_kill(sb_sandbox_proc_t *p);

/* Reaps bwrap if it has exited, waiting up to wait_ms: 1 with *status
 * (as waitpid's) set, 0 when it has not exited yet. */
int sb_sandbox_proc_reap(sb_sandbox_proc_t *p, int wait_ms, int *status);

/* Closes the channels (not the pidfd, not the uid slot: the uid is not
 * free before bwrap is reaped). */
void sb_sandbox_proc_close_io(sb_sandbox_proc_t *p);
/* Closes everything left and gives the uid slot back. */
void sb_sandbox_proc_close(sb_sandbox_proc_t *p);

#endif
