/*
 * wtool_pydriver: the Python program that runs inside the sandbox
 * (wtool_sandbox.h) and executes the code the model wrote, in one
 * persistent namespace (a fresh __main__ module), as a notebook would.
 *
 * Started as `python3 -I -S -B -X utf8 -c sb_pydriver_source LIMITS`, LIMITS a
 * JSON object: {"out": bytes of logs kept, "files": count, "files_bytes":
 * bytes, "images": count, "image_bytes": bytes of one PNG, "cpu": CPU
 * seconds of one exec, "nproc": RLIMIT_NPROC inside the sandbox}.
 *
 * Protocol, one JSON object a line each way:
 *  - worker -> driver on fd 0: {"op":"put","path":"rel/name","data":base64}
 *    (the file is written under /mnt/data; a failure is a line at the top
 *    of the next exec's logs) and {"op":"exec","id":N,"code":"..."};
 *  - driver -> worker on fd 3 (not stdout: the code's output is captured):
 *    {"op":"ready"} once it is up, then one reply per exec: {"id":N,
 *    "status":"ok"|"error","logs":"...","logs_truncated":bool,
 *    "images":[base64 PNG],"images_truncated":bool,"files":[{"path":
 *    "/mnt/data/...","data":base64}],"files_truncated":bool}.
 *
 * Per exec the driver: truncates its output file (fds 1 and 2 of the
 * sandbox, so subprocesses' output lands in order with the prints), arms
 * the CPU limit (SIGXCPU raises CpuTimeLimit in the code), compiles the
 * code (a last expression's value is printed), runs it, saves matplotlib
 * figures as PNGs (its backend's show() does too: MPLBACKEND names the
 * driver's own Agg-based backend, served lazily so nothing heavy is
 * imported before the code imports it), kills every other process of the
 * sandbox's pid namespace (kill(-1) until /proc holds only init and the
 * driver), cuts the output to its head and tail, and lists the files of
 * /mnt/data new or changed since the previous reply. The protocol fds are
 * moved above 10 and closed-on-exec, fd 0 becomes /dev/null.
 */
#ifndef WTOOL_PYDRIVER_H
#define WTOOL_PYDRIVER_H

/* The module MPLBACKEND names ("module://" SB_PYDRIVER_MPL_BACKEND). */
#define SB_PYDRIVER_MPL_BACKEND "sb_mpl_backend"

extern const char sb_pydriver_source[];

#endif
