/*
 * dispatch_device.h - what the device code of `-k dispatch-layered` uses:
 * the limits and record layout, the shape and the kernel arguments every
 * core reads, the slot and word addressing, the UB arena and the role
 * entry points (dispatch.h has the whole picture and the host side).
 *
 * Device files (dispatch_kernel.c, dispatch_notify.c, dispatch_sender.c,
 * dispatch_coordinator.c, dispatch_forwarder.c, dispatch_fwd_coordinator.c,
 * dispatch_receiver.c) include this header only, with device.h.
 */
#ifndef NPURR_DISPATCH_DEVICE_H
#define NPURR_DISPATCH_DEVICE_H

#include <stdint.h>

#include "npurr/device.h"
#include "kit.h"
#include "routing.h"

/* NUM_MAX_NVL_PEERS of the seeds: the HCCS full mesh of a node. */
#define DISPATCH_MAX_NVL_PEERS 8
/* Seed 003: rdma_channel_meta holds NUM_MAX_NVL_PEERS * 2 + 2 ints per
 * channel and RDMA rank: per NVL peer the start and end of this channel's
 * tokens in that peer's stream from the source, then the channel's start
 * and end in the source's stream to the node. Values are stored as -x-1
 * (DeepEP's encoding) so that 0 means "not written yet". */
#define DISPATCH_META_INTS (DISPATCH_MAX_NVL_PEERS * 2 + 2)
#define DISPATCH_META_BYTES (DISPATCH_META_INTS * 4)
#define DISPATCH_META_UB_STRIDE 96   /* one meta block in UB, 32 B aligned */
#define DISPATCH_MAX_RANKS 256
#define DISPATCH_MAX_NODES 32
#define DISPATCH_MAX_CHANNELS 64
#define DISPATCH_MAX_DISPATCHES 4
#define DISPATCH_MAX_TOPK 64
#define DISPATCH_FP8_BLOCK 128   /* fp8 x carries one float scale per 128 elements */

enum { DISPATCH_BF16 = 0, DISPATCH_FP8 = 1 };
/* Faults are injected into the last dispatch of the run (the only one
 * when --dispatches 1), so the earlier ones show the clean behaviour. */
enum { DISPATCH_INJECT_NONE = 0, DISPATCH_INJECT_CREDIT_LEAK, DISPATCH_INJECT_LOST_TAIL };

/* What travels with every token (seed 003 item 2). DeepEP's SourceMeta is
 * the first two fields (8 B). Decision: seed 001 lets several RDMASender
 * cores write one channel's ring out of order, so the token also carries
 * src_token_id and, for each NVL peer of the destination node, the token's
 * index in that peer's stream from this source (computed by the layout
 * phase). The HCCSReceiver places the token with it - that is the
 * receiver-side "sort" of seed 001 - so the result does not depend on the
 * order in which cores won the rdma_send_channel_lock. */
typedef struct SourceMeta {
    int32_t src_rdma_rank;
    int32_t is_token_in_nvl_rank_bits;
    int32_t src_token_id;
    int32_t idx_in_nvl_rank[DISPATCH_MAX_NVL_PEERS];   /* -1: not for that peer */
} SourceMeta;
#define DISPATCH_SOURCE_META_BYTES 44
#define DISPATCH_SM_RDMA_RANK 0
#define DISPATCH_SM_NVL_BITS 4
#define DISPATCH_SM_TOKEN_ID 8
#define DISPATCH_SM_IDX 12
/* recv_src_meta row: src_rdma_rank, is_token_in_nvl_rank_bits, src_token_id
 * (what a combine needs to send each row back). */
#define DISPATCH_RECV_SRC_INTS 3


/* ------------------------------------------------------------ shape */

typedef struct dispatch_shape {
    int nodes;                  /* RDMA ranks */
    int npus;                   /* NVL peers per node (P) */
    int num_ranks;              /* nodes * npus */
    int tokens[DISPATCH_MAX_RANKS];   /* per rank */
    int max_tokens;
    int hidden, topk, experts, local_experts;
    int dtype;                  /* DISPATCH_BF16 / DISPATCH_FP8 */
    int elem_bytes;             /* 2 or 1 */
    int num_scales;             /* fp8: hidden / 128; bf16: 0 */
    /* Token record (seed 003 item 4): [hidden][SourceMeta][scales][topk idx]
     * [topk weights][padding]. Decisions: the hidden part is padded to 16 B
     * (DeepEP's int4 units) so the fields after it are 4 B aligned, and the
     * record to 32 B (not 16) because UB addresses must be 32 B aligned and
     * records are moved through UB back to back. */
    uint32_t x_row_bytes;       /* hidden * elem_bytes: a row of x / recv_x */
    uint32_t hidden_bytes;      /* x_row_bytes padded to 16 */
    uint32_t off_meta, off_scales, off_topk, off_weights, record_end;
    uint32_t token_bytes;       /* S_token */
    int channels;
    int senders, coordinators, forwarders, fwd_coordinators, receivers;
    int block_dim;              /* sum of the five */
    int rdma_ring_tokens;       /* num_max_rdma_chunked_recv_tokens */
    int rdma_send_chunk;        /* num_max_rdma_chunked_send_tokens */
    int hccs_ring_tokens;       /* num_max_hccs_chunked_recv_tokens */
    int hccs_send_chunk;        /* num_max_hccs_chunked_send_tokens */
    int credit_batch;
    int dispatches;
    int inject;
    uint64_t data_seed;
    routing_spec routing;
    /* UB carving decided on the host (validated against UB_BYTES). */
    int sender_meta_tokens;     /* tokens whose metadata one sender loads at once */
    int forward_batch;          /* records per forwarder UB buffer */
    int receive_batch;          /* records per receiver UB batch */
    int notify_block;           /* tokens per layout-phase block */
    int notify_a2;              /* --notify a2: NotifyDispatchA2's all-gather (dispatch_notify_a2.c) */
    int notify_a2_pre211;       /* --notify a2-pre211: that kernel before sgl-kernel-npu PR #211 */
} dispatch_shape;

/* Token -> channel: RDMASender core token_idx % senders (seed 001 s5.1).
 * Decision: core i feeds channel i % channels, so a channel has one core
 * or several (never none) and every core writes one channel only. */
static inline int dispatch_token_channel(const dispatch_shape *sh, int t) {
    return (t % sh->senders) % sh->channels;
}
/* Who serves what. Rings are numbered ring = c * nodes + n (RDMA) and
 * c * npus + l (HCCS); cores take rings round robin. */
static inline int dispatch_coord_of(const dispatch_shape *sh, int c, int n) {
    return (c * sh->nodes + n) % sh->coordinators;
}
static inline int dispatch_fwd_coord_of(const dispatch_shape *sh, int c, int n) {
    return (c * sh->nodes + n) % sh->fwd_coordinators;
}
static inline int dispatch_receiver_of(const dispatch_shape *sh, int c, int l) {
    return (c * sh->npus + l) % sh->receivers;
}
/* Forwarder cores of channel c: j = c, c + C, ...; core g of the channel
 * forwards to the NVL peers p with p % groups == g (DeepEP gives each
 * destination peer its own forwarder warp). */
static inline int dispatch_fwd_groups(const dispatch_shape *sh, int c) {
    int g = (sh->forwarders - c + sh->channels - 1) / sh->channels;
    return g < sh->npus ? g : sh->npus;
}

/* Layout-phase counters of one rank, in this order in one int32 array. */
typedef struct dispatch_count_layout {
    uint32_t per_rank, per_node, per_expert, ch_rank, ch_node, total, padded;
} dispatch_count_layout;
void dispatch_count_offsets(const dispatch_shape *sh, dispatch_count_layout *cl);
/* Notify outputs of one rank, in this order in one int32 array:
 * recv_gbl_rank_prefix_sum [R] (inclusive), recv_rdma_rank_prefix_sum [N]
 * (inclusive), expert_prefix_matrix [R][L] (inclusive down the sources),
 * num_recv_tokens_per_expert [L]. */
typedef struct dispatch_notify_layout {
    uint32_t rank_prefix, rdma_prefix, expert_prefix, per_expert, total, padded;
    uint32_t row_ints, row_stride;   /* one notify row: tokens, then L expert counts */
} dispatch_notify_layout;
void dispatch_notify_offsets(const dispatch_shape *sh, dispatch_notify_layout *nl);
/* The prefix step reads one row per source rank into UB: a notify row, or
 * with --notify a2 the source's token count (32 B) then its counts of this
 * rank's experts, gathered from its blob (UB addresses are 32 B aligned). */
static inline uint32_t dispatch_prefix_row_stride(const dispatch_shape *sh,
                                                  const dispatch_notify_layout *nl) {
    if (!sh->notify_a2) return nl->row_stride;
    return 32u + (uint32_t)kit_align_up((uint64_t)sh->local_experts * 4, 32);
}

/* --notify a2: the notify of sgl-kernel-npu's A2 layered dispatch
 * (csrc/deepep/ops2/op_kernel/notify_dispatch_a2.h and deep_ep.cpp at
 * 3a90dfa1). Every rank all-gathers one metadata blob padded to MAX_BS
 * tokens, then index passes over [experts, ranks, MAX_BS] tables build the
 * offsets DispatchNormalA2 reads. */
#define DISPATCH_A2_MAX_BS 4096        /* MAX_BATCH_SIZE of deep_ep.cpp */
#define DISPATCH_A2_STATUS_BYTES 32    /* STATUS_ENTRY_SIZE: before and after a blob */
#define DISPATCH_A2_FLAG_BYTES 32      /* one IPC flag (8 B used), 32 B apart */
#define DISPATCH_A2_WITHIN_CORES 20    /* MAX_CORE_NUM of the within-server pulls */
#define DISPATCH_A2_COPY_CHUNK (95u * 1024u)   /* CpGM2GMPingPong: UB_SINGLE_DMA_SIZE_MAX / 2 */
/* The blob, in int32 units: A2's sections (per-expert counts [E], tokens
 * per server [N], then the MAX_BS-padded per-token sections), A2's length
 * num_experts*4097 + N + 4096*(1 + 2N + E), then npurr's addition: tokens
 * to each rank [R], which A2 derives from the per-token sections and npurr's
 * data phase reads directly. The per-token sections travel at their real
 * size; npurr's receivers place tokens by SourceMeta and never read them.
 * Index outputs (bytes into one per-rank scratch buffer): what the passes
 * of SplitAndCalcData write, at A2's sizes. */
typedef struct dispatch_a2_layout {
    uint32_t len;                     /* blob ints */
    uint32_t per_expert, per_server;  /* count sections, ints */
    uint32_t token_expert;            /* [MAX_BS][E] token's order per expert, ints */
    uint32_t expert_src;              /* [E][MAX_BS] expertMaxBsSrc, ints */
    uint32_t per_rank;                /* npurr's [R] tokens per rank, ints */
    uint64_t slot_bytes;              /* one blob with its status entries, 32 B aligned */
    uint64_t g_rank_ep, g_exp_src, ep_rank, local_ep, total_recv, token_server_idx,
        count_outer, unique_server, expand_idx, offset_inner, src_off, dst_off, scratch_bytes;
} dispatch_a2_layout;
void dispatch_a2_offsets(const dispatch_shape *sh, dispatch_a2_layout *al);
uint32_t dispatch_ub_notify_a2(const dispatch_shape *sh);

/* ------------------------------------------------------------ kernel args */

/* One struct for every core of every rank; per-rank tables are indexed by
 * GetRank(). Symmetric buffers have the same offset on every rank. */
typedef struct dispatch_args {
    dispatch_shape sh;
    dispatch_count_layout cl;
    dispatch_notify_layout nl;
    int inject_rank, inject_c, inject_n;   /* lost-tail: the one ring whose first tail is lost */

    /* per rank inputs */
    gm_t *x;                 /* [T][hidden] bf16 or fp8 */
    gm_t *x_scales;          /* [T][num_scales] float (fp8) */
    gm_t *topk_idx;          /* [T][K] int32, -1 = dropped */
    gm_t *topk_weights;      /* [T][K] float */
    /* per rank, layout and notify */
    gm_t *layout_counts;     /* dispatch_count_layout */
    gm_t *part_rank;         /* [block_dim][R padded] per-core rank counts */
    gm_t *is_token_in_rank;  /* [T][R] uint8 */
    gm_t *token_idx_in_rank; /* [T][R] int32, -1 = not for that rank */
    gm_t *notify_send;       /* [R][row_stride] */
    gm_t *notify_recv;       /* [R][row_stride] */
    gm_t *notify_out;        /* dispatch_notify_layout */
    /* per rank, --notify a2 */
    dispatch_a2_layout al;
    gm_t *a2_send;           /* [len] int32: this rank's blob */
    gm_t *a2_recv;           /* [R][len] int32: every rank's blob (recv_data) */
    gm_t *a2_scratch;        /* the index passes' outputs (dispatch_a2_layout) */
    gm_t *a2_tasks;          /* [N] batch_write_task */
    /* symmetric, --notify a2: windowOut and the IPC share window, [R] slots
     * of slot_bytes each, and the share window's flags [N][R] */
    gm_t a2_window_out;
    gm_t a2_share;
    gm_t a2_flags;
    /* per dispatch, per rank outputs */
    gm_t *recv_x[DISPATCH_MAX_DISPATCHES];            /* [n_recv][hidden] */
    gm_t *recv_x_scales[DISPATCH_MAX_DISPATCHES];     /* [n_recv][num_scales] */
    gm_t *recv_topk_idx[DISPATCH_MAX_DISPATCHES];     /* [n_recv][K] local expert or -1 */
    gm_t *recv_topk_weights[DISPATCH_MAX_DISPATCHES]; /* [n_recv][K] */
    gm_t *recv_src_meta[DISPATCH_MAX_DISPATCHES];     /* [n_recv][3] int32 */

    /* symmetric: the RDMA buffer (seed 003 s2), send and receive halves */
    gm_t rdma_channel_data;       /* [C][N][rdma_ring_tokens][S] received */
    gm_t rdma_channel_data_send;  /* [C][N][rdma_ring_tokens][S] staged for RDMA */
    gm_t rdma_channel_meta;       /* [C][N][18] int32 received */
    gm_t rdma_channel_meta_send;  /* [C][N][18] int32 staged */
    gm_t rdma_channel_head;       /* [C][N] int64 on the source: credits back */
    gm_t rdma_channel_tail;       /* [C][N] int64 on the forwarder: tokens in */
    /* symmetric: the HCCS buffer (seed 003 s3), indexed by forwarder peer */
    gm_t hccs_channel_x;             /* [C][P][hccs_ring_tokens][S] */
    gm_t hccs_channel_prefix_start;  /* [C][P][N] int32 */
    gm_t hccs_channel_prefix_end;    /* [C][P][N] int32 */
    gm_t hccs_channel_head;          /* [C][P] int32, on the destination */
    gm_t hccs_channel_tail;          /* [C][P] int32, on the destination */
    /* symmetric: bookkeeping words of the roles. Decision: the seed's roles
     * poll several rings in a loop; an emulated wait blocks on one word, so
     * a core that serves several rings waits on a doorbell word that its
     * producers bump after every tail store that makes work for it (and on
     * the ring's own word once only one ring is left, so a hang names the
     * ring). Blocking on one ring while another starves would deadlock. */
    gm_t rdma_send_channel_lock;  /* [C][N] int32 */
    gm_t rdma_send_channel_tail;  /* [C][N] int64: slots the senders filled */
    gm_t coord_doorbell;          /* [coordinators] int64 */
    gm_t rdma_recv_doorbell;      /* [C] int64: tokens arrived in channel c */
    gm_t forwarder_head;          /* [C][N][P] int64: per forwarder group */
    gm_t rdma_channel_meta_ack;   /* [C][N] int64: forwarder groups that read the meta */
    gm_t fwd_coord_doorbell;      /* [fwd_coordinators] int64 */
    gm_t hccs_recv_doorbell;      /* [receivers] int64 */

    uint32_t *rdma_ring;          /* [s][c][n]: ring s -> (n, nvl of s) */
    uint32_t *hccs_ring;          /* [d][c][l]: ring (node of d, l) -> d */
} dispatch_args;

/* Addresses inside the symmetric buffers. */
static inline gm_t dispatch_rdma_slot(const dispatch_args *a, gm_t base, int rank, int c, int n,
                                      int64_t slot) {
    uint64_t ring = (uint64_t)c * (uint64_t)a->sh.nodes + (uint64_t)n;
    return gm_add(gm_on_rank(base, rank),
                  (int64_t)((ring * (uint64_t)a->sh.rdma_ring_tokens + (uint64_t)slot) *
                            a->sh.token_bytes));
}
static inline gm_t dispatch_hccs_slot(const dispatch_args *a, int rank, int c, int l,
                                      int64_t slot) {
    uint64_t ring = (uint64_t)c * (uint64_t)a->sh.npus + (uint64_t)l;
    return gm_add(gm_on_rank(a->hccs_channel_x, rank),
                  (int64_t)((ring * (uint64_t)a->sh.hccs_ring_tokens + (uint64_t)slot) *
                            a->sh.token_bytes));
}
static inline gm_t dispatch_word(gm_t base, int rank, uint64_t index, uint32_t width) {
    return gm_add(gm_on_rank(base, rank), (int64_t)(index * width));
}
static inline uint32_t dispatch_rdma_ring_id(const dispatch_args *a, int s, int c, int n) {
    return a->rdma_ring[((size_t)s * (size_t)a->sh.channels + (size_t)c) * (size_t)a->sh.nodes +
                        (size_t)n];
}
static inline uint32_t dispatch_hccs_ring_id(const dispatch_args *a, int d, int c, int l) {
    return a->hccs_ring[((size_t)d * (size_t)a->sh.channels + (size_t)c) * (size_t)a->sh.npus +
                        (size_t)l];
}

/* ------------------------------------------------------------ device code */

/* A core's UB, carved per phase (AllocUB cannot free). */
typedef struct ub_arena {
    local_t base;
    uint32_t used;
} ub_arena;
static inline local_t ub_take(ub_arena *u, uint64_t bytes) {
    local_t l = local_add(u->base, u->used);
    u->used += (uint32_t)kit_align_up(bytes ? bytes : 1, UB_ALIGN);
    return l;
}

/* What a core publishes before a blocking wait, so the deadlock report
 * reads like a per-role dump: the ring's channel, the peer rank at its
 * other end, head, tail, the cached head the core decided on, and the
 * credits (free slots) it saw - for the ForwarderCoordinator, the credits
 * it has returned this dispatch; -1 where the wait is not about that value
 * (a doorbell wait, which serves several rings, is all -1 with the number
 * of rings still pending). Only changed values are re-published: each
 * note is a trace event. */
typedef struct ring_notes {
    int64_t v[7];
    int valid;
} ring_notes;
void dispatch_note_ring(ring_notes *rn, int64_t channel, int64_t peer, int64_t head, int64_t tail,
                        int64_t cached_head, int64_t credits);
void dispatch_note_doorbell(ring_notes *rn, int64_t pending_rings);

void dispatch_kernel(const void *args);
void dispatch_notify_layout_phase(const dispatch_args *a, ub_arena ub);
void dispatch_notify_exchange_phase(const dispatch_args *a, ub_arena ub);
void dispatch_notify_prefix_phase(const dispatch_args *a, ub_arena ub);
void dispatch_notify_a2_phase(const dispatch_args *a, ub_arena ub);
void dispatch_rdma_sender(const dispatch_args *a, int disp, ub_arena ub);
void dispatch_rdma_coordinator(const dispatch_args *a, int disp, ub_arena ub);
void dispatch_forwarder(const dispatch_args *a, int disp, ub_arena ub);
void dispatch_fwd_coordinator(const dispatch_args *a, int disp, ub_arena ub);
void dispatch_hccs_receiver(const dispatch_args *a, int disp, ub_arena ub);
/* The clean step after a dispatch: meta and prefixes back to 0, each by
 * the core that owns them once every reader has read them. */
void dispatch_fwd_coordinator_clean(const dispatch_args *a, int disp, ub_arena ub);
void dispatch_hccs_receiver_clean(const dispatch_args *a, ub_arena ub);

/* Int int_off of rank s's blob in rank me's recv_data (--notify a2). */
static inline gm_t dispatch_a2_blob(const dispatch_args *a, int me, int s, uint32_t int_off) {
    return gm_add(a->a2_recv[me], (int64_t)(((uint64_t)s * a->al.len + int_off) * 4));
}

/* DataCopy when the length is a multiple of 32 B, else DataCopyPad. */
static inline void dispatch_copy_out(gm_t dst, local_t src, uint64_t bytes) {
    if (bytes % UB_ALIGN == 0) DataCopy(dst, src, bytes);
    else DataCopyPadOut(dst, src, bytes);
}
static inline void dispatch_copy_in(local_t dst, gm_t src, uint64_t bytes) {
    if (bytes % UB_ALIGN == 0) DataCopy(dst, src, bytes);
    else DataCopyPadIn(dst, src, bytes);
}

#endif
