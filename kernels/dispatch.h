/*
 * dispatch.h - the layered normal dispatch of seed 001 with the buffer and
 * token layouts of seed 003 (`-k dispatch-layered`), shared pieces.
 *
 * Tokens go Source NPU --RoCE--> Forwarder NPU --HCCS--> Destination NPU.
 * One launch of AIV cores on every rank runs, separated by BarrierAll:
 *   1. layout + notify (dispatch_notify.c): each rank derives from its
 *      top-k indices the per-rank, per-node and per-expert counts,
 *      is_token_in_rank and each token's index in every destination's
 *      stream, exchanges per-rank per-expert counts and builds the
 *      [num_ranks, num_local_experts] prefix matrix and the receive offsets;
 *   2. the data phase, `dispatches` times with the same layout (a second
 *      dispatch must give the same bytes), each followed by a clean step.
 *      Five roles, by GetBlockIdx():
 *        RDMASender           dispatch_sender.c
 *        RDMACoordinator      dispatch_coordinator.c
 *        RDMA2HCCSForwarder   dispatch_forwarder.c
 *        ForwarderCoordinator dispatch_fwd_coordinator.c
 *        HCCSReceiver         dispatch_receiver.c
 *
 * Host side: dispatch_options.c (options -> shape), dispatch_plan.c
 * (routing and the CPU reference), dispatch_payload.c (row contents and
 * tags), dispatch_setup.c (buffers, rings, launch, descriptor),
 * dispatch_check.c (checks), dispatch_layout.c (`npurr layout`). Device
 * code includes dispatch_device.h (with device.h) only; dispatch_kernel.c
 * is the entry and the phases. This header adds the host side to it.
 *
 * Vocabulary is the seeds': rdma_channel_data/meta/head/tail,
 * hccs_channel_x/prefix_start/prefix_end/head/tail, rdma_send_channel_lock,
 * rdma_send_channel_tail, SourceMeta, src_token_id,
 * num_max_rdma_chunked_recv_tokens (= rdma_ring_tokens here), ...
 */
#ifndef NPURR_DISPATCH_H
#define NPURR_DISPATCH_H

#include <stdint.h>

#include "dispatch_device.h"
#include "kernels.h"

extern const kernel_option dispatch_options[];

/* Options -> shape, validated against the topology and the chip's AIV
 * count (num_aiv); err names the option at fault. */
int dispatch_shape_from_opts(const kernel_opts *o, int nodes, int npus_per_node, int num_aiv,
                             dispatch_shape *sh, char *err, size_t errlen);
/* The same on the run topo describes (its topology, its chip's AIV): what
 * setup builds, and layout and estimate without an engine. */
int dispatch_shape_from_topology(const kernel_opts *o, const npurr_topology *topo, dispatch_shape *sh,
                               char *err, size_t errlen);

/* UB bytes each phase / role uses on one core (the arenas of
 * dispatch_kernel.c); dispatch_shape_from_opts rejects shapes over UB. */
uint32_t dispatch_ub_notify(const dispatch_shape *sh);
uint32_t dispatch_ub_sender(const dispatch_shape *sh);
uint32_t dispatch_ub_coordinator(const dispatch_shape *sh);
uint32_t dispatch_ub_forwarder(const dispatch_shape *sh);
uint32_t dispatch_ub_fwd_coordinator(const dispatch_shape *sh);
uint32_t dispatch_ub_receiver(const dispatch_shape *sh);

/* ------------------------------------------------------------ host side */

/* The routing and the CPU reference of everything the kernel computes.
 * s = source rank, d = destination rank, T_s = tokens of s. */
typedef struct dispatch_plan {
    dispatch_shape sh;
    int64_t token_base[DISPATCH_MAX_RANKS + 1];  /* first row of rank s in the [sum T][*] arrays */
    void *tables;                   /* one block: every array below but recv_src_* */
    int32_t *topk_idx;              /* [sum T][K] */
    float *topk_weights;            /* [sum T][K] */
    uint8_t *is_token_in_rank;      /* [sum T][R] */
    int32_t *token_idx_in_rank;     /* [sum T][R] */
    int32_t *num_tokens_per_rank;   /* [s][R] */
    int32_t *num_tokens_per_rdma_rank; /* [s][N] */
    int32_t *num_tokens_per_expert; /* [s][E] */
    int32_t *channel_rank_count;    /* [s][C][R] */
    int32_t *channel_node_count;    /* [s][C][N] */
    int32_t *recv_from;             /* [d][s] tokens d receives from s */
    int64_t *recv_total;            /* [d] */
    int32_t *recv_src_token;        /* per d, rows in order: the source token id */
    int32_t *recv_src_rank;         /* per d, rows in order: the source rank */
    int64_t *recv_base;             /* [d] first row of d in recv_src_* ([R + 1]) */
} dispatch_plan;

int dispatch_plan_build(const dispatch_shape *sh, dispatch_plan *p, char *err, size_t errlen);
void dispatch_plan_free(dispatch_plan *p);
/* recv_total[d] of the plan (rows rank d receives per dispatch) without
 * building the plan: routes one source rank at a time. */
int dispatch_recv_counts(const dispatch_shape *sh, int64_t *recv_total, char *err, size_t errlen);
/* Tokens of channel c that rank s sends to node n (an RDMA ring's total). */
static inline int32_t dispatch_ring_total(const dispatch_plan *p, int s, int c, int n) {
    return p->channel_node_count[((size_t)s * (size_t)p->sh.channels + (size_t)c) *
                                     (size_t)p->sh.nodes + (size_t)n];
}
/* Tokens of channel c that forwarder peer l sends to d over HCCS. */
int64_t dispatch_hccs_ring_total(const dispatch_plan *p, int d, int c, int l);

/* Row contents. x row of token t of rank s: a tag (t and s as small
 * integers, exact in bf16; raw bytes for fp8), then pseudo-random bytes.
 * Scales: per-128 floats, exact powers of two. */
/* x of rank s as a generated input (references in REF payload mode). */
/* 1 when rank s's x still holds what dispatch_generate_x wrote (token of the
 * first changed row in *token when 0), -1 if x is not one allocation. */
int dispatch_x_unchanged(engine *e, gm_t x, const dispatch_shape *sh, int s, int *token);
int dispatch_generate_x(engine *e, gm_t x, const dispatch_shape *sh, int s, char *err,
                        size_t errlen);
void dispatch_fill_scales(float *scales, const dispatch_shape *sh, int s, int t);
/* Decodes a tag; 0 when the row does not hold a well-formed one. */
int dispatch_decode_tag(const uint8_t *row, const dispatch_shape *sh, int *s, int *t);

typedef struct dispatch_state {
    dispatch_plan plan;
    dispatch_args args;
    gm_t *tables;            /* every gm_t table of args, one block */
    uint32_t *ring_ids;
} dispatch_state;

kernel_check_fn dispatch_check;
kernel_estimate_fn dispatch_estimate;
kernel_layout_fn dispatch_layout;
kernel_destroy_fn dispatch_destroy;

#endif
