/*
 * dispatch_normal_status.c - dispatch-normal's handshake, SetStatus and
 * WaitStatus of A2's CamMoeDispatchNormal (sgl-kernel-npu
 * csrc/deepep/ops2/op_kernel/cam_moe_dispatch_normal.h at 3a90dfa1).
 *
 * The E experts are split over the cores (SplitCoreCal, Init's
 * startStatusId / statusNumPerCore). SetStatus: once SyncAll says every
 * core of this rank has written its rows into the rank's share window, a
 * core writes, per expert of its share, a 32 B status (float 1.0, then
 * zeros) into the state area of the expert's rank at slot (local expert *
 * R + this rank). WaitStatus: a core of the owner takes the same share of
 * its own L * R status slots, waits until all of them are set, clears them
 * (one DataCopy of zeros) and meets the other cores in SyncAll. recvOffset
 * and recvCount are loaded first, for ShareToOutput.
 *
 * Decisions, where npurr's device API differs from Ascend C:
 * - the chip polls its slots with one DataCopy and a ReduceSum of their
 *   first words until the sum is its slot count; npurr's spin-wait is one
 *   blocking wait per GM word, so the core waits on each slot's first word
 *   (as combine-normal's WaitBuffCopy does);
 * - the masked Duplicate that puts 1.0 in the first word of every status
 *   is a VecDup of zeros and one scalar store per status (at most 6 at
 *   T1's 256 experts over 48 cores).
 * Device code: device.h only.
 */
#include "dispatch_normal.h"

/* Flag ids: V_S 0 (the zeroed statuses before the 1.0 stores), V_MTE3 0
 * (the cleared slots), MTE3_S 0 (the statuses have gone). */

void dispatch_normal_set_status(const dispatch_normal_args *a) {
    int me = GetRank(), R = a->num_ranks, L = a->local_experts;
    uint32_t begin, end;
    combine_split_core((uint32_t)a->experts, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(),
                       &begin, &end);
    uint32_t n = end - begin;
    local_t status_ub = AllocUB(kit_align_up(n ? n : 1, 8) * DNORMAL_STATE_BYTES);
    if (n) {
        VecDup(status_ub, DT_INT32, 0, n * DNORMAL_STATE_BYTES / 4u);
        SetFlag(V_S, 0);
        WaitFlag(V_S, 0);
        for (uint32_t i = 0; i < n; i++)
            UbSet32(status_ub, i * DNORMAL_STATE_BYTES, DNORMAL_STATUS_BITS);
    }
    PipeBarrier(PIPE_ALL);
    SyncAll();   /* every core's rows are in this rank's window */
    for (uint32_t e = begin; e < end; e++) {
        int owner = (int)e / L;
        int64_t slot = (int64_t)(e % (uint32_t)L) * R + me;
        DataCopy(gm_add(gm_on_rank(a->state_base, owner), slot * DNORMAL_STATE_BYTES),
                 local_add(status_ub, (e - begin) * DNORMAL_STATE_BYTES), DNORMAL_STATE_BYTES);
    }
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
}

void dispatch_normal_wait_status(const dispatch_normal_args *a, local_t recv_offset_ub,
                                 local_t recv_count_ub) {
    int me = GetRank();
    uint32_t E = (uint32_t)a->experts;
    DataCopyPadIn(recv_offset_ub, a->recv_offset[me], (uint64_t)E * 4);
    DataCopyPadIn(recv_count_ub, a->recv_count[me], (uint64_t)E * 4);
    uint32_t begin, end;
    combine_split_core(E, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(), &begin, &end);
    if (begin == end) {
        SyncAll();
        return;
    }
    uint32_t n = end - begin;
    uint32_t bytes = n * DNORMAL_STATE_BYTES;
    local_t clean_ub = AllocUB(bytes < 256 ? 256 : bytes);
    gm_t state = gm_add(gm_on_rank(a->state_base, me), (int64_t)begin * DNORMAL_STATE_BYTES);
    if (!a->inject_no_status_wait)
        for (uint32_t i = 0; i < n; i++)
            WaitGM32(gm_add(state, (int64_t)i * DNORMAL_STATE_BYTES), COND_EQ,
                     DNORMAL_STATUS_BITS);
    VecDup(clean_ub, DT_INT32, 0, bytes / 4u);
    SetFlag(V_MTE3, 0);
    WaitFlag(V_MTE3, 0);
    DataCopy(state, clean_ub, bytes);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    SyncAll();
}
