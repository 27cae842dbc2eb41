/*
 * hb.h - the happens-before checker behind `--check races`.
 *
 * It observes a run like the recorder does (an engine_observer that also
 * forwards everything to an inner observer) and tracks happens-before over
 * every pipe of every core of every rank. Each track (rank, core, pipe) has
 * a vector clock; clocks are copied only on synchronisation edges, and a
 * pipe learns from its scalar unit by version, so issuing a transfer costs
 * O(1). Memory is shadowed per range (FastTrack-style epochs: the last
 * write, and the few reads not yet ordered) for GM of every rank and every
 * core's UB, L1 and L0 buffers.
 *
 * Edges: program order per pipe; the scalar unit issuing to a pipe;
 * SetFlag -> WaitFlag and PipeBarrier inside a core; CrossCoreSetFlag ->
 * CrossCoreWaitFlag (AIC/AIV); RdmaQuiet; barriers (SyncAll, BarrierAll);
 * a scalar read (GetValue, a GM wait) of a word after the write it observed,
 * where a transfer's write is published at its completion.
 *
 * Reports: races (overlapping bytes, one side a write, not ordered; two
 * scalar word accesses are synchronisation, not data, and two accumulating
 * writes commute) and sync errors (a SetFlag never waited for, a WaitFlag
 * never set, a ring tail published before the data it covers was written, a
 * wait still blocked when the run ended). Each names both sides.
 */
#ifndef NPURR_CHECKER_HB_H
#define NPURR_CHECKER_HB_H

#include <stdio.h>

#include "engine/engine.h"

typedef struct hb_checker hb_checker;

typedef enum {
    HB_RACE = 1,
    HB_FLAG_NEVER_WAITED,    /* a SetFlag left pending when the kernel returned */
    HB_WAIT_NEVER_SET,       /* a WaitFlag with no SetFlag before it */
    HB_TAIL_BEFORE_DATA,     /* a ring tail stored before the data it covers had landed */
    HB_WAIT_NEVER_SATISFIED  /* a GM or cross-core wait still blocked at the end of the run */
} hb_kind;

/* One side of a report. */
typedef struct hb_side {
    int rank, core, pipe;    /* core index within the rank: < num_aic is an AIC */
    const char *file;        /* kernel call site ("" when unknown) */
    int line;
    uint64_t seq;            /* `npurr replay RUN --break-at SEQ` lands on it */
    uint64_t addr, len;      /* gm_t raw or local_raw, and bytes (0 for a sync point) */
    int write, atomic, scalar;
} hb_side;

typedef struct hb_report {
    hb_kind kind;
    hb_side a, b;            /* a: the earlier side; b: the later (absent: b.seq 0 and no site) */
    char object[160];        /* what the bytes are: allocation and offset, or the memory */
    char what[256];          /* one sentence */
    uint64_t occurrences;    /* the same pair of sites seen again */
} hb_report;

/* inner (may be NULL) sees everything first, unchanged. */
int hb_create(engine *e, const engine_observer *inner, hb_checker **out, char *err,
              size_t errlen);
/* The checker as an observer, to install with engine_set_observer: it
 * forwards everything to the inner observer given to hb_create, and checks. */
engine_observer hb_observer(hb_checker *h);
/* After engine_run: the end-of-run sync errors. */
void hb_finish(hb_checker *h, const engine_result *res);
uint64_t hb_races(const hb_checker *h);         /* distinct pairs of sites */
uint64_t hb_sync_errors(const hb_checker *h);   /* distinct sites */
/* How many reports there are (races and sync errors, distinct pairs of
 * sites). */
size_t hb_report_count(const hb_checker *h);
/* Report i in the order found; owned by h, NULL when i >= hb_report_count. */
const hb_report *hb_report_get(const hb_checker *h, size_t i);
/* A summary line and up to max reports, each with both sides. */
void hb_print(const hb_checker *h, FILE *out, size_t max);
/* Writes the reports as the `races` table of RUN/index.db (replacing it). */
int hb_write_db(const hb_checker *h, const char *run_dir, char *err, size_t errlen);
/* Frees h and its reports; NULL is ignored. */
void hb_destroy(hb_checker *h);

#endif
