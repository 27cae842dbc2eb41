/*
 * dispatch_normal_a2l_out.c - the second half of dispatch-normal at
 * --nodes 2 (DispatchNormalA2, sgl-kernel-npu csrc/deepep/ops2/op_kernel/
 * a2/cam_moe_distribute_dispatch_a2_layered.h at 3a90dfa1): the 8-rank
 * IPC barrier, Ipc2Out and CleanUp.
 *
 * After WaitWindow every rank's windowIn holds, in server block j, the
 * rows its same-numbered rank on server j sent to this server (block own
 * is its own, from Input2Win). Ipc2Out on rank r walks every source rank s
 * and every local expert e of r: epRankTokenCnt[e][s] rows, split over all
 * the cores; per row two scalar GM reads (srcOffsetRankTokenIdx,
 * dstOffsetRankTokenIdx), the token struct from windowIn block s / P of
 * the local rank with s's local index (an HCCS read unless that is r)
 * into UB, SyncFunc<MTE2_MTE3>, the row to expandX, a scalar scan of the
 * K ids for e, the weight through a full pipe barrier to expandScales,
 * and SyncFunc<MTE3_MTE2>: nothing of one row overlaps the next.
 * A2 writes no expandIdx: the combine reads what it needs from its own
 * tables.
 * Device code: device.h only.
 */
#include "dispatch_normal.h"

/* Flag ids: MTE2_MTE3 0, MTE2_S 0, MTE3_S 0, MTE3_MTE2 0, S_MTE3 0. */

/* SetIpcFlag then WaitIpcFlag: core i (< P) stores magic * 2 + step in
 * local rank i's IPC area, slot of this rank, then waits until local rank
 * i's store into this rank's slot i reaches it (MergeMagicWithValue).
 * Nothing orders a rank's poll of step 1 before its peer's DataCopy of
 * step 2 into the same slot: `--check races` reports that pair ("read by S
 * not ordered before write by MTE3") on every run. A2 relies on the flags
 * growing (the wait is >=), so on the chip it is harmless. */
void dispatch_normal_a2l_ipc_barrier(const dispatch_normal_args *a, const dnl_core *c,
                                     int step) {
    int me = GetRank(), b = GetBlockIdx(), P = a->npus;
    if (b >= P) return;
    int64_t value = c->magic * 2 + step;
    gm_t set = gm_add(gm_on_rank(a->ipc_base, me / P * P + b),
                      (int64_t)(me % P) * DNL_IPC_FLAG_BYTES);
    UbSet64(c->tbuf, 0, value);
    SetFlag(S_MTE3, 0);
    WaitFlag(S_MTE3, 0);
    DataCopy(set, c->tbuf, DNL_IPC_FLAG_BYTES);
    PipeBarrier(PIPE_ALL);
    WaitGM64(gm_add(gm_on_rank(a->ipc_base, me), (int64_t)b * DNL_IPC_FLAG_BYTES), COND_GE,
             value);
}

/* One received row: its offsets, the struct in, the row out, the weight. */
static void copy_row(const dispatch_normal_args *a, const dnl_core *c, gm_t src_block,
                     int64_t table_at, int expert) {
    int me = GetRank();
    local_t row = local_add(c->tbuf, DNL_TBUF_TEMP_OFFSET);
    ScalarCycles(8);   /* the loop and the two table addresses */
    int32_t src = GetValue32(gm_add(a->src_offset[me], table_at * 4));
    int32_t dst = GetValue32(gm_add(a->dst_offset[me], table_at * 4));
    DataCopyPadIn(row, gm_add(src_block, (int64_t)src * a->struct_bytes), a->struct_bytes);
    SetFlag(MTE2_MTE3, 0);
    WaitFlag(MTE2_MTE3, 0);
    DataCopyPadOut(gm_add(a->expand_x[me], (int64_t)dst * a->row_bytes), row, a->row_bytes);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    int index = -1;
    for (int j = 0; j < a->topk; j++)
        if (UbGet32(row, a->exp_offset + (uint32_t)j * 4u) == expert) index = j;
    if (index < 0) return;   /* A2 skips the weight and the MTE3_MTE2 sync too */
    uint32_t w_at = a->weight_offset + (uint32_t)index * 4u;
    (void)UbGet32(row, w_at);   /* weightVal */
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    UbSet32(c->weight_ub, 0, UbGet32(row, w_at));
    PipeBarrier(PIPE_ALL);
    DataCopyPadOut(gm_add(a->expand_scales[me], (int64_t)dst * 4), c->weight_ub, 4);
    PipeBarrier(PIPE_ALL);
    SetFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 0);
}

void dispatch_normal_a2l_ipc2out(const dispatch_normal_args *a, const dnl_core *c) {
    int me = GetRank(), R = a->num_ranks, L = a->local_experts, P = a->npus;
    uint32_t b = (uint32_t)GetBlockIdx(), B = (uint32_t)GetBlockNum();
    int64_t rows = 0;
    for (int s = 0; s < R; s++) {
        gm_t block = gm_add(gm_on_rank(a->win_in_base, me / P * P + s % P),
                            (int64_t)((uint64_t)(s / P) * a->block_bytes) + DNL_TOKEN_COUNT_SIZE);
        for (int le = 0; le < L; le++) {
            int e = me * L + le;
            int32_t n = GetValue32(gm_add(a->ep_rank_token_cnt[me], ((int64_t)e * R + s) * 4));
            uint32_t begin, end;
            combine_split_core((uint32_t)n, b, B, &begin, &end);
            if (begin >= (uint32_t)n) continue;
            int64_t table = ((int64_t)le * R + s) * a->tokens;
            for (uint32_t i = begin; i < end; i++) copy_row(a, c, block, table + i, e);
            rows += end - begin;
        }
    }
    CoreNote("rows", rows);
}

/* CleanUp, on core 0: zeros over the statuses of windowIn. */
void dispatch_normal_a2l_cleanup(const dispatch_normal_args *a, const dnl_core *c) {
    local_t zeros = local_add(c->tbuf, DNL_TBUF_TEMP_OFFSET);
    VecDup(zeros, DT_INT32, 0, a->clean_bytes / 4u);
    PipeBarrier(PIPE_ALL);
    PipeBarrier(PIPE_ALL);
    DataCopy(gm_add(gm_on_rank(a->win_in_base, GetRank()), (int64_t)dnl_status_at(a)), zeros,
             a->clean_bytes);
}
