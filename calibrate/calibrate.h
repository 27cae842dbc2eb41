/*
 * calibrate.h - the timing model held against measured times: `npurr hw
 * --compare`, `npurr calibrate` and bench_fidelity. fidelity_csv.c reads a
 * table of measured rows, fidelity_run.c runs a row (in the engine's
 * process pool, engine_pool_run), fidelity_fit.c fits the parameters
 * engine/timing.c flags as fitted to the training rows.
 *
 * A library of its own above the session (it runs kernels as the CLI's
 * record does, with no run folder): the session is the run object only.
 */
#ifndef NPURR_CALIBRATE_H
#define NPURR_CALIBRATE_H

#include <stddef.h>

#include "session/session.h"

/* One measured time: a kernel at a shape, the phase the measurement timed
 * (a kernel_phase name, or "total": the whole run) and its duration. A row
 * whose kernel is "-" is a measurement no npurr kernel stands for: listed
 * with its reason (the options column), never run or fitted. */
typedef struct fidelity_row {
    char where[320];          /* "FILE:LINE" (or FILE and the op), for messages */
    char id[64];              /* the id column, or the msprof op name; "" if none */
    char kernel[64];
    int covered;              /* 0: kernel "-", options holds why no kernel stands for it */
    char options[2048];       /* the kernel's options as one shell line, without -k */
    char phase[32];
    double measured_us;       /* the mean of its published replicates */
    int replicates;           /* how many: measured_us "a;b;c" lists them, >= 1 */
    double rep_min, rep_max;  /* their range (both measured_us when one) */
    int train;                /* 1: fitted on (use=train, or no use column); 0: validate */
    char source[1024];        /* the source column, "" if none */
} fidelity_row;

typedef struct fidelity_table {
    fidelity_row *rows;
    int n;
} fidelity_table;

enum { FIDELITY_LATE_OPTIONS = 1 };
/* Reads path: either npurr's measured-rows CSV (header kernel,options,
 * phase,measured_us plus optional id, use, source; '#' lines are comments;
 * measured_us may list a row's replicates as "a;b;c", held as their mean)
 * or msprof's op_summary CSV (an "Op Name" and a "Task Duration(us)"
 * column), whose rows of one op are averaged into one row per phase the op
 * names match (kernel_phase.op_names, substrings of "Op Name" or "OP
 * Type"); its shape is kernel_options ("-k KERNEL --nodes 2 ..."), which
 * only that format takes. Every row is checked (kernel, phase, options,
 * number). SESSION_OK, or SESSION_ERROR with err naming FILE:LINE.
 * FIDELITY_LATE_OPTIONS in flags: options the kernel refuses are left for
 * the row's run to report (bench_fidelity lists such a row as not runnable
 * and goes on). The caller frees *t with fidelity_table_free. */
int fidelity_table_read(const char *path, const char *kernel_options, int flags,
                        fidelity_table *t, char *err, size_t errlen);
/* Frees t's rows (not t itself). */
void fidelity_table_free(fidelity_table *t);

#define FIDELITY_MAX_PHASES 8
/* What one row's run gave, in virtual microseconds. */
typedef struct fidelity_result {
    int ok;                   /* 0: error says why (deadlock, refused shape, ...) */
    int stopped;              /* 1: Ctrl-C stopped it (or kept it from starting): no failure */
    double us;                /* the row's phase */
    double total_us;          /* the run's end */
    int nphases;              /* every phase of the kernel, in its order */
    char phase_name[FIDELITY_MAX_PHASES][32];
    double phase_us[FIDELITY_MAX_PHASES];   /* < 0: none of the phase's roles ran */
    unsigned used;            /* engine_resources_used: what the run priced */
    char error[4096];
} fidelity_result;

/* Runs row without a trace under hw: the phase's span is the last of its
 * roles' cores out minus the first in (engine_role_span), "total" the
 * run's end. With check 0 the kernel's output check is skipped (a
 * calibration's evaluations, after every row passed it once at the start).
 * Fills res; res->ok 0 with res->error naming row->where (a row not
 * covered: "not covered: " and its reason, nothing run). */
void fidelity_run(const fidelity_row *row, const engine_hw *hw, int check, fidelity_result *res);
/* Told as each run of fidelity_run_many ends: the (first) row it ran, its
 * result, finished of total distinct runs so far. */
typedef void (*fidelity_progress_fn)(void *ctx, const fidelity_row *row, const fidelity_result *r,
                                     int finished, int total);
/* rows[i] under hws[i] for i < n, up to jobs at once, each in its own
 * process (engine_pool_run); every res[i] filled as fidelity_run(...,
 * check, ...) would; progress (may be NULL) told as runs end. Returns 1
 * when Ctrl-C or SIGTERM stopped it (rows not finished have stopped set),
 * else 0. */
int fidelity_run_many(const fidelity_row *const *rows, const engine_hw *hws, int n, int jobs,
                      int check, fidelity_result *res, fidelity_progress_fn progress, void *ctx);

/* sum over rows of log(npurr / measured)^2: the fit's error. */
double fidelity_error(const double *npurr_us, const double *measured_us, int n);

#define FIDELITY_MAX_FIT 4   /* the timing policy's most fitted parameters */
typedef struct fidelity_fit_opts {
    int jobs;                 /* runs at once (forked), >= 1 */
    int max_evals;            /* parameter sets tried at most (each runs every train row) */
    /* after each parameter set: evaluation k of at most max, the best error so far */
    void (*progress)(void *ctx, int k, int max, double best);
    void *ctx;
} fidelity_fit_opts;

typedef struct fidelity_fit_result {
    engine_hw hw;             /* the fitted set (start with the fitted keys replaced, each
                               * rounded to 4 significant digits) */
    double error_start, error_fit;   /* error_fit at the rounded values */
    int evals, train_rows, iterations;
    int nparams;
    const engine_hw_param *params[FIDELITY_MAX_FIT];
    int at_edge[FIDELITY_MAX_FIT];   /* ended at its box's edge: not identified */
    double moves_2x[FIDELITY_MAX_FIT];   /* the most a training row moves (fraction) when the
                                          * parameter moves 2x, from the last Jacobian; -1
                                          * when none was taken */
} fidelity_fit_result;

/* Fits the parameters flagged ENGINE_HW_FITTED (at most FIDELITY_MAX_FIT)
 * to the train rows of t from start: minimizes fidelity_error by Gauss-
 * Newton with Levenberg-Marquardt damping in the logarithm of each
 * parameter, within its accepted range and 16x of its sourced estimate
 * (fidelity_fit.c says how). A parameter set under which a row fails counts
 * as infinitely bad; a row failing at start is an error naming it.
 * SESSION_OK, or SESSION_ERROR with err. */
int fidelity_fit(const fidelity_table *t, const engine_hw *start, const fidelity_fit_opts *o,
                 fidelity_fit_result *out, char *err, size_t errlen);

#endif
