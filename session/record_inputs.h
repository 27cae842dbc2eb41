/*
 * record_inputs.h - a run's input files travel with its folder (see
 * record_inputs.c). Internal to the session library.
 */
#ifndef NPURR_RECORD_INPUTS_H
#define NPURR_RECORD_INPUTS_H

#include "recorder/recorder.h"
#include "session/session.h"

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
/* Replay's side: every option with a replay.opt.NAME key in r's header
 * gets that value with {RUN} replaced by run_dir; the new values are
 * malloc'd into owned[i] (one slot per option). 0, or -1 with err. */
int record_inputs_redirect(rec_reader *r, const char *run_dir, run_options *ro, char **owned,
                           char *err, size_t errlen);

#endif
