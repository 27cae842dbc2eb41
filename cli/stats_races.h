/*
 * stats_races.h - `npurr stats RUN --races` (stats_races.c).
 */
#ifndef NPURR_CLI_STATS_RACES_H
#define NPURR_CLI_STATS_RACES_H

#include <stddef.h>

/* Prints the races table of run (at most top reports; 0 = all). Returns 0,
 * or 1 when the run has no such table or cannot be read. */
int stats_races(const char *run, size_t top);

#endif
