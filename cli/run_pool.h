/*
 * run_pool.h - many runs of one kernel without a trace, in parallel
 * processes: what `whatif` and `sweep` share.
 *
 * A point is a run spec (session.h) that run_point executes through the
 * same record session as `record --no-trace`, returning how it ended in a
 * flat struct; run_pool runs the points in the engine's process pool
 * (engine_pool_run: up to J forked children, one point each) and reports
 * each point as it finishes. Ctrl-C stops starting points, ends the
 * running children and returns what finished. The engine is single-threaded and deterministic,
 * so a point's result does not depend on J.
 */
#ifndef NPURR_CLI_RUN_POOL_H
#define NPURR_CLI_RUN_POOL_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"

#define POINT_ROLES 16

/* How one point ended. */
typedef struct point_result {
    int done;                 /* a result arrived (else the child died or was stopped) */
    int status;               /* record's exit code: 0, 1, 2 (refused), 3, 4 */
    int outcome;              /* engine_outcome; 0 if it never ran */
    uint64_t end_ps, events, stall_ps;
    uint32_t cores;           /* launched cores */
    double stall_share;       /* stall_ps / (cores x end_ps) */
    double wall;              /* seconds of engine_run */
    char check[16];           /* passed | failed | skipped | "" */
    char what[480];           /* the error, deadlock line or check message */
    int nroles;
    char role[POINT_ROLES][40];    /* the cores' roles (SetRole; the kernel's name if none) */
    uint64_t role_end[POINT_ROLES];/* when the role's last core finished */
} point_result;

/* Runs spec (its no_trace forced on) and fills r; never exits. */
void run_point(run_spec *spec, point_result *r);

/* Called in a child for job i: build its spec and run_point it. */
typedef void (*pool_job_fn)(void *ctx, size_t i, point_result *r);
/* Called in the parent as each job ends (done of total finished). */
typedef void (*pool_done_fn)(void *ctx, size_t i, const point_result *r, size_t done,
                             size_t total);

/* Runs jobs 0..n-1 in up to j processes at a time; results[i] filled (done
 * 0 for a job that did not finish). Returns 0, 1 when interrupted by Ctrl-C
 * or SIGTERM (finished results kept), -1 when a process could not be
 * started (err). */
int run_pool(size_t n, int j, pool_job_fn job, pool_done_fn done, void *ctx,
             point_result *results, char *err, size_t errlen);

/* The machine's core count: the default of -j. */
int pool_default_jobs(void);

#endif
