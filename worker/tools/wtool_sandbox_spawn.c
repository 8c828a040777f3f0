/*
 * wtool_sandbox_spawn: starting one sandbox process tree from the worker
 * (see wtool_sandbox.h): the bubblewrap command line, the limits, the uid.
 *
 * The worker is one process with many jobs and may be large, so the child
 * is made as posix_spawn makes it: clone(CLONE_VM | CLONE_VFORK) on a stack
 * of its own, the parent suspended until the child has executed bwrap (or
 * failed to; its errno comes back through the shared memory). Between
 * clone and execve the child runs only plain system calls: signal
 * dispositions back to default, its own session, the three channels on fds
 * 0-3 and every other fd closed (close_range), the rlimits, the uid and
 * gid (raw syscalls: glibc's setresuid would signal the worker's threads),
 * a parent-death signal and a high OOM score. CLONE_PIDFD gives the worker
 * a pidfd, which the loop waits on, so no process-wide SIGCHLD handler is
 * needed and no other child of the worker is reaped by mistake.
 *
 * As root, each sandbox runs as its own uid from the configured range; a
 * slot is held by binding the abstract unix socket
 * "switchboard-sandbox-uid-<uid>", which the kernel releases when the
 * holder dies, so workers on one host (one network namespace) share the
 * range without a file or a daemon.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_alloc.h"
#include "wtool_pydriver.h"
#include "wtool_sandbox_internal.h"

#define SB_SANDBOX_STACK (256 * 1024)
#define SB_SANDBOX_ARGV_MAX 128
/* Processes of a sandbox's uid besides the code's (bwrap, its init, the driver). */
#define SB_SANDBOX_NPROC_EXTRA 4
/* The interpreter's lifetime CPU limit, in execs' worth of cpu_seconds. */
#define SB_SANDBOX_CPU_LIFETIME 10

/* What the child needs, prepared by the parent (the child must not allocate). */
typedef struct sb_sandbox_child {
    const char *path;
    char **argv;
    char **envp;
    int fds[3]; /* in, diag, reply: become 0, 1 and 2, 3 */
    bool set_ids;
    uid_t uid;
    gid_t gid;
    int nlim;
    int lim_res[8];
    struct rlimit lim[8];
    volatile int err; /* set by the child when it cannot exec */
} sb_sandbox_child_t;

/* Runs in the child, on its own stack, in the parent's memory: only system
 * calls, no allocation, nothing that takes a lock. */
__attribute__((no_sanitize("address", "undefined"))) static int sb_sandbox_child_main(void *arg)
{
    sb_sandbox_child_t *c = arg;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP)
            (void)sigaction(sig, &dfl, NULL);
    if (setsid() < 0)
        goto fail;
    /* above every target first, so no dup2 overwrites a source */
    int hi[3];
    for (int i = 0; i < 3; i++)
        if ((hi[i] = fcntl(c->fds[i], F_DUPFD, 16)) < 0)
            goto fail;
    if (dup2(hi[0], 0) < 0 || dup2(hi[1], 1) < 0 || dup2(hi[1], 2) < 0 || dup2(hi[2], 3) < 0)
        goto fail;
    if (syscall(SYS_close_range, 4U, ~0U, 0U) < 0)
        goto fail;
    for (int i = 0; i < c->nlim; i++)
        if (setrlimit(c->lim_res[i], &c->lim[i]) < 0)
            goto fail;
    if (c->set_ids) {
        if (syscall(SYS_setgroups, 0, NULL) < 0 || syscall(SYS_setresgid, c->gid, c->gid, c->gid) < 0 ||
            syscall(SYS_setresuid, c->uid, c->uid, c->uid) < 0)
            goto fail;
    }
    /* after the uid change, which clears it: bwrap dies with the worker */
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
        goto fail;
    /* the kernel's OOM killer takes a sandbox before the worker */
    int oom = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (oom >= 0) {
        (void)!write(oom, "1000", 4);
        close(oom);
    }
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    execve(c->path, c->argv, c->envp);
fail:
    c->err = errno ? errno : EIO;
    _exit(127);
}

/* Holds the first free uid of the range from a rotating start (so a uid is
 * rarely reused right after a sandbox let it go). */
static int sb_sandbox_take_slot(const sb_sandbox_config_t *cfg, sb_sandbox_proc_t *p)
{
    static unsigned next;
    for (int i = 0; i < cfg->uid_count; i++) {
        unsigned slot = (next + (unsigned)i) % (unsigned)cfg->uid_count;
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        struct sockaddr_un a;
        memset(&a, 0, sizeof a);
        a.sun_family = AF_UNIX;
        int n = snprintf(a.sun_path + 1, sizeof a.sun_path - 1, "switchboard-sandbox-uid-%u",
                         (unsigned)cfg->uid_base + slot);
        if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n)) == 0) {
            p->slot_fd = fd;
            p->uid = (uid_t)cfg->uid_base + slot;
            next = slot + 1;
            return 0;
        }
        int e = errno;
        close(fd);
        if (e != EADDRINUSE)
            return -e;
    }
    return -EAGAIN;
}

typedef struct sb_sandbox_argv {
    char *v[SB_SANDBOX_ARGV_MAX];
    int n;
    char num[4][24]; /* the sizes, as text */
} sb_sandbox_argv_t;

static void sb_sandbox_arg(sb_sandbox_argv_t *a, const char *s)
{
    if (a->n < SB_SANDBOX_ARGV_MAX - 1)
        a->v[a->n++] = (char *)s;
}

static void sb_sandbox_args(sb_sandbox_argv_t *a, const char *s1, const char *s2, const char *s3)
{
    sb_sandbox_arg(a, s1);
    if (s2)
        sb_sandbox_arg(a, s2);
    if (s3)
        sb_sandbox_arg(a, s3);
}

/* bwrap's command line: the namespaces, a root of nothing but read-only
 * /usr and the few files of /etc numpy (libblas via /etc/alternatives) and
 * matplotlib need, three bounded tmpfs (/mnt/data, /tmp, /dev/shm), the
 * rest remounted read-only, an environment built from nothing. */
static void sb_sandbox_build_argv(const sb_sandbox_config_t *cfg, const char *limits_json, sb_sandbox_argv_t *a)
{
    memset(a, 0, sizeof *a);
    snprintf(a->num[0], sizeof a->num[0], "%lld", cfg->workdir_bytes);
    snprintf(a->num[1], sizeof a->num[1], "%lld", cfg->tmp_bytes);
    snprintf(a->num[2], sizeof a->num[2], "%lld", 16LL * 1024 * 1024);
    sb_sandbox_args(a, cfg->bwrap, "--unshare-all", "--unshare-user");
    sb_sandbox_args(a, "--disable-userns", "--die-with-parent", "--new-session");
    sb_sandbox_args(a, "--hostname", "sandbox", "--clearenv");
    static const char *const env[][2] = {
        {"PATH", "/usr/bin:/bin"},
        {"HOME", "/tmp"},
        {"TMPDIR", "/tmp"},
        {"LANG", "C.UTF-8"},
        {"MPLBACKEND", "module://" SB_PYDRIVER_MPL_BACKEND},
        {"MPLCONFIGDIR", "/tmp/.mpl"},
        {"XDG_CACHE_HOME", "/tmp/.cache"},
        {"OPENBLAS_NUM_THREADS", "1"},
        {"OMP_NUM_THREADS", "1"},
        {"MKL_NUM_THREADS", "1"},
        {"NUMEXPR_NUM_THREADS", "1"},
    };
    for (size_t i = 0; i < sizeof env / sizeof env[0]; i++)
        sb_sandbox_args(a, "--setenv", env[i][0], env[i][1]);
    sb_sandbox_args(a, "--ro-bind", "/usr", "/usr");
    sb_sandbox_args(a, "--symlink", "usr/lib", "/lib");
    sb_sandbox_args(a, "--symlink", "usr/lib64", "/lib64");
    sb_sandbox_args(a, "--symlink", "usr/bin", "/bin");
    sb_sandbox_args(a, "--symlink", "usr/sbin", "/sbin");
    static const char *const etc[] = {"/etc/alternatives", "/etc/ld.so.cache", "/etc/matplotlibrc", "/etc/fonts",
                                      "/etc/localtime"};
    for (size_t i = 0; i < sizeof etc / sizeof etc[0]; i++)
        sb_sandbox_args(a, "--ro-bind-try", etc[i], etc[i]);
    sb_sandbox_args(a, "--proc", "/proc", NULL);
    sb_sandbox_args(a, "--dev", "/dev", NULL);
    sb_sandbox_args(a, "--size", a->num[2], NULL);
    sb_sandbox_args(a, "--tmpfs", "/dev/shm", NULL);
    sb_sandbox_args(a, "--size", a->num[1], NULL);
    sb_sandbox_args(a, "--tmpfs", "/tmp", NULL);
    sb_sandbox_args(a, "--perms", "0700", NULL);
    sb_sandbox_args(a, "--size", a->num[0], NULL);
    sb_sandbox_args(a, "--tmpfs", "/mnt/data", NULL);
    sb_sandbox_args(a, "--remount-ro", "/dev", NULL);
    sb_sandbox_args(a, "--remount-ro", "/", NULL);
    sb_sandbox_args(a, "--chdir", "/mnt/data", NULL);
    sb_sandbox_args(a, "--", cfg->python, "-I");
    sb_sandbox_args(a, "-S", "-B", NULL);
    sb_sandbox_args(a, "-X", "utf8", NULL);
    sb_sandbox_args(a, "-c", sb_pydriver_source, limits_json);
    a->v[a->n] = NULL;
}

static void sb_sandbox_limit(sb_sandbox_child_t *c, int res, long long v)
{
    c->lim_res[c->nlim] = res;
    c->lim[c->nlim].rlim_cur = c->lim[c->nlim].rlim_max = (rlim_t)v;
    c->nlim++;
}

static void sb_sandbox_close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

int sb_sandbox_spawn(const sb_sandbox_config_t *cfg, const char *limits_json, sb_sandbox_proc_t *p, char *why,
                     size_t why_len)
{
    int pairs[3][2] = {{-1, -1}, {-1, -1}, {-1, -1}};
    void *stack = MAP_FAILED;
    int rc;
    memset(p, 0, sizeof *p);
    p->pid = -1;
    p->pidfd = p->fd_in = p->fd_reply = p->fd_diag = p->slot_fd = -1;
    p->uid = geteuid();
    if (access(cfg->bwrap, X_OK) != 0) {
        rc = -errno;
        snprintf(why, why_len, "bubblewrap is not available (%s: %s)", cfg->bwrap, strerror(-rc));
        return rc;
    }
    if (access(cfg->python, X_OK) != 0) {
        rc = -errno;
        snprintf(why, why_len, "python is not available (%s: %s)", cfg->python, strerror(-rc));
        return rc;
    }
    bool root = geteuid() == 0;
    if (root && (rc = sb_sandbox_take_slot(cfg, p)) != 0) {
        snprintf(why, why_len, "no free sandbox uid (%s)", rc == -EAGAIN ? "all in use" : strerror(-rc));
        return rc;
    }
    for (int i = 0; i < 3; i++) {
        if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pairs[i]) < 0) {
            rc = -errno;
            snprintf(why, why_len, "socketpair: %s", strerror(-rc));
            goto fail;
        }
    }
    stack = mmap(NULL, SB_SANDBOX_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
    if (stack == MAP_FAILED) {
        rc = -errno;
        snprintf(why, why_len, "mmap: %s", strerror(-rc));
        goto fail;
    }

    sb_sandbox_argv_t *argv = sb_xmalloc(sizeof *argv);
    sb_sandbox_build_argv(cfg, limits_json, argv);
    static char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    sb_sandbox_child_t c;
    memset(&c, 0, sizeof c);
    c.path = cfg->bwrap;
    c.argv = argv->v;
    c.envp = envp;
    c.fds[0] = pairs[0][1];
    c.fds[1] = pairs[1][1];
    c.fds[2] = pairs[2][1];
    c.set_ids = root;
    c.uid = p->uid;
    c.gid = (gid_t)p->uid;
    sb_sandbox_limit(&c, RLIMIT_AS, cfg->memory_bytes);
    sb_sandbox_limit(&c, RLIMIT_CPU, (long long)cfg->cpu_seconds * SB_SANDBOX_CPU_LIFETIME);
    sb_sandbox_limit(&c, RLIMIT_FSIZE, cfg->max_file_bytes);
    sb_sandbox_limit(&c, RLIMIT_NOFILE, 512);
    sb_sandbox_limit(&c, RLIMIT_CORE, 0);
    /* as root the uid is the sandbox's own: its count is the sandbox's. Not
     * as root the driver sets RLIMIT_NPROC inside the sandbox's user
     * namespace, where the kernel counts per namespace (see the header). */
    if (root)
        sb_sandbox_limit(&c, RLIMIT_NPROC, cfg->max_procs + SB_SANDBOX_NPROC_EXTRA);

    sigset_t all, old;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, &old);
    int pidfd = -1;
    pid_t pid = clone(sb_sandbox_child_main, (char *)stack + SB_SANDBOX_STACK,
                      CLONE_VM | CLONE_VFORK | CLONE_PIDFD | SIGCHLD, &c, &pidfd);
    int clone_errno = errno;
    sigprocmask(SIG_SETMASK, &old, NULL);
    free(argv);
    munmap(stack, SB_SANDBOX_STACK);
    stack = MAP_FAILED;
    if (pid < 0) {
        rc = -clone_errno;
        snprintf(why, why_len, "clone: %s", strerror(clone_errno));
        goto fail;
    }
    p->pid = pid;
    p->pidfd = pidfd;
    if (c.err != 0) {
        int st;
        (void)sb_sandbox_proc_reap(p, 1000, &st);
        rc = -c.err;
        snprintf(why, why_len, "bubblewrap could not be started: %s", strerror(c.err));
        goto fail;
    }
    p->fd_in = pairs[0][0];
    p->fd_diag = pairs[1][0];
    p->fd_reply = pairs[2][0];
    for (int i = 0; i < 3; i++) {
        close(pairs[i][1]);
        int fl = fcntl(pairs[i][0], F_GETFL);
        (void)fcntl(pairs[i][0], F_SETFL, fl | O_NONBLOCK);
    }
    return 0;

fail:
    if (stack != MAP_FAILED)
        munmap(stack, SB_SANDBOX_STACK);
    for (int i = 0; i < 3; i++) {
        sb_sandbox_close_fd(&pairs[i][0]);
        sb_sandbox_close_fd(&pairs[i][1]);
    }
    sb_sandbox_proc_close(p);
    return rc;
}

void sb_sandbox_proc_kill(sb_sandbox_proc_t *p)
{
    if (p->pidfd >= 0)
        (void)pidfd_send_signal(p->pidfd, SIGKILL, NULL, 0);
}

int sb_sandbox_proc_reap(sb_sandbox_proc_t *p, int wait_ms, int *status)
{
    if (p->pidfd < 0)
        return 1;
    if (wait_ms > 0) {
        struct pollfd pfd = {.fd = p->pidfd, .events = POLLIN};
        (void)poll(&pfd, 1, wait_ms);
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PIDFD, (id_t)p->pidfd, &si, WEXITED | WNOHANG) < 0) {
        /* ECHILD: reaped elsewhere (SIGCHLD ignored): it is gone all the same */
        *status = 0;
        return 1;
    }
    if (si.si_pid == 0)
        return 0;
    /* as waitpid's status: an exit code, or the signal that ended it */
    *status = si.si_code == CLD_EXITED ? W_EXITCODE(si.si_status, 0) : W_EXITCODE(0, si.si_status & 0x7f);
    return 1;
}

void sb_sandbox_proc_close_io(sb_sandbox_proc_t *p)
{
    sb_sandbox_close_fd(&p->fd_in);
    sb_sandbox_close_fd(&p->fd_reply);
    sb_sandbox_close_fd(&p->fd_diag);
}

void sb_sandbox_proc_close(sb_sandbox_proc_t *p)
{
    sb_sandbox_proc_close_io(p);
    sb_sandbox_close_fd(&p->pidfd);
    sb_sandbox_close_fd(&p->slot_fd);
}
