/*
 * test_sandbox: the code interpreter's sandbox (worker/tools/wtool_sandbox.h)
 * with the real bubblewrap and Debian's python3 on a real libevent loop.
 * First the pure half: the driver's frames read and checked (limits, paths,
 * images, a stream cut anywhere, oversized frames) and the put paths. Then
 * the sandbox: values and prints, variables kept between execs, a
 * traceback, a matplotlib figure as a PNG, files written and put, the
 * output of subprocesses in order; and escape attempts, each contained and
 * reported as a result, never a crash of this process: the network (this
 * process's own listener on 127.0.0.1, an outside address, DNS), this
 * process's environment (a secret set here), files outside (this test's
 * own binary, /etc/shadow, /root), writing outside /mnt/data, a fork bomb
 * (this process can still fork afterwards), memory bombs, an infinite loop
 * (TIMEOUT at the wall limit, then a new interpreter with the files put
 * again), the CPU limit, huge output (cut, flagged, the traceback kept),
 * a file over max_file_bytes, leftover processes (none in the sandbox's pid
 * namespace nor on the host after the call), garbage written to the reply
 * channel by the code. And the API's rules: callbacks never inside a call,
 * none after destroy, destroy and exec from inside a callback, EBUSY.
 *
 * bwrap and /usr/bin/python3 (with numpy, pandas, matplotlib) must be
 * installed (deploy/local/lib.sh's packages): without them the test fails.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sb_alloc.h"
#include "sb_base64.h"
#include "sb_test.h"
#include "wtool_sandbox.h"

static struct event_base *base;

/* ---- the pure half ---- */

static const sb_sandbox_limits_t lim = {
    .max_logs = 100, .max_images = 2, .max_image_bytes = 64, .max_files = 2, .max_files_bytes = 10};

/* base64 of a tiny "PNG" (the signature and a few bytes) */
#define PNG_B64 "iVBORw0KGgoAAAANSUhEUg=="

static int parse(const char *line, sb_sandbox_frame_kind_t *kind, int64_t *id, sb_sandbox_result_t *r)
{
    const char *why = NULL;
    int rc = sb_sandbox_parse_frame(line, strlen(line), &lim, kind, id, r, &why);
    if (rc != 0)
        CHECK(why != NULL && why[0] != '\0');
    return rc;
}

static void test_frames(void)
{
    sb_sandbox_frame_kind_t kind;
    int64_t id;
    sb_sandbox_result_t r;
    CHECK_INT(parse("{\"op\":\"ready\"}", &kind, &id, &r), 0);
    CHECK_INT(kind, SB_SANDBOX_FRAME_READY);

    CHECK_INT(parse("{\"id\":7,\"status\":\"ok\",\"logs\":\"hi\\n\",\"logs_truncated\":false,\"images\":[\"" PNG_B64
                    "\"],\"files\":[{\"path\":\"/mnt/data/a/b.txt\",\"data\":\"aGVsbG8=\"}],\"files_truncated\":true}",
                    &kind, &id, &r),
              0);
    CHECK_INT(kind, SB_SANDBOX_FRAME_REPLY);
    CHECK_INT(id, 7);
    CHECK_INT(r.status, SB_SANDBOX_OK);
    CHECK_STR(r.logs, "hi\n");
    CHECK_INT(r.n_images, 1);
    CHECK_STR(r.images[0], PNG_B64);
    CHECK_INT(r.n_files, 1);
    CHECK_STR(r.files[0].path, "/mnt/data/a/b.txt");
    CHECK_INT(r.files[0].len, 5);
    CHECK(memcmp(r.files[0].data, "hello", 5) == 0);
    CHECK(r.files_truncated && !r.logs_truncated);
    sb_sandbox_result_clear(&r);

    CHECK_INT(parse("{\"id\":1,\"status\":\"error\",\"logs\":\"\"}", &kind, &id, &r), 0);
    CHECK_INT(r.status, SB_SANDBOX_ERROR);
    CHECK(r.n_images == 0 && r.n_files == 0);
    sb_sandbox_result_clear(&r);

    /* refused: each leaves the result empty */
    static const char *const bad[] = {
        "not json",
        "[1]",
        "{\"op\":\"other\"}",
        "{\"status\":\"ok\",\"logs\":\"\"}",
        "{\"id\":1,\"status\":\"timeout\",\"logs\":\"\"}",
        "{\"id\":1,\"status\":\"ok\"}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\\u0000\"}",
        "{\"id\":1,\"id\":2,\"status\":\"ok\",\"logs\":\"\"}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"logs_truncated\":1}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"images\":[\"aGVsbG8gd29ybGQh\"]}", /* not a PNG */
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"images\":[\"" PNG_B64 "\",\"" PNG_B64 "\",\"" PNG_B64 "\"]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"images\":[\"iVBORw0KGgo*AAANSUhEUg==\"]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"images\":\"x\"}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/etc/passwd\",\"data\":\"\"}]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/../x\",\"data\":\"\"}]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/a//b\",\"data\":\"\"}]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/a\\nb\",\"data\":\"\"}]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/a\",\"data\":\"a\"}]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/"
        "a\",\"data\":\"aGVsbG8gd29ybGQh\"}]}",
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/a\",\"data\":\"aGVsbG8=\"},"
        "{\"path\":\"/mnt/data/b\",\"data\":\"aGVsbG8=\"}]}", /* 10 bytes: fits */
        "{\"id\":1,\"status\":\"ok\",\"logs\":\"\",\"files\":[{\"path\":\"/mnt/data/a\",\"data\":\"aGVsbG8=\"},"
        "{\"path\":\"/mnt/data/b\",\"data\":\"aGVsbG8h\"}]}", /* 11 bytes: over */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = parse(bad[i], &kind, &id, &r);
        if (i == 19) { /* the one that fits */
            CHECK_INT(rc, 0);
            CHECK_INT(r.n_files, 2);
            sb_sandbox_result_clear(&r);
            continue;
        }
        if (rc != -EBADMSG)
            fprintf(stderr, "accepted: %s\n", bad[i]);
        CHECK_INT(rc, -EBADMSG);
        CHECK(r.logs == NULL && r.images == NULL && r.files == NULL && id == 0);
    }

    /* logs: at most max_logs + 256 bytes */
    char line[1024];
    char *logs = sb_xmalloc(400);
    memset(logs, 'a', 356);
    logs[356] = '\0';
    snprintf(line, sizeof line, "{\"id\":1,\"status\":\"ok\",\"logs\":\"%s\"}", logs);
    CHECK_INT(parse(line, &kind, &id, &r), 0);
    sb_sandbox_result_clear(&r);
    logs[356] = 'a';
    logs[357] = '\0';
    snprintf(line, sizeof line, "{\"id\":1,\"status\":\"ok\",\"logs\":\"%s\"}", logs);
    CHECK_INT(parse(line, &kind, &id, &r), -EBADMSG);
    free(logs);
    CHECK(sb_sandbox_frame_max(&lim) > 1000);
}

static void test_reader(void)
{
    sb_sandbox_reader_t rd;
    const char *line;
    size_t len;
    sb_sandbox_reader_init(&rd, 8);
    CHECK_INT(sb_sandbox_reader_feed(&rd, "ab", 2), 0);
    CHECK_INT(sb_sandbox_reader_next(&rd, &line, &len), 0);
    CHECK_INT(sb_sandbox_reader_feed(&rd, "c\nde\nf", 6), 0);
    CHECK_INT(sb_sandbox_reader_next(&rd, &line, &len), 1);
    CHECK(len == 3 && memcmp(line, "abc", 3) == 0);
    CHECK_INT(sb_sandbox_reader_next(&rd, &line, &len), 1);
    CHECK(len == 2 && memcmp(line, "de", 2) == 0);
    CHECK_INT(sb_sandbox_reader_next(&rd, &line, &len), 0);
    CHECK_INT(sb_sandbox_reader_feed(&rd, "\n", 1), 0);
    CHECK_INT(sb_sandbox_reader_next(&rd, &line, &len), 1);
    CHECK(len == 1 && line[0] == 'f');
    /* an unfinished frame over max is refused at once, however it comes */
    CHECK_INT(sb_sandbox_reader_feed(&rd, "12345678", 8), 0);
    CHECK_INT(sb_sandbox_reader_feed(&rd, "9", 1), -E2BIG);
    sb_sandbox_reader_free(&rd);
    sb_sandbox_reader_init(&rd, 8);
    CHECK_INT(sb_sandbox_reader_feed(&rd, "1234567890\n", 11), 0); /* whole, but too long */
    CHECK_INT(sb_sandbox_reader_next(&rd, &line, &len), -E2BIG);
    sb_sandbox_reader_free(&rd);

    const char *rel;
    CHECK_INT(sb_sandbox_check_path("a/b.csv", &rel), 0);
    CHECK_STR(rel, "a/b.csv");
    CHECK_INT(sb_sandbox_check_path("/mnt/data/x.txt", &rel), 0);
    CHECK_STR(rel, "x.txt");
    static const char *const badp[] = {"",    "/etc/passwd", "../x",       "a/../b", "a//b",
                                       "./a", "a/",          "/mnt/data/", "a\tb",   NULL};
    for (size_t i = 0; i < sizeof badp / sizeof badp[0]; i++)
        CHECK_INT(sb_sandbox_check_path(badp[i], &rel), -EINVAL);
}

/* ---- the sandbox ---- */

typedef struct capture {
    int calls;
    sb_sandbox_result_t r;
} capture_t;

static void on_result(void *arg, sb_sandbox_result_t *r)
{
    capture_t *c = arg;
    c->calls++;
    sb_sandbox_result_clear(&c->r);
    c->r = *r; /* keeps every pointer: the API's "set the fields to NULL" */
    memset(r, 0, sizeof *r);
}

/* Runs code and waits for its result (into c, cleared first). */
static void run(sb_sandbox_t *s, const char *code, capture_t *c)
{
    sb_sandbox_result_clear(&c->r);
    c->calls = 0;
    int rc = sb_sandbox_exec(s, code, on_result, c);
    CHECK_INT(rc, 0);
    CHECK_INT(c->calls, 0); /* never inside the call */
    while (rc == 0 && c->calls == 0)
        event_base_loop(base, EVLOOP_ONCE);
    CHECK_INT(c->calls, 1);
    if (c->r.status != SB_SANDBOX_OK && c->r.status != SB_SANDBOX_ERROR)
        fprintf(stderr, "[%s] %s\n", sb_sandbox_status_name(c->r.status), c->r.logs);
}

static bool has(const capture_t *c, const char *s)
{
    return c->r.logs && strstr(c->r.logs, s) != NULL;
}

static sb_sandbox_config_t config(void)
{
    sb_sandbox_config_t cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.wall_ms = 30000; /* generous: matplotlib alone takes seconds on a busy machine */
    cfg.max_procs = 32;
    cfg.max_file_bytes = 1024 * 1024;
    cfg.max_output_bytes = 4096;
    return cfg;
}

static void test_basics(void)
{
    sb_sandbox_config_t cfg = config();
    sb_sandbox_t *s = sb_sandbox_new(base, &cfg);
    capture_t c = {0};
    CHECK_INT(sb_sandbox_put(s, "in/data.csv", "a,b\n1,2\n", 8), 0);
    CHECK_INT(sb_sandbox_put(s, "../x", "", 0), -EINVAL);
    CHECK_INT(sb_sandbox_put(s, "big", "", 2 * 1024 * 1024), -EFBIG);

    run(s, "x = 41\nprint('hello')\nx + 1", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK_STR(c.r.logs, "hello\n42\n");
    CHECK(!c.r.restarted && !c.r.logs_truncated);
    CHECK_INT(c.r.n_files, 0); /* the put file is not "new" */

    run(s, "x * 2", &c);
    CHECK_STR(c.r.logs, "82\n");

    run(s, "def f():\n    raise ValueError('boom')\nprint('before')\nf()", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_ERROR);
    CHECK(has(&c, "before\nTraceback (most recent call last):"));
    CHECK(has(&c, "line 2, in f\n    raise ValueError('boom')\n")); /* the cell's source is quoted */
    CHECK(has(&c, "ValueError: boom"));
    CHECK(!has(&c, "<string>")); /* the driver's own frames are left out */

    run(s, "def f(:\n", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_ERROR);
    CHECK(has(&c, "SyntaxError"));

    run(s, "print(open('in/data.csv').read(), end='')\nopen('out/r.txt' if False else 'r.txt', 'w').write('result')",
        &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(has(&c, "a,b\n1,2\n"));
    CHECK_INT(c.r.n_files, 1);
    if (c.r.n_files == 1) {
        CHECK_STR(c.r.files[0].path, "/mnt/data/r.txt");
        CHECK(c.r.files[0].len == 6 && memcmp(c.r.files[0].data, "result", 6) == 0);
    }
    run(s, "import os\nos.makedirs('d/e')\nopen('d/e/f.bin','wb').write(bytes(range(256)))\nprint(os.getcwd())", &c);
    CHECK_STR(c.r.logs, "/mnt/data\n");
    CHECK_INT(c.r.n_files, 1); /* only what changed */
    if (c.r.n_files == 1) {
        CHECK_STR(c.r.files[0].path, "/mnt/data/d/e/f.bin");
        CHECK(c.r.files[0].len == 256 && c.r.files[0].data[255] == 255);
    }

    /* output of subprocesses lands in order with the prints */
    run(s, "import subprocess\nprint('a', flush=True)\nsubprocess.run(['echo', 'b'])\nprint('c')", &c);
    CHECK_STR(c.r.logs, "a\nb\nc\n");

    run(s, "import os\nos.close(1)\nos.close(2)", &c); /* the next exec has its output again */
    run(s, "print('back')", &c);
    CHECK_STR(c.r.logs, "back\n");

    run(s, "import sys\nsys.exit(0)", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    run(s, "quit(3)", &c); /* site's builtins are there, though site is not run */
    CHECK_INT(c.r.status, SB_SANDBOX_ERROR);
    CHECK_STR(c.r.logs, "SystemExit: 3\n");
    run(s, "print(x)", &c); /* sys.exit did not end the interpreter */
    CHECK_STR(c.r.logs, "41\n");

    /* a figure shown and one left open both come back as PNGs */
    run(s,
        "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()\nplt.figure()\nplt.bar([1, 2], [3, 4])\n"
        "print('plotted')",
        &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(has(&c, "plotted"));
    CHECK(!has(&c, "non-interactive")); /* show() is the driver's, not Agg's warning */
    CHECK_INT(c.r.n_images, 2);
    for (size_t i = 0; i < c.r.n_images; i++) {
        size_t n;
        unsigned char *png = sb_base64_decode(c.r.images[i], strlen(c.r.images[i]), &n);
        CHECK(png && n > 1000 && memcmp(png, "\x89PNG\r\n\x1a\n", 8) == 0);
        free(png);
    }
    run(s, "import numpy as np, pandas as pd\nprint(int(np.arange(10).sum()), len(pd.DataFrame({'a': [1, 2]})))", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK_STR(c.r.logs, "45 2\n");
    sb_sandbox_result_clear(&c.r);
    sb_sandbox_destroy(&s);
    CHECK(s == NULL);
    sb_sandbox_destroy(&s); /* NULL-safe */
}

/* Every /proc entry on the host whose command line is argv (NUL-joined). */
static int host_procs_with_cmdline(const char *want, size_t want_len)
{
    int found = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        char path[300], buf[256];
        snprintf(path, sizeof path, "/proc/%s/cmdline", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        ssize_t n = read(fd, buf, sizeof buf);
        close(fd);
        if (n == (ssize_t)want_len && memcmp(buf, want, want_len) == 0)
            found++;
    }
    if (d)
        closedir(d);
    return found;
}

static void test_escapes(void)
{
    sb_sandbox_config_t cfg = config();
    cfg.memory_bytes = 512 * 1024 * 1024; /* the memory bomb is quicker to reach it */
    sb_sandbox_t *s = sb_sandbox_new(base, &cfg);
    capture_t c = {0};
    char code[2048];

    /* network: this process listens on 127.0.0.1; the sandbox cannot reach it, nor anything else */
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t al = sizeof a;
    CHECK(bind(l, (struct sockaddr *)&a, sizeof a) == 0 && listen(l, 4) == 0);
    CHECK(getsockname(l, (struct sockaddr *)&a, &al) == 0);
    snprintf(code, sizeof code,
             "import socket\n"
             "for host in [('127.0.0.1', %d), ('1.1.1.1', 80), ('8.8.8.8', 53)]:\n"
             "    s = socket.socket()\n"
             "    s.settimeout(3)\n"
             "    try:\n"
             "        s.connect(host)\n"
             "        print('CONNECTED', host)\n"
             "    except OSError as e:\n"
             "        print('refused', e.errno)\n"
             "try:\n"
             "    socket.getaddrinfo('example.com', 80)\n"
             "    print('RESOLVED')\n"
             "except OSError:\n"
             "    print('no dns')\n",
             ntohs(a.sin_port));
    run(s, code, &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(!has(&c, "CONNECTED") && !has(&c, "RESOLVED"));
    CHECK(has(&c, "no dns"));
    close(l);

    /* nor this process's abstract unix sockets (they belong to a network namespace) */
    int u = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un ua = {.sun_family = AF_UNIX};
    static const char abs_name[] = "\0sb-sandbox-test-abstract";
    memcpy(ua.sun_path, abs_name, sizeof abs_name - 1);
    socklen_t ul = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + sizeof abs_name - 1);
    CHECK(bind(u, (struct sockaddr *)&ua, ul) == 0 && listen(u, 4) == 0);
    int k = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0); /* the name is right: reachable from here */
    CHECK(connect(k, (struct sockaddr *)&ua, ul) == 0);
    close(k);
    run(s,
        "import socket\ns = socket.socket(socket.AF_UNIX)\ntry:\n    s.connect('\\0sb-sandbox-test-abstract')\n"
        "    print('CONNECTED')\nexcept OSError as e:\n    print('refused', e.errno)",
        &c);
    CHECK(has(&c, "refused") && !has(&c, "CONNECTED"));
    close(u);

    /* this process's environment: a secret set here is nowhere in the sandbox */
    setenv("SB_SANDBOX_TEST_SECRET", "s3cr3t-4f9a", 1);
    run(s,
        "import os\nseen = repr(dict(os.environ))\n"
        "for p in os.listdir('/proc'):\n"
        "    try:\n"
        "        seen += open('/proc/%s/environ' % p, 'rb').read().decode('latin-1')\n"
        "    except OSError:\n"
        "        pass\n"
        "print('secret' if 's3cr3t-4f9a' in seen else 'clean', sorted(os.environ))",
        &c);
    CHECK(has(&c, "clean"));
    CHECK(!has(&c, "s3cr3t"));
    unsetenv("SB_SANDBOX_TEST_SECRET");

    /* files outside: this test's own binary, the host's secrets */
    char self[512];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(n > 0);
    self[n > 0 ? n : 0] = '\0';
    CHECK(access(self, R_OK) == 0);
    snprintf(code, sizeof code,
             "import os\n"
             "for p in ['%s', '/etc/shadow', '/etc/passwd', '/root', '/home', '/work', '/var', '/run']:\n"
             "    try:\n"
             "        os.listdir(p) if os.path.isdir(p) else open(p, 'rb').read(1)\n"
             "        print('READ', p)\n"
             "    except OSError as e:\n"
             "        print('no', p)\n"
             "for p in ['/usr/x', '/etc/x', '/x', '/work/x', '/dev/x', '/proc/x', '/usr/lib/python3/x.py']:\n"
             "    try:\n"
             "        open(p, 'w').write('x')\n"
             "        print('WROTE', p)\n"
             "    except OSError as e:\n"
             "        print('no', p)\n"
             "open('/tmp/scratch', 'w').write('ok')\n"
             "print(sorted(os.listdir('/')))\n",
             self);
    run(s, code, &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(!has(&c, "READ") && !has(&c, "WROTE"));
    CHECK(has(&c, "no /etc/shadow") && has(&c, "no /usr/x"));
    CHECK(has(&c, "['bin', 'dev', 'etc', 'lib', 'lib64', 'mnt', 'proc', 'sbin', 'tmp', 'usr']"));

    /* a fork bomb: bounded by the sandbox's own process limit */
    run(s,
        "import os, time\nn = 0\ntry:\n    while True:\n        if os.fork() == 0:\n            time.sleep(60)\n"
        "            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('forks', n, 'errno', e.errno)",
        &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(has(&c, "errno 11"));
    pid_t pid = fork(); /* and this process still can */
    if (pid == 0)
        _exit(0);
    CHECK(pid > 0);
    int st = -1;
    CHECK(pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st));
    /* the bomb's processes did not outlive the call */
    run(s, "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))", &c);
    CHECK_STR(c.r.logs, "[1, 2]\n");

    /* leftover processes: a background sleep is gone after the call, in the sandbox and on the host */
    run(s, "import subprocess\nsubprocess.Popen(['sleep', '987654'])\nprint('started')", &c);
    CHECK_STR(c.r.logs, "started\n");
    CHECK_INT(host_procs_with_cmdline("sleep\0"
                                      "987654",
                                      13),
              0);
    run(s, "import os\nprint(sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))", &c);
    CHECK_STR(c.r.logs, "[1, 2]\n");

    /* memory bombs: a MemoryError (RLIMIT_AS) or a killed interpreter, never this process */
    run(s, "x = bytearray(8 * 1024 ** 3)", &c);
    CHECK(c.r.status == SB_SANDBOX_ERROR || c.r.status == SB_SANDBOX_KILLED);
    CHECK(c.r.status != SB_SANDBOX_ERROR || has(&c, "MemoryError"));
    run(s, "blocks = []\nwhile True:\n    blocks.append(b'x' * (32 * 1024 * 1024))", &c);
    CHECK(c.r.status == SB_SANDBOX_ERROR || c.r.status == SB_SANDBOX_KILLED);
    run(s, "del blocks\nprint('alive')", &c);
    CHECK(c.r.status == SB_SANDBOX_OK || c.r.restarted);

    /* huge output: cut to the head and tail, flagged; the traceback at the end is kept */
    run(s, "for i in range(100000):\n    print('line', i)\nraise RuntimeError('the end')", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_ERROR);
    CHECK(c.r.logs_truncated);
    CHECK(strlen(c.r.logs) <= cfg.max_output_bytes + 256);
    CHECK(has(&c, "line 0\n") && has(&c, "[output truncated: "));
    CHECK(has(&c, "RuntimeError: the end"));
    run(s, "import os\nos.write(1, bytes(range(256)) * 100)\nprint('\\0')", &c); /* bytes that are not text */
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(c.r.logs_truncated);

    /* a file over max_file_bytes */
    run(s, "open('big.bin', 'wb').write(b'x' * (2 * 1024 * 1024))", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_ERROR);
    CHECK(has(&c, "File too large"));

    /* the code writes garbage to the driver's channels: its own result is lost, nothing else */
    run(s,
        "import os\nfor fd in range(3, 64):\n    try:\n        os.write(fd, b'not a frame\\n')\n"
        "    except OSError:\n        pass",
        &c);
    CHECK_INT(c.r.status, SB_SANDBOX_KILLED);
    run(s, "print('fresh')", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(c.r.restarted);
    sb_sandbox_result_clear(&c.r);
    sb_sandbox_destroy(&s);
}

static void test_limits(void)
{
    sb_sandbox_config_t cfg = config();
    cfg.wall_ms = 1500;
    sb_sandbox_t *s = sb_sandbox_new(base, &cfg);
    capture_t c = {0};
    CHECK_INT(sb_sandbox_put(s, "keep.txt", "kept", 4), 0);
    run(s, "v = 1\nprint(open('keep.txt').read())", &c);
    CHECK_STR(c.r.logs, "kept\n");
    run(s, "while True:\n    pass", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_TIMEOUT);
    /* The wall timer counts from libevent's cached clock, which may lag the
     * run's own start stamp by a few ms (seen: 1499 under ASan). */
    CHECK(c.r.duration_ms >= 1500 - 25);
    CHECK(has(&c, "1500 ms"));
    /* a new interpreter: the variables are gone, the files put are back */
    run(s, "print(open('keep.txt').read(), 'v' in globals())", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_OK);
    CHECK(c.r.restarted);
    CHECK_STR(c.r.logs, "kept False\n");
    run(s, "print('same')", &c);
    CHECK(!c.r.restarted);
    sb_sandbox_result_clear(&c.r);
    sb_sandbox_destroy(&s);

    /* CPU: past cpu_seconds the code gets CpuTimeLimit (long before the wall limit) */
    cfg = config();
    cfg.cpu_seconds = 1;
    s = sb_sandbox_new(base, &cfg);
    run(s, "while True:\n    pass", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_ERROR);
    CHECK(has(&c, "CpuTimeLimit"));
    run(s, "print('next')", &c);
    CHECK_STR(c.r.logs, "next\n");
    sb_sandbox_result_clear(&c.r);
    sb_sandbox_destroy(&s);
}

static void on_result_destroy(void *arg, sb_sandbox_result_t *r)
{
    sb_sandbox_t **sp = arg;
    sb_sandbox_destroy(sp);
}

typedef struct chain {
    sb_sandbox_t *s;
    capture_t c;
    int step;
} chain_t;

static void on_chain(void *arg, sb_sandbox_result_t *r)
{
    chain_t *ch = arg;
    if (ch->step++ == 0) {
        CHECK_INT(sb_sandbox_exec(ch->s, "y = 5\ny", on_chain, ch), 0);
        CHECK_INT(sb_sandbox_exec(ch->s, "y", on_chain, ch), -EBUSY);
        return;
    }
    on_result(&ch->c, r);
}

static void on_never(void *arg, sb_sandbox_result_t *r)
{
    int *calls = arg;
    (*calls)++;
}

static void test_api(void)
{
    sb_sandbox_config_t cfg = config();
    capture_t c = {0};

    /* bwrap or python missing: UNAVAILABLE, from the loop */
    cfg.bwrap = "/nonexistent/bwrap";
    sb_sandbox_t *s = sb_sandbox_new(base, &cfg);
    run(s, "print(1)", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_UNAVAILABLE);
    CHECK(has(&c, "bubblewrap is not available"));
    sb_sandbox_destroy(&s);
    cfg = config();
    cfg.python = "/nonexistent/python3";
    s = sb_sandbox_new(base, &cfg);
    run(s, "print(1)", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_UNAVAILABLE);
    sb_sandbox_destroy(&s);
    /* a python the sandbox does not have (outside /usr): bwrap says so */
    char sh[] = "/tmp/sb-sandbox-test-XXXXXX";
    int fd = mkstemp(sh);
    CHECK(fd >= 0);
    close(fd);
    chmod(sh, 0755);
    cfg.python = sh;
    s = sb_sandbox_new(base, &cfg);
    run(s, "print(1)", &c);
    CHECK_INT(c.r.status, SB_SANDBOX_UNAVAILABLE);
    CHECK(has(&c, "could not start"));
    sb_sandbox_destroy(&s);
    unlink(sh);

    /* EBUSY, then exec from inside the callback */
    cfg = config();
    chain_t ch = {.s = sb_sandbox_new(base, &cfg)};
    CHECK_INT(sb_sandbox_exec(ch.s, "print(1)", on_chain, &ch), 0);
    CHECK_INT(sb_sandbox_exec(ch.s, "print(2)", on_chain, &ch), -EBUSY);
    CHECK_INT(sb_sandbox_put(ch.s, "a", "b", 1), -EBUSY);
    CHECK_INT(sb_sandbox_exec(ch.s, "\xff", on_chain, &ch), -EBUSY);
    while (ch.c.calls == 0)
        event_base_loop(base, EVLOOP_ONCE);
    CHECK_INT(ch.step, 2);
    CHECK_STR(ch.c.r.logs, "5\n");
    sb_sandbox_result_clear(&ch.c.r);
    CHECK_INT(sb_sandbox_exec(ch.s, "\xff", on_chain, &ch), -EINVAL);
    sb_sandbox_destroy(&ch.s);

    /* destroy from inside the callback */
    s = sb_sandbox_new(base, &cfg);
    CHECK_INT(sb_sandbox_exec(s, "1", on_result_destroy, &s), 0);
    while (s)
        event_base_loop(base, EVLOOP_ONCE);

    /* destroy with an exec in flight: no callback, ever; the sleeper is gone */
    int calls = 0;
    s = sb_sandbox_new(base, &cfg);
    CHECK_INT(sb_sandbox_exec(s, "import subprocess\nsubprocess.run(['sleep', '876543'])", on_never, &calls), 0);
    struct timeval tv = {0, 500000};
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
    sb_sandbox_destroy(&s);
    tv.tv_usec = 200000;
    event_base_loopexit(base, &tv);
    event_base_dispatch(base);
    CHECK_INT(calls, 0);
    for (int i = 0; i < 100 && host_procs_with_cmdline("sleep\0"
                                                       "876543",
                                                       13) > 0;
         i++)
        usleep(20000); /* the pid namespace's teardown is the kernel's, just after bwrap's end */
    CHECK_INT(host_procs_with_cmdline("sleep\0"
                                      "876543",
                                      13),
              0);
    sb_sandbox_result_clear(&c.r);
}

int main(void)
{
    if (access("/usr/bin/bwrap", X_OK) != 0 || access("/usr/bin/python3", X_OK) != 0) {
        fprintf(stderr, "test_sandbox: FATAL: /usr/bin/bwrap and /usr/bin/python3 are required "
                        "(Debian packages bubblewrap, python3-numpy, python3-pandas, python3-matplotlib)\n");
        return 1;
    }
    base = event_base_new();
    test_frames();
    test_reader();
    test_basics();
    test_escapes();
    test_limits();
    test_api();
    event_base_free(base);
    return sb_test_finish("test_sandbox");
}
