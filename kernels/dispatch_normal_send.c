/*
 * dispatch_normal_send.c - dispatch-normal's entry (Init and Process) and
 * its first step, InputToShare, as A2's CamMoeDispatchNormal runs them
 * (sgl-kernel-npu csrc/deepep/ops2/op_kernel/cam_moe_dispatch_normal.h at
 * 3a90dfa1), non-quantized BF16 path.
 *
 * Every core of a rank takes an even share (SplitCoreCal) of the rank's
 * T * K (token, k) slots. Per slot: the token row GM -> UB (DataCopyPad
 * into an xQueue buffer), FillTriple (SyncFunc<MTE3_S>, three scalar
 * stores of (rank, token, k) behind the row, SyncFunc<S_MTE3>), and the
 * row with its triple UB -> this rank's own share window at
 * (sendOffset[expert] + sendTokenIdx[slot]) * stride. The xQueue has
 * BUFFER_NUM = 2 buffers, so the next row's read overlaps this row's
 * write, but FillTriple's MTE3_S waits for every write issued so far:
 * one write in flight per core. Nothing crosses HCCS here; the owners read
 * the windows later (dispatch_normal_output.c).
 *
 * Decisions: Init's toggle of the per-core dataState word is kept (a GM
 * load and store per core) but the window half it selects is not: a run
 * is one call on fresh windows, as in combine-normal. A slot whose expert
 * is -1 (--routing drop:P) is skipped (A2's callers never pass one). The
 * ids come in chunks of DNORMAL_IDS_ROWS (one chunk at T1's shape).
 * Device code: device.h only.
 */
#include "dispatch_normal.h"

/* Flag ids: MTE2_S 0 (tables), MTE2_MTE3 0-1 (the xQueue's EnQue/DeQue),
 * MTE3_MTE2 0-1 (its FreeTensor/AllocTensor), MTE3_S / S_MTE3 0
 * (FillTriple). */

/* One slot: dstGT.SetGlobalBuffer, then the xQueue round of the non-quant
 * branch. b is the xQueue buffer. */
static void send_slot(const dispatch_normal_args *a, local_t buf, int b, int32_t slot,
                      int64_t window_row) {
    int me = GetRank();
    gm_t dst = gm_add(gm_on_rank(a->window_base, me), window_row * (int64_t)a->window_stride);
    ScalarCycles(8);   /* the address, SetGlobalBuffer, the loop */
    WaitFlag(MTE3_MTE2, b);                                        /* AllocTensor */
    DataCopyPadIn(buf, gm_add(a->x[me], (int64_t)(slot / a->topk) * a->row_bytes),
                  a->row_bytes);
    SetFlag(MTE2_MTE3, b);                                         /* EnQue / DeQue */
    WaitFlag(MTE2_MTE3, b);
    SetFlag(MTE3_S, 0);                                            /* FillTriple */
    WaitFlag(MTE3_S, 0);
    UbSet32(buf, a->idx_offset, me);
    UbSet32(buf, a->idx_offset + 4, slot / a->topk);
    UbSet32(buf, a->idx_offset + 8, slot % a->topk);
    SetFlag(S_MTE3, 0);
    WaitFlag(S_MTE3, 0);
    DataCopyPadOut(dst, buf, a->share_bytes);
    SetFlag(MTE3_MTE2, b);                                         /* FreeTensor */
}

void dispatch_normal_input_to_share(const dispatch_normal_args *a, const local_t xq[2]) {
    int me = GetRank();
    uint32_t E = (uint32_t)a->experts;
    local_t send_offset_ub = AllocUB(kit_align_up((uint64_t)E * 4, UB_ALIGN));
    local_t ids_ub = AllocUB(DNORMAL_IDS_ROWS * 4u);
    local_t idx_ub = AllocUB(DNORMAL_IDS_ROWS * 4u);
    DataCopyPadIn(send_offset_ub, a->send_offset[me], (uint64_t)E * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    uint32_t begin, end;
    combine_split_core((uint32_t)(a->tokens * a->topk), (uint32_t)GetBlockIdx(),
                       (uint32_t)GetBlockNum(), &begin, &end);
    CoreNote("slots", end - begin);
    if (begin == end) return;
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    int b = 0;
    for (uint32_t c0 = begin; c0 < end; c0 += DNORMAL_IDS_ROWS) {
        uint32_t n = end - c0 < DNORMAL_IDS_ROWS ? end - c0 : DNORMAL_IDS_ROWS;
        /* The next chunk overwrites ids the last one's rows no longer read:
         * the scalar unit has read them all. */
        DataCopyPadIn(ids_ub, gm_add(a->expert_ids[me], (int64_t)c0 * 4), (uint64_t)n * 4);
        DataCopyPadIn(idx_ub, gm_add(a->send_token_idx[me], (int64_t)c0 * 4), (uint64_t)n * 4);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        for (uint32_t i = 0; i < n; i++) {
            int32_t expert = UbGet32(ids_ub, i * 4u);
            if (expert < 0) continue;   /* a dropped slot: no row */
            int32_t cnt = UbGet32(idx_ub, i * 4u);
            int32_t off = UbGet32(send_offset_ub, (uint32_t)expert * 4u);
            send_slot(a, xq[b], b, (int32_t)(c0 + i), (int64_t)off + cnt);
            b ^= 1;
        }
    }
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
}

/* Init's dataState toggle: DataCacheCleanAndInvalid, a scalar load, the
 * flipped value stored, PipeBarrier<PIPE_ALL>. */
static void toggle_data_state(const dispatch_normal_args *a) {
    gm_t word = gm_add(a->data_state[GetRank()],
                       (int64_t)GetBlockIdx() * DNORMAL_DATA_STATE_STRIDE);
    int32_t state = GetValue32(word);
    SetValue32(word, state == 0 ? 1 : 0);
    PipeBarrier(PIPE_ALL);
}

void dispatch_normal_kernel(const void *args) {
    const dispatch_normal_args *a = args;
    local_t xq[2] = {AllocUB(a->share_ub_bytes), AllocUB(a->share_ub_bytes)};
    uint32_t table = (uint32_t)kit_align_up((uint64_t)a->experts * 4, UB_ALIGN);
    local_t recv_offset_ub = AllocUB(table), recv_count_ub = AllocUB(table);
    toggle_data_state(a);
    SetRole("DispatchSend");
    dispatch_normal_input_to_share(a, xq);
    SetRole("DispatchStatus");
    dispatch_normal_set_status(a);
    dispatch_normal_wait_status(a, recv_offset_ub, recv_count_ub);
    SetRole("DispatchOutput");
    dispatch_normal_share_to_output(a, xq, recv_offset_ub, recv_count_ub);
}
