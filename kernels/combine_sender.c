/*
 * combine_sender.c - scheme 2 of seed 000: gather-pack through UB.
 *
 * x is expert-major, rank-minor; the rows one destination needs are spread
 * over every local expert. One AIV core per destination rank (core b serves
 * destinations b, b + block_num, ... when there are fewer cores than ranks)
 * walks the local experts in order: over-reads each segment from a 32 B
 * aligned GM address into read_temp_ub, crops the valid bytes into
 * staging_ub (VecCopy is byte-granular), and flushes staging_ub into the
 * destination's ring when it is full: the 32 B-aligned part is written, the
 * remainder is carried to the front of the other staging buffer, where the
 * next batch is gathered while this one is on the link, and only the last
 * flush is padded. Device code: device.h only.
 */
#include "combine.h"

typedef struct sender {
    const combine_args *a;
    int dst;
    local_t staging_ub[COMBINE_STAGING_BUFFERS];
    int cur;                   /* the staging buffer being gathered into */
    uint32_t staging_offset;   /* valid bytes in it */
    ring_writer w;
} sender;

/* Flag ids: V_MTE3 0 (crops landed before a put); MTE3_V 0-1 (staging
 * buffer free again); MTE2_V / V_MTE2 0-1 (read_temp halves); MTE2_S 0
 * (metadata). combine_ring.c owns MTE2_S 7 and MTE3_S 0. */

static void flush(sender *sd, int is_last) {
    uint32_t write_len = is_last ? (uint32_t)kit_align_up(sd->staging_offset, UB_ALIGN)
                                 : (uint32_t)kit_align_down(sd->staging_offset, UB_ALIGN);
    if (write_len == 0) return;
    local_t full = sd->staging_ub[sd->cur];
    SetFlag(V_MTE3, 0);   /* the crops into this buffer have landed */
    WaitFlag(V_MTE3, 0);
    ring_writer_flush(&sd->w, full, write_len);
    SetFlag(MTE3_V, sd->cur);   /* V may refill it once MTE3 has read it */
    int next = sd->cur ^ 1;
    WaitFlag(MTE3_V, next);     /* the other buffer's put (two flushes ago) is done */
    uint32_t remain = is_last ? 0 : sd->staging_offset - write_len;
    if (remain > 0)  /* < 32 B: the carry to the next flush */
        VecCopy(sd->staging_ub[next], local_add(full, write_len), remain);
    sd->cur = next;
    sd->staging_offset = remain;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c) {
    uint64_t m = a < b ? a : b;
    return m < c ? m : c;
}

static void send_to_rank(const combine_args *a, int dst, local_t offset_ub, local_t length_ub,
                         const local_t read_temp_ub[2], const local_t staging_ub[2]) {
    int me = GetRank(), R = a->num_ranks;
    uint64_t row_bytes = a->row_bytes;
    sender sd = {.a = a, .dst = dst, .staging_ub = {staging_ub[0], staging_ub[1]}, .cur = 0};
    SetFlag(MTE3_V, 1);   /* buffer 1 starts free; buffer 0 is gathered into first */
    ring_writer_init(&sd.w, a, dst);
    ring_writer_note(&sd.w, dst);
    ring_writer_prefetch_head(&sd.w);
    int buf = 0;
    SetFlag(V_MTE2, 0);   /* both read_temp halves start free */
    SetFlag(V_MTE2, 1);
    for (int exp_idx = 0; exp_idx < a->num_local_experts; exp_idx++) {
        uint32_t cell = (uint32_t)(exp_idx * R + dst) * 4u;
        int32_t token_cnt = UbGet32(length_ub, cell);
        if (token_cnt == 0) continue;
        int32_t start_token_idx = UbGet32(offset_ub, cell);
        gm_t seg = gm_add(a->x[me], (int64_t)start_token_idx * (int64_t)row_bytes);
        uint64_t data_bytes = (uint64_t)token_cnt * row_bytes, seg_pos = 0;
        ScalarCycles(8);
        while (seg_pos < data_bytes) {
            uint32_t align_rem = (uint32_t)((gm_offset(seg) + seg_pos) % UB_ALIGN);
            uint64_t limit = min3(data_bytes - seg_pos, a->staging_bytes - sd.staging_offset,
                                  COMBINE_READ_TEMP_BYTES - align_rem);
            /* Decision (the seed appends whole segments and flushes past a
             * threshold): a piece is whole rows, so staging_ub is flushed
             * when the next row does not fit and the aligned-down flush
             * leaves a real remainder to carry. A row larger than what fits
             * is split; its pieces then run to the end of the row. */
            uint64_t in_row = seg_pos % row_bytes, piece;
            if (in_row != 0) {
                piece = limit < row_bytes - in_row ? limit : row_bytes - in_row;
            } else {
                piece = limit / row_bytes * row_bytes;
                if (piece == 0 && sd.staging_offset < UB_ALIGN) piece = limit;
            }
            if (piece == 0) {
                flush(&sd, 0);
                ring_writer_prefetch_head(&sd.w);
                continue;
            }
            /* Over-read: start at the 32 B boundary below, round the length up. */
            uint32_t read_len = (uint32_t)kit_align_up(piece + align_rem, UB_ALIGN);
            WaitFlag(V_MTE2, buf);
            DataCopy(read_temp_ub[buf], gm_add(seg, (int64_t)seg_pos - (int64_t)align_rem),
                     read_len);
            SetFlag(MTE2_V, buf);
            WaitFlag(MTE2_V, buf);
            /* Crop: only [align_rem, align_rem + piece) is ours. */
            VecCopy(local_add(sd.staging_ub[sd.cur], sd.staging_offset),
                    local_add(read_temp_ub[buf], align_rem), (uint32_t)piece);
            SetFlag(V_MTE2, buf);
            buf ^= 1;
            sd.staging_offset += (uint32_t)piece;
            seg_pos += piece;
        }
    }
    flush(&sd, 1);
    ring_writer_finish(&sd.w);
    WaitFlag(MTE3_V, sd.cur ^ 1);
    WaitFlag(V_MTE2, 0);
    WaitFlag(V_MTE2, 1);
}

combine_sender_ub combine_sender_begin(const combine_args *a) {
    int me = GetRank();
    combine_sender_ub u;
    u.offset_ub = AllocUB(a->table_ub_bytes);
    u.length_ub = AllocUB(a->table_ub_bytes);
    u.read_temp_ub[0] = AllocUB(COMBINE_READ_TEMP_BYTES);
    u.read_temp_ub[1] = AllocUB(COMBINE_READ_TEMP_BYTES);
    u.staging_ub[0] = AllocUB(a->staging_bytes);
    u.staging_ub[1] = AllocUB(a->staging_bytes);
    /* Seed s6.4: metadata prefetched once. Decision: the whole [L, R]
     * tables rather than one column, because a column is strided in GM and
     * DataCopy moves contiguous bytes; L * R * 4 B is a few KB at most. */
    DataCopy(u.offset_ub, a->offset_table[me], a->table_ub_bytes);
    DataCopy(u.length_ub, a->length_table[me], a->table_ub_bytes);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    return u;
}

void combine_sender_kernel(const void *args) {
    const combine_args *a = args;
    SetRole("CombineSender");
    combine_sender_ub u = combine_sender_begin(a);
    for (int dst = GetBlockIdx(); dst < a->num_ranks; dst += GetBlockNum())
        send_to_rank(a, dst, u.offset_ub, u.length_ub, u.read_temp_ub, u.staging_ub);
}
