/*
 * record_inputs.h - a run's input files travel with its folder: the .npy
 * files its kernel options name and the plugin its kernel comes from (see
 * record_inputs.c). Internal to the session library.
 */
#ifndef NPURR_RECORD_INPUTS_H
#define NPURR_RECORD_INPUTS_H

#include "recorder/recorder.h"
#include "session/session.h"

#define RECORD_INPUTS_MAX 8
/* Where a run folder's path goes in a recorded option value. */
#define RECORD_RUN_PLACEHOLDER "{RUN}"

typedef struct record_input {
    int index;             /* of the option in the run's kernel_opts */
    const char *option;    /* kernel option name, e.g. "routing" */
    const char *source;    /* the user's path (may hold "{rank}") */
    int per_rank;
    char value[160];       /* what the run records: npy:{RUN}/inputs/NAME[.{rank}].npy */
} record_input;

typedef struct record_inputs {
    int count;
    record_input items[RECORD_INPUTS_MAX];
} record_inputs;

/* Finds options whose value names an input file; returns how many. */
int record_inputs_plan(const run_options *ro, record_inputs *in);
/* The input of option index i in ro's kernel_opts, or NULL when it names no file. */
const record_input *record_inputs_of(const record_inputs *in, int i);
/* Copies them into RUN/inputs/ (every rank's file for a {rank} pattern). */
int record_inputs_copy(const record_inputs *in, const char *run_dir, int n_ranks, char *err,
                       size_t errlen);
/* Copies plugin p's file to RUN/<file> (file is what run_spec_meta records
 * as plugin.file, "plugin/NAME.so"), and checks the copy is the plugin
 * that was loaded (its SHA-256): 0, or -1 with err (the copy removed). */
int record_plugin_copy(const kernel_plugin *p, const char *file, const char *run_dir, char *err,
                       size_t errlen);
/* value with every {RUN} replaced by run_dir; malloc'd (NULL out of memory). */
char *record_inputs_in_run(const char *value, const char *run_dir);
/* Replay of a run recorded before its options were typed keys: every
 * option with a replay.opt.NAME key in r's header gets that value with
 * {RUN} replaced by run_dir; the new values are malloc'd into owned[i]
 * (one slot per option). 0, or -1 with err. */
int record_inputs_redirect(rec_reader *r, const char *run_dir, run_options *ro, char **owned,
                           char *err, size_t errlen);

#endif
