/*
 * replayer.h - deterministic re-execution of a recorded run, checked event
 * by event against its trace. The replayer library's one public header.
 *
 * The engine is deterministic: the same configuration, seed and kernel
 * options give the same event stream byte for byte. So a replay is the same
 * run built again (the session rebuilds it from the trace's typed meta
 * keys: rec_meta_get_config, run_spec_from_run) with a comparing observer installed: every event
 * the engine emits is compared field by field with the next event of the
 * trace, and the first difference stops the engine with a report naming the
 * seq, both events, the core and the kernel line that issued it. At the end
 * the run's ending (outcome, end time, event count, data check) is compared
 * with the trace's trailer. Anchor: rr - record once, replay the same
 * execution as often as needed, stop anywhere in it with a debugger.
 *
 * Use:
 *   rec_reader_open(RUN) -> rec_meta_get_config -> engine_create ->
 *   the kernel's setup -> replay_attach -> engine_run -> the kernel's check
 *   (completed runs) -> replay_finish -> replay_write_report /
 *   replay_exit_code -> replay_free.
 *
 * Break points: opts.break_at = SEQ stops just before event SEQ, on the
 * stack of the core that issues it. Under a debugger (TracerPid != 0) the
 * process raises SIGTRAP there, so gdb stops a few frames below the kernel
 * line (replayer/npurr_gdb.py selects that frame and adds `npurr when`,
 * `npurr cores`, `npurr rings`, `npurr bt`, `npurr goto`). Without a
 * debugger the state of every core and the event about to execute are
 * printed and the run stops (status REPLAY_BREAK).
 *
 * Checkpoints: opts.checkpoint_every = N forks a snapshot of the whole
 * process after every N-th event while replaying (the child is frozen on a
 * pipe). replay_goto resumes the nearest snapshot before a seq instead of
 * re-executing from the first event. Snapshot processes never outlive the
 * replay: they exit when replay_free closes their pipe or their parent dies.
 *
 * Errors are values: int-returning calls return 0, or -1 with a sentence
 * naming the input at fault in err.
 */
#ifndef NPURR_REPLAYER_H
#define NPURR_REPLAYER_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "engine/engine.h"
#include "recorder/recorder.h"

typedef struct replay replay;

typedef struct replay_opts {
    uint64_t break_at;         /* stop just before this seq; 0 = never */
    uint64_t checkpoint_every; /* fork a snapshot after every N-th event; 0 = none */
    int max_checkpoints;       /* snapshots kept at once; 0 = 32. When full, every
                                * other one is dropped and the interval doubles, so
                                * they keep covering the whole run */
    FILE *out;                 /* where a break without a debugger prints; NULL = stdout */
} replay_opts;

typedef enum {
    REPLAY_RUNNING = 0,   /* nothing decided yet */
    REPLAY_IDENTICAL,     /* every event and the recorded ending reproduced */
    REPLAY_DIVERGED,      /* an event or the ending differs from the trace */
    REPLAY_BREAK,         /* stopped at break_at (no debugger); events so far matched */
    REPLAY_TRACE_ERROR,   /* the trace is truncated or corrupt; message says how far */
    REPLAY_INTERRUPTED    /* stopped from outside (Ctrl-C) before an ending */
} replay_status;

typedef struct replay_verdict {
    replay_status status;
    /* DIVERGED: the first seq that differs (0: only the ending differs);
     * BREAK: the break seq; TRACE_ERROR: the trace is complete up to it. */
    uint64_t seq;
    uint64_t matched;          /* events that were equal to the trace */
    int has_expected;          /* DIVERGED at an event: the trace's event */
    int has_actual;            /* ... and the replay's (0: the replay ended first) */
    engine_event expected, actual;
    char what[1200];           /* which fields or which part of the ending
                                * differ; the trace error; the break event */
    /* The ending (after replay_finish). */
    char recorded_outcome[32]; /* trailer outcome */
    char recorded_check[16];   /* trailer check: passed | failed | skipped */
    engine_outcome outcome;    /* the replay's */
    char check[16];
    uint64_t blocked;          /* EV_BLOCKED reports reproduced (deadlock, watchdog) */
    uint64_t first_blocked_seq;
} replay_verdict;

/* Checks that the trace was recorded for an engine of this shape (cores
 * per rank, AIC count) and installs the comparing observer and the break
 * point on e (which must not have run yet; its kernels are launched).
 * r is read from its current position (just after rec_reader_open). Both
 * must outlive the replay. */
int replay_attach(engine *e, rec_reader *r, const replay_opts *o, replay **out, char *err,
                  size_t errlen);

/* After engine_run (and, for a completed run, the kernel's check):
 * compares the ending with the trailer. check_status is "passed",
 * "failed" or "skipped"; check_message may be NULL. res NULL means
 * engine_run itself failed. */
void replay_finish(replay *rp, const engine_result *res, const char *check_status,
                   const char *check_message);

/* The comparison so far (complete after replay_finish); owned by rp. */
const replay_verdict *replay_verdict_get(const replay *rp);

/* Human report: "identical: N events, outcome X" with the blocked cores of
 * a reproduced deadlock, or the divergence (seq, expected and actual event,
 * rank, core, kernel file:line), or the trace error. */
void replay_write_report(const replay *rp, FILE *out);

/* Exit code of `npurr replay` (DESIGN.md): 0 identical and completed with
 * its check passed; 3 deadlock or watchdog reproduced; 4 failed data check
 * reproduced; 5 diverged; 1 trace error, interruption, or a reproduced
 * fault (as `record` exits 1 for it); 0 for a break without a debugger. */
int replay_exit_code(const replay *rp);

/* Wall seconds from replay_attach to the last event (RUN_END) of the
 * replay; 0 if it was not reached. */
double replay_seconds_to_end(const replay *rp);

/* Snapshots currently kept, oldest first (seq of the event after which
 * each was taken). */
int replay_checkpoint_count(const replay *rp);
/* The seq after which snapshot i (< replay_checkpoint_count) was taken. */
uint64_t replay_checkpoint_seq(const replay *rp, int i);

typedef struct replay_goto_result {
    uint64_t from_seq;      /* the snapshot resumed (its last event) */
    uint64_t reached_seq;   /* REPLAY_BREAK: the target */
    replay_status status;   /* REPLAY_BREAK when the target was reached */
    double seconds;         /* wall time from resuming to arriving */
    char what[512];         /* otherwise, why not */
} replay_goto_result;

/* Re-executes up to just before event seq from the nearest snapshot taken
 * before it (the snapshot is used up: it becomes the process that goes on).
 * print_state: that process prints the cores and the event about to execute
 * to opts.out on arrival, as a break does. Returns 0 with *res filled
 * (res->status says whether seq was reached), or -1 with err when no
 * snapshot precedes seq or the snapshot process failed. */
int replay_goto(replay *rp, uint64_t seq, int print_state, replay_goto_result *res, char *err,
                size_t errlen);

/* Ends the snapshot processes and frees rp (the engine and the reader stay
 * the caller's). NULL is ignored. */
void replay_free(replay *rp);

#endif
