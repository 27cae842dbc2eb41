/*
 * cnl_send.c - combine-normal-layered's first two steps on the device
 * (cnl.h): AlltoAllDispatch, every row with its weight into the local
 * ranks' IPC slices, and SumToWindow, the per-server partial sums of each
 * token into windowOut. Device code: device.h only.
 */
#include "cnl.h"

#include <string.h>

/* Flag ids: MTE2_S 0, S_MTE2 0, MTE2_MTE3 0, S_MTE3 0, V_MTE3 0, MTE3_V 0,
 * MTE2_V b / V_MTE2 b (row buffer b). */

static float bits_float(int32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

void cnl_alltoall_dispatch(const cnl_args *a, local_t tbuf) {
    int me = GetRank(), W = a->num_ranks, L = a->local_experts, P = a->npus;
    int sv = me / P, lr = me % P;
    uint32_t d0, d1;
    combine_split_core((uint32_t)W, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(), &d0, &d1);
    uint64_t cnt_bytes = kit_align_up((uint64_t)a->experts * (uint64_t)W * 4, UB_ALIGN);
    local_t cnt = tbuf, row = local_add(tbuf, (uint32_t)cnt_bytes);
    local_t st = local_add(row, (uint32_t)kit_align_up(a->ipc_row, UB_ALIGN));
    if (d0 < d1) {
        DataCopyPadIn(cnt, a->send_count[me], (uint64_t)a->experts * (uint64_t)W * 4);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
    }
    int first = sv * P * L;   /* this server's first expert */
    for (uint32_t d = d0; d < d1; d++) {
        int t = (int)d % P;
        gm_t slice = cnl_slice(a, sv * P + t, (int)d / P);
        for (int le = 0; le < L; le++) {
            int e = me * L + le;
            int32_t pre = 0;   /* this rank's rows before (le, d): expandX's offset */
            if (le != 0 || d != 0)
                for (int i = 0; i <= le; i++)
                    for (int j = 0; j < W; j++) {
                        if (i == le && j >= (int)d) break;
                        pre += UbGet32(cnt, (uint32_t)((i + me * L) * W + j) * 4u);
                    }
            int32_t n = UbGet32(cnt, (uint32_t)(e * W + (int)d) * 4u);
            int32_t at = 0;    /* the rows of this server's earlier experts for d */
            for (int i = first; i < e; i++) at += UbGet32(cnt, (uint32_t)(i * W + (int)d) * 4u);
            for (int32_t k = 0; k < n; k++) {
                int32_t w = GetValue32(gm_add(a->scales[me], (int64_t)(pre + k) * 4));
                UbSet32(row, a->row_bytes, w);
                SetFlag(S_MTE2, 0);
                WaitFlag(S_MTE2, 0);
                DataCopy(row, gm_add(a->x[me], (int64_t)(pre + k) * a->row_bytes), a->row_bytes);
                SetFlag(MTE2_MTE3, 0);
                WaitFlag(MTE2_MTE3, 0);
                DataCopy(gm_add(slice, (int64_t)(at + k) * a->ipc_row), row, a->ipc_row);
                PipeBarrier(PIPE_ALL);
            }
        }
        PipeBarrier(PIPE_ALL);
        UbSet64(st, 0, CNL_FLAG_VALUE);
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopy(cnl_flag(a, sv * P + t, ((int)d / P) * P + lr), st, CNL_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
    }
    SyncAll();
}

void cnl_sum_to_window(const cnl_args *a, local_t tbuf) {
    int me = GetRank(), b = GetBlockIdx(), B = GetBlockNum(), N = a->nodes, P = a->npus;
    int PL = P * a->local_experts;
    uint32_t H = (uint32_t)a->hidden;
    local_t offs = tbuf;
    local_t rows[2], f32, sum, outb, zero;
    rows[0] = local_add(offs, (uint32_t)kit_align_up((uint64_t)PL * 4, UB_ALIGN));
    rows[1] = local_add(rows[0], (uint32_t)kit_align_up(a->ipc_row, UB_ALIGN));
    f32 = local_add(rows[1], (uint32_t)kit_align_up(a->ipc_row, UB_ALIGN));
    sum = local_add(f32, H * 4);
    outb = local_add(sum, H * 4);
    zero = local_add(outb, (uint32_t)kit_align_up(a->row_bytes, UB_ALIGN));
    if (b < N) {   /* the P local ranks' slices for server b are full */
        for (int i = 0; i < P; i++)
            if (a->inject != 2) WaitGM64(cnl_flag(a, me, b * P + i), COND_EQ, CNL_FLAG_VALUE);
        VecDup(zero, DT_INT32, 0, CNL_FLAG_BYTES / 4);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        for (int i = 0; i < P; i++) DataCopy(cnl_flag(a, me, b * P + i), zero, CNL_FLAG_BYTES);
        PipeBarrier(PIPE_ALL);
    }
    SyncAll();
    int cps = B / N;
    if (b >= cps * N) {
        SyncAll();
        return;
    }
    int srv = b % N;
    uint32_t t0, t1;
    combine_split_core((uint32_t)a->tokens, (uint32_t)(b / N), (uint32_t)cps, &t0, &t1);
    gm_t table = gm_add(a->offset_inner[me], (int64_t)srv * a->tokens * PL * 4);
    gm_t slice = cnl_slice(a, me, srv), out = cnl_block(a->win_out, a, me, srv);
    SetFlag(V_MTE2, 0);
    SetFlag(V_MTE2, 1);
    SetFlag(MTE3_V, 0);
    int bb = 0;
    for (uint32_t t = t0; t < t1; t++) {
        VecDup(sum, DT_FLOAT, 0.0, H);
        DataCopyPadIn(offs, gm_add(table, (int64_t)t * PL * 4), (uint64_t)PL * 4);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        int any = 0;
        for (int x = 0; x < PL; x++) {
            int32_t o = UbGet32(offs, (uint32_t)x * 4u);
            if (o < 0) continue;
            any = 1;
            WaitFlag(V_MTE2, bb);
            DataCopy(rows[bb], gm_add(slice, (int64_t)o * a->ipc_row), a->ipc_row);
            SetFlag(MTE2_S, 0);
            WaitFlag(MTE2_S, 0);
            float w = bits_float(UbGet32(rows[bb], a->row_bytes));
            SetFlag(MTE2_V, bb);
            WaitFlag(MTE2_V, bb);
            VecCast(f32, DT_FLOAT, rows[bb], DT_BF16, H);
            SetFlag(V_MTE2, bb);
            VecAxpy(sum, f32, DT_FLOAT, w, H);
            bb ^= 1;
        }
        if (!any) continue;
        WaitFlag(MTE3_V, 0);
        VecCast(outb, DT_BF16, sum, DT_FLOAT, H);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(gm_add(out, (int64_t)t * a->row_bytes), outb, a->row_bytes);
        SetFlag(MTE3_V, 0);
    }
    WaitFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 1);
    WaitFlag(MTE3_V, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    SyncAll();
}
