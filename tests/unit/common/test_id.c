/* Unit tests for sb_id: random and time-ordered identifiers. */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sb_id.h"
#include "sb_test.h"

static int all_hex(const char *s)
{
    for (; *s; s++)
        if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
            return 0;
    return 1;
}

int main(void)
{
    char a[SB_ID_MAX], b[SB_ID_MAX];
    sb_id_new(a, sizeof a, "resp_", 24);
    sb_id_new(b, sizeof b, "resp_", 24);
    CHECK_INT(strlen(a), 5 + 48);
    CHECK(strncmp(a, "resp_", 5) == 0 && all_hex(a + 5));
    CHECK(strcmp(a, b) != 0);

    /* Ordered: prefix, 12 hex digits of milliseconds, then the random part. */
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long before = (unsigned long long)ts.tv_sec * 1000u + (unsigned long long)ts.tv_nsec / 1000000u;
    sb_id_new_ordered(a, sizeof a, "req_", 16);
    clock_gettime(CLOCK_REALTIME, &ts);
    unsigned long long after = (unsigned long long)ts.tv_sec * 1000u + (unsigned long long)ts.tv_nsec / 1000000u;
    CHECK_INT(strlen(a), 4 + 12 + 32);
    CHECK(strncmp(a, "req_", 4) == 0 && all_hex(a + 4));
    char ms_hex[13];
    memcpy(ms_hex, a + 4, 12);
    ms_hex[12] = '\0';
    unsigned long long ms = strtoull(ms_hex, NULL, 16);
    CHECK(ms >= before && ms <= after);

    /* Later ids sort after earlier ones (once the millisecond has moved on),
     * and two in the same millisecond still differ. */
    struct timespec pause = {0, 2000000};
    nanosleep(&pause, NULL);
    sb_id_new_ordered(b, sizeof b, "req_", 16);
    CHECK(strcmp(a, b) < 0);
    char c[SB_ID_MAX], d[SB_ID_MAX];
    sb_id_new_ordered(c, sizeof c, "req_", 16);
    sb_id_new_ordered(d, sizeof d, "req_", 16);
    CHECK(strcmp(c, d) != 0);

    /* A short buffer is truncated, never overrun, and stays terminated. */
    char small[10];
    memset(small, 'x', sizeof small);
    sb_id_new_ordered(small, sizeof small, "chatcmpl-", 24);
    CHECK_INT(strlen(small), 9);
    sb_id_new_ordered(small, sizeof small, "ab", 24);
    CHECK_INT(strlen(small), 8);
    CHECK(strncmp(small, "ab", 2) == 0 && all_hex(small + 2));

    /* The pool: draws across several refills never repeat (2,000 draws of
     * 16 bytes is 62 pools of 512), and a large draw bypasses it. */
    enum { DRAWS = 2000 };
    unsigned char(*seen)[16] = calloc(DRAWS, sizeof *seen);
    CHECK(seen != NULL);
    for (int i = 0; seen && i < DRAWS; i++)
        sb_random_bytes(seen[i], sizeof seen[i]);
    int repeats = 0;
    for (int i = 0; seen && i < DRAWS; i++)
        for (int j = i + 1; j < DRAWS; j++)
            repeats += !memcmp(seen[i], seen[j], sizeof seen[i]);
    CHECK_INT(repeats, 0);
    free(seen);
    unsigned char big[300], zero[300] = {0};
    sb_random_bytes(big, sizeof big);
    CHECK(memcmp(big, zero, sizeof big) != 0);

    /* A forked child must not draw the bytes its parent draws next (the
     * pool is emptied in the child). */
    unsigned char warm[8], mine[16], childs[16];
    sb_random_bytes(warm, sizeof warm); /* the pool now holds unused bytes */
    int pipefd[2];
    CHECK(pipe(pipefd) == 0);
    pid_t pid = fork();
    if (pid == 0) {
        unsigned char got[16];
        sb_random_bytes(got, sizeof got);
        _exit(write(pipefd[1], got, sizeof got) == (ssize_t)sizeof got ? 0 : 1);
    }
    CHECK(pid > 0);
    sb_random_bytes(mine, sizeof mine);
    CHECK(read(pipefd[0], childs, sizeof childs) == (ssize_t)sizeof childs);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(memcmp(mine, childs, sizeof mine) != 0);
    close(pipefd[0]);
    close(pipefd[1]);
    return sb_test_finish("id");
}
