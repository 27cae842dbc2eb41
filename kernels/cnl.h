/*
 * cnl.h - combine-normal-layered: A2's layered normal combine across two
 * servers, MoeDistributeCombineA2Layered::Process() as the chip runs it
 * (sgl-kernel-npu csrc/deepep/ops2/op_kernel/moe_distribute_combine_a2_
 * layered.h at 3a90dfa1, COMBINE_2SERVER_VERSION, BF16), the combine of
 * dispatch-normal --nodes 2 (DispatchNormalA2), every AIV core of every
 * rank:
 *
 *   AlltoAllDispatch  the world's ranks split over the cores; per
 *                     destination rank d, the rows this rank's experts got
 *                     from d, one at a time: its weight read from GM into
 *                     the 32 B behind the row in UB, the row GM -> UB, and
 *                     row + weight into the IPC window of the local rank
 *                     with d's number (over HCCS unless this rank), in the
 *                     slice for d's server, after the rows this server's
 *                     earlier experts have for d; a full pipe barrier each;
 *                     then a flag there; SyncAll;
 *   SumToWindow       cores < N wait for the P local ranks' flags of their
 *                     server's slice; SyncAll; B / N cores per server s
 *                     split MAX_BS token slots of s's same-numbered rank;
 *                     per token, its rows in this server (offsetInner: the
 *                     notify's table), each read from this rank's slice,
 *                     times its weight, summed in f32, the partial sum
 *                     rounded to bf16 into windowOut's block for s, row t;
 *   AlltoAllServerDispatch  cores < N build one BatchWrite item each (the
 *                     whole block, MAX_BS rows, to the same-numbered rank
 *                     of server s; none for this server), core 0 posts
 *                     them; the core of this server copies its block into
 *                     windowIn through UB;
 *   SetStatus         core 0: an 8 B state to every server's same-numbered
 *                     rank, one more BatchWrite (after the data: the AICPU
 *                     posts in order);
 *   WaitDispatch      cores < N: server s's state;
 *   SumToServer       8 cores split the slots; per token and server it
 *                     reaches (offsetOuter, two GM reads), the partial row
 *                     from windowIn's block, summed, rounded to bf16 out.
 *
 * The notify's tables (epRankTokenCnt, offsetInner, offsetOuter,
 * countOuter) and the dispatch's outputs (expandX, the rows' weights) are
 * inputs from combine-normal's plan (combine_plan.c; dispatch-normal's
 * layout of expandX, expert-major and source-minor). Decisions: npurr pads
 * the token slots to --tokens where the chip pads to MAX_BS = 4096 (the
 * same at 4096 tokens); one call on fresh windows (bufferId 0, state 1).
 * Files: cnl_plan.c (options, shape, tables), cnl_setup.c, cnl_send.c
 * (AlltoAllDispatch, SumToWindow), cnl_server.c (the rest),
 * cnl_check.c, cnl_layout.c.
 */
#ifndef NPURR_CNL_H
#define NPURR_CNL_H

#include <stdint.h>

#include "combine.h"

#define CNL_MAX_RANKS 16
#define CNL_MAX_BS 4096
#define CNL_FLAG_VALUE 12345       /* the IPC flag of a finished slice */
#define CNL_FLAG_BYTES 32u         /* one flag (4 int64, a 32 B copy) */
#define CNL_STATE_OFFSET 512u      /* STATE_OFFSET between servers' states */
#define CNL_STATE_VALUE 1          /* stateValue_ of a first call */
#define CNL_SUM_CORES 8            /* Preload / SumToServer's cores */
#define CNL_GUARD_BYTE 0x6Bu

/* ------------------------------------------------------------ kernel args */

typedef struct cnl_args {
    int num_ranks, nodes, npus, local_experts, experts, tokens, topk, hidden;
    uint32_t row_bytes;          /* H * 2 */
    uint32_t ipc_row;            /* H * 2 + 32: a row and its weight */
    uint64_t slice_bytes;        /* one destination server's slice of the IPC window */
    uint64_t block_bytes;        /* one server's block of windowOut / windowIn: T rows */
    int inject;
    /* per rank */
    gm_t x[CNL_MAX_RANKS];             /* expandX [rows, H] bf16: the expert outputs */
    gm_t scales[CNL_MAX_RANKS];        /* [rows] float: each row's top-k weight */
    gm_t send_count[CNL_MAX_RANKS];    /* [E][W] int32: rows expert e got from rank w */
    gm_t offset_inner[CNL_MAX_RANKS];  /* [N][T][P * L] int32: slice row or -1 */
    gm_t offset_outer[CNL_MAX_RANKS];  /* [T][N] int32: >= 0 when the token reaches server n */
    gm_t count_outer[CNL_MAX_RANKS];   /* [T] int32: servers reached, running */
    gm_t tasks[CNL_MAX_RANKS];         /* [2N] batch_write_task */
    gm_t state_src[CNL_MAX_RANKS];     /* 32 B: the state every server is sent */
    gm_t out[CNL_MAX_RANKS];           /* [T, H] bf16 */
    /* symmetric */
    gm_t ipc;                    /* [P + N * P flags][N slices] */
    gm_t win_out;                /* N blocks */
    gm_t win_in;                 /* N blocks, then N states 512 B apart */
} cnl_args;

void cnl_kernel(const void *args);
/* The steps (cnl_send.c, cnl_server.c); UB is one block re-carved per
 * step, as the chip's tpipe. */
void cnl_alltoall_dispatch(const cnl_args *a, local_t tbuf);
void cnl_sum_to_window(const cnl_args *a, local_t tbuf);
void cnl_server_dispatch(const cnl_args *a, local_t tbuf);
void cnl_sum_to_server(const cnl_args *a, local_t tbuf);

static inline gm_t cnl_flag(const cnl_args *a, int rank, int index) {
    return gm_add(gm_on_rank(a->ipc, rank), (int64_t)index * CNL_FLAG_BYTES);
}
static inline gm_t cnl_slice(const cnl_args *a, int rank, int server) {
    uint64_t flags = kit_align_up((uint64_t)(a->nodes + 1) * (uint64_t)a->npus * CNL_FLAG_BYTES, 512);
    return gm_add(gm_on_rank(a->ipc, rank), (int64_t)(flags + (uint64_t)server * a->slice_bytes));
}
static inline gm_t cnl_block(gm_t base, const cnl_args *a, int rank, int server) {
    return gm_add(gm_on_rank(base, rank), (int64_t)((uint64_t)server * a->block_bytes));
}
static inline gm_t cnl_state_at(const cnl_args *a, int rank, int server) {
    return gm_add(gm_on_rank(a->win_in, rank),
                  (int64_t)((uint64_t)a->nodes * a->block_bytes + (uint64_t)server * CNL_STATE_OFFSET));
}

/* ------------------------------------------------------------ host side */

extern const kernel_option cnl_options[];
/* Options on the run topo describes: two nodes of at most 8 NPUs, at most
 * 4096 tokens, --cores at least the servers, UB; *fault (when not NULL)
 * the --inject index. err names the option. */
int cnl_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, combine_shape *sh,
                            int *fault, char *err, size_t errlen);
uint32_t cnl_ub_bytes(const combine_shape *sh);
/* The notify's tables of rank r (cnl_plan.c): send_count [E][W],
 * offset_inner [N][T][P * L], offset_outer [T][N], count_outer [T]. */
void cnl_send_count(const combine_plan *p, int32_t *send_count);
void cnl_offset_inner(const combine_plan *p, int r, int32_t *offset_inner);
void cnl_outer(const combine_plan *p, int r, int32_t *offset_outer, int32_t *count_outer);

typedef struct cnl_state {
    combine_plan plan;
    cnl_args args;
    kit_guards guards;
} cnl_state;

kernel_check_fn cnl_check;
kernel_layout_fn cnl_layout;
kernel_estimate_fn cnl_estimate;
kernel_destroy_fn cnl_destroy;

#endif
