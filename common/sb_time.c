/* sb_time: clock helpers. */
#include "sb_time.h"

#include <time.h>

static int64_t sb_clock_us(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t sb_now_ms(void)
{
    return sb_clock_us(CLOCK_REALTIME) / 1000;
}
int64_t sb_mono_ms(void)
{
    return sb_clock_us(CLOCK_MONOTONIC) / 1000;
}
int64_t sb_mono_us(void)
{
    return sb_clock_us(CLOCK_MONOTONIC);
}
