/*
 * mmrs_aic.c - the AIC part of matmul-reduce-scatter (seed 004, part 2):
 * BlockMmad over L1 tiles and the stage loop that feeds the AIVs.
 *
 * Round commIdx uses workspace stage commIdx % WORKSPACE_STAGES. From round
 * WORKSPACE_STAGES on the AIC first waits for flagAivFinishCompute[stage]
 * (the AIVs of every rank have pulled that stage). Its blocks are
 * blockIdxInComm = aicoreIdx, aicoreIdx + aicoreNum, ...; block b of the
 * round is meant for targetRankIdx = b / actualBlockPerCommInRank and uses A
 * rows of that rank's share. A tile for this rank goes straight into D, any
 * other into the workspace at (stage, blockIdxInComm). After its blocks the
 * AIC raises flagAicFinishStore[stage] once the FIX pipe has drained.
 *
 * BlockMmad (MmadAtlasA2Pingpong): L1 and L0A/L0B are two buffers each, so
 * MTE2 loads the next k tile while MTE1 and the cube work on this one; L0C
 * accumulates in f32 over K and is written by Fixpipe. Decision: the L1 tile
 * depth is also the L0 depth (the seed splits 256 into 64), because Mmad
 * here takes row-major operands and a k slice of a row-major L1 tile is not
 * contiguous; the split only tunes nZ-layout bandwidth.
 * Device code: device.h only.
 */
#include "mmrs.h"

/* Flag ids: MTE1_MTE2 / MTE2_MTE1 0-1 (L1 buffers), M_MTE1 / MTE1_M 0-1
 * (L0A/L0B buffers), M_FIX / FIX_M 0 (L0C). */

typedef struct aic_tiles {
    local_t l1a[2], l1b[2], l0a[2], l0b[2], l0c;
    int l1_buf, l0_buf;
} aic_tiles;

/* rows x row_bytes from GM (row stride src_stride bytes) packed into local;
 * one transfer when the rows are contiguous. */
static void load_rows(local_t dst, gm_t src, uint32_t rows, uint32_t row_bytes, uint64_t src_stride) {
    if (src_stride == row_bytes) {
        DataCopy(dst, src, (uint64_t)rows * row_bytes);
        return;
    }
    for (uint32_t r = 0; r < rows; r++)
        DataCopy(local_add(dst, r * row_bytes), gm_add(src, (int64_t)(r * src_stride)), row_bytes);
}

/* C[am, an] (f32, row stride ldc elements) = A[am, K] x B[K, an]. */
static void block_mmad(const mmrs_args *a, aic_tiles *t, gm_t g_a, gm_t g_b, gm_t g_c, uint32_t ldc,
                       uint32_t am, uint32_t an) {
    uint32_t K = a->k, N = a->n;
    for (uint32_t k0 = 0; k0 < K; k0 += a->block_k) {
        uint32_t ak = K - k0 < a->block_k ? K - k0 : a->block_k;
        int b = t->l1_buf, l = t->l0_buf;
        WaitFlag(MTE1_MTE2, b);   /* MTE1 has moved this L1 buffer on */
        load_rows(t->l1a[b], gm_add(g_a, (int64_t)k0 * 2), am, ak * 2, (uint64_t)K * 2);
        load_rows(t->l1b[b], gm_add(g_b, (int64_t)k0 * N * 2), ak, an * 2, (uint64_t)N * 2);
        SetFlag(MTE2_MTE1, b);
        WaitFlag(MTE2_MTE1, b);
        WaitFlag(M_MTE1, l);      /* the cube is done with this L0 buffer */
        DataCopy(t->l0a[l], t->l1a[b], am * ak * 2);
        DataCopy(t->l0b[l], t->l1b[b], ak * an * 2);
        SetFlag(MTE1_MTE2, b);
        SetFlag(MTE1_M, l);
        WaitFlag(MTE1_M, l);
        if (k0 == 0) WaitFlag(FIX_M, 0);   /* Fixpipe has read the last block's L0C */
        Mmad(t->l0c, t->l0a[l], t->l0b[l], DT_FP16, am, an, ak, k0 != 0);
        SetFlag(M_MTE1, l);
        t->l1_buf ^= 1;
        t->l0_buf ^= 1;
    }
    SetFlag(M_FIX, 0);
    WaitFlag(M_FIX, 0);
    if (an == ldc) {
        Fixpipe(g_c, t->l0c, DT_FLOAT, (uint64_t)am * an);
    } else {
        for (uint32_t r = 0; r < am; r++)
            Fixpipe(gm_add(g_c, (int64_t)r * ldc * 4), local_add(t->l0c, r * an * 4), DT_FLOAT, an);
    }
    SetFlag(FIX_M, 0);
}

static void mmrs_aic(const mmrs_args *a) {
    uint32_t aicore_idx = (uint32_t)GetBlockIdx(), aicore_num = (uint32_t)GetBlockNum();
    int me = GetRank();
    uint32_t R = (uint32_t)a->num_ranks;
    SetRole("MmadAIC");
    aic_tiles t = {.l1_buf = 0, .l0_buf = 0};
    uint32_t a_bytes = a->block_m * a->block_k * 2, b_bytes = a->block_k * a->block_n * 2;
    for (int i = 0; i < 2; i++) {
        t.l1a[i] = AllocLocal(LM_L1, a_bytes);
        t.l1b[i] = AllocLocal(LM_L1, b_bytes);
        t.l0a[i] = AllocLocal(LM_L0A, a_bytes);
        t.l0b[i] = AllocLocal(LM_L0B, b_bytes);
    }
    t.l0c = AllocLocal(LM_L0C, a->block_m * a->block_n * 4);
    SetFlag(MTE1_MTE2, 0);
    SetFlag(MTE1_MTE2, 1);
    SetFlag(M_MTE1, 0);
    SetFlag(M_MTE1, 1);
    SetFlag(FIX_M, 0);

    uint32_t m_in_rank = mmrs_in_rank_m(a);
    uint32_t comm_loops = mmrs_comm_loops(a);
    uint32_t waited[MMRS_MAX_STAGES] = {0};
    CoreNote("comm_loops", comm_loops);
    for (uint32_t comm_idx = 0; comm_idx < comm_loops; comm_idx++) {
        uint32_t stage_id = comm_idx % a->stages;
        CoreNote("comm_idx", comm_idx);
        /* The stage's previous contents must have been pulled by every rank. */
        if (comm_idx >= a->stages && a->inject != MMRS_INJECT_NO_STAGE_WAIT) {
            CrossCoreWaitFlag((int)stage_id);   /* flagAivFinishCompute[stageId] */
            waited[stage_id]++;
        }
        uint32_t actual_block_per_comm = mmrs_actual_block_per_comm(a, comm_idx);
        uint32_t actual_in_rank = actual_block_per_comm / R;
        uint32_t comm_block_offset_in_rank = comm_idx * a->block_per_comm_in_rank;
        for (uint32_t block_in_comm = aicore_idx; block_in_comm < actual_block_per_comm;
             block_in_comm += aicore_num) {
            uint32_t loop_idx_in_rank = comm_block_offset_in_rank + block_in_comm % actual_in_rank;
            uint32_t target_rank_idx = block_in_comm / actual_in_rank;
            uint32_t mi, ni, am, an;
            mmrs_block_coord(a, loop_idx_in_rank, &mi, &ni, &am, &an);
            ScalarCycles(12);
            uint64_t a_row = (uint64_t)target_rank_idx * m_in_rank + (uint64_t)mi * a->block_m;
            gm_t g_a = gm_add(a->a[me], (int64_t)(a_row * a->k * 2));
            gm_t g_b = gm_add(a->b[me], (int64_t)ni * a->block_n * 2);
            gm_t g_c;
            uint32_t ldc;
            if ((int)target_rank_idx == me) {
                g_c = gm_add(a->d[me], (int64_t)(((uint64_t)mi * a->block_m * a->n +
                                                  (uint64_t)ni * a->block_n) * 4));
                ldc = a->n;
            } else {
                uint64_t row = mmrs_workspace_row(a, stage_id, block_in_comm);
                g_c = gm_add(gm_on_rank(a->symmetric, me), (int64_t)(row * a->block_n * 4));
                ldc = a->block_n;
            }
            block_mmad(a, &t, g_a, g_b, g_c, ldc, am, an);
        }
        CrossCoreSetFlag(PIPE_FIX, (int)stage_id);   /* flagAicFinishStore[stageId] */
    }
    /* Decision: the seed never consumes the last WORKSPACE_STAGES
     * flagAivFinishCompute sets; on the chip they would stay counted into
     * the next kernel, so the AIC drains every set it did not wait for
     * (all of them under --inject no-stage-wait). */
    for (uint32_t s = 0; s < a->stages && s < comm_loops; s++) {
        uint32_t rounds = (comm_loops - s + a->stages - 1) / a->stages;
        for (; waited[s] < rounds; waited[s]++) CrossCoreWaitFlag((int)s);
    }
    PipeBarrier(PIPE_ALL);
    WaitFlag(MTE1_MTE2, 0);
    WaitFlag(MTE1_MTE2, 1);
    WaitFlag(M_MTE1, 0);
    WaitFlag(M_MTE1, 1);
    WaitFlag(FIX_M, 0);
}

void mmrs_kernel(const void *args) {
    const mmrs_args *a = args;
    /* The seed's operator()<AIC> / operator()<AIV> of one MIX kernel. */
    if (IsAic()) mmrs_aic(a);
    else mmrs_aiv(a);
}
