/*
 * host_clock.c - the host's monotonic clock, the one every wall-time
 * figure npurr prints is read from (record's and replay's seconds and
 * events per second, progress lines, explore's and sweep's rates, the
 * analysis's step timings). It is never part of a run: virtual time is the
 * scheduler's, and nothing a trace holds depends on this clock.
 */
#include <time.h>

#include "engine/host/host.h"

double engine_host_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
