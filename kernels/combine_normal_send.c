/*
 * combine_normal_send.c - combine-normal's entry and its send phase, as
 * CopyBufferToShareAndSetStatus of A2's CamMoeCombineNormal runs it
 * (sgl-kernel-npu csrc/deepep/ops2/op_kernel/cam_moe_combine_normal.h at
 * 3a90dfa1).
 *
 * Every AIV core of a rank takes an even share (SplitCoreCal) of the rows
 * this rank received in the dispatch (selfSendCnt_, the last element of
 * epRecvCount). Per row, from tokenSrcInfo's (rank s, token t, slot k):
 * DataCopyPad the row GM -> UB, DataCopyPad UB -> s's window at
 * (t * K + k) * stride (over HCCS unless s is this rank),
 * PipeBarrier<PIPE_ALL> so the row has landed, then a 32 B status of float
 * 1.0s into s's state slot (t * K + k). The barrier serialises every row of
 * a core: one core moves one row at a time, and the 48 cores of a rank
 * together fill the HCCS links.
 *
 * Decision: A2 toggles a magic word to alternate two window halves across
 * calls; a run here is one call on fresh windows, so the halves are not
 * modelled. Device code: device.h only.
 */
#include "combine.h"

/* Flag ids: MTE2_S 0 (tokenSrcInfo chunk), MTE2_MTE3 0-1 (row buffers,
 * the localCopyQueue's EnQue/DeQue), MTE3_S 0 (the last status has gone
 * before the sum phase). */

/* One row: the chip's CopyBufferToShare and SetStatusBySrcInfo. */
static void send_row(const combine_args *a, int64_t row, int s, int t, int k, local_t row_ub,
                     int b, local_t status_ub) {
    int64_t slot = (int64_t)t * a->topk + k;
    gm_t window = gm_add(gm_on_rank(a->window_base, s), slot * (int64_t)a->window_stride);
    gm_t state = gm_add(gm_on_rank(a->state_base, s), slot * COMBINE_NORMAL_STATE_BYTES);
    /* The two window addresses and the GlobalTensor set-ups. */
    ScalarCycles(8);
    DataCopyPadIn(row_ub, gm_add(a->x[GetRank()], row * (int64_t)a->row_bytes), a->row_bytes);
    SetFlag(MTE2_MTE3, b);
    WaitFlag(MTE2_MTE3, b);
    if (a->inject_status_first)   /* the bug the barrier prevents: status ahead of its row */
        DataCopy(state, status_ub, COMBINE_NORMAL_STATE_BYTES);
    DataCopyPadOut(window, row_ub, a->row_bytes);
    PipeBarrier(PIPE_ALL);
    if (!a->inject_status_first) DataCopy(state, status_ub, COMBINE_NORMAL_STATE_BYTES);
}

void combine_normal_send(const combine_args *a, const local_t row_ub[2]) {
    int me = GetRank();
    local_t status_ub = AllocUB(COMBINE_NORMAL_STATE_BYTES);
    local_t info_ub = AllocUB(kit_align_up((uint64_t)COMBINE_NORMAL_SRC_INFO_ROWS *
                                               COMBINE_NORMAL_SRC_INFO_LEN * 4, UB_ALIGN));
    VecDup(status_ub, DT_FLOAT, 1.0, COMBINE_NORMAL_STATE_BYTES / 4);
    int32_t self_send_cnt = GetValue32(
        gm_add(a->ep_recv_count[me], (int64_t)(a->num_experts - 1) * 4));
    PipeBarrier(PIPE_ALL);
    uint32_t begin, end;
    combine_split_core((uint32_t)self_send_cnt, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(),
                       &begin, &end);
    CoreNote("rows", end - begin);
    int b = 0;
    for (uint32_t c0 = begin; c0 < end; c0 += COMBINE_NORMAL_SRC_INFO_ROWS) {
        uint32_t n = end - c0 < COMBINE_NORMAL_SRC_INFO_ROWS ? end - c0 : COMBINE_NORMAL_SRC_INFO_ROWS;
        uint64_t info_bytes = (uint64_t)COMBINE_NORMAL_SRC_INFO_LEN * 4;
        DataCopyPadIn(info_ub, gm_add(a->token_src_info[me], (int64_t)(c0 * info_bytes)),
                      n * info_bytes);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        for (uint32_t i = 0; i < n; i++) {
            uint32_t at = i * COMBINE_NORMAL_SRC_INFO_LEN * 4u;
            int s = UbGet32(info_ub, at), t = UbGet32(info_ub, at + 4), k = UbGet32(info_ub, at + 8);
            send_row(a, (int64_t)(c0 + i), s, t, k, row_ub[b], b, status_ub);
            b ^= 1;
        }
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

void combine_normal_kernel(const void *args) {
    const combine_args *a = args;
    uint32_t row_bytes = (uint32_t)kit_align_up(a->row_bytes, UB_ALIGN);
    local_t row_ub[2] = {AllocUB(row_bytes), AllocUB(row_bytes)};
    SetRole("CombineSend");
    combine_normal_send(a, row_ub);
    SetRole("CombineSum");
    combine_normal_sum(a, row_ub);
}
