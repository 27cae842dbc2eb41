/*
 * dispatch_fwd_coordinator.c - AICoreForwarderCoordinator (seed 001 s5.4):
 * return RDMA ring space to the sources, in batches.
 *
 * Core k serves the receiving RDMA rings (channel c, source node n) with
 * (c * nodes + n) % forwarder_coordinators == k. A ring's slots are free
 * when every forwarder core of the channel has read them, so the ring's
 * consumer position is the minimum of those cores' forwarder heads. Each
 * time it passes a multiple of the credit batch (and once at the ring's
 * end for the last, partial batch) one remote atomic add on the source's
 * rdma_channel_head returns the credits (seed 001 s6.1: batched, to keep
 * small RDMA packets off the wire). Waiting: one blocking wait on this
 * core's doorbell (bumped by the forwarders when their head crosses a batch
 * boundary), or on the forwarder heads of the last unfinished ring.
 *
 * Injected fault credit-leak: the last partial batch of each ring is never
 * returned in the last dispatch; the source's RDMACoordinator then waits
 * for those credits forever.
 *
 * Clean step: the ring's meta goes back to 0 for the next dispatch once
 * every forwarder group of the channel has acknowledged reading it
 * (rdma_channel_meta_ack); a ring without tokens returns no credit that
 * would say so.
 * Device code: device.h only.
 */
#include "dispatch_device.h"

/* Flags: V_MTE3 2, MTE3_S 2 (clean step). */

#define MAX_RINGS (DISPATCH_MAX_CHANNELS * DISPATCH_MAX_NODES)

typedef struct fc_ring {
    int16_t c, n, groups;
    int32_t total;
    int64_t base, end, reported;
    uint32_t id;
} fc_ring;

static gm_t head_word(const dispatch_args *a, int me, int c, int n, int g) {
    const dispatch_shape *sh = &a->sh;
    return dispatch_word(a->forwarder_head, me,
                         ((uint64_t)c * (uint64_t)sh->nodes + (uint64_t)n) * (uint64_t)sh->npus +
                             (uint64_t)g,
                         8);
}

static gm_t meta_word(const dispatch_args *a, int me, int c, int n, int i) {
    return gm_add(gm_on_rank(a->rdma_channel_meta, me),
                  (int64_t)(((uint64_t)c * (uint64_t)a->sh.nodes + (uint64_t)n) *
                                DISPATCH_META_BYTES +
                            (uint64_t)i * 4));
}


/* Returns credits up to `to`; 1 once the ring is finished. */
static int give(const dispatch_args *a, fc_ring *r, int64_t to, int disp) {
    const dispatch_shape *sh = &a->sh;
    int64_t amount = to - r->reported;
    if (sh->inject == DISPATCH_INJECT_CREDIT_LEAK && disp == sh->dispatches - 1 && to == r->end)
        amount -= r->total % sh->credit_batch;   /* injected: the partial batch stays here */
    if (amount > 0) RingAtomicAdd(r->id, 0, amount);
    r->reported = to;
    return to == r->end;
}

static int serve(const dispatch_args *a, fc_ring *r, int me, int disp) {
    int64_t min = INT64_MAX;
    for (int g = 0; g < r->groups; g++) {
        int64_t h = GetValue64(head_word(a, me, r->c, r->n, g));
        if (h < min) min = h;
    }
    int64_t batch = a->sh.credit_batch;
    int64_t to = min == r->end ? r->end : r->base + (min - r->base) / batch * batch;
    return to > r->reported && give(a, r, to, disp);
}

void dispatch_fwd_coordinator(const dispatch_args *a, int disp, ub_arena ub) {
    (void)ub;
    const dispatch_shape *sh = &a->sh;
    int me = GetRank(), P = sh->npus, N = sh->nodes, C = sh->channels;
    int k = GetBlockIdx() - sh->senders - sh->coordinators - sh->forwarders;
    fc_ring rings[MAX_RINGS];
    ring_notes notes = {0};
    int nr = 0, pending = 0;
    for (int ring = k; ring < C * N; ring += sh->fwd_coordinators) {
        fc_ring *r = &rings[nr++];
        r->c = (int16_t)(ring / N);
        r->n = (int16_t)(ring % N);
        r->groups = (int16_t)dispatch_fwd_groups(sh, r->c);
        dispatch_note_ring(&notes, r->c, r->n * P + me % P, -1, -1, -1, -1);
        int32_t end = WaitGM32(meta_word(a, me, r->c, r->n, DISPATCH_META_INTS - 1), COND_NE, 0);
        int32_t start = GetValue32(meta_word(a, me, r->c, r->n, DISPATCH_META_INTS - 2));
        r->total = start - end;   /* both are -x-1 */
        r->base = (int64_t)disp * r->total;
        r->end = r->base + r->total;
        r->reported = r->base;
        r->id = dispatch_rdma_ring_id(a, r->n * P + me % P, r->c, me / P);
        pending += r->total > 0;
    }
    gm_t doorbell = dispatch_word(a->fwd_coord_doorbell, me, (uint64_t)k, 8);
    int64_t seen = 0;
    while (pending > 0) {
        if (pending == 1) {
            fc_ring *r = rings;
            while (r->total == 0 || r->reported == r->end) r++;
            int64_t target = r->reported + sh->credit_batch;
            if (target > r->end) target = r->end;
            for (int g = 0; g < r->groups; g++) {
                /* credits: returned so far this dispatch */
                dispatch_note_ring(&notes, r->c, r->n * P + me % P, r->reported, -1, -1,
                                   r->reported - r->base);
                WaitGM64(head_word(a, me, r->c, r->n, g), COND_GE, target);
            }
        } else {
            dispatch_note_doorbell(&notes, pending);
            seen = WaitGM64(doorbell, COND_GT, seen);
        }
        for (int i = 0; i < nr; i++)
            if (rings[i].total > 0 && rings[i].reported < rings[i].end &&
                serve(a, &rings[i], me, disp))
                pending--;
    }
}

void dispatch_fwd_coordinator_clean(const dispatch_args *a, int disp, ub_arena ub) {
    const dispatch_shape *sh = &a->sh;
    int me = GetRank(), N = sh->nodes, C = sh->channels;
    int k = GetBlockIdx() - sh->senders - sh->coordinators - sh->forwarders;
    local_t zero = ub_take(&ub, DISPATCH_META_BYTES);
    VecDup(zero, DT_INT32, 0, (uint32_t)kit_align_up(DISPATCH_META_BYTES, UB_ALIGN) / 4);
    SetFlag(V_MTE3, 2);
    WaitFlag(V_MTE3, 2);
    for (int ring = k; ring < C * N; ring += sh->fwd_coordinators) {
        int c = ring / N, n = ring % N;
        WaitGM64(dispatch_word(a->rdma_channel_meta_ack, me, (uint64_t)ring, 8), COND_GE,
                 (int64_t)(disp + 1) * dispatch_fwd_groups(sh, c));
        DataCopyPadOut(meta_word(a, me, c, n, 0), zero, DISPATCH_META_BYTES);
    }
    SetFlag(MTE3_S, 2);
    WaitFlag(MTE3_S, 2);
}
