/*
 * ll_single.c - ll-single-dispatch-combine's device code: A2's
 * single-server low-latency dispatch and combine as the chip runs them
 * (sgl-kernel-npu PR #176 at 68db2771, csrc/deepep/ops2/op_kernel/
 * moe_distribute_dispatch_v2_single.h and moe_distribute_combine_v2_
 * single.h), every AIV core of every rank, no AICPU.
 *
 * Dispatch (Process: AlltoAllDispatch, SetStatus, WaitDispatch,
 * LocalWindowCopy, UpdataTokenNumsOut):
 *   the rank's T * K (token, k) slots split over the cores; per slot the
 *   count of earlier slots to the same expert (a vector reduction), the
 *   token row GM -> UB, quantized (int8: one scale per row), the triple
 *   (rank, token, k) written behind it, and the row DataCopyPad'ed into
 *   the expert's window on its rank, slot (this source, local expert) at
 *   that count; two rows in flight per core. Then the experts split over
 *   the cores: per expert the count of this rank's rows (a reduction over
 *   all slots), a PipeBarrier and a SyncAll (every row of the rank has
 *   landed), and a 32 B status (1.0, count) into the status slot (local
 *   expert, source) on the expert's rank. The receiving cores split those
 *   W * L slots, wait for their statuses, clear them, publish their row
 *   count to a per-core workspace, SyncAll, and copy their slots' rows,
 *   slot by slot, window -> UB -> expand_x (and the scale, the triple) at
 *   the running total of the cores before them.
 * Combine (Process: SetWaitTpStatusAndDisPatch, LocalWindowCopy):
 *   the rank's received rows split over the cores (a core starts at its
 *   rank's offset in its share so ranks do not all hit one peer first);
 *   per row GM -> UB -> the token owner's window at (token, k), a full
 *   pipe barrier, then a 32 B status of 1.0s at (token, k); then the
 *   rank's tokens split over the cores: per token wait for its K statuses,
 *   clear them, and sum its K rows times their weights in f32.
 *
 * Decisions: one call on fresh windows, so the chip's dataState halves are
 * not modelled; a receiver's poll (DataCopy of its statuses and a vector
 * Sum until it reads the target) is one blocking wait per status word.
 * Device code: device.h only.
 */
#include "ll.h"

#include <string.h>

/* Flag ids: MTE2_S 0, MTE3_S 0, MTE3_MTE2 / MTE2_V / V_S / S_MTE3 b (row
 * buffer b), MTE2_MTE3 b, V_MTE3 0 (status clear, output row), MTE3_V 0,
 * V_MTE2 b (the sum's row buffers), V_S 7 (ll_count_passes). */

typedef struct lls {
    const ll_args *a;
    int me, b, B;
    local_t tbuf;
    uint32_t sb, se;          /* this core's receive slots [sb, se) of W * L */
    local_t rs;               /* their statuses, read after the wait */
} lls;

static gm_t dwin_slot(const ll_args *a, int rank, int src, int le) {
    uint64_t slot = (uint64_t)src * (uint64_t)a->local_experts + (uint64_t)le;
    return gm_add(gm_on_rank(a->dwin, rank), (int64_t)(slot * (uint64_t)a->tokens * a->win_row));
}

static gm_t dstate(const ll_args *a, int rank, uint32_t idx) {
    return gm_add(gm_on_rank(a->dstate, rank), (int64_t)idx * LL_STATE_BYTES);
}

static gm_t cwin(const ll_args *a, int rank, uint64_t slot) {
    return gm_add(gm_on_rank(a->cwin, rank), (int64_t)(slot * a->cwin_row));
}

static gm_t cstate(const ll_args *a, int rank, uint64_t slot) {
    return gm_add(gm_on_rank(a->cstate, rank), (int64_t)(slot * LL_STATE_BYTES));
}

/* AlltoAllDispatch: this core's slots into the experts' windows. */
static void send_rows(lls *c, ll_ub u) {
    const ll_args *a = c->a;
    int K = a->topk, L = a->local_experts, H = a->hidden;
    uint32_t TK = (uint32_t)a->tokens * (uint32_t)K, begin, end;
    uint32_t rowb = a->row_bytes > a->move_bytes ? a->row_bytes : a->move_bytes;
    local_t ids = ll_take(&u, (uint64_t)TK * 4), hint = ll_take(&u, (uint64_t)TK * 4);
    local_t work = ll_take(&u, (uint64_t)TK * 4);
    local_t xin[2] = {ll_take(&u, rowb), ll_take(&u, rowb)};
    local_t q[2] = {ll_take(&u, a->move_bytes), ll_take(&u, a->move_bytes)};
    ll_split(TK, (uint32_t)c->b, (uint32_t)c->B, &begin, &end);
    CoreNote("slots", end - begin);
    DataCopyPadIn(ids, a->expert_ids[c->me], (uint64_t)TK * 4);
    if (end > begin)
        DataCopyPadIn(hint, gm_add(a->slot_count[c->me], (int64_t)begin * 4),
                      (uint64_t)(end - begin) * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    int bb = 0;
    for (uint32_t i = begin; i < end; i++) {
        int t = (int)(i / (uint32_t)K), k = (int)(i % (uint32_t)K);
        int32_t e = UbGet32(ids, i * 4u);
        if (e < 0) continue;   /* a dropped slot goes nowhere */
        if (t > 0 && i > 0) ll_count_passes(work, i);
        int32_t cnt = UbGet32(hint, (i - begin) * 4u);
        gm_t to = gm_add(dwin_slot(a, e / L, c->me, e % L), (int64_t)cnt * a->win_row);
        WaitFlag(MTE3_MTE2, bb);
        DataCopyPadIn(xin[bb], gm_add(a->x[c->me], (int64_t)t * a->row_bytes), a->row_bytes);
        SetFlag(MTE2_V, bb);
        WaitFlag(MTE2_V, bb);
        local_t send = xin[bb];
        if (a->dtype == LL_INT8) {
            VecQuantInt8(q[bb], xin[bb], DT_BF16, (uint32_t)H, (uint32_t)H);
            send = q[bb];
        }
        /* FillTriple: behind the scale block, once the vector unit is done */
        SetFlag(V_S, bb);
        WaitFlag(V_S, bb);
        UbSet32(send, a->info_at, c->me);
        UbSet32(send, a->info_at + 4, t);
        UbSet32(send, a->info_at + 8, k);
        SetFlag(S_MTE3, bb);
        WaitFlag(S_MTE3, bb);
        DataCopyPadOut(to, send, a->move_bytes);
        SetFlag(MTE3_MTE2, bb);
        bb ^= 1;
    }
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
}

/* SetStatus: per expert of this core, this rank's row count and flag. */
static void set_status(lls *c, ll_ub u) {
    const ll_args *a = c->a;
    int W = a->num_ranks, L = a->local_experts;
    uint32_t TK = (uint32_t)a->tokens * (uint32_t)a->topk, eb, ee;
    ll_split((uint32_t)a->experts, (uint32_t)c->b, (uint32_t)c->B, &eb, &ee);
    uint32_t n = ee - eb;
    local_t st = ll_take(&u, (uint64_t)(n ? n : 1) * LL_STATE_BYTES);
    local_t cnt = ll_take(&u, (uint64_t)(n ? n : 1) * 4);
    local_t work = ll_take(&u, (uint64_t)TK * 4);
    if (n) {
        DataCopyPadIn(cnt, gm_add(a->expert_count[c->me], (int64_t)eb * 4), (uint64_t)n * 4);
        VecDup(st, DT_FLOAT, 1.0, n * (LL_STATE_BYTES / 4));
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        SetFlag(V_S, 0);
        WaitFlag(V_S, 0);
        for (uint32_t j = 0; j < n; j++) {
            ll_count_passes(work, TK);
            UbSet32(st, j * LL_STATE_BYTES + 4, UbGet32(cnt, j * 4u));
        }
    }
    PipeBarrier(PIPE_ALL);
    SyncAll();   /* every row of this rank has landed before any status leaves */
    for (uint32_t j = 0; j < n; j++) {
        int e = (int)(eb + j);
        DataCopy(dstate(a, e / L, (uint32_t)((e % L) * W + c->me)),
                 local_add(st, j * LL_STATE_BYTES), LL_STATE_BYTES);
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* WaitDispatch: this core's (local expert, source) statuses, cleared; its
 * row count to the workspace. */
static void wait_dispatch(lls *c, ll_ub *u) {
    const ll_args *a = c->a;
    uint32_t n = c->se - c->sb;
    c->rs = ll_take(u, (uint64_t)(n ? n : 1) * LL_STATE_BYTES);
    local_t clean = ll_take(u, (uint64_t)(n ? n : 1) * LL_STATE_BYTES);
    local_t wsb = ll_take(u, LL_WS_BLOCK);
    if (n) {
        if (a->inject != 1)   /* no-status-wait: copy whatever the slots hold now */
            for (uint32_t j = 0; j < n; j++)
                WaitGM32(dstate(a, c->me, c->sb + j), COND_EQ, LL_STATUS_BITS);
        DataCopy(c->rs, dstate(a, c->me, c->sb), (uint64_t)n * LL_STATE_BYTES);
        VecDup(clean, DT_INT32, 0, n * (LL_STATE_BYTES / 4));
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        int32_t sum = 0;
        for (uint32_t j = 0; j < n; j++) sum += UbGet32(c->rs, j * LL_STATE_BYTES + 4);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(dstate(a, c->me, c->sb), clean, (uint64_t)n * LL_STATE_BYTES);
        UbSet32(wsb, 0, sum);
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopy(gm_add(a->ws[c->me], (int64_t)c->b * LL_WS_BLOCK), wsb, LL_WS_BLOCK);
    }
    PipeBarrier(PIPE_ALL);
    SyncAll();
}

/* LocalWindowCopy: this core's slots' rows into expand_x. */
static void window_copy(lls *c, ll_ub u) {
    const ll_args *a = c->a;
    int W = a->num_ranks;
    uint32_t n = c->se - c->sb;
    if (!n) return;
    local_t pre = ll_take(&u, (uint64_t)(c->b ? c->b : 1) * LL_WS_BLOCK);
    local_t outc = ll_take(&u, (uint64_t)n * 4);
    local_t buf[2] = {ll_take(&u, a->move_bytes), ll_take(&u, a->move_bytes)};
    int32_t begin = 0;
    if (c->b) {   /* GetCumSum: the rows of the cores before this one */
        DataCopy(pre, a->ws[c->me], (uint64_t)c->b * LL_WS_BLOCK);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        for (int j = 0; j < c->b; j++) begin += UbGet32(pre, (uint32_t)j * LL_WS_BLOCK);
    }
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    int bb = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t idx = c->sb + j;
        int le = (int)(idx / (uint32_t)W), src = (int)(idx % (uint32_t)W);
        int32_t cnt = UbGet32(c->rs, j * LL_STATE_BYTES + 4);
        UbSet32(outc, j * 4u, begin + cnt);
        gm_t w = dwin_slot(a, c->me, src, le);
        for (int32_t r = 0; r < cnt; r++) {
            int64_t row = (int64_t)begin + r;
            WaitFlag(MTE3_MTE2, bb);
            DataCopyPadIn(buf[bb], gm_add(w, (int64_t)r * a->win_row), a->move_bytes);
            SetFlag(MTE2_MTE3, bb);
            WaitFlag(MTE2_MTE3, bb);
            DataCopyPadOut(gm_add(a->expand_idx[c->me], row * LL_IDX_INFO * 4),
                           local_add(buf[bb], a->info_at), LL_IDX_INFO * 4);
            if (a->dtype == LL_INT8)
                DataCopyPadOut(gm_add(a->dynamic_scales[c->me], row * 4),
                               local_add(buf[bb], a->scale_at), 4);
            DataCopyPadOut(gm_add(a->expand_x[c->me], row * (int64_t)a->xrow_bytes), buf[bb],
                           a->xrow_bytes);
            SetFlag(MTE3_MTE2, bb);
            bb ^= 1;
        }
        begin += cnt;
    }
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
    DataCopyPadOut(gm_add(a->ep_recv_count[c->me], (int64_t)c->sb * 4), outc, (uint64_t)n * 4);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

/* UpdataTokenNumsOut: the last receiving core, expertTokenNums as the
 * running total (expertTokenNumsType 0) once every core wrote its counts. */
static void token_nums(lls *c) {
    const ll_args *a = c->a;
    int W = a->num_ranks, L = a->local_experts;
    SyncAll();
    int last = (W * L < c->B ? W * L : c->B) - 1;
    if (c->b != last) return;
    for (int le = 0; le < L; le++) {
        int32_t v = GetValue32(gm_add(a->ep_recv_count[c->me], (int64_t)(le * W + W - 1) * 4));
        SetValue64(gm_add(a->expert_token_num[c->me], (int64_t)le * 8), v);
    }
}

static void dispatch(lls *c) {
    const ll_args *a = c->a;
    SetRole("Dispatch");
    send_rows(c, (ll_ub){c->tbuf, 0});
    set_status(c, (ll_ub){c->tbuf, 0});
    SetRole("DispatchRecv");
    ll_split((uint32_t)(a->num_ranks * a->local_experts), (uint32_t)c->b, (uint32_t)c->B, &c->sb,
             &c->se);
    ll_ub u = {c->tbuf, 0};
    wait_dispatch(c, &u);
    window_copy(c, u);
    token_nums(c);
    SyncAll();
}

/* SetWaitTpStatusAndDisPatch: this core's rows back to the token owners. */
static void combine_send(lls *c, ll_ub u) {
    const ll_args *a = c->a;
    int W = a->num_ranks, L = a->local_experts, K = a->topk;
    uint32_t self = (uint32_t)GetValue32(gm_add(a->ep_recv_count[c->me], (int64_t)(L * W - 1) * 4));
    uint32_t begin, end;
    ll_split(self, (uint32_t)c->b, (uint32_t)c->B, &begin, &end);
    uint32_t n = end - begin;
    CoreNote("rows", n);
    local_t tri = ll_take(&u, (uint64_t)(n ? n : 1) * LL_IDX_INFO * 4);
    local_t stu = ll_take(&u, LL_STATE_BYTES);
    local_t rb[2] = {ll_take(&u, a->row_bytes), ll_take(&u, a->row_bytes)};
    if (!n) return;
    DataCopyPadIn(tri, gm_add(a->expand_idx[c->me], (int64_t)begin * LL_IDX_INFO * 4),
                  (uint64_t)n * LL_IDX_INFO * 4);
    VecDup(stu, DT_FLOAT, 1.0, LL_STATE_BYTES / 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    SetFlag(V_MTE3, 0);
    WaitFlag(V_MTE3, 0);
    int bb = 0;
    for (uint32_t loop = 0; loop < n; loop++) {
        uint32_t j = (loop + (uint32_t)c->me) % n;   /* staggered start per rank */
        int s = UbGet32(tri, j * LL_IDX_INFO * 4u), t = UbGet32(tri, j * LL_IDX_INFO * 4u + 4);
        int k = UbGet32(tri, j * LL_IDX_INFO * 4u + 8);
        uint64_t slot = (uint64_t)t * (uint64_t)K + (uint64_t)k;
        DataCopyPadIn(rb[bb], gm_add(a->expert_out[c->me], (int64_t)(begin + j) * a->row_bytes),
                      a->row_bytes);
        SetFlag(MTE2_MTE3, bb);
        WaitFlag(MTE2_MTE3, bb);
        if (a->inject == 2)   /* status-first: the status ahead of its row */
            DataCopy(cstate(a, s, slot), stu, LL_STATE_BYTES);
        DataCopyPadOut(cwin(a, s, slot), rb[bb], a->row_bytes);
        PipeBarrier(PIPE_ALL);
        if (a->inject != 2) DataCopy(cstate(a, s, slot), stu, LL_STATE_BYTES);
        bb ^= 1;
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

static float ub_float(local_t l, uint32_t off) {
    int32_t bits = UbGet32(l, off);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* LocalWindowCopy of the combine: this core's tokens, waited and summed. */
static void combine_sum(lls *c, ll_ub u) {
    const ll_args *a = c->a;
    int K = a->topk;
    uint32_t H = (uint32_t)a->hidden, TK = (uint32_t)a->tokens * (uint32_t)K, tb, te;
    ll_split((uint32_t)a->tokens, (uint32_t)c->b, (uint32_t)c->B, &tb, &te);
    if (tb == te) return;
    local_t wts = ll_take(&u, (uint64_t)TK * 4), ids = ll_take(&u, (uint64_t)TK * 4);
    local_t zero = ll_take(&u, (uint64_t)K * LL_STATE_BYTES);
    local_t rb[2] = {ll_take(&u, a->row_bytes), ll_take(&u, a->row_bytes)};
    local_t f32 = ll_take(&u, (uint64_t)H * 4), sum = ll_take(&u, (uint64_t)H * 4);
    local_t outb = ll_take(&u, a->row_bytes);
    DataCopyPadIn(wts, a->topk_weights[c->me], (uint64_t)TK * 4);
    DataCopyPadIn(ids, a->expert_ids[c->me], (uint64_t)TK * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    SetFlag(V_MTE2, 0);
    SetFlag(V_MTE2, 1);
    SetFlag(MTE3_V, 0);
    int bb = 0;
    for (uint32_t t = tb; t < te; t++) {
        uint64_t first = (uint64_t)t * (uint64_t)K;
        for (int k = 0; k < K; k++)   /* WaitDispatch */
            if (UbGet32(ids, (uint32_t)(first + (uint64_t)k) * 4u) >= 0)
                WaitGM32(cstate(a, c->me, first + (uint64_t)k), COND_EQ, LL_STATUS_BITS);
        WaitFlag(MTE3_V, 0);
        VecDup(zero, DT_FLOAT, 0.0, (uint32_t)K * (LL_STATE_BYTES / 4));
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(cstate(a, c->me, first), zero, (uint64_t)K * LL_STATE_BYTES);
        VecDup(sum, DT_FLOAT, 0.0, H);
        for (int k = 0; k < K; k++) {
            uint32_t slot = (uint32_t)(first + (uint64_t)k) * 4u;
            if (UbGet32(ids, slot) < 0) continue;   /* a dropped slot adds nothing */
            float w = ub_float(wts, slot);
            WaitFlag(V_MTE2, bb);
            DataCopyPadIn(rb[bb], cwin(a, c->me, first + (uint64_t)k), a->row_bytes);
            SetFlag(MTE2_V, bb);
            WaitFlag(MTE2_V, bb);
            VecCast(f32, DT_FLOAT, rb[bb], DT_BF16, H);
            SetFlag(V_MTE2, bb);
            VecAxpy(sum, f32, DT_FLOAT, w, H);
            bb ^= 1;
        }
        VecCast(outb, DT_BF16, sum, DT_FLOAT, H);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopyPadOut(gm_add(a->out[c->me], (int64_t)t * a->row_bytes), outb, a->row_bytes);
        SetFlag(MTE3_V, 0);
    }
    WaitFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 1);
    WaitFlag(MTE3_V, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

void ll_single_kernel(const void *args) {
    const ll_args *a = args;
    lls c = {.a = a, .me = GetRank(), .b = GetBlockIdx(), .B = GetBlockNum()};
    c.tbuf = AllocUB(UB_BYTES);
    dispatch(&c);
    ll_expert_ffn(a, c.tbuf);
    SetRole("Combine");
    combine_send(&c, (ll_ub){c.tbuf, 0});
    SetRole("CombineSum");
    combine_sum(&c, (ll_ub){c.tbuf, 0});
    SyncAll();
}
