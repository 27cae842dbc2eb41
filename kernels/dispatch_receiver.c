/*
 * dispatch_receiver.c - AICoreHCCSReceiver (seed 001 s5.5): drain this
 * rank's HCCS rings into recv_x and its companions.
 *
 * Core k serves the rings (channel c, forwarder peer l) with
 * (c * npus + l) % receivers == k. A ring's token count is the sum over
 * source nodes of hccs_channel_prefix_end - start, which the forwarder
 * wrote before any token. Then: wait for the tail (on this core's doorbell,
 * or on the last unfinished ring's tail directly), copy a batch of records
 * into UB, publish the head at once (the slots are free when the bytes are
 * in UB), and place each record.
 *
 * Placement is the receiver-side sort of seed 001: the source rank is
 * src_rdma_rank * npus + l (the forwarder has the source's NVL index) and
 * the row is recv_gbl_rank_prefix_sum[source - 1] (notify phase) plus the
 * token's index in this rank's stream from that source (SourceMeta), so
 * rows are grouped by source rank in prefix-matrix order and ascend by
 * src_token_id within a source, whatever order the tokens arrived in.
 * Top-k indices become local expert ids (-1 for other ranks' experts).
 * Decision: the weights of -1 slots become 0 and the others travel as
 * they are, as DeepEP's recv_topk_weights (the seeds do not say).
 * Device code: device.h only.
 */
#include "dispatch_device.h"

/* Flags: MTE3_S 2 (last batch left UB), MTE2_S 3 (batch loaded), V_MTE3 1
 * (scales copied), V_MTE3 2 / MTE3_S 2 (clean step). */

#define MAX_RINGS (DISPATCH_MAX_CHANNELS * DISPATCH_MAX_NVL_PEERS)

typedef struct recv_ring {
    int16_t c, l;
    int32_t total;
    int64_t head, end;
    uint32_t id;
} recv_ring;

typedef struct receiver {
    const dispatch_args *a;
    const dispatch_shape *sh;
    int me, disp;
    local_t batch, scratch, prefix;
    uint32_t scratch_bytes, off_weights, off_src, off_scales;
} receiver;

static gm_t prefix_word(const dispatch_args *a, gm_t base, int me, int c, int l, int n) {
    const dispatch_shape *sh = &a->sh;
    return dispatch_word(base, me,
                         ((uint64_t)c * (uint64_t)sh->npus + (uint64_t)l) * (uint64_t)sh->nodes +
                             (uint64_t)n,
                         4);
}

/* Writes one record's row everywhere but the scales (which need V first). */
static void place(const receiver *rv, local_t rec, local_t scr, int l) {
    const dispatch_args *a = rv->a;
    const dispatch_shape *sh = rv->sh;
    int me = rv->me, d = rv->disp, K = sh->topk, L = sh->local_experts;
    int32_t src_rdma = UbGet32(rec, sh->off_meta + DISPATCH_SM_RDMA_RANK);
    int32_t bits = UbGet32(rec, sh->off_meta + DISPATCH_SM_NVL_BITS);
    int32_t token = UbGet32(rec, sh->off_meta + DISPATCH_SM_TOKEN_ID);
    int32_t idx = UbGet32(rec, sh->off_meta + DISPATCH_SM_IDX + (uint32_t)(me % sh->npus) * 4u);
    int s = src_rdma * sh->npus + l;
    int64_t pos = (s > 0 ? UbGet32(rv->prefix, (uint32_t)(s - 1) * 4u) : 0) + idx;
    dispatch_copy_out(gm_add(a->recv_x[d][me], pos * sh->x_row_bytes), rec, sh->x_row_bytes);
    local_t w = local_add(scr, rv->off_weights);
    for (int k = 0; k < K; k++) {
        int32_t e = UbGet32(rec, sh->off_topk + (uint32_t)k * 4u);
        int32_t le = e >= me * L && e < (me + 1) * L ? e - me * L : -1;
        UbSet32(scr, (uint32_t)k * 4u, le);
        UbSet32(w, (uint32_t)k * 4u, le >= 0 ? UbGet32(rec, sh->off_weights + (uint32_t)k * 4u) : 0);
    }
    dispatch_copy_out(gm_add(a->recv_topk_idx[d][me], pos * K * 4), scr, (uint64_t)K * 4);
    dispatch_copy_out(gm_add(a->recv_topk_weights[d][me], pos * K * 4), w, (uint64_t)K * 4);
    local_t src = local_add(scr, rv->off_src);
    UbSet32(src, 0, src_rdma);
    UbSet32(src, 4, bits);
    UbSet32(src, 8, token);
    dispatch_copy_out(gm_add(a->recv_src_meta[d][me], pos * DISPATCH_RECV_SRC_INTS * 4), src,
                      DISPATCH_RECV_SRC_INTS * 4);
    if (sh->num_scales)
        VecCopy(local_add(scr, rv->off_scales), local_add(rec, sh->off_scales),
                (uint32_t)sh->num_scales * 4u);
}

static void place_scales(const receiver *rv, local_t rec, local_t scr, int l) {
    const dispatch_shape *sh = rv->sh;
    int32_t src_rdma = UbGet32(rec, sh->off_meta + DISPATCH_SM_RDMA_RANK);
    int32_t idx = UbGet32(rec, sh->off_meta + DISPATCH_SM_IDX + (uint32_t)(rv->me % sh->npus) * 4u);
    int s = src_rdma * sh->npus + l;
    int64_t pos = (s > 0 ? UbGet32(rv->prefix, (uint32_t)(s - 1) * 4u) : 0) + idx;
    dispatch_copy_out(gm_add(rv->a->recv_x_scales[rv->disp][rv->me], pos * sh->num_scales * 4),
                      local_add(scr, rv->off_scales), (uint64_t)sh->num_scales * 4);
}

static void consume(const receiver *rv, recv_ring *r, int64_t tail) {
    const dispatch_shape *sh = rv->sh;
    while (r->head < tail) {
        int64_t slot = r->head % sh->hccs_ring_tokens;
        int64_t n = tail - r->head;
        if (n > sh->hccs_ring_tokens - slot) n = sh->hccs_ring_tokens - slot;
        if (n > sh->receive_batch) n = sh->receive_batch;
        SetFlag(MTE3_S, 2);   /* the last batch's rows have left UB */
        WaitFlag(MTE3_S, 2);
        DataCopy(rv->batch, dispatch_hccs_slot(rv->a, rv->me, r->c, r->l, slot),
                 (uint64_t)n * sh->token_bytes);
        SetFlag(MTE2_S, 3);
        WaitFlag(MTE2_S, 3);
        r->head += n;
        RingStoreHead(r->id, r->head);
        for (int i = 0; i < n; i++)
            place(rv, local_add(rv->batch, (uint32_t)i * sh->token_bytes),
                  local_add(rv->scratch, (uint32_t)i * rv->scratch_bytes), r->l);
        if (sh->num_scales) {
            SetFlag(V_MTE3, 1);
            WaitFlag(V_MTE3, 1);
            for (int i = 0; i < n; i++)
                place_scales(rv, local_add(rv->batch, (uint32_t)i * sh->token_bytes),
                             local_add(rv->scratch, (uint32_t)i * rv->scratch_bytes), r->l);
        }
    }
}

void dispatch_hccs_receiver(const dispatch_args *a, int disp, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    receiver rv = {.a = a, .sh = sh, .me = GetRank(), .disp = disp};
    int k = GetBlockIdx() - sh->senders - sh->coordinators - sh->forwarders - sh->fwd_coordinators;
    int P = sh->npus, C = sh->channels, N = sh->nodes, R = sh->num_ranks, K = sh->topk;
    rv.off_weights = (uint32_t)kit_align_up((uint64_t)K * 4, UB_ALIGN);
    rv.off_src = 2 * rv.off_weights;
    rv.off_scales = rv.off_src + (uint32_t)kit_align_up(DISPATCH_RECV_SRC_INTS * 4, UB_ALIGN);
    rv.scratch_bytes =
        rv.off_scales +
        (sh->num_scales ? (uint32_t)kit_align_up((uint64_t)sh->num_scales * 4, UB_ALIGN) : 0);
    rv.batch = ub_take(&ub, (uint64_t)sh->receive_batch * sh->token_bytes);
    rv.scratch = ub_take(&ub, (uint64_t)sh->receive_batch * rv.scratch_bytes);
    rv.prefix = ub_take(&ub, (uint64_t)R * 4);
    dispatch_copy_in(rv.prefix, gm_add(a->notify_out[rv.me], (int64_t)a->nl.rank_prefix * 4),
                     (uint64_t)R * 4);
    SetFlag(MTE2_S, 3);
    WaitFlag(MTE2_S, 3);

    recv_ring rings[MAX_RINGS];
    ring_notes notes = {0};
    int nr = 0, pending = 0;
    for (int ring = k; ring < C * P; ring += sh->receivers) {
        recv_ring *r = &rings[nr++];
        r->c = (int16_t)(ring / P);
        r->l = (int16_t)(ring % P);
        r->total = 0;
        dispatch_note_ring(&notes, r->c, (rv.me / P) * P + r->l, -1, -1, -1, -1);
        for (int n = 0; n < N; n++) {
            int32_t end = WaitGM32(prefix_word(a, a->hccs_channel_prefix_end, rv.me, r->c, r->l, n),
                                   COND_NE, 0);
            r->total += GetValue32(prefix_word(a, a->hccs_channel_prefix_start, rv.me, r->c, r->l,
                                               n)) -
                        end;
        }
        r->head = (int64_t)disp * r->total;
        r->end = r->head + r->total;
        r->id = dispatch_hccs_ring_id(a, rv.me, r->c, r->l);
        pending += r->total > 0;
    }
    gm_t doorbell = dispatch_word(a->hccs_recv_doorbell, rv.me, (uint64_t)k, 8);
    int64_t seen = 0;
    while (pending > 0) {
        if (pending == 1) {
            recv_ring *r = rings;
            while (r->head == r->end) r++;
            dispatch_note_ring(&notes, r->c, (rv.me / P) * P + r->l, r->head, r->head, -1,
                               sh->hccs_ring_tokens);
            RingWaitData(r->id, r->head);
        } else {
            dispatch_note_doorbell(&notes, pending);
            seen = WaitGM64(doorbell, COND_GT, seen);
        }
        for (int i = 0; i < nr; i++) {
            recv_ring *r = &rings[i];
            if (r->head == r->end) continue;
            int64_t tail = GetValue32(dispatch_word(a->hccs_channel_tail, rv.me,
                                                    (uint64_t)r->c * (uint64_t)P + (uint64_t)r->l, 4));
            if (tail > r->head) consume(&rv, r, tail);
            if (r->head == r->end) pending--;
        }
    }
    SetFlag(MTE3_S, 2);
    WaitFlag(MTE3_S, 2);
}

void dispatch_hccs_receiver_clean(const dispatch_args *a, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    int me = GetRank(), P = sh->npus, C = sh->channels, N = sh->nodes;
    int k = GetBlockIdx() - sh->senders - sh->coordinators - sh->forwarders - sh->fwd_coordinators;
    local_t zero = ub_take(&ub, (uint64_t)N * 4);
    VecDup(zero, DT_INT32, 0, (uint32_t)kit_align_up((uint64_t)N * 4, UB_ALIGN) / 4);
    SetFlag(V_MTE3, 2);
    WaitFlag(V_MTE3, 2);
    for (int ring = k; ring < C * P; ring += sh->receivers) {
        DataCopyPadOut(prefix_word(a, a->hccs_channel_prefix_start, me, ring / P, ring % P, 0),
                       zero, (uint64_t)N * 4);
        DataCopyPadOut(prefix_word(a, a->hccs_channel_prefix_end, me, ring / P, ring % P, 0), zero,
                       (uint64_t)N * 4);
    }
    SetFlag(MTE3_S, 2);
    WaitFlag(MTE3_S, 2);
}
