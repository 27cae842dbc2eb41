/*
 * dispatch_normal.h - dispatch-normal, A2's normal-mode dispatch: on one
 * node the intranode CamMoeDispatchNormal (sgl-kernel-npu csrc/deepep/ops2/op_kernel/
 * cam_moe_dispatch_normal.h and op_host/cam_moe_dispatch_normal_tiling.cc
 * at 3a90dfa1), the mirror of combine-normal.
 *
 * One kernel on every AIV core of every rank, four steps (Process()):
 *   InputToShare   the rank's T * K (token, top-k) slots split over the
 *                  cores (SplitCoreCal); per slot the token row GM -> UB,
 *                  (rank, token, k) written behind it (FillTriple), and
 *                  the row UB -> this rank's OWN share window at
 *                  (sendOffset[expert] + sendTokenIdx[slot]) * stride;
 *   SetStatus      after SyncAll (every core's rows are in the window),
 *                  the experts split over the cores: per expert a 32 B
 *                  status (float 1.0 in its first word) into the state
 *                  area of the expert's rank, slot (local expert, rank);
 *   WaitStatus     the owner's cores split its L * R status slots, wait
 *                  for them, clear them, SyncAll;
 *   ShareToOutput  per status slot (local expert le, source rank s): the
 *                  rows s left for le are read from s's share window
 *                  (MTE2, over HCCS unless s is this rank) into UB, then
 *                  the row to expandX and the triple to expandIdx.
 * So the rows cross HCCS as reads by the destination, after a rank-wide
 * barrier and a status per (expert, rank): not as the source's writes.
 * Non-quantized BF16 only (the DynamicQuant path is not modelled).
 *
 * The routing and the notify's results come from combine-normal's plan
 * (combine_plan.c, COMBINE_SCHEME_NORMAL): expand_idx is sendTokenIdx,
 * offset_table / length_table give recvCount and, through sendOffset,
 * recvOffset, and x_src_info is exactly the expandIdx the dispatch must
 * leave on each owner (expandX's rows are combine-normal's x layout).
 *
 * At --nodes 2 (at most 8 NPUs per node) the kernel is what deep_ep.cpp
 * runs on two servers instead, DispatchNormalA2 =
 * CamMoeDistributeDispatchA2Layered::Process() (a2/cam_moe_distribute_
 * dispatch_a2_layered.h at 3a90dfa1), BF16, on every AIV core, SyncAll
 * between the steps:
 *   Input2Win      tokens split contiguously over the cores; per token the
 *                  row, its ids and weights GM -> UB (three MTE2 copies),
 *                  then the token struct (row + 4 x kAlign int slots,
 *                  tokenStructLen) to windowOut's block of every server it
 *                  goes to, and to windowIn's own-server block; one token in
 *                  flight per core;
 *   BetweenServer  core j builds server j's data item (32 B + rows x
 *                  tokenStructLen to the same-numbered rank there) and its
 *                  32 B flag item; core 0 posts all 2N in one BatchWrite (the
 *                  own-server items too, as the code reads: a loopback);
 *                  WaitWindow: core j waits for server j's flag;
 *   IPC barrier    cores < P store a magic flag in each local rank's window
 *                  and wait for theirs;
 *   Ipc2Out        per (source rank, local expert) its rows split over the
 *                  cores; per row two scalar GM reads of the offset tables,
 *                  the struct from the local window holding it (HCCS unless
 *                  this rank), the row to expandX, the weight to
 *                  expandScales behind full pipe barriers, all serialized;
 *   CleanUp        core 0 zeros the statuses; a second IPC barrier.
 * NotifyDispatchA2's tables (tokenServerIdx, tokenServerCnt,
 * epRankTokenCnt, the src / dst offset tables) come from the same plan
 * (dispatch_normal_a2l_plan.c); the notify is `dispatch-layered --notify
 * a2`. A2 writes no expandIdx there; the check verifies expandX and
 * expandScales.
 *
 * Files: dispatch_normal_plan.c (options, shape, the notify's tables),
 * dispatch_normal_setup.c (buffers, inputs, launch, descriptor),
 * dispatch_normal_send.c (entry, InputToShare), dispatch_normal_status.c
 * (SetStatus, WaitStatus), dispatch_normal_output.c (ShareToOutput),
 * dispatch_normal_check.c, dispatch_normal_layout.c (layout, estimate);
 * --nodes 2: dispatch_normal_a2l_plan.c (geometry, UB, the A2 notify's
 * tables), dispatch_normal_a2l_setup.c, dispatch_normal_a2l.c (Init,
 * Input2Win, the BatchWrite, WaitWindow), dispatch_normal_a2l_out.c (IPC
 * barrier, Ipc2Out, CleanUp).
 */
#ifndef NPURR_DISPATCH_NORMAL_H
#define NPURR_DISPATCH_NORMAL_H

#include <stdint.h>

#include "combine.h"

/* One node of CamMoeDispatchNormal, or two of DispatchNormalA2. */
#define DNORMAL_MAX_NODES 2
#define DNORMAL_MAX_RANKS (DNORMAL_MAX_NODES * COMBINE_MAX_RANKS)
/* STATE_OFFSET: one status per 32 B; the sender writes float 1.0 in its
 * first word (Duplicate 0x3F800000 under mask 0x0101010101010101). */
#define DNORMAL_STATE_BYTES 32u
#define DNORMAL_STATUS_BITS 0x3F800000
/* WIN_ADDR_ALIGN: the share window's row stride is 512 B aligned. */
#define DNORMAL_WIN_ALIGN 512u
/* EXPAND_IDX_INFO: (source rank, token, k) int32 behind every row. */
#define DNORMAL_IDX_LEN 3
/* The gap A2 leaves between the row and the triple (room for the dynamic
 * quant scale: hScaleSizeAlign = hUBAlignSize + UB_ALIGN). */
#define DNORMAL_SCALE_GAP 32u
/* expertIds / sendTokenIdx slots one core loads at once. A2 loads its
 * whole share (683 slots at 4096 x 8 over 48 cores); 2048 keeps that one
 * load there and bounds UB at small --cores. */
#define DNORMAL_IDS_ROWS 2048u
/* Per-core dataState words (selfDataStatusTensor) are 512 B apart. */
#define DNORMAL_DATA_STATE_STRIDE 512u

/* DispatchNormalA2 (cam_moe_distribute_dispatch_a2_layered.h at 3a90dfa1):
 * STATE_OFFSET between the per-server statuses; TOKEN_COUNT_SIZE, the
 * block before a server block's rows; RDMA_BUFFER_ALIGN of the server
 * blocks; FLAG_VALUE of a status; INFO_NUM_IN_TOKENSTRUCK kAlign int slots
 * behind a row (ids, weights, token index, scales); B64_PER_BLOCK u64 per
 * IPC flag; DISPATCH_TOKEN_UB_SIZE, the tBuf every step carves from, and
 * TBUF_TEMP_OFFSET, where a token sits in it. */
#define DNL_STATE_OFFSET 512u
#define DNL_TOKEN_COUNT_SIZE 32u
#define DNL_RDMA_ALIGN 4096u
#define DNL_FLAG_VALUE (-1)
#define DNL_INFO_NUM 4u
#define DNL_IPC_FLAG_BYTES 32u
#define DNL_TBUF_BYTES (176u * 1024u)
#define DNL_TBUF_TEMP_OFFSET (8u * 1024u)
/* selfStatusTensor(aivId * UB_32B_ALIGN): an int32 index, 128 B apart. */
#define DNL_SELF_STATE_STRIDE 128u
/* The IPC barrier's two steps (IPC_FLAG_STEP_1, _2). */
#define DNL_IPC_STEP_1 1
#define DNL_IPC_STEP_2 2

/* ------------------------------------------------------------ kernel args */

typedef struct dispatch_normal_args {
    int num_ranks, local_experts, experts, tokens, topk, hidden;
    uint32_t row_bytes;         /* h * 2: the expandX row */
    uint32_t idx_offset;        /* hScaleSizeAlign: the triple's byte offset in a row */
    uint32_t share_bytes;       /* hScaleIdxSize: bytes a row moves into and out of a window */
    uint32_t share_ub_bytes;    /* hOutUBAlignSize: one xQueue buffer */
    uint32_t window_stride;     /* hOutGMAlignSize */
    int inject_no_status_wait;  /* fault: copy out without waiting for the statuses */

    /* per rank (indexed by the rank that owns the buffer) */
    gm_t x[DNORMAL_MAX_RANKS];              /* [T, h] bf16: the rank's tokens */
    gm_t expert_ids[DNORMAL_MAX_RANKS];     /* [T * K] int32 */
    gm_t send_offset[DNORMAL_MAX_RANKS];    /* [E] int32: first window row per expert */
    gm_t send_token_idx[DNORMAL_MAX_RANKS]; /* [T * K] int32: index within the expert's rows */
    gm_t recv_offset[DNORMAL_MAX_RANKS];    /* [L * R] int32: the source's sendOffset */
    gm_t recv_count[DNORMAL_MAX_RANKS];     /* [L * R] int32: inclusive prefix of rows */
    gm_t expand_x[DNORMAL_MAX_RANKS];       /* [rows, h] bf16, expert-major, rank-minor */
    gm_t expand_idx[DNORMAL_MAX_RANKS];     /* [rows, 3] int32: (s, t, k) */
    gm_t data_state[DNORMAL_MAX_RANKS];     /* [cores] x 512 B: the toggled dataState words */
    /* symmetric: rank r's share window (row i at i * window_stride) and its
     * status area (slot le * R + s at (le * R + s) * 32 B) */
    gm_t window_base;
    gm_t state_base;

    /* --nodes 2, DispatchNormalA2: serverNum and SERVER_RANK_SIZE (A2 fixes
     * it at 8; npurr takes --npus-per-node), the token struct (tokenStructLen
     * and where the ids and weights sit in it), SERVER_SIZE_ON_WIN, and
     * CleanUp's bytes of zeros, max(E * 32, N * STATE_OFFSET) */
    int nodes, npus;
    uint32_t struct_bytes, exp_offset, weight_offset, clean_bytes;
    uint64_t block_bytes;
    gm_t topk_weights[DNORMAL_MAX_RANKS];      /* [T * K] float: expertScales */
    gm_t token_server_idx[DNORMAL_MAX_RANKS];  /* [T * N] int32: row in the server block, or -1 */
    gm_t token_server_cnt[DNORMAL_MAX_RANKS];  /* [N] int32: rows in each server block */
    gm_t ep_rank_token_cnt[DNORMAL_MAX_RANKS]; /* [E * R] int32: rows expert e gets from rank s */
    gm_t src_offset[DNORMAL_MAX_RANKS];        /* [L][R][T] int32: the row's index in its block */
    gm_t dst_offset[DNORMAL_MAX_RANKS];        /* [L][R][T] int32: its row in expandX */
    gm_t expand_scales[DNORMAL_MAX_RANKS];     /* [rows] float: the row's top-k weight */
    gm_t bw_tasks[DNORMAL_MAX_RANKS];          /* [2N] batch_write_task (the workspace) */
    /* symmetric: windowIn (N server blocks, then the status area: the
     * statuses, bufferChosen, the per-core self-state words), windowOut (N
     * server blocks, then the 32 B send status), the IPC area (P barrier
     * flags, then a magic per core) */
    gm_t win_in_base, win_out_base, ipc_base;
} dispatch_normal_args;

/* ------------------------------------------------------------ device code */

void dispatch_normal_kernel(const void *args);
/* The steps of Process(); the two xQueue buffers are carved once by the
 * entry and shared (A2 re-carves UB with tpipe_->Reset()). */
void dispatch_normal_input_to_share(const dispatch_normal_args *a, const local_t xq[2]);
void dispatch_normal_set_status(const dispatch_normal_args *a);
void dispatch_normal_wait_status(const dispatch_normal_args *a, local_t recv_offset_ub,
                                 local_t recv_count_ub);
void dispatch_normal_share_to_output(const dispatch_normal_args *a, const local_t xq[2],
                                     local_t recv_offset_ub, local_t recv_count_ub);

/* --nodes 2: DispatchNormalA2's Process(), its steps in dispatch_normal_a2l.c
 * (Init, Input2Win, the BatchWrite, WaitWindow) and
 * dispatch_normal_a2l_out.c (the IPC barrier, Ipc2Out, CleanUp). */
void dispatch_normal_a2l_kernel(const void *args);
/* What Init and the first steps leave for the rest: the tBuf, the magic. */
typedef struct dnl_core {
    local_t tbuf, bw_ub, status_ub, weight_ub;
    int64_t magic;
} dnl_core;
void dispatch_normal_a2l_ipc_barrier(const dispatch_normal_args *a, const dnl_core *c,
                                     int step);
void dispatch_normal_a2l_ipc2out(const dispatch_normal_args *a, const dnl_core *c);
void dispatch_normal_a2l_cleanup(const dispatch_normal_args *a, const dnl_core *c);
/* Where windowIn's status area starts, past the N server blocks. */
static inline uint64_t dnl_status_at(const dispatch_normal_args *a) {
    return (uint64_t)a->nodes * a->block_bytes;
}
/* bufferChosen, right after CleanUp's statuses (A2: at worldSize *
 * STATE_OFFSET, which is E * 32 at R 16, E 256). */
static inline uint64_t dnl_chosen_at(const dispatch_normal_args *a) {
    return dnl_status_at(a) + a->clean_bytes;
}
/* Core b's self-state word (SELF_STATE_OFFSET), after bufferChosen. */
static inline uint64_t dnl_self_state_at(const dispatch_normal_args *a, int b) {
    return dnl_chosen_at(a) + UB_ALIGN + (uint64_t)b * DNL_SELF_STATE_STRIDE;
}

/* ------------------------------------------------------------ host side */

/* The row geometry of Init(): h's bf16 row padded to UB blocks, the gap,
 * the triple, and the window stride. */
typedef struct dnormal_geometry {
    uint32_t row_bytes, idx_offset, share_bytes, share_ub_bytes, window_stride;
} dnormal_geometry;
dnormal_geometry dispatch_normal_geometry(int hidden);

extern const kernel_option dispatch_normal_options[];
/* Options -> shape (a combine_shape of scheme COMBINE_SCHEME_NORMAL, so
 * combine_plan_build gives the routing and the notify's tables); checks
 * one or two nodes, --cores against num_aiv and UB. err names the option
 * at fault. */
int dispatch_normal_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node,
                                    int num_aiv, combine_shape *sh, char *err, size_t errlen);
/* The shape on the run topo describes, its chip's AIV bounding --cores:
 * what setup builds, and layout and estimate without an engine. */
int dispatch_normal_shape_from_topology(const kernel_opts *o, const npurr_topology *topo,
                                      combine_shape *sh, char *err, size_t errlen);
/* That shape's plan (combine_plan_build): what setup runs on and layout
 * prints. 0, or -1 with err; the caller frees the plan. */
int dispatch_normal_plan_from_topology(const kernel_opts *o, const npurr_topology *topo,
                                     combine_plan *p, char *err, size_t errlen);
/* UB bytes one core uses for this shape. */
uint32_t dispatch_normal_ub_bytes(const combine_shape *sh);
/* The notify's sendOffset of every rank: [s][E], the exclusive prefix over
 * global experts of the rows s sends each. NULL when out of memory;
 * the caller frees it. */
int32_t *dispatch_normal_send_offsets(const combine_plan *p);
/* The notify's recvOffset and recvCount of owner r, [L * R] each in its
 * (local expert, source rank) order: the source's sendOffset of the
 * expert, and the inclusive prefix of the rows. */
void dispatch_normal_recv_tables(const combine_plan *p, const int32_t *send_offset, int r,
                                 int32_t *recv_offset, int32_t *recv_count);

/* --nodes 2, DispatchNormalA2 (dispatch_normal_a2l_plan.c). The token
 * struct: the row, then kAlign (topk rounded up to 8) int32 slots each of
 * ids, weights, token index and scale (tokenStructLen); a server block
 * (SERVER_SIZE_ON_WIN: 32 B, then up to T structs, 4 KB aligned); CleanUp's
 * bytes; and the three symmetric areas' sizes. */
typedef struct dnl_geometry {
    uint32_t row_bytes, exp_offset, weight_offset, struct_bytes, clean_bytes;
    uint64_t block_bytes, win_in_bytes, win_out_bytes, ipc_bytes;
} dnl_geometry;
dnl_geometry dispatch_normal_a2l_geometry(const combine_shape *sh);
/* UB bytes one core uses at --nodes 2. */
uint32_t dispatch_normal_a2l_ub_bytes(const combine_shape *sh);
/* What --nodes 2 adds to the shape's checks: hidden a multiple of 16, a
 * core per local rank and per server, the tBuf and UB. 0, or -1 with err
 * naming the option. */
int dispatch_normal_a2l_check_shape(const combine_shape *sh, char *err, size_t errlen);
/* The notify's tables of source s: tokenServerIdx [T][N] and
 * tokenServerCnt [N]. */
void dispatch_normal_a2l_source_tables(const combine_plan *p, int s, int32_t *token_server_idx,
                                       int32_t *token_server_cnt);
/* epRankTokenCnt [E][R] (the same on every rank). */
void dispatch_normal_a2l_ep_counts(const combine_plan *p, int32_t *ep_rank_token_cnt);
/* Owner r's srcOffsetRankTokenIdx and dstOffsetRankTokenIdx, [L][R][T]
 * each, filled where a row exists; token_server_idx is every source's,
 * [R][T][N]. */
void dispatch_normal_a2l_offsets(const combine_plan *p, const int32_t *token_server_idx, int r,
                                 int32_t *src_offset, int32_t *dst_offset);
typedef struct dispatch_normal_state {
    combine_plan plan;
    int32_t *send_offset;       /* [s][E] */
    dispatch_normal_args args;
    kit_guards guards;
} dispatch_normal_state;

/* --nodes 2's setup after the plan: buffers, windows, inputs, launch
 * (dispatch_normal_a2l_setup.c). */
int dispatch_normal_a2l_build(engine *e, dispatch_normal_state *st, char *err,
                              size_t errlen);
/* The args both setups take from the shape as it is (counts, hidden, the
 * injected fault); each adds its own geometry (dispatch_normal_setup.c). */
void dispatch_normal_args_shape(dispatch_normal_args *a, const combine_shape *sh);
/* The token rows on every rank, both setups' x. */
int dispatch_normal_fill_x(engine *e, const dispatch_normal_state *st, char *err,
                           size_t errlen);

kernel_check_fn dispatch_normal_check;
kernel_layout_fn dispatch_normal_layout;
kernel_estimate_fn dispatch_normal_estimate;
kernel_destroy_fn dispatch_normal_destroy;

#endif
