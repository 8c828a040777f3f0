/*
 * wtool_sandbox: the code interpreter's sandbox, on the worker's loop.
 * Model-written Python runs in a persistent interpreter (variables survive
 * between execs of one sandbox) inside bubblewrap around Debian's python3:
 * its own user, pid, network, ipc, uts and cgroup namespaces (no network at
 * all), a read-only system (/usr and the few files of /etc numpy and
 * matplotlib need; no /work, /root, /home, /etc/passwd, no host /proc), and
 * one writable working directory, /mnt/data, a size-bounded tmpfs (so no
 * host disk is used and nothing is left behind), plus a small /tmp. The
 * environment is built from nothing: no variable of the worker reaches it.
 *
 * Limits: wall time per exec (a timer here: the sandbox is killed at
 * expiry), and, set before bwrap is executed, RLIMIT_AS (memory), RLIMIT_CPU
 * (the driver arms a per-exec CPU limit below a lifetime hard limit),
 * RLIMIT_FSIZE, RLIMIT_NOFILE, RLIMIT_NPROC and RLIMIT_CORE=0. When the
 * worker runs as root, each sandbox runs under a uid of its own from a
 * range (uid_base + slot; a slot is held through an abstract unix socket
 * name, so several workers on one host never share one), which makes
 * RLIMIT_NPROC a per-sandbox bound: a fork bomb exhausts its own uid's
 * processes, never the worker's or another sandbox's. Not as root, the
 * sandbox runs under the worker's own uid: RLIMIT_NPROC then counts every
 * process of that uid, so a fork bomb in one sandbox can keep other
 * sandboxes (not the worker, whose own limit is not lowered) from forking
 * until its exec ends.
 *
 * After each exec the driver kills every other process of the sandbox's
 * pid namespace, so nothing the code started survives the call.
 *
 * One sandbox runs one exec at a time. A sandbox is one object of one
 * loop; nothing here is thread-safe.
 */
#ifndef WTOOL_SANDBOX_H
#define WTOOL_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct event_base;
typedef struct sb_sandbox sb_sandbox_t;

/* Every field 0 (or NULL) takes its default. */
typedef struct sb_sandbox_config {
    const char *bwrap;         /* bubblewrap (NULL: /usr/bin/bwrap) */
    const char *python;        /* the interpreter in the sandbox (NULL: /usr/bin/python3) */
    long long memory_bytes;    /* RLIMIT_AS of each process (1 GiB) */
    int cpu_seconds;           /* CPU seconds of one exec (30); the interpreter's lifetime limit is 10 times that */
    int wall_ms;               /* wall time of one exec (30000) */
    int start_ms;              /* most time for a new interpreter to come up (10000), besides wall_ms */
    int max_procs;             /* RLIMIT_NPROC: processes and threads of the sandbox's uid (64) */
    long long max_file_bytes;  /* RLIMIT_FSIZE: the largest file the code may write (64 MiB) */
    long long workdir_bytes;   /* size of the /mnt/data tmpfs (256 MiB) */
    long long tmp_bytes;       /* size of the /tmp tmpfs (64 MiB) */
    size_t max_output_bytes;   /* logs kept of one exec (64 KiB): the head and the tail, with a note */
    int max_files;             /* files returned by one exec (32) */
    long long max_files_bytes; /* their bytes together (16 MiB) */
    int max_images;            /* images returned by one exec (8) */
    long long max_image_bytes; /* bytes of one PNG (4 MiB) */
    int uid_base;              /* as root: the first uid of the sandboxes' range (200000) */
    int uid_count;             /* as root: how many uids the range holds (1000) */
} sb_sandbox_config_t;

typedef enum sb_sandbox_status {
    SB_SANDBOX_OK,          /* the code ran to its end */
    SB_SANDBOX_ERROR,       /* the code raised (the traceback is in logs), or did not compile */
    SB_SANDBOX_TIMEOUT,     /* past wall_ms: the interpreter was killed */
    SB_SANDBOX_KILLED,      /* the interpreter died (memory, CPU, a crash, os._exit) or broke the protocol */
    SB_SANDBOX_UNAVAILABLE, /* no sandbox could be started (bwrap or python missing, spawn failed, no free uid) */
} sb_sandbox_status_t;

typedef struct sb_sandbox_file {
    char *path;          /* "/mnt/data/..." */
    unsigned char *data; /* the file's bytes (NUL-terminated for convenience, not counted in len) */
    size_t len;
} sb_sandbox_file_t;

typedef struct sb_sandbox_result {
    sb_sandbox_status_t status;
    char *logs;          /* what a notebook cell shows: prints, stderr, the value of a last expression,
                          * the traceback; UTF-8, never NULL; for TIMEOUT/KILLED/UNAVAILABLE a note of
                          * what happened */
    bool logs_truncated; /* the output was over max_output_bytes: logs holds its head and tail */
    char **images;       /* base64 (standard, padded) of PNGs: matplotlib figures shown or left open */
    size_t n_images;
    bool images_truncated;    /* some figures were left out (count or size) */
    sb_sandbox_file_t *files; /* files in /mnt/data new or changed since the previous exec's reply */
    size_t n_files;
    bool files_truncated; /* some were left out (count, bytes, or a name that is not UTF-8) */
    bool restarted;       /* this exec ran in a new interpreter although an earlier one had run:
                           * the variables of earlier execs are gone (files put are put again) */
    int64_t duration_ms;  /* from the exec call to its result */
} sb_sandbox_result_t;

/* The result is the callee's and valid during the call only; the callback
 * may keep any of its heap pointers by setting the field to NULL. The
 * callback may call sb_sandbox_exec again or sb_sandbox_destroy. */
typedef void (*sb_sandbox_cb)(void *arg, sb_sandbox_result_t *result);

/* A sandbox on base (borrowed; it must outlive the sandbox); cfg is copied
 * (NULL: all defaults). No process is started yet. Never NULL. */
sb_sandbox_t *sb_sandbox_new(struct event_base *base, const sb_sandbox_config_t *cfg);

/* Kills the interpreter and reaps it, then frees; NULL-safe, clears *s.
 * With an exec in flight its callback is never called. May be called from
 * inside the sandbox's callback. */
void sb_sandbox_destroy(sb_sandbox_t **s);

/* Queues a file for /mnt/data/<path> (path relative, or starting with
 * "/mnt/data/"; no "." or ".." component, no empty one, no control
 * character), written before the next exec runs (a path put twice: the last
 * data). data is copied and kept for the sandbox's life, so a restarted
 * interpreter gets every file again. 0, -EINVAL (a bad path), -EFBIG (over
 * max_file_bytes), -EBUSY (an exec is in flight). */
int sb_sandbox_put(sb_sandbox_t *s, const char *path, const void *data, size_t len) __attribute__((warn_unused_result));

/* Runs code (UTF-8 Python source; a last expression's value is printed, as
 * in a notebook). Starts the interpreter when none is running. 0: cb runs
 * exactly once, later from the loop (never inside this call), unless the
 * sandbox is destroyed first; -EBUSY: an exec is in flight; -EINVAL: code
 * NULL or not UTF-8. */
int sb_sandbox_exec(sb_sandbox_t *s, const char *code, sb_sandbox_cb cb, void *arg) __attribute__((warn_unused_result));

/* The status's name: "ok", "error", "timeout", "killed", "unavailable". */
const char *sb_sandbox_status_name(sb_sandbox_status_t st);

/* Frees what a result still points to and zeroes it. NULL-safe. */
void sb_sandbox_result_clear(sb_sandbox_result_t *r);

/* ---- the pure part: the driver's frames (untrusted bytes; unit-tested and fuzzed) ---- */

/* What one reply may hold (from the configuration). */
typedef struct sb_sandbox_limits {
    size_t max_logs;        /* max_output_bytes (the driver adds a short note to cut logs) */
    size_t max_images;      /* count */
    size_t max_image_bytes; /* decoded bytes of one image */
    size_t max_files;       /* count */
    size_t max_files_bytes; /* decoded bytes of all files together */
} sb_sandbox_limits_t;

/* Most bytes of one frame the limits allow (base64 and JSON escaping included). */
size_t sb_sandbox_frame_max(const sb_sandbox_limits_t *lim);

/*
 * Cuts the driver's byte stream into frames (one JSON object a line). A
 * frame longer than max is an error: the stream is then unusable.
 */
typedef struct sb_sandbox_reader {
    char *buf;
    size_t len, cap;
    size_t start; /* first byte not yet returned */
    size_t scan;  /* bytes from start known to hold no newline */
    size_t tail;  /* offset just past the last newline in buf (the unfinished frame starts there) */
    size_t max;
} sb_sandbox_reader_t;

void sb_sandbox_reader_init(sb_sandbox_reader_t *r, size_t max);
void sb_sandbox_reader_free(sb_sandbox_reader_t *r);
/* Appends bytes. 0, or -E2BIG when an unfinished frame is already over max. */
int sb_sandbox_reader_feed(sb_sandbox_reader_t *r, const char *p, size_t n) __attribute__((warn_unused_result));
/* The next whole frame (without its newline; borrowed until the next feed
 * or next): 1, or 0 when none is complete. -E2BIG for a frame over max. */
int sb_sandbox_reader_next(sb_sandbox_reader_t *r, const char **line, size_t *len) __attribute__((warn_unused_result));

typedef enum sb_sandbox_frame_kind {
    SB_SANDBOX_FRAME_READY, /* {"op":"ready"}: the interpreter is up */
    SB_SANDBOX_FRAME_REPLY, /* the reply to an exec */
} sb_sandbox_frame_kind_t;

/*
 * Reads one frame. A reply is {"id":int,"status":"ok"|"error","logs":str,
 * "logs_truncated":bool,"images":[base64 PNG],"images_truncated":bool,
 * "files":[{"path":"/mnt/data/...","data":base64}],"files_truncated":bool}
 * (the flags and lists may be missing). Every field is checked against
 * lim: logs at most lim->max_logs + 256 bytes of UTF-8 without NUL, at most
 * max_images images each decoding to a PNG of at most max_image_bytes, at
 * most max_files files of at most max_files_bytes together, each path under
 * /mnt/data/ without an empty, "." or ".." component or a control
 * character. 0 with *kind (and, for a reply, *id and out filled: status,
 * logs, images, files, flags; the caller clears it), or -EBADMSG with why
 * set (a short fixed text) and out left zeroed.
 */
int sb_sandbox_parse_frame(const char *line, size_t len, const sb_sandbox_limits_t *lim, sb_sandbox_frame_kind_t *kind,
                           int64_t *id, sb_sandbox_result_t *out, const char **why) __attribute__((warn_unused_result));

/* Whether path (NUL-terminated) is one sb_sandbox_put takes: 0 with the
 * relative part at *rel (pointing into path), or -EINVAL. */
int sb_sandbox_check_path(const char *path, const char **rel) __attribute__((warn_unused_result));

#endif
