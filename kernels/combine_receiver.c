/*
 * combine_receiver.c - the destination side: drain the rings, then combine.
 *
 * On every rank one AIV core per source rank waits for its ring's tail,
 * copies the new bytes (two parts at the wrap) through UB into the receive
 * layout, and advances the head as soon as the bytes are in UB, which is
 * what lets the sender reuse the space. The receive layout is the stream of
 * each source in rank order, so expert e's rows for this rank start at
 * expert_window_offset[e] (seed 002 s3.4's TokenAddr with the rank window
 * folded into the offset).
 *
 * The combine of a token reads rows received by other cores, so all
 * receivers meet at SyncAll first. Then each core takes a contiguous range
 * of tokens: for every top-k slot it loads the row, VecAxpy accumulates
 * weight * row in f32, VecCast rounds to bf16 and MTE3 writes the result.
 * Device code: device.h only.
 */
#include "combine.h"

#include <string.h>

/* Flag ids: MTE3_MTE2 / MTE2_S 0-1 (chunk halves); MTE3_S 0 (before the
 * barrier); MTE2_S 2-3 (combine metadata); MTE2_V / V_MTE2 0-1 (row
 * buffers); V_MTE3 / MTE3_V 0 (output buffer). */

static void copy_out(gm_t dst, local_t src, uint64_t bytes) {
    if (bytes % UB_ALIGN == 0)
        DataCopy(dst, src, bytes);
    else
        DataCopyPadOut(dst, src, bytes);
}

static void receive_from(const combine_args *a, int src, const local_t chunk_ub[2], int *buf) {
    int me = GetRank(), R = a->num_ranks;
    int32_t rows = GetValue32(gm_add(a->recv_meta[me], (int64_t)src * 4));
    int32_t row_offset = GetValue32(gm_add(a->recv_meta[me], (int64_t)(R + src) * 4));
    uint64_t total = (uint64_t)rows * a->row_bytes;
    /* The sender pads only its last flush to 32 B. */
    int64_t expect = (int64_t)kit_align_up(total, UB_ALIGN);
    uint32_t ring_id = a->ring_id[src][me];
    gm_t ring = gm_add(gm_on_rank(a->ring_base, me), (int64_t)((uint64_t)src * a->ring_stride));
    gm_t dst = gm_add(a->recv[me], (int64_t)row_offset * (int64_t)a->row_bytes);
    CoreNote("src_rank", src);
    CoreNote("expect_bytes", expect);
    int64_t head = 0;
    uint64_t consumed = 0;
    while (head < expect) {
        int64_t tail = RingWaitData(ring_id, head);
        while (head < tail) {
            uint64_t n = (uint64_t)(tail - head);
            if (n > COMBINE_RECV_CHUNK_BYTES) n = COMBINE_RECV_CHUNK_BYTES;
            uint64_t pos = (uint64_t)head % a->ring_bytes;
            int b = *buf;
            WaitFlag(MTE3_MTE2, b);
            if (pos + n <= a->ring_bytes) {
                DataCopy(chunk_ub[b], gm_add(ring, (int64_t)pos), n);
            } else {
                uint64_t first = a->ring_bytes - pos;
                DataCopy(chunk_ub[b], gm_add(ring, (int64_t)pos), first);
                DataCopy(local_add(chunk_ub[b], (uint32_t)first), ring, n - first);
            }
            SetFlag(MTE2_S, b);
            WaitFlag(MTE2_S, b);
            head += (int64_t)n;
            RingStoreHead(ring_id, head);   /* the space is free once the bytes are in UB */
            uint64_t out = total - consumed < n ? total - consumed : n;  /* drop the padding */
            if (out > 0) copy_out(gm_add(dst, (int64_t)consumed), chunk_ub[b], out);
            consumed += out;
            SetFlag(MTE3_MTE2, b);
            *buf = b ^ 1;
        }
    }
}

static float ub_float(local_t l, uint32_t off) {
    int32_t bits = UbGet32(l, off);
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void combine_tokens(const combine_args *a) {
    int me = GetRank(), K = a->topk, H = a->hidden;
    int block = GetBlockIdx(), blocks = GetBlockNum();
    int t_begin = (int)((int64_t)a->tokens * block / blocks);
    int t_end = (int)((int64_t)a->tokens * (block + 1) / blocks);
    uint32_t hc = (uint32_t)H < COMBINE_HIDDEN_TILE ? (uint32_t)H : COMBINE_HIDDEN_TILE;
    uint32_t ewo_bytes = (uint32_t)kit_align_up((uint64_t)a->num_experts * 4, UB_ALIGN);
    local_t ewo_ub = AllocUB(ewo_bytes);
    local_t ids_ub = AllocUB(COMBINE_META_BYTES);
    local_t idx_ub = AllocUB(COMBINE_META_BYTES);
    local_t w_ub = AllocUB(COMBINE_META_BYTES);
    local_t acc_ub = AllocUB(kit_align_up((uint64_t)hc * 4, UB_ALIGN));
    local_t row_ub[2] = {AllocUB(kit_align_up((uint64_t)hc * 2, UB_ALIGN)),
                         AllocUB(kit_align_up((uint64_t)hc * 2, UB_ALIGN))};
    local_t out_ub = AllocUB(kit_align_up((uint64_t)hc * 2, UB_ALIGN));
    DataCopy(ewo_ub, a->expert_window_offset[me], ewo_bytes);
    SetFlag(MTE2_S, 2);
    WaitFlag(MTE2_S, 2);

    gm_t recv = a->recv[me];
    int tokens_per_block = (int)(COMBINE_META_BYTES / ((uint32_t)K * 4u));
    int rb = 0;
    SetFlag(V_MTE2, 0);
    SetFlag(V_MTE2, 1);
    SetFlag(MTE3_V, 0);
    for (int t0 = t_begin; t0 < t_end; t0 += tokens_per_block) {
        int n = t_end - t0 < tokens_per_block ? t_end - t0 : tokens_per_block;
        uint64_t meta_off = (uint64_t)t0 * (uint64_t)K * 4;
        uint32_t meta_len = (uint32_t)kit_align_up((uint64_t)n * (uint64_t)K * 4, UB_ALIGN);
        DataCopy(ids_ub, gm_add(a->expert_ids[me], (int64_t)meta_off), meta_len);
        DataCopy(idx_ub, gm_add(a->expand_idx[me], (int64_t)meta_off), meta_len);
        DataCopy(w_ub, gm_add(a->topk_weights[me], (int64_t)meta_off), meta_len);
        SetFlag(MTE2_S, 3);
        WaitFlag(MTE2_S, 3);
        for (int i = 0; i < n; i++) {
            int t = t0 + i;
            for (uint32_t c0 = 0; c0 < (uint32_t)H; c0 += hc) {
                uint32_t hn = (uint32_t)H - c0 < hc ? (uint32_t)H - c0 : hc;
                VecDup(acc_ub, DT_FLOAT, 0.0, hn);
                for (int k = 0; k < K; k++) {
                    uint32_t slot = (uint32_t)(i * K + k) * 4u;
                    int32_t expert_id = UbGet32(ids_ub, slot);
                    if (expert_id < 0) continue;   /* dropped slot contributes nothing */
                    float weight = ub_float(w_ub, slot);
                    int64_t row = (int64_t)UbGet32(ewo_ub, (uint32_t)expert_id * 4u) +
                                  UbGet32(idx_ub, slot);
                    WaitFlag(V_MTE2, rb);
                    DataCopy(row_ub[rb],
                             gm_add(recv, row * (int64_t)a->row_bytes + (int64_t)c0 * 2),
                             kit_align_up((uint64_t)hn * 2, UB_ALIGN));
                    SetFlag(MTE2_V, rb);
                    WaitFlag(MTE2_V, rb);
                    VecAxpy(acc_ub, row_ub[rb], DT_BF16, weight, hn);
                    SetFlag(V_MTE2, rb);
                    rb ^= 1;
                }
                WaitFlag(MTE3_V, 0);
                VecCast(out_ub, DT_BF16, acc_ub, DT_FLOAT, hn);
                SetFlag(V_MTE3, 0);
                WaitFlag(V_MTE3, 0);
                copy_out(gm_add(a->out[me], (int64_t)t * (int64_t)a->row_bytes + (int64_t)c0 * 2),
                         out_ub, (uint64_t)hn * 2);
                SetFlag(MTE3_V, 0);
            }
        }
    }
    WaitFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 1);
    WaitFlag(MTE3_V, 0);
}

void combine_receiver_kernel(const void *args) {
    const combine_args *a = args;
    SetRole("CombineReceiver");
    local_t chunk_ub[2] = {AllocUB(COMBINE_RECV_CHUNK_BYTES), AllocUB(COMBINE_RECV_CHUNK_BYTES)};
    int buf = 0;
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    for (int src = GetBlockIdx(); src < a->num_ranks; src += GetBlockNum())
        receive_from(a, src, chunk_ub, &buf);
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
    SetFlag(MTE3_S, 0);   /* received rows have landed before the others read them */
    WaitFlag(MTE3_S, 0);
    SyncAll();
    SetRole("CombineSum");
    combine_tokens(a);
}
