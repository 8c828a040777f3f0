/* sb_id: prefixed random identifiers. */
#include "sb_id.h"

#include <openssl/rand.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void sb_random_fill(void *buf, size_t n)
{
    if (RAND_bytes(buf, (int)n) != 1) {
        fprintf(stderr, "switchboard: CSPRNG failure\n");
        abort();
    }
}

/* A thread's pool of CSPRNG output. One RAND_bytes call costs about 2 µs
 * here whatever its size (a lock, a fork check by getpid(2), the DRBG's
 * reseed test), and a request draws four ids; the pool draws 512 bytes at
 * a time and hands them out in order, erasing each byte as it goes, so what
 * is left in memory is only what has not been used yet. A forked child
 * starts with an empty pool (its parent's bytes must not be drawn twice). */
#define SB_RANDOM_POOL 512
static _Thread_local struct {
    unsigned char bytes[SB_RANDOM_POOL];
    size_t used; /* bytes handed out since the last fill */
    int filled;  /* 0: never filled, or emptied by a fork */
} sb_random_pool;
static pthread_once_t sb_random_once = PTHREAD_ONCE_INIT;

static void sb_random_on_fork_child(void)
{
    explicit_bzero(&sb_random_pool, sizeof sb_random_pool);
}

static void sb_random_register(void)
{
    (void)pthread_atfork(NULL, NULL, sb_random_on_fork_child);
}

void sb_random_bytes(void *buf, size_t n)
{
    if (n > SB_RANDOM_POOL / 8) {
        sb_random_fill(buf, n);
        return;
    }
    if (!sb_random_pool.filled || SB_RANDOM_POOL - sb_random_pool.used < n) {
        pthread_once(&sb_random_once, sb_random_register);
        sb_random_fill(sb_random_pool.bytes, SB_RANDOM_POOL);
        sb_random_pool.used = 0;
        sb_random_pool.filled = 1;
    }
    unsigned char *from = sb_random_pool.bytes + sb_random_pool.used;
    memcpy(buf, from, n);
    explicit_bzero(from, n);
    sb_random_pool.used += n;
}

/* prefix, then the n bytes of raw as hex, truncated to out_size. */
static void sb_id_write(char *out, size_t out_size, const char *prefix, const unsigned char *raw, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    if (out_size == 0)
        return;
    size_t pos = strlen(prefix);
    if (pos >= out_size)
        pos = out_size - 1;
    memcpy(out, prefix, pos);
    for (size_t i = 0; i < n && pos + 2 < out_size; i++) {
        out[pos++] = hex[raw[i] >> 4];
        out[pos++] = hex[raw[i] & 15];
    }
    out[pos] = '\0';
}

void sb_id_new(char *out, size_t out_size, const char *prefix, size_t nbytes)
{
    unsigned char raw[32];
    if (nbytes > sizeof raw)
        nbytes = sizeof raw;
    sb_random_bytes(raw, nbytes);
    sb_id_write(out, out_size, prefix, raw, nbytes);
}

void sb_id_new_ordered(char *out, size_t out_size, const char *prefix, size_t nbytes)
{
    unsigned char raw[6 + 32];
    if (nbytes > 32)
        nbytes = 32;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ms = (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
    for (int i = 5; i >= 0; i--, ms >>= 8)
        raw[i] = (unsigned char)(ms & 0xff);
    sb_random_bytes(raw + 6, nbytes);
    sb_id_write(out, out_size, prefix, raw, 6 + nbytes);
}
