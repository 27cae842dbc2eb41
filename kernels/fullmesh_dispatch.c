/*
 * fullmesh_dispatch.c - MoeDistributeDispatch of seed 002 s2, device code.
 *
 * 1. Index computation: every core scans expertIds (in UB chunks) into
 *    sendStatus [W x 32] and expertCumsum. Decision: each core does the
 *    whole scan rather than one core publishing it through GM, since all of
 *    them need the counts and it saves a SyncAll.
 * 2. Token reorder: a second scan gives expandIdx(i, j) as a running count
 *    per expert (core 0 writes it out); every core copies the tokens bound
 *    for the ranks it owns into their WindowsOut windows at
 *    expertCumsum(e) - expertCumsum(first expert of the rank) + expandIdx,
 *    after the count row, each token row read from x once (INT8: and
 *    quantized once in UB, fullmesh_int8.c).
 * 3. Send: count row with FLAG1, FLAG2 after the tokens, one BatchWrite
 *    task per owned rank.
 * 4. Receive (two-level polling): for each source rank it owns, a core
 *    polls FLAG1, sums the count row, polls FLAG2 at the position the sum
 *    gives, and keeps the count row (recv_status) so nothing but token rows
 *    is read from the window later.
 * 5. After a SyncAll: epRecvCount and expertTokenNum from the [W x L]
 *    received counts (seed s2.4.2: Add down the rows, transpose, add the
 *    previous row's last element; the Add is VecAdd, the transpose and
 *    carry are scalar, where the seed uses GatherMask and Adds), and every
 *    core copies its sources' rows into expert-contiguous expand_x (INT8:
 *    row by row, the scales into dynamic_scales).
 * Device code: device.h only.
 */
#include "fullmesh.h"

/* Flag ids: MTE2_S 0 (metadata, count rows), MTE3_S 0 (everything written
 * out), MTE3_S 1 (expandIdx chunk read before it is refilled), V_S 0,
 * MTE2_V 0, MTE3_MTE2 / MTE2_MTE3 0-1 (row buffers); INT8: MTE2_V / V_MTE3
 * 0-1 (the quantization of row buffer b). */

static int32_t status_count(const fm_core *fc, int rank, int le) {
    return UbGet32(fc->status_ub, (uint32_t)(rank * FM_STATUS_ENTRY_COUNT + le) * 4u);
}

static int meta_tokens(const fm_args *a) { return (int)(FM_META_BYTES / ((uint32_t)a->topk * 4u)); }

static void load_ids(fm_core *fc, int t0, int n) {
    const fm_args *a = fc->a;
    gm_t ids = a->expert_ids[fc->round * a->num_ranks + fc->me];
    DataCopyPadIn(fc->ids_ub, gm_add(ids, (int64_t)t0 * a->topk * 4), (uint64_t)n * a->topk * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
}

/* Step 1: sendStatus counts and expertCumsum. */
static void count_tokens(fm_core *fc) {
    const fm_args *a = fc->a;
    int W = a->num_ranks, L = a->local_experts, E = a->experts, K = a->topk;
    VecDup(fc->status_ub, DT_INT32, 0, (uint32_t)W * FM_STATUS_ENTRY_COUNT);
    VecDup(fc->cnt_ub, DT_INT32, 0, (uint32_t)E);
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    int chunk = meta_tokens(a);
    for (int t0 = 0; t0 < a->tokens; t0 += chunk) {
        int n = a->tokens - t0 < chunk ? a->tokens - t0 : chunk;
        load_ids(fc, t0, n);
        for (int x = 0; x < n * K; x++) {
            int32_t e = UbGet32(fc->ids_ub, (uint32_t)x * 4u);
            if (e < 0) continue;   /* a dropped slot goes nowhere */
            uint32_t off = (uint32_t)((e / L) * FM_STATUS_ENTRY_COUNT + e % L) * 4u;
            UbSet32(fc->status_ub, off, UbGet32(fc->status_ub, off) + 1);
        }
        ScalarCycles(4 * n * K);
    }
    int32_t run = 0;
    for (int e = 0; e < E; e++) {
        UbSet32(fc->cumsum_ub, (uint32_t)e * 4u, run);
        run += status_count(fc, e / L, e % L);
    }
    UbSet32(fc->cumsum_ub, (uint32_t)E * 4u, run);
}

/* Step 2: expandIdx, and the tokens into the windows of the owned ranks. */
static void reorder_tokens(fm_core *fc) {
    const fm_args *a = fc->a;
    int W = a->num_ranks, L = a->local_experts, K = a->topk;
    int writer = fc->core == 0;
    gm_t x = a->x[fc->round * W + fc->me];
    gm_t expand_idx = a->expand_idx[fc->round * W + fc->me];
    uint32_t rb_bytes = a->row_bytes, wb = a->win_row_bytes;
    int int8 = a->dtype == FM_INT8;
    uint32_t sent = int8 ? fm_quant_bytes(a) : rb_bytes;
    int chunk = meta_tokens(a), rb = 0;
    fm_copy_begin(fc);
    if (writer) SetFlag(MTE3_S, 1);
    for (int t0 = 0; t0 < a->tokens; t0 += chunk) {
        int n = a->tokens - t0 < chunk ? a->tokens - t0 : chunk;
        load_ids(fc, t0, n);
        if (writer) WaitFlag(MTE3_S, 1);   /* the last expandIdx chunk has left idx_ub */
        for (int i = 0; i < n; i++) {
            int t = t0 + i, loaded = 0;
            for (int j = 0; j < K; j++) {
                uint32_t xo = (uint32_t)(i * K + j) * 4u;
                int32_t e = UbGet32(fc->ids_ub, xo);
                if (e < 0) {
                    if (writer) UbSet32(fc->idx_ub, xo, -1);
                    continue;
                }
                int32_t idx = UbGet32(fc->cnt_ub, (uint32_t)e * 4u);
                UbSet32(fc->cnt_ub, (uint32_t)e * 4u, idx + 1);
                if (writer) UbSet32(fc->idx_ub, xo, idx);
                int dst = e / L;
                if (dst < fc->first_rank || dst >= fc->end_rank) continue;
                if (!loaded) {
                    WaitFlag(MTE3_MTE2, rb);
                    DataCopyPadIn(fc->row_ub[rb], gm_add(x, (int64_t)t * rb_bytes), rb_bytes);
                    if (int8) {
                        fm_quantize_row(fc, rb);
                    } else {
                        SetFlag(MTE2_MTE3, rb);
                        WaitFlag(MTE2_MTE3, rb);
                    }
                    loaded = 1;
                }
                int64_t pos = (int64_t)UbGet32(fc->cumsum_ub, (uint32_t)e * 4u) -
                              UbGet32(fc->cumsum_ub, (uint32_t)(dst * L) * 4u) + idx;
                DataCopyPadOut(gm_add(fm_win_out(fc, dst), FM_STATUS_ROW_BYTES + pos * wb),
                               int8 ? fc->q_ub[rb] : fc->row_ub[rb], sent);
            }
            ScalarCycles(6 * K);
            if (loaded) {
                SetFlag(MTE3_MTE2, rb);
                rb ^= 1;
            }
        }
        if (writer) {
            DataCopyPadOut(gm_add(expand_idx, (int64_t)t0 * K * 4), fc->idx_ub,
                           (uint64_t)n * (uint64_t)K * 4);
            SetFlag(MTE3_S, 1);
        }
    }
    if (writer) WaitFlag(MTE3_S, 1);
    fm_copy_end(fc);
}

/* Step 3: count row + FLAG1, FLAG2, one task per owned rank. */
static void send_windows(fm_core *fc) {
    const fm_args *a = fc->a;
    uint64_t flag_off[FM_MAX_RANKS];
    for (int dst = fc->first_rank; dst < fc->end_rank; dst++) {
        int64_t n = 0;
        for (int le = 0; le < a->local_experts; le++) n += status_count(fc, dst, le);
        uint32_t row = (uint32_t)dst * FM_STATUS_ROW_BYTES;
        UbSet32(fc->status_ub, row + FM_FLAG_OFFSET * 4u, fc->flag);   /* FLAG1 */
        DataCopy(fm_win_out(fc, dst), local_add(fc->status_ub, row), FM_STATUS_ROW_BYTES);
        flag_off[dst - fc->first_rank] = kit_align_up(FM_STATUS_ROW_BYTES + (uint64_t)n * a->win_row_bytes, UB_ALIGN);
    }
    fm_post_windows(fc, flag_off);
}

/* Step 4: FLAG1, counts, FLAG2 for every owned source rank. */
static void receive_windows(fm_core *fc) {
    const fm_args *a = fc->a;
    gm_t recv_status = a->recv_status[fc->me];
    for (int src = fc->first_rank; src < fc->end_rank; src++) {
        gm_t w = fm_win_in(fc, src);
        uint32_t row = (uint32_t)src * FM_STATUS_ROW_BYTES;
        CoreNote("wait_src", src);
        WaitGM32(gm_add(w, FM_FLAG_OFFSET * 4), COND_EQ, fc->flag);   /* FLAG1 */
        DataCopy(local_add(fc->recv_ub, row), w, FM_STATUS_ROW_BYTES);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        int64_t n = 0;
        for (int le = 0; le < a->local_experts; le++)
            n += UbGet32(fc->recv_ub, row + (uint32_t)le * 4u);
        WaitGM32(gm_add(w, (int64_t)kit_align_up(FM_STATUS_ROW_BYTES + (uint64_t)n * a->win_row_bytes, UB_ALIGN)),
                 COND_EQ, fc->flag);   /* FLAG2 */
        DataCopy(gm_add(recv_status, row), local_add(fc->recv_ub, row), FM_STATUS_ROW_BYTES);
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* Step 5a: epRecvCount [L][W] and expertTokenNum [L] from recv_status. */
static void recv_counts(fm_core *fc) {
    const fm_args *a = fc->a;
    int W = a->num_ranks, L = a->local_experts;
    uint32_t rows = (uint32_t)W * FM_STATUS_ROW_BYTES;
    DataCopy(fc->recv_ub, a->recv_status[fc->me], rows);
    SetFlag(MTE2_V, 0);
    WaitFlag(MTE2_V, 0);
    VecCopy(fc->cum_ub, fc->recv_ub, rows);
    for (int src = 1; src < W; src++) {   /* Add: each row accumulates the ones above it */
        local_t r = local_add(fc->cum_ub, (uint32_t)src * FM_STATUS_ROW_BYTES);
        VecAdd(r, r, local_add(fc->cum_ub, (uint32_t)(src - 1) * FM_STATUS_ROW_BYTES), DT_INT32,
               (uint32_t)L);
    }
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    int64_t total = 0;
    for (int le = 0; le < L; le++) {
        for (int src = 0; src < W; src++)
            UbSet32(fc->epc_ub, (uint32_t)(le * W + src) * 4u,
                    total + UbGet32(fc->cum_ub, (uint32_t)src * FM_STATUS_ROW_BYTES + (uint32_t)le * 4u));
        total += UbGet32(fc->cum_ub, (uint32_t)(W - 1) * FM_STATUS_ROW_BYTES + (uint32_t)le * 4u);
        UbSet64(fc->etn_ub, (uint32_t)le * 8u, total);
    }
    if (fc->core == 0) {
        int at = fc->round * W + fc->me;
        DataCopyPadOut(a->ep_recv_count[at], fc->epc_ub, (uint64_t)L * (uint64_t)W * 4);
        DataCopyPadOut(a->expert_token_num[at], fc->etn_ub, (uint64_t)L * 8);
    }
}

/* Step 5b: the owned sources' rows into expand_x, expert-contiguous. */
static void reorder_received(fm_core *fc) {
    const fm_args *a = fc->a;
    int W = a->num_ranks, L = a->local_experts;
    gm_t expand_x = a->expand_x[fc->round * W + fc->me];
    int rb = 0;
    fm_copy_begin(fc);
    for (int src = fc->first_rank; src < fc->end_rank; src++) {
        int64_t in_window = 0;
        for (int le = 0; le < L; le++) {
            int32_t n = UbGet32(fc->recv_ub, (uint32_t)src * FM_STATUS_ROW_BYTES + (uint32_t)le * 4u);
            if (n == 0) continue;
            int64_t first = (int64_t)UbGet32(fc->epc_ub, (uint32_t)(le * W + src) * 4u) - n;
            gm_t rows = gm_add(fm_win_in(fc, src), FM_STATUS_ROW_BYTES + in_window * a->win_row_bytes);
            if (a->dtype == FM_INT8)
                fm_split_received(fc, rows, first, n, &rb);
            else
                fm_copy_gm(fc, gm_add(expand_x, first * a->row_bytes), rows,
                           (uint64_t)n * a->row_bytes, &rb);
            in_window += n;
        }
    }
    fm_copy_end(fc);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

void fm_dispatch(fm_core *fc) {
    SetRole("Dispatch");
    fm_op_begin(fc);
    count_tokens(fc);
    reorder_tokens(fc);
    send_windows(fc);
    SetRole("DispatchRecv");
    receive_windows(fc);
    SyncAll();   /* every count row of this op is in recv_status */
    recv_counts(fc);
    reorder_received(fc);
    fm_op_end(fc);
}
