/*
 * cnl_server.c - combine-normal-layered's last steps on the device (cnl.h):
 * AlltoAllServerDispatch (the partial sums to the other server in one
 * BatchWrite, this server's block copied locally), SetStatus (the state
 * after them, one more BatchWrite), WaitDispatch and SumToServer, and the
 * kernel's entry. Device code: device.h only.
 */
#include "cnl.h"

/* Flag ids: S_MTE3 0, MTE3_S 0, MTE3_MTE2 b / MTE2_MTE3 b (row buffer b),
 * MTE2_V 0, V_MTE2 0, V_MTE3 0, MTE3_V 0. */

/* One BatchWrite item (localBuf, remoteBuf, count, dataType, remoteRankId)
 * into slot i of ub. */
static void item(local_t ub, uint32_t i, gm_t src, gm_t dst, uint64_t count, int dtype, int rank) {
    uint32_t at = i * (uint32_t)sizeof(batch_write_task);
    UbSet64(ub, at, (int64_t)src.a);
    UbSet64(ub, at + 8, (int64_t)dst.a);
    UbSet64(ub, at + 16, (int64_t)count);
    UbSet32(ub, at + 24, dtype);
    UbSet32(ub, at + 28, rank);
}

void cnl_server_dispatch(const cnl_args *a, local_t tbuf) {
    int me = GetRank(), b = GetBlockIdx(), N = a->nodes, P = a->npus;
    int sv = me / P, lr = me % P;
    uint32_t ts = (uint32_t)sizeof(batch_write_task);
    local_t items = tbuf;
    local_t rows[2];
    rows[0] = local_add(tbuf, (uint32_t)kit_align_up((uint64_t)N * ts, UB_ALIGN));
    rows[1] = local_add(rows[0], (uint32_t)kit_align_up(a->row_bytes, UB_ALIGN));
    if (b < N) {   /* this core's server: its whole block, none for this server */
        int target = lr + b * P;
        item(items, 0, cnl_block(a->win_out, a, me, b), cnl_block(a->win_in, a, target, sv),
             b == sv ? 0 : (uint64_t)a->tokens * (uint64_t)a->hidden, DT_FP16, target);
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopy(gm_add(a->tasks[me], (int64_t)b * ts), items, ts);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
    }
    SyncAll();
    if (b == 0) BatchWrite(a->tasks[me], N);
    if (b == sv) {   /* this server's block: windowOut -> windowIn through UB */
        gm_t src = cnl_block(a->win_out, a, me, sv), dst = cnl_block(a->win_in, a, me, sv);
        SetFlag(MTE3_MTE2, 0);
        SetFlag(MTE3_MTE2, 1);
        for (int t = 0; t < a->tokens; t++) {
            int k = t & 1;
            WaitFlag(MTE3_MTE2, k);
            DataCopy(rows[k], gm_add(src, (int64_t)t * a->row_bytes), a->row_bytes);
            SetFlag(MTE2_MTE3, k);
            WaitFlag(MTE2_MTE3, k);
            DataCopy(gm_add(dst, (int64_t)t * a->row_bytes), rows[k], a->row_bytes);
            SetFlag(MTE3_MTE2, k);
        }
        WaitFlag(MTE3_MTE2, 0);
        WaitFlag(MTE3_MTE2, 1);
    }
    /* SetStatus: core 0, the state to every server's same-numbered rank */
    if (b == 0) {
        for (int s = 0; s < N; s++) {
            int target = lr + s * P;
            item(items, (uint32_t)s, a->state_src[me], cnl_state_at(a, target, sv), 8, DT_INT32, target);
        }
        SetFlag(S_MTE3, 0);
        WaitFlag(S_MTE3, 0);
        DataCopy(gm_add(a->tasks[me], (int64_t)N * ts), items, (uint64_t)N * ts);
        SetValue32(cnl_state_at(a, me, sv), CNL_STATE_VALUE);
        SetFlag(MTE3_S, 0);
        WaitFlag(MTE3_S, 0);
        BatchWrite(gm_add(a->tasks[me], (int64_t)N * ts), N);
    }
    SyncAll();
}

void cnl_sum_to_server(const cnl_args *a, local_t tbuf) {
    int me = GetRank(), b = GetBlockIdx(), B = GetBlockNum(), N = a->nodes;
    uint32_t H = (uint32_t)a->hidden;
    if (b < N && a->inject != 1)   /* WaitDispatch (no-status-wait skips it) */
        WaitGM32(cnl_state_at(a, me, b), COND_EQ, CNL_STATE_VALUE);
    PipeBarrier(PIPE_ALL);
    SyncAll();
    int cores = B < CNL_SUM_CORES ? B : CNL_SUM_CORES;
    if (b >= cores) {
        SyncAll();
        return;
    }
    uint32_t t0, t1;
    combine_split_core((uint32_t)a->tokens, (uint32_t)b, (uint32_t)cores, &t0, &t1);
    local_t row = tbuf, f32 = local_add(tbuf, (uint32_t)kit_align_up(a->row_bytes, UB_ALIGN));
    local_t sum = local_add(f32, H * 4), outb = local_add(sum, H * 4);
    if (t0) (void)GetValue32(gm_add(a->count_outer[me], (int64_t)(t0 - 1) * 4));   /* Preload */
    uint32_t count = t0;
    SetFlag(MTE3_V, 0);
    for (uint32_t t = t0; t < t1; t++) {
        int any = 0;
        WaitFlag(MTE3_V, 0);
        VecDup(sum, DT_FLOAT, 0.0, H);
        for (int j = 0; j < N; j++) {
            if (GetValue32(gm_add(a->offset_outer[me], (int64_t)(t * (uint32_t)N + (uint32_t)j) * 4)) < 0)
                continue;
            any = 1;
            SetFlag(V_MTE2, 0);
            WaitFlag(V_MTE2, 0);
            DataCopy(row, gm_add(cnl_block(a->win_in, a, me, j), (int64_t)t * a->row_bytes),
                     a->row_bytes);
            SetFlag(MTE2_V, 0);
            WaitFlag(MTE2_V, 0);
            VecCast(f32, DT_FLOAT, row, DT_BF16, H);
            VecAdd(sum, sum, f32, DT_FLOAT, H);
        }
        if (!any) {
            SetFlag(MTE3_V, 0);
            continue;
        }
        VecCast(outb, DT_BF16, sum, DT_FLOAT, H);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopy(gm_add(a->out[me], (int64_t)count * a->row_bytes), outb, a->row_bytes);
        SetFlag(MTE3_V, 0);
        count++;
    }
    WaitFlag(MTE3_V, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    SyncAll();
}

void cnl_kernel(const void *args) {
    const cnl_args *a = args;
    local_t tbuf = AllocUB(UB_BYTES);
    SetRole("CombineIpc");
    cnl_alltoall_dispatch(a, tbuf);
    SetRole("CombineReduce");
    cnl_sum_to_window(a, tbuf);
    SetRole("CombineServer");
    cnl_server_dispatch(a, tbuf);
    SetRole("CombineSum");
    cnl_sum_to_server(a, tbuf);
}
