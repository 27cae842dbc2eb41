/*
 * combine_sender_inplace.c - scheme 1 of seed 000, the baseline it argues
 * against: reorder x to rank-major in GM first (GM -> UB -> GM), then copy
 * each destination's now contiguous region into its ring (GM -> UB -> ring).
 * The extra full HBM round trip is the cost the seed attributes to it.
 *
 * Decision: the rank-major copy goes to x_sorted, a GM buffer the size of
 * x, instead of overwriting x itself. A true in-place permutation by several
 * cores at once needs cycle following or a full copy anyway; the HBM
 * traffic the seed compares (read x, write x, read again) is the same.
 *
 * The reorder is split by segment (expert, destination) over the sender
 * cores, so a region is written by several cores: SyncAll between the two
 * phases, as the kernel boundary between "reorder" and "send" would be.
 * The ring write is combine_ring.c's, shared with scheme 2.
 */
#include "combine.h"

/* Flag ids: MTE2_MTE3 / MTE3_MTE2 0-1 (read_temp halves); MTE2_MTE3 2 and
 * MTE3_MTE2 3-4 (staging buffers); MTE2_S 0 (metadata); MTE3_S 1 (reorder
 * landed before the barrier). combine_ring.c owns MTE2_S 7 and MTE3_S 0. */

static void copy_segment(gm_t dst, gm_t src, uint64_t bytes, const local_t buf_ub[2], int *buf) {
    for (uint64_t pos = 0; pos < bytes;) {
        uint64_t n = bytes - pos < COMBINE_READ_TEMP_BYTES ? bytes - pos : COMBINE_READ_TEMP_BYTES;
        int b = *buf;
        WaitFlag(MTE3_MTE2, b);
        /* GM side may be any byte; the over-read past the segment end stays
         * inside x (next segment or its guard) and is not written out. */
        DataCopy(buf_ub[b], gm_add(src, (int64_t)pos), kit_align_up(n, UB_ALIGN));
        SetFlag(MTE2_MTE3, b);
        WaitFlag(MTE2_MTE3, b);
        /* Exact length: neighbouring segments belong to other cores. */
        if (n % UB_ALIGN == 0)
            DataCopy(gm_add(dst, (int64_t)pos), buf_ub[b], n);
        else
            DataCopyPadOut(gm_add(dst, (int64_t)pos), buf_ub[b], n);
        SetFlag(MTE3_MTE2, b);
        *buf = b ^ 1;
        pos += n;
    }
}

/* Phase 1: reorder x rank-major into x_sorted, segment i = (le, s) by core
 * i % blocks; region_row[s] is where destination s's rows start. */
static void reorder_x(const combine_args *a, local_t offset_ub, local_t length_ub,
                      local_t read_temp_ub[2], const int64_t *region_row) {
    int me = GetRank(), R = a->num_ranks, L = a->num_local_experts;
    int block = GetBlockIdx(), blocks = GetBlockNum();
    uint64_t row_bytes = a->row_bytes;
    int64_t within[COMBINE_MAX_RANKS] = {0};  /* rows of s before expert le */
    int buf = 0;
    SetFlag(MTE3_MTE2, 0);
    SetFlag(MTE3_MTE2, 1);
    for (int le = 0; le < L; le++) {
        for (int s = 0; s < R; s++) {
            uint32_t cell = (uint32_t)(le * R + s) * 4u;
            int32_t token_cnt = UbGet32(length_ub, cell);
            int seg = le * R + s;
            if (token_cnt > 0 && seg % blocks == block) {
                int32_t start_token_idx = UbGet32(offset_ub, cell);
                gm_t src = gm_add(a->x[me], (int64_t)start_token_idx * (int64_t)row_bytes);
                gm_t dst = gm_add(a->x_sorted[me],
                                  (region_row[s] + within[s]) * (int64_t)row_bytes);
                copy_segment(dst, src, (uint64_t)token_cnt * row_bytes, read_temp_ub, &buf);
            }
            within[s] += token_cnt;
        }
    }
    WaitFlag(MTE3_MTE2, 0);
    WaitFlag(MTE3_MTE2, 1);
    SetFlag(MTE3_S, 1);   /* this core's part of x_sorted has landed */
    WaitFlag(MTE3_S, 1);
}

/* Phase 2: each destination's region is contiguous; copy it out in
 * staging-sized chunks (all 32 B multiples, the last one padded), the
 * next chunk read into the other staging buffer while this one is put. */
static void send_regions(const combine_args *a, local_t staging_ub[COMBINE_STAGING_BUFFERS],
                         const int64_t *region_row) {
    int me = GetRank(), R = a->num_ranks;
    int block = GetBlockIdx(), blocks = GetBlockNum();
    uint64_t row_bytes = a->row_bytes;
    int cur = 0;
    SetFlag(MTE3_MTE2, 3);
    SetFlag(MTE3_MTE2, 4);
    for (int dst = block; dst < R; dst += blocks) {
        ring_writer w;
        ring_writer_init(&w, a, dst);
        ring_writer_note(&w, dst);
        gm_t region = gm_add(a->x_sorted[me], region_row[dst] * (int64_t)row_bytes);
        uint64_t bytes = (uint64_t)(region_row[dst + 1] - region_row[dst]) * row_bytes;
        for (uint64_t pos = 0; pos < bytes;) {
            uint64_t n = bytes - pos < a->staging_bytes ? bytes - pos : a->staging_bytes;
            uint32_t len = (uint32_t)kit_align_up(n, UB_ALIGN);
            ring_writer_prefetch_head(&w);
            WaitFlag(MTE3_MTE2, 3 + cur);   /* MTE3 is done with this buffer's last put */
            DataCopy(staging_ub[cur], gm_add(region, (int64_t)pos), len);
            SetFlag(MTE2_MTE3, 2);
            WaitFlag(MTE2_MTE3, 2);
            ring_writer_flush(&w, staging_ub[cur], len);
            SetFlag(MTE3_MTE2, 3 + cur);
            cur ^= 1;
            pos += n;
        }
        ring_writer_finish(&w);
    }
    WaitFlag(MTE3_MTE2, 3);
    WaitFlag(MTE3_MTE2, 4);
}

void combine_sender_inplace_kernel(const void *args) {
    const combine_args *a = args;
    int R = a->num_ranks, L = a->num_local_experts;
    SetRole("CombineReorder");
    combine_sender_ub u = combine_sender_begin(a);

    /* Rank-major region of each destination: rows of all earlier ranks. */
    int64_t region_row[COMBINE_MAX_RANKS + 1] = {0};
    for (int s = 0; s < R; s++) {
        int64_t rows = 0;
        for (int le = 0; le < L; le++) rows += UbGet32(u.length_ub, (uint32_t)(le * R + s) * 4u);
        region_row[s + 1] = region_row[s] + rows;
    }
    reorder_x(a, u.offset_ub, u.length_ub, u.read_temp_ub, region_row);
    SyncAll();
    SetRole("CombineSender");
    send_regions(a, u.staging_ub, region_row);
}
