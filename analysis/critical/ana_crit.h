/*
 * ana_crit.h - the critical path of a run, inside the analysis library.
 *
 * The walk (ana_crit_walk.c) works on a run's events held in memory, indexed
 * by seq, plus the few timing figures it needs to split a transfer's time
 * between the resources it crossed; ana_crit_load.c fills that from
 * RUN/trace.zst, the tests build it by hand. ana_critical.c turns the walk's
 * segments into the critical_path table. The room's own header: the other
 * rooms see critical.h.
 */
#ifndef NPURR_ANA_CRIT_H
#define NPURR_ANA_CRIT_H

#include <stddef.h>
#include <stdint.h>

#include "analysis/critical/critical.h"
#include "analysis/derive/derive.h"
#include "recorder/recorder.h"

/* One event as the walk needs it (64 bytes; the run holds one per seq). */
typedef struct ana_crit_ev {
    uint64_t time;
    uint64_t link;        /* XFER_DONE: issue seq; *_WAIT_END: waker seq; 0 none */
    uint64_t start;       /* XFER_DONE: when the pipe started it (event value);
                             XFER_ISSUE of an RDMA op: when its source NIC had sent it
                             (the tx calendar replayed by ana_crit_load.c);
                             XCORE_SET: fire time (aux) */
    uint64_t len;         /* transfers: bytes */
    uint32_t prev;        /* the previous event this core emitted itself (0 none);
                             a transfer's completion is not one of them */
    uint32_t prev_track;  /* XFER_ISSUE: the previous issue on the same (rank, core, pipe);
                             of an RDMA op: the op that held the source NIC until this
                             one could begin sending (0: it began at its post) */
    uint32_t site;
    uint32_t prev_aicpu;  /* XFER_ISSUE posted by the AICPU (RDMA ops, BatchWrite items):
                             the previous op its rank's AICPU posted */
    uint16_t rank, core, peer;
    uint8_t kind, pipe, sub;
} ana_crit_ev;

/* The timing figures, in ps, as the engine derives them from the hw.* keys
 * (engine/cluster.c): transfers' latencies and nominal durations. */
typedef struct ana_crit_model {
    uint64_t mte_lat, hccs_lat, rdma_lat, xcore_lat, barrier_lat;
    uint64_t aicpu_task;                            /* the AICPU's cost per posted op */
    uint64_t nic_msg;                               /* a NIC's cost per message (tx) */
    uint64_t hccs_read_held;                        /* what an MTE read of a peer's GM holds
                                                       its queue beyond its bytes */
    double mte_ppb, mte_hccs_ppb;                  /* ps per byte: a core's MTE queue to
                                                      its own GM, to a peer's */
    double hbm_ppb, hccs_ppb, nic_ppb;
    double hccs_port_ppb;                           /* an NPU's HCCS port, each way */
    uint64_t hccs_transfer;                         /* and its cost per transfer */
    double plane_ppb;                               /* an NPU's share of the spine, for
                                                       RDMA off its plane */
    double jitter;                                  /* config.jitter */
    int npus_per_node;
    int num_aic;                                    /* for core names */
} ana_crit_model;

/* A run in memory: ev[seq] for seq in 1..n-1 (ev[0] unused); per core
 * (rank * cores_per_rank + core) the seqs of its transfers' completions in
 * time order (done_seq[done_first[c] .. done_first[c+1])). */
typedef struct ana_crit_run {
    ana_crit_ev *ev;
    size_t n;
    uint32_t *done_seq;
    size_t *done_first;
    size_t ncores;
    int cores_per_rank;
    uint32_t *open_wait;   /* per core: the seq of a wait that never ended, 0 none */
    uint64_t end_time;     /* meta end_time_ps */
    int outcome;           /* engine_outcome */
    ana_crit_model m;
} ana_crit_run;

/* Reads RUN/trace.zst into *run (ana_crit_load.c). events: how many the
 * index says the trace holds (0 unknown), so the array is allocated once. */
int ana_crit_load(const char *run_dir, uint64_t events, ana_crit_run *run, char *err,
                  size_t errlen);
/* Builds done_seq/done_first/open_wait from ev (the loader calls it; so do
 * the tests, after filling ev by hand). */
int ana_crit_index(ana_crit_run *run, char *err, size_t errlen);
void ana_crit_run_free(ana_crit_run *run);

/* What a picosecond of the path was spent on. The what-if table
 * (ana_crit_classes.c) says which hw keys make each one twice as fast. */
typedef enum {
    CRIT_HBM = 0, CRIT_MTE, CRIT_HCCS, CRIT_HCCS_LATENCY, CRIT_NIC, CRIT_RDMA_LATENCY,
    CRIT_SCALAR, CRIT_VECTOR, CRIT_CUBE, CRIT_AICPU, CRIT_SYNC, CRIT_JITTER, CRIT_LAUNCH,
    CRIT_BLOCKED, CRIT_IDLE, CRIT_CLASS_COUNT
} ana_crit_class;

/* What kind of sync a CRIT_SYNC segment is, or which NIC direction. */
enum { CRIT_SUB_NONE = 0, CRIT_SUB_FLAG, CRIT_SUB_XCORE, CRIT_SUB_BARRIER, CRIT_SUB_POLL,
       CRIT_SUB_PIPE, CRIT_SUB_TX, CRIT_SUB_RX };

/* One piece of the path: [start, end) spent on cls at one instance. */
typedef struct ana_crit_seg {
    uint64_t start, end;
    uint64_t seq;          /* the event whose time this piece explains */
    uint32_t site;         /* that event's call site (0 none) */
    uint16_t rank, core, peer;
    uint8_t cls, sub, pipe, has_core;
} ana_crit_seg;

/* Walks back from the event that ended the run. The segments come out in
 * time order, adjacent, from 0 to run->end_time; neighbours on the same
 * instance merged. malloc'd into *segs. */
int ana_crit_walk(const ana_crit_run *run, ana_crit_seg **segs, size_t *nsegs, char *err,
                  size_t errlen);
/* The event the walk started from: the last kernel end; for a fault the
 * fault; for another run that did not complete the wait that blocked last
 * (0 if none of them). */
uint64_t ana_crit_ending(const ana_crit_run *run);

const char *ana_crit_class_name(int cls);
/* "HCCS r0->r3", "scalar r3 AIV5", "NIC r8 rx", ... */
void ana_crit_resource_text(const ana_crit_seg *s, int num_aic, char *buf, size_t len);
/* "r3 AIV5" */
void ana_crit_core_name(int rank, int core, int num_aic, char *buf, size_t len);

#endif
