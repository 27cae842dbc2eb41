/*
 * combine_normal_sum.c - combine-normal's second phase, as
 * ReadBufferFromRemote of A2's CamMoeCombineNormal runs it (sgl-kernel-npu
 * csrc/deepep/ops2/op_kernel/cam_moe_combine_normal.h at 3a90dfa1).
 *
 * Every AIV core takes an even share (SplitCoreCal) of this rank's own
 * tokens. Per token: wait until each of its K status slots says its row
 * has landed in this rank's window (WaitBuffCopy), clear the K slots, then
 * the weighted sum over the K rows (ReadBufferAndWeightedSum): DataCopyPad
 * each row GM -> UB, Cast bf16 -> f32, scale by the top-k weight and add
 * into an f32 sum, Cast the sum back to bf16 and DataCopyPad it out.
 *
 * Decisions, each where npurr's device API differs from Ascend C:
 * - the chip polls all K slots with one DataCopy and a vector Sum until it
 *   reads K * 8 floats of 1.0; npurr's spin-wait is one blocking wait per
 *   GM word, so the core waits on each slot's first word. A wait that is
 *   already satisfied costs a GM read (gm_read_ns) where the chip pays one
 *   poll a token, about 1 us more a token at K = 8;
 * - Muls then Add is one VecAxpy (sum += w * row), the same f32 operations
 *   in one vector pass instead of two;
 * - a slot whose expert is -1 (a dropped slot, --routing drop:P) has no row
 *   and no status: the core reads expert_ids beside the weights and skips
 *   it, where A2's dispatch never drops a slot and always waits for all K;
 * - the weights (and ids) come in chunks of COMBINE_META_BYTES where A2
 *   loads its whole share at once: one chunk at T1's shape.
 * Device code: device.h only.
 */
#include "combine.h"

#include <string.h>

/* Flag ids: MTE2_S 0 (weights and ids), MTE2_V / V_MTE2 0-1 (row
 * buffers, weightedSumQueue_), V_MTE3 0 (output row), V_MTE3 / MTE3_V 1
 * (the cleared status slots; the output row is free again too, MTE3 being
 * in order). */

typedef struct sum_ub {
    local_t ids_ub, w_ub;        /* this chunk's expert ids and weights */
    local_t zero_ub;             /* K slots of zeros: the status clear */
    local_t token_f32_ub;        /* tokenFloatBuf_ */
    local_t sum_ub;              /* sumFloatBuf_ */
    local_t out_ub;              /* xOutBuf_ */
} sum_ub;

static float ub_float(local_t l, uint32_t off) {
    int32_t bits = UbGet32(l, off);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* WaitBuffCopy: every live slot's status, then the K slots cleared for the
 * next call. i is the token's index in the metadata chunk. */
static void wait_rows(const combine_args *a, const sum_ub *u, int t, int i) {
    int K = a->topk;
    gm_t state = gm_add(gm_on_rank(a->state_base, GetRank()),
                        (int64_t)t * K * COMBINE_NORMAL_STATE_BYTES);
    if (!a->inject_no_status_wait)
        for (int k = 0; k < K; k++) {
            if (UbGet32(u->ids_ub, (uint32_t)(i * K + k) * 4u) < 0) continue;
            WaitGM32(gm_add(state, (int64_t)k * COMBINE_NORMAL_STATE_BYTES), COND_EQ,
                     COMBINE_NORMAL_STATUS_BITS);
        }
    VecDup(u->zero_ub, DT_FLOAT, 0.0, (uint32_t)K * COMBINE_NORMAL_STATE_BYTES / 4u);
    SetFlag(V_MTE3, 1);
    WaitFlag(V_MTE3, 1);
    DataCopy(state, u->zero_ub, (uint64_t)K * COMBINE_NORMAL_STATE_BYTES);
    SetFlag(MTE3_V, 1);   /* zero_ub and out_ub are free again */
    WaitFlag(MTE3_V, 1);
}

/* ReadBufferAndWeightedSum for token t; rb is the row buffer to use next. */
static void weighted_sum(const combine_args *a, const sum_ub *u, const local_t row_ub[2], int t,
                         int i, int *rb) {
    int K = a->topk;
    uint32_t H = (uint32_t)a->hidden;
    gm_t window = gm_add(gm_on_rank(a->window_base, GetRank()),
                         (int64_t)t * K * (int64_t)a->window_stride);
    VecDup(u->sum_ub, DT_FLOAT, 0.0, H);
    for (int k = 0; k < K; k++) {
        uint32_t slot = (uint32_t)(i * K + k) * 4u;
        if (UbGet32(u->ids_ub, slot) < 0) continue;   /* a dropped slot adds nothing */
        float scale = ub_float(u->w_ub, slot);
        int b = *rb;
        WaitFlag(V_MTE2, b);
        DataCopyPadIn(row_ub[b], gm_add(window, (int64_t)k * a->window_stride), a->row_bytes);
        SetFlag(MTE2_V, b);
        WaitFlag(MTE2_V, b);
        VecCast(u->token_f32_ub, DT_FLOAT, row_ub[b], DT_BF16, H);
        SetFlag(V_MTE2, b);
        VecAxpy(u->sum_ub, u->token_f32_ub, DT_FLOAT, scale, H);
        *rb = b ^ 1;
    }
    VecCast(u->out_ub, DT_BF16, u->sum_ub, DT_FLOAT, H);
    SetFlag(V_MTE3, 0);
    WaitFlag(V_MTE3, 0);
    DataCopyPadOut(gm_add(a->out[GetRank()], (int64_t)t * a->row_bytes), u->out_ub, a->row_bytes);
}

void combine_normal_sum(const combine_args *a, const local_t row_ub[2]) {
    int me = GetRank(), K = a->topk;
    uint32_t H = (uint32_t)a->hidden;
    uint32_t begin, end;
    combine_split_core((uint32_t)a->tokens, (uint32_t)GetBlockIdx(), (uint32_t)GetBlockNum(),
                       &begin, &end);
    if (begin == end) return;
    sum_ub u = {
        .ids_ub = AllocUB(COMBINE_META_BYTES),
        .w_ub = AllocUB(COMBINE_META_BYTES),
        .zero_ub = AllocUB((uint32_t)K * COMBINE_NORMAL_STATE_BYTES),
        .token_f32_ub = AllocUB(kit_align_up((uint64_t)H * 4, UB_ALIGN)),
        .sum_ub = AllocUB(kit_align_up((uint64_t)H * 4, UB_ALIGN)),
        .out_ub = AllocUB(kit_align_up((uint64_t)H * 2, UB_ALIGN)),
    };
    int chunk = (int)(COMBINE_META_BYTES / ((uint32_t)K * 4u));
    int rb = 0;
    SetFlag(V_MTE2, 0);
    SetFlag(V_MTE2, 1);
    for (int t0 = (int)begin; t0 < (int)end; t0 += chunk) {
        int n = (int)end - t0 < chunk ? (int)end - t0 : chunk;
        uint64_t off = (uint64_t)t0 * (uint64_t)K * 4, len = (uint64_t)n * (uint64_t)K * 4;
        DataCopyPadIn(u.ids_ub, gm_add(a->expert_ids[me], (int64_t)off), len);
        DataCopyPadIn(u.w_ub, gm_add(a->topk_weights[me], (int64_t)off), len);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        for (int i = 0; i < n; i++) {
            wait_rows(a, &u, t0 + i, i);
            weighted_sum(a, &u, row_ub, t0 + i, i, &rb);
        }
    }
    WaitFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 1);
    SetFlag(MTE3_S, 0);   /* the last output row has landed when the core ends */
    WaitFlag(MTE3_S, 0);
}
