/*
 * dispatch_normal_output.c - dispatch-normal's last step, ShareToOutput of
 * A2's CamMoeDispatchNormal (sgl-kernel-npu csrc/deepep/ops2/op_kernel/
 * cam_moe_dispatch_normal.h at 3a90dfa1), non-quantized BF16 path.
 *
 * A core walks the status slots it waited for (i = local expert * R +
 * source rank s): recvCount[i - 1] .. recvCount[i] are the slot's rows in
 * expandX, recvOffset[i] is where they start in s's share window. Per row:
 * the row with its triple from s's window into an xQueue buffer (MTE2: the
 * HCCS read of the dispatch, unless s is this rank), then the triple to
 * expandIdx and the row to expandX (two MTE3 copies). The two xQueue
 * buffers let the next row's read overlap this row's writes; nothing else
 * orders the rows, so a core keeps a read and two writes in flight.
 * Device code: device.h only.
 */
#include "dispatch_normal.h"

/* Flag ids: MTE2_S 0 (recvOffset and recvCount, recvCountLocalSync),
 * MTE2_MTE3 0-1 (EnQue / DeQue), MTE3_MTE2 0-1 (FreeTensor / AllocTensor),
 * MTE3_S 0 (the last rows have landed when the core ends). */

/* One row: the source address, then the xQueue round. */
static void copy_row(const dispatch_normal_args *a, local_t buf, int b, gm_t src, int64_t out_row) {
    int me = GetRank();
    ScalarCycles(8);   /* srcTokenGT / dstTokenGT SetGlobalBuffer, the loop */
    WaitFlag(MTE3_MTE2, b);                                        /* AllocTensor */
    DataCopyPadIn(buf, src, a->share_bytes);
    SetFlag(MTE2_MTE3, b);                                         /* EnQue / DeQue */
    WaitFlag(MTE2_MTE3, b);
    DataCopyPadOut(gm_add(a->expand_idx[me], out_row * DNORMAL_IDX_LEN * 4),
                   local_add(buf, a->idx_offset), DNORMAL_IDX_LEN * 4);
    DataCopyPadOut(gm_add(a->expand_x[me], out_row * (int64_t)a->row_bytes), buf, a->row_bytes);
    SetFlag(MTE3_MTE2, b);                                         /* FreeTensor */
}

void dispatch_normal_share_to_output(const dispatch_normal_args *a, const local_t xq[2],
                                     local_t recv_offset_ub, local_t recv_count_ub) {
    int R = a->num_ranks;
    uint32_t begin, end;
    combine_split_core((uint32_t)a->experts, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(),
                       &begin, &end);
    if (begin == end) return;
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    int b = 0;
    int64_t rows = 0;
    for (uint32_t i = begin; i < end; i++) {
        int32_t pre = i == 0 ? 0 : UbGet32(recv_count_ub, (i - 1) * 4u);
        int32_t count = UbGet32(recv_count_ub, i * 4u) - pre;
        int32_t recv_offset = UbGet32(recv_offset_ub, i * 4u);
        gm_t start = gm_add(gm_on_rank(a->window_base, (int)(i % (uint32_t)R)),
                            (int64_t)recv_offset * a->window_stride);
        for (int32_t j = 0; j < count; j++) {
            copy_row(a, xq[b], b, gm_add(start, (int64_t)j * a->window_stride),
                     (int64_t)pre + j);
            b ^= 1;
        }
        rows += count;
    }
    CoreNote("rows", rows);
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}
