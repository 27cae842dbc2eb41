/*
 * fullmesh_window.c - the HCCL window side of seed 002, device code:
 * bufferChosen and the op boundaries, window addresses, the flag written
 * after the data, the BatchWrite tasks, and GM -> GM copies through UB.
 *
 * WindowsIn and WindowsOut are symmetric allocations laid out as
 * [block 0: W windows of rankSizeOnWin][ctrl 32 B][block 1: W windows]
 * (the ctrl block sits at the end of WindowsIn block 0, where the seed puts
 * bufferChosen; WindowsOut leaves it unused). In WindowsOut, window d holds
 * what this rank sends to rank d; in WindowsIn, window s holds what rank s
 * sent here. One BatchWrite task moves a whole window: from this rank's
 * WindowsOut window d to rank d's WindowsIn window of this rank.
 *
 * Flags. Decision: the seed polls FLAG until it is "refreshed to a specific
 * value" without saying which; we use the EP op's sequence number + 1 (the
 * ctrl block counts EP ops), so a flag left in a block by the op two back
 * can never pass for this op's, and nobody has to clear flags.
 * Device code: device.h only.
 */
#include "fullmesh.h"

gm_t fm_ctrl(const fm_args *a, int rank) {
    return gm_add(gm_on_rank(a->windows_in, rank),
                  (int64_t)((uint64_t)a->num_ranks * a->rank_size_on_win));
}

gm_t fm_win_in(const fm_core *fc, int peer) {
    return gm_add(fc->win_in, (int64_t)((uint64_t)peer * fc->a->rank_size_on_win));
}

gm_t fm_win_out(const fm_core *fc, int peer) {
    return gm_add(fc->win_out, (int64_t)((uint64_t)peer * fc->a->rank_size_on_win));
}

void fm_op_begin(fm_core *fc) {
    const fm_args *a = fc->a;
    gm_t ctrl = fm_ctrl(a, fc->me);
    int stored = GetValue32(gm_add(ctrl, FM_CTRL_BUFFER_CHOSEN));
    int32_t ops = GetValue32(gm_add(ctrl, FM_CTRL_EP_OPS));
    fc->buffer_chosen = stored;
    /* The injected fault: every op in block 0, as a single-buffer design. */
    int block = a->inject == FM_INJECT_NO_DOUBLE_BUFFER ? 0 : stored;
    fc->flag = ops + 1;
    fc->win_in = gm_add(gm_on_rank(a->windows_in, fc->me), (int64_t)((uint64_t)block * a->block_stride));
    fc->win_out = gm_add(gm_on_rank(a->windows_out, fc->me), (int64_t)((uint64_t)block * a->block_stride));
    fc->tasks = gm_add(a->tasks[fc->me],
                       (int64_t)((uint64_t)block * (uint64_t)a->num_ranks * sizeof(batch_write_task)));
    /* flag_ub is free: the last post waited for its MTE3 reads. */
    UbSet32(fc->flag_ub, 0, fc->flag);
    CoreNote("buffer_chosen", block);
    CoreNote("flag", fc->flag);
}

void fm_op_end(fm_core *fc) {
    /* Every core of the rank is done reading this op's windows... */
    SyncAll();
    if (fc->core == 0) {
        gm_t ctrl = fm_ctrl(fc->a, fc->me);
        SetValue32(gm_add(ctrl, FM_CTRL_BUFFER_CHOSEN), fc->buffer_chosen ^ 1);
        SetValue32(gm_add(ctrl, FM_CTRL_EP_OPS), fc->flag);
    }
    /* ...and the next op reads the flipped flag. Decision: on the chip each
     * EP op is its own kernel launch and stream order separates them; here
     * the rounds run in one launch, so this SyncAll stands for that order. */
    SyncAll();
}

void fm_post_windows(fm_core *fc, const uint64_t *flag_off) {
    int n = fc->end_rank - fc->first_rank;
    if (n <= 0) return;
    const uint32_t ts = (uint32_t)sizeof(batch_write_task);
    for (int i = 0; i < n; i++) {
        int dst = fc->first_rank + i;
        gm_t win = fm_win_out(fc, dst);
        DataCopy(gm_add(win, (int64_t)flag_off[i]), fc->flag_ub, FM_FLAG_BYTES);
        /* localBuf, remoteBuf, count, dataType, remoteRankId (seed s3.3.1) */
        uint32_t t = (uint32_t)i * ts;
        UbSet64(fc->task_ub, t + 0, (int64_t)win.a);
        UbSet64(fc->task_ub, t + 8, (int64_t)gm_on_rank(fm_win_in(fc, fc->me), dst).a);
        UbSet64(fc->task_ub, t + 16, (int64_t)((flag_off[i] + FM_FLAG_BYTES) / 2));
        UbSet32(fc->task_ub, t + 24, DT_BF16);
        UbSet32(fc->task_ub, t + 28, dst);
    }
    gm_t tasks = gm_add(fc->tasks, (int64_t)((uint64_t)fc->first_rank * ts));
    DataCopy(tasks, fc->task_ub, (uint64_t)n * ts);
    /* Tokens, count rows, flags and tasks are in GM before the AICPU reads. */
    SetFlag(MTE3_S, 0);
    WaitFlag(MTE3_S, 0);
    BatchWrite(tasks, n);
}

void fm_copy_begin(fm_core *fc) {
    (void)fc;
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
}

void fm_copy_end(fm_core *fc) {
    (void)fc;
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
}

void fm_copy_gm(fm_core *fc, gm_t dst, gm_t src, uint64_t bytes, int *buf) {
    for (uint64_t off = 0; off < bytes;) {
        uint64_t n = bytes - off < fc->row_ub_bytes ? bytes - off : fc->row_ub_bytes;
        int b = *buf;
        WaitFlag(MTE3_MTE2, b);   /* the last write out of this buffer has read it */
        if (n % UB_ALIGN == 0) DataCopy(fc->row_ub[b], gm_add(src, (int64_t)off), n);
        else DataCopyPadIn(fc->row_ub[b], gm_add(src, (int64_t)off), n);
        SetFlag(MTE2_MTE3, b);
        WaitFlag(MTE2_MTE3, b);
        if (n % UB_ALIGN == 0) DataCopy(gm_add(dst, (int64_t)off), fc->row_ub[b], n);
        else DataCopyPadOut(gm_add(dst, (int64_t)off), fc->row_ub[b], n);
        SetFlag(MTE3_MTE2, b);
        *buf = b ^ 1;
        off += n;
    }
}
