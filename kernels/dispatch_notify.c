/*
 * dispatch_notify.c - the notify phase of the layered dispatch, on device:
 * DeepEP's get_dispatch_layout plus notify_dispatch, on every core of a
 * rank, before any token moves.
 *
 * Layout: each core takes a contiguous block of the rank's tokens and
 * counts, from the top-k indices, tokens per destination rank, per node and
 * per (channel, rank) and (channel, node), and top-k slots per expert; it
 * writes is_token_in_rank rows and adds its counts into the rank's totals
 * with MTE3 atomic add (SetAtomicAdd). After SyncAll every core knows the
 * counts of the blocks before its own and writes token_idx_in_rank: the
 * token's index in each destination's stream from this rank, which travels
 * in SourceMeta and lets the receiver place tokens that reach it out of
 * order.
 *
 * Exchange: rank s sends destination d one row {tokens s -> d, then the
 * count of each of d's local experts}, by RDMA to other nodes and over HCCS
 * inside the node; BarrierAll once every write has landed (RdmaQuiet,
 * MTE3 -> S). Prefix: each rank turns its [num_ranks] rows into
 * recv_gbl_rank_prefix_sum, recv_rdma_rank_prefix_sum, the
 * [num_ranks, num_local_experts] prefix matrix and num_recv_tokens_per_expert.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

/* Flags: MTE2_S 0, MTE3_S 0, V_S 0. */

static void ub_add32(local_t l, uint32_t index, int32_t v) {
    UbSet32(l, index * 4u, UbGet32(l, index * 4u) + v);
}

static void ub_set_byte(local_t l, uint32_t byte, uint8_t v) {
    uint32_t word = byte & ~3u, shift = (byte & 3u) * 8u;
    uint32_t w = (uint32_t)UbGet32(l, word);
    w = (w & ~(0xffu << shift)) | ((uint32_t)v << shift);
    UbSet32(l, word, (int32_t)w);
}

/* Ranks (and nodes) that token row i of topk_ub reaches, each once,
 * in first-seen order; returns how many. */
static int token_ranks(const dispatch_shape *sh, local_t topk_ub, int i, int *ranks,
                       local_t cnt, const dispatch_count_layout *cl, int count_experts) {
    int n = 0;
    for (int k = 0; k < sh->topk; k++) {
        int32_t e = UbGet32(topk_ub, (uint32_t)(i * sh->topk + k) * 4u);
        if (e < 0) continue;
        if (count_experts) ub_add32(cnt, cl->per_expert + (uint32_t)e, 1);
        int r = e / sh->local_experts, seen = 0;
        for (int j = 0; j < n; j++) seen |= ranks[j] == r;
        if (!seen) ranks[n++] = r;
    }
    ScalarCycles(2 * sh->topk);
    return n;
}

/* One core's part of the notify layout: its token range and UB buffers. */
typedef struct layout_core {
    const dispatch_args *a;
    int me, b, B, t_begin, t_end;
    uint32_t Rp;   /* ranks padded to 8: a row of part_rank */
    local_t topk_ub, inrank_ub, idx_ub, cnt, part_ub, start_ub;
} layout_core;

/* Counts this core's tokens per rank, node, expert and channel into cnt and
 * writes is_token_in_rank for them. */
static void count_tokens(const layout_core *x) {
    const dispatch_args *a = x->a;
    const dispatch_shape *sh = &a->sh;
    const dispatch_count_layout *cl = &a->cl;
    int R = sh->num_ranks, K = sh->topk, P = sh->npus, N = sh->nodes, TB = sh->notify_block;
    int ranks[DISPATCH_MAX_TOPK];
    uint8_t node_hit[DISPATCH_MAX_RANKS] = {0};
    for (int t0 = x->t_begin; t0 < x->t_end; t0 += TB) {
        int n = x->t_end - t0 < TB ? x->t_end - t0 : TB;
        DataCopyPadIn(x->topk_ub, gm_add(a->topk_idx[x->me], (int64_t)t0 * K * 4), (uint64_t)n * K * 4);
        VecDup(x->inrank_ub, DT_INT32, 0, (uint32_t)kit_align_up((uint64_t)n * R, 4) / 4);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        SetFlag(V_S, 0);
        WaitFlag(V_S, 0);
        for (int i = 0; i < n; i++) {
            int c = dispatch_token_channel(sh, t0 + i);
            int nr = token_ranks(sh, x->topk_ub, i, ranks, x->cnt, cl, 1);
            for (int j = 0; j < nr; j++) {
                int r = ranks[j], node = r / P;
                ub_add32(x->cnt, cl->per_rank + (uint32_t)r, 1);
                ub_add32(x->cnt, cl->ch_rank + (uint32_t)(c * R + r), 1);
                ub_set_byte(x->inrank_ub, (uint32_t)(i * R + r), 1);
                if (!node_hit[node]) {
                    node_hit[node] = 1;
                    ub_add32(x->cnt, cl->per_node + (uint32_t)node, 1);
                    ub_add32(x->cnt, cl->ch_node + (uint32_t)(c * N + node), 1);
                }
            }
            for (int j = 0; j < nr; j++) node_hit[ranks[j] / P] = 0;
        }
        DataCopyPadOut(gm_add(a->is_token_in_rank[x->me], (int64_t)t0 * R), x->inrank_ub,
                       (uint64_t)n * R);
        SetFlag(MTE3_S, 0);   /* inrank_ub and topk_ub are rewritten next block */
        WaitFlag(MTE3_S, 0);
    }
}

/* token_idx_in_rank: this block starts where the blocks before it end. */
static void index_tokens(const layout_core *x) {
    const dispatch_args *a = x->a;
    const dispatch_shape *sh = &a->sh;
    int R = sh->num_ranks, K = sh->topk, TB = sh->notify_block;
    int ranks[DISPATCH_MAX_TOPK];
    VecDup(x->start_ub, DT_INT32, 0, (uint32_t)R);
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    if (x->b > 0) {
        DataCopy(x->part_ub, a->part_rank[x->me], (uint64_t)x->b * x->Rp * 4);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        for (int q = 0; q < x->b; q++)
            for (int r = 0; r < R; r++)
                ub_add32(x->start_ub, (uint32_t)r,
                         UbGet32(x->part_ub, (uint32_t)(q * (int)x->Rp + r) * 4u));
    }
    for (int t0 = x->t_begin; t0 < x->t_end; t0 += TB) {
        int n = x->t_end - t0 < TB ? x->t_end - t0 : TB;
        DataCopyPadIn(x->topk_ub, gm_add(a->topk_idx[x->me], (int64_t)t0 * K * 4), (uint64_t)n * K * 4);
        VecDup(x->idx_ub, DT_INT32, -1, (uint32_t)(n * R));
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        SetFlag(V_S, 0);
        WaitFlag(V_S, 0);
        for (int i = 0; i < n; i++) {
            int nr = token_ranks(sh, x->topk_ub, i, ranks, x->cnt, &a->cl, 0);
            for (int j = 0; j < nr; j++) {
                int r = ranks[j];
                int32_t v = UbGet32(x->start_ub, (uint32_t)r * 4u);
                UbSet32(x->idx_ub, (uint32_t)(i * R + r) * 4u, v);
                UbSet32(x->start_ub, (uint32_t)r * 4u, v + 1);
            }
        }
        dispatch_copy_out(gm_add(a->token_idx_in_rank[x->me], (int64_t)t0 * R * 4), x->idx_ub,
                          (uint64_t)n * R * 4);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    }
}

void dispatch_notify_layout_phase(const dispatch_args *a, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    const dispatch_count_layout *cl = &a->cl;
    layout_core x = {.a = a, .me = GetRank(), .b = GetBlockIdx(), .B = GetBlockNum()};
    int T = sh->tokens[x.me], R = sh->num_ranks, K = sh->topk, TB = sh->notify_block;
    x.Rp = (uint32_t)kit_align_up((uint64_t)R, 8);
    x.t_begin = (int)((int64_t)T * x.b / x.B);
    x.t_end = (int)((int64_t)T * (x.b + 1) / x.B);
    x.topk_ub = ub_take(&ub, (uint64_t)TB * K * 4);
    x.inrank_ub = ub_take(&ub, (uint64_t)TB * R);
    x.idx_ub = ub_take(&ub, (uint64_t)TB * R * 4);
    x.cnt = ub_take(&ub, (uint64_t)cl->padded * 4);
    x.part_ub = ub_take(&ub, (uint64_t)x.B * x.Rp * 4);
    x.start_ub = ub_take(&ub, (uint64_t)R * 4);

    VecDup(x.cnt, DT_INT32, 0, cl->padded);
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    count_tokens(&x);
    /* Per-core rank counts for the others' prefixes; totals by atomic add. */
    DataCopy(gm_add(a->part_rank[x.me], (int64_t)x.b * x.Rp * 4), x.cnt, (uint64_t)x.Rp * 4);
    SetAtomicAdd(DT_INT32);
    DataCopy(a->layout_counts[x.me], x.cnt, (uint64_t)cl->padded * 4);
    SetAtomicNone();
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    SyncAll();
    index_tokens(&x);
}

void dispatch_notify_exchange_phase(const dispatch_args *a, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    const dispatch_count_layout *cl = &a->cl;
    const dispatch_notify_layout *nl = &a->nl;
    int me = GetRank(), b = GetBlockIdx(), B = GetBlockNum(), P = sh->npus;
    int R = sh->num_ranks, L = sh->local_experts;
    local_t cnt = ub_take(&ub, (uint64_t)cl->padded * 4);
    local_t row_ub = ub_take(&ub, nl->row_stride);
    DataCopy(cnt, a->layout_counts[me], (uint64_t)cl->padded * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    for (int d = b; d < R; d += B) {
        UbSet32(row_ub, 0, UbGet32(cnt, (cl->per_rank + (uint32_t)d) * 4u));
        for (int le = 0; le < L; le++)
            UbSet32(row_ub, (uint32_t)(1 + le) * 4u,
                    UbGet32(cnt, (cl->per_expert + (uint32_t)(d * L + le)) * 4u));
        gm_t dst = gm_add(a->notify_recv[d], (int64_t)me * nl->row_stride);
        if (d / P == me / P) {
            DataCopy(dst, row_ub, nl->row_stride);   /* HCCS inside the node */
        } else {
            gm_t staged = gm_add(a->notify_send[me], (int64_t)d * nl->row_stride);
            DataCopy(staged, row_ub, nl->row_stride);
            SetFlag(MTE3_S, 0);   /* RDMA reads the staged row when it runs */
            WaitFlag(MTE3_S, 0);
            RdmaWrite(dst, staged, nl->row_stride);
        }
        SetFlag(MTE3_S, 0);   /* row_ub is rebuilt for the next destination */
        WaitFlag(MTE3_S, 0);
    }
    RdmaQuiet();
    BarrierAll();
}

/* Every source's row: copied at once from notify_recv, or with --notify a2
 * gathered from the blobs (its tokens to this rank, its counts of this
 * rank's experts). Returns the byte offset of the expert counts in a row. */
static uint32_t load_rows(const dispatch_args *a, int me, local_t rows, uint32_t stride) {
    const dispatch_shape *sh = &a->sh;
    int R = sh->num_ranks, L = sh->local_experts;
    if (!sh->notify_a2) {
        DataCopy(rows, a->notify_recv[me], (uint64_t)R * stride);
        return 4;
    }
    for (int s = 0; s < R; s++) {
        local_t row = local_add(rows, (uint32_t)s * stride);
        DataCopyPadIn(row, dispatch_a2_blob(a, me, s, a->al.per_rank + (uint32_t)me), 4);
        dispatch_copy_in(local_add(row, 32),
                         dispatch_a2_blob(a, me, s, a->al.per_expert + (uint32_t)(me * L)),
                         (uint64_t)L * 4);
    }
    return 32;
}

void dispatch_notify_prefix_phase(const dispatch_args *a, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    const dispatch_notify_layout *nl = &a->nl;
    int me = GetRank(), R = sh->num_ranks, L = sh->local_experts, P = sh->npus;
    if (GetBlockIdx() == 0) {
        uint32_t stride = dispatch_prefix_row_stride(sh, nl);
        local_t rows = ub_take(&ub, (uint64_t)R * stride);
        local_t out = ub_take(&ub, (uint64_t)nl->padded * 4);
        uint32_t exp_off = load_rows(a, me, rows, stride);
        VecDup(out, DT_INT32, 0, nl->padded);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        SetFlag(V_S, 0);
        WaitFlag(V_S, 0);
        int32_t acc = 0;
        for (int s = 0; s < R; s++) {
            acc += UbGet32(rows, (uint32_t)s * stride);
            UbSet32(out, (nl->rank_prefix + (uint32_t)s) * 4u, acc);
            if (s % P == P - 1)
                UbSet32(out, (nl->rdma_prefix + (uint32_t)(s / P)) * 4u, acc);
        }
        for (int le = 0; le < L; le++) {
            int32_t e_acc = 0;
            for (int s = 0; s < R; s++) {
                e_acc += UbGet32(rows, (uint32_t)s * stride + exp_off + (uint32_t)le * 4u);
                UbSet32(out, (nl->expert_prefix + (uint32_t)(s * L + le)) * 4u, e_acc);
            }
            UbSet32(out, (nl->per_expert + (uint32_t)le) * 4u, e_acc);
        }
        DataCopy(a->notify_out[me], out, (uint64_t)nl->padded * 4);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    }
    SyncAll();
}
