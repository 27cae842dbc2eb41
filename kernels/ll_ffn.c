/*
 * ll_ffn.c - device steps both low-latency kernels share: the emulated
 * expert FFN between the dispatch and the combine, and the vector passes of
 * the chip's per-slot count (CalTokenSendExpertCnt).
 *
 * The FFN is not an operator of the measured rows: every received row of
 * expand_x (expert-major, epRecvCount says whose), dequantized with its
 * row's scale (or read as bf16), times the expert's scale (fullmesh's,
 * fm_expert_scale), rounded to bf16 into expert_out, which the combine
 * sends back. This core's even share of the rows. Device code: device.h
 * only.
 */
#include "ll.h"

/* Flag ids: MTE2_S 0 (epRecvCount), MTE2_V / V_MTE2 0 (the row), V_MTE3 /
 * MTE3_V 0 (the output row), V_S 7 (the count passes). */

void ll_count_passes(local_t work, uint32_t n) {
    if (n == 0) return;
    /* Duplicate the expert id, Sub, Abs, Mins(1), ReduceSum: four passes over
     * n int32 slots and the reduction's one over n floats */
    VecDup(work, DT_INT32, 0, n);
    VecAdd(work, work, work, DT_INT32, n);
    VecAdd(work, work, work, DT_INT32, n);
    VecAdd(work, work, work, DT_INT32, n);
    VecCast(work, DT_FLOAT, work, DT_INT32, n);
    SetFlag(V_S, 7);
    WaitFlag(V_S, 7);
}

void ll_expert_ffn(const ll_args *a, local_t tbuf) {
    int me = GetRank(), W = a->num_ranks, L = a->local_experts, H = a->hidden;
    ll_ub u = {tbuf, 0};
    local_t epc = ll_take(&u, (uint64_t)L * (uint64_t)W * 4);
    local_t row = ll_take(&u, (uint64_t)a->xrow_bytes + UB_ALIGN);
    local_t acc = ll_take(&u, (uint64_t)H * 4);
    local_t outb = ll_take(&u, a->row_bytes);
    SetRole("ExpertFFN");
    DataCopyPadIn(epc, a->ep_recv_count[me], (uint64_t)L * (uint64_t)W * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    uint32_t total = (uint32_t)UbGet32(epc, (uint32_t)(L * W - 1) * 4u), begin, end;
    ll_split(total, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(), &begin, &end);
    int le = 0;
    SetFlag(V_MTE2, 0);
    SetFlag(MTE3_V, 0);
    for (uint32_t r = begin; r < end; r++) {
        while ((int64_t)r >= UbGet32(epc, (uint32_t)(le * W + W - 1) * 4u)) le++;
        float scale = fm_expert_scale(me * L + le);
        WaitFlag(V_MTE2, 0);
        if (a->dtype == LL_INT8) {
            DataCopy(row, gm_add(a->expand_x[me], (int64_t)r * a->xrow_bytes), a->xrow_bytes);
            DataCopyPadIn(local_add(row, (uint32_t)a->hidden),
                          gm_add(a->dynamic_scales[me], (int64_t)r * 4), 4);
            SetFlag(MTE2_V, 0);
            WaitFlag(MTE2_V, 0);
            VecDequantInt8(acc, row, scale, (uint32_t)H, (uint32_t)H);
        } else {
            DataCopyPadIn(row, gm_add(a->expand_x[me], (int64_t)r * a->xrow_bytes), a->xrow_bytes);
            SetFlag(MTE2_V, 0);
            WaitFlag(MTE2_V, 0);
            VecDup(acc, DT_FLOAT, 0.0, (uint32_t)H);
            VecAxpy(acc, row, DT_BF16, scale, (uint32_t)H);
        }
        SetFlag(V_MTE2, 0);
        WaitFlag(MTE3_V, 0);
        VecCast(outb, DT_BF16, acc, DT_FLOAT, (uint32_t)H);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopyPadOut(gm_add(a->expert_out[me], (int64_t)r * a->row_bytes), outb, a->row_bytes);
        SetFlag(MTE3_V, 0);
    }
    WaitFlag(V_MTE2, 0);
    WaitFlag(MTE3_V, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    SyncAll();   /* the combine of any core sends rows any core computed */
}
