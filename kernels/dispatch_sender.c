/*
 * dispatch_sender.c - AICoreRDMASender (seed 001 s5.1): pack tokens into
 * the RDMA rings of their destination nodes.
 *
 * Core i takes tokens t = i, i + senders, ... (token_idx % SenderNum) and
 * feeds channel i % channels. For each token it builds one record in UB
 * (seed 003 item 4: hidden, SourceMeta, scales, top-k indices, top-k
 * weights, padding), then for every node the token reaches fills in the
 * SourceMeta for that node's NVL peers and writes the record into the next
 * slot of ring (channel, node): the local staging half of rdma_channel_data
 * for another node (the RDMACoordinator ships it), or the receiving half
 * directly for this rank's own node (DeepEP does the same).
 *
 * Flow control: rdma_tail_idx - cached_rdma_channel_head >= capacity means
 * the ring is full; the cache is refreshed by a blocking wait on
 * rdma_channel_head, which the ForwarderCoordinator of the destination
 * node raises by remote atomic add. When several cores share a channel, a
 * slot is taken and written under rdma_send_channel_lock[channel][node]
 * (one per RDMA rank), so the slots fill in lock order and the records
 * carry src_token_id; with one core per channel there is no lock. The
 * tail the senders publish (rdma_send_channel_tail) only ever covers fully
 * written slots: it is stored after MTE3 has landed the record.
 *
 * The RDMACoordinator is woken through its doorbell word only when a
 * ring's filled count reaches a multiple of the send chunk or the ring's
 * total, which is exactly when it has something to ship.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

/* Flags: MTE2_S 0 (metadata block) and 1 (x row), V_S 0 (scales copied),
 * MTE3_S 0 (record written). */

typedef struct sender {
    const dispatch_args *a;
    const dispatch_shape *sh;
    int me, my_node, c, shared;
    int64_t base[DISPATCH_MAX_NODES];        /* per node: ring tail when this dispatch began */
    int64_t my_tail[DISPATCH_MAX_NODES];     /* per node, when the channel is not shared */
    int64_t cached_head[DISPATCH_MAX_NODES];
    int32_t total[DISPATCH_MAX_NODES];       /* per node: the ring's tokens this dispatch */
    ring_notes notes;
} sender;

static void lock(sender *sd, gm_t l, int n, int t) {
    while (AtomicCas32(l, 0, 1) != 0) {
        dispatch_note_ring(&sd->notes, sd->c, n * sd->sh->npus + sd->me % sd->sh->npus,
                           sd->cached_head[n], -1, sd->cached_head[n], -1);
        CoreNote("token", t);
        WaitGM32(l, COND_EQ, 0);
    }
}

static void write_to_node(sender *sd, local_t rec, int n, int t) {
    const dispatch_args *a = sd->a;
    const dispatch_shape *sh = sd->sh;
    int c = sd->c, me = sd->me;
    uint64_t ring_word = (uint64_t)c * (uint64_t)sh->nodes + (uint64_t)n;
    gm_t lock_word = dispatch_word(a->rdma_send_channel_lock, me, ring_word, 4);
    gm_t tail_word = dispatch_word(a->rdma_send_channel_tail, me, ring_word, 8);
    int64_t tail;
    if (sd->shared) {
        lock(sd, lock_word, n, t);
        tail = GetValue64(tail_word);
    } else {
        tail = sd->my_tail[n];
    }
    if (tail - sd->cached_head[n] >= sh->rdma_ring_tokens) {
        /* Seed s6.1: reload the head (raised by remote credit returns). */
        int64_t head = GetValue64(dispatch_word(a->rdma_channel_head, me, ring_word, 8));
        sd->cached_head[n] = head;
        if (tail - head >= sh->rdma_ring_tokens) {
            dispatch_note_ring(&sd->notes, c, n * sh->npus + me % sh->npus, head, tail, head,
                               sh->rdma_ring_tokens - (tail - head));
            CoreNote("token", t);
            sd->cached_head[n] = RingWaitSpace(dispatch_rdma_ring_id(a, me, c, n), tail, 1);
        }
    }
    int64_t slot = tail % sh->rdma_ring_tokens;
    gm_t dst = n == sd->my_node ? dispatch_rdma_slot(a, a->rdma_channel_data, me, c, n, slot)
                                : dispatch_rdma_slot(a, a->rdma_channel_data_send, me, c, n, slot);
    DataCopy(dst, rec, sh->token_bytes);
    SetFlag(MTE3_S, 0);   /* the slot is written before the tail says so */
    WaitFlag(MTE3_S, 0);
    SetValue64(tail_word, tail + 1);
    if (sd->shared) SetValue32(lock_word, 0);
    else sd->my_tail[n] = tail + 1;
    int64_t filled = tail + 1 - sd->base[n];
    if (filled % sh->rdma_send_chunk == 0 || filled == sd->total[n])
        AtomicAdd64(dispatch_word(a->coord_doorbell, me,
                                  (uint64_t)dispatch_coord_of(sh, c, n), 8), 1);
}

/* Fills the record's tail from the metadata block (row q of the block). */
static void pack_record(const sender *sd, local_t rec, local_t topk_ub, local_t w_ub,
                        local_t sc_ub, int q) {
    const dispatch_shape *sh = sd->sh;
    for (int k = 0; k < sh->topk; k++) {
        uint32_t src = (uint32_t)(q * sh->topk + k) * 4u;
        UbSet32(rec, sh->off_topk + (uint32_t)k * 4u, UbGet32(topk_ub, src));
        UbSet32(rec, sh->off_weights + (uint32_t)k * 4u, UbGet32(w_ub, src));
    }
    if (sh->num_scales) {
        VecCopy(local_add(rec, sh->off_scales),
                local_add(sc_ub, (uint32_t)(q * sh->num_scales) * 4u),
                (uint32_t)sh->num_scales * 4u);
        SetFlag(V_S, 0);   /* before MTE3 writes the record or MTE2 reloads either buffer */
        WaitFlag(V_S, 0);
    }
    for (int p = sh->npus; p < DISPATCH_MAX_NVL_PEERS; p++)
        UbSet32(rec, sh->off_meta + DISPATCH_SM_IDX + (uint32_t)p * 4u, -1);
}

/* SourceMeta of the record for node n; returns the NVL peer bits (0: the
 * token does not go to that node). */
static int32_t source_meta(const sender *sd, local_t rec, local_t idx_ub, int q, int n, int t) {
    const dispatch_shape *sh = sd->sh;
    int32_t bits = 0;
    for (int p = 0; p < sh->npus; p++) {
        int32_t v = UbGet32(idx_ub, (uint32_t)(q * sh->num_ranks + n * sh->npus + p) * 4u);
        if (v >= 0) bits |= 1 << p;
        UbSet32(rec, sh->off_meta + DISPATCH_SM_IDX + (uint32_t)p * 4u, v);
    }
    if (bits) {
        UbSet32(rec, sh->off_meta + DISPATCH_SM_RDMA_RANK, sd->my_node);
        UbSet32(rec, sh->off_meta + DISPATCH_SM_NVL_BITS, bits);
        UbSet32(rec, sh->off_meta + DISPATCH_SM_TOKEN_ID, t);
    }
    return bits;
}

static void load_x(const dispatch_args *a, local_t rec, int t) {
    const dispatch_shape *sh = &a->sh;
    dispatch_copy_in(rec, gm_add(a->x[GetRank()], (int64_t)t * sh->x_row_bytes), sh->x_row_bytes);
    SetFlag(MTE2_S, 1);
}

void dispatch_rdma_sender(const dispatch_args *a, int disp, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    int i = GetBlockIdx(), S = sh->senders, C = sh->channels, N = sh->nodes, K = sh->topk;
    int R = sh->num_ranks;
    sender sd = {.a = a, .sh = sh, .me = GetRank(), .c = i % C};
    sd.my_node = sd.me / sh->npus;
    sd.shared = (S - sd.c + C - 1) / C > 1;
    int T = sh->tokens[sd.me], m = sh->sender_meta_tokens;
    int span = (m - 1) * S + 1;
    local_t rec[2] = {ub_take(&ub, sh->token_bytes), ub_take(&ub, sh->token_bytes)};
    local_t topk_ub = ub_take(&ub, (uint64_t)span * K * 4);
    local_t w_ub = ub_take(&ub, (uint64_t)span * K * 4);
    local_t idx_ub = ub_take(&ub, (uint64_t)span * R * 4);
    local_t sc_ub = sh->num_scales ? ub_take(&ub, (uint64_t)span * sh->num_scales * 4) : rec[0];
    local_t tot_ub = ub_take(&ub, (uint64_t)N * 4);

    dispatch_copy_in(tot_ub,
                     gm_add(a->layout_counts[sd.me], (int64_t)(a->cl.ch_node + (uint32_t)(sd.c * N)) * 4),
                     (uint64_t)N * 4);
    SetFlag(MTE2_S, 0);
    WaitFlag(MTE2_S, 0);
    for (int n = 0; n < N; n++) {
        sd.total[n] = UbGet32(tot_ub, (uint32_t)n * 4u);
        sd.base[n] = (int64_t)disp * sd.total[n];
        sd.my_tail[n] = sd.base[n];
        /* the rings were drained by the last dispatch: head == base */
        sd.cached_head[n] = sd.base[n];
    }
    if (i >= T) return;
    int cur = 0;
    load_x(a, rec[0], i);
    for (int j0 = 0; i + j0 * S < T; j0 += m) {
        int t_first = i + j0 * S;
        int cnt = (T - 1 - t_first) / S + 1;
        if (cnt > m) cnt = m;
        int rows = (cnt - 1) * S + 1;
        /* Metadata of the next cnt tokens of this core: the rows in between
         * belong to other cores and come along (fewer, larger copies). */
        dispatch_copy_in(topk_ub, gm_add(a->topk_idx[sd.me], (int64_t)t_first * K * 4),
                         (uint64_t)rows * K * 4);
        dispatch_copy_in(w_ub, gm_add(a->topk_weights[sd.me], (int64_t)t_first * K * 4),
                         (uint64_t)rows * K * 4);
        dispatch_copy_in(idx_ub, gm_add(a->token_idx_in_rank[sd.me], (int64_t)t_first * R * 4),
                         (uint64_t)rows * R * 4);
        if (sh->num_scales)
            dispatch_copy_in(sc_ub,
                             gm_add(a->x_scales[sd.me], (int64_t)t_first * sh->num_scales * 4),
                             (uint64_t)rows * sh->num_scales * 4);
        SetFlag(MTE2_S, 0);
        WaitFlag(MTE2_S, 0);
        for (int q = 0; q < cnt; q++) {
            int t = t_first + q * S, row = q * S;
            WaitFlag(MTE2_S, 1);   /* x of t is in rec[cur] */
            if (t + S < T) load_x(a, rec[cur ^ 1], t + S);
            pack_record(&sd, rec[cur], topk_ub, w_ub, sc_ub, row);
            for (int n = 0; n < N; n++)
                if (source_meta(&sd, rec[cur], idx_ub, row, n, t)) write_to_node(&sd, rec[cur], n, t);
            cur ^= 1;
        }
    }
}
