/*
 * record_inputs.h - copying a run's input files into its folder (see
 * record_inputs.c). Internal to the CLI.
 */
#ifndef NPURR_RECORD_INPUTS_H
#define NPURR_RECORD_INPUTS_H

#include "cli.h"

#define RECORD_INPUTS_MAX 8

typedef struct record_input {
    const char *option;    /* kernel option name, e.g. "routing" */
    const char *source;    /* the user's path (may hold "{rank}") */
    int per_rank;
    char key[96];          /* replay.opt.NAME */
    char value[160];       /* npy:{RUN}/inputs/NAME[.{rank}].npy */
} record_input;

typedef struct record_inputs {
    int count;
    record_input items[RECORD_INPUTS_MAX];
    const char *meta[2 * RECORD_INPUTS_MAX + 1];  /* key, value, ..., NULL */
} record_inputs;

/* Finds options whose value names an input file; returns how many. */
int record_inputs_plan(const run_options *ro, record_inputs *in);
/* Copies them into RUN/inputs/ (every rank's file for a {rank} pattern). */
int record_inputs_copy(const record_inputs *in, const char *run_dir, int n_ranks, char *err,
                       size_t errlen);

#endif
