/*
 * sb_time: wall-clock and monotonic milliseconds. Deadlines that cross
 * processes use wall-clock epoch milliseconds; local timers use monotonic.
 */
#ifndef SB_TIME_H
#define SB_TIME_H

#include <stdint.h>

int64_t sb_now_ms(void);  /* CLOCK_REALTIME, ms since the epoch */
int64_t sb_mono_ms(void); /* CLOCK_MONOTONIC, ms */
int64_t sb_mono_us(void); /* CLOCK_MONOTONIC, µs */

#endif
