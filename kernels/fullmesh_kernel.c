/*
 * fullmesh_kernel.c - the fullmesh-dispatch-combine kernel: one AIV launch
 * per rank that runs --rounds rounds of dispatch, expert FFN and combine.
 *
 * Every core carves its UB once (the sizes fm_ub_bytes checks against the
 * 192 KiB) and owns a contiguous range of peer ranks, W / cores of them
 * ("将所有rank平均分配给每个核"): it fills and posts those ranks' WindowsOut
 * windows and polls those ranks' WindowsIn windows, in both ops.
 *
 * The expert FFN between the two ops is emulated: every row of expand_x
 * (expert-contiguous, expertTokenNum gives the expert of a row; INT8:
 * dequantized with its scales) times the expert's scale, f32 on the vector
 * unit, rounded to bf16 into expert_out, which the combine sends back. It touches no window, so it is not an EP op
 * and does not flip bufferChosen.
 * Device code: device.h only.
 */
#include "fullmesh.h"

/* Flag ids (FFN): MTE2_V / V_MTE2 0-1 (row buffers), V_MTE3 / MTE3_V 0
 * (out_ub), MTE3_S 0. */

static void expert_ffn(fm_core *fc) {
    const fm_args *a = fc->a;
    int L = a->local_experts, H = a->hidden;
    gm_t expand_x = a->expand_x[fc->round * a->num_ranks + fc->me];
    gm_t expert_out = a->expert_out[fc->me];
    int64_t total = UbGet64(fc->etn_ub, (uint32_t)(L - 1) * 8u);
    int64_t r_begin = total * fc->core / fc->cores, r_end = total * (fc->core + 1) / fc->cores;
    int le = 0, rb = 0;
    SetRole("ExpertFFN");
    SetFlag(V_MTE2, 0);
    SetFlag(V_MTE2, 1);
    SetFlag(MTE3_V, 0);
    for (int64_t row = r_begin; row < r_end; row++) {
        while (row >= UbGet64(fc->etn_ub, (uint32_t)le * 8u)) le++;
        float scale = fm_expert_scale(fc->me * L + le);
        WaitFlag(V_MTE2, rb);
        if (a->dtype == FM_INT8) {
            fm_dequantize_row(fc, row, scale, rb);
        } else {
            DataCopyPadIn(fc->row_ub[rb], gm_add(expand_x, row * a->row_bytes), a->row_bytes);
            SetFlag(MTE2_V, rb);
            WaitFlag(MTE2_V, rb);
            VecDup(fc->acc_ub, DT_FLOAT, 0.0, (uint32_t)H);
            VecAxpy(fc->acc_ub, fc->row_ub[rb], DT_BF16, scale, (uint32_t)H);
        }
        SetFlag(V_MTE2, rb);
        rb ^= 1;
        WaitFlag(MTE3_V, 0);
        VecCast(fc->out_ub, DT_BF16, fc->acc_ub, DT_FLOAT, (uint32_t)H);
        SetFlag(V_MTE3, 0);
        WaitFlag(V_MTE3, 0);
        DataCopyPadOut(gm_add(expert_out, row * a->row_bytes), fc->out_ub, a->row_bytes);
        SetFlag(MTE3_V, 0);
    }
    WaitFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 1);
    WaitFlag(MTE3_V, 0);
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    SyncAll();   /* the combine of any core sends rows any core computed */
}

void fm_kernel(const void *args) {
    const fm_args *a = args;
    int W = a->num_ranks, L = a->local_experts, E = a->experts;
    fm_core fc = {.a = a, .me = GetRank(), .core = GetBlockIdx(), .cores = GetBlockNum()};
    fc.first_rank = (int)((int64_t)W * fc.core / fc.cores);
    fc.end_rank = (int)((int64_t)W * (fc.core + 1) / fc.cores);
    uint32_t rows = (uint32_t)W * FM_STATUS_ROW_BYTES;
    uint32_t rb = (uint32_t)kit_align_up(a->row_bytes, UB_ALIGN);
    fc.ids_ub = AllocUB(FM_META_BYTES);
    fc.idx_ub = AllocUB(FM_META_BYTES);
    fc.w_ub = AllocUB(FM_META_BYTES);
    fc.status_ub = AllocUB(rows);
    fc.recv_ub = AllocUB(rows);
    fc.cum_ub = AllocUB(rows);
    fc.cnt_ub = AllocUB(kit_align_up((uint64_t)E * 4, UB_ALIGN));
    fc.cumsum_ub = AllocUB(kit_align_up((uint64_t)(E + 1) * 4, UB_ALIGN));
    fc.epc_ub = AllocUB(kit_align_up((uint64_t)L * (uint64_t)W * 4, UB_ALIGN));
    fc.etn_ub = AllocUB(kit_align_up((uint64_t)L * 8, UB_ALIGN));
    fc.task_ub = AllocUB(kit_align_up((uint64_t)W * sizeof(batch_write_task), UB_ALIGN));
    fc.flag_ub = AllocUB(FM_FLAG_BYTES);
    fc.row_ub_bytes = rb > FM_COPY_CHUNK ? rb : FM_COPY_CHUNK;
    fc.row_ub[0] = AllocUB(fc.row_ub_bytes);
    fc.row_ub[1] = AllocUB(fc.row_ub_bytes);
    fc.acc_ub = AllocUB(kit_align_up((uint64_t)a->hidden * 4, UB_ALIGN));
    fc.out_ub = AllocUB(rb);
    if (a->dtype == FM_INT8) {
        fc.q_ub[0] = AllocUB(a->win_row_bytes);
        fc.q_ub[1] = AllocUB(a->win_row_bytes);
    }
    /* The rest of the flag's 32 B block stays zero. */
    VecDup(fc.flag_ub, DT_INT32, 0, FM_FLAG_BYTES / 4);
    SetFlag(V_S, 0);
    WaitFlag(V_S, 0);
    CoreNote("first_rank", fc.first_rank);
    CoreNote("end_rank", fc.end_rank);
    for (int r = 0; r < a->rounds; r++) {
        fc.round = r;
        CoreNote("round", r);
        fm_dispatch(&fc);
        expert_ffn(&fc);
        fm_combine(&fc);
    }
}
