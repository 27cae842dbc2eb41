/*
 * combine.h - the intranode MoE combine kernels, shared pieces.
 *
 * Two kernels of seed 000 share everything but the sender:
 *   combine-sender          scheme 2: gather-pack expert-major x through UB
 *                           straight into the destination's HCCS ring
 *   combine-sender-inplace  scheme 1: reorder x to rank-major in GM first,
 *                           then copy contiguous regions into the ring
 * and a receiver (one core per source rank on every destination) that
 * consumes its ring into the receive layout and then computes the combine
 * of seed 002 s3.4: each token's weighted sum over its top-k expert outputs.
 * A third, combine-normal, is A2's CamMoeCombineNormal (sgl-kernel-npu
 * csrc/deepep/ops2/op_kernel/cam_moe_combine_normal.h at 3a90dfa1): every
 * AIV core pushes its share of x's rows into the token owner's window with
 * a 32 B status per row, then sums its share of the rank's own tokens. It
 * shares the plan, the payload, the inputs and the weighted-sum check.
 *
 * Files: combine_plan.c (options -> shape, routing -> dispatch metadata, on
 * the host), combine_payload.c (row contents with token tags), combine_setup.c
 * (buffers, rings, launches, descriptors), combine_check.c (CPU reference and
 * checks), combine_layout.c (`npurr layout`), combine_ring.c (the sender's
 * ring writer), combine_sender.c, combine_sender_inplace.c,
 * combine_receiver.c (device code, device.h only); combine-normal's own:
 * combine_normal_plan.c, combine_normal_setup.c, combine_normal_check.c,
 * combine_normal_layout.c, combine_normal_send.c, combine_normal_sum.c.
 *
 * Vocabulary is the seed's: offset_table, length_table, staging_ub,
 * read_temp_ub, staging_offset, local_tail_cache, remote_head_cache,
 * expert_window_offset, expand_idx.
 */
#ifndef NPURR_COMBINE_H
#define NPURR_COMBINE_H

#include <stdint.h>

#include "npurr/device.h"
#include "kernels.h"
#include "kit.h"
#include "routing.h"

/* Combine-sender runs inside one node over HCCS: at most 8 ranks. */
#define COMBINE_MAX_RANKS 8
/* Bytes after every buffer that must stay as written (out-of-bounds check). */
#define COMBINE_GUARD_BYTES KIT_GUARD_BYTES
#define COMBINE_GUARD_BYTE 0xA5u
/* Seed 000 s4.1: per-rank control blocks 128 B apart (no false sharing).
 * Decision: the tail (written by the sender) is at byte 0 and the head
 * (written by the receiver) at byte 64 of the block, so the two writers do
 * not share a 64 B half either. */
#define COMBINE_CTRL_STRIDE 128u
#define COMBINE_CTRL_TAIL 0u
#define COMBINE_CTRL_HEAD 64u
/* Seed 000 s5.3 gives read_temp 32 KB and staging 128 KB ("ping-pong
 * 64 KB x 2 optional"). Decision: read_temp is two 16 KB halves used
 * ping-pong (MTE2 over-reads the next piece while V crops this one) and
 * staging is two buffers of --staging-bytes (the next batch is gathered
 * while the last one is on the HCCS link), which at the 64 KB default is
 * the seed's 160 KB. */
#define COMBINE_READ_TEMP_BYTES (16u * 1024u)
#define COMBINE_STAGING_BUFFERS 2
/* Receiver: ring bytes are consumed through two 32 KB UB halves (ping-pong). */
#define COMBINE_RECV_CHUNK_BYTES (32u * 1024u)
/* Combine: hidden is processed in tiles of at most this many elements so the
 * f32 accumulator, two bf16 row buffers and the bf16 output fit in UB. */
#define COMBINE_HIDDEN_TILE 8192u
/* Combine: tokens whose routing metadata is prefetched into UB at once. */
#define COMBINE_META_BYTES 4096u
/* Token tag: the first elements of a row are small integers (exact in bf16):
 * token id bytes 0..2, top-k slot, the expert's rank. */
#define COMBINE_TAG_ELEMS 5

enum { COMBINE_SCHEME_GATHER = 2, COMBINE_SCHEME_INPLACE = 1, COMBINE_SCHEME_NORMAL = 3 };

/* combine-normal, as CamMoeCombineNormal lays out its window: a 32 B status
 * per (token, top-k) slot, and the slot's row at a 512 B aligned stride
 * (WIN_512_ALIGN, h512AlignRecvXLen_). Decision: the state and data areas
 * are sized to the shape instead of A2's fixed 3 MB state area. */
#define COMBINE_NORMAL_STATE_BYTES 32u
#define COMBINE_NORMAL_WIN_ALIGN 512u
/* The status a sender writes: eight float 1.0s (Duplicate 0x3F800000). */
#define COMBINE_NORMAL_STATUS_BITS 0x3F800000
/* tokenSrcInfo: (source rank, token, top-k slot) int32 per row of x. */
#define COMBINE_NORMAL_SRC_INFO_LEN 3
/* Rows of tokenSrcInfo one send core loads into UB at once. A2 loads its
 * whole share (683 rows at T1's 4096 x 8 over 48 cores); 2048 rows keeps
 * that one load there and bounds UB at small --cores. */
#define COMBINE_NORMAL_SRC_INFO_ROWS 2048u


/* ------------------------------------------------------------ kernel args */

/* One struct for every core of every rank (engine_launch passes it as is);
 * per-rank buffers are tables indexed by GetRank(). */
typedef struct combine_args {
    int num_ranks;
    int num_local_experts;
    int num_experts;
    int tokens;                  /* per rank */
    int topk;
    int hidden;                  /* bf16 elements per row */
    uint32_t row_bytes;          /* hidden * 2 */
    uint32_t staging_bytes;      /* one staging_ub buffer = largest flush */
    uint32_t table_ub_bytes;     /* one [L, R] int32 table in UB, 32 B aligned */
    uint64_t ring_bytes;         /* capacity of one ring */
    uint64_t ring_stride;        /* ring_bytes + guard */
    int inject_no_mte3_wait;     /* fault: commit the tail before MTE3 completes */
    /* combine-normal */
    uint32_t window_stride;      /* row_bytes rounded up to COMBINE_NORMAL_WIN_ALIGN */
    int inject_no_status_wait;   /* fault: sum without waiting for the status words */
    int inject_status_first;     /* fault: write the status before the row */

    /* per rank (indexed by the rank that owns the buffer) */
    gm_t x[COMBINE_MAX_RANKS];              /* [x_rows, hidden] bf16, expert-major */
    gm_t offset_table[COMBINE_MAX_RANKS];   /* [L, R] int32: first row in x */
    gm_t length_table[COMBINE_MAX_RANKS];   /* [L, R] int32: rows */
    gm_t x_sorted[COMBINE_MAX_RANKS];       /* scheme 1: rank-major copy of x */
    gm_t head_mirror[COMBINE_MAX_RANKS];    /* [R] x 32 B: prefetched remote heads */
    gm_t recv[COMBINE_MAX_RANKS];           /* [recv_rows, hidden] bf16 */
    gm_t recv_meta[COMBINE_MAX_RANKS];      /* [2R] int32: rows from each source, row offset */
    gm_t expert_ids[COMBINE_MAX_RANKS];     /* [T, K] int32 */
    gm_t expand_idx[COMBINE_MAX_RANKS];     /* [T, K] int32 */
    gm_t topk_weights[COMBINE_MAX_RANKS];   /* [T, K] float */
    gm_t expert_window_offset[COMBINE_MAX_RANKS]; /* [E] int32: first recv row per expert */
    gm_t out[COMBINE_MAX_RANKS];            /* [T, hidden] bf16 */
    /* combine-normal: x is A2's recv_x (expert-major, rank-minor, as the
     * dispatch left it) */
    gm_t token_src_info[COMBINE_MAX_RANKS]; /* [x_rows, 3] int32: (s, t, k) */
    gm_t ep_recv_count[COMBINE_MAX_RANKS];  /* [L * R] int32: inclusive prefix of length_table */

    /* symmetric: on each destination, the ring of source p at p * ring_stride
     * and its control block at p * COMBINE_CTRL_STRIDE */
    gm_t ring_base;
    gm_t ctrl_base;
    uint32_t ring_id[COMBINE_MAX_RANKS][COMBINE_MAX_RANKS]; /* [source][destination] */
    /* combine-normal, symmetric: on each owner, slot (t, k)'s status at
     * (t * K + k) * 32 B of state_base, its row at (t * K + k) *
     * window_stride of window_base */
    gm_t state_base;
    gm_t window_base;
} combine_args;

/* ------------------------------------------------------------ device code */

void combine_sender_kernel(const void *args);          /* scheme 2 */
void combine_sender_inplace_kernel(const void *args);  /* scheme 1 */
void combine_receiver_kernel(const void *args);
void combine_normal_kernel(const void *args);
/* combine-normal's two phases (CopyBufferToShareAndSetStatus,
 * ReadBufferFromRemote); both may use the two row buffers. */
void combine_normal_send(const combine_args *a, const local_t row_ub[2]);
void combine_normal_sum(const combine_args *a, const local_t row_ub[2]);

/* A2's SplitCoreCal: total items over cores, the first total % cores
 * cores one more; [*begin, *end) is core's share. */
static inline void combine_split_core(uint32_t total, uint32_t core, uint32_t cores,
                                      uint32_t *begin, uint32_t *end) {
    uint32_t per = total / cores, rem = total % cores;
    *begin = per * core + (core < rem ? core : rem);
    *end = *begin + per + (core < rem ? 1u : 0u);
}

/* What both senders hold in UB (seed 000 s5.3): the [L, R] offset and
 * length tables, loaded once, the two read_temp halves and the staging
 * buffers. */
typedef struct combine_sender_ub {
    local_t offset_ub, length_ub;
    local_t read_temp_ub[2];
    local_t staging_ub[COMBINE_STAGING_BUFFERS];
} combine_sender_ub;
/* Carves a sender's UB and loads this rank's tables into it. */
combine_sender_ub combine_sender_begin(const combine_args *a);

/* The sender side of one (source, destination) HCCS ring (seed 000, part 2).
 * local_tail_cache is absolute (never wrapped) and counts every byte put,
 * including the flush whose tail is not committed yet; remote_head_cache is
 * refreshed lazily. */
typedef struct ring_writer {
    uint32_t ring_id;
    gm_t ring_data;          /* ring bytes on the destination */
    gm_t remote_head;        /* the head word on the destination */
    gm_t head_mirror;        /* local GM word the head is prefetched into */
    uint64_t capacity;
    uint32_t max_flush;      /* largest flush: staging_bytes */
    int64_t local_tail_cache;
    int64_t remote_head_cache;
    int commit_pending;      /* the last flush's put is in flight, tail not stored */
    int prefetch_pending;
    int to_self;             /* destination is this rank: plain DataCopy */
    int skip_mte3_wait;      /* injected fault */
} ring_writer;

void ring_writer_init(ring_writer *w, const combine_args *a, int dst);
/* Issues an asynchronous read of the remote head (seed s4.3) so the value is
 * back by the time the gathered batch is flushed; only when the cached head
 * says the next flush might not fit. */
void ring_writer_prefetch_head(ring_writer *w);
/* One flush: commits the previous flush's tail (after MTE3 -> S), then flow
 * control, then the write of this one (split at the wrap). bytes is a
 * multiple of 32; staging_ub must be ready for MTE3 (caller's V_MTE3 /
 * MTE2_MTE3 sync). The tail of this flush is committed by the next flush or
 * by ring_writer_finish, so the caller can gather the next batch into its
 * other staging buffer while this put is in flight (seed s5.2). The caller
 * must not write staging_ub until MTE3 is done with it. */
void ring_writer_flush(ring_writer *w, local_t staging_ub, uint32_t bytes);
/* Commits the last flush's tail. */
void ring_writer_finish(ring_writer *w);
/* Publishes the writer's state for deadlock reports. */
void ring_writer_note(const ring_writer *w, int dst);

/* ------------------------------------------------------------ host side */

typedef struct combine_shape {
    int scheme;
    int nodes;                   /* 1, or 2 for dispatch-normal's layered path */
    int num_ranks;               /* nodes x npus per node */
    KIT_MOE_IN_SHAPE;            /* tokens, hidden, topk, experts, local_experts */
    uint32_t row_bytes;
    uint32_t staging_bytes;
    uint64_t ring_bytes;
    int sender_cores;            /* resolved block_dim of the sender launch */
    int inject_no_mte3_wait;
    int cores;                   /* combine-normal: AIV cores per rank */
    int inject_no_status_wait;   /* combine-normal faults */
    int inject_status_first;
    uint64_t data_seed;
    routing_spec routing;
} combine_shape;

/* The routing and the dispatch metadata it implies (what a dispatch kernel
 * and its notify phase would have left behind). R = ranks, L = local
 * experts, T = tokens, K = topk; p = expert's rank (sender), s = token's
 * rank (destination of the combine). */
typedef struct combine_plan {
    combine_shape sh;
    int32_t *expert_ids;          /* [s][T][K] */
    float *topk_weights;          /* [s][T][K] */
    int32_t *expand_idx;          /* [s][T][K]: index of (t,k) within its (expert, s) segment */
    int32_t *length_table;        /* [p][L][R] */
    int32_t *offset_table;        /* [p][L][R], rows, expert-major rank-minor */
    int64_t *x_rows;              /* [p] */
    int32_t *recv_rows;           /* [s][p] */
    int32_t *recv_row_offset;     /* [s][p] */
    int64_t *recv_total;          /* [s] rows */
    int32_t *expert_window_offset;/* [s][E] */
    int32_t *recv_owner;          /* [s][row] = t * K + k of the token the row belongs to */
    int64_t *recv_owner_base;     /* [s] start of rank s in recv_owner */
    /* combine-normal only (NULL otherwise): what A2's dispatch hands its
     * combine as tokenSrcInfo, (s, t, k) for every row of x on p */
    int32_t *x_src_info;          /* [p][x row][3] */
    int64_t *x_row_base;          /* [p] first row of rank p in x_src_info */
} combine_plan;

extern const kernel_option combine_options[];
extern const kernel_option combine_normal_options[];
/* The option entries both normal kernels (combine-normal, dispatch-normal)
 * take with the same defaults: the MoE shape and routing, and --cores as
 * A2's tiling sizes it. */
#define COMBINE_NORMAL_OPTS_SHAPE                                                                  \
    KIT_OPT_TOKENS("128"), KIT_OPT_HIDDEN("7168", " (A2's tiling takes 1024..7168)"),            \
        KIT_OPT_TOPK("8"), KIT_OPT_EXPERTS("256", ""), KIT_OPT_ROUTING("uniform")
#define COMBINE_NORMAL_OPT_CORES                                                                   \
    {"cores", "0",                                                                                 \
     "AIV cores per rank; 0 = all of them (48 on 910B2, 40 on 910B4), as A2's tiling takes"}

/* Reads and validates the options against the topology (nodes must be 1).
 * err names the option at fault. */
int combine_shape_from_opts(const kernel_opts *o, int scheme, int nodes, int npus_per_node,
                            int num_aiv, combine_shape *sh, char *err, size_t errlen);
int combine_normal_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node,
                                   int num_aiv, combine_shape *sh, char *err, size_t errlen);
/* The shape of scheme (COMBINE_SCHEME_NORMAL: combine-normal's) on the run
 * topo describes, its chip's AIV bounding the cores: what setup builds, and
 * layout and estimate without an engine. */
int combine_shape_from_topology(const kernel_opts *o, int scheme, const npurr_topology *topo,
                              combine_shape *sh, char *err, size_t errlen);
/* What every combine reads first: the topology (kernel names the kernel in
 * the message; one node unless max_nodes > 1, at most COMBINE_MAX_RANKS
 * NPUs per node), the MoE shape over all its ranks and the row size. */
int combine_read_shape(const kernel_opts *o, int scheme, const char *kernel, int nodes,
                       int npus_per_node, int max_nodes, combine_shape *sh, char *err,
                       size_t errlen);
/* --routing, --data-seed and --inject against faults ({"none", ..., NULL});
 * *fault is the index of the named fault. */
int combine_read_inputs(const kernel_opts *o, const char *const *faults, combine_shape *sh,
                        int *fault, char *err, size_t errlen);
/* What both normal kernels read before their UB check: the shape on up to
 * max_nodes nodes (kernel names it in messages), --routing, --data-seed,
 * --inject against kernel's faults, whose [1] must be "no-status-wait" (the
 * fault both have: it sets inject_no_status_wait), *which the named fault's
 * index (which may be NULL), and --cores (0 = all num_aiv). */
int combine_normal_read(const kernel_opts *o, const char *kernel, const char *const *faults,
                        int nodes, int npus_per_node, int max_nodes, int num_aiv,
                        combine_shape *sh, int *which, char *err, size_t errlen);
int combine_plan_build(const combine_shape *sh, combine_plan *plan, char *err, size_t errlen);
void combine_plan_free(combine_plan *plan);
/* UB bytes one sender / receiver core uses for this shape. */
uint32_t combine_sender_ub_bytes(const combine_shape *sh);
uint32_t combine_receiver_ub_bytes(const combine_shape *sh);
/* UB bytes one combine-normal core uses (send and sum share the row
 * buffers), and the window stride of a row. */
uint32_t combine_normal_ub_bytes(const combine_shape *sh);
uint32_t combine_normal_window_stride(const combine_shape *sh);

/* Row contents: element j of the expert output row for token t (slot k) of
 * rank s, computed on rank p. The first COMBINE_TAG_ELEMS elements are the
 * tag; the rest are pseudo-random bf16 in [-1, 1). */
void combine_fill_row(uint16_t *row, int hidden, uint64_t seed, int s, int t, int k, int p);
/* The row of x at `at` as a generated input (a reference in REF payload mode). */
int combine_generate_row(engine *e, gm_t at, const combine_shape *sh, int s, int t, int k, int p,
                         char *err, size_t errlen);
/* Decodes a tag; returns 0 if the elements are not a well-formed tag. */
int combine_decode_tag(const uint16_t *row, int hidden, int *t, int *k, int *p);

/* Host-side state of one run: plan, args, the guard regions to verify. */
typedef struct combine_state {
    combine_plan plan;
    combine_args args;
    kit_guards guards;
} combine_state;

kernel_check_fn combine_check;
kernel_check_fn combine_normal_check;
/* The weighted sum on every rank against the CPU reference (check step 4). */
int combine_check_out(engine *e, const combine_plan *p, const combine_args *a, char *msg,
                      size_t msglen);
/* After a normal kernel's run every byte of its symmetric status area
 * (bytes at base on each of num_ranks ranks, a COMBINE_NORMAL_STATE_BYTES
 * status per slot) is zero again: each owner clears its slots after
 * waiting for them. 0 when so; else 1 with msg naming the first status
 * still set as "OUTER i INNER j" (slot = i * per_outer + j) and saying
 * why it is late ("it arrived after its owner had cleared it"). */
int combine_normal_check_status(engine *e, gm_t base, int num_ranks, uint64_t bytes,
                                const char *outer, const char *inner, uint64_t per_outer,
                                const char *late, char *msg, size_t msglen);
/* When bad > 0, appends " [bad of total WHAT differ]" to the first
 * failure's message and returns 1; else 0. */
int combine_count_bad(char *msg, size_t msglen, int64_t bad, int64_t total, const char *what);
/* Setup pieces both setups use: the args every combine kernel reads from
 * its shape (ranks, experts, tokens, topk, hidden, row bytes), a host
 * int32 table into GM, and x on every expert rank filled with the generated
 * expert outputs. */
void combine_args_init(combine_args *a, const combine_shape *sh);
/* A symmetric area of `bytes` on every one of num_ranks ranks with a guard
 * (remembered in g) right after it; dispatch-normal's windows use it too. */
int combine_sym_area(engine *e, kit_guards *g, int num_ranks, uint64_t bytes, const char *what,
                     gm_t *base, char *err, size_t errlen);
/* What both setups begin with: the host state (owner names it in
 * messages), the shape of scheme's options, the plan and the shared args.
 * NULL with err on failure, *state then NULL. */
combine_state *combine_state_begin(engine *e, const kernel_opts *o, int scheme, const char *owner,
                                   void **state, char *err, size_t errlen);
int combine_fill_i32(engine *e, gm_t at, const int32_t *src, size_t n);
int combine_fill_x(engine *e, const combine_state *st, char *err, size_t errlen);
int combine_estimate(const kernel_opts *o, int scheme, const npurr_topology *topo,
                     kernel_estimate *est, char *err, size_t errlen);
int combine_layout(const kernel_opts *o, int scheme, const npurr_topology *topo, FILE *out,
                   char *err, size_t errlen);
kernel_layout_fn combine_normal_layout;
kernel_estimate_fn combine_normal_estimate;
kernel_destroy_fn combine_destroy;
/* What a destroy of the combine family frees last: the plan, the guards,
 * then st, the host state that holds them (dispatch-normal's too). */
void combine_free_state(combine_plan *plan, kit_guards *guards, void *st);
/* Byte sizes for layout printouts: "1.50 MiB"; columns of a row, " %12s"
 * each (no newline). */
void combine_human_bytes(char *buf, size_t n, uint64_t bytes);
void combine_print_sizes(FILE *out, const uint64_t *bytes, int n);
/* A normal kernel's layout table (combine-normal, dispatch-normal): one
 * rank's row (rank, its rows, then the n sizes), returning their sum; and
 * the table's end, the GM total of all ranks with the guard, then "UB per
 * core: ub B (WHAT)". */
uint64_t combine_normal_layout_row(FILE *out, int rank, int64_t rows, const uint64_t *sizes,
                                   int n);
void combine_normal_layout_total(FILE *out, uint64_t sum, uint32_t ub, const char *what, ...)
    __attribute__((format(printf, 4, 5)));

#endif
