/*
 * ll.h - A2's low-latency MoE dispatch and combine as sgl-kernel-npu runs
 * them on the chip, the two kernels that share this header:
 *
 *   ll-single-dispatch-combine   one server (PR #176 at 68db2771:
 *       MoeDistributeDispatchV2Single / MoeDistributeCombineV2Single). The
 *       vector cores write every (token, top-k) row straight into the
 *       expert's window on the peer over HCCS (DataCopyPad to
 *       GetWindAddrByRankId): no AICPU, no BatchWrite. A 32 B status per
 *       (expert, source) after the rows; receivers copy each window slot
 *       into expand_x. The combine pushes each row back into the token
 *       owner's window with a status per (token, slot), then sums.
 *   ll-layered-dispatch-combine  two servers (PR #209 at 978c4322:
 *       MoeDistributeDispatchV2Layered / MoeDistributeCombineV2Layered,
 *       the "_custom" files). Tokens cross servers once each, to the other
 *       server's same-numbered rank, as one RDMA write per token struct
 *       that the vector core posts itself (AIVRDMAPostSend: it writes the
 *       work request and rings the NIC's doorbell, no AICPU); there cores
 *       copy each arrived struct into the IPC window of the local rank of
 *       every expert it goes to. The combine gathers a token's rows per
 *       server over HCCS, posts them back per token by RDMA and sums at
 *       the owner.
 *
 * One AIV launch per rank runs the dispatch, the expert FFN (emulated: a
 * row dequantized, times a per-expert scale, as fullmesh's) and the
 * combine; the phases `dispatch` and `combine` are the two operators
 * msprof times.
 *
 * Shared here (ll_plan.c, ll_payload.c, ll_check.c, ll_ffn.c,
 * ll_layout.c): the options and shape, the routing plan (fullmesh's CPU
 * plan, fullmesh_plan.c: expandIdx, the per-(expert, source) counts, which
 * token every received row holds), the token rows (bf16, or built so the
 * dispatch's per-row INT8 quantization is computed the same on the device
 * and on the CPU), the outputs both kernels leave (expand_x expert-major
 * and source-minor with one float scale per row, epRecvCount as the
 * inclusive prefix over (local expert, source), expertTokenNum as its
 * running total, the combined tokens) and their check. Each kernel's own
 * files: ll_single_*.c, ll_layered_*.c.
 *
 * The chip counts, per (token, k) slot, how many earlier slots went to the
 * same expert with a vector reduction over the slots before it
 * (CalTokenSendExpertCnt: Duplicate, Sub, Abs, Mins, ReduceSum). npurr's
 * vector unit has no compare or reduction, so the kernels issue those
 * passes for their time and read the count the reduction yields from the
 * plan's table (the same number, expandIdx), as the one value a scalar
 * read takes from UB on the chip too. The layered dispatch's scalar passes
 * that build the combine's tables (CreateInnerReduceInfo,
 * CreateOuterReduceInfo) run on the device as the chip's do, one UB word
 * at a time (ll_layered_info.c).
 */
#ifndef NPURR_LL_H
#define NPURR_LL_H

#include <stdint.h>

#include "npurr/device.h"
#include "kernels.h"
#include "kit.h"
#include "routing.h"
#include "fullmesh.h"

#define LL_MAX_RANKS 16
#define LL_MAX_HIDDEN 8192
/* WIN_ADDR_ALIGN: window rows 512 B apart. */
#define LL_WIN_ALIGN 512u
/* STATE_OFFSET: one 32 B status per (expert, source) or (token, slot). */
#define LL_STATE_BYTES 32u
/* The status a sender writes: float 1.0 in its first word. */
#define LL_STATUS_BITS 0x3F800000
/* EXPAND_IDX_INFO: (source rank, token, k) behind a dispatched row. */
#define LL_IDX_INFO 3
/* The per-core receive-count workspace: one 32 B block per core. */
#define LL_WS_BLOCK 32u
#define LL_GUARD_BYTE 0x5Au

enum { LL_BF16 = 0, LL_INT8 = 1 };
enum { LL_KIND_SINGLE = 0, LL_KIND_LAYERED = 1 };

/* ------------------------------------------------------------ layered geometry */
/* MoeDistributeDispatchV2Layered: SERVER_RANK_SIZE is the node's NPUs here
 * (--npus-per-node); the token struct | flag 32 B | row | ids alignK * 4 |
 * scale 32 B |; flags and magic values as the chip's. */
#define LLL_FLAG_BYTES 64u              /* FLAG_SIZE: a token's server mask, an end flag */
#define LLL_STATE_OFFSET 512u           /* STATE_OFFSET: per-server end status */
#define LLL_SHOULD_SEND 0x0f0f0f0fLL    /* SHOULD_SEND_FLAG_VALUE */
#define LLL_END_OF_WRITE 0xffffffffLL   /* END_OF_WRITE_FLAG_VALUE */
#define LLL_IPC_FLAG_BYTES 32u          /* one IPC flag (B64_PER_BLOCK u64) */
#define LLL_TBUF_BYTES (190u * 1024u)   /* TBUF_SIZE */
#define LLL_TBUF_TEMP (8u * 1024u)      /* TBUF_TEMP_OFFSET */
/* CombineV2Layered: IPC_REDUCE_USED_CORE_NUM cores gather rows, the flags
 * they raise per token (GM2IPC_SYNC_FLAG, RDMA_TOKEN_ARRIVED_FLAG,
 * RDMA_TOKEN_END_FLAG; magic 0: one call a run). */
#define LLL_REDUCE_CORES 32
#define LLL_GM2IPC_FLAG 12345
#define LLL_ARRIVED_FLAG 123
#define LLL_END_FLAG 321
#define LLL_SUM_CORES 8                 /* SumToServer's reduceCore */
/* AIVRDMAPostSend: the work request (hns_roce_rc_sq_wqe + one data
 * segment) the vector core writes into the send queue in GM, word by
 * word, before it rings the doorbell. */
#define LLL_WQE_BYTES 64u
#define LLL_WQE_WORDS 10

/* ------------------------------------------------------------ kernel args */

typedef struct ll_args {
    int kind;                 /* LL_KIND_* */
    int num_ranks, nodes, npus, local_experts, experts, tokens, topk, hidden;
    int dtype;                /* LL_BF16 / LL_INT8: what the dispatch sends */
    uint32_t row_bytes;       /* H * 2: x, expert_out, out, the combine's rows */
    uint32_t xrow_bytes;      /* an expand_x row: H (int8) or H * 2 */
    uint32_t scale_at;        /* hOutSizeAlign: where a dispatched row's scale sits */
    uint32_t info_at;         /* scale_at + 32: the (rank, token, k) triple */
    uint32_t move_bytes;      /* hScaleIdxSize: what a dispatched row moves */
    uint32_t win_row;         /* hAlignWinSize: a dispatched row's window stride */
    uint32_t cwin_row;        /* a combined row's window stride (512 B aligned) */
    int inject;
    /* layered: the token struct */
    uint32_t struct_bytes, tok_at, exp_at, sc_at;
    uint64_t server_bytes;    /* one server's block of structs in windowIn */
    uint64_t ipc_seg;         /* RANK_SIZE_ON_IPC: one (expert, source) segment */
    /* symmetric areas, rank r's at gm_on_rank(base, r) */
    gm_t dwin;                /* single: the dispatch window, slot (source, local expert) */
    gm_t dstate;              /* single: dispatch statuses [L][W] */
    gm_t cwin;                /* combine window: [T * K] rows */
    gm_t cstate;              /* combine statuses [T * K] */
    gm_t win_out, win_in;     /* layered: structs out, server blocks in (+ end statuses) */
    gm_t ipc;                 /* layered: IPC flags, counts, data (the dispatch's) */
    gm_t cipc;                /* layered combine: IPC flags, arrival flags, W slices of rows */
    gm_t sq;                  /* layered: the send queue the vector cores post into */
    /* per rank */
    gm_t x[LL_MAX_RANKS];               /* [T, H] bf16 */
    gm_t expert_ids[LL_MAX_RANKS];      /* [T * K] int32 */
    gm_t topk_weights[LL_MAX_RANKS];    /* [T * K] float (expertScales) */
    gm_t slot_count[LL_MAX_RANKS];      /* [T * K] int32: the reduction's count per slot (plan) */
    gm_t expert_count[LL_MAX_RANKS];    /* [E] int32: this source's slots per expert (plan) */
    gm_t ws[LL_MAX_RANKS];              /* [cores] x 32 B: receive counts per core; layered: masks */
    gm_t expand_x[LL_MAX_RANKS];        /* out [rows, xrow_bytes] */
    gm_t dynamic_scales[LL_MAX_RANKS];  /* out [rows] float (int8) */
    gm_t expand_idx[LL_MAX_RANKS];      /* out [rows, 3] int32 (single) */
    gm_t ep_recv_count[LL_MAX_RANKS];   /* out [L * W] int32 */
    gm_t expert_token_num[LL_MAX_RANKS];/* out [L] int64 */
    gm_t expert_out[LL_MAX_RANKS];      /* [rows, H] bf16: the FFN's output */
    gm_t out[LL_MAX_RANKS];             /* out [T, H] bf16 */
    /* layered: the combine's tables, built by the dispatch on each rank
     * (CreateInnerReduceInfo, CreateOuterReduceInfo) */
    gm_t c_inner_cnt[LL_MAX_RANKS];     /* [N][T + 1] int32: rows per token to gather, running */
    gm_t c_inner_off[LL_MAX_RANKS];     /* [N][T * K] int32: local rank * T * K + slice row */
    gm_t c_outer_cnt[LL_MAX_RANKS];     /* [T] int32: servers per token, running */
    gm_t c_outer_off[LL_MAX_RANKS];     /* [T * N] int32: server * T * K + block row */
    gm_t c_outer_per[LL_MAX_RANKS];     /* [T * N] int32: rows of the token in that block */
    /* layered combine, symmetric */
    gm_t cwin_out, cwin_in;   /* N blocks of T * K rows; windowIn then N end statuses */
} ll_args;

/* ------------------------------------------------------------ device code */

void ll_single_kernel(const void *args);
void ll_layered_kernel(const void *args);
/* The emulated expert FFN between the two operators (ll_ffn.c): every row
 * of expand_x dequantized (or read as bf16) times its expert's scale into
 * expert_out, this core's share; ends in a SyncAll. */
void ll_expert_ffn(const ll_args *a, local_t tbuf);
/* A2's SplitCoreCal / SplitToCore: n items over cores, [*begin, *end). */
static inline void ll_split(uint32_t n, uint32_t core, uint32_t cores, uint32_t *begin,
                            uint32_t *end) {
    uint32_t per = n / cores, rem = n % cores;
    *begin = per * core + (core < rem ? core : rem);
    *end = *begin + per + (core < rem ? 1u : 0u);
}
/* A phase's carving of the core's one UB block (the chip's TBuf, re-carved
 * per step as tpipe_->Reset() does): bump allocation, 32 B aligned. */
typedef struct ll_ub {
    local_t at;
    uint32_t used;
} ll_ub;
static inline local_t ll_take(ll_ub *u, uint64_t bytes) {
    local_t l = local_add(u->at, u->used);
    u->used += (uint32_t)kit_align_up(bytes ? bytes : 1, UB_ALIGN);
    return l;
}
/* CalTokenSendExpertCnt's vector passes over n int32 slots (Duplicate,
 * Sub, Abs, Mins, ReduceSum) into work (n * 4 bytes at least), for their
 * time; the count itself is the plan's (ll.h). Ends with V -> S. */
void ll_count_passes(local_t work, uint32_t n);

/* ------------------------------------------------------------ layered device */

/* One core of the layered kernels: its rank, server, local rank and UB. */
typedef struct lll {
    const ll_args *a;
    int me, b, B, N, P, sv, lr;
    local_t tbuf;
} lll;

/* Where things sit (ll_layered_setup.c sizes them the same way):
 * windowOut: T structs, then the 64 B send status; windowIn: N server
 * blocks, then N end statuses 512 B apart; IPC: P flags, L * W count
 * blocks, then L * W segments (local expert, source); the send queue: a
 * 128 B block per core (work request, head, tail, keys, doorbell). */
static inline uint64_t lll_send_status_at(const ll_args *a) {
    return kit_align_up((uint64_t)a->tokens * a->struct_bytes, LLL_FLAG_BYTES);
}
static inline gm_t lll_block(const ll_args *a, int rank, int server) {
    return gm_add(gm_on_rank(a->win_in, rank), (int64_t)((uint64_t)server * a->server_bytes));
}
static inline gm_t lll_end_status(const ll_args *a, int rank, int server) {
    return gm_add(gm_on_rank(a->win_in, rank),
                  (int64_t)((uint64_t)a->nodes * a->server_bytes + (uint64_t)server * LLL_STATE_OFFSET));
}
static inline uint64_t lll_ipc_cnt_at(const ll_args *a) { return (uint64_t)a->npus * LLL_IPC_FLAG_BYTES; }
static inline uint64_t lll_ipc_data_at(const ll_args *a) {
    return kit_align_up(lll_ipc_cnt_at(a) + (uint64_t)a->local_experts * (uint64_t)a->num_ranks * UB_ALIGN,
                        LL_WIN_ALIGN);
}
static inline gm_t lll_ipc_seg(const ll_args *a, int rank, int le, int src) {
    uint64_t seg = (uint64_t)le * (uint64_t)a->num_ranks + (uint64_t)src;
    return gm_add(gm_on_rank(a->ipc, rank), (int64_t)(lll_ipc_data_at(a) + seg * a->ipc_seg));
}
#define LLL_SQ_BLOCK 128u
/* The combine: IPC flags, per server T + 64 + 1 arrival flags, then one
 * slice of T * K rows per destination rank. */
static inline uint64_t lll_cflags_at(const ll_args *a, int server) {
    return (uint64_t)a->npus * LLL_IPC_FLAG_BYTES +
           (uint64_t)server * ((uint64_t)a->tokens + 65) * LLL_IPC_FLAG_BYTES;
}
static inline uint64_t lll_cslice_bytes(const ll_args *a) {
    return (uint64_t)a->tokens * (uint64_t)a->topk * a->row_bytes;
}
static inline gm_t lll_cslice(const ll_args *a, int rank, int dst) {
    uint64_t at = kit_align_up(lll_cflags_at(a, a->nodes), LL_WIN_ALIGN);
    return gm_add(gm_on_rank(a->cipc, rank), (int64_t)(at + (uint64_t)dst * lll_cslice_bytes(a)));
}
static inline gm_t lll_cblock(gm_t base, const ll_args *a, int rank, int server) {
    return gm_add(gm_on_rank(base, rank), (int64_t)((uint64_t)server * lll_cslice_bytes(a)));
}
static inline gm_t lll_cend_status(const ll_args *a, int rank, int server) {
    return gm_add(gm_on_rank(a->cwin_in, rank),
                  (int64_t)((uint64_t)a->nodes * lll_cslice_bytes(a) + (uint64_t)server * LLL_STATE_OFFSET));
}

/* AIVRDMAPostSend: the core writes the work request for bytes from src
 * (this rank's GM) to dst (a rank of another node) into its send-queue
 * block word by word, reads the queue's head and tail, rings the doorbell
 * and stores the new head, each behind a full pipe barrier, and the NIC
 * moves the bytes (RdmaWrite). ub: 64 B of this core's UB. */
void lll_post(const lll *c, gm_t dst, gm_t src, uint64_t bytes, local_t ub);
/* The dispatch's two scalar passes that build the combine's tables
 * (ll_layered_info.c): CreateInnerReduceInfo of server j's stream (its
 * arrived tokens' top-k ids are in ids, n of them, alignK ints each) and
 * CreateOuterReduceInfo of this rank's tokens. u: the core's free UB. */
void lll_inner_info(const lll *c, int j, local_t ids, int n, ll_ub u);
void lll_outer_info(const lll *c, ll_ub u);
/* The layered combine (ll_layered_combine.c), after the FFN. */
void lll_combine(const lll *c);

/* ------------------------------------------------------------ host side */

typedef struct ll_shape {
    int kind;
    int nodes, npus_per_node, num_ranks;
    KIT_MOE_IN_SHAPE;
    int cores;
    int dtype;
    uint32_t row_bytes, xrow_bytes, scale_at, info_at, move_bytes, win_row, cwin_row;
    uint32_t struct_bytes, tok_at, exp_at, sc_at;
    uint64_t server_bytes, ipc_seg;
    int inject;
    uint64_t data_seed;
    routing_spec routing;
} ll_shape;

extern const kernel_option ll_single_options[];
extern const kernel_option ll_layered_options[];
/* The options of kind (LL_KIND_*) on the run topo describes: checks the
 * topology (single: one node; layered: two, at most 8 NPUs each), the MoE
 * shape, --cores against the chip's AIV, --dtype, UB. err names the option
 * at fault. */
int ll_shape_from_topology(const kernel_opts *o, int kind, const npurr_topology *topo,
                           ll_shape *sh, char *err, size_t errlen);
/* The plan (fullmesh's, one round) of sh: what setup fills, the check
 * compares and layout prints. 0, or -1 with err; fm_plan_free frees it. */
int ll_plan_build(const ll_shape *sh, fm_plan *p, char *err, size_t errlen);
/* UB one core of kind uses for sh. */
uint32_t ll_ub_bytes(const ll_shape *sh);

/* ll_payload.c: token t of rank s as x holds it (bf16; int8 kernels get
 * rows built so the per-row quantization is exact in its tag), and the
 * reference quantization of a row (one scale for the row: inv = 127 /
 * absmax, q = rint(x * inv), scale = 1 / inv, as VecQuantInt8 with one
 * block). */
void ll_fill_token(uint16_t *row, int hidden, int dtype, uint64_t seed, int rank, int token);
void ll_quantize_ref(const uint16_t *row, int hidden, int8_t *q, float *scale);
int ll_generate_x(engine *e, gm_t x, const ll_shape *sh, int rank, char *err, size_t errlen);

typedef struct ll_state {
    fm_plan plan;
    ll_args args;
    kit_guards guards;
} ll_state;

/* ll_setup.c: what both setups share: the state, shape and plan; the
 * per-rank buffers, inputs and plan tables; the launch. */
ll_state *ll_state_begin(engine *e, const kernel_opts *o, int kind, const char *owner,
                         void **state, char *err, size_t errlen);
int ll_alloc_rank_buffers(engine *e, ll_state *st, char *err, size_t errlen);
int ll_sym(engine *e, ll_state *st, uint64_t bytes, const char *what, gm_t *out, char *err,
           size_t errlen);
kernel_check_fn ll_check;
kernel_layout_fn ll_single_layout, ll_layered_layout;
kernel_estimate_fn ll_single_estimate, ll_layered_estimate;
kernel_destroy_fn ll_destroy;

#endif
