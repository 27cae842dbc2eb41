/*
 * fullmesh.h - MoeDistributeDispatch / MoeDistributeCombine over the RDMA
 * full mesh of seed 002 (AIV + AICPU BatchWrite), shared pieces.
 *
 * One AIV launch per rank runs --rounds rounds of: dispatch (an EP op), the
 * expert FFN (emulated: every received row times a per-expert scale), and
 * combine (an EP op). Each EP op reads bufferChosen at its start, works in
 * that block of WindowsIn/WindowsOut, and flips it at its end, so two
 * consecutive ops never share a block (seed 002 s2.4.3).
 *
 * Dispatch: every core counts expertIds into sendStatus [W x 32] (counts at
 * 0..L-1, FLAG at FLAG_OFFSET 24) and expertCumsum; a second pass computes
 * expandIdx and copies each token into the WindowsOut window of its
 * destination rank (expert-contiguous); each core then writes, for the
 * ranks it owns, the count row with FLAG1, FLAG2 after the tokens, and one
 * BatchWrite task per destination. Receivers poll FLAG1, sum the counts,
 * poll FLAG2, and after a SyncAll reorder the rows into expert-contiguous
 * expand_x and produce epRecvCount / expertTokenNum.
 * Combine: each expert rank copies, per token rank, its expert outputs
 * (sendCounts = epRecvCount) into that rank's WindowsOut window with a FLAG
 * after them and posts one task per rank; token ranks poll the FLAGs and
 * compute the weighted sum over top-k rows found at TokenAddr(i, j).
 *
 * --dtype int8 (the A2 low-latency MoeDistributeDispatchV2 with dynamic
 * quant): the dispatch quantizes each token row in UB to INT8 with one f32
 * scale per 128 elements and sends that (fm_args.win_row_bytes, about half
 * the bf16 row); receivers split it into INT8 expand_x and dynamic_scales;
 * the FFN dequantizes; combine stays bf16.
 *
 * Files: fullmesh_plan.c (options -> shape, the CPU plan every check uses),
 * fullmesh_payload.c (token rows, expert scales), fullmesh_quant.c (the
 * INT8 rows on the CPU: exact payload, tag, reference quantization),
 * fullmesh_setup.c (buffers, launch, descriptor), fullmesh_check.c,
 * fullmesh_layout.c; device code: fullmesh_kernel.c (rounds, op
 * boundaries, FFN), fullmesh_dispatch.c, fullmesh_combine.c,
 * fullmesh_window.c (window addresses, flags, BatchWrite tasks, GM->GM
 * copies through UB), fullmesh_int8.c (the INT8 dispatch's device steps).
 */
#ifndef NPURR_FULLMESH_H
#define NPURR_FULLMESH_H

#include <stdint.h>

#include "npurr/device.h"
#include "kernels.h"
#include "kit.h"
#include "routing.h"

/* Seed 002 s2.2.2: sendStatus rows of STATUS_ENTRY_COUNT int32, counts in
 * the first FLAG_OFFSET, the flag at FLAG_OFFSET; localExpertNum <= 24. */
#define FM_STATUS_ENTRY_COUNT 32
#define FM_FLAG_OFFSET 24
#define FM_STATUS_ROW_BYTES (FM_STATUS_ENTRY_COUNT * 4u)
/* FLAG2 and the combine FLAG: one int32 at a 32 B aligned offset after the
 * tokens (decision: aligned so the flag is one 32 B UB block to write). */
#define FM_FLAG_BYTES 32u
/* Window control block (bufferChosen, EP op count) at the end of WindowsIn
 * block 0, where the seed puts bufferChosen. */
#define FM_CTRL_BYTES 32u
#define FM_CTRL_BUFFER_CHOSEN 0u
#define FM_CTRL_EP_OPS 4u
#define FM_MAX_RANKS 64
#define FM_MAX_HIDDEN 8192
/* Tokens' routing metadata (ids, expandIdx, weights) is read in chunks. */
#define FM_META_BYTES 4096u
/* GM->GM copies (window <-> expand_x / expert_out) go through UB in chunks
 * of at least this many bytes. */
#define FM_COPY_CHUNK 8192u
#define FM_GUARD_BYTE 0xC3u
/* Token tag: the first elements of a token row are small integers (exact in
 * bf16): token bytes 0..1, source rank, round. */
#define FM_TAG_ELEMS 4

enum { FM_INJECT_NONE = 0, FM_INJECT_NO_DOUBLE_BUFFER = 1 };

/* --dtype: what the dispatch sends. */
enum { FM_BF16 = 0, FM_INT8 = 1 };
/* INT8 rows carry one f32 scale per block of this many elements. */
#define FM_QUANT_BLOCK 128
/* The INT8 tag: 7-bit digits (token 3, rank 1, round 1), so every digit is
 * an int8 value >= 0 that survives quantization; the next element is 127,
 * which makes block 0's scale exactly 1. */
#define FM_I8_TAG_ELEMS 5


/* ------------------------------------------------------------ kernel args */

typedef struct fm_args {
    int num_ranks;            /* W = worldSize */
    int local_experts;        /* L = localMoeExpertNum */
    int experts;              /* E = W * L */
    int tokens;               /* BS per rank */
    int topk;                 /* K */
    int hidden;               /* H, bf16 elements */
    int rounds;
    int dtype;                /* FM_BF16 / FM_INT8: what the dispatch sends */
    uint32_t row_bytes;       /* H * 2: the seed's "H" in TokenAddr (combine, x, out) */
    uint32_t win_row_bytes;   /* a dispatched row in the windows: row_bytes, or
                               * INT8: H int8 + H / 128 f32 scales, 32 B aligned */
    uint64_t rank_size_on_win;/* bytes of one rank's window */
    uint64_t block_stride;    /* one WindowsIn/Out block: W windows + ctrl */
    int inject;
    /* symmetric (engine_sym_alloc): [block 0 | ctrl | block 1] */
    gm_t windows_in;
    gm_t windows_out;
    /* per rank: tables indexed [rank] */
    gm_t *tasks;              /* [2][W] batch_write_task */
    gm_t *recv_status;        /* [W][32] int32: count rows received this op */
    gm_t *expert_out;         /* [max recv rows, H] bf16: the FFN output */
    /* per round and rank: tables indexed [round * W + rank] */
    gm_t *x;                  /* [BS, H] bf16 */
    gm_t *expert_ids;         /* [BS, K] int32 */
    gm_t *topk_weights;       /* [BS, K] float */
    gm_t *expand_idx;         /* out [BS, K] int32 */
    gm_t *expand_x;           /* out [recv rows, H] bf16 (INT8: int8), expert-contiguous */
    gm_t *dynamic_scales;     /* out, INT8 only: [recv rows, H / 128] f32 */
    gm_t *ep_recv_count;      /* out [L, W] int32 */
    gm_t *expert_token_num;   /* out [L] int64 */
    gm_t *out;                /* out [BS, H] bf16: the combined tokens */
} fm_args;

/* ------------------------------------------------------------ device code */

void fm_kernel(const void *args);

/* UB of one core, carved once (fullmesh_kernel.c) and shared by the phases. */
typedef struct fm_core {
    const fm_args *a;
    int me, core, cores;
    int round;
    int first_rank, end_rank;        /* ranks this core sends to / receives from */
    /* the EP op in progress */
    int buffer_chosen;
    int32_t flag;                    /* value of FLAG1/FLAG2/FLAG this op */
    gm_t win_in, win_out;            /* this op's block, on this rank */
    gm_t tasks;                      /* this op's task list, on this rank */
    /* UB */
    local_t ids_ub, idx_ub, w_ub;    /* FM_META_BYTES each */
    local_t status_ub;               /* sendStatus [W][32] int32 */
    local_t cnt_ub;                  /* running count per expert [E] */
    local_t cumsum_ub;               /* expertCumsum [E + 1] */
    local_t recv_ub;                 /* received count rows [W][32] */
    local_t cum_ub;                  /* column prefix of recv_ub [W][32] */
    local_t epc_ub;                  /* epRecvCount [L][W] int32 */
    local_t etn_ub;                  /* expertTokenNum [L] int64 */
    local_t task_ub;                 /* [W] batch_write_task */
    local_t flag_ub;                 /* 32 B: the flag value, then zeros */
    local_t row_ub[2];               /* token rows / copy chunks */
    uint32_t row_ub_bytes;
    local_t acc_ub, out_ub;          /* f32 accumulator, bf16 result */
    local_t q_ub[2];                 /* INT8: quantized rows (win_row_bytes) */
} fm_core;

void fm_dispatch(fm_core *fc);
void fm_combine(fm_core *fc);

/* fullmesh_window.c */
/* Reads bufferChosen and the EP op count, sets this op's block and flag. */
void fm_op_begin(fm_core *fc);
/* Every core of the rank is done with the op: flip bufferChosen. */
void fm_op_end(fm_core *fc);
gm_t fm_ctrl(const fm_args *a, int rank);
/* Window of `peer` inside this op's block of WindowsIn / WindowsOut. */
gm_t fm_win_in(const fm_core *fc, int peer);
gm_t fm_win_out(const fm_core *fc, int peer);
/* Writes the flag word at win + flag_off, the task sending
 * [win, win + flag_off + 32) to dst's WindowsIn window of this rank, for
 * every dst this core owns, then posts them in one BatchWrite. flag_off[]
 * is indexed by dst - first_rank. */
void fm_post_windows(fm_core *fc, const uint64_t *flag_off);
/* GM -> GM through the two row buffers (any length, any alignment). */
void fm_copy_gm(fm_core *fc, gm_t dst, gm_t src, uint64_t bytes, int *buf);
/* Sets the row buffers' ping-pong flags up / waits them out. */
void fm_copy_begin(fm_core *fc);
void fm_copy_end(fm_core *fc);

/* fullmesh_int8.c */
/* The token row in row_ub[b] (bf16, just loaded by MTE2) quantized into
 * q_ub[b]; returns when the vector unit is done and MTE3 may send it. */
void fm_quantize_row(fm_core *fc, int b);
/* Bytes of q_ub[b] a window row takes (the scales end it). */
uint32_t fm_quant_bytes(const fm_args *a);
/* Received window rows [first, first + n) of src's window from in_window
 * on, split into expand_x and dynamic_scales rows from `first` on. */
void fm_split_received(fm_core *fc, gm_t window_rows, int64_t first, int64_t n, int *buf);
/* The FFN of one expand_x row: its int8 values and scales into row_ub[b],
 * dequantized times `scale` into acc_ub. */
void fm_dequantize_row(fm_core *fc, int64_t row, float scale, int b);

/* ------------------------------------------------------------ host side */

typedef struct fm_shape {
    int nodes, npus_per_node, num_ranks;
    KIT_MOE_IN_SHAPE;         /* tokens, hidden, topk, experts, local_experts */
    int rounds, cores;
    int dtype;
    uint32_t row_bytes, win_row_bytes;
    uint64_t rank_size_on_win, block_stride;
    int inject;
    uint64_t data_seed;
    routing_spec routing;
} fm_shape;

/* What the dispatch and combine of every round must produce, on the CPU. */
typedef struct fm_round_plan {
    int32_t *expert_ids;      /* [s][T][K] */
    float *topk_weights;      /* [s][T][K] */
    int32_t *expand_idx;      /* [s][T][K] */
    int32_t *send_count;      /* [s][p][L]: sendStatus counts */
    int32_t *ep_recv_count;   /* [p][L][W] */
    int64_t *expert_token_num;/* [p][L] */
    int64_t *recv_rows;       /* [p] */
    int64_t *owner_base;      /* [p]: start of p in owner */
    int32_t *owner;           /* [row] = (s * T + t) * K + k of the token the row carries */
} fm_round_plan;

typedef struct fm_plan {
    fm_shape sh;
    fm_round_plan *round;     /* [rounds] */
    int64_t max_recv_rows;    /* over rounds and ranks */
} fm_plan;

extern const kernel_option fm_options[];

/* Reads and validates the options; err names the option at fault. */
int fm_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node, int num_aiv,
                       fm_shape *sh, char *err, size_t errlen);
/* The same on the run topo describes (its topology, its chip's AIV): what
 * setup builds, and layout and estimate without an engine. */
int fm_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, fm_shape *sh, char *err,
                         size_t errlen);
int fm_plan_build(const fm_shape *sh, fm_plan *plan, char *err, size_t errlen);
void fm_plan_free(fm_plan *plan);
/* UB bytes one core uses for this shape. */
uint32_t fm_ub_bytes(const fm_shape *sh);

/* fullmesh_payload.c */
/* Token row of (seed, round, rank, token); FM_INT8 rows are exact in INT8
 * (fullmesh_quant.c). */
void fm_fill_token(uint16_t *row, int hidden, int dtype, uint64_t seed, int round, int rank,
                   int token);
/* x of rank `rank` in `round` as a generated input (references in REF mode). */
int fm_generate_x(engine *e, gm_t x, int tokens, uint64_t row_bytes, int hidden, int dtype,
                  uint64_t seed, int round, int rank, char *err, size_t errlen);
int fm_decode_tag(const uint16_t *row, int hidden, int *round, int *rank, int *token);

/* fullmesh_quant.c */
/* A bf16 token row whose every 128-block is m * 2^e, |m| <= 127 integers
 * with one |m| = 127: the dynamic quantization is exact (scale 2^e). */
void fm_fill_token_int8(uint16_t *row, int hidden, const int *tag, uint64_t x);
/* The reference quantization of a bf16 row, as the A2 kernel computes it
 * (per block inv = 127 / absmax, q = rint(x * inv), scale = 1 / inv), on
 * the CPU and without the device's code. */
void fm_quantize_ref(const uint16_t *row, int hidden, int8_t *q, float *scales);
/* The tag of a received INT8 row (1: well formed). */
int fm_decode_tag_int8(const int8_t *q, int hidden, int *round, int *rank, int *token);
/* The emulated expert FFN: row times this scale (exact in f32). */
float fm_expert_scale(int expert);

typedef struct fm_state {
    fm_plan plan;
    fm_args args;
    gm_t *tables;             /* storage behind the args' tables */
    kit_guards guards;
} fm_state;

kernel_check_fn fm_check;
kernel_estimate_fn fm_estimate;
kernel_layout_fn fm_layout;
kernel_destroy_fn fm_destroy;

#endif
